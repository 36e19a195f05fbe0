/*-------------------------------------------------------------------------
 *
 * exec.c
 *	  Executor callbacks and state machine for the GpuJoin custom scan
 *
 * A GpuJoin node joins two child plans: custom_ps[0] is the outer side and
 * custom_ps[1] the inner side.  The inner side is read completely into a
 * column batch, its join keys packed into one uint64 per row (keys.c), and
 * the kernels (device.c picks GPU or CPU twin) build a table on them.  The
 * outer side is then read in chunks of gpujoin.chunk_rows rows; each chunk's
 * keys are counted against the table on the device, and the matches come
 * back in rounds as (outer row, inner row) pairs.  Each pair fills the scan
 * tuple, the join quals the device could not evaluate are rechecked with
 * ExecQual, as nodeHashjoin.c rechecks after a bucket match, and the
 * projection makes the result.
 *
 * A GpuHashJoin reads the outer side in chunks and emits each chunk's
 * matches in the variant's order; a GpuMergeJoin reads it whole, runs SMJ,
 * and so emits its matches in key order, which its pathkeys promise.
 *
 * The node is in six files, each with its own part of the node's state
 * (GpuJoinState, exec.h):
 *
 *   exec.c            the node's callbacks, the state machine, rescans, and
 *                     the device steps (build, count, retrieve, and the
 *                     switch to the CPU twin)
 *   exec_batch.c      reading a side into a column batch: its columns and
 *                     its join keys
 *   exec_partition.c  partitioned hash joins: the inner batch split by key,
 *                     the outer side into one tuplestore per partition
 *   exec_emit.c       emitting rows: matched pairs, unmatched rows, in order
 *   exec_explain.c    EXPLAIN, and the counters it shows
 *   exec_parallel.c   parallel GPU joins: the counters the workers leave in
 *                     the node's dynamic shared memory
 *
 * STATE MACHINE
 *
 *	 GJ_LOAD_INNER	 -- read the inner plan into its batch, encode keys;
 *						partition it when it will not fit the device
 *	 GJ_PARTITION_OUTER -- partitioned: read the whole outer plan into one
 *						tuplestore per partition
 *	 GJ_BUILD		 -- kernels->build (partitioned: the current
 *						partition's inner rows)
 *	 GJ_LOAD_OUTER	 -- read the next outer chunk (partitioned: from the
 *						partition's tuplestore; at its end, on to the next
 *						partition's GJ_BUILD), encode its keys
 *	 GJ_PROBE		 -- kernels->count for the chunk
 *	 GJ_RETRIEVE	 -- kernels->retrieve: the next round of matches
 *	 GJ_EMIT		 -- return one joined tuple per call
 *	 GJ_FILL_OUTER	 -- left/full/anti join: the chunk's outer rows that
 *						matched nothing
 *	 GJ_FILL_INNER	 -- right/full join: the inner rows that matched nothing
 *	 GJ_DONE		 -- nothing left
 *
 * RESCANS
 *
 * What a scan may leave for the next one is decided in one place,
 * ReScanGpuJoin (its comment states the rule): the inner side's batch, its
 * partitions and the device's table stay only while neither the inner
 * child's parameters nor those the inner keys read have changed.
 *
 * The kernels may change from "cuda" to "cpu" between device calls (see
 * SwitchToCpu): the keys are kept in host memory and both implementations
 * number the matches of a chunk the same way, so the join continues where it
 * stood, with no row lost or repeated.
 *
 * IDENTIFICATION
 *	  src/exec.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "exec.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/rel.h"

static Node *CreateGpuJoinState(CustomScan *cscan);
static void BeginGpuJoin(CustomScanState *css, EState *estate, int eflags);
static TupleTableSlot *ExecGpuJoin(CustomScanState *css);
static void EndGpuJoin(CustomScanState *css);
static void ReScanGpuJoin(CustomScanState *css);

CustomScanMethods gpujoin_hash_scan_methods = {
	.CustomName = "GpuHashJoin",
	.CreateCustomScanState = CreateGpuJoinState,
};

CustomScanMethods gpujoin_merge_scan_methods = {
	.CustomName = "GpuMergeJoin",
	.CreateCustomScanState = CreateGpuJoinState,
};

CustomScanMethods gpujoin_theta_scan_methods = {
	.CustomName = "GpuThetaJoin",
	.CreateCustomScanState = CreateGpuJoinState,
};

/* a GpuHashJoin in aggregation mode (exec_agg.c) */
CustomScanMethods gpujoin_preagg_scan_methods = {
	.CustomName = "GpuPreAgg",
	.CreateCustomScanState = CreateGpuJoinState,
};

static const CustomExecMethods gpujoin_hash_exec_methods = {
	.CustomName = "GpuHashJoin",
	.BeginCustomScan = BeginGpuJoin,
	.ExecCustomScan = ExecGpuJoin,
	.EndCustomScan = EndGpuJoin,
	.ReScanCustomScan = ReScanGpuJoin,
	.EstimateDSMCustomScan = EstimateGpuJoinDSM,
	.InitializeDSMCustomScan = InitializeGpuJoinDSM,
	.ReInitializeDSMCustomScan = ReInitializeGpuJoinDSM,
	.InitializeWorkerCustomScan = InitializeGpuJoinWorker,
	.ShutdownCustomScan = ShutdownGpuJoin,
	.ExplainCustomScan = ExplainGpuJoin,
};

