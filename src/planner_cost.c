/*-------------------------------------------------------------------------
 *
 * planner_cost.c
 *	  What a GPU join path costs, in the planner's units, and which variant it runs
 *
 * Costs, in the planner's units, so that add_path() compares them with
 * PostgreSQL's own joins:
 *	- the children: their costs, a Seq Scan's times gpujoin.scan_cost_scale
 *	  but for its quals' (ChildCost) (PostgreSQL prices a scan high against its hash join: on the
 *	  development host a Seq Scan of 1M rows of two int4 columns is
 *	  estimated at 14,400 units, 116 ms at the 124 units per ms its serial
 *	  hash join runs at, and takes 31 ms; PostgreSQL's own plans all scan,
 *	  and a parallel one divides its scans by its workers, but a serial GPU
 *	  join would carry them whole);
 *	- host extraction: every needed column and key of every input row is
 *	  copied into a column batch (gpujoin.extract_cost each), plus a hash
 *	  function call per hashed key (cpu_operator_cost); a side the join
 *	  reads as heap pages instead (exec_heap.c) costs
 *	  gpujoin.heap_page_cost per page and gpujoin.heap_tuple_cost per
 *	  tuple, and a snapshot check per tuple on pages not all-visible;
 *	- the GPU: gpujoin.setup_cost once, and the device and bus time of the
 *	  chosen variant by ModelDeviceMs (the model of Wu et al. 2025, §4,
 *	  with constants gpujoin_calibrate() measures) times
 *	  gpujoin.cost_per_ms; the CPU twin: cpu_operator_cost per key and pass;
 *	- output: the recheck quals on every match, then gpujoin.emit_cost and
 *	  the projection for every row returned, as PostgreSQL charges its own
 *	  joins.
 *
 * A partial path (a parallel GPU join, planner.c) is costed per process:
 * the host work of its share of the outer rows and of the whole inner
 * side, gpujoin.worker_setup_cost per worker for opening the GPU in a new
 * process (one after another; once a process, so only where no GPU node
 * below runs in the same processes: GpuJoinPathHoldsParallelGpu), and the
 * device time of every process's build and of all the probes, as the
 * processes share one GPU.  Through
 * the gpujoin service no process opens the GPU, and a hash join that
 * needs only the inner side's device columns is built once and shared
 * (exec_parallel.c): one build, and a tenth of worker_setup_cost per
 * worker (a new client of the service: its slot, its staging arena, its
 * first requests; 9 to 33 ms on the H200 host against about 180 ms for
 * opening the GPU).  The inner side stays in every process's startup
 * cost: the others wait for the one that reads it.
 *
 * The host constants' defaults are those gpujoin_calibrate() measured on
 * the H200 host (bench/results/cost_model.md): there, with them, the
 * planner chose a plan within 10 % of the faster one at every size from
 * 10^3 to 10^8 rows a side.
 *
 * IDENTIFICATION
 *	  src/planner_cost.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "gpujoin.h"
#include "planner.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"

/* A parallel worker's setup through the gpujoin service, as a share of
 * gpujoin.worker_setup_cost (see the file header) */
#define GPUJOIN_SERVICE_WORKER_SETUP_SHARE	0.1
#include "optimizer/paths.h"
#include "optimizer/plancat.h"
#include "optimizer/restrictinfo.h"
#include "utils/lsyscache.h"

/*
 * What a side sends to the device: its fixed-width columns (bytes per row,
 * and how many), as far as the planner can tell from the side's targetlist
 * (the executor keeps only those referenced above the join)
 */
static void
CountPayload(Path *path, int *ncolumns, int *bytes)
{
	ListCell   *lc;

	*ncolumns = 0;
	*bytes = 0;
	foreach(lc, path->pathtarget->exprs)
	{
		int16		typlen;
		bool		typbyval;

		get_typlenbyval(exprType(lfirst(lc)), &typlen, &typbyval);
		if (GpuJoinIsDeviceType(typlen, typbyval) && *ncolumns < GJ_MAX_COLUMNS)
		{
			(*ncolumns)++;
			*bytes += typlen;
		}
	}
}

/*
 * A side's columns the heap deform can convert: numerics of declared scale
 * (GpuJoinNumericScale), as plain columns
 */
static int
ScaledNumericColumns(const Path *path)
{
	int			nnumeric = 0;
	ListCell   *lc;

	foreach(lc, path->pathtarget->exprs)
		if (IsA(lfirst(lc), Var) && GpuJoinNumericScale(lfirst(lc)) >= 0)
			nnumeric++;
	return nnumeric;
}

/*
 * A join's side read as heap pages whose host columns would all be numerics
 * of declared scale takes these to the device as scaled integers, which the
 * deform converts (exec_batch.c's GpuJoinHeapNumericsOnDevice): they count
 * as payloads of 8 bytes, and the emission pays extract_cost a match for
 * each (turning it back into a numeric); the number of them, or 0
 */
static int
HeapNumericPayload(Path *path, int *ncolumns, int *bytes)
{
	int			nnumeric;

	if (!gpujoin_deform_numeric)
		return 0;
	nnumeric = ScaledNumericColumns(path);
	if (nnumeric == 0 || *ncolumns + nnumeric != list_length(path->pathtarget->exprs) ||
		*ncolumns + nnumeric > GJ_MAX_COLUMNS)
		return 0;
	*ncolumns += nnumeric;
	*bytes += nnumeric * (int) sizeof(int64);
	return nnumeric;
}

