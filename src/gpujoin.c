/*-------------------------------------------------------------------------
 *
 * gpujoin.c
 *	  Module entry point and the gpujoin.* settings
 *
 * _PG_init only defines settings and installs the planner hook.  It must not
 * touch CUDA: with shared_preload_libraries it runs in the postmaster, and a
 * CUDA context does not survive fork().  The device is probed lazily, in the
 * backend, the first time a join is planned or run (device.c).
 *
 * IDENTIFICATION
 *	  src/gpujoin.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <unistd.h>

#include "fmgr.h"
#include "gpujoin.h"
#include "miscadmin.h"
#include "postmaster/postmaster.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

/* Settings, documented in README.md (Reference: GUCs) */
bool		gpujoin_enabled = true;
int			gpujoin_device = GPUJOIN_DEVICE_AUTO;
bool		gpujoin_enable_hashjoin = true;
bool		gpujoin_enable_mergejoin = true;
bool		gpujoin_enable_thetajoin = true;
bool		gpujoin_enable_parallel = true;
bool		gpujoin_parallel_shared_build = true;
bool		gpujoin_parallel_inner_shares = true;
bool		gpujoin_enable_heapscan = true;
bool		gpujoin_enable_preagg = true;
bool		gpujoin_enable_preagg_scan = true;
bool		gpujoin_enable_chain = true;
bool		gpujoin_enable_chain_preagg = true;
bool		gpujoin_enable_preagg_having = true;
bool		gpujoin_enable_parallel_chain = true;
int			gpujoin_join_variant = GPUJOIN_AUTO;
int			gpujoin_groupby_variant = GPUJOIN_AUTO;
int			gpujoin_materialize = GPUJOIN_AUTO;
int			gpujoin_chunk_rows = GPUJOIN_DEFAULT_CHUNK_ROWS;
int			gpujoin_heap_stage_pages = GPUJOIN_DEFAULT_HEAP_STAGE_PAGES;
bool		gpujoin_heap_in_place = true;
int			gpujoin_page_cache = 0;
bool		gpujoin_page_cache_unread = true;
bool		gpujoin_deform_numeric = true;
int			gpujoin_device_memory_limit = 0;
bool		gpujoin_explain_device = true;
double		gpujoin_setup_cost = GPUJOIN_DEFAULT_SETUP_COST;
double		gpujoin_worker_setup_cost = GPUJOIN_DEFAULT_WORKER_SETUP_COST;
double		gpujoin_extract_cost = GPUJOIN_DEFAULT_EXTRACT_COST;
double		gpujoin_heap_tuple_cost = GPUJOIN_DEFAULT_HEAP_TUPLE_COST;
double		gpujoin_heap_host_tuple_cost = GPUJOIN_DEFAULT_HEAP_HOST_TUPLE_COST;
double		gpujoin_heap_host_value_cost = GPUJOIN_DEFAULT_HEAP_HOST_VALUE_COST;
double		gpujoin_heap_fetch_cost = GPUJOIN_DEFAULT_HEAP_FETCH_COST;
int			gpujoin_heap_fetch = GPUJOIN_AUTO;
double		gpujoin_heap_page_cost = GPUJOIN_DEFAULT_HEAP_PAGE_COST;
double		gpujoin_scan_cost_scale = GPUJOIN_DEFAULT_SCAN_COST_SCALE;
double		gpujoin_emit_cost = GPUJOIN_DEFAULT_EMIT_COST;
bool		gpujoin_cost_as_gpu = false;
int			gpujoin_inject_fault = GPUJOIN_FAULT_NONE;
int			gpujoin_preagg_table_matches = 0;
bool		gpujoin_service = false;
int			gpujoin_service_workers = 4;
int			gpujoin_service_cached_memory = 1024;
int			gpujoin_service_kept_staging = 4096;
int			gpujoin_service_memory_limit = 0;
int			gpujoin_max_gpu_backends = -1;
char	   *gpujoin_devices = NULL;
int			gpujoin_logical_devices = 1;
int			gpujoin_multi_device = GPUJOIN_AUTO;
GpuJoinModel gpujoin_model = {
	.cost_per_ms = GPUJOIN_DEFAULT_COST_PER_MS,
	.transfer_gbps = GPUJOIN_DEFAULT_TRANSFER_GBPS,
	.row_ns = {
		[GJ_VARIANT_NPHJ] = GPUJOIN_DEFAULT_NPHJ_ROW_NS,
		[GJ_VARIANT_PHJ] = GPUJOIN_DEFAULT_PHJ_ROW_NS,
		[GJ_VARIANT_SMJ] = GPUJOIN_DEFAULT_SMJ_ROW_NS,
		[GJ_VARIANT_BAND] = GPUJOIN_DEFAULT_BAND_ROW_NS,
	},
	.gftr_column_ns = GPUJOIN_DEFAULT_GFTR_COLUMN_NS,
	.match_ns = GPUJOIN_DEFAULT_MATCH_NS,
	.gather_ns = GPUJOIN_DEFAULT_GATHER_NS,
	.gftr_gather_ns = GPUJOIN_DEFAULT_GFTR_GATHER_NS,
	.nlj_compare_ns = GPUJOIN_DEFAULT_NLJ_COMPARE_NS,
	.preagg_row_ns = GPUJOIN_DEFAULT_PREAGG_ROW_NS,
	.preagg_contention_groups = GPUJOIN_DEFAULT_PREAGG_CONTENTION_GROUPS,
	.preagg_shared_row_ns = GPUJOIN_DEFAULT_PREAGG_SHARED_ROW_NS,
	.preagg_flush_ns = GPUJOIN_DEFAULT_PREAGG_FLUSH_NS,
	.preagg_sort_row_ns = GPUJOIN_DEFAULT_PREAGG_SORT_ROW_NS,
	.preagg_sort_run_ns = GPUJOIN_DEFAULT_PREAGG_SORT_RUN_NS,
	.preagg_sort_word_ns = GPUJOIN_DEFAULT_PREAGG_SORT_WORD_NS,
	.peer_gbps = GPUJOIN_DEFAULT_PEER_GBPS,
	.exchange_row_ns = GPUJOIN_DEFAULT_EXCHANGE_ROW_NS,
	.spread_device_ms = GPUJOIN_DEFAULT_SPREAD_DEVICE_MS,
};

