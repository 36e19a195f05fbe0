/*-------------------------------------------------------------------------
 *
 * gpujoin.h
 *	  Declarations shared by the PostgreSQL side of gpujoin (src/)
 *
 * src/ never includes CUDA headers; it reaches the kernels only through
 * cuda/gpujoin_kernels.h.  The files:
 *
 *	gpujoin.c	_PG_init, settings
 *	planner*.c	the join hook, paths and plans (planner.c), clause analysis
 *				(planner_clauses.c), costs (planner_cost.c), scan quals
 *				compiled for the device (planner_expr.c); planner.h
 *	calibrate.c	gpujoin_calibrate(): the cost model's constants, measured
 *	exec*.c		the GpuJoin custom scan (exec.h lists its files): state
 *				machine, batches, partitions, emission, EXPLAIN, parallel
 *	keys.c		join key encoding into the kernels' uint64 keys
 *	device.c	kernel table choice, device contexts, errors, device info
 *	setup.c		what CREATE/DROP EXTENSION change in the database's settings
 *
 * IDENTIFICATION
 *	  src/gpujoin.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_H
#define GPUJOIN_H

#include "postgres.h"

#include "compat.h"
#include "gpujoin_kernels.h"
#include "nodes/execnodes.h"
#include "nodes/extensible.h"
#include "nodes/pathnodes.h"
#include "storage/dsm.h"
#include "fmgr.h"
#include "utils/guc.h"
#include "utils/palloc.h"

/* gpujoin.device */
typedef enum GpuJoinDeviceSetting
{
	GPUJOIN_DEVICE_AUTO,		/* GPU if there is one, else no GPU paths */
	GPUJOIN_DEVICE_GPU,			/* GPU required: error if there is none */
	GPUJOIN_DEVICE_CPU			/* CPU twin (tests, hosts without a GPU) */
} GpuJoinDeviceSetting;

/* gpujoin.inject_fault: the device step made to fail (a test aid) */
typedef enum GpuJoinFault
{
	GPUJOIN_FAULT_NONE,
	GPUJOIN_FAULT_CREATE,		/* creating the device context */
	GPUJOIN_FAULT_BUILD,		/* build: a kernel failure */
	GPUJOIN_FAULT_COUNT,		/* count: a kernel failure */
	GPUJOIN_FAULT_RETRIEVE,		/* retrieve: a kernel failure */
	GPUJOIN_FAULT_BUILD_OOM,	/* build: out of device memory (GPU only) */
	GPUJOIN_FAULT_COUNT_OOM,	/* count: out of device memory (GPU only) */
	GPUJOIN_FAULT_RETRIEVE_OOM,	/* retrieve, not a chunk's first: out of
								 * device memory */
	GPUJOIN_FAULT_SHARED_COUNT_OOM, /* count, in a participant of a parallel
									 * join that probes another's build: out
									 * of device memory */
	GPUJOIN_FAULT_WORKER_MEMORY,	/* not a failure: parallel workers see a
									 * quarter of the device memory budget,
									 * so their partitions differ from the
									 * leader's */
	GPUJOIN_FAULT_DEVICE_COUNT,	/* a spread join's last device fails its
								 * first count (GjJoinSpec.fault_device) */
	GPUJOIN_FAULT_DEVICE_COUNT_OOM,	/* likewise, out of device memory */
	GPUJOIN_FAULT_SHARE_ROOM,	/* not a failure: a parallel worker finds no
								 * room in shared memory for its share of
								 * the inner side */
	GPUJOIN_FAULT_SHARE_PACE,	/* not a failure: a participant reading a
								 * share of an inner side waits 2 ms after
								 * each block, so that every participant
								 * gets a share */
	GPUJOIN_FAULT_SHARE_PACE_RETRIEVE_OOM,	/* both that and retrieve_oom */
	GPUJOIN_FAULT_SHARE_PACE_REFUSED,	/* share_pace, and a parallel worker
										 * that is to probe another's build is
										 * refused it, as the service refuses
										 * a build it cannot lend: it reads
										 * and builds its own */
	GPUJOIN_FAULT_SHARED_COUNT	/* the step of that count (not a setting):
								 * a count for every other fault */
} GpuJoinFault;