/*
 * Device and bus time of one GPU join in milliseconds, by the model whose
 * constants gpujoin_calibrate() measures (GpuJoinModel):
 *	- the variant's passes over the keys: row_ns per input row (NLJ: every
 *	  pair and term, nlj_compare_ns), as Wu et al. 2025, §4, count them in
 *	  passes over the input;
 *	- materialization (§4.2, §4.3): GFTR carries every payload column
 *	  through the passes (gftr_column_ns per row and column: the inner
 *	  side's for NPHJ, which transforms only the build side, both sides'
 *	  otherwise) and then gathers nearly in order (gftr_gather_ns per match
 *	  and column; NPHJ's probe order is random, so gather_ns); GFUR gathers
 *	  every column of every match by row number (gather_ns, the random
 *	  access that the paper prices at B_G/24);
 *	- match_ns per match for row numbers and offsets;
 *	- the bus (Rui 2020: bytes over the bus dominate): keys and
 *	  fixed-width columns in, the matches' columns and row numbers out, at
 *	  transfer_gbps.
 */
static double
ModelDeviceMs(GjVariant variant, GjMaterialize materialize, double inner_rows,
			  double outer_rows, double matches, int inner_cols, int outer_cols,
			  int inner_bytes, int outer_bytes, int nterms)
{
	const GpuJoinModel *m = &gpujoin_model;
	int			cols = inner_cols + outer_cols;
	double		ns;
	double		bytes;

	if (variant == GJ_VARIANT_NLJ)
		ns = inner_rows * outer_rows * Max(nterms, 1) * m->nlj_compare_ns;
	else
		ns = (inner_rows + outer_rows) * m->row_ns[variant];
	if (materialize == GJ_MATERIALIZE_GFTR)
	{
		ns += m->gftr_column_ns * (inner_rows * inner_cols +
								   (variant == GJ_VARIANT_NPHJ ? 0.0 : outer_rows * outer_cols));
		ns += matches * cols * (variant == GJ_VARIANT_NPHJ ? m->gather_ns : m->gftr_gather_ns);
	}
	else
		ns += matches * cols * m->gather_ns;
	ns += matches * m->match_ns;

	bytes = inner_rows * (GPUJOIN_KEY_BYTES + inner_bytes) +
		outer_rows * (GPUJOIN_KEY_BYTES + outer_bytes) +
		matches * (inner_bytes + outer_bytes + GPUJOIN_MATCH_BYTES);
	return ns / 1e6 + bytes / (m->transfer_gbps * 1e6);
}

/*
 * What ModelDeviceMs charges the bus for the rows between two levels of a
 * chain, which stay on the device (cuda/device/chain.c; through the
 * gpujoin service, its hand-down): the lower level's matches out and the
 * upper level's outer side in, rows of outer_path's columns, from every
 * process of a partial path (the GPU is theirs together)
 */
double
GpuJoinChainBusMs(Path *outer_path)
{
	int			ncolumns;
	int			bytes;
	double		rows = outer_path->rows;

	if (outer_path->parallel_aware)
		rows *= GpuJoinParallelDivisor(outer_path);
	CountPayload(outer_path, &ncolumns, &bytes);
	return rows * (2.0 * bytes + GPUJOIN_KEY_BYTES + GPUJOIN_MATCH_BYTES) /
		(gpujoin_model.transfer_gbps * 1e6);
}

/*
 * Append ms as "%.3f" would print it, with integer arithmetic: this text is
 * made at every costing of every GPU join path, and printf's float
 * formatting was a seventh of the planning time of a many-way join
 */
static void
AppendMs(StringInfo buf, double ms)
{
	int64		us;

	if (!(ms >= 0.0 && ms < 1e15))
	{
		appendStringInfo(buf, "%.3f", ms);
		return;
	}
	us = (int64) (ms * 1000.0 + 0.5);
	appendStringInfo(buf, INT64_FORMAT ".%03d", us / 1000, (int) (us % 1000));
}

/*
 * SEVERAL DEVICES: how a join of the spec runs on ndevices devices (>= 2),
 * the cheapest way by the model: on one device (ModelDeviceMs); broadcast
 * (every device copies and builds the whole inner side, each probes a
 * slice of the outer side: one device's work on 1/n of the outer rows and
 * matches); partitioned (each device holds 1/n of both sides, and
 * partitions and sends its slice of each: exchange_row_ns per row, and the (n - 1)/n
 * of its rows that go to the other devices at peer_gbps).  Either spread
 * pays spread_device_ms per device past the first.  Theta joins are not
 * partitioned (no key); an inner side that does not fit one device
 * (fits_one false) is partitioned if it can be, whatever the estimates.
 * *considered gets the estimates for EXPLAIN (VERBOSE): "one device 1.204
 * ms (chosen), broadcast over 2 201.031 ms, partitioned over 2 200.902 ms".
 */
