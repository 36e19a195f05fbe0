/*-------------------------------------------------------------------------
 *
 * exec_parallel.c
 *	  Parallel GPU joins: the dynamic shared memory of a parallel-aware GpuJoin
 *
 * A partial GPU join path (planner.c) runs below a Gather: every process,
 * the leader and each worker, runs this whole node on its part of the outer
 * side (a Parallel Seq Scan hands out the pages) against the whole inner
 * side, which each reads and builds on the device for itself, as
 * nodeHashjoin.c does without Parallel Hash.  Nothing of the join is shared
 * but its EXPLAIN ANALYZE counters, which is why the node is parallel-aware:
 * each worker leaves its own (GpuJoinCounters) in the node's dynamic shared
 * memory when it shuts down, and the leader collects them, before the Gather
 * destroys that memory, for ExplainGpuJoin to add to its own.
 *
 * IDENTIFICATION
 *	  src/exec_parallel.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "exec.h"
#include "storage/spin.h"
#include "utils/memutils.h"

/*
 * The leader: take the counters the workers have left in shared memory,
 * and clear their slots for the next launch (a rescan of the Gather)
 */
static void
CollectWorkerCounters(GpuJoinState *node)
{
	GpuJoinParallelState *shared = node->gj_Shared;
	MemoryContext query_cxt = node->css.ss.ps.state->es_query_cxt;

	SpinLockAcquire(&shared->mutex);
	for (int i = 0; i < shared->nworkers; i++)
	{
		GpuJoinCounters *c;

		if (shared->workers[i].processes == 0)
			continue;
		c = MemoryContextAlloc(query_cxt, sizeof(GpuJoinCounters));
		*c = shared->workers[i];
		shared->workers[i].processes = 0;
		node->gj_Workers = lappend(node->gj_Workers, c);
	}
	SpinLockRelease(&shared->mutex);
}

/*
 * EstimateDSMCustomScan callback: a slot of counters per planned worker
 */
Size
EstimateGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt)
{
	return add_size(offsetof(GpuJoinParallelState, workers),
					mul_size(pcxt->nworkers, sizeof(GpuJoinCounters)));
}

/*
 * InitializeDSMCustomScan callback (the leader, before the workers start)
 */
void
InitializeGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt, void *coordinate)
{
	GpuJoinState *node = (GpuJoinState *) css;
	GpuJoinParallelState *shared = (GpuJoinParallelState *) coordinate;

	SpinLockInit(&shared->mutex);
	shared->nworkers = pcxt->nworkers;
	memset(shared->workers, 0, pcxt->nworkers * sizeof(GpuJoinCounters));
	node->gj_Shared = shared;
}

/*
 * ReInitializeDSMCustomScan callback: the Gather is rescanned and will
 * start new workers; keep what the last ones left
 */
void
ReInitializeGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt, void *coordinate)
{
	GpuJoinState *node = (GpuJoinState *) css;

	node->gj_Shared = (GpuJoinParallelState *) coordinate;
	CollectWorkerCounters(node);
}

/*
 * InitializeWorkerCustomScan callback
 */
void
InitializeGpuJoinWorker(CustomScanState *css, shm_toc *toc, void *coordinate)
{
	((GpuJoinState *) css)->gj_Shared = (GpuJoinParallelState *) coordinate;
}

/*
 * ShutdownCustomScan callback: a worker leaves its counters in its slot; the
 * leader collects what the workers left before the Gather, which shuts its
 * children down first, destroys the shared memory.  The workers that have
 * finished have all reported: each shuts its plan down before it tells the
 * Gather it has no more tuples.  Those still running when the leader stops
 * early (a LIMIT above the Gather) are left out, and Participants says how
 * many were counted.
 */
void
ShutdownGpuJoin(CustomScanState *css)
{
	GpuJoinState *node = (GpuJoinState *) css;

	if (node->gj_Shared == NULL)
		return;
	if (IsParallelWorker())
	{
		GpuJoinCounters c;

		Assert(ParallelWorkerNumber < node->gj_Shared->nworkers);
		GpuJoinCollectCounters(node, &c);
		SpinLockAcquire(&node->gj_Shared->mutex);
		node->gj_Shared->workers[ParallelWorkerNumber] = c;
		SpinLockRelease(&node->gj_Shared->mutex);
	}
	else
	{
		CollectWorkerCounters(node);
		node->gj_Shared = NULL; /* the Gather will destroy it */
	}
}