/* gpujoin.join_variant and gpujoin.materialize: auto, or a GjVariant / GjMaterialize */
#define GPUJOIN_AUTO				(-1)
#define GPUJOIN_MULTI_DEVICE_OFF	(-2)

#define GPUJOIN_DEFAULT_CHUNK_ROWS		1048576

/* Bytes on the bus and in device memory per key and per match */
#define GPUJOIN_KEY_BYTES		(sizeof(uint64) + sizeof(uint8))
#define GPUJOIN_MATCH_BYTES		(2 * sizeof(GjRowId))

/*
 * Partitioned hash joins (GpuJoinPartitions): device bytes kept free of any
 * partition (kernel launch state, CUB's scratch), the share of the rest a
 * partition is planned to fill, the most partitions, and the smallest outer
 * chunk a partitioned join lowers gpujoin.chunk_rows to
 */
#define GPUJOIN_DEVICE_RESERVE			(256.0 * 1024.0)	/* or a quarter of a smaller budget */
#define GPUJOIN_PARTITION_FILL			0.75
#define GPUJOIN_MAX_PARTITIONS			4096
#define GPUJOIN_MIN_PARTITION_CHUNK		64
#define GPUJOIN_MIN_CHUNK_ROWS			1
#define GPUJOIN_MAX_CHUNK_ROWS			((int) GJ_MAX_ROWS)

/* Settings (gpujoin.c) */
extern bool gpujoin_enabled;
extern int	gpujoin_device;
extern bool gpujoin_enable_hashjoin;
extern bool gpujoin_enable_mergejoin;
extern bool gpujoin_enable_thetajoin;
extern bool gpujoin_enable_parallel;
extern bool gpujoin_parallel_shared_build;
extern bool gpujoin_parallel_inner_shares;
extern bool gpujoin_enable_heapscan;
extern bool gpujoin_enable_preagg;
extern bool gpujoin_enable_preagg_scan;
extern bool gpujoin_enable_chain;
extern bool gpujoin_enable_chain_preagg;
extern bool gpujoin_enable_preagg_having;
extern bool gpujoin_enable_parallel_chain;
extern bool gpujoin_deform_numeric;
extern int	gpujoin_join_variant;
extern int	gpujoin_groupby_variant;	/* GPUJOIN_AUTO or a GjAggVariant */
extern int	gpujoin_materialize;
extern int	gpujoin_chunk_rows;
extern int	gpujoin_heap_stage_pages;
extern bool gpujoin_heap_in_place;
extern int	gpujoin_page_cache;		/* MB */
extern bool gpujoin_page_cache_unread;
extern int	gpujoin_pinned_cache;	/* kB */
extern int	gpujoin_device_memory_limit;	/* kB; 0 = free device memory */
extern bool gpujoin_explain_device;
extern double gpujoin_setup_cost;
extern double gpujoin_worker_setup_cost;
extern double gpujoin_extract_cost;
extern double gpujoin_heap_tuple_cost;
extern double gpujoin_heap_page_cost;
extern double gpujoin_heap_host_tuple_cost;
extern double gpujoin_heap_host_value_cost;
extern double gpujoin_heap_fetch_cost;
extern int	gpujoin_heap_fetch;
extern double gpujoin_scan_cost_scale;
extern double gpujoin_emit_cost;
extern bool gpujoin_cost_as_gpu;
extern int	gpujoin_inject_fault;
extern int	gpujoin_preagg_table_matches;	/* 0: GJ_AGG_TABLE_MATCHES */
extern int	gpujoin_max_gpu_backends;	/* -1: no limit */
extern char *gpujoin_devices;	/* "all" or CUDA ordinals, "0,1" */
extern int	gpujoin_logical_devices;
extern int	gpujoin_multi_device;	/* GPUJOIN_AUTO, _OFF or a GjSpread */
extern bool gpujoin_service;
extern int	gpujoin_service_workers;
extern int	gpujoin_service_cached_memory;
extern int	gpujoin_service_kept_staging;
extern int	gpujoin_service_memory_limit;