GpuJoinSpreadWay
GpuJoinChooseSpread(const GjJoinSpec *spec, double inner_rows, double outer_rows,
					double matches, int ndevices, bool fits_one, char **considered)
{
	const GpuJoinModel *m = &gpujoin_model;
	bool		theta = !gj_variant_partitions(spec->variant);
	int			inner_bytes = 0;
	int			outer_bytes = 0;
	double		n = Max(ndevices, 2);
	double		ms[GPUJOIN_NUM_SPREAD_WAYS];
	double		moved_bytes;
	GpuJoinSpreadWay best = GPUJOIN_SPREAD_ONE;
	StringInfoData buf;
	static const char *const names[GPUJOIN_NUM_SPREAD_WAYS] = {
		"one device", "broadcast over", "partitioned over"
	};

	for (int c = 0; c < spec->inner_ncolumns; c++)
		inner_bytes += spec->inner_widths[c];
	for (int c = 0; c < spec->outer_ncolumns; c++)
		outer_bytes += spec->outer_widths[c];

#define SPREAD_MODEL(inner, outer, found) \
	ModelDeviceMs(spec->variant, spec->materialize, (inner), (outer), (found), \
				  spec->inner_ncolumns, spec->outer_ncolumns, inner_bytes, outer_bytes, \
				  spec->nterms)
	ms[GPUJOIN_SPREAD_ONE] = SPREAD_MODEL(inner_rows, outer_rows, matches);
	ms[GPUJOIN_SPREAD_BROADCAST] = SPREAD_MODEL(inner_rows, outer_rows / n, matches / n) +
		(n - 1) * m->spread_device_ms;
	moved_bytes = (n - 1) / n *
		(inner_rows / n * (GPUJOIN_KEY_BYTES + sizeof(GjRowId) + inner_bytes) +
		 outer_rows / n * (GPUJOIN_KEY_BYTES + sizeof(GjRowId) + outer_bytes));
	ms[GPUJOIN_SPREAD_PARTITION] = SPREAD_MODEL(inner_rows / n, outer_rows / n, matches / n) +
		(inner_rows + outer_rows) / n * m->exchange_row_ns / 1e6 +
		moved_bytes / (m->peer_gbps * 1e6) + (n - 1) * m->spread_device_ms;
#undef SPREAD_MODEL

	if (!fits_one && !theta)
		best = GPUJOIN_SPREAD_PARTITION;
	else if (fits_one)
	{
		for (int w = GPUJOIN_SPREAD_BROADCAST; w < GPUJOIN_NUM_SPREAD_WAYS; w++)
		{
			if (w == GPUJOIN_SPREAD_PARTITION && theta)
				continue;
			if (ms[w] < ms[best])
				best = (GpuJoinSpreadWay) w;
		}
	}

	if (considered != NULL)
	{
		initStringInfo(&buf);
		for (int w = 0; w < GPUJOIN_NUM_SPREAD_WAYS; w++)
		{
			if (w == GPUJOIN_SPREAD_PARTITION && theta)
				continue;
			if (w > 0)
				appendStringInfoString(&buf, ", ");
			appendStringInfoString(&buf, names[w]);
			if (w != GPUJOIN_SPREAD_ONE)
				appendStringInfo(&buf, " %d", ndevices);
			appendStringInfoChar(&buf, ' ');
			AppendMs(&buf, ms[w]);
			appendStringInfoString(&buf, " ms");
			if (w == (int) best)
				appendStringInfoString(&buf, fits_one ? " (chosen)" :
									   " (chosen: the inner side does not fit one device)");
		}
		*considered = buf.data;
	}
	return best;
}

/*
 * Choose the variant and the materialization of a GPU join
 *
 * The settings may force either.  Otherwise every candidate the strategy
 * allows (a hash join: NPHJ, PHJ and SMJ; a merge join: SMJ; a theta join:
 * the variant its path is for), each with GFTR and GFUR, is priced by
 * ModelDeviceMs and the cheapest wins.  *considered gets them all for
 * EXPLAIN (VERBOSE): "NPHJ-UR 1.204 ms (chosen), NPHJ-TR 1.377 ms, ...".
 *
 * This replaces the paper's decision rules (Wu et al. 2025,
 * §5: NPHJ for an inner side that stays in L2, GFTR from a 25 %
 * match ratio), which the H200 grid contradicted (bench/results/kernels.md:
 * GFUR won nearly everywhere, GFTR only for PHJ in the PK-FK shape from a
 * match ratio of about 0.73); with the measured constants the model
 * reproduces that crossover.
 */
static void
ChooseVariant(GpuJoinStrategy strategy, double outer_rows, double inner_rows,
			  double matches, int outer_cols, int inner_cols, int outer_bytes,
			  int inner_bytes, int nterms, GjVariant *variant,
			  GjMaterialize *materialize, char **considered)
{
	StringInfoData buf;
	GjVariant	first;
	GjVariant	last;
	double		best_ms = -1.0;
	GjVariant	best_variant = *variant;
	GjMaterialize best_materialize = GJ_MATERIALIZE_GFUR;
	bool		forced_variant = false;
	int			chosen_at = 0;

	if (strategy == GPUJOIN_STRATEGY_MERGE)
		first = last = GJ_VARIANT_SMJ;
	else if (strategy == GPUJOIN_STRATEGY_THETA)
		first = last = *variant;	/* the caller offers each */
	else if (gpujoin_join_variant != GPUJOIN_AUTO && gpujoin_join_variant <= GJ_VARIANT_SMJ)
	{
		first = last = (GjVariant) gpujoin_join_variant;
		forced_variant = true;
	}
	else
	{
		first = GJ_VARIANT_NPHJ;
		last = GJ_VARIANT_SMJ;
	}

	initStringInfo(&buf);
	for (int v = first; v <= last; v++)
	{
		for (int mat = GJ_MATERIALIZE_GFUR; mat <= GJ_MATERIALIZE_GFTR; mat++)
		{
			double		ms;

			if (gpujoin_materialize != GPUJOIN_AUTO && gpujoin_materialize != mat)
				continue;
			/* theta variants gather by row number (GFUR) unless told */
			if (strategy == GPUJOIN_STRATEGY_THETA && gpujoin_materialize == GPUJOIN_AUTO &&
				mat == GJ_MATERIALIZE_GFTR)
				continue;
			ms = ModelDeviceMs((GjVariant) v, (GjMaterialize) mat, inner_rows, outer_rows,
							   matches, inner_cols, outer_cols, inner_bytes,
							   outer_bytes, nterms);
			if (buf.len > 0)
				appendStringInfoString(&buf, ", ");
			appendStringInfoString(&buf, GpuJoinVariantName((GjVariant) v, (GjMaterialize) mat));
			appendStringInfoChar(&buf, ' ');
			AppendMs(&buf, ms);
			appendStringInfoString(&buf, " ms");
			if (best_ms < 0.0 || ms < best_ms)
			{
				best_ms = ms;
				best_variant = (GjVariant) v;
				best_materialize = (GjMaterialize) mat;
				chosen_at = buf.len;
			}
		}
	}
	/* mark the winner */
	{
		StringInfoData out;

		initStringInfo(&out);
		appendBinaryStringInfo(&out, buf.data, chosen_at);
		appendStringInfoString(&out, (forced_variant || gpujoin_materialize != GPUJOIN_AUTO) ?
							   " (chosen; forced by a setting)" : " (chosen)");
		appendStringInfoString(&out, buf.data + chosen_at);
		*considered = out.data;
	}
	*variant = best_variant;
	*materialize = best_materialize;
}

