/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The differences between the PostgreSQL versions gpujoin builds
 *	  against (15, 16, 17, 18), in one place
 *
 * Each helper below is what the executor and planner call instead of an
 * API that changed; on 15 every one is the call it replaces.  The version
 * that made the change is named beside each.
 *
 * Compiled against 15 and 18 (the CPU-only build, 18.6); 16 and 17 from
 * their release notes and 18's headers only, untested.
 *
 * IDENTIFICATION
 *	  src/compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_COMPAT_H
#define GPUJOIN_COMPAT_H

#include "access/heapam.h"
#include "access/stratnum.h"
#include "miscadmin.h"
#include "nodes/pathnodes.h"
#include "storage/bufmgr.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/lsyscache.h"
#if PG_VERSION_NUM >= 180000
#include "catalog/pg_collation.h"
#include "catalog/pg_database.h"
#include "utils/builtins.h"
#include "utils/syscache.h"
#endif

/*
 * 16: a relation's file is rd_locator (spcOid, dbOid, relNumber), no longer
 * rd_node (spcNode, dbNode, relNode): its three words
 */
#if PG_VERSION_NUM >= 160000
#define GpuJoinRelationWords(rel, words) \
	((words)[0] = (rel)->rd_locator.spcOid, (words)[1] = (rel)->rd_locator.dbOid, \
	 (words)[2] = (rel)->rd_locator.relNumber)
#else
#define GpuJoinRelationWords(rel, words) \
	((words)[0] = (rel)->rd_node.spcNode, (words)[1] = (rel)->rd_node.dbNode, \
	 (words)[2] = (rel)->rd_node.relNode)
#endif

/* 18: EXPLAIN's property functions moved out of commands/explain.h */
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#else
#include "commands/explain.h"
#endif

/*
 * 17: a PGPROC's number is GetNumberFromPGProc (pgprocno went), its local
 * transaction id moved into vxid
 */
#if PG_VERSION_NUM >= 170000
#define GpuJoinProcNumber(proc)		((int) GetNumberFromPGProc(proc))
#define GpuJoinLocalXid(proc)		((proc)->vxid.lxid)
#else
#define GpuJoinProcNumber(proc)		((proc)->pgprocno)
#define GpuJoinLocalXid(proc)		((proc)->lxid)
#endif

/*
 * 17: a WaitEventSet belongs to a resource owner, not a memory context;
 * none here (the gpujoin service's set lives as long as the process)
 */
#if PG_VERSION_NUM >= 170000
#define GpuJoinCreateWaitEventSet(cxt, nevents)	CreateWaitEventSet(NULL, (nevents))
#else
#define GpuJoinCreateWaitEventSet(cxt, nevents)	CreateWaitEventSet((cxt), (nevents))
#endif

/* 17: old_snapshot_threshold, and so TestForOldSnapshot, went */
#if PG_VERSION_NUM >= 170000
#define GpuJoinTestForOldSnapshot(snapshot, rel, page)	((void) 0)
#define GpuJoinOldSnapshotsOff()	true
#else
#define GpuJoinTestForOldSnapshot(snapshot, rel, page) \
	TestForOldSnapshot((snapshot), (rel), (page))
/* no page goes unread while a read may have to raise "snapshot too old" */
#define GpuJoinOldSnapshotsOff()	(old_snapshot_threshold < 0)
#endif

/* 16: a table's counters lost their t_ prefixes */
#if PG_VERSION_NUM >= 160000
#define GpuJoinCountTuplesReturned(rel, n) \
	((rel)->pgstat_info->counts.tuples_returned += (n))
#else
#define GpuJoinCountTuplesReturned(rel, n) \
	((rel)->pgstat_info->t_counts.t_tuples_returned += (n))
#endif

/*
 * The B-tree strategy of operator opno in opfamily (0 when it has none
 * there).  18 generalized get_op_btree_interpretation into
 * get_op_index_interpretation, whose comparison types number as the
 * B-tree strategies do.
 */
static inline int
GpuJoinBtreeStrategy(Oid opno, Oid opfamily)
{
	List	   *interps;
	ListCell   *lc;

#if PG_VERSION_NUM >= 180000
	interps = get_op_index_interpretation(opno);
	foreach(lc, interps)
	{
		OpIndexInterpretation *interp = lfirst(lc);

		if (interp->opfamily_id == opfamily)
			return (int) interp->cmptype;
	}
#else
	interps = get_op_btree_interpretation(opno);
	foreach(lc, interps)
	{
		OpBtreeInterpretation *interp = lfirst(lc);

		if (interp->opfamily_id == opfamily)
			return interp->strategy;
	}
#endif
	return 0;
}