/*
 * The cost model's device constants (planner_cost.c), each a gpujoin.* setting,
 * measured by gpujoin_calibrate() (calibrate.c).  The defaults are what
 * gpujoin_calibrate(16777216) measured on an NVIDIA H200, 2026-11-21
 * (bench/results/cost_model.md).
 */
typedef struct GpuJoinModel
{
	double		cost_per_ms;	/* planner cost units per millisecond */
	double		transfer_gbps;	/* host <-> device, GB/s */
	double		row_ns[GJ_NUM_VARIANTS];	/* per input row; NLJ unused */
	double		gftr_column_ns; /* GFTR: per row and payload column moved */
	double		match_ns;		/* per match written */
	double		gather_ns;		/* GFUR: per match and payload column */
	double		gftr_gather_ns; /* GFTR: per match and payload column */
	double		nlj_compare_ns; /* NLJ: per pair and term */
	double		preagg_row_ns;	/* GpuPreAgg, HASH: per match and aggregate folded */
	double		preagg_contention_groups;	/* HASH: groups where contention doubles it */
	double		preagg_shared_row_ns;	/* SHARED: per match and aggregate folded */
	double		preagg_flush_ns;	/* SHARED: per group and aggregate, all blocks */
	double		preagg_sort_row_ns; /* SORT: per match sorted and read again */
	double		preagg_sort_run_ns; /* SORT: per run of a group and aggregate */
	double		preagg_sort_word_ns;	/* SORT_TR: per match and word sorted */
	/* a join spread over several devices (device.c, GpuJoinSpreadSpec) */
	double		peer_gbps;		/* device <-> device, GB/s */
	double		exchange_row_ns;	/* PARTITION: per row a device sends */
	double		spread_device_ms;	/* per device past the first, per join */
} GpuJoinModel;

#define GPUJOIN_DEFAULT_COST_PER_MS			80.0
#define GPUJOIN_DEFAULT_SETUP_COST			750.0
#define GPUJOIN_DEFAULT_WORKER_SETUP_COST	15000.0
#define GPUJOIN_DEFAULT_EXTRACT_COST		0.0009
/* heap sides: the H100 host's 3.5 ns a tuple, 3.1 µs a page at 80 units/ms */
#define GPUJOIN_DEFAULT_HEAP_TUPLE_COST		0.0003
#define GPUJOIN_DEFAULT_HEAP_PAGE_COST		0.25
/*
 * heap sides' host columns: the H200 host's 47 ns a tuple deformed on the
 * host and 18 ns a value taken (bench/host_columns.sh) at 80 units/ms
 */
#define GPUJOIN_DEFAULT_HEAP_HOST_TUPLE_COST	0.0038
#define GPUJOIN_DEFAULT_HEAP_HOST_VALUE_COST	0.0015
/*
 * an outer heap side's tuple fetched by tid for a match: the H200 host's
 * 576 ns (bench/host_columns.sh) at 80 units/ms
 */
#define GPUJOIN_DEFAULT_HEAP_FETCH_COST		0.046
/* gpujoin.heap_fetch: how an outer heap side's host columns reach its matches */
#define GPUJOIN_HEAP_FETCH_OFF		0	/* taken from every row as it is read */
#define GPUJOIN_HEAP_FETCH_ON		1	/* fetched by tid for each match */
#define GPUJOIN_DEFAULT_HEAP_STAGE_PAGES	1024	/* 8 MB */
#define GPUJOIN_MAX_HEAP_STAGE_PAGES		131072	/* 1 GB */
#define GPUJOIN_DEFAULT_PINNED_CACHE		(256 * 1024)	/* kB: 256 MB */
#define GPUJOIN_DEFAULT_SCAN_COST_SCALE		0.2
#define GPUJOIN_DEFAULT_EMIT_COST			0.003
#define GPUJOIN_DEFAULT_TRANSFER_GBPS		14.0
#define GPUJOIN_DEFAULT_NPHJ_ROW_NS			0.10
#define GPUJOIN_DEFAULT_PHJ_ROW_NS			0.12
#define GPUJOIN_DEFAULT_SMJ_ROW_NS			0.15
#define GPUJOIN_DEFAULT_BAND_ROW_NS			0.36
#define GPUJOIN_DEFAULT_NLJ_COMPARE_NS		0.00027
#define GPUJOIN_DEFAULT_GFTR_COLUMN_NS		0.019
#define GPUJOIN_DEFAULT_MATCH_NS			0.044
#define GPUJOIN_DEFAULT_GATHER_NS			0.018
/*
 * The group-by constants: fitted to the group-by kernel grid on the H200
 * host, 2026-11-28, four variants (bench/groupby_fit.py,
 * bench/results/groupby_h200.csv and _fit.txt); gpujoin_calibrate() fits
 * them to fewer cases (calibrate.c)
 */
