/*-------------------------------------------------------------------------
 *
 * exec_parallel.c
 *	  Parallel GPU joins: the dynamic shared memory of a parallel-aware GpuJoin
 *
 * A partial GPU join path (planner.c) runs below a Gather: every process,
 * the leader and each worker, runs this whole node on its part of the outer
 * side against the whole inner side, which each reads and builds on the
 * device for itself, as nodeHashjoin.c does without Parallel Hash.  The
 * outer side's blocks are shared out by a Parallel Seq Scan child, or, when
 * the join reads that relation itself as heap pages (exec_heap.c), by the
 * block scan this node keeps in its dynamic shared memory, as nodeSeqscan.c
 * keeps its own.  Besides, each worker leaves its EXPLAIN ANALYZE counters
 * (GpuJoinCounters) in that memory when it shuts down, and the leader
 * collects them, before the Gather destroys it, for ExplainGpuJoin to add
 * to its own.
 *
 * IDENTIFICATION
 *	  src/exec_parallel.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/tableam.h"
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

/* The size of the counters part: a slot per planned worker */
static Size
CountersSize(int nworkers)
{
	return MAXALIGN(add_size(offsetof(GpuJoinParallelState, workers),
							 mul_size(nworkers, sizeof(GpuJoinCounters))));
}

/* The outer side, when the join reads it as heap pages, or NULL */
static GpuJoinHeapReader *
OuterHeap(GpuJoinState *node)
{
	GpuJoinHeapReader *reader = node->gj_Outer.heap;

	return reader != NULL && reader->parallel ? reader : NULL;
}

/* The outer side's shared block scan, after the counters, or NULL */
static ParallelTableScanDesc
SharedScan(GpuJoinParallelState *shared)
{
	if (shared->pscan_offset == 0)
		return NULL;
	return (ParallelTableScanDesc) ((char *) shared + shared->pscan_offset);
}

/*
 * EstimateDSMCustomScan callback: the counters, and the outer side's block
 * scan when the join reads it as heap pages
 */
Size
EstimateGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt)
{
	GpuJoinState *node = (GpuJoinState *) css;
	Size		size = CountersSize(pcxt->nworkers);

	if (OuterHeap(node) != NULL)
		size = add_size(size, table_parallelscan_estimate(OuterHeap(node)->rel,
														  css->ss.ps.state->es_snapshot));
	return size;
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
	shared->pscan_offset = 0;
	if (OuterHeap(node) != NULL)
	{
		shared->pscan_offset = CountersSize(pcxt->nworkers);
		table_parallelscan_initialize(OuterHeap(node)->rel, SharedScan(shared),
									  css->ss.ps.state->es_snapshot);
		GpuJoinHeapSetParallel(OuterHeap(node), SharedScan(shared));
	}
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
	if (OuterHeap(node) != NULL)
	{
		table_parallelscan_reinitialize(OuterHeap(node)->rel, SharedScan(node->gj_Shared));
		GpuJoinHeapSetParallel(OuterHeap(node), SharedScan(node->gj_Shared));
	}
}

/*
 * InitializeWorkerCustomScan callback
 */
void
InitializeGpuJoinWorker(CustomScanState *css, shm_toc *toc, void *coordinate)
{
	GpuJoinState *node = (GpuJoinState *) css;

	node->gj_Shared = (GpuJoinParallelState *) coordinate;
	if (OuterHeap(node) != NULL)
		GpuJoinHeapSetParallel(OuterHeap(node), SharedScan(node->gj_Shared));
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
		if (OuterHeap(node) != NULL)
			GpuJoinHeapSetParallel(OuterHeap(node), NULL);
	}
}