/*
 * The cost model's constants (planner_cost.c), each a setting; the defaults were
 * measured on an NVIDIA H200 host by gpujoin_calibrate() (README: Cost
 * model).  long_desc NULL: a device constant, "Measured on this server's
 * GPU by gpujoin_calibrate()."
 */
static const struct
{
	const char *name;
	const char *short_desc;
	const char *long_desc;
	double	   *value;
	double		boot;
	double		min;
}			gpujoin_model_settings[] = {
	{"gpujoin.setup_cost", "Sets the planner's estimate of the fixed cost of one GPU join.",
		"Device contexts, batches, copies and launches around the device work (about 3.6 ms on the H200 host), "
		"in the planner units of a small join. gpujoin_calibrate() measures it.",
	&gpujoin_setup_cost, GPUJOIN_DEFAULT_SETUP_COST, 0.0},
	{"gpujoin.worker_setup_cost", "Sets the planner's estimate of the cost of starting a GPU join in a parallel worker.",
		"A parallel worker is a new process: it opens the GPU (a CUDA context) before its share of a "
		"parallel GPU join, and the workers do so one after another (about 180 ms each on the H200 host). "
		"Charged once per planned worker.",
	&gpujoin_worker_setup_cost, GPUJOIN_DEFAULT_WORKER_SETUP_COST, 0.0},
	{"gpujoin.extract_cost", "Sets the planner's estimate of the cost of copying one column value into a column batch.",
		"Paid on the host for every needed column and join key of every input row.",
	&gpujoin_extract_cost, GPUJOIN_DEFAULT_EXTRACT_COST, 0.0},
	{"gpujoin.heap_tuple_cost", "Sets the planner's estimate of the cost of reading one tuple of a side a GPU join reads as heap pages.",
		"Its place in its page's item list, its deform and its columns' way into the batch (gpujoin.enable_heapscan); "
		"a tuple on a page that is not all-visible is also checked against the snapshot, at cpu_operator_cost "
		"scaled by gpujoin.scan_cost_scale. gpujoin_calibrate() measures it.",
	&gpujoin_heap_tuple_cost, GPUJOIN_DEFAULT_HEAP_TUPLE_COST, 0.0},
	{"gpujoin.heap_host_tuple_cost", "Sets the planner's estimate of the cost of deforming one tuple on the host for a heap side's host columns.",
		"A side read as heap pages whose columns include ones the device does not take (text, numeric: host columns) "
		"deforms each tuple that passes its quals on the host as well; the default is the H200 host's "
		"(bench/host_columns.sh).",
	&gpujoin_heap_host_tuple_cost, GPUJOIN_DEFAULT_HEAP_HOST_TUPLE_COST, 0.0},
	{"gpujoin.heap_host_value_cost", "Sets the planner's estimate of the cost of taking one host column's value of a heap side into the batch.",
		"Paid per host column (and per key encoded on the host) of every tuple that passes the side's quals; "
		"the default is the H200 host's (bench/host_columns.sh).",
	&gpujoin_heap_host_value_cost, GPUJOIN_DEFAULT_HEAP_HOST_VALUE_COST, 0.0},
	{"gpujoin.heap_fetch_cost", "Sets the planner's estimate of the cost of fetching an outer heap side's tuple by tid for one match.",
		"Where few of an outer side's rows match, its host columns are fetched for the matches "
		"(gpujoin.heap_fetch) instead of taken from every row; the default is the H200 host's "
		"(bench/host_columns.sh).",
	&gpujoin_heap_fetch_cost, GPUJOIN_DEFAULT_HEAP_FETCH_COST, 0.0},
	{"gpujoin.heap_page_cost", "Sets the planner's estimate of the cost of reading one page of a side a GPU join reads as heap pages.",
		"Its lookup in the shared buffers, lock, pin and release, and its 8 kB on the way to the device "
		"(gpujoin.enable_heapscan). gpujoin_calibrate() measures it.",
	&gpujoin_heap_page_cost, GPUJOIN_DEFAULT_HEAP_PAGE_COST, 0.0},
	{"gpujoin.scan_cost_scale", "Sets the fraction of a Seq Scan's estimated cost that a GPU join over it is charged.",
		"PostgreSQL's costs of a Seq Scan and of a hash join turn into time at different rates; "
		"gpujoin_calibrate() measures this host's ratio (cost_per_ms over a Seq Scan's cost units "
		"per ms; the default is the H200 host's). 1: the Seq Scan's cost as PostgreSQL estimates it.",
	&gpujoin_scan_cost_scale, GPUJOIN_DEFAULT_SCAN_COST_SCALE, 0.0},
	{"gpujoin.emit_cost", "Sets the planner's estimate of the cost of forming one joined row of a GPU join.",
		"Paid on the host for every row the join returns; the default is the H200 host's. "
		"gpujoin_calibrate() measures it.",
	&gpujoin_emit_cost, GPUJOIN_DEFAULT_EMIT_COST, 0.0},
	{"gpujoin.cost_per_ms", "Planner cost units per millisecond of a GPU join's device and bus time.", NULL,
	&gpujoin_model.cost_per_ms, GPUJOIN_DEFAULT_COST_PER_MS, 0.0},
	{"gpujoin.transfer_gbps", "Host-to-device and device-to-host bandwidth, in GB/s, as the planner assumes it.", NULL,
	&gpujoin_model.transfer_gbps, GPUJOIN_DEFAULT_TRANSFER_GBPS, 0.001},
	{"gpujoin.nphj_row_ns", "Device time of the NPHJ variant per input row (build and probe), in nanoseconds.", NULL,
	&gpujoin_model.row_ns[GJ_VARIANT_NPHJ], GPUJOIN_DEFAULT_NPHJ_ROW_NS, 0.0},
	{"gpujoin.phj_row_ns", "Device time of the PHJ variant per input row (partition, build and probe), in nanoseconds.", NULL,
	&gpujoin_model.row_ns[GJ_VARIANT_PHJ], GPUJOIN_DEFAULT_PHJ_ROW_NS, 0.0},
	{"gpujoin.smj_row_ns", "Device time of the SMJ variant per input row (sort and merge), in nanoseconds.", NULL,
	&gpujoin_model.row_ns[GJ_VARIANT_SMJ], GPUJOIN_DEFAULT_SMJ_ROW_NS, 0.0},
	{"gpujoin.band_row_ns", "Device time of the BAND variant per input row (sort and search), in nanoseconds.", NULL,
	&gpujoin_model.row_ns[GJ_VARIANT_BAND], GPUJOIN_DEFAULT_BAND_ROW_NS, 0.0},
	{"gpujoin.nlj_compare_ns", "Device time of the NLJ variant per pair and comparison, in nanoseconds.", NULL,
	&gpujoin_model.nlj_compare_ns, GPUJOIN_DEFAULT_NLJ_COMPARE_NS, 0.0},
	{"gpujoin.gftr_column_ns", "GFTR: device time per row and payload column carried through the variant's passes, in nanoseconds.", NULL,
	&gpujoin_model.gftr_column_ns, GPUJOIN_DEFAULT_GFTR_COLUMN_NS, 0.0},
	{"gpujoin.match_ns", "Device time per match written (row numbers, offsets), in nanoseconds.", NULL,
	&gpujoin_model.match_ns, GPUJOIN_DEFAULT_MATCH_NS, 0.0},
	{"gpujoin.gather_ns", "GFUR: device time per match and payload column gathered by row number (random access), in nanoseconds.", NULL,
	&gpujoin_model.gather_ns, GPUJOIN_DEFAULT_GATHER_NS, 0.0},
	{"gpujoin.gftr_gather_ns", "GFTR: device time per match and payload column gathered after the transform (nearly sequential), in nanoseconds.", NULL,
	&gpujoin_model.gftr_gather_ns, GPUJOIN_DEFAULT_GFTR_GATHER_NS, 0.0},
	{"gpujoin.preagg_row_ns", "GpuPreAgg, hash group-by: device time per match and aggregate folded into its group, in nanoseconds.", NULL,
	&gpujoin_model.preagg_row_ns, GPUJOIN_DEFAULT_PREAGG_ROW_NS, 0.0},
	{"gpujoin.preagg_contention_groups", "GpuPreAgg, hash group-by: the number of groups at which matches contending for their group's words double preagg_row_ns.", NULL,
	&gpujoin_model.preagg_contention_groups, GPUJOIN_DEFAULT_PREAGG_CONTENTION_GROUPS, 0.0},
	{"gpujoin.preagg_shared_row_ns", "GpuPreAgg, shared-memory group-by: device time per match and aggregate folded into its group, in nanoseconds.", NULL,
	&gpujoin_model.preagg_shared_row_ns, GPUJOIN_DEFAULT_PREAGG_SHARED_ROW_NS, 0.0},
	{"gpujoin.preagg_flush_ns", "GpuPreAgg, shared-memory group-by: device time per group and aggregate to add every block's words to the table, in nanoseconds.", NULL,
	&gpujoin_model.preagg_flush_ns, GPUJOIN_DEFAULT_PREAGG_FLUSH_NS, 0.0},
	{"gpujoin.preagg_sort_row_ns", "GpuPreAgg, sort-based group-by: device time per match to sort it by its group and read it again, in nanoseconds.", NULL,
	&gpujoin_model.preagg_sort_row_ns, GPUJOIN_DEFAULT_PREAGG_SORT_ROW_NS, 0.0},
	{"gpujoin.preagg_sort_run_ns", "GpuPreAgg, sort-based group-by: device time per run of one group's sorted matches and aggregate added to the table, in nanoseconds.", NULL,
	&gpujoin_model.preagg_sort_run_ns, GPUJOIN_DEFAULT_PREAGG_SORT_RUN_NS, 0.0},
	{"gpujoin.preagg_sort_word_ns", "GpuPreAgg, sort-based group-by with the values sorted along: device time per match and word (its number, each key, each aggregate's argument) computed and sorted with its group's hash, in nanoseconds.", NULL,
	&gpujoin_model.preagg_sort_word_ns, GPUJOIN_DEFAULT_PREAGG_SORT_WORD_NS, 0.0},
	{"gpujoin.peer_gbps", "Device-to-device bandwidth between two GPUs, in GB/s, as the planner assumes it for a join partitioned over several.", NULL,
	&gpujoin_model.peer_gbps, GPUJOIN_DEFAULT_PEER_GBPS, 0.001},
	{"gpujoin.exchange_row_ns", "Device time per row a GPU partitions and sends to the others when a join is partitioned over several, in nanoseconds.",
		"Measured on two H200 (the partitioned join's time beyond its copies and kernels); gpujoin_calibrate() does not measure it.",
	&gpujoin_model.exchange_row_ns, GPUJOIN_DEFAULT_EXCHANGE_ROW_NS, 0.0},
	{"gpujoin.spread_device_ms", "Milliseconds a join spread over several GPUs is charged for each GPU past the first.",
		"What a second GPU cost a join in PostgreSQL on two H200 (its context, threads and build); "
		"lower it where the gpujoin service keeps every GPU's context open. gpujoin_calibrate() does not measure it.",
	&gpujoin_model.spread_device_ms, GPUJOIN_DEFAULT_SPREAD_DEVICE_MS, 0.0},
};