static const CustomExecMethods gpujoin_theta_exec_methods = {
	.CustomName = "GpuThetaJoin",
	.BeginCustomScan = BeginGpuJoin,
	.ExecCustomScan = ExecGpuJoin,
	.EndCustomScan = EndGpuJoin,
	.ReScanCustomScan = ReScanGpuJoin,
	.EstimateDSMCustomScan = EstimateGpuJoinDSM,
	.InitializeDSMCustomScan = InitializeGpuJoinDSM,
	.ReInitializeDSMCustomScan = ReInitializeGpuJoinDSM,
	.InitializeWorkerCustomScan = InitializeGpuJoinWorker,
	.ShutdownCustomScan = ShutdownGpuJoin,
	.ExplainCustomScan = ExplainGpuJoin,
};

static const CustomExecMethods gpujoin_merge_exec_methods = {
	.CustomName = "GpuMergeJoin",
	.BeginCustomScan = BeginGpuJoin,
	.ExecCustomScan = ExecGpuJoin,
	.EndCustomScan = EndGpuJoin,
	.ReScanCustomScan = ReScanGpuJoin,
	.EstimateDSMCustomScan = EstimateGpuJoinDSM,
	.InitializeDSMCustomScan = InitializeGpuJoinDSM,
	.ReInitializeDSMCustomScan = ReInitializeGpuJoinDSM,
	.InitializeWorkerCustomScan = InitializeGpuJoinWorker,
	.ShutdownCustomScan = ShutdownGpuJoin,
	.ExplainCustomScan = ExplainGpuJoin,
};

/*
 * A variant's name as EXPLAIN shows it, after Wu et al. 2025: the algorithm,
 * then TR (GFTR) or UR (GFUR), e.g. "PHJ-TR"; theta joins gather by row id
 * (a BAND join can be told to transform, "BAND-TR"), so they go by the
 * algorithm alone
 */
const char *
GpuJoinVariantName(GjVariant variant, GjMaterialize materialize)
{
	static const char *const names[GJ_NUM_VARIANTS][2] = {
		[GJ_VARIANT_NPHJ] = {[GJ_MATERIALIZE_GFUR] = "NPHJ-UR", [GJ_MATERIALIZE_GFTR] = "NPHJ-TR"},
		[GJ_VARIANT_PHJ] = {[GJ_MATERIALIZE_GFUR] = "PHJ-UR", [GJ_MATERIALIZE_GFTR] = "PHJ-TR"},
		[GJ_VARIANT_SMJ] = {[GJ_MATERIALIZE_GFUR] = "SMJ-UR", [GJ_MATERIALIZE_GFTR] = "SMJ-TR"},
		[GJ_VARIANT_BAND] = {[GJ_MATERIALIZE_GFUR] = "BAND", [GJ_MATERIALIZE_GFTR] = "BAND-TR"},
		[GJ_VARIANT_NLJ] = {[GJ_MATERIALIZE_GFUR] = "NLJ", [GJ_MATERIALIZE_GFTR] = "NLJ"},
		[GJ_VARIANT_SCAN] = {[GJ_MATERIALIZE_GFUR] = "SCAN", [GJ_MATERIALIZE_GFTR] = "SCAN"},
	};

	if ((int) variant < 0 || variant >= GJ_NUM_VARIANTS ||
		(materialize != GJ_MATERIALIZE_GFUR && materialize != GJ_MATERIALIZE_GFTR))
		elog(ERROR, "gpujoin: unrecognized variant %d-%d", (int) variant, (int) materialize);
	return names[variant][materialize];
}

/*
 * A group-by variant's name as EXPLAIN shows it ("Device Aggregation"), and
 * the variant of a name (the plan keeps the name); -1 for none
 */
static const char *const groupby_variant_names[] = {
	[GJ_AGG_HASH] = "hash",
	[GJ_AGG_SHARED] = "hash, shared memory",
	[GJ_AGG_SORT] = "sort",
	[GJ_AGG_SORT_TR] = "sort, values sorted along",
};

const char *
GpuJoinGroupByVariantName(int variant)
{
	if (variant < 0 || variant >= (int) lengthof(groupby_variant_names))
		elog(ERROR, "gpujoin: unrecognized group-by variant %d", variant);
	return groupby_variant_names[variant];
}

int
GpuJoinGroupByVariantOf(const char *name)
{
	for (int v = 0; v < (int) lengthof(groupby_variant_names); v++)
		if (strcmp(name, groupby_variant_names[v]) == 0)
			return v;
	return -1;
}

/*
 * CreateCustomScanState callback
 */
static Node *
CreateGpuJoinState(CustomScan *cscan)
{
	GpuJoinState *node = (GpuJoinState *) newNode(sizeof(GpuJoinState),
												  T_CustomScanState);

	node->css.methods = (cscan->methods == &gpujoin_merge_scan_methods) ? &gpujoin_merge_exec_methods :
		(cscan->methods == &gpujoin_theta_scan_methods) ? &gpujoin_theta_exec_methods :
		&gpujoin_hash_exec_methods;
	return (Node *) node;
}

/* Add the ids of the executor parameters (PARAM_EXEC) an expression reads */
static bool
ExecParamsWalker(Node *node, Bitmapset **paramids)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXEC)
		*paramids = bms_add_member(*paramids, ((Param *) node)->paramid);
	return expression_tree_walker(node, ExecParamsWalker, (void *) paramids);
}

/* The kernels the node's device calls go to: its context's, or the choice now */
const GjKernels *
GpuJoinNodeKernels(GpuJoinState *node)
{
	return node->gj_Device.kernels ? node->gj_Device.kernels : GpuJoinChooseKernels();
}

static void BuildTable(GpuJoinState *node);
static void CountChunk(GpuJoinState *node);

