/*-------------------------------------------------------------------------
 *
 * exec_partition.c
 *	  Partitioned hash joins: a join larger than the device, a partition at a time
 *
 * A hash join whose inner side would not fit its device budget (device.c,
 * GpuJoinPartitions: gpujoin.device_memory_limit, or the memory free on the
 * GPU) is joined in partitions, as nodeHashjoin.c does in batches: the inner
 * batch is reordered so that each partition's rows are contiguous (by a hash
 * of the packed key, which equal keys share, so partition p's inner rows can
 * only match partition p's outer rows), the outer side is read once into one
 * tuplestore per partition (spilling to temporary files beyond work_mem),
 * and then, partition by partition, the device builds a table on that
 * partition's inner rows and probes it with that partition's outer rows in
 * chunks.  Rows with a NULL key match nothing: inner ones sit after the last
 * partition, outer ones go to partition 0 when they must come out
 * NULL-extended and are dropped otherwise.  The matched flags and the inner
 * rows' numbers stay those of the whole batch.  The CPU twin partitions the
 * same way under gpujoin.device_memory_limit, so the path is tested without
 * a GPU.  GpuMergeJoin (whose output is in key order) and theta joins are
 * not partitioned: they fall back to the CPU twin when the device runs out.
 *
 * IDENTIFICATION
 *	  src/exec_partition.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "executor/executor.h"
#include "exec.h"
#include "miscadmin.h"
#include "utils/memutils.h"

/* Bytes of a side's device columns per row, as the planner counts them */
static int
SideDeviceBytes(const GpuJoinSide *side)
{
	int			bytes = 0;

	for (int c = 0; c < side->ncolumns; c++)
		if (side->columns[c].device >= 0)
			bytes += side->columns[c].typlen;
	return bytes;
}

/*
 * The partition of a packed key: the high bits of the low half of a
 * splitmix64 hash of it.  The kernels place keys by the top bits of
 * MurmurHash3's finalizer (gj_hash64, cuda/gpujoin_kernels.h), so a partition's keys still
 * spread over the whole table.
 */
static inline int
KeyPartition(uint64 key, int nparts)
{
	key = (key ^ (key >> 30)) * UINT64CONST(0xbf58476d1ce4e5b9);
	key = (key ^ (key >> 27)) * UINT64CONST(0x94d049bb133111eb);
	key ^= key >> 31;
	return (int) (((key & 0xFFFFFFFF) * (uint64) nparts) >> 32);
}

/*
 * Reorder the first n rows of one array of a batch (width bytes each) so
 * that row i is the old row perm[i]; the new array keeps the old one's
 * capacity of rows, and its kind of memory (host: a host column's array,
 * memory of cxt; else GpuJoinSideAlloc's)
 */
static void *
PermuteArray(GpuJoinSide *side, bool host, void *array, Size width, const int64 *perm,
			 int64 n, int64 capacity)
{
	char	   *to;
	const char *from = array;

	if (array == NULL)
		return NULL;
	to = host ? MemoryContextAllocExtended(side->cxt, Max(capacity, 1) * width,
										   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO) :
		GpuJoinSideAlloc(side, Max(capacity, 1) * width, true);
	switch (width)
	{
		case 1:
			for (int64 i = 0; i < n; i++)
				to[i] = from[perm[i]];
			break;
		case 8:
			for (int64 i = 0; i < n; i++)
				((uint64 *) to)[i] = ((const uint64 *) from)[perm[i]];
			break;
		default:
			for (int64 i = 0; i < n; i++)
				memcpy(to + i * width, from + perm[i] * width, width);
			break;
	}
	if (host)
		pfree(array);
	else
		GpuJoinSideFree(side, array);
	return to;
}

/*
 * Split the inner batch into nparts partitions by key (KeyPartition): its
 * rows reordered so that each partition's are contiguous, gj_PartStart[p]
 * the first of partition p, and the rows with a NULL key last (a parallel
 * right or full join keeps the permutation in gj_InnerPerm)
 */