static const struct config_enum_entry gpujoin_device_options[] = {
	{"auto", GPUJOIN_DEVICE_AUTO, false},
	{"gpu", GPUJOIN_DEVICE_GPU, false},
	{"cpu", GPUJOIN_DEVICE_CPU, false},
	{NULL, 0, false}
};

static const struct config_enum_entry gpujoin_join_variant_options[] = {
	{"auto", GPUJOIN_AUTO, false},
	{"nphj", GJ_VARIANT_NPHJ, false},
	{"phj", GJ_VARIANT_PHJ, false},
	{"smj", GJ_VARIANT_SMJ, false},
	{"band", GJ_VARIANT_BAND, false},
	{"nlj", GJ_VARIANT_NLJ, false},
	{NULL, 0, false}
};

static const struct config_enum_entry gpujoin_multi_device_options[] = {
	{"auto", GPUJOIN_AUTO, false},
	{"off", GPUJOIN_MULTI_DEVICE_OFF, false},
	{"broadcast", GJ_SPREAD_BROADCAST, false},
	{"partition", GJ_SPREAD_PARTITION, false},
	{NULL, 0, false}
};

static const struct config_enum_entry gpujoin_groupby_variant_options[] = {
	{"auto", GPUJOIN_AUTO, false},
	{"hash", GJ_AGG_HASH, false},
	{"shared", GJ_AGG_SHARED, false},
	{"sort", GJ_AGG_SORT, false},
	{"sort_tr", GJ_AGG_SORT_TR, false},
	{NULL, 0, false}
};