/*
 * Read block into a page-mode heap scan as a sequential scan reads it: the
 * buffer pinned in rs_cbuf (the previous one released), its visible
 * tuples' offsets in rs_vistuples.  17 replaced heapgetpage (which read the
 * buffer itself) by read streams and heap_prepare_pagescan, which takes
 * the buffer the stream read; here it is read as heapgetpage read it.
 */
static inline void
GpuJoinHeapReadPage(TableScanDesc sscan, BlockNumber block)
{
#if PG_VERSION_NUM >= 170000
	HeapScanDesc scan = (HeapScanDesc) sscan;

	if (BufferIsValid(scan->rs_cbuf))
	{
		ReleaseBuffer(scan->rs_cbuf);
		scan->rs_cbuf = InvalidBuffer;
	}
	CHECK_FOR_INTERRUPTS();
	scan->rs_cbuf = ReadBufferExtended(sscan->rs_rd, MAIN_FORKNUM, block, RBM_NORMAL,
									   scan->rs_strategy);
	scan->rs_cblock = block;
	heap_prepare_pagescan(sscan);
#else
	heapgetpage(sscan, block);
#endif
}

/*
 * A path's count of disabled nodes, from its inputs': 17 added the count to
 * Path, and add_path prefers fewer disabled nodes before it looks at cost,
 * so a GPU path must carry what its inputs carry (none of its own: no
 * enable_* setting disables a GPU join).  Nothing to do before 17.
 */
static inline void
GpuJoinSetDisabledNodes(Path *path, const List *inputs)
{
#if PG_VERSION_NUM >= 170000
	const ListCell *lc;

	path->disabled_nodes = 0;
	foreach(lc, inputs)
		path->disabled_nodes += ((const Path *) lfirst(lc))->disabled_nodes;
#endif
}

/* Does a pathkey sort descending?  (18 names its direction by a CompareType) */
static inline bool
GpuJoinPathKeyDescending(const PathKey *pk)
{
#if PG_VERSION_NUM >= 180000
	return pk->pk_cmptype == COMPARE_GT;
#else
	return pk->pk_strategy == BTGreaterStrategyNumber;
#endif
}

/*
 * Does collation collid compare text byte for byte (memcmp, the shorter
 * first where one is the other's start), as C and POSIX do?  Asked without
 * utils/pg_locale.h: on a server built with ICU that header needs ICU's own
 * headers, which a machine building extensions need not have. 15-17 ask
 * lc_collate_is_c (the server's, declared in that header); 18 dropped it, so
 * the collation's provider and locale are read as its pg_newlocale_from_collation
 * reads them: libc "C" or "POSIX", and every builtin locale (C, C.UTF-8,
 * PG_UNICODE_FAST: code point order, which is byte order in UTF-8), never ICU
 */
#if PG_VERSION_NUM < 180000
extern bool lc_collate_is_c(Oid collation);
#endif

static inline bool
GpuJoinCollationIsC(Oid collid)
{
#if PG_VERSION_NUM >= 180000
	HeapTuple	tuple;
	char		provider;
	Datum		locale;
	bool		is_c = false;

	if (!OidIsValid(collid))
		return false;
	if (collid == C_COLLATION_OID)
		return true;
	if (collid == DEFAULT_COLLATION_OID)
	{
		tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for database %u", MyDatabaseId);
		provider = ((Form_pg_database) GETSTRUCT(tuple))->datlocprovider;
		locale = provider == COLLPROVIDER_LIBC ?
			SysCacheGetAttrNotNull(DATABASEOID, tuple, Anum_pg_database_datcollate) : 0;
	}
	else
	{
		tuple = SearchSysCache1(COLLOID, ObjectIdGetDatum(collid));
		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for collation %u", collid);
		provider = ((Form_pg_collation) GETSTRUCT(tuple))->collprovider;
		locale = provider == COLLPROVIDER_LIBC ?
			SysCacheGetAttrNotNull(COLLOID, tuple, Anum_pg_collation_collcollate) : 0;
	}
	if (provider == COLLPROVIDER_BUILTIN)
		is_c = true;
	else if (provider == COLLPROVIDER_LIBC)
	{
		char	   *name = TextDatumGetCString(locale);

		is_c = strcmp(name, "C") == 0 || strcmp(name, "POSIX") == 0;
		pfree(name);
	}
	ReleaseSysCache(tuple);
	return is_c;
#else
	return OidIsValid(collid) && lc_collate_is_c(collid);
#endif
}

#endif							/* GPUJOIN_COMPAT_H */