#define GPUJOIN_DEFAULT_PREAGG_ROW_NS		0.122
#define GPUJOIN_DEFAULT_PREAGG_CONTENTION_GROUPS	1.9
#define GPUJOIN_DEFAULT_PREAGG_SHARED_ROW_NS	0.0089
#define GPUJOIN_DEFAULT_PREAGG_FLUSH_NS		225.0
#define GPUJOIN_DEFAULT_PREAGG_SORT_ROW_NS	0.126
#define GPUJOIN_DEFAULT_PREAGG_SORT_RUN_NS	2.47
#define GPUJOIN_DEFAULT_PREAGG_SORT_WORD_NS	0.0286
#define GPUJOIN_DEFAULT_GFTR_GATHER_NS		0.012
/*
 * Spread joins, two H200 of one host with NVLink between them, 2026-11-27
 * (bench/results/spread_h200x2.md): peer_gbps is gpujoin_calibrate()'s
 * copy from one GPU to the other (NVLink, 390 GB/s: calibrate_h200x2.txt);
 * exchange_row_ns the partitioned 2^30 join's time beyond its copies and
 * kernels (31 ms on the slowest GPU for its 2^30 rows with the one-pass
 * partition, 2026-11-29; 121 ms when the exchange sorted by device);
 * spread_device_ms what a second GPU added to a join that fits one in
 * PostgreSQL (859 against 599 ms, broadcast: a backend's context on the
 * second GPU, its threads and its build)
 */
#define GPUJOIN_DEFAULT_PEER_GBPS			390.0
#define GPUJOIN_DEFAULT_EXCHANGE_ROW_NS		0.029
#define GPUJOIN_DEFAULT_SPREAD_DEVICE_MS	260.0

extern GpuJoinModel gpujoin_model;

/* The ways a join may run on several devices, as GpuJoinChooseSpread prices them */
typedef enum GpuJoinSpreadWay
{
	GPUJOIN_SPREAD_ONE,			/* on one device */
	GPUJOIN_SPREAD_BROADCAST,	/* every device builds the whole inner side */
	GPUJOIN_SPREAD_PARTITION,	/* each device builds its key range */
	GPUJOIN_NUM_SPREAD_WAYS
} GpuJoinSpreadWay;

/*
 * Join strategies: the plan node (EXPLAIN's Custom Scan name) and what its
 * output promises.  A hash join reads the outer side in chunks and returns
 * matches in no particular order; a merge join reads the outer side whole,
 * runs the SMJ variant, and returns matches in key order.
 */
typedef enum GpuJoinStrategy
{
	GPUJOIN_STRATEGY_HASH,		/* GpuHashJoin: any equi-join variant */
	GPUJOIN_STRATEGY_MERGE,		/* GpuMergeJoin: SMJ, sorted output */
	GPUJOIN_STRATEGY_THETA		/* GpuThetaJoin: BAND or NLJ on range and
								 * comparison clauses */
} GpuJoinStrategy;

/*
 * Items stored in CustomScan.custom_private
 *
 * The list holds only nodeToString-able nodes, so EXPLAIN (VERBOSE) and
 * debug_print_plan work.  Fetch an item with list_nth(), for example:
 *		strategy = intVal(list_nth(cscan->custom_private, GpuJoinPrivateStrategy));
 */