/*
 * Continue on the CPU twin after the device ran out of memory
 *
 * The keys are still in host memory, so the CPU twin rebuilds the table and
 * recounts the current chunk; its matches are numbered like the GPU's, so
 * the caller repeats its call and carries on where it stood.  A partitioned
 * join does so for the current partition only (GpuJoinNextPartition goes back to
 * the GPU for the next one): one key can make one partition larger than
 * the device, and the others should not pay for it.  One NOTICE per join.
 */
void
GpuJoinSwitchToCpu(GpuJoinState *node, const GjError *cause)
{
	if (node->gj_CpuParts == 0)
		ereport(NOTICE,
				(node->gj_NumParts > 1 ?
				 errmsg("gpujoin: partition %d of %d of the GPU join ran out of device memory and is joined on the CPU",
						node->gj_Part + 1, node->gj_NumParts) :
				 errmsg("gpujoin: the GPU join ran out of device memory and continues on the CPU"),
				 errdetail("%s", cause->message),
				 errhint("Raise gpujoin.device_memory_limit or lower gpujoin.chunk_rows to keep such joins on the GPU.")));

	/* the CPU twin reports no device memory errors but injected ones */
	node->gj_FellBackFrom = GpuJoinIsCpuTwin(node->gj_Device.kernels) ?
		"the CPU twin, gpujoin.inject_fault" : "the GPU";
	GpuJoinCloseDevice(node);	/* a GpuPreAgg's groups kept */
	node->gj_Spec.fault_device = 0; /* an injected device failure is done */
	GpuJoinDeviceOpen(&node->gj_Device, &gj_cpu_kernels, &node->gj_Spec);
	node->gj_OnFallback = true;
	node->gj_CpuParts++;
	GpuJoinReadBorrowedInner(node); /* probed a parallel join's shared build */
	node->gj_TableBuilt = false;
	BuildTable(node);
	if (node->gj_ChunkCounted)
	{
		/* the same matches, numbered alike: go on from the next one */
		int64		next = node->gj_NextMatch;

		node->gj_Matches -= node->gj_ChunkMatches;
		node->gj_ChunkCounted = false;
		CountChunk(node);
		node->gj_NextMatch = next;
	}
}

/*
 * Out of device memory: the one failure we recover from, once, on the CPU
 * twin (where only gpujoin.inject_fault reports it, so that tests run this
 * path without a GPU)
 */
#define GJ_CAN_FALL_BACK(node, status) \
	((status) == GJ_ERROR_DEVICE_MEMORY && !(node)->gj_OnFallback)

/*
 * GJ_BUILD: build the table on the inner keys
 */
static void
BuildTable(GpuJoinState *node)
{
	GpuJoinDeviceContext *dev = &node->gj_Device;
	GjColumn	columns[GJ_MAX_COLUMNS];
	GjBatch		inner;
	GjError		err;
	GjStatus	status;

	if (dev->ctx == NULL)
	{
		GpuJoinDeviceOpen(dev, GpuJoinChooseKernels(), &node->gj_Spec);
		node->gj_OnFallback = false;
	}

	memset(&err, 0, sizeof(err));
	/* a parallel join's inner side read in shares: built where they lie */
	if (!node->gj_InnerInParts || !GpuJoinBuildShares(node, &status, &err))
	{
		GpuJoinWholeInner(node);
		inner = GpuJoinSideBatch(&node->gj_Inner, columns, node->gj_InnerFirst,
								 node->gj_InnerCount);
		status = dev->kernels->build(dev->ctx, &inner, &err);
	}
	status = GpuJoinInjectFault(GPUJOIN_FAULT_BUILD, node->gj_OnFallback, status, &err, false);
	if (GJ_CAN_FALL_BACK(node, status))
	{
		GpuJoinSwitchToCpu(node, &err);	/* builds on the CPU */
		return;
	}
	GpuJoinCheckStatus(status, &err, "could not build the inner side of a GPU join");
	node->gj_TableBuilt = true;
}

/*
 * GJ_PROBE: count the matches of the current outer chunk
 */
static void
CountChunk(GpuJoinState *node)
{
	GjColumn	columns[GJ_MAX_COLUMNS];
	GjBatch		outer = GpuJoinSideBatch(&node->gj_Outer, columns, 0, node->gj_Outer.nrows);

	for (;;)
	{
		GpuJoinDeviceContext *dev = &node->gj_Device;
		GjError		err;
		GjStatus	status;

		memset(&err, 0, sizeof(err));
		status = dev->kernels->count(dev->ctx, &outer, &node->gj_ChunkMatches, &err);
		status = GpuJoinInjectFault(node->gj_Borrowed ? GPUJOIN_FAULT_SHARED_COUNT : GPUJOIN_FAULT_COUNT,
									node->gj_OnFallback, status, &err, false);
		if (GJ_CAN_FALL_BACK(node, status))
		{
			GpuJoinSwitchToCpu(node, &err);
			continue;
		}
		GpuJoinCheckStatus(status, &err, "could not match an outer chunk of a GPU join");
		break;
	}
	node->gj_ChunkCounted = true;
	node->gj_NextMatch = 0;
	node->gj_Matches += node->gj_ChunkMatches;
}

/*
 * GJ_RETRIEVE: fetch the next round of matches; false when the chunk has no
 * more
 */