/*
 * A partial path's rows per process, as costsize.c's get_parallel_divisor
 * counts them (static there): one share per worker, and the leader's share,
 * which shrinks as it has more workers' tuples to gather
 */
double
GpuJoinParallelDivisor(const Path *path)
{
	double		divisor = path->parallel_workers;

	if (parallel_leader_participation)
	{
		double		leader_share = 1.0 - 0.3 * path->parallel_workers;

		if (leader_share > 0.0)
			divisor += leader_share;
	}
	return divisor;
}

/* The processes that run a path's join: its workers and, mostly, the leader */
int
GpuJoinParallelProcesses(const Path *path)
{
	if (path->parallel_workers == 0)
		return 1;
	return path->parallel_workers + (parallel_leader_participation ? 1 : 0);
}

/*
 * A child's cost as a GPU join is charged it (see the file header): a Seq
 * Scan's times gpujoin.scan_cost_scale, but for its quals, which run on
 * every tuple on the CPU as PostgreSQL prices them (the scale was measured
 * on scans without quals; on the H200 host a Seq Scan of TPC-H's lineitem
 * with quals on text and dates took 0.81 of its estimate at cost_per_ms,
 * where its scaled estimate said 0.2, and the planner chose a GPU join 4.8x
 * slower than PostgreSQL's plan)
 */
static void
ChildCost(const Path *path, Cost *startup, Cost *run)
{
	RelOptInfo *rel = path->parent;
	Cost		quals = 0.0;

	*startup = path->startup_cost;
	*run = path->total_cost - path->startup_cost;
	if (path->pathtype != T_SeqScan)
		return;
	if (rel->baserestrictinfo != NIL)
	{
		quals = rel->baserestrictcost.per_tuple * rel->tuples;
		if (path->parallel_workers > 0)
			quals /= GpuJoinParallelDivisor(path);
		quals = Min(quals, *run);
	}
	*startup *= gpujoin_scan_cost_scale;
	*run = (*run - quals) * gpujoin_scan_cost_scale + quals;
}

/* A heap side's host values a row: its target's non-payload columns and
 * its keys encoded on the host */
static int
HostValues(const Path *path, int payloads, int host_keys)
{
	return list_length(path->pathtarget->exprs) - payloads + host_keys;
}

/*
 * The host columns' part of HeapSideCost: each tuple that passes the quals
 * deformed on the host, and its host values (and keys encoded there) taken
 */
static Cost
HeapHostCost(const Path *path, int payloads, int host_keys)
{
	int			nhost = HostValues(path, payloads, host_keys);

	if (nhost <= 0)
		return 0.0;
	return path->parent->rows * (gpujoin_heap_host_tuple_cost + nhost * gpujoin_heap_host_value_cost);
}

/*
 * The part of HeapHostCost a GpuPreAgg does not pay where the deform
 * converts the side's numeric columns of declared scale on the device
 * (gpujoin.deform_numeric, exec_heap.c): heap_host_value_cost per such
 * column and row, and heap_host_tuple_cost a row where they are all its
 * host values.  The join's own price keeps them where the side has other
 * host values (a join that emits rows then takes its numerics with them,
 * on the host); where it has none, HeapNumericPayload has counted them
 * as device columns already, and this is 0.
 */
static Cost
DeformedNumericCost(const Path *path, int payloads, int host_keys)
{
	int			nhost = HostValues(path, payloads, host_keys);
	int			nnumeric = ScaledNumericColumns(path);

	if (nnumeric == 0 || nhost <= 0)
		return 0.0;
	return path->parent->rows * (Min(nnumeric, nhost) * gpujoin_heap_host_value_cost +
								 (nnumeric >= nhost ? gpujoin_heap_host_tuple_cost : 0.0));
}

/*
 * A side read as heap pages (exec_heap.c): gpujoin.heap_page_cost per page
 * and gpujoin.heap_tuple_cost per tuple on them, and for the tuples of the
 * pages that are not all-visible (the share the relation's statistics give,
 * relallvisible) the check against the snapshot, priced as PostgreSQL
 * prices an operator, scaled as a Seq Scan's cost is; a side with host columns
 * (variable-width or by reference) deforms each tuple on the host too,
 * gpujoin.heap_host_tuple_cost, and pays gpujoin.heap_host_value_cost per
 * host value (measured by bench/host_columns.sh: on the H200 host a 6M-row
 * side's first numeric column took a join from 78 to 468 ms, where the
 * Seq Scan's scaled per-tuple cost and extract_cost had priced 36 ns a row
 * for 65).  Quals
 * (evaluated with the deform: planner_expr.c) cost what the Seq Scan's
 * would, scaled; where some are the host's, every tuple pays for all of
 * them unscaled and for its tuple formed on the host; the host columns are
 * taken only from the rows that pass them.  payloads: its device columns (CountPayload); the rest of its
 * target are host ones.  host_keys: its keys encoded on the host
 * (HostKeys), each a host value more.
 */