typedef enum GpuJoinPrivateIndex
{
	/* GpuJoinStrategy (as an Integer node) */
	GpuJoinPrivateStrategy,
	/* JoinType (as an Integer node) */
	GpuJoinPrivateJoinType,
	/* Integer: custom_scan_tlist entries that come from the outer plan */
	GpuJoinPrivateNumOuterCols,
	/* Integer list: per key clause, 1 if its left argument is the outer side */
	GpuJoinPrivateOuterIsLeft,
	/* Integer list: per key clause, bits it takes in the packed key */
	GpuJoinPrivateKeyBits,
	/* Boolean: equal packed keys imply equal clause values (no recheck) */
	GpuJoinPrivateKeyExact,
	/* Float: planner's inner row estimate */
	GpuJoinPrivateInnerRows,
	/* GjVariant (as an Integer node) */
	GpuJoinPrivateVariant,
	/* GjMaterialize (as an Integer node) */
	GpuJoinPrivateMaterialize,
	/* Integer list: theta joins, per clause, its GjThetaOp as inner OP outer */
	GpuJoinPrivateThetaOps,
	/* Integer list: per key clause, the outer and inner GpuJoinKeyCoding */
	GpuJoinPrivateKeyCodings,
	/* String: the variants the planner priced, for EXPLAIN (VERBOSE) */
	GpuJoinPrivateConsidered,
	/* Integer: 1 if the join reads its outer side's relation as heap pages
	 * (exec_heap.c; the relation's columns make that side's part of
	 * custom_scan_tlist), 2 if so and its host columns are fetched by tid
	 * for each match (GpuJoinSide.host_by_tid), 0 if the first child gives
	 * its rows */
	GpuJoinPrivateOuterHeap,
	/* Integer: likewise for the inner side */
	GpuJoinPrivateInnerHeap,
	/* Float: the planner's estimate of the outer side's rows */
	GpuJoinPrivateOuterRows,
	/* List: the quals of the outer side's Seq Scan, when it is read as heap
	 * pages, that the device evaluates (planner_expr.c), or NIL.  Kept
	 * here, out of setrefs.c's reach, with their Vars of the scanned
	 * relation: exec_heap.c evaluates them on the relation's tuples. */
	GpuJoinPrivateOuterQuals,
	/* List: likewise for the inner side */
	GpuJoinPrivateInnerQuals,
	/* Boolean: the planner priced this join as the top of a chain with the
	 * GPU hash join below it (exec_chain.c chains only such pairs) */
	GpuJoinPrivateChainBelow,
} GpuJoinPrivateIndex;

/*
 * Items stored in CustomScan.custom_exprs; setrefs.c rewrites them to
 * reference custom_scan_tlist (INDEX_VAR), like the targetlist
 */
typedef enum GpuJoinExprsIndex
{
	/* List of OpExpr: the clauses evaluated on the device (equality, or
	 * comparisons for a theta join) */
	GpuJoinExprsKeyClauses,
	/* List of quals rechecked on the CPU on each matched pair */
	GpuJoinExprsJoinQuals,
} GpuJoinExprsIndex;

/* planner.c */
extern void GpuJoinInitPlanner(void);

/*
 * planner_agg.c: GpuPreAgg.  What an aggregate function computes on the
 * device, and the partial state the node returns for it (exec_agg.c)
 */
typedef enum GpuJoinAggFunc
{
	GPUJOIN_AGG_COUNT_STAR,		/* count(*): int8 */
	GPUJOIN_AGG_COUNT,			/* count(x): int8 */
	GPUJOIN_AGG_SUM_INT,		/* sum(int2/int4): int8, NULL for no row */
	GPUJOIN_AGG_SUM_INT8,		/* sum(int8): int8_avg_serialize's bytea */
	GPUJOIN_AGG_AVG_INT,		/* avg(int2/int4): int8[2] {count, sum} */
	GPUJOIN_AGG_AVG_INT8,		/* avg(int8): as sum(int8) */
	GPUJOIN_AGG_SUM_FLOAT4,		/* sum(float4): float4, NULL for no row */
	GPUJOIN_AGG_SUM_FLOAT8,		/* sum(float8): float8, NULL for no row */
	GPUJOIN_AGG_AVG_FLOAT,		/* avg(float4/float8): float8[3] {N, Sx, 0} */
	GPUJOIN_AGG_SUM_NUMERIC,	/* sum/avg(numeric of declared scale):
								 * numeric_avg_serialize's bytea */
	GPUJOIN_AGG_MIN,			/* the argument's type, NULL for no row */
	GPUJOIN_AGG_MAX
} GpuJoinAggFunc;