static bool
RetrieveRound(GpuJoinState *node)
{
	if (node->gj_NextMatch >= node->gj_ChunkMatches)
		return false;

	for (;;)
	{
		GpuJoinDeviceContext *dev = &node->gj_Device;
		GjError		err;
		GjStatus	status;

		memset(&err, 0, sizeof(err));
		status = dev->kernels->retrieve(dev->ctx, node->gj_NextMatch,
										&node->gj_Round, &err);
		status = GpuJoinInjectFault(GPUJOIN_FAULT_RETRIEVE, node->gj_OnFallback, status, &err,
									node->gj_NextMatch > 0);
		if (GJ_CAN_FALL_BACK(node, status))
		{
			GpuJoinSwitchToCpu(node, &err);	/* recounts the chunk */
			continue;
		}
		GpuJoinCheckStatus(status, &err, "could not fetch the matches of a GPU join");
		break;
	}
	if (node->gj_Round.nmatches <= 0 ||
		node->gj_Round.nmatches > node->gj_ChunkMatches - node->gj_NextMatch)
		elog(ERROR, "gpujoin: the kernels returned " INT64_FORMAT " matches where " INT64_FORMAT " were left",
			 node->gj_Round.nmatches, node->gj_ChunkMatches - node->gj_NextMatch);
	node->gj_NextMatch += node->gj_Round.nmatches;
	node->gj_RoundPos = 0;
	return true;
}

/*
 * The range table index of a side read as heap pages (heap: the plan says
 * it is one), or 0: that of the relation whose columns make the side's
 * part of the scan tuple, which setrefs.c has brought into the final range
 * table (a subquery's relations move)
 */
static Index
HeapSideRti(List *tlist, bool heap, Bitmapset *relids)
{
	Index		rti = 0;
	ListCell   *lc;

	if (!heap)
		return 0;
	foreach(lc, tlist)
	{
		Var		   *var = castNode(Var, lfirst_node(TargetEntry, lc)->expr);

		if (rti != 0 && var->varno != rti)
			elog(ERROR, "gpujoin: a heap side's columns come from two relations");
		rti = var->varno;
	}
	/* a SCAN needs no column for a count(*): the node's one relation */
	if (rti == 0 && bms_membership(relids) == BMS_SINGLETON)
		rti = bms_singleton_member(relids);
	if (rti == 0)
		elog(ERROR, "gpujoin: a heap side without columns");
	return rti;
}

/*
 * BeginCustomScan callback
 */