static Cost
HeapSideCost(const Path *path, int payloads, int host_keys)
{
	RelOptInfo *rel = path->parent;
	Cost		cost = gpujoin_heap_page_cost * rel->pages +
		gpujoin_heap_tuple_cost * rel->tuples +
		cpu_operator_cost * gpujoin_scan_cost_scale * rel->tuples * (1.0 - rel->allvisfrac);

	if (rel->baserestrictinfo != NIL && GpuJoinHeapHostQuals(rel) == NIL)
		cost += (rel->baserestrictcost.startup +
				 rel->baserestrictcost.per_tuple * rel->tuples) * gpujoin_scan_cost_scale;
	else if (rel->baserestrictinfo != NIL)
	{
		/*
		 * quals the host evaluates: on each tuple the device's pass (priced
		 * as all of them), every qual, as the Seq Scan would, on a tuple
		 * formed from its staged page
		 */
		cost += rel->baserestrictcost.startup +
			(rel->baserestrictcost.per_tuple + gpujoin_heap_host_tuple_cost) * rel->tuples;
	}
	return cost + HeapHostCost(path, payloads, host_keys);
}

/*
 * What a side read as heap pages adds where enable_seqscan is off: it is a
 * sequential scan of its relation.  From PostgreSQL 17 a GPU path carries
 * its Seq Scan path's disabled node (GpuJoinSetDisabledNodes, compat.h);
 * before, that path's cost carried disable_cost, which HeapSideCost's price
 * of the pages leaves out, so that a GpuPreAgg reading the pages took the
 * place of the index scan enable_seqscan = off asked for (PostgreSQL's
 * regression suite, create_index: a GiST index and a Seq Scan disagree on
 * a NaN point, and the forced GPU run counted 5 where the index gave 4)
 */
static Cost
HeapSideDisabledCost(void)
{
#if PG_VERSION_NUM >= 170000
	return 0.0;
#else
	return enable_seqscan ? 0.0 : disable_cost;
#endif
}

/*
 * A heap side's keys encoded on the host (exec_heap.c): all of them where
 * one has a coding the deform does not compute (GpuJoinHeapKeyKind), else
 * none
 */
static int
HostKeys(List *codings, bool outer)
{
	int			nkeys = list_length(codings) / 4;

	for (int k = 0; k < nkeys; k++)
		if (GpuJoinHeapKeyKind((GpuJoinKeyKind) list_nth_int(codings, 4 * k + (outer ? 0 : 2))) < 0)
			return nkeys;
	return 0;
}

/*
 * What a parallel GPU node's workers cost to open the GPU (see the file
 * header): a tenth of it each through the gpujoin service
 */
static Cost
WorkerSetupCost(const Path *path)
{
	return path->parallel_workers * gpujoin_worker_setup_cost *
		(GpuJoinServiceInUse() ? GPUJOIN_SERVICE_WORKER_SETUP_SHARE : 1.0);
}

/*
 * Estimate the costs of a SCAN path (GpuJoinScanPath): no join, every row
 * of its one side a match.  The side as a join's outer side costs (heap
 * pages; or its child, unscaled, and the values copied into batches), the device's
 * part by the model with no inner side and no key (the round's gather, the
 * matches), the fixed costs of a GPU join, and the emission of every row,
 * which the GpuPreAgg above takes off again, as it does a join's
 */
void
GpuJoinCostScanPath(PlannerInfo *root, CustomPath *cpath, Path *scan_path, bool use_gpu,
					char **considered, Cost *deformed_numerics)
{
	double		rows = scan_path->rows;	/* a partial path's: per process */
	int			processes = GpuJoinParallelProcesses(&cpath->path);
	double		divisor = processes > 1 ? GpuJoinParallelDivisor(&cpath->path) : 1.0;
	int			payloads;
	int			bytes;
	Cost		startup_cost = 0.0;
	Cost		run_cost = 0.0;
	double		ms = 0.0;

	CountPayload(scan_path, &payloads, &bytes);
	if (GpuJoinHeapSide(root, scan_path, GPUJOIN_STRATEGY_HASH, NIL, NIL, true))
	{
		startup_cost = HeapSideDisabledCost();
		run_cost = HeapSideCost(scan_path, payloads, 0);
		*deformed_numerics = DeformedNumericCost(scan_path, payloads, 0);
		if (scan_path->parallel_aware)
		{
			run_cost /= GpuJoinParallelDivisor(scan_path);
			*deformed_numerics /= GpuJoinParallelDivisor(scan_path);
		}
	}
	else
	{
		/*
		 * A child: the very scan PostgreSQL's own aggregate over the relation
		 * reads, so it is charged as PostgreSQL prices it, not scaled as
		 * under a join (ChildCost): scaled, a GpuPreAgg looked cheaper than
		 * its own input, and TPC-H Q6 (quals on numeric columns, which stay
		 * on the host) took 846 ms as one against 190 ms for PostgreSQL's
		 * parallel aggregate (H200 host, 2026-11-28)
		 */
		startup_cost = scan_path->startup_cost;
		run_cost = scan_path->total_cost - scan_path->startup_cost;
		run_cost += rows * list_length(scan_path->pathtarget->exprs) * gpujoin_extract_cost;
	}
	if (use_gpu)
	{
		ms = ModelDeviceMs(GJ_VARIANT_SCAN, GJ_MATERIALIZE_GFUR, 0.0, rows * divisor,
						   rows * divisor, 0, payloads, 0, bytes, 0);
		startup_cost += gpujoin_setup_cost;
		startup_cost += WorkerSetupCost(&cpath->path);
		run_cost += ms * gpujoin_model.cost_per_ms;
	}
	else
		run_cost += cpu_operator_cost * rows;
	run_cost += (gpujoin_emit_cost + cpath->path.pathtarget->cost.per_tuple) * rows;
	cpath->path.startup_cost = startup_cost;
	cpath->path.total_cost = startup_cost + run_cost;
	*considered = use_gpu ? psprintf("SCAN %.3f ms (chosen)", ms) :
		pstrdup("SCAN on the CPU twin (chosen)");
}

