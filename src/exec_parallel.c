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
 * With the gpujoin service, where every participant's device context lives
 * in one process, a hash join (NPHJ) whose inner side the participants
 * would each read and build is built once (GpuJoinShareBuild).  Where the
 * join reads its inner side as heap pages, the participants read it
 * together, as Parallel Hash's participants do: each that comes while the
 * pages are being read takes the next ones from a block scan of the inner
 * relation in this node's shared memory, as the outer side's, keeps the
 * rows it read (its share) and lists in the query's DSA how many and which
 * blocks (GpuJoinInnerPart); a barrier waits for all of them, the last to
 * arrive grows its own share's arrays to room for all the rows and
 * publishes where they lie, every other participant copies its share into
 * them at its place (after the builder's, in participant order), and the
 * last builds, as a serial join does, and publishes its context.
 * Any other inner side the first participant to start reads alone, and
 * builds.  The others wait on a condition variable, then create contexts
 * that probe that build (the kernels' context_share) and never read their
 * inner child.  A participant that
 * needs nothing of the inner side but its device columns qualifies: no
 * host column of the inner side, no qual rechecked on the host, no inner
 * rows to fill (a right or full join emits them from the inner side on the
 * host, below).  Host columns of an inner side read as heap pages qualify
 * where the planner priced them fetched per match (gj_InnerByTid): the
 * builder reads the inner rows' tids instead of their host columns and
 * publishes them in the query's DSA, and every participant fetches the
 * inner tuple of each of its matches by its tid (GpuJoinHeapFetch, under
 * the query's snapshot, which all participants share).  Whatever
 * keeps the builder from a build to share (an empty inner side, partitions,
 * the CPU twin after the device ran out of memory) makes every participant
 * build its own, as without the service, from the inner side read whole;
 * one that probed the build and must build after all reads the shares'
 * blocks again in the builder's order, so that its rows are numbered as
 * the builder's.
 *
 * A right or full join emits, besides each participant's matches, the inner
 * rows no participant matched, once.  Every participant reads the whole
 * inner side in the same order (the planner offers such a path only where
 * the join reads it as heap pages: blocks in order, under the query's
 * snapshot) and keeps its own matched flags by inner row; when its outer
 * side is done it ORs them into one set of flags in the query's DSA, and
 * the last participant to finish takes the merged flags and emits the rows
 * they leave unmatched, as PostgreSQL 16's parallel full hash join does.
 * Nobody waits: a participant counts itself in (fill_attached) before it
 * reads an outer row and out when it has read its last, and once one has
 * seen the outer side's end every outer row is in the hands of the
 * participants counted in, so the last one out has every match behind it;
 * one that comes later finds no outer row left and emits nothing
 * (fill_done).  The flags are by the inner side's row numbers as read
 * (gj_InnerPerm maps a partitioned batch's), checked by rows and a digest
 * of the keys, as a shared build is.
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
#include "storage/condition_variable.h"
#include "storage/spin.h"
#include "utils/wait_event.h"
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

/* The inner side's shared block scan, or NULL */
static ParallelTableScanDesc
InnerScan(GpuJoinParallelState *shared)
{
	if (shared->inner_pscan_offset == 0)
		return NULL;
	return (ParallelTableScanDesc) ((char *) shared + shared->inner_pscan_offset);
}

/* With it, the participants' shares of the inner side, by participant */
static dsa_pointer *
InnerParts(GpuJoinParallelState *shared)
{
	return (dsa_pointer *) ((char *) shared + shared->parts_offset);
}

/* This process's number among the participants: the leader 0 */
static int
Participant(void)
{
	return IsParallelWorker() ? ParallelWorkerNumber + 1 : 0;
}

/*
 * Where the parts of the shared memory lie: the counters; the outer side's
 * block scan when the join reads it as heap pages; the inner side's, and a
 * share per participant, when it reads that one so.  Its size.
 */
static Size
Layout(GpuJoinState *node, int nworkers, Size *pscan, Size *inner_pscan, Size *parts)
{
	Snapshot	snapshot = node->css.ss.ps.state->es_snapshot;
	Size		size = CountersSize(nworkers);

	*pscan = *inner_pscan = *parts = 0;
	if (OuterHeap(node) != NULL)
	{
		*pscan = size;
		size = add_size(size, MAXALIGN(table_parallelscan_estimate(OuterHeap(node)->rel, snapshot)));
	}
	if (node->gj_Inner.heap != NULL)
	{
		*inner_pscan = size;
		size = add_size(size, MAXALIGN(table_parallelscan_estimate(node->gj_Inner.heap->rel, snapshot)));
		*parts = size;
		size = add_size(size, MAXALIGN(mul_size(nworkers + 1, sizeof(dsa_pointer))));
	}
	return size;
}

/*
 * EstimateDSMCustomScan callback: the counters, and the sides' block scans
 * where the join reads them as heap pages
 */
Size
EstimateGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt)
{
	Size		pscan;
	Size		inner_pscan;
	Size		parts;

	return Layout((GpuJoinState *) css, pcxt->nworkers, &pscan, &inner_pscan, &parts);
}

/* Did a participant find no room in shared memory for its share? */
static bool
SharesLost(GpuJoinParallelState *shared)
{
	bool		lost;

	SpinLockAcquire(&shared->mutex);
	lost = shared->shares_lost;
	SpinLockRelease(&shared->mutex);
	return lost;
}

/* Forget the shares of the inner side read in the last launch */
static void
FreeInnerParts(GpuJoinParallelState *shared, dsa_area *area)
{
	if (shared->parts_offset == 0)
		return;
	for (int i = 0; i <= shared->nworkers; i++)
	{
		if (DsaPointerIsValid(InnerParts(shared)[i]) && area != NULL)
			dsa_free(area, InnerParts(shared)[i]);
		InnerParts(shared)[i] = InvalidDsaPointer;
	}
	shared->shares_lost = false;
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
	shared->build_state = GJ_SHARED_BUILD_NONE;
	shared->build_tids = InvalidDsaPointer;
	shared->build_chain = false;
	ConditionVariableInit(&shared->build_cv);
	shared->fill_attached = 0;
	shared->fill_done = false;
	shared->fill_flags = InvalidDsaPointer;
	memset(shared->workers, 0, pcxt->nworkers * sizeof(GpuJoinCounters));
	(void) Layout(node, pcxt->nworkers, &shared->pscan_offset,
				  &shared->inner_pscan_offset, &shared->parts_offset);
	if (OuterHeap(node) != NULL)
	{
		table_parallelscan_initialize(OuterHeap(node)->rel, SharedScan(shared),
									  css->ss.ps.state->es_snapshot);
		GpuJoinHeapSetParallel(OuterHeap(node), SharedScan(shared));
	}
	if (InnerScan(shared) != NULL)
	{
		/* the inner side's reader takes it when it reads a share */
		table_parallelscan_initialize(node->gj_Inner.heap->rel, InnerScan(shared),
									  css->ss.ps.state->es_snapshot);
		for (int i = 0; i <= pcxt->nworkers; i++)
			InnerParts(shared)[i] = InvalidDsaPointer;
	}
	shared->shares_lost = false;
	shared->share_builder = 0;
	BarrierInit(&shared->read_barrier, 0);
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
	/* the new workers build again (the leader may keep its table) */
	node->gj_Shared->build_state = GJ_SHARED_BUILD_NONE;
	node->gj_Shared->build_chain = false;
	if (DsaPointerIsValid(node->gj_Shared->build_tids) &&
		css->ss.ps.state->es_query_dsa != NULL)
		dsa_free(css->ss.ps.state->es_query_dsa, node->gj_Shared->build_tids);
	node->gj_Shared->build_tids = InvalidDsaPointer;
	/* and mark the inner rows they match afresh */
	node->gj_Shared->fill_attached = 0;
	node->gj_Shared->fill_done = false;
	if (DsaPointerIsValid(node->gj_Shared->fill_flags) &&
		css->ss.ps.state->es_query_dsa != NULL)
		dsa_free(css->ss.ps.state->es_query_dsa, node->gj_Shared->fill_flags);
	node->gj_Shared->fill_flags = InvalidDsaPointer;
	if (OuterHeap(node) != NULL)
	{
		table_parallelscan_reinitialize(OuterHeap(node)->rel, SharedScan(node->gj_Shared));
		GpuJoinHeapSetParallel(OuterHeap(node), SharedScan(node->gj_Shared));
	}
	/* the inner side's shares are read afresh */
	FreeInnerParts(node->gj_Shared, css->ss.ps.state->es_query_dsa);
	if (InnerScan(node->gj_Shared) != NULL)
		table_parallelscan_reinitialize(node->gj_Inner.heap->rel, InnerScan(node->gj_Shared));
	BarrierInit(&node->gj_Shared->read_barrier, 0);

	/*
	 * A table the leader probes of another's build, or built itself, made
	 * of the last launch's shares: a fallback to the CPU twin could not
	 * read those shares again (their lists are gone), so read this
	 * launch's with the others
	 */
	if (node->gj_InnerShares && (node->gj_Borrowed || node->gj_InnerInParts))
		node->gj_JoinState = GJ_LOAD_INNER;
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
 * ShutdownCustomScan callback: a chain's top counts the run for the levels
 * below (GpuJoinChainShutdown); a worker leaves its counters in its slot; the
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

	if (node->gj_Chain != NULL)
		GpuJoinChainShutdown(node);
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

/*
 * May this run of the node share one build with the other participants?
 * The service's kernels (every context in one process), a variant whose
 * build can be shared, and nothing of the inner side needed on the host
 * but host columns fetched by tid (gj_InnerByTid), nor text codes, which
 * are each process's own.
 */
static bool
ShareEligible(GpuJoinState *node)
{
	bool		gpu;

	return node->gj_Shared != NULL && gpujoin_parallel_shared_build &&
		node->gj_Strategy == GPUJOIN_STRATEGY_HASH &&
		gj_variant_shares_build(node->gj_Spec.variant) &&
		!GJ_FILL_INNER_NEEDED(node) &&
		(node->gj_Inner.nhost == 0 || node->gj_InnerByTid) &&
		node->gj_Inner.ndict == 0 &&
		node->gj_JoinQual == NULL &&
		GpuJoinIsServiceKernels(GpuJoinNodeKernels(node), &gpu);
}

/* Participant i's share (its header, then its blocks' runs), or NULL */
static GpuJoinInnerPart *
Part(GpuJoinParallelState *shared, dsa_area *area, int i)
{
	if (!DsaPointerIsValid(InnerParts(shared)[i]))
		return NULL;
	return (GpuJoinInnerPart *) dsa_get_address(area, InnerParts(shared)[i]);
}

static GpuJoinBlockRun *
PartRuns(GpuJoinInnerPart *part)
{
	return (GpuJoinBlockRun *) ((char *) part + MAXALIGN(sizeof(GpuJoinInnerPart)));
}

/* Its rows' tids, after the runs (has_tids) */
static ItemPointerData *
PartTids(GpuJoinInnerPart *part)
{
	return (ItemPointerData *) ((char *) PartRuns(part) +
								MAXALIGN(sizeof(GpuJoinBlockRun) * part->nruns));
}

/*
 * What this process read as its share of the inner side, into the query's
 * DSA: how many rows, where its arrays lie for the service to build from,
 * the blocks, in the order the block scan handed them out, and the rows'
 * tids where the join fetches host columns by them; InvalidDsaPointer
 * where shared memory has no room for it.  The rows themselves stay in the
 * side's arrays.
 */
static dsa_pointer
PutInnerPart(GpuJoinState *node, dsa_area *area, GpuJoinShareBatchFn share_batch, void *arg)
{
	GpuJoinSide *side = &node->gj_Inner;
	GpuJoinHeapReader *reader = side->heap;
	GpuJoinInnerPart part;
	GjColumn	columns[GJ_MAX_COLUMNS];
	GjBatch		batch;
	int32		ncolumns = node->gj_Spec.inner_ncolumns;
	const int32 *widths = node->gj_Spec.inner_widths;
	Size		tids_bytes = 0;
	Size		size;
	dsa_pointer dp;
	GpuJoinInnerPart *p;

	/* the side's batch as the table takes it: the node's, or a chain's */
	if (share_batch != NULL)
		batch = share_batch(node, arg, columns, &ncolumns, &widths);
	else
		batch = GpuJoinSideBatch(side, columns, 0, side->nrows);
	memset(&part, 0, sizeof(part));
	part.nrows = side->nrows;
	part.nruns = reader->nruns;
	part.has_tids = side->host_by_tid;
	if (part.has_tids)
		tids_bytes = sizeof(ItemPointerData) * side->nrows;
	(void) GpuJoinServicePartOf(GpuJoinNodeKernels(node), &batch, ncolumns, widths, &part.where);
	size = add_size(MAXALIGN(sizeof(GpuJoinInnerPart)),
					add_size(MAXALIGN(mul_size(part.nruns, sizeof(GpuJoinBlockRun))),
							 tids_bytes));

	if (gpujoin_inject_fault == GPUJOIN_FAULT_SHARE_ROOM && IsParallelWorker())
		return InvalidDsaPointer;
	dp = dsa_allocate_extended(area, size, DSA_ALLOC_HUGE | DSA_ALLOC_NO_OOM);
	if (!DsaPointerIsValid(dp))
		return InvalidDsaPointer;
	p = dsa_get_address(area, dp);
	memcpy(p, &part, sizeof(part));
	memcpy(PartRuns(p), reader->runs, sizeof(GpuJoinBlockRun) * part.nruns);
	if (tids_bytes > 0)
		memcpy(PartTids(p), side->tids, tids_bytes);
	return dp;
}

/*
 * The participants that read a share, in the order of the whole inner
 * side: the builder's first, then the others' in participant order, which
 * every process follows, so that the inner rows are numbered alike in all
 * of them (palloc'd; *n of them)
 */
static int *
ShareOrder(GpuJoinParallelState *shared, dsa_area *area, int *n)
{
	int		   *order = palloc(sizeof(int) * (shared->nworkers + 1));

	*n = 0;
	if (Part(shared, area, shared->share_builder) != NULL)
		order[(*n)++] = shared->share_builder;
	for (int i = 0; i <= shared->nworkers; i++)
		if (i != shared->share_builder && Part(shared, area, i) != NULL)
			order[(*n)++] = i;
	return order;
}

/*
 * The builder, once every share is read: the whole inner side is the
 * shares, in the order of the whole, which it builds from where they lie
 * (GpuJoinBuildShares); its own arrays keep its share, and the rows' tids,
 * where the join fetches host columns by them, are gathered from the
 * shares' lists
 */
static void
TakeShares(GpuJoinState *node)
{
	GpuJoinParallelState *shared = node->gj_Shared;
	dsa_area   *area = node->css.ss.ps.state->es_query_dsa;
	GpuJoinSide *side = &node->gj_Inner;
	int			n;
	int		   *order = ShareOrder(shared, area, &n);
	int64		rows = 0;

	for (int i = 0; i < n; i++)
		rows += Part(shared, area, order[i])->nrows;
	if (rows > side->max_rows)
		GpuJoinInnerTooLarge(side);
	if (side->host_by_tid)
	{
		ItemPointerData *tids = MemoryContextAllocHuge(side->cxt,
													   Max(sizeof(ItemPointerData) * rows, 1));
		int64		at = 0;

		for (int i = 0; i < n; i++)
		{
			GpuJoinInnerPart *part = Part(shared, area, order[i]);

			memcpy(tids + at, PartTids(part), sizeof(ItemPointerData) * part->nrows);
			at += part->nrows;
		}
		if (side->tids != NULL)
			pfree(side->tids);
		side->tids = tids;
	}
	pfree(order);
	side->nrows = rows;
	side->exhausted = true;
	GpuJoinInnerLoaded(node);
	node->gj_InnerReady = true;
	node->gj_InnerInParts = true;
}

/*
 * BuildTable of the builder of shares (gj_InnerInParts): the table built
 * from the shares where they lie, each in the staging arenas of the
 * process that read it, which the gpujoin service gathers (true, *status
 * set); false when that cannot be (a share outside its reader's arenas,
 * or a context not of the service: the caller reads the whole inner side,
 * GpuJoinWholeInner, and builds on it)
 */
bool
GpuJoinBuildShares(GpuJoinState *node, GjStatus *status, GjError *err)
{
	GpuJoinParallelState *shared = node->gj_Shared;
	dsa_area   *area = node->css.ss.ps.state->es_query_dsa;
	GpuJoinDeviceContext *dev = &node->gj_Device;
	GjServicePart *parts;
	int			n;
	int		   *order = ShareOrder(shared, area, &n);
	int			nparts = 0;
	bool		gpu;
	bool		can = GpuJoinIsServiceKernels(dev->kernels, &gpu);

	/* (an empty share adds nothing: its reader may never have asked the service anything) */
	parts = palloc(sizeof(GjServicePart) * Max(n, 1));
	for (int i = 0; i < n && can; i++)
	{
		GpuJoinInnerPart *part = Part(shared, area, order[i]);

		if (part->nrows == 0)
			continue;
		if (part->where.slot < 0)
		{
			elog(DEBUG1, "gpujoin: participant %d cannot build from the shares of the inner side where they lie: participant %d's lies outside its staging arenas",
				 Participant(), order[i]);
			can = false;
			break;
		}
		parts[nparts++] = part->where;
	}
	can = can && nparts >= 1 && nparts <= GJ_SERVICE_MAX_PARTS;
	if (can)
		*status = GpuJoinServiceBuildParts(dev->ctx, parts, nparts, err);
	pfree(parts);
	pfree(order);
	return can;
}

/*
 * The whole inner side as the builder has it, read again by this process:
 * the shares' blocks, in the order of the whole (ShareOrder), under the
 * query's snapshot, which every participant shares, give the same rows in
 * the same order
 */
static void
ReadSharesAgain(GpuJoinState *node)
{
	GpuJoinParallelState *shared = node->gj_Shared;
	dsa_area   *area = node->css.ss.ps.state->es_query_dsa;
	GpuJoinHeapReader *reader = node->gj_Inner.heap;
	int			n;
	int		   *order = ShareOrder(shared, area, &n);
	int			nruns = 0;
	GpuJoinBlockRun *runs;

	for (int i = 0; i < n; i++)
		nruns += Part(shared, area, order[i])->nruns;
	runs = palloc(sizeof(GpuJoinBlockRun) * Max(nruns, 1));
	nruns = 0;
	for (int i = 0; i < n; i++)
	{
		GpuJoinInnerPart *part = Part(shared, area, order[i]);

		memcpy(runs + nruns, PartRuns(part), sizeof(GpuJoinBlockRun) * part->nruns);
		nruns += part->nruns;
	}
	GpuJoinHeapSetParallel(reader, NULL);
	GpuJoinHeapReplay(reader, runs, nruns);
	GpuJoinHeapRescan(reader);
	node->gj_Inner.host_by_tid = node->gj_InnerByTid;
	PG_TRY();
	{
		GpuJoinLoadInner(node);
	}
	PG_FINALLY();
	{
		GpuJoinHeapReplay(reader, NULL, 0);
	}
	PG_END_TRY();
	elog(DEBUG1, "gpujoin: participant %d read the %d shares of the inner side again in the builder's order: " INT64_FORMAT " rows in %d runs of blocks",
		 Participant(), n, node->gj_Inner.nrows, nruns);
	pfree(runs);
	pfree(order);
}

/*
 * A participant of a join that reads its inner side in shares, at its
 * start: when it comes while the shares are read, it reads one (the next
 * pages the inner side's block scan hands out), keeps its rows, lists
 * them in the query's DSA (PutInnerPart), and waits for the others that
 * came in time; the last of them to arrive builds (true), from the shares
 * where they lie (TakeShares, GpuJoinBuildShares), and the others keep
 * theirs until it has published its build.  One that comes later reads
 * nothing.
 */
static bool
ReadInnerShare(GpuJoinState *node, GpuJoinShareBatchFn share_batch, void *arg)
{
	GpuJoinParallelState *shared = node->gj_Shared;
	GpuJoinHeapReader *reader = node->gj_Inner.heap;
	dsa_pointer part;
	bool		builds;
	bool		lost;
	instr_time	start;
	double		read_ms;
	double		put_ms;
	int64		rows;

	SpinLockAcquire(&shared->mutex);
	if (shared->build_state == GJ_SHARED_BUILD_NONE)
		shared->build_state = GJ_SHARED_BUILD_BUILDING;
	SpinLockRelease(&shared->mutex);
	if (BarrierAttach(&shared->read_barrier) > 0)
	{
		BarrierDetach(&shared->read_barrier);
		return false;
	}

	node->gj_InnerSharesRead++;
	GpuJoinHeapSetParallel(reader, InnerScan(shared));
	GpuJoinHeapRescan(reader);	/* from this launch's start */
	reader->participants = shared->nworkers + 1;
	GpuJoinForgetInner(node);
	node->gj_Inner.host_by_tid = node->gj_InnerByTid;
	INSTR_TIME_SET_CURRENT(start);
	reader->record = true;
	GpuJoinReadInnerRows(node);
	reader->record = false;
	read_ms = GpuJoinElapsedMs(start);
	rows = node->gj_Inner.nrows;
	INSTR_TIME_SET_CURRENT(start);
	part = PutInnerPart(node, node->css.ss.ps.state->es_query_dsa, share_batch, arg);
	InnerParts(shared)[Participant()] = part;
	if (!DsaPointerIsValid(part))
	{
		SpinLockAcquire(&shared->mutex);
		shared->shares_lost = true;
		SpinLockRelease(&shared->mutex);
	}
	put_ms = GpuJoinElapsedMs(start);

	/*
	 * The last of those that came in time to arrive builds, once the shares
	 * are all listed; the others wait for its build (GpuJoinShareBuild)
	 */
	builds = BarrierArriveAndDetach(&shared->read_barrier);
	lost = builds && SharesLost(shared);
	if (lost)
	{
		/* a share that found no room: no build to share, each its own */
		SpinLockAcquire(&shared->mutex);
		shared->build_state = GJ_SHARED_BUILD_OWN;
		SpinLockRelease(&shared->mutex);
		ConditionVariableBroadcast(&shared->build_cv);
		builds = false;
	}
	else if (builds)
	{
		shared->share_builder = Participant();
		TakeShares(node);
		node->gj_SharedBuilder = true;
	}
	elog(DEBUG1, "gpujoin: participant %d read a share of " INT64_FORMAT " inner rows in %.1f ms, listed it in %.1f ms%s",
		 Participant(), rows, read_ms, put_ms,
		 lost ? ", the last: a share found no room, so each reads the whole" :
		 builds ? ", the last: it builds on the shares" : "");
	return builds;
}

/*
 * A run of a parallel join (or of a partial chain's level) about to decide
 * anew how it shares its build: what the last run decided, forgotten
 */
static void
ForgetSharing(GpuJoinState *node)
{
	node->gj_SharedBuilder = false;
	node->gj_ChainShare = false;
	node->gj_Inner.host_by_tid = false;
	node->gj_InnerShares = false;
	node->gj_InnerInParts = false;
}

/*
 * May this launch's participants read the inner side in shares
 * (gpujoin.parallel_inner_shares: a heap side whose block scan the node
 * keeps in its dynamic shared memory, and the query's DSA for the lists)?
 */
static bool
InnerSharesOn(GpuJoinState *node)
{
	return gpujoin_parallel_inner_shares && InnerScan(node->gj_Shared) != NULL &&
		node->css.ss.ps.state->es_query_dsa != NULL;
}

/*
 * A participant that builds its own table after all (nothing to share):
 * it reads the whole inner side for itself, as usual (false)
 */
static bool
OwnBuild(GpuJoinState *node)
{
	if (node->gj_InnerShares)
	{
		GpuJoinHeapSetParallel(node->gj_Inner.heap, NULL);
		node->gj_InnerShares = false;
	}
	return false;
}

/*
 * The first participant to come to a shared build claims it (true): it
 * builds, and the others wait for it (WaitForBuild)
 */
static bool
ClaimBuild(GpuJoinParallelState *shared)
{
	bool		claimed = false;

	SpinLockAcquire(&shared->mutex);
	if (shared->build_state == GJ_SHARED_BUILD_NONE)
	{
		shared->build_state = GJ_SHARED_BUILD_BUILDING;
		claimed = true;
	}
	SpinLockRelease(&shared->mutex);
	return claimed;
}

/* Wait while another participant builds; what it published, in *pub */
static void
WaitForBuild(GpuJoinParallelState *shared, GpuJoinPublishedBuild *pub)
{
	instr_time	start;

	INSTR_TIME_SET_CURRENT(start);
	ConditionVariablePrepareToSleep(&shared->build_cv);
	for (;;)
	{
		SpinLockAcquire(&shared->mutex);
		pub->state = shared->build_state;
		pub->build = shared->build;
		pub->rows = shared->build_rows;
		pub->digest = shared->build_digest;
		pub->tids = shared->build_tids;
		pub->chain = shared->build_chain;
		pub->max_matches = shared->build_max_matches;
		pub->chunk_rows = shared->build_chunk_rows;
		SpinLockRelease(&shared->mutex);
		if (pub->state != GJ_SHARED_BUILD_BUILDING)
			break;
		ConditionVariableSleep(&shared->build_cv, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	elog(DEBUG1, "gpujoin: participant %d waited %.1f ms for the shared build: %s",
		 Participant(), GpuJoinElapsedMs(start),
		 pub->state != GJ_SHARED_BUILD_BUILT ? "none to share" :
		 pub->chain ? "a chain level's built" : "built");
}

/*
 * The node's device context made to probe the published build (true), the
 * inner side not read; false where the build is gone (its owner failed).
 * Where its host columns are fetched by tid, each match's inner tuple is
 * fetched by the tid the builder read it at (GpuJoinHeapFetch), from a
 * copy of the builder's tids, which a rescanned Gather frees while a kept
 * table goes on.
 */
static bool
ProbeBuild(GpuJoinState *node, const GpuJoinPublishedBuild *pub)
{
	GpuJoinDeviceContext *dev = &node->gj_Device;
	GpuJoinSide *inner = &node->gj_Inner;
	const GjKernels *kernels;
	GjContext  *ctx = NULL;
	GjError		err;

	memset(&err, 0, sizeof(err));
	if (gpujoin_inject_fault == GPUJOIN_FAULT_SHARE_PACE_REFUSED && IsParallelWorker())
	{
		elog(DEBUG1, "gpujoin: could not share the build of a parallel GPU join: refused (gpujoin.inject_fault)");
		return false;
	}
	if (GpuJoinServiceShare(&pub->build, &kernels, &ctx, &err) != GJ_OK)
	{
		elog(DEBUG1, "gpujoin: could not share the build of a parallel GPU join: %s", err.message);
		return false;
	}
	if (dev->ctx != NULL)
		GpuJoinCloseDevice(node);
	dev->kernels = kernels;
	dev->ctx = ctx;
	node->gj_OnFallback = false;
	node->gj_Borrowed = true;
	node->gj_BorrowedRows = pub->rows;
	node->gj_BorrowedDigest = pub->digest;
	node->gj_SharedBuilds++;
	GpuJoinForgetInner(node);
	node->gj_InnerFirst = 0;
	node->gj_InnerCount = 0;
	node->gj_TableBuilt = true;
	if (inner->nhost > 0)
	{
		Size		bytes = (Size) pub->rows * sizeof(ItemPointerData);

		inner->tids = MemoryContextAllocHuge(inner->cxt, Max(bytes, 1));
		memcpy(inner->tids, dsa_get_address(node->css.ss.ps.state->es_query_dsa, pub->tids), bytes);
		inner->host_by_tid = true;
		node->gj_InnerCount = pub->rows;
	}
	return true;
}

/*
 * GJ_LOAD_INNER of a parallel join: probe another participant's build if
 * there is one to share (true: the node's context now does, and the inner
 * side is not to be read), or become the one that builds (false: read and
 * build as usual, then GpuJoinPublishBuild), or wait for the one that
 * does.  false also when nothing is to be shared: build as usual.
 */
bool
GpuJoinShareBuild(GpuJoinState *node)
{
	GpuJoinParallelState *shared = node->gj_Shared;
	GpuJoinPublishedBuild pub;

	ForgetSharing(node);
	if (node->gj_Borrowed)
	{
		/* a rescan that reads the inner side again: not that build */
		GpuJoinCloseDevice(node);
		node->gj_Borrowed = false;
	}
	if (!ShareEligible(node))
	{
		/* it reads the whole inner side for itself */
		if (node->gj_Inner.heap != NULL)
			GpuJoinHeapSetParallel(node->gj_Inner.heap, NULL);
		return false;
	}

	/*
	 * An inner side read as heap pages, with gpujoin.parallel_inner_shares:
	 * every participant that comes in time reads a share of its pages
	 * (ReadInnerShare), and the last of them builds.  Else the first participant to come reads all of it and
	 * builds.  Either way the builder's host columns are the tids, which
	 * the others fetch by too.
	 */
	node->gj_InnerShares = InnerSharesOn(node);
	if (node->gj_InnerShares)
	{
		if (ReadInnerShare(node, NULL, NULL))
			return false;
	}
	else if (ClaimBuild(shared))
	{
		node->gj_SharedBuilder = true;
		node->gj_Inner.host_by_tid = node->gj_InnerByTid;
		return false;
	}

	WaitForBuild(shared, &pub);
	/* (a partial chain's level built in the chain's layout is not this node's) */
	if (pub.state != GJ_SHARED_BUILD_BUILT || pub.chain ||
		(node->gj_Inner.nhost > 0 && !DsaPointerIsValid(pub.tids)) ||
		!ProbeBuild(node, &pub))
		return OwnBuild(node);
	return true;
}

/*
 * A level of a partial chain (exec_chain.c), at the chain's start: one
 * process builds the level's table for the others (GJ_CHAIN_BUILDS: it
 * builds it in the chain's layout of columns and publishes it with
 * GpuJoinPublishBuild as soon as it is built); the others wait for it and
 * probe that table (GJ_CHAIN_PROBES: GpuJoinChainShareOpen makes the
 * context), or read and build their own where there is none to share
 * (GJ_CHAIN_OWN_BUILD).  As for a join on its own (ShareEligible): with
 * the service's kernels, a variant whose build can be shared, no text
 * codes (its side's, nor a GpuPreAgg's on top: shares_ok), no join
 * filter, and no inner column needed on the host but where the planner
 * priced them fetched by tid for each match (gj_InnerByTid)
 * and no later level's key is one of them (by_tid_ok: the chain encodes
 * such keys from the side's batch): the builder then reads the rows' tids
 * instead, publishes them, and every process fetches the inner tuple of
 * each of its matches by its tid, as the chain's emission does for any
 * side read so.
 *
 * An inner side read as heap pages is read in shares as a join's on its
 * own (ReadInnerShare), where the chain says how a share becomes part of
 * its table (share_batch: the side's batch with the extra key columns of
 * later levels, in the chain's layout): every process that comes in time
 * reads a share of its pages, the last of them builds from the shares
 * where they lie (gj_InnerInParts) and the others wait.  Else the first
 * process to come reads it whole and builds.
 *
 * No process waits for a level whose builder waits for another: every
 * process goes through the levels in the same order, and one that waits
 * at a level stays there until its builder has read every level and built
 * and published that one; so no process comes to a later level before the
 * builder of an earlier one has passed it, and a builder finds every level
 * after its own either claimed by itself alone or not yet claimed.
 */
int
GpuJoinChainClaimBuild(GpuJoinState *node, bool shares_ok, bool by_tid_ok,
					   GpuJoinShareBatchFn share_batch, void *arg)
{
	bool		by_tid = node->gj_Inner.nhost > 0;
	GpuJoinPublishedBuild *pub = &node->gj_ChainBuild;

	ForgetSharing(node);
	node->gj_Borrowed = false;
	/* read whole unless in shares (below) */
	if (node->gj_Inner.heap != NULL)
		GpuJoinHeapSetParallel(node->gj_Inner.heap, NULL);
	if (!shares_ok || !ShareEligible(node) ||
		(by_tid && (!by_tid_ok || node->css.ss.ps.state->es_query_dsa == NULL)))
		return GJ_CHAIN_OWN_BUILD;
	node->gj_InnerShares = share_batch != NULL && InnerSharesOn(node);
	if (node->gj_InnerShares)
	{
		/* (host columns: the builder takes the shares' tids, for all to fetch by) */
		if (ReadInnerShare(node, share_batch, arg))
		{
			node->gj_ChainShare = true;
			return GJ_CHAIN_BUILDS;
		}
	}
	else if (ClaimBuild(node->gj_Shared))
	{
		/* (host columns: it reads their tids, for all to fetch by) */
		node->gj_SharedBuilder = true;
		node->gj_ChainShare = true;
		node->gj_Inner.host_by_tid = by_tid;
		return GJ_CHAIN_BUILDS;
	}
	WaitForBuild(node->gj_Shared, pub);
	node->gj_ChainShare = pub->state == GJ_SHARED_BUILD_BUILT && pub->chain &&
		(!by_tid || DsaPointerIsValid(pub->tids));
	if (node->gj_ChainShare)
		return GJ_CHAIN_PROBES;
	(void) OwnBuild(node);
	return GJ_CHAIN_OWN_BUILD;
}

/*
 * ... GJ_CHAIN_PROBES: the level's context, on kernels (the chain's), now
 * probes the builder's table (true), its inner side's host columns, if
 * any, fetched by the builder's tids; false where it cannot (the build is
 * gone, or on other kernels): the caller reads and builds its own
 */
bool
GpuJoinChainShareOpen(GpuJoinState *node, const GjKernels *kernels)
{
	bool		gpu;

	if (!GpuJoinIsServiceKernels(kernels, &gpu) || gpu != node->gj_ChainBuild.build.gpu ||
		!ProbeBuild(node, &node->gj_ChainBuild))
		return false;
	/* (the chain's emission checks the rows it fetches against the side's) */
	if (node->gj_Inner.nhost > 0)
		node->gj_Inner.nrows = node->gj_ChainBuild.rows;
	return true;
}

/*
 * The participant that builds for the others: its build (built: the node's
 * context holds the table of the whole inner side, on the service) or none
 * to share, which lets the others build their own
 */
void
GpuJoinPublishBuild(GpuJoinState *node, bool built)
{
	GpuJoinParallelState *shared = node->gj_Shared;
	GpuJoinDeviceContext *dev = &node->gj_Device;
	GpuJoinSharedBuild build;
	uint64		digest = 0;
	dsa_pointer tids = InvalidDsaPointer;
	dsa_area   *area = node->css.ss.ps.state->es_query_dsa;

	if (!node->gj_SharedBuilder)
		return;
	node->gj_SharedBuilder = false;
	built = built && node->gj_NumParts == 1 && !node->gj_OnFallback &&
		(!node->gj_Inner.host_by_tid || area != NULL) &&
		GpuJoinServiceBuildOf(dev->kernels, dev->ctx, &build);
	/* (shares read again in the builder's order are the same rows in its order) */
	if (built && !node->gj_InnerShares)
		digest = GpuJoinSideDigest(&node->gj_Inner);
	if (built && node->gj_Inner.host_by_tid)
	{
		/* the inner rows' tids, for the others to fetch their host columns by */
		Size		bytes = (Size) node->gj_Inner.nrows * sizeof(ItemPointerData);

		tids = dsa_allocate_extended(area, Max(bytes, 1), DSA_ALLOC_HUGE);
		memcpy(dsa_get_address(area, tids), node->gj_Inner.tids, bytes);
	}

	SpinLockAcquire(&shared->mutex);
	shared->build_state = built ? GJ_SHARED_BUILD_BUILT : GJ_SHARED_BUILD_OWN;
	if (built)
	{
		shared->build = build;
		shared->build_rows = node->gj_Inner.nrows;
		shared->build_digest = digest;
		shared->build_tids = tids;
		shared->build_chain = node->gj_ChainShare;
		shared->build_max_matches = node->gj_Spec.max_matches;
		shared->build_chunk_rows = node->gj_Outer.max_rows;
	}
	SpinLockRelease(&shared->mutex);
	ConditionVariableBroadcast(&shared->build_cv);
	elog(DEBUG1, "gpujoin: participant %d published %s",
		 Participant(), built ? "its build" : "that it has no build to share");
}

/*
 * Two participants read different inner sides (rows, or the keys' digest),
 * so their inner row numbers do not name the same rows: an internal error
 */
static void
DifferentInnerSides(int64 theirs, int64 ours, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("gpujoin: two participants of a parallel GPU join read different inner sides"),
			 errdetail("One read " INT64_FORMAT " rows, another " INT64_FORMAT " (or the same number in another order).",
					   theirs, ours),
			 errhint("%s", hint)));
}

/*
 * A participant that probed another's build and now has to build itself
 * (on the CPU twin: the device ran out of memory): read the inner side
 * after all, and check that it read the very rows the builder did, in its
 * order, so that the matches are numbered alike and the join goes on where
 * it stood
 */
void
GpuJoinReadBorrowedInner(GpuJoinState *node)
{
	GpuJoinWholeInner(node);	/* the builder of shares */
	if (!node->gj_Borrowed)
		return;
	node->gj_Borrowed = false;
	if (node->gj_InnerShares)
	{
		/* the builder's shares, read again in the builder's order */
		ReadSharesAgain(node);
		if (node->gj_Inner.nrows != node->gj_BorrowedRows)
			DifferentInnerSides(node->gj_BorrowedRows, node->gj_Inner.nrows,
								"Set gpujoin.parallel_shared_build = off to have each participant build its own.");
		return;
	}
	GpuJoinLoadInner(node);
	if (node->gj_Inner.nrows != node->gj_BorrowedRows ||
		GpuJoinSideDigest(&node->gj_Inner) != node->gj_BorrowedDigest)
		DifferentInnerSides(node->gj_BorrowedRows, node->gj_Inner.nrows,
							"Set gpujoin.parallel_shared_build = off to have each participant build its own.");
}

/*
 * A level of a partial chain that was to probe another process's build and
 * reads its inner side after all, for a table of its own (the build is not
 * to be had, or the chain runs on the CPU twin): the whole side, not the
 * rest of the launch's block scan, which the shares used up where it read
 * one
 */
void
GpuJoinLoadOwnInner(GpuJoinState *node)
{
	(void) OwnBuild(node);
	GpuJoinLoadInner(node);
}

/*
 * The builder of shares (gj_InnerInParts), where the inner side's rows are
 * needed on the host (the CPU twin after the device ran out of memory,
 * partitions, a build the service cannot make from the shares): read the
 * shares again, in the order of the whole, into its own arrays
 */
void
GpuJoinWholeInner(GpuJoinState *node)
{
	int64		rows = node->gj_Inner.nrows;

	if (!node->gj_InnerInParts)
		return;
	node->gj_InnerInParts = false;
	ReadSharesAgain(node);
	node->gj_InnerRows -= rows;	/* counted once, by TakeShares */
	if (node->gj_Inner.nrows != rows)
		DifferentInnerSides(rows, node->gj_Inner.nrows,
							"Set gpujoin.parallel_inner_shares = off to have one participant read the whole inner side.");
}

/* Does this process share the inner rows' matched flags with others? */
static bool
FillShared(GpuJoinState *node)
{
	return node->gj_Shared != NULL && GJ_FILL_INNER_NEEDED(node);
}

/*
 * A participant of a parallel right or full join, before it reads its
 * first outer row: count it in
 */
void
GpuJoinFillAttach(GpuJoinState *node)
{
	GpuJoinParallelState *shared = node->gj_Shared;

	if (!FillShared(node) || node->gj_FillAttached)
		return;
	SpinLockAcquire(&shared->mutex);
	shared->fill_attached++;
	SpinLockRelease(&shared->mutex);
	node->gj_FillAttached = true;
}

/* ... with its inner side read: the digest the others check theirs by */
void
GpuJoinFillLoaded(GpuJoinState *node)
{
	if (FillShared(node))
		node->gj_InnerDigest = GpuJoinSideDigest(&node->gj_Inner);
}

/*
 * ... with its outer side done: OR its inner rows' matched flags into the
 * shared ones and count it out.  true: it was the last of the participants
 * counted in, its flags are now everyone's, and it emits the inner rows
 * left unmatched; false: another does (or did), and it emits none.  A join
 * in one process (no shared memory) is its own last participant.
 */
bool
GpuJoinFillDetach(GpuJoinState *node)
{
	GpuJoinParallelState *shared = node->gj_Shared;
	dsa_area   *area = node->css.ss.ps.state->es_query_dsa;
	int64		n = node->gj_Inner.nrows;
	const int64 *perm = node->gj_InnerPerm;
	bool	   *matched = node->gj_InnerMatched;
	dsa_pointer flags;
	int64		rows;
	uint64		digest;
	char	   *all;
	bool		last;

	if (!node->gj_FillAttached)
		return !FillShared(node);
	node->gj_FillAttached = false;
	if (area == NULL)
	{
		/* no shared memory area: the Gather runs no worker, only us */
		if (shared->nworkers > 0)
			elog(ERROR, "gpujoin: a parallel right or full join has no shared memory area");
		return true;
	}

	SpinLockAcquire(&shared->mutex);
	flags = shared->fill_flags;
	rows = shared->fill_rows;
	digest = shared->fill_digest;
	SpinLockRelease(&shared->mutex);
	if (!DsaPointerIsValid(flags))
	{
		/* the first to finish: flags for everyone (or another's, if faster) */
		dsa_pointer mine = dsa_allocate_extended(area, Max(n, 1),
												 DSA_ALLOC_HUGE | DSA_ALLOC_ZERO);

		SpinLockAcquire(&shared->mutex);
		if (!DsaPointerIsValid(shared->fill_flags))
		{
			shared->fill_flags = mine;
			shared->fill_rows = n;
			shared->fill_digest = node->gj_InnerDigest;
			mine = InvalidDsaPointer;
		}
		flags = shared->fill_flags;
		rows = shared->fill_rows;
		digest = shared->fill_digest;
		SpinLockRelease(&shared->mutex);
		if (DsaPointerIsValid(mine))
			dsa_free(area, mine);
	}
	if (rows != n || digest != node->gj_InnerDigest)
		DifferentInnerSides(rows, n,
							"Set gpujoin.enable_parallel = off to run the join in one process.");

	/* concurrent ORs store the same byte: none can undo another's */
	all = dsa_get_address(area, flags);
	for (int64 i = 0; i < n; i++)
		if (matched[i])
			all[perm != NULL ? perm[i] : i] = 1;

	/* the lock orders our stores before the last one's loads */
	SpinLockAcquire(&shared->mutex);
	shared->fill_attached--;
	last = shared->fill_attached == 0 && !shared->fill_done;
	if (last)
		shared->fill_done = true;
	SpinLockRelease(&shared->mutex);

	if (last)
		for (int64 i = 0; i < n; i++)
			matched[i] = all[perm != NULL ? perm[i] : i] != 0;
	return last;
}