static void
BeginGpuJoin(CustomScanState *css, EState *estate, int eflags)
{
	GpuJoinState *node = (GpuJoinState *) css;
	CustomScan *cscan = (CustomScan *) css->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	List	   *key_clauses = list_nth(cscan->custom_exprs, GpuJoinExprsKeyClauses);
	List	   *join_quals = list_nth(cscan->custom_exprs, GpuJoinExprsJoinQuals);
	List	   *outer_is_left = list_nth(priv, GpuJoinPrivateOuterIsLeft);
	List	   *key_bits = list_nth(priv, GpuJoinPrivateKeyBits);
	List	   *codings = list_nth(priv, GpuJoinPrivateKeyCodings);
	int			num_outer_cols = intVal(list_nth(priv, GpuJoinPrivateNumOuterCols));
	/* GpuPreAgg: its groups, variant and join columns, last in the list */
	bool		preagg = (cscan->methods == &gpujoin_preagg_scan_methods);
	List	   *agg_private = preagg ? llast(priv) : NIL;
	int			num_join_cols = preagg ? intVal(lthird(agg_private)) :
		list_length(cscan->custom_scan_tlist);
	List	   *outer_args = NIL;
	List	   *inner_args = NIL;
	Bitmapset  *needed = NULL;
	List	   *join_tlist = list_copy_head(cscan->custom_scan_tlist, num_join_cols);
	List	   *outer_tlist = list_copy_head(join_tlist, num_outer_cols);
	List	   *inner_tlist = list_copy_tail(join_tlist, num_outer_cols);
	/* a SCAN (no join, GpuJoinScanPath) has no inner side, no key */
	bool		no_inner = (GjVariant) intVal(list_nth(priv, GpuJoinPrivateVariant)) == GJ_VARIANT_SCAN;
	Index		outer_heap = HeapSideRti(outer_tlist, intVal(list_nth(priv, GpuJoinPrivateOuterHeap)),
										 cscan->custom_relids);
	Index		inner_heap = HeapSideRti(inner_tlist, intVal(list_nth(priv, GpuJoinPrivateInnerHeap)),
										 cscan->custom_relids);
	PlanState  *outer_ps = NULL;
	PlanState  *inner_ps = NULL;
	TupleTableSlot *scanslot = css->ss.ss_ScanTupleSlot;
	ListCell   *lc1;
	ListCell   *lc2;
	int			k;

	/*
	 * The children: no backward scan, no mark/restore (the path does not
	 * offer them).  A side read as heap pages has none (exec_heap.c): the
	 * plan holds only the others, outer first.
	 */
	eflags &= ~(EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK);
	lc1 = list_head(cscan->custom_plans);
	if (outer_heap == 0)
	{
		outer_ps = ExecInitNode(lfirst(lc1), estate, eflags);
		css->custom_ps = lappend(css->custom_ps, outer_ps);
		lc1 = lnext(cscan->custom_plans, lc1);
	}
	if (inner_heap == 0 && !no_inner)
	{
		inner_ps = ExecInitNode(lfirst(lc1), estate, eflags);
		css->custom_ps = lappend(css->custom_ps, inner_ps);
	}

	/* the join keys, split by side */
	forboth(lc1, key_clauses, lc2, outer_is_left)
	{
		OpExpr	   *op = lfirst_node(OpExpr, lc1);

		outer_args = lappend(outer_args, lfirst_int(lc2) ? linitial(op->args) : lsecond(op->args));
		inner_args = lappend(inner_args, lfirst_int(lc2) ? lsecond(op->args) : linitial(op->args));
	}
	node->gj_NoInner = no_inner;
	node->gj_NumKeys = list_length(key_clauses);
	if (node->gj_NumKeys < (no_inner ? 0 : 1) || node->gj_NumKeys > (no_inner ? 0 : 64))
		elog(ERROR, "gpujoin: a join needs 1 to 64 key clauses, not %d", node->gj_NumKeys);
	node->gj_KeyBits = palloc(sizeof(int) * node->gj_NumKeys);
	k = 0;
	foreach(lc1, key_bits)
		node->gj_KeyBits[k++] = lfirst_int(lc1);
	node->gj_KeyExact = boolVal(list_nth(priv, GpuJoinPrivateKeyExact));

	/* the scan tuple columns that anything above the join reads */
	pull_varattnos((Node *) cscan->scan.plan.targetlist, INDEX_VAR, &needed);
	pull_varattnos((Node *) cscan->scan.plan.qual, INDEX_VAR, &needed);
	pull_varattnos((Node *) join_quals, INDEX_VAR, &needed);
	if (preagg)
		GpuJoinAggNeeded(cscan, join_tlist, &needed);

	/* a merge join sorts the outer side whole: one chunk */
	node->gj_Strategy = (GpuJoinStrategy) intVal(list_nth(priv, GpuJoinPrivateStrategy));
	GpuJoinInitSide(node, &node->gj_Outer, outer_ps, outer_tlist, outer_heap != 0, 0,
					needed, outer_args, key_clauses, codings, OUTER_VAR,
					node->gj_Strategy == GPUJOIN_STRATEGY_MERGE ? GJ_MAX_ROWS : gpujoin_chunk_rows,
					preagg || (outer_heap != 0 &&
							   GpuJoinHeapNumericsOnDevice(outer_tlist, 0, needed)),
					preagg);
	GpuJoinInitSide(node, &node->gj_Inner, inner_ps, inner_tlist, inner_heap != 0,
					num_outer_cols, needed, inner_args, key_clauses, codings, INNER_VAR,
					GJ_MAX_ROWS,
					preagg || (inner_heap != 0 &&
							   GpuJoinHeapNumericsOnDevice(inner_tlist, num_outer_cols, needed)),
					preagg);
	node->gj_OuterPlanRows = outer_ps ? outer_ps->plan->plan_rows :
		floatVal(list_nth(priv, GpuJoinPrivateOuterRows));
	if (outer_heap != 0)
	{
		GpuJoinHeapBegin(node, &node->gj_Outer, outer_heap,
						 list_nth(priv, GpuJoinPrivateOuterQuals), estate, eflags);
		/*
		 * Its host columns fetched by tid for each match, where the planner
		 * chose so and nothing else needs each row's tuple on the host (keys
		 * encoded there, a GpuPreAgg's scaled numerics)
		 */
		node->gj_Outer.host_by_tid = intVal(list_nth(priv, GpuJoinPrivateOuterHeap)) == 2 &&
			node->gj_Outer.nhost > 0 && node->gj_Outer.nscaled == 0 &&
			!node->gj_Outer.heap->host_keys;
	}
	if (inner_heap != 0)
	{
		GpuJoinHeapBegin(node, &node->gj_Inner, inner_heap,
						 list_nth(priv, GpuJoinPrivateInnerQuals), estate, eflags);
		/*
		 * Where the planner priced a parallel join's shared build so, its
		 * host columns fetched by tid for each match (exec_parallel.c), if
		 * nothing else needs each row's tuple on the host
		 */
		node->gj_InnerByTid = intVal(list_nth(priv, GpuJoinPrivateInnerHeap)) == 2 &&
			node->gj_Inner.nhost > 0 && node->gj_Inner.nscaled == 0 &&
			node->gj_Inner.ndict == 0 && !node->gj_Inner.heap->host_keys;
	}
	node->gj_InnerParams = NULL;
	(void) ExecParamsWalker((Node *) inner_args, &node->gj_InnerParams);

	/* theta joins: the comparisons, and the keys they need on each side */
	node->gj_ThetaOps = palloc(sizeof(GjThetaOp) * node->gj_NumKeys);
	k = 0;
	foreach(lc1, (List *) list_nth(priv, GpuJoinPrivateThetaOps))
		node->gj_ThetaOps[k++] = (GjThetaOp) lfirst_int(lc1);
	if (node->gj_Strategy == GPUJOIN_STRATEGY_THETA)
	{
		if (k != node->gj_NumKeys)
			elog(ERROR, "gpujoin: a theta join has %d comparisons for %d clauses",
				 k, node->gj_NumKeys);
		if ((GjVariant) intVal(list_nth(priv, GpuJoinPrivateVariant)) == GJ_VARIANT_NLJ)
		{
			if (node->gj_NumKeys > GJ_MAX_TERMS)
				elog(ERROR, "gpujoin: a nested-loop join takes at most %d comparisons",
					 GJ_MAX_TERMS);
			node->gj_Outer.nterms = node->gj_Inner.nterms = node->gj_NumKeys;
		}
		else
			node->gj_Outer.wants_keys_hi = true;
	}

	/* what every device context of this node is created for */
	memset(&node->gj_Spec, 0, sizeof(node->gj_Spec));
	node->gj_Spec.variant = (GjVariant) intVal(list_nth(priv, GpuJoinPrivateVariant));
	node->gj_Spec.materialize = (GjMaterialize) intVal(list_nth(priv, GpuJoinPrivateMaterialize));
	GpuJoinSpecColumns(&node->gj_Outer, &node->gj_Spec.outer_ncolumns, node->gj_Spec.outer_widths);
	GpuJoinSpecColumns(&node->gj_Inner, &node->gj_Spec.inner_ncolumns, node->gj_Spec.inner_widths);
	node->gj_JoinType = (JoinType) intVal(list_nth(priv, GpuJoinPrivateJoinType));
	/* matched flags need to know which rows each match joins */
	node->gj_Spec.row_ids = (node->gj_Outer.nhost > 0 || node->gj_Inner.nhost > 0 ||
							 node->gj_JoinType != JOIN_INNER);
	node->gj_Spec.nterms = node->gj_Outer.nterms;
	for (int t = 0; t < node->gj_Spec.nterms; t++)
		node->gj_Spec.ops[t] = node->gj_ThetaOps[t];
	/* several devices: a merge join's matches must stay in key order */
	GpuJoinSpreadSpec(&node->gj_Spec, node->gj_Strategy == GPUJOIN_STRATEGY_MERGE,
					  floatVal(list_nth(priv, GpuJoinPrivateInnerRows)),
					  node->gj_OuterPlanRows, cscan->scan.plan.plan_rows,
					  &node->gj_SpreadConsidered);
	/* unmatched outer rows in their place, where the matches' order allows
	 * (spread by key over devices, it does not) */
	node->gj_FillInOrder = GJ_FILL_OUTER_NEEDED(node) &&
		(node->gj_Spec.ndevices < 2 || node->gj_Spec.spread == GJ_SPREAD_BROADCAST) &&
		(node->gj_Strategy == GPUJOIN_STRATEGY_MERGE ||
		 node->gj_Spec.variant == GJ_VARIANT_NPHJ ||
		 node->gj_Spec.variant == GJ_VARIANT_BAND ||
		 node->gj_Spec.variant == GJ_VARIANT_NLJ);
	node->gj_Spec.max_matches = Max((int64) gpujoin_chunk_rows, GJ_MIN_ROUND_MATCHES);
	node->gj_RoundMatches = node->gj_Spec.max_matches;

	node->gj_JoinQual = ExecInitQual(join_quals, &css->ss.ps);
	node->gj_Agg = NULL;
	if (preagg)
		GpuJoinAggInit(node, cscan, join_tlist, agg_private);

	/* columns nobody reads stay NULL in the scan tuple */
	for (int i = 0; i < scanslot->tts_tupleDescriptor->natts; i++)
	{
		scanslot->tts_values[i] = (Datum) 0;
		scanslot->tts_isnull[i] = true;
	}

	/* partitioned hash joins (GpuJoinPlanPartitions) */
	node->gj_ChunkRows = node->gj_Outer.max_rows;
	node->gj_NumParts = 1;
	node->gj_PartCxt = AllocSetContextCreate(CurrentMemoryContext,
											 "GpuJoin partitions",
											 ALLOCSET_DEFAULT_SIZES);
	if (node->gj_Strategy == GPUJOIN_STRATEGY_HASH)
		node->gj_PartSlot = ExecInitExtraTupleSlot(estate, outer_ps ? ExecGetResultType(outer_ps) :
												   RelationGetDescr(node->gj_Outer.heap->rel),
												   &TTSOpsMinimalTuple);

	node->gj_JoinState = GJ_LOAD_INNER;

	/* the device context is created on first use, and cleaned up by this */
	GpuJoinDeviceInit(&node->gj_Device, CurrentMemoryContext);

	/* GPU joins under this one that it can run as one chain (exec_chain.c) */
	node->gj_Chain = NULL;
	node->gj_ChainedInto = NULL;
	node->gj_ChainBelow = boolVal(list_nth(priv, GpuJoinPrivateChainBelow));
	GpuJoinChainInit(node);
}