/*
 * The most candidate matches the key clauses can have, as far as the
 * estimates tell: those of the most selective clause alone.  Several keys'
 * selectivities multiplied assume the keys independent, and correlated ones
 * make that estimate far too low (TPC-H Q9's lineitem and partsupp on
 * partkey and suppkey: 2,422 estimated, 6M there); a cost that grows with
 * each match, as fetching a row by tid per match does, is priced on this
 */
static double
MatchesBound(PlannerInfo *root, List *key_rinfos, double outer_rows, double inner_rows,
			 SpecialJoinInfo *sjinfo, double matches)
{
	double		bound = outer_rows * inner_rows;
	ListCell   *lc;

	if (list_length(key_rinfos) < 2)
		return matches;
	foreach(lc, key_rinfos)
		bound = Min(bound, outer_rows * inner_rows *
					clause_selectivity(root, (Node *) lfirst(lc), 0, JOIN_INNER, sjinfo));
	return Max(clamp_row_est(bound), matches);
}

/*
 * Estimate the costs of a GPU join path; see the file header
 */
void
GpuJoinCostPath(PlannerInfo *root, CustomPath *cpath, Path *outer_path,
				Path *inner_path, GpuJoinClauses *clauses, JoinPathExtraData *extra,
				bool use_gpu, GpuJoinStrategy strategy, GjVariant *variant,
				GjMaterialize *materialize, char **considered, bool *partitioned,
				bool *outer_by_tid, bool *shared_build, Cost *unshared, bool *inner_by_tid,
				Cost *deformed_numerics)
{
	double		outer_rows = outer_path->rows;	/* a partial path's: per process */
	double		inner_rows = inner_path->rows;
	double		out_rows = cpath->path.rows;
	int			processes = GpuJoinParallelProcesses(&cpath->path);
	double		divisor = processes > 1 ? GpuJoinParallelDivisor(&cpath->path) : 1.0;
	int			nkeys = list_length(clauses->key_clauses);
	int			outer_cols = list_length(outer_path->pathtarget->exprs);
	int			inner_cols = list_length(inner_path->pathtarget->exprs);
	int			outer_payloads;
	int			inner_payloads;
	int			outer_bytes;
	int			inner_bytes;
	double		matches;
	double		matches_bound;	/* for costs per match fetched by tid */
	int			inner_host_keys = HostKeys(clauses->codings, false);
	double		passes;
	QualCost	qual_cost;
	Cost		startup_cost = 0.0;
	Cost		run_cost = 0.0;
	Cost		emit_cost;

	Cost		host_by_value = 0.0;	/* an outer heap side's host columns, */
	Cost		host_by_tid = 0.0;	/* taken from each row, or fetched per match */
	bool		outer_heap;
	bool		inner_heap;
	int			numeric_payloads = 0;	/* HeapNumericPayload's */
	Cost		inner_read = 0.0;	/* an inner heap side's pages */
	Cost		inner_host = 0.0;	/* an inner heap side's host columns */
	Cost		inner_numerics = 0.0;	/* its numerics (DeformedNumericCost) */

	*partitioned = false;
	*outer_by_tid = false;
	*shared_build = false;
	*unshared = 0.0;
	*inner_by_tid = false;
	*deformed_numerics = 0.0;

	/* candidate pairs the device returns: rows matching the key clauses */
	matches = clamp_row_est(outer_rows * inner_rows *
							clauselist_selectivity(root, clauses->key_rinfos, 0,
												   JOIN_INNER, extra->sjinfo));
	matches_bound = MatchesBound(root, clauses->key_rinfos, outer_rows, inner_rows,
								 extra->sjinfo, matches);

	CountPayload(outer_path, &outer_payloads, &outer_bytes);
	CountPayload(inner_path, &inner_payloads, &inner_bytes);
	outer_heap = GpuJoinHeapSide(root, outer_path, strategy, clauses->key_clauses,
								 clauses->outer_is_left, true);
	inner_heap = GpuJoinHeapSide(root, inner_path, strategy, clauses->key_clauses,
								 clauses->outer_is_left, false);
	if (outer_heap)
		numeric_payloads += HeapNumericPayload(outer_path, &outer_payloads, &outer_bytes);
	if (inner_heap)
		numeric_payloads += HeapNumericPayload(inner_path, &inner_payloads, &inner_bytes);
	ChooseVariant(strategy, outer_rows, inner_rows, matches, outer_payloads,
				  inner_payloads, outer_bytes, inner_bytes, nkeys, variant,
				  materialize, considered);

	/*
	 * The sides, into column batches: a child's cost (scaled for a Seq
	 * Scan) and gpujoin.extract_cost per value copied; or a side read as
	 * heap pages (exec_heap.c), gpujoin.heap_page_cost per page and
	 * gpujoin.heap_tuple_cost per tuple on them (HeapSideCost)
	 */
	if (outer_heap)
	{
		int			host_keys = HostKeys(clauses->codings, true);

		/* a partial outer side: each process reads its share of the pages */
		run_cost = HeapSideCost(outer_path, outer_payloads, host_keys);
		if (outer_path->parallel_aware)
			run_cost /= GpuJoinParallelDivisor(outer_path);

		/*
		 * Its host columns, when few of its rows match, fetched by tid for
		 * the candidate matches (each tuple again, GpuJoinHeapFetch) instead
		 * of deformed from every row (gpujoin.heap_fetch); not where the
		 * keys are encoded on the host, which needs every row's tuple
		 */
		host_by_value = HeapHostCost(outer_path, outer_payloads, host_keys);
		if (outer_path->parallel_aware)
			host_by_value /= GpuJoinParallelDivisor(outer_path);
		host_by_tid = matches_bound * gpujoin_heap_fetch_cost;
		if (host_by_value > 0.0 && host_keys == 0 && gpujoin_heap_fetch != GPUJOIN_HEAP_FETCH_OFF &&
			(gpujoin_heap_fetch == GPUJOIN_HEAP_FETCH_ON || host_by_tid < host_by_value))
		{
			*outer_by_tid = true;
			run_cost += host_by_tid - host_by_value;
		}
		else
		{
			*deformed_numerics = DeformedNumericCost(outer_path, outer_payloads, host_keys);
			if (outer_path->parallel_aware)
				*deformed_numerics /= GpuJoinParallelDivisor(outer_path);
		}
	}
	else
	{
		ChildCost(outer_path, &startup_cost, &run_cost);
		run_cost += outer_rows * (outer_cols + nkeys) * gpujoin_extract_cost;
	}
	if (inner_heap)
	{
		inner_host = HeapHostCost(inner_path, inner_payloads, inner_host_keys);
		inner_read = HeapSideCost(inner_path, inner_payloads, inner_host_keys);
		startup_cost += inner_read;
		inner_numerics = DeformedNumericCost(inner_path, inner_payloads, inner_host_keys);
	}
	else
	{
		Cost		inner_startup;
		Cost		inner_run;

		ChildCost(inner_path, &inner_startup, &inner_run);
		startup_cost += inner_startup + inner_run +
			inner_rows * (inner_cols + nkeys) * gpujoin_extract_cost;
	}

	/* a hash function call per hashed key */
	for (int i = 0; i < list_length(clauses->codings); i += 2)
	{
		if (list_nth_int(clauses->codings, i) == GPUJOIN_KEY_HASHED)
		{
			bool		inner = (i % 4) == 2;

			startup_cost += inner ? inner_rows * cpu_operator_cost : 0.0;
			run_cost += inner ? 0.0 : outer_rows * cpu_operator_cost;
		}
	}

	/*
	 * The CPU twin's work, per key: one pass to build or probe a global
	 * table, two partitioning passes more for PHJ, a radix sort (about four
	 * passes) for SMJ; GFTR moves every payload column through the same
	 * passes.
	 */
	switch (*variant)
	{
		case GJ_VARIANT_NPHJ:
			passes = 1.0;
			break;
		case GJ_VARIANT_PHJ:
			passes = 3.0;
			break;
		case GJ_VARIANT_BAND:
			/* sorting the inner side, two binary searches per outer row */
			passes = 5.0 + 2.0 * log2(Max(inner_rows, 2.0)) / 8.0;
			break;
		case GJ_VARIANT_NLJ:
			/* every pair, every term: a few hundred comparisons per key */
			passes = Max(inner_rows, 1.0) * list_length(clauses->key_clauses) / 256.0;
			break;
		default:
			passes = 5.0;
			break;
	}
	if (*materialize == GJ_MATERIALIZE_GFTR)
		passes *= 1.0 + 0.5 * (outer_payloads + inner_payloads);

	/*
	 * A join whose device structures will not fit its device budget
	 * (GpuJoinPartitions): a hash join is partitioned on the host and joined
	 * one partition at a time (exec_partition.c), which costs a pass over both sides
	 * to partition them, the outer side's trip through a tuplestore (written
	 * and read back, spilling beyond work_mem like a hash join's batch
	 * files), and a build per partition; any other join, or one that would
	 * take too many partitions, falls back to the CPU twin when it runs out
	 * of device memory: cost it as that.  (Only a hash join lowers its outer
	 * chunks to fit, so GpuJoinPartitions' "1" is no promise for the others:
	 * they must fit as they are.)  The CPU twin partitions too, under
	 * gpujoin.device_memory_limit (so that tests need no GPU).
	 */
	if (use_gpu || gpujoin_cost_as_gpu || gpujoin_device_memory_limit > 0)
	{
		bool		as_gpu = use_gpu || gpujoin_cost_as_gpu;
		int64		chunk_rows = gpujoin_chunk_rows;
		/* the processes of a parallel join share the free device memory */
		double		budget = GpuJoinPlannerDeviceBudget() /
			(gpujoin_device_memory_limit > 0 ? 1 : processes);
		int			nparts = GpuJoinPartitions(inner_rows, inner_bytes, outer_rows,
											   outer_bytes, budget, &chunk_rows);
		double		need = GpuJoinInnerDeviceBytes(inner_rows, inner_bytes) +
			GpuJoinChunkDeviceBytes(Min(outer_rows, (double) gpujoin_chunk_rows),
									outer_bytes, inner_bytes);

		if (nparts > 1 && strategy == GPUJOIN_STRATEGY_HASH)
		{
			/* as costsize.c's page_size() counts a tuplestore's pages */
			double		outer_pages = ceil(outer_rows *
										   (MAXALIGN(outer_path->pathtarget->width) +
											MAXALIGN(SizeofHeapTupleHeader)) / BLCKSZ);

			*partitioned = true;
			/* the outer rows go through tuplestores: host columns by value */
			if (*outer_by_tid)
			{
				run_cost += host_by_value - host_by_tid;
				*outer_by_tid = false;
			}
			*considered = psprintf("%s; needs about %.0f MB of device memory, %.0f MB available: %d partitions",
								   *considered, need / (1024.0 * 1024.0),
								   budget / (1024.0 * 1024.0), nparts);
			run_cost += cpu_operator_cost * (inner_rows + 2.0 * outer_rows);
			if (outer_pages * BLCKSZ > work_mem * 1024.0)
				run_cost += 2.0 * outer_pages * seq_page_cost;
			/* a build per partition: a tenth of a join's fixed cost */
			run_cost += nparts * gpujoin_setup_cost / 10.0;
		}
		else if (as_gpu && (strategy == GPUJOIN_STRATEGY_HASH ? nparts != 1 :
							budget > 0.0 && need > budget))
		{
			*considered = psprintf("%s; needs about %.0f MB of device memory, %.0f MB available: costed as the CPU twin",
								   *considered, need / (1024.0 * 1024.0),
								   budget / (1024.0 * 1024.0));
			as_gpu = false;
		}
		use_gpu = as_gpu;
	}

	if (use_gpu)
	{
		/*
		 * The model's milliseconds: the inner side's part before the first
		 * row.  The processes of a parallel join share one GPU, which runs
		 * their kernels one after another: each waits for every build and
		 * for the probes of all outer rows.  Each worker opens the GPU
		 * first, and the driver lets them do so one at a time (on the H200
		 * host, about 180 ms each: bench/results/parallel.md).
		 */
		double		total_ms = ModelDeviceMs(*variant, *materialize, inner_rows,
											 outer_rows * divisor, matches * divisor,
											 inner_payloads, outer_payloads,
											 inner_bytes, outer_bytes, nkeys);
		double		build_ms = ModelDeviceMs(*variant, *materialize, inner_rows,
											 0.0, 0.0, inner_payloads,
											 outer_payloads, inner_bytes,
											 outer_bytes, nkeys);

		*shared_build = processes > 1 && GpuJoinServiceInUse() &&
			gpujoin_parallel_shared_build && strategy == GPUJOIN_STRATEGY_HASH &&
			gj_variant_shares_build(*variant) && !*partitioned && !clauses->fill_inner &&
			inner_host_keys == 0 && clauses->join_quals == NIL;
		if (*shared_build && inner_payloads < inner_cols)
		{
			/*
			 * Inner columns on the host: shared only where the inner side is
			 * read as heap pages, each participant fetching the inner tuple
			 * of each of its matches by the tid the builder kept
			 * (exec_parallel.c) instead of every participant reading the
			 * inner side, and where that is cheaper: the fetches against
			 * the host columns' deform, the builds the others save and,
			 * read in shares (below), the others' shares of the reading
			 * (of its quals too, where they are the host's)
			 */
			Cost		fetches = matches_bound * gpujoin_heap_fetch_cost;
			Cost		shares = !gpujoin_parallel_inner_shares ? 0.0 :
				(inner_read - inner_host) * (1.0 - 1.0 / divisor) -
				inner_rows / divisor * gpujoin_heap_tuple_cost;

			*shared_build = inner_heap &&
				fetches < inner_host + Max(shares, 0.0) +
				(processes - 1) * build_ms * gpujoin_model.cost_per_ms;
			if (*shared_build)
			{
				*inner_by_tid = true;
				startup_cost -= inner_host;
				inner_read -= inner_host;
				run_cost += fetches;
			}
		}
		if (*shared_build && inner_heap && gpujoin_parallel_inner_shares)
		{
			/*
			 * Each participant reads a share of the inner side's pages, and
			 * the builder builds from the shares where they lie
			 * (exec_parallel.c): one process's share of the reading, and
			 * its rows, deformed, back on the host and out again to the
			 * build, priced as reading its tuples again.  (A level of a
			 * partial chain above its lowest shares its build, and its
			 * host columns by tid, but its builder reads the inner side
			 * whole: the reading saved here is what the chain charges
			 * back, unshared.)
			 */
			startup_cost -= inner_read * (1.0 - 1.0 / divisor);
			startup_cost += inner_rows / divisor * gpujoin_heap_tuple_cost;
			inner_numerics /= divisor;	/* its share of them too */
			*unshared += inner_read * (1.0 - 1.0 / divisor) -
				inner_rows / divisor * gpujoin_heap_tuple_cost;
		}
		startup_cost += gpujoin_setup_cost +
			(*shared_build ? 1 : processes) * build_ms * gpujoin_model.cost_per_ms;
		/* once a process: not where a GPU node below opened it */
		if (!GpuJoinPathHoldsParallelGpu(outer_path) &&
			!GpuJoinPathHoldsParallelGpu(inner_path))
			startup_cost += WorkerSetupCost(&cpath->path);
		run_cost += (total_ms - build_ms) * gpujoin_model.cost_per_ms;
	}
	else
	{
		startup_cost += cpu_operator_cost * passes * inner_rows;
		run_cost += cpu_operator_cost * (passes * outer_rows + matches);
	}
	/* the inner side's numerics, as its host columns were priced */
	if (!*inner_by_tid)
		*deformed_numerics += inner_numerics;

	/* output: recheck every candidate, emit and project the survivors */
	cost_qual_eval(&qual_cost, clauses->join_quals, root);
	startup_cost += qual_cost.startup;
	run_cost += qual_cost.per_tuple * matches;
	startup_cost += cpath->path.pathtarget->cost.startup;
	emit_cost = (gpujoin_emit_cost + cpath->path.pathtarget->cost.per_tuple +
				 numeric_payloads * gpujoin_extract_cost) * out_rows;
	run_cost += emit_cost;

	/* a merge join has everything before its first row: it sorts it all */
	if (strategy == GPUJOIN_STRATEGY_MERGE)
	{
		startup_cost += run_cost - emit_cost;
		run_cost = emit_cost;
	}

	startup_cost += ((outer_heap != 0) + (inner_heap != 0)) * HeapSideDisabledCost();
	cpath->path.startup_cost = startup_cost;
	cpath->path.total_cost = startup_cost + run_cost;
}