static void
PartitionInner(GpuJoinState *node, int nparts)
{
	GpuJoinSide *inner = &node->gj_Inner;
	int64		n = inner->nrows;
	int64	   *start;
	int64	   *next;
	int32	   *part;
	int64	   *perm;
	bool		keep_perm = node->gj_Shared != NULL && GJ_FILL_INNER_NEEDED(node);

	start = MemoryContextAllocZero(inner->cxt, sizeof(int64) * (nparts + 2));
	next = palloc(sizeof(int64) * (nparts + 1));
	part = MemoryContextAllocExtended(CurrentMemoryContext, sizeof(int32) * Max(n, 1),
									  MCXT_ALLOC_HUGE);
	/* kept with the batch where a parallel join's flags need it (GpuJoinFillDetach) */
	perm = MemoryContextAllocExtended(keep_perm ? inner->cxt : CurrentMemoryContext,
									  sizeof(int64) * Max(n, 1), MCXT_ALLOC_HUGE);

	/* a counting sort by partition, NULL keys as partition nparts */
	for (int64 i = 0; i < n; i++)
	{
		part[i] = (inner->keynulls != NULL && inner->keynulls[i]) ? nparts :
			KeyPartition(inner->keys[i], nparts);
		start[part[i] + 1]++;
	}
	for (int p = 0; p < nparts; p++)
		start[p + 1] += start[p];
	memcpy(next, start, sizeof(int64) * (nparts + 1));
	for (int64 i = 0; i < n; i++)
		perm[next[part[i]]++] = i;
	pfree(part);
	pfree(next);

	inner->keys = PermuteArray(inner, false, inner->keys, sizeof(uint64), perm, n, inner->capacity);
	inner->keynulls = PermuteArray(inner, false, inner->keynulls, 1, perm, n, inner->capacity);
	if (inner->host_by_tid)
		inner->tids = PermuteArray(inner, true, inner->tids, sizeof(ItemPointerData), perm, n,
								   inner->capacity);
	for (int c = 0; c < inner->ncolumns; c++)
	{
		const GpuJoinColumn *col = &inner->columns[c];

		if (col->device >= 0)
		{
			inner->device_values[col->device] =
				PermuteArray(inner, false, inner->device_values[col->device], col->typlen,
							 perm, n, inner->capacity);
			inner->device_nulls[col->device] =
				PermuteArray(inner, false, inner->device_nulls[col->device], 1, perm, n,
							 inner->capacity);
		}
		else if (!inner->host_by_tid)
		{
			inner->host_values[col->host] =
				PermuteArray(inner, true, inner->host_values[col->host], sizeof(Datum),
							 perm, n, inner->capacity);
			inner->host_isnull[col->host] =
				PermuteArray(inner, true, inner->host_isnull[col->host], sizeof(bool),
							 perm, n, inner->capacity);
		}
	}
	if (keep_perm)
		node->gj_InnerPerm = perm;
	else
		pfree(perm);
	node->gj_PartStart = start;
}

/*
 * Decide, with the inner side loaded, whether a hash join runs in
 * partitions (GpuJoinPartitions), and if so partition its inner batch; the
 * outer side's chunk and the rounds of matches shrink with the partitions
 */
void
GpuJoinPlanPartitions(GpuJoinState *node)
{
	GpuJoinSide *inner = &node->gj_Inner;
	GpuJoinSide *outer = &node->gj_Outer;
	int64		chunk_rows = node->gj_ChunkRows;
	int			nparts = 1;
	int64		max_matches;

	/* a SCAN has no key to partition by, nor an inner side to hold */
	if (node->gj_Strategy == GPUJOIN_STRATEGY_HASH && !node->gj_NoInner)
	{
		double		budget = GpuJoinExecutorDeviceBudget(GpuJoinNodeKernels(node));

		/* a test aid: workers partition unlike the leader (test/030) */
		if (gpujoin_inject_fault == GPUJOIN_FAULT_WORKER_MEMORY && IsParallelWorker())
			budget /= 4;

		nparts = GpuJoinPartitions((double) inner->nrows, SideDeviceBytes(inner),
								   node->gj_OuterPlanRows, SideDeviceBytes(outer),
								   budget, &chunk_rows);
		/* too many partitions: whole, falling back when the device runs out */
		if (nparts < 1)
		{
			nparts = 1;
			chunk_rows = node->gj_ChunkRows;
		}
	}

	/*
	 * Rounds of matches no larger than gpujoin.chunk_rows, nor than a
	 * lowered chunk (a merge join's "chunk" is its whole outer side); a
	 * context made for other rounds is made again (BuildTable)
	 */
	outer->max_rows = chunk_rows;
	max_matches = Max(Min(chunk_rows, node->gj_RoundMatches), GJ_MIN_ROUND_MATCHES);
	if (max_matches != node->gj_Spec.max_matches)
	{
		node->gj_Spec.max_matches = max_matches;
		GpuJoinCloseDevice(node);
	}

	/*
	 * (a parallel join's shares read again first: that forgets what was
	 * made of the inner batch, the partitions too)
	 */
	if (nparts > 1)
		GpuJoinWholeInner(node);
	node->gj_NumParts = nparts;
	node->gj_Part = -1;
	if (nparts > 1)
		PartitionInner(node, nparts);
}