extern int	GpuJoinAggFuncOf(Oid aggfnoid);
extern bool GpuJoinAggSupported(Aggref *aggref, List *tlist);
extern bool GpuJoinGroupKeySupported(Expr *expr, List *tlist);
extern bool GpuJoinDictType(Oid type);
extern void GpuJoinInitPlannerAgg(void);

/* setup.c */
extern void GpuJoinInitSetup(void);

/* exec.c */
extern CustomScanMethods gpujoin_hash_scan_methods;
extern CustomScanMethods gpujoin_merge_scan_methods;
extern CustomScanMethods gpujoin_theta_scan_methods;
extern CustomScanMethods gpujoin_preagg_scan_methods;
extern const char *GpuJoinVariantName(GjVariant variant, GjMaterialize materialize);
extern const char *GpuJoinGroupByVariantName(int variant);
extern int	GpuJoinGroupByVariantOf(const char *name);
extern void GpuJoinInitExecutor(void);
extern void GpuJoinEndedWork(int64 *joins, double *device_ms);

/*
 * How a key value becomes a signed 64-bit integer (keys.c); the exact
 * codings keep SQL order
 */
typedef enum GpuJoinKeyKind
{
	GPUJOIN_KEY_NONE,			/* no coding */
	GPUJOIN_KEY_INT2,
	GPUJOIN_KEY_INT4,
	GPUJOIN_KEY_INT8,
	GPUJOIN_KEY_OID,
	GPUJOIN_KEY_BOOL,
	GPUJOIN_KEY_TIME,
	GPUJOIN_KEY_FLOAT4,
	GPUJOIN_KEY_FLOAT8,
	GPUJOIN_KEY_NUMERIC,		/* times 10^arg */
	/* date/time: keep these three in order of width (keys.c) */
	GPUJOIN_KEY_DATE,
	GPUJOIN_KEY_TIMESTAMP,
	GPUJOIN_KEY_TIMESTAMPTZ,
	GPUJOIN_KEY_DATE_AS_TIMESTAMP,	/* cross-type equality */
	GPUJOIN_KEY_DATE_AS_TIMESTAMPTZ,
	GPUJOIN_KEY_TIMESTAMP_AS_TIMESTAMPTZ,
	GPUJOIN_KEY_HASHED			/* hash function arg; rechecked on the CPU */
} GpuJoinKeyKind;

/*
 * The coding of one side of a key clause.  In the plan, each key clause
 * stores four integers: the outer side's kind and arg, then the inner's.
 */
typedef struct GpuJoinKeyCoding
{
	GpuJoinKeyKind kind;
	int32		arg;			/* NUMERIC: decimal scale; HASHED: the hash
								 * function's OID; else 0 */
} GpuJoinKeyCoding;

/*
 * planner_expr.c: a scan's quals compiled for the device (gpujoin_kernels.h,
 * DEVICE EXPRESSIONS): the program, the attribute each of its inputs
 * reads and how (GjKeyKind; a scan's numeric of declared scale: that
 * scale in input_scales, else -1; a scan's text compared with constants:
 * their number in input_texts, the ntexts constants of all text inputs in
 * input order in text_offsets and text_pool, as GjDeformSpec has them),
 * and the query parameters (Params) whose values go into the constants
 * param_consts (an Integer list)
 */
typedef struct GpuJoinDeviceExpr
{
	GjExprProgram program;
	int16		input_attnos[GJ_EXPR_MAX_INPUTS];
	uint8		input_kinds[GJ_EXPR_MAX_INPUTS];
	int8		input_scales[GJ_EXPR_MAX_INPUTS];
	int16		input_texts[GJ_EXPR_MAX_INPUTS];
	int			ntexts;
	int32		text_offsets[GJ_DEFORM_MAX_TEXTS + 1];
	char		text_pool[GJ_DEFORM_MAX_TEXT_BYTES];
	List	   *params;
	List	   *param_consts;
} GpuJoinDeviceExpr;