static const struct config_enum_entry gpujoin_heap_fetch_options[] = {
	{"auto", GPUJOIN_AUTO, false},
	{"off", GPUJOIN_HEAP_FETCH_OFF, false},
	{"on", GPUJOIN_HEAP_FETCH_ON, false},
	{NULL, 0, false}
};

static const struct config_enum_entry gpujoin_inject_fault_options[] = {
	{"none", GPUJOIN_FAULT_NONE, false},
	{"create", GPUJOIN_FAULT_CREATE, false},
	{"build", GPUJOIN_FAULT_BUILD, false},
	{"count", GPUJOIN_FAULT_COUNT, false},
	{"retrieve", GPUJOIN_FAULT_RETRIEVE, false},
	{"build_oom", GPUJOIN_FAULT_BUILD_OOM, false},
	{"count_oom", GPUJOIN_FAULT_COUNT_OOM, false},
	{"retrieve_oom", GPUJOIN_FAULT_RETRIEVE_OOM, false},
	{"shared_count_oom", GPUJOIN_FAULT_SHARED_COUNT_OOM, false},
	{"worker_memory", GPUJOIN_FAULT_WORKER_MEMORY, false},
	{"one_device_count", GPUJOIN_FAULT_DEVICE_COUNT, false},
	{"one_device_count_oom", GPUJOIN_FAULT_DEVICE_COUNT_OOM, false},
	{"share_room", GPUJOIN_FAULT_SHARE_ROOM, false},
	{"share_pace", GPUJOIN_FAULT_SHARE_PACE, false},
	{"share_pace_retrieve_oom", GPUJOIN_FAULT_SHARE_PACE_RETRIEVE_OOM, false},
	{"share_pace_refused", GPUJOIN_FAULT_SHARE_PACE_REFUSED, false},
	{NULL, 0, false}
};