/*
 * Partitioned: read the whole outer side into one tuplestore per partition
 */
void
GpuJoinPartitionOuter(GpuJoinState *node)
{
	GpuJoinSide *outer = &node->gj_Outer;
	int			nparts = node->gj_NumParts;
	bool		keep_nulls = GJ_FILL_OUTER_NEEDED(node);
	MemoryContext oldcxt;

	/* its rows come from the tuplestores: host columns by value, not by tid */
	outer->host_by_tid = false;
	oldcxt = MemoryContextSwitchTo(node->gj_PartCxt);
	node->gj_OuterParts = palloc0(sizeof(Tuplestorestate *) * nparts);
	for (int p = 0; p < nparts; p++)
		node->gj_OuterParts[p] = tuplestore_begin_heap(false, false, Max(work_mem / nparts, 64));
	MemoryContextSwitchTo(oldcxt);

	for (;;)
	{
		TupleTableSlot *slot = outer->heap ? GpuJoinHeapNextTuple(outer->heap) :
			ExecProcNode(outer->ps);
		uint64		key;
		int			p;

		if (TupIsNull(slot))
			break;
		slot_getsomeattrs(slot, outer->maxattno);
		if (GpuJoinRowKey(node, outer, slot, &key))
			p = KeyPartition(key, nparts);
		else if (keep_nulls)
			p = 0;				/* matches nothing, comes out NULL-extended */
		else
		{
			node->gj_OuterRows++;	/* read, but matches nothing and never
									 * comes out */
			continue;
		}
		tuplestore_puttupleslot(node->gj_OuterParts[p], slot);
	}
}

/*
 * Partitioned: on to the next partition that has work, setting the inner
 * rows the device sees; false when none is left.  A partition without outer
 * rows has none (its inner rows' flags stay unmatched), nor has one without
 * inner rows unless its outer rows come out unmatched.
 */
bool
GpuJoinNextPartition(GpuJoinState *node)
{
	while (++node->gj_Part < node->gj_NumParts)
	{
		int			p = node->gj_Part;
		int64		inner_rows = node->gj_PartStart[p + 1] - node->gj_PartStart[p];

		if (tuplestore_tuple_count(node->gj_OuterParts[p]) == 0)
			continue;
		if (inner_rows == 0 && !GJ_FILL_OUTER_NEEDED(node))
			continue;
		node->gj_InnerFirst = node->gj_PartStart[p];
		node->gj_InnerCount = inner_rows;
		node->gj_Outer.exhausted = false;
		/* after a partition that fell back, BuildTable opens the GPU again */
		if (node->gj_OnFallback)
			GpuJoinCloseDevice(node);
		return true;
	}
	return false;
}

/* End the outer side's tuplestores, if any */
void
GpuJoinEndOuterParts(GpuJoinState *node)
{
	if (node->gj_OuterParts != NULL)
	{
		for (int p = 0; p < node->gj_NumParts; p++)
			if (node->gj_OuterParts[p] != NULL)
				tuplestore_end(node->gj_OuterParts[p]);
		node->gj_OuterParts = NULL;
	}
	MemoryContextReset(node->gj_PartCxt);
}

/* The next row of the outer side: from its plan, or its partition's store */
TupleTableSlot *
GpuJoinNextOuterRow(GpuJoinState *node)
{
	if (node->gj_NumParts > 1)
	{
		if (!tuplestore_gettupleslot(node->gj_OuterParts[node->gj_Part], true, false,
									 node->gj_PartSlot))
			return NULL;
		return node->gj_PartSlot;
	}
	return ExecProcNode(node->gj_Outer.ps);
}