extern bool GpuJoinDeviceExprType(Oid type, GjExprType *t, GjKeyKind *kind);
extern void GpuJoinDeviceExprDatum(Oid type, Datum value, bool isnull, GjExprDatum *d);
extern bool GpuJoinCompileQual(List *quals, Index relid, GpuJoinDeviceExpr *out,
							   List **host_quals);
extern int	GpuJoinTlistPosition(List *tlist, Var *var);
extern bool GpuJoinCompileTlistExpr(Node *expr, List *tlist, bool is_qual,
									GpuJoinDeviceExpr *out, GjExprType *type);
extern int	GpuJoinNumericExprScale(Node *node);
extern int	GpuJoinNumericKeyScale(Node *expr);
extern int	GpuJoinExtractField(Node *expr, Node **arg);

/* exec_heap.c: the GjKeyKind the heap deform codes a key with, or -1 */
extern int	GpuJoinHeapKeyKind(GpuJoinKeyKind kind);

/* keys.c */
extern bool GpuJoinEqualityCoding(OpExpr *op, GpuJoinKeyCoding *left,
								  GpuJoinKeyCoding *right, int *bits);
extern bool GpuJoinThetaCoding(OpExpr *op, GjThetaOp *thetaop,
							   GpuJoinKeyCoding *left, GpuJoinKeyCoding *right);
extern bool GpuJoinKeyValue(Datum value, const GpuJoinKeyCoding *coding,
							FmgrInfo *hash, Oid collation, int64 *result);
extern bool GpuJoinKeysAreExact(List *key_bits, bool any_hashed);
extern uint64 GpuJoinPackKeys(const int64 *values, const int *bits, int nkeys,
							  bool exact);

/*
 * numeric with a declared scale as exact 64-bit integers (keys.c): the
 * value times 10^scale; back as a numeric from a (128-bit) sum or value
 */
#define GJ_NUMERIC_MAX_NDIGITS	12	/* base-10000 digits of an int128 x 1000 */
/* at most this many decimal digits once scaled (10^18 < 2^63) */
#define GPUJOIN_NUMERIC_MAX_DIGITS	GJ_NUMERIC_MAX_DIGITS
extern int	GpuJoinNumericScale(Node *expr);
extern int64 GpuJoinNumericScaled(Datum value, int scale);
extern int64 GpuJoinNumericKeyWord(Datum value, int scale);
extern Datum GpuJoinNumericKeyDatum(int64 word, int scale);
extern bool GpuJoinNumericConstScaled(Datum value, int *scale, int64 *scaled);
extern int	GpuJoinNumericDigits(int128 v, int scale, int16 *digits, int *weight);
extern Datum GpuJoinNumericDatum(int128 v, int scale, bool nan);

/*
 * A column of this type goes to the device as raw bytes (a device column):
 * fixed-width and passed by value; the others stay on the host as Datums
 */
static inline bool
GpuJoinIsDeviceType(int16 typlen, bool typbyval)
{
	return typbyval && (typlen == 1 || typlen == 2 || typlen == 4 || typlen == 8);
}

/*
 * The order-preserving uint64 of an exact key value, for theta joins:
 * unsigned order of the results is SQL order
 */
static inline uint64
GpuJoinOrderedKey(int64 value)
{
	return (uint64) value ^ (UINT64CONST(1) << 63);
}

/*
 * A device context owned by one executor node: the kernel table it runs on,
 * the context, and the cleanup that fires if the query ends in an ERROR
 */
typedef struct GpuJoinDeviceContext
{
	const GjKernels *kernels;	/* table the context was created by */
	GjContext  *ctx;			/* NULL when closed */
	GjStats		closed;			/* counters of contexts already destroyed */
	MemoryContextCallback callback; /* destroys ctx on reset of the owner */
} GpuJoinDeviceContext;

/* device.c */
extern void GpuJoinRequestSharedMemory(void);

/* pinned.c: the set of staging blocks a caller is about to ask for */
extern void GpuJoinPinnedExpect(Size bytes, int nblocks);
extern Size GpuJoinPinnedExpected(int *nblocks);