static const struct config_enum_entry gpujoin_materialize_options[] = {
	{"auto", GPUJOIN_AUTO, false},
	{"gftr", GJ_MATERIALIZE_GFTR, false},
	{"gfur", GJ_MATERIALIZE_GFUR, false},
	{NULL, 0, false}
};

/*
 * gpujoin.service_kept_staging's default: an eighth of the host's physical
 * memory (at least 1 GB; 4 GB where the system does not say).  A parallel
 * join's processes each hold a few staging arenas sized by their share of
 * the inner side, and a query whose workers find none kept page-locks new
 * ones, which on the H200 host (128 GB) made TPC-H Q9 at scale factor 10
 * take 11.6 s with 4 GB kept against 8.8 s with 16 GB, and 10^8-row joins
 * with 4 workers 5.0 s against 1.6 s (docs/performance.md).  Nothing is
 * kept before clients have used it.
 */
static int
DefaultKeptStaging(void)
{
	long		pages = sysconf(_SC_PHYS_PAGES);
	long		page_size = sysconf(_SC_PAGESIZE);
	uint64		mb;

	if (pages <= 0 || page_size <= 0)
		return 4096;
	mb = (uint64) pages / 8 * (uint64) page_size / (1024 * 1024);
	return (int) Min(Max(mb, 1024), (uint64) INT_MAX);
}

void		_PG_init(void);