/*
 * ExecCustomScan callback: return the next joined tuple, or NULL when the
 * join is done
 */
static TupleTableSlot *
ExecGpuJoin(CustomScanState *css)
{
	GpuJoinState *node = (GpuJoinState *) css;
	instr_time	start;

	if (node->gj_JoinState == GJ_LOAD_INNER)
		node->gj_Timing = (css->ss.ps.instrument != NULL &&
						   css->ss.ps.instrument->need_timer);
	if (!node->gj_Ran)
	{
		node->gj_Ran = true;
		node->gj_Runs++;
		/* a parallel right or full join: counted in before any outer row */
		GpuJoinFillAttach(node);
	}
	if (node->gj_Chain != NULL)
	{
		bool		handled;
		TupleTableSlot *slot = GpuJoinChainExec(node, &handled);

		if (handled)
			return slot;		/* else its levels run as stacked nodes */
	}

	for (;;)
	{
		/* Device calls are per chunk or round, so this is reached between them */
		CHECK_FOR_INTERRUPTS();

		switch (node->gj_JoinState)
		{
			case GJ_LOAD_INNER:
				if (node->gj_Timing)
					INSTR_TIME_SET_CURRENT(start);
				node->gj_InnerReady = false;
				if (node->gj_Shared != NULL && GpuJoinShareBuild(node))
				{
					/* another participant's build: the outer side at once */
					if (node->gj_Timing)
						node->gj_LoadMs += GpuJoinElapsedMs(start);
					node->gj_JoinState = GJ_LOAD_OUTER;
					continue;
				}
				/* (a parallel join's inner side read in shares: loaded) */
				if (!node->gj_InnerReady)
					GpuJoinLoadInner(node);
				GpuJoinFillLoaded(node);
				if (node->gj_Timing)
					node->gj_LoadMs += GpuJoinElapsedMs(start);
				if (node->gj_Inner.nrows == 0 && !GJ_FILL_OUTER_NEEDED(node) &&
					!node->gj_NoInner)
				{
					/* no outer row can match, and none comes out unmatched */
					GpuJoinPublishBuild(node, false);
					node->gj_JoinState = GJ_DONE;
					continue;
				}
				GpuJoinPlanPartitions(node);
				if (node->gj_NumParts > 1)
					GpuJoinPublishBuild(node, false);
				node->gj_JoinState = (node->gj_NumParts > 1) ? GJ_PARTITION_OUTER : GJ_BUILD;
				continue;

			case GJ_PARTITION_OUTER:
				if (node->gj_Timing)
					INSTR_TIME_SET_CURRENT(start);
				GpuJoinEndOuterParts(node);
				GpuJoinPartitionOuter(node);
				if (node->gj_Timing)
					node->gj_LoadMs += GpuJoinElapsedMs(start);
				node->gj_Part = -1;
				if (!GpuJoinNextPartition(node))
				{
					node->gj_FillPos = 0;
					node->gj_JoinState = GJ_FILL_INNER_NEEDED(node) ? GJ_FILL_INNER : GJ_DONE;
					continue;
				}
				node->gj_JoinState = GJ_BUILD;
				/* FALL THRU */

			case GJ_BUILD:
				node->gj_TableBuilt = false;
				BuildTable(node);
				GpuJoinPublishBuild(node, true);
				node->gj_JoinState = GJ_LOAD_OUTER;
				/* FALL THRU */

			case GJ_LOAD_OUTER:
				{
					bool		loaded;

					if (node->gj_Timing)
						INSTR_TIME_SET_CURRENT(start);
					node->gj_ChunkCounted = false;
					loaded = GpuJoinLoadOuterChunk(node);
					if (node->gj_Timing)
						node->gj_LoadMs += GpuJoinElapsedMs(start);
					if (!loaded && node->gj_NumParts > 1 && GpuJoinNextPartition(node))
					{
						node->gj_JoinState = GJ_BUILD;
						continue;
					}
					if (!loaded)
					{
						node->gj_FillPos = 0;
						node->gj_JoinState = GJ_FILL_INNER_NEEDED(node) ? GJ_FILL_INNER : GJ_DONE;
						continue;
					}
					if (node->gj_Strategy == GPUJOIN_STRATEGY_MERGE && GJ_FILL_OUTER_NEEDED(node))
						GpuJoinSortOuterRows(node);
				}
				node->gj_JoinState = GJ_PROBE;
				/* FALL THRU */

			case GJ_PROBE:
				CountChunk(node);
				node->gj_JoinState = GJ_RETRIEVE;
				/* FALL THRU */

			case GJ_RETRIEVE:
				if (node->gj_Agg)
				{
					/* GpuPreAgg: every round of the chunk into the groups */
					GpuJoinAggregateChunk(node);
					node->gj_JoinState = GJ_LOAD_OUTER;
					continue;
				}
				if (!RetrieveRound(node))
				{
					node->gj_FillPos = 0;
					node->gj_JoinState = GJ_FILL_OUTER_NEEDED(node) ? GJ_FILL_OUTER : GJ_LOAD_OUTER;
					continue;
				}
				node->gj_JoinState = GJ_EMIT;
				/* FALL THRU */

			case GJ_EMIT:
				{
					TupleTableSlot *slot;

					if (node->gj_Timing)
						INSTR_TIME_SET_CURRENT(start);
					slot = GpuJoinEmitNextMatch(node);
					if (node->gj_Timing)
						node->gj_EmitMs += GpuJoinElapsedMs(start);
					if (slot != NULL)
						return slot;
					node->gj_JoinState = GJ_RETRIEVE;
					break;
				}

			case GJ_FILL_OUTER:
				{
					TupleTableSlot *slot = GpuJoinEmitNextUnmatched(node, true, -1);

					if (slot != NULL)
						return slot;
					node->gj_JoinState = GJ_LOAD_OUTER;
					break;
				}

			case GJ_FILL_INNER:
				{
					TupleTableSlot *slot;

					/* in parallel, the last participant to get here emits them */
					if (node->gj_FillAttached && !GpuJoinFillDetach(node))
					{
						node->gj_JoinState = GJ_DONE;
						continue;
					}
					slot = GpuJoinEmitNextUnmatched(node, false, -1);

					if (slot != NULL)
						return slot;
					node->gj_JoinState = GJ_DONE;
					break;
				}

			case GJ_DONE:
				/* no inner row to emit (none read): counted out all the same */
				if (node->gj_FillAttached)
					(void) GpuJoinFillDetach(node);
				if (node->gj_Agg)
					return GpuJoinAggEmitTimed(node);
				return NULL;

			default:
				elog(ERROR, "unrecognized gpujoin state: %d", node->gj_JoinState);
		}
	}
}