/* service_client.c: the kernels through the gpujoin service (service.c) */
extern bool GpuJoinServiceInUse(void);
extern bool GpuJoinServiceReady(void);
extern bool GpuJoinShmHasRoom(Size size);
struct GjServicePart;
extern bool GpuJoinServicePartOf(const GjKernels *kernels, const GjBatch *b, int ncolumns,
								 const int32 *widths, struct GjServicePart *part);
extern GjStatus GpuJoinServiceBuildParts(GjContext *ctx, const struct GjServicePart *parts,
										 int nparts, GjError *err);
extern bool GpuJoinServiceWaitReady(int timeout_ms);
extern const GjKernels *GpuJoinServiceKernels(bool gpu);

/* A context's build in the gpujoin service, as another process names it */
typedef struct GpuJoinSharedBuild
{
	int32		slot;			/* the owner's slot in the service */
	int32		pid;			/* the owner's pid */
	int32		context;		/* the service's number of the context */
	uint32		generation;		/* of the service it lives in */
	bool		gpu;			/* on the GPU, else the service's CPU twin */
} GpuJoinSharedBuild;

extern bool GpuJoinServiceBuildOf(const GjKernels *kernels, GjContext *ctx,
								  GpuJoinSharedBuild *build);
extern GjStatus GpuJoinServiceShare(const GpuJoinSharedBuild *build,
									const GjKernels **kernels, GjContext **ctx,
									GjError *err);
extern bool GpuJoinIsServiceKernels(const GjKernels *kernels, bool *gpu);
extern bool GpuJoinServiceAskAhead(const GjKernels *kernels, GjContext *ctx,
								   const uint32 relation[3], const uint32 *blocks,
								   const uint64 *lsns, int64 n, int32 page_size,
								   int16 *counts);
extern int	GpuJoinServiceProbe(GjDeviceInfo *info, char *message, Size message_size);
extern void GpuJoinServiceState(char **state, int64 *requests, int64 *contexts);
extern bool GpuJoinIsCpuTwin(const GjKernels *kernels);
extern bool GpuJoinPlannerHasDevice(bool *use_gpu);
extern double GpuJoinPlannerDeviceBudget(void);
extern bool GpuJoinCheckDevices(char **newval, void **extra, GucSource source);
extern int	GpuJoinSpreadDevices(int32 *devices);
extern void GpuJoinSpreadSpec(GjJoinSpec *spec, bool ordered, double inner_rows,
							  double outer_rows, double matches, char **considered);
extern GpuJoinSpreadWay GpuJoinChooseSpread(const GjJoinSpec *spec, double inner_rows,
											double outer_rows, double matches, int ndevices,
											bool fits_one, char **considered);
extern const char *GpuJoinDescribeSpread(const GjJoinSpec *spec, const GjKernels *kernels);
extern double GpuJoinExecutorDeviceBudget(const GjKernels *kernels);
extern double GpuJoinInnerDeviceBytes(double rows, int payload_bytes);
extern double GpuJoinChunkDeviceBytes(double rows, int outer_bytes, int inner_bytes);
extern int	GpuJoinPartitions(double inner_rows, int inner_bytes, double outer_rows,
							  int outer_bytes, double budget, int64 *chunk_rows);
extern void GpuJoinDeviceInit(GpuJoinDeviceContext *dev, MemoryContext owner);
extern void GpuJoinDeviceOpen(GpuJoinDeviceContext *dev,
							  const GjKernels *kernels, const GjJoinSpec *spec);
extern void GpuJoinDeviceClose(GpuJoinDeviceContext *dev);
extern void GpuJoinDeviceStats(const GpuJoinDeviceContext *dev, GjStats *stats);
extern void GpuJoinAddStats(GjStats *sum, const GjStats *add);
extern const GjKernels *GpuJoinChooseKernels(void);
extern const char *GpuJoinDescribeDevice(const GjKernels *kernels);
extern void GpuJoinCheckStatus(GjStatus status, const GjError *err,
							   const char *what);
extern int	GpuJoinStatusToSqlState(GjStatus status);
extern GjStatus GpuJoinInjectFault(GpuJoinFault step, bool on_fallback,
								   GjStatus status, GjError *err, bool mid_chunk);

#endif							/* GPUJOIN_H */