void
_PG_init(void)
{
	DefineCustomBoolVariable("gpujoin.enabled",
							 "Offers GPU join paths to the planner.",
							 "When off, gpujoin adds no paths and queries plan as without the extension.",
							 &gpujoin_enabled,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("gpujoin.device",
							 "Selects where GPU joins run: auto, gpu or cpu.",
							 "auto uses a GPU when one is usable and otherwise offers no GPU paths; "
							 "gpu requires a GPU and fails without one; "
							 "cpu runs the same joins with the CPU implementation of the kernels.",
							 &gpujoin_device,
							 GPUJOIN_DEVICE_AUTO,
							 gpujoin_device_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.enable_hashjoin",
							 "Enables the GPU hash join path (GpuHashJoin).",
							 NULL,
							 &gpujoin_enable_hashjoin,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.enable_mergejoin",
							 "Enables the GPU merge join path (GpuMergeJoin), whose output is sorted on the join keys.",
							 NULL,
							 &gpujoin_enable_mergejoin,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.enable_thetajoin",
							 "Enables the GPU theta join path (GpuThetaJoin) for range, band and inequality joins.",
							 NULL,
							 &gpujoin_enable_thetajoin,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.enable_parallel",
							 "Offers GPU joins to parallel plans.",
							 "Under a Gather, each process joins its share of the outer side against "
							 "the whole inner side on the GPU, as a hash join without Parallel Hash does; "
							 "not for right and full joins.",
							 &gpujoin_enable_parallel,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.parallel_shared_build",
							 "Builds a parallel GPU join's inner side once, in the gpujoin service.",
							 "With the gpujoin service, the first participant of a parallel hash join "
							 "(NPHJ) to start reads and builds the inner side, and the others probe that "
							 "build instead of reading and building it each; off: each builds its own.",
							 &gpujoin_parallel_shared_build,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.parallel_inner_shares",
							 "Has the participants of a parallel GPU join read a shared build's inner side together.",
							 "Where the inner side is read as heap pages, each participant reads a share of its "
							 "pages, and the last to finish builds from all the shares where they lie; off: the first "
							 "participant to start reads all of it.",
							 &gpujoin_parallel_inner_shares,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.enable_preagg",
							 "Lets the planner compute the aggregates over a GPU join on the device (GpuPreAgg).",
							 "The join's matches are folded into groups on the device, and one row of "
							 "partial aggregates per group goes to PostgreSQL's Finalize Aggregate, "
							 "instead of every joined row to an Aggregate.",
							 &gpujoin_enable_preagg,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.enable_preagg_scan",
							 "Lets the planner compute the aggregates over one relation, not a join, on the device (GpuPreAgg over a scan).",
							 "The relation's rows (heap pages where they can be read so) are folded into "
							 "groups on the device as a join's matches are; needs gpujoin.enable_preagg.",
							 &gpujoin_enable_preagg_scan,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.enable_chain",
							 "Lets GPU hash joins stacked one on another run as one chain on the device.",
							 "Where the outer side of an inner GPU hash join is another inner GPU hash "
							 "join, the top one runs both: every level's table is built, the outer side "
							 "is read once, and each level's matches go to the next on the device, not "
							 "back to the host as rows.",
							 &gpujoin_enable_chain,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.enable_preagg_having",
							 "Lets a serial GpuPreAgg check the HAVING clause's simple conditions on its groups.",
							 "Where its groups are whole, a group whose count, sum, min or max fails a "
							 "comparison with a constant in the HAVING clause is not emitted; the Finalize "
							 "Aggregate checks the whole clause again.",
							 &gpujoin_enable_preagg_having,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.enable_chain_preagg",
							 "Lets a GpuPreAgg be the top of a chain of GPU joins.",
							 "The last level's matches are folded into the groups on the device, not "
							 "joined by the GpuPreAgg's own join from the rows of a chain below it.",
							 &gpujoin_enable_chain_preagg,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.enable_parallel_chain",
							 "Lets the GPU joins of a parallel plan run as one chain in every process.",
							 "Each process below the Gather runs the whole chain on its share of the "
							 "lowest outer side; through the gpujoin service each level is built once "
							 "for all of them.",
							 &gpujoin_enable_parallel_chain,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.deform_numeric",
							 "Lets the device turn numeric columns read as heap pages into scaled integers.",
							 "On, the heap deform reads each numeric of declared scale from the tuple and "
							 "writes its value times 10^scale, for a GpuPreAgg and for a join's side whose "
							 "host columns would all be such numerics (the join emits them from those "
							 "values); off, the host converts a GpuPreAgg's numerics of each row from the "
							 "staged tuples, as it does for a side read through its child plan, and a "
							 "join's stay host columns.",
							 &gpujoin_deform_numeric,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.enable_heapscan",
							 "Lets a GPU join read a side that is a plain scan of a heap table as pages.",
							 "The join reads the table itself, page at a time, and turns the visible "
							 "tuples into its column batches with no Seq Scan node; off, the side is "
							 "read through its Seq Scan, one tuple at a time.",
							 &gpujoin_enable_heapscan,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("gpujoin.join_variant",
							 "Forces the device algorithm of GPU joins: auto, nphj, phj, smj (equi-joins), band or nlj (theta joins).",
							 "auto lets the planner choose; the others are for tests and benchmarks.",
							 &gpujoin_join_variant,
							 GPUJOIN_AUTO,
							 gpujoin_join_variant_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("gpujoin.devices",
							   "The GPUs a join may use: all, or a list of CUDA ordinals such as '0,1'.",
							   "A join is spread over every device named here (gpujoin.multi_device "
							   "says how); with one, it runs on that device.",
							   &gpujoin_devices,
							   "all",
							   PGC_USERSET,
							   0,
							   GpuJoinCheckDevices, NULL, NULL);

	DefineCustomIntVariable("gpujoin.logical_devices",
							"Splits each device (or the CPU twin) into this many logical devices.",
							"For tests: the spreading of joins over several devices then runs "
							"with one GPU, or none.",
							&gpujoin_logical_devices,
							1,
							1,
							GJ_MAX_DEVICES,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("gpujoin.multi_device",
							 "How a join uses several devices: auto, off, broadcast or partition.",
							 "broadcast builds the whole inner side on every device and gives each "
							 "a slice of the outer rows; partition sends the rows of both sides to "
							 "the device their key hashes to (equi-joins); auto partitions an inner "
							 "side larger than one device's memory and keeps the others on the first "
							 "device, as off does for all.",
							 &gpujoin_multi_device,
							 GPUJOIN_AUTO,
							 gpujoin_multi_device_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("gpujoin.groupby_variant",
							 "Forces the device group-by of GpuPreAgg nodes with group keys: auto, hash, shared, sort or sort_tr.",
							 "hash folds every match into a table of groups in device memory; shared "
							 "folds into per-block words in shared memory first (few groups); sort "
							 "sorts each round's matches by group and adds each run of a group to the "
							 "table once, reading the matches' inputs again (GFUR); sort_tr computes "
							 "each match's keys and values once and sorts them along (GFTR). auto lets "
							 "the planner choose; the others are for tests and benchmarks.",
							 &gpujoin_groupby_variant,
							 GPUJOIN_AUTO,
							 gpujoin_groupby_variant_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("gpujoin.heap_fetch",
							 "How an outer side read as heap pages gives its host columns to the joined rows: auto, off or on.",
							 "off takes them from every row as its page is read (deformed on the host); on "
							 "keeps each row's tid and fetches its tuple for each match; auto lets the "
							 "planner choose (on where few rows match). For tests and benchmarks.",
							 &gpujoin_heap_fetch,
							 GPUJOIN_AUTO,
							 gpujoin_heap_fetch_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("gpujoin.materialize",
							 "Forces how GPU joins materialize payload columns: auto, gftr or gfur.",
							 "gftr transforms payload columns with the keys; gfur gathers them by row id.",
							 &gpujoin_materialize,
							 GPUJOIN_AUTO,
							 gpujoin_materialize_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.chunk_rows",
							"Sets the number of outer rows sent to the device at a time.",
							"Larger chunks mean fewer device calls and more host and device memory; "
							"it also bounds the matches returned per round.",
							&gpujoin_chunk_rows,
							GPUJOIN_DEFAULT_CHUNK_ROWS,
							GPUJOIN_MIN_CHUNK_ROWS,
							GPUJOIN_MAX_CHUNK_ROWS,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.heap_stage_pages",
							"Sets the number of pages a side read as heap pages stages at a time.",
							"The pages go to the device, and are deformed there, this many at a "
							"time (fewer for a smaller table); each side of each join holds this "
							"many pages of page-locked host memory while it runs.",
							&gpujoin_heap_stage_pages,
							GPUJOIN_DEFAULT_HEAP_STAGE_PAGES,
							1,
							GPUJOIN_MAX_HEAP_STAGE_PAGES,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.heap_in_place",
							 "Reads the pages of a side read as heap pages where they lie in shared buffers.",
							 "The buffers stay pinned while the device reads them, instead of "
							 "being copied on the host first; temporary tables' pages are copied "
							 "all the same, and so are the pages of any table when shared_buffers "
							 "is too small to pin a staging area's worth.",
							 &gpujoin_heap_in_place,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.page_cache",
							"Sets the device memory that keeps heap pages between joins.",
							"Pages read in place that are all-visible, of tables (not system "
							"catalogs) whose changes are WAL-logged, are kept in this much memory "
							"of the device (host memory on the CPU) by the process that runs the "
							"deform, the gpujoin service or the backend, with the LSN of the "
							"visibility map page that vouched for them; a later join reads the "
							"kept copy instead of moving the page again while the map still "
							"vouches for it under that LSN. The process's first join that keeps "
							"a page takes the memory, for as long as the process lives. 0, the "
							"default, keeps none.",
							&gpujoin_page_cache,
							0,
							0,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.page_cache_unread",
							 "Leaves unread the heap pages the device keeps that the visibility map vouches for.",
							 "With gpujoin.page_cache, a join first asks which of its next blocks "
							 "the device keeps under the LSN of their visibility map page, whose "
							 "bit says they are all-visible still; it does not read those pages "
							 "at all, and the device reads their kept copies. Off: every page is "
							 "read on the host, and only its move to the device is saved.",
							 &gpujoin_page_cache_unread,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.pinned_cache",
							"Sets the most page-locked host memory a session keeps between GPU joins.",
							"A join's staging areas and batches are page-locked host memory, which "
							"copies to and from the device need for their full speed and which is "
							"slow to allocate; blocks a join is done with are kept for the "
							"session's next joins, up to this much in all. 0 keeps none.",
							&gpujoin_pinned_cache,
							GPUJOIN_DEFAULT_PINNED_CACHE,
							0,
							INT_MAX,
							PGC_USERSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.device_memory_limit",
							"Sets the most device memory one GPU join may hold.",
							"0 means the device memory that is free when the join starts. "
							"A hash join that needs more runs in partitions; a merge or theta join "
							"that runs out continues on the CPU with a NOTICE.",
							&gpujoin_device_memory_limit,
							0,
							0,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.max_gpu_backends",
							"Sets the most backends that may use the GPU at once.",
							"A backend takes a slot and a CUDA context on the device (about 0.5 GB) "
							"when it first runs a join on the GPU, and keeps both until it exits. "
							"Past the limit, a backend plans "
							"PostgreSQL's own joins (gpujoin.device = auto) or fails (gpu) until one "
							"exits. -1: no limit; 0: no backend that does not use the GPU yet starts "
							"to. Needs shared_preload_libraries = 'gpujoin'.",
							&gpujoin_max_gpu_backends,
							-1,
							-1,
							MAX_BACKENDS,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.explain_device",
							 "Shows the device (GPU name or CPU) in EXPLAIN output.",
							 "Regression tests turn it off so one expected output fits every machine.",
							 &gpujoin_explain_device,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	for (int i = 0; i < lengthof(gpujoin_model_settings); i++)
		DefineCustomRealVariable(gpujoin_model_settings[i].name,
								 gpujoin_model_settings[i].short_desc,
								 gpujoin_model_settings[i].long_desc ? gpujoin_model_settings[i].long_desc :
								 "Measured on this server's GPU by gpujoin_calibrate().",
								 gpujoin_model_settings[i].value,
								 gpujoin_model_settings[i].boot,
								 gpujoin_model_settings[i].min,
								 DBL_MAX,
								 PGC_USERSET,
								 0,
								 NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.preagg_table_matches",
							"Sets the matches a GpuPreAgg's group table folds before it is emptied to the host, as a test aid.",
							"0: 2^32, the most for which its integer sums are exact; a group's sums then come back "
							"as several rows of partial aggregates, which Finalize Aggregate combines.",
							&gpujoin_preagg_table_matches,
							0,
							0,
							INT_MAX,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("gpujoin.inject_fault",
							 "Makes one device step of every GPU join fail, as a test aid.",
							 "create, build, count, retrieve (a GpuPreAgg's aggregate step too): the step fails as a failed kernel would (an ERROR); "
							 "build_oom, count_oom: the join's first context (GPU or CPU twin) runs out of device memory, "
							 "and the join falls back to a CPU twin context; shared_count_oom: likewise the count "
							 "of a parallel join's participant that probes another's build (gpujoin.parallel_shared_build); "
							 "one_device_count, one_device_count_oom: the last device of a join spread over several "
							 "fails its first count, as a kernel failure or out of device memory.",
							 &gpujoin_inject_fault,
							 GPUJOIN_FAULT_NONE,
							 gpujoin_inject_fault_options,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.cost_as_gpu",
							 "Costs GPU join paths as the GPU would run them even when the CPU twin runs them.",
							 "For planner tests on machines without a GPU; off, the CPU twin is costed as what it is.",
							 &gpujoin_cost_as_gpu,
							 false,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gpujoin.service",
							 "Runs the device work of every backend in one background worker, the gpujoin service.",
							 "Needs gpujoin in shared_preload_libraries; the service then owns the GPU, and backends create no "
							 "CUDA context of their own.",
							 &gpujoin_service,
							 /* on where it can be: one process owns the GPU */
							 process_shared_preload_libraries_in_progress,
							 /* loaded after startup it can only say off */
							 process_shared_preload_libraries_in_progress ? PGC_POSTMASTER : PGC_INTERNAL,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.service_workers",
							"Sets the number of threads of the gpujoin service that run device calls at once.",
							"Each serves one call of one session at a time; calls of one session are always in order.",
							&gpujoin_service_workers,
							4,
							1,
							64,
							process_shared_preload_libraries_in_progress ? PGC_POSTMASTER : PGC_INTERNAL,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.service_cached_memory",
							"Sets how much device memory the gpujoin service keeps for the next joins once a join frees it.",
							"Kept memory is handed to the next join without asking the driver again; "
							"page-locked host memory for rounds of matches is kept too, up to a quarter of this.",
							&gpujoin_service_cached_memory,
							1024,
							0,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.service_kept_staging",
							"Sets how much of the shared memory its clients are done with the gpujoin service keeps, page-locked, for later clients' staging areas.",
							"A new session or parallel worker then takes a segment that is mapped and page-locked already "
							"instead of making one; 0 keeps none.  By default an eighth of the host's memory.",
							&gpujoin_service_kept_staging,
							DefaultKeptStaging(),
							0,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gpujoin.service_memory_limit",
							"Sets the most device memory the joins run by the gpujoin service may hold together.",
							"A join that would pass it continues as one that finds the device full: in partitions "
							"or smaller chunks where it can, else on the CPU twin.  0, the default, leaves the "
							"whole device to them.",
							&gpujoin_service_memory_limit,
							0,
							0,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("gpujoin");

	if (process_shared_preload_libraries_in_progress)
		GpuJoinRequestSharedMemory();

	GpuJoinInitExecutor();
	GpuJoinInitPlanner();
	GpuJoinInitPlannerAgg();
	GpuJoinInitSetup();
}