/*
 * The GPU joins this process has ended, and their device work (ms:
 * transfers, build, probe, materialize), whether or not EXPLAIN timed
 * them: gpujoin_calibrate() takes a query's device work from the run it
 * times, as the device work of another run can differ by more than the
 * host's part it is after (the CPU twin's first touch of its buffers)
 */
static int64 gpujoin_joins_ended = 0;
static double gpujoin_ended_device_ms = 0.0;

void
GpuJoinEndedWork(int64 *joins, double *device_ms)
{
	*joins = gpujoin_joins_ended;
	*device_ms = gpujoin_ended_device_ms;
}

/*
 * EndCustomScan callback
 */
static void
EndGpuJoin(CustomScanState *css)
{
	GpuJoinState *node = (GpuJoinState *) css;
	GjStats		stats;

	GpuJoinDeviceClose(&node->gj_Device);
	GpuJoinDeviceStats(&node->gj_Device, &stats);	/* the closed contexts' */
	gpujoin_joins_ended++;
	gpujoin_ended_device_ms += stats.transfer_ms + stats.build_ms + stats.probe_ms +
		stats.materialize_ms;
	GpuJoinEndOuterParts(node);
	if (node->gj_Outer.heap)
		GpuJoinHeapEnd(node->gj_Outer.heap);
	else
		ExecEndNode(node->gj_Outer.ps);
	if (node->gj_Inner.heap)
		GpuJoinHeapEnd(node->gj_Inner.heap);
	else
		ExecEndNode(node->gj_Inner.ps);
	MemoryContextDelete(node->gj_PartCxt);
	MemoryContextDelete(node->gj_Outer.cxt);
	MemoryContextDelete(node->gj_Inner.cxt);
}

/*
 * ReScanCustomScan callback
 *
 * What a scan leaves for the next one, and what each piece depends on:
 *
 *	- the inner batch, its partitions and the device's table on it depend
 *	  on the inner child's rows and on the inner key expressions, which
 *	  this node evaluates itself: they are read and built again when the
 *	  inner child has a changed parameter, when one of the parameters the
 *	  inner keys read changed (gj_InnerParams; a lateral reference in the
 *	  key, say, which the inner child knows nothing of), or when the last
 *	  scan built no table on the batch it read (an empty inner side stops
 *	  before the build, a scan stopped early may not have reached it);
 *	  otherwise they stay, as in ExecReScanHashJoin, and the inner rows'
 *	  matched flags (right and full joins) are cleared;
 *	- the outer side (its batch, its partitions' tuplestores, its matched
 *	  flags, the order of a merge join's unmatched rows) and the rounds of
 *	  matches are always started over, as the outer child is rescanned;
 *	- the join quals, the pushed-down quals and the projection are
 *	  evaluated on each row and keep nothing;
 *	- the EXPLAIN ANALYZE counters add up over the scans; what decides
 *	  anything (gj_ScanChunks) counts the current scan alone.
 *
 * A side read as heap pages has no parameters (exec_heap.c takes scans
 * without quals): it is read again from its first page when its batch is.
 * A child whose parameters changed is rescanned by its first ExecProcNode;
 * the others we rescan here.  ExecReScan passes changed parameters down to
 * lefttree and righttree only; our children are in custom_ps, so we pass
 * them on ourselves.  The processes of a parallel join never rescan their
 * node: a rescan of the Gather above runs the plan anew in new workers, and
 * in the leader through here.
 */
static void
ReScanGpuJoin(CustomScanState *css)
{
	GpuJoinState *node = (GpuJoinState *) css;
	PlanState  *outer_ps = node->gj_Outer.ps;
	PlanState  *inner_ps = node->gj_Inner.ps;

	node->gj_Ran = false;
	node->gj_FillAttached = false;	/* the launch's count starts over */
	if (node->gj_Agg)
		GpuJoinAggRescan(node);
	if (css->ss.ps.chgParam != NULL)
	{
		if (outer_ps)
			UpdateChangedParamSet(outer_ps, css->ss.ps.chgParam);
		if (inner_ps)
			UpdateChangedParamSet(inner_ps, css->ss.ps.chgParam);
	}

	if (!node->gj_TableBuilt || (inner_ps && inner_ps->chgParam != NULL) ||
		bms_overlap(css->ss.ps.chgParam, node->gj_InnerParams))
	{
		node->gj_JoinState = GJ_LOAD_INNER;
		if (node->gj_Inner.heap)
			GpuJoinHeapRescan(node->gj_Inner.heap);
		else if (inner_ps != NULL && inner_ps->chgParam == NULL)
			ExecReScan(inner_ps);
	}
	else if (node->gj_NumParts > 1)
	{
		/* the table holds the last partition: partition the outer side again */
		node->gj_JoinState = GJ_PARTITION_OUTER;
	}
	else
		node->gj_JoinState = GJ_LOAD_OUTER;
	GpuJoinEndOuterParts(node);

	GpuJoinResetSide(&node->gj_Outer);
	node->gj_OuterMatched = NULL;
	node->gj_OuterOrder = NULL;
	node->gj_Outer.exhausted = false;
	/* a kept table starts over with no inner row matched */
	if (node->gj_JoinState != GJ_LOAD_INNER && node->gj_InnerMatched != NULL)
		memset(node->gj_InnerMatched, 0, node->gj_Inner.nrows);
	node->gj_ScanChunks = 0;
	node->gj_ChunkCounted = false;
	node->gj_ChunkMatches = 0;
	node->gj_NextMatch = 0;
	node->gj_Round.nmatches = 0;
	node->gj_RoundPos = 0;
	node->gj_FillPos = 0;
	if (node->gj_Outer.heap)
		GpuJoinHeapRescan(node->gj_Outer.heap);
	else if (outer_ps->chgParam == NULL)
		ExecReScan(outer_ps);
	if (node->gj_Chain != NULL)
		GpuJoinChainRescan(node);
}

/*
 * Register the scan methods, so plans can be copied and read back
 */
void
GpuJoinInitExecutor(void)
{
	RegisterCustomScanMethods(&gpujoin_hash_scan_methods);
	RegisterCustomScanMethods(&gpujoin_merge_scan_methods);
	RegisterCustomScanMethods(&gpujoin_theta_scan_methods);
	RegisterCustomScanMethods(&gpujoin_preagg_scan_methods);
}
