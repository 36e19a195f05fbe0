/*-------------------------------------------------------------------------
 *
 * exec.h
 *	  The GpuJoin custom scan's executor state, shared by the src/exec*.c files
 *
 * The node is in these files, each with its own part of the node's state
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
 *   exec_chain.c      the top of a stack of GPU hash joins running them all
 *                     as one chain on the device
 *   exec_agg.c, exec_heap.c  GpuPreAgg's groups; sides read as heap pages
 *
 * IDENTIFICATION
 *	  src/exec.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_EXEC_H
#define GPUJOIN_EXEC_H

#include "postgres.h"

#include "access/parallel.h"
#include "commands/explain.h"
#include "gpujoin.h"
#include "service.h"
#include "access/htup.h"
#include "access/relscan.h"
#include "nodes/execnodes.h"
#include "portability/instr_time.h"
#include "utils/snapshot.h"
#include "storage/barrier.h"
#include "storage/condition_variable.h"
#include "storage/spin.h"
#include "utils/dsa.h"
#include "utils/tuplestore.h"

/*
 * States of the ExecGpuJoin state machine
 */
#define GJ_LOAD_INNER		1
#define GJ_BUILD			2
#define GJ_LOAD_OUTER		3
#define GJ_PROBE			4
#define GJ_RETRIEVE			5
#define GJ_EMIT				6
#define GJ_FILL_OUTER		7
#define GJ_FILL_INNER		8
#define GJ_DONE				9
#define GJ_PARTITION_OUTER	10

/* Join types that emit outer rows without a match (NULL-extended for LEFT/FULL) */
#define GJ_FILL_OUTER_NEEDED(node) \
	((node)->gj_JoinType == JOIN_LEFT || (node)->gj_JoinType == JOIN_FULL || \
	 (node)->gj_JoinType == JOIN_ANTI)
/* Join types that emit inner rows without a match, NULL-extended */
#define GJ_FILL_INNER_NEEDED(node) \
	((node)->gj_JoinType == JOIN_RIGHT || (node)->gj_JoinType == JOIN_FULL)

/* First allocation of a column batch, in rows; it doubles from there */
#define GJ_INITIAL_BATCH_ROWS	1024

/* Smallest round of matches, so tiny chunks do not mean tiny rounds */
#define GJ_MIN_ROUND_MATCHES	1024

/*
 * A column of one side that is referenced above the join
 *
 *	attno			its attribute number in the child's tuple (1-based)
 *	scan_att		its position in the scan tuple (0-based)
 *	typlen/typbyval	its type's storage
 *	device			its index among the side's device columns, or -1
 *	host			its index among the side's host columns, or -1
 *	scale			a GpuPreAgg's numeric column of declared scale: that
 *					scale, the column a device column of its values times
 *					10^scale (int8, typlen 8); else -1
 *	dict			a GpuPreAgg's text column (a group key): the column a
 *					device column of the codes GpuJoinDictCode gives its
 *					values (int8, typlen 8); else NULL
 */
typedef struct GpuJoinDict GpuJoinDict;

typedef struct GpuJoinColumn
{
	AttrNumber	attno;
	int			scan_att;
	int16		typlen;
	bool		typbyval;
	int			device;
	int			host;
	int			scale;
	GpuJoinDict *dict;
} GpuJoinColumn;

/* A device column whose values the host converts (a numeric's, a text's) */
static inline bool
GpuJoinColumnConverted(const GpuJoinColumn *col)
{
	return col->scale >= 0 || col->dict != NULL;
}

/*
 * One side of the join: its child plan, how its rows are read, and the
 * column batch holding the rows read so far (all of the inner side, or the
 * current chunk of the outer side)
 *
 *	ps				child plan state
 *	ncolumns		columns referenced above the join, described by
 *	columns			... one GpuJoinColumn each
 *	ndevice			device columns among them (at most GJ_MAX_COLUMNS)
 *	nscaled			the last of them converted on the host (a numeric's
 *					scaled values, GpuJoinColumn.scale; a text's codes,
 *					GpuJoinColumn.dict), not raw bytes
 *	ndict			of those, the texts' (codes of this process alone)
 *	nhost			host columns among them
 *	maxattno		highest attribute to deform from the child's slot
 *	key_exprs		per join key, the expression over the child's tuple, or
 *					NULL when key_attnos gives a plain column
 *	key_codings		per join key, how its value is encoded (keys.c)
 *	key_hash		per join key, its hash function when hashed
 *	key_collations	per join key, the clause's input collation
 *	max_rows		rows a batch may hold (chunk size, or GJ_MAX_ROWS)
 *	cxt				memory of the batch: arrays and by-reference values
 *	nrows/capacity	rows in the batch and rows allocated
 *	device_values	per device column, nrows packed values
 *	device_nulls	per device column, 1 where NULL; NULL until the first NULL
 *	host_values/host_isnull	per host column, one Datum and flag per row
 *	host_by_tid		an outer side read as heap pages whose host columns are
 *					not taken from every row but fetched by tid for each
 *					match emitted (GpuJoinHeapFetch): few of its rows match
 *	tids			then, per row, its tuple's tid
 *	keys			packed join key per row (theta joins: see AppendThetaKeys)
 *	keynulls		1 where a key is NULL; NULL until the first NULL key
 *	wants_keys_hi	BAND, outer side: keys_hi is kept
 *	nterms			NLJ: comparisons, each with a terms array
 *	keys_hi			BAND, outer side: the upper bound of each row's range
 *	terms			NLJ: per comparison, the encoded value of each row
 *	term_nulls		NLJ: per comparison, 1 where NULL; NULL until the first
 *	exhausted		the child has returned its last row
 *	stage_kernels	the kernels whose staging memory holds the arrays above
 *					(device values and flags, keys, bounds, terms), or NULL
 *					for cxt (GpuJoinSideAlloc)
 *	pinned			that memory's blocks, kept from batch to batch
 */
#define GJ_SIDE_MAX_PINNED	(4 * (GJ_MAX_COLUMNS + GJ_MAX_TERMS + 3))

typedef struct GpuJoinPinned
{
	void	   *ptr;
	Size		size;
	bool		used;			/* by an array of the current batch */
} GpuJoinPinned;

typedef struct GpuJoinSide
{
	PlanState  *ps;
	int			ncolumns;
	GpuJoinColumn *columns;
	int			ndevice;
	int			nscaled;
	int			ndict;
	int			nhost;
	AttrNumber	maxattno;
	ExprState **key_exprs;
	AttrNumber *key_attnos;
	GpuJoinKeyCoding *key_codings;
	FmgrInfo   *key_hash;
	Oid		   *key_collations;
	int64		max_rows;
	MemoryContext cxt;
	int64		nrows;
	int64		capacity;
	char	   *device_values[GJ_MAX_COLUMNS];
	uint8	   *device_nulls[GJ_MAX_COLUMNS];
	Datum	  **host_values;
	bool	  **host_isnull;
	bool		host_by_tid;
	ItemPointerData *tids;
	uint64	   *keys;
	uint8	   *keynulls;
	bool		wants_keys_hi;
	int			nterms;
	uint64	   *keys_hi;
	uint64	   *terms[GJ_MAX_TERMS];
	uint8	   *term_nulls[GJ_MAX_TERMS];
	bool		exhausted;
	struct GpuJoinHeapReader *heap;
	uint32		heap_null_columns;	/* bit d: device column d had a NULL */
	int64		heap_key_nulls;
	const GjKernels *stage_kernels;
	int			npinned;
	GpuJoinPinned pinned[GJ_SIDE_MAX_PINNED];
	MemoryContextCallback pinned_callback;
} GpuJoinSide;

/*
 * A staging area of a side read as heap pages: the pages, and per visible
 * tuple in them its byte offset (page i's at i * BLCKSZ + its offset in
 * the page) and its length
 *
 *	pages			the pages copied one after another, or NULL when they are
 *					read in place (GpuJoinHeapReader.in_place)
 *	buffers			in place: page i's buffer, pinned until the stage's rows
 *					are all taken, it is read into again, or the scan
 *					restarts or ends (ReleaseStage)
 *	page_index		in place: page i's buffer's index in the shared buffer
 *					pool, for the device (in the staging memory)
 *	npins			of buffers, those still pinned (a page with no visible
 *					tuple is not kept)
 *	blocks			page i's block number
 *	offnums			per tuple, its item's offset number (with blocks, its tid)
 *	mem				the block pages (or page_index) and tuples lie in
 *	allocator		the kernels whose staging memory (GpuJoinPinnedAlloc) mem
 *					is, or NULL when it is ordinary memory of the reader's cxt
 *	bytes			the size of mem
 */
typedef struct GpuJoinHeapStage
{
	char	   *pages;
	Buffer	   *buffers;
	uint32	   *page_index;
	uint64	   *page_lsn;		/* in place, pages kept: per page, the LSN of
								 * its visibility map page, read under the
								 * lock its items were listed under while the
								 * map vouched for it, or 0 */
	int			npins;			/* buffers[0 .. npins - 1]: per page in place,
								 * its buffer (invalid: a kept copy only) */
	int			nkept_only;		/* pages not read: their kept copies only
								 * (GJ_PAGE_KEPT_ONLY) */
	uint32	   *tuples;
	uint16	   *lengths;
	BlockNumber *blocks;
	OffsetNumber *offnums;
	int64	   *page_starts;	/* pages kept: per page, its first tuple's
								 * index in tuples (npages + 1 entries) */
	int			npages;
	int64		ntuples;
	char	   *mem;
	const GjKernels *allocator;
	Size		bytes;
} GpuJoinHeapStage;

/*
 * A side read as heap pages (exec_heap.c)
 *
 *	rel, rti		the relation, and its range table index
 *	snapshot		the query's snapshot, which decides what is visible
 *	scan			heapam's scan, read page by page (heapgetpage); NULL
 *					until the first page
 *	next_block		the next block to read
 *	parallel		the outer side of a parallel-aware join: the processes
 *					share out its blocks (through pscan, when there is one)
 *	pscan			a parallel join's outer side: the block scan the
 *					processes share (exec_parallel.c), or NULL
 *	pscan_started	this process has joined it since the scan (re)started
 *	participants	a parallel join's inner side read in shares: the
 *					processes planned to read one (exec_parallel.c), else 0
 *	done			no block left
 *	try_all_visible	the last page read was all-visible: try the next one
 *					as one (StageAllVisiblePage) before heapgetpage
 *	cxt				the executor's memory context the reader lives in
 *	in_place		pages are read where they lie in the shared buffers, kept
 *					pinned while their stage is in use, instead of copied
 *					(gpujoin.heap_in_place; AllocStage decides)
 *	stage_reads		the most pages a stage reads from the buffers (pinned in
 *					place, or copied): gpujoin.heap_stage_pages, or fewer
 *					for a smaller relation, or to keep few buffers pinned
 *					in place
 *	stage_pages		the most pages a staging area holds: stage_reads, or
 *					with pages left unread up to GJ_KEPT_STAGE_FACTOR times
 *					as many (ChooseStaging)
 *	stage_callback	frees the staging areas if the executor does not (an
 *					error)
 *	cur				the staging area rows are taken from (exec_heap.c,
 *					AllocStage: allocated at the first page)
 *	consumed		of its tuples, those already taken into a batch
 *	next, next_ready	pages staged ahead while the device deforms cur's
 *					(Prefetch), taken when cur's are consumed
 *	spec			what the deform takes from each tuple
 *	host_maxattno	the highest attribute of a host column or host key, or 0
 *	host_keys		the keys are encoded on the host (a numeric, hashed or
 *					cross-type coding: TakeHostColumns), not by the deform
 *	slot			a slot of the relation's row type (GpuJoinHeapNextTuple)
 *	tuple			the tuple in it
 *	quals			the scan's quals (planner_expr.c compiled them into
 *					filter, which the deform evaluates), or NIL
 *	host_quals		those of them filter leaves to the host: the tuples
 *					the others pass are undecided (GJ_EXPR_ON_HOST), or NIL
 *	qual			PostgreSQL's own evaluation of them, for the tuples the
 *					device left undecided and for GpuJoinHeapNextTuple, in
 *					econtext (its scan tuple: slot)
 *	selected		per row of a deform call, the staged tuple it came from
 *	fetch_slot		a slot of the relation's own kind, for the tuples
 *					fetched by tid (GpuJoinHeapFetch), and fetched the tid
 *					in it
 *	pages_read ...	counters for EXPLAIN ANALYZE, over every scan
 */
/*
 * How many times gpujoin.heap_stage_pages pages a stage holds where they
 * are kept pages left unread (ChooseStaging): fewer calls of the deform
 * and fewer questions.  SSB at SF 10 with every lineorder page kept (H200
 * hosts, 2026-12-02): on one, 1,841 ms with 4,096 pages a stage against
 * 2,071 and 1,937 with 1,024 and 2,188 with 16,384; on another, within
 * its noise; on a third, alternated three times with stages of 1,024,
 * about 10 % faster by the medians (docs/performance.md).
 */
#define GJ_KEPT_STAGE_FACTOR	4

/* Blocks start .. start + count - 1 of a relation, read in that order */
typedef struct GpuJoinBlockRun
{
	BlockNumber start;
	BlockNumber count;
} GpuJoinBlockRun;

typedef struct GpuJoinHeapReader
{
	Relation	rel;
	Index		rti;
	Snapshot	snapshot;
	TableScanDesc scan;
	BlockNumber next_block;
	bool		parallel;
	ParallelTableScanDesc pscan;
	bool		pscan_started;
	int			participants;
	bool		record;			/* list the blocks the parallel scan hands
								 * this process in runs (a share of an
								 * inner side, exec_parallel.c) */
	GpuJoinBlockRun *runs;
	int			nruns;
	int			maxruns;
	const GpuJoinBlockRun *replay;	/* non-NULL: read these blocks, in this
									 * order, and no others */
	int			nreplay;
	int			replay_at;
	BlockNumber replay_off;
	bool		done;
	bool		try_all_visible;
	bool		in_place;
	Buffer		ahead;
	BlockNumber ahead_block;
	MemoryContext cxt;
	int			stage_reads;
	int			stage_pages;
	MemoryContextCallback stage_callback;
	GpuJoinHeapStage cur;
	int64		consumed;
	GpuJoinHeapStage next;
	bool		next_ready;
	GjDeformSpec spec;
	AttrNumber	host_maxattno;
	bool		host_keys;
	TupleTableSlot *slot;
	HeapTupleData tuple;
	List	   *quals;
	List	   *host_quals;
	GpuJoinDeviceExpr *filter;
	ExprState  *qual;
	ExprContext *econtext;
	uint32	   *selected;
	TupleTableSlot *fetch_slot;
	ItemPointerData fetched;
	int64		pages_read;
	int64		pages_all_visible;
	int64		pages_in_place;
	int64		pages_cached;	/* read from the ones the device kept */
	bool		keep_pages;		/* in place: pages kept between joins
								 * (gpujoin.page_cache) */
	bool		unread;			/* and those the device keeps not read
								 * (gpujoin.page_cache_unread) */
	Buffer		vmbuffer;		/* the visibility map page pinned */
	GpuJoinSide *side;			/* the side it reads */
	GpuJoinDeviceContext *device;	/* the device the pages go to */
	BlockNumber *ask_blocks;	/* blocks taken from the scan, asked about */
	uint64	   *ask_lsns;		/* their map pages' LSNs (0: not vouched for) */
	int16	   *ask_counts;		/* kept: the tuples listed; else -1 */
	int			nasked;
	int			asked_at;		/* the next of them to stage */
	int64		pages_unread;	/* not read: their kept copies */
	int64		tuples_read;
	double		read_ms;
	double		deform_ms;
	double		host_ms;		/* rows' columns, codes and numerics taken on the
								 * host, quals rechecked */
	double		alloc_ms;		/* the batch's arrays grown */
	int64		rows_removed;	/* by the quals */
	int64		bytes_shipped;	/* pages and tuple offsets sent to the device */
	int			numerics;		/* numeric columns the deform converts */
	int			texts;			/* text columns it makes words of */
	int64		numerics_on_host;	/* of their values, those it left to the
									 * host (TakeHostNumerics) */
	struct GpuJoinQualMemo *memo;	/* the quals' results per value of the one
									 * column they read, or NULL (exec_heap.c) */
	int64		memo_hits;		/* tuples the memo decided */
} GpuJoinHeapReader;

/*
 * One process's account of its runs of a GpuJoin node, for EXPLAIN ANALYZE
 * (GpuJoinCollectCounters): what the node's counters and device context say, and
 * the Device line that process would show.  processes counts its runs (a
 * rescan starts another), as participants of a parallel join.
 */
typedef struct GpuJoinCounters
{
	int			processes;
	int			num_parts;
	int64		chunks;
	int64		inner_rows;
	int64		outer_rows;
	int64		matches;
	double		load_ms;
	double		emit_ms;
	int64		heap_pages[2];	/* a heap side's (outer, inner) pages read */
	int64		heap_all_visible[2];	/* of them, those with tuples and all
										 * visible */
	int64		heap_in_place[2];	/* of them, those read in place */
	int64		heap_kept[2];	/* and of those, the ones the device had kept */
	int64		heap_unread[2];	/* and of those, the ones the host did not read */
	int64		heap_tuples[2]; /* visible tuples read */
	double		heap_ms[2];		/* time reading pages (load includes it) */
	double		heap_deform_ms[2];	/* time deforming them (load includes it) */
	double		heap_host_ms[2];	/* time on the host per row (load includes it) */
	double		heap_alloc_ms[2];	/* time growing the batch (load includes it) */
	int64		heap_removed[2];	/* rows removed by its quals */
	int64		heap_shipped[2];	/* bytes of pages sent to the device */
	int			heap_numerics[2];	/* numeric columns the deform converts */
	int			heap_texts[2];	/* text columns it makes words of */
	int64		heap_numerics_host[2];	/* their values the host converted */
	int64		heap_memo_hits[2];	/* tuples whose host quals a value's earlier
									 * result decided */
	int64		shared_builds;	/* runs that probed the build of another
								 * participant instead of building */
	int64		inner_shares;	/* runs that read a share of the inner
								 * side's pages for the build */
	int64		agg_groups;		/* GpuPreAgg: rows of partial aggregates returned */
	int64		agg_spills;		/* GpuPreAgg: group tables emptied to the host */
	int64		agg_host_sorted;	/* GpuPreAgg: groups merged in order on the host */
	GjStats		stats;
	char		device[160];
} GpuJoinCounters;

/*
 * One participant's share of an inner side read in parallel (exec_parallel.c),
 * in the query's DSA: this header (its rows, where its arrays lie for the
 * gpujoin service to build from, whether its tids follow), then the nruns
 * runs of blocks the block scan handed it, in that order, then its rows'
 * tids.  The rows stay in its arrays until the build is published.
 */
typedef struct GpuJoinInnerPart
{
	int64		nrows;
	int			nruns;
	bool		has_tids;
	GjServicePart where;		/* slot -1: where the service cannot read it */
} GpuJoinInnerPart;

/*
 * What a participant that waited for a parallel join's shared build found
 * published (GpuJoinParallelState's build_* fields, copied under its
 * mutex): the state, and where BUILT the build to probe
 */
typedef struct GpuJoinPublishedBuild
{
	int			state;			/* GJ_SHARED_BUILD_* */
	GpuJoinSharedBuild build;
	int64		rows;
	uint64		digest;
	dsa_pointer tids;
	bool		chain;
	int64		max_matches;
	int64		chunk_rows;
} GpuJoinPublishedBuild;

/* Where the shared build of a parallel join stands (GpuJoinParallelState) */
#define GJ_SHARED_BUILD_NONE		0	/* no participant has come to it */
#define GJ_SHARED_BUILD_BUILDING	1	/* one builds; the others wait */
#define GJ_SHARED_BUILD_BUILT		2	/* the others probe its build */
#define GJ_SHARED_BUILD_OWN			3	/* none to share: each builds its own */

/*
 * The dynamic shared memory of a parallel GpuJoin node: a slot per planned
 * worker, by ParallelWorkerNumber, filled when that worker shuts the node
 * down (processes 0 until then, and again once the leader took it); and,
 * with the gpujoin service, the build that one participant makes and the
 * others probe (exec_parallel.c, GpuJoinShareBuild)
 *
 *	build_state		GJ_SHARED_BUILD_*, under mutex
 *	build			BUILT: the context whose build the others share
 *	build_rows		its inner rows, and a digest of their keys in order
 *	build_digest	(GpuJoinSideDigest), to check a participant that reads
 *					the inner side after all (out of device memory) reads it
 *					as the builder did
 *	build_cv		signalled when the state leaves BUILDING
 *	build_chain		BUILT by a level of a partial chain, in the chain's
 *					layout of columns (exec_chain.c): only that level of
 *					the other processes' chains may probe it, never the
 *					node run on its own (and a chain never probes the
 *					node's own build)
 *	build_max_matches, build_chunk_rows
 *					... its rounds' size and the outer chunks' it planned,
 *					which a chain's level that probes it takes as its own
 *					(the CPU twin, after the device ran out of memory,
 *					numbers the matches alike only with the same rounds)
 *
 * and, where the inner side is read as heap pages, its pages shared out
 * among the participants (GpuJoinShareBuild):
 *
 *	read_barrier	phase 0 while the participants that came in time read
 *					their shares; the last to arrive builds
 *	parts			per participant (the leader 0, worker n n + 1), the rows
 *					it read, in the query's DSA (GpuJoinInnerPart): the
 *					builder builds from them where they lie, and any
 *					participant that needs the whole inner side on the
 *					host reads their blocks again in the builder's order
 *
 * and, for a right or full join, the inner rows that some participant
 * matched (exec_parallel.c, GpuJoinFillDetach), all under mutex but the
 * flags themselves:
 *
 *	fill_attached	participants running the join in this launch
 *	fill_done		one of them has emitted the unmatched inner rows
 *	fill_flags		a byte per inner row, in the order the inner side is
 *					read, 1 where a participant matched it (in the
 *					query's DSA), or InvalidDsaPointer until the first
 *					participant finishes; fill_rows and fill_digest
 *					describe its inner side, as build_rows and
 *					build_digest do, for the others to check theirs
 */
typedef struct GpuJoinParallelState
{
	slock_t		mutex;
	int			nworkers;
	Size		pscan_offset;	/* the outer heap side's ParallelTableScanDesc,
								 * from the start of this struct, or 0 */
	Size		inner_pscan_offset; /* the inner heap side's, or 0 */
	Size		parts_offset;	/* with it: its parts (GpuJoinInnerPart) */
	Barrier		read_barrier;	/* the inner side's shares being read */
	bool		shares_lost;	/* one found no room in shared memory */
	int			share_builder;	/* the participant that builds: its share
								 * comes first in the whole */
	int			build_state;
	GpuJoinSharedBuild build;
	int64		build_rows;
	uint64		build_digest;
	dsa_pointer build_tids;		/* its inner rows' tids, when gj_InnerByTid */
	bool		build_chain;
	int64		build_max_matches;
	int64		build_chunk_rows;
	ConditionVariable build_cv;
	int			fill_attached;
	bool		fill_done;
	dsa_pointer fill_flags;
	int64		fill_rows;
	uint64		fill_digest;
	GpuJoinCounters workers[FLEXIBLE_ARRAY_MEMBER];
} GpuJoinParallelState;

/*
 * GpuJoinState: executor state of a GpuJoin custom scan
 *
 *	gj_JoinState		current state of ExecGpuJoin state machine
 *	gj_Outer, gj_Inner	the two sides
 *	gj_NumKeys			join key clauses evaluated on the device
 *	gj_KeyBits			bits of each key in the packed key
 *	gj_KeyExact			packed keys compare exactly (else: hashed)
 *	gj_ThetaOps			theta joins: per key clause, inner OP outer
 *	gj_JoinQual			quals rechecked on each matched pair, or NULL
 *	gj_Strategy			hash (chunked outer), merge (whole outer, sorted) or
 *						theta (chunked outer, comparisons)
 *	gj_JoinType			inner, left, right, full, semi or anti
 *	gj_OuterMatched		per outer row of the chunk: matched (not inner joins)
 *	gj_InnerMatched		per inner row: matched (right and full joins)
 *	gj_FillPos			next row to consider in GJ_FILL_OUTER/GJ_FILL_INNER
 *	gj_FillInOrder		left, full and anti joins whose matches come in the
 *						order of their outer rows (NPHJ, BAND, NLJ) or, for a
 *						merge join, of their keys: the unmatched outer rows
 *						come out in their place, between the matches, as
 *						PostgreSQL's own hash, nested-loop and merge joins
 *						emit them (GpuJoinEmitNextMatch), not after the chunk's
 *	gj_OuterOrder		merge joins that emit unmatched outer rows: the
 *						outer rows in key order (NULL keys last), so that
 *						those rows come out in their place (GpuJoinEmitNextMatch)
 *	gj_OrderPos			gj_FillInOrder: the position, in the order of the
 *						matches (gj_OuterOrder, or the chunk's own), of
 *						the next outer row to consider
 *	gj_Spec				what device contexts are created for: variant,
 *						materialization, device columns, round capacity
 *	gj_Device			kernels and device context
 *	gj_TableBuilt		the device context holds the table of the inner
 *						batch as it is now (GpuJoinLoadInner clears it)
 *	gj_InnerParams		the executor parameters (PARAM_EXEC) that the inner
 *						side's key expressions read: when one changes, the
 *						inner batch is read and built again (ReScanGpuJoin)
 *	gj_ChunkCounted		the device context has counted the current chunk
 *	gj_ChunkMatches		matches of the current chunk
 *	gj_NextMatch		number of the first match of the next round
 *	gj_Round			the current round of matches
 *	gj_RoundPos			next match of the round to emit
 *	gj_CpuParts			times the join ran out of device memory and went
 *						on on the CPU twin: once for an unpartitioned
 *						join, which stays there; once per partition for
 *						a partitioned one, whose next partition starts
 *						on the GPU again
 *	gj_OnFallback		the device context is the CPU twin's that took over
 *						after the device ran out of memory (SwitchToCpu),
 *						not the one the join chose
 *	gj_FellBackFrom		what it took over from, for EXPLAIN
 *	gj_NumParts			partitions of a partitioned hash join; 1: none
 *	gj_Part				the partition being joined
 *	gj_PartStart		partition p's inner rows are gj_PartStart[p] up to
 *						gj_PartStart[p + 1]; NULL keys come after the last
 *	gj_OuterParts		per partition, its outer rows (a tuplestore each)
 *	gj_PartSlot			slot the outer rows are read back into
 *	gj_PartCxt			memory of the above, reset for each partitioning
 *	gj_OuterPlanRows	the planner's estimate of the outer side's rows
 *	gj_ChunkRows		the outer side's chunk as the node started (a
 *						partitioned join may lower it)
 *	gj_RoundMatches		matches per round as the node started (likewise)
 *	gj_InnerFirst/gj_InnerCount	the inner rows the device sees: a partition,
 *						or all of them
 *	gj_Timing			measure phase times (EXPLAIN ANALYZE with TIMING);
 *						set on the first call, as ExecInitNode attaches
 *						the instrumentation after BeginCustomScan
 *	gj_ScanChunks		outer chunks loaded since the node started or was
 *						rescanned (a merge join allows one)
 *	gj_Chunks ...		counters for EXPLAIN ANALYZE, summed over every
 *						scan (loop) of the node
 *	gj_Ran				the node has run since it started or was rescanned
 *	gj_Runs				the times it has, in this process
 *	gj_Shared			a parallel node's shared memory (NULL when it runs
 *						in one process)
 *	gj_SharedBuilder	this process builds the table the other participants
 *						probe, and publishes it when it has (or fails to)
 *	gj_InnerByTid		the plan's shared build fetches the inner side's
 *						host columns by tid for each match (exec_parallel.c)
 *	gj_Borrowed			the device context probes another participant's
 *						build: this process has not read the inner side;
 *						gj_BorrowedRows and gj_BorrowedDigest describe it
 *	gj_ChainShare		a level of a partial chain: the build this process
 *						makes for the others, or probes (gj_ChainBuild: its
 *						builder's rounds and chunks, and the inner rows'
 *						tids where their host columns are fetched by tid),
 *						is in the chain's layout (GpuJoinChainClaimBuild)
 *	gj_InnerShares		this launch of a parallel join reads the inner side
 *						in shares, one per participant (exec_parallel.c)
 *	gj_InnerReady		GJ_LOAD_INNER finds the inner side loaded (the
 *						builder of shares): build on it
 *	gj_InnerInParts		the builder of shares: the inner side's rows are
 *						the shares, in the participants' arrays, which
 *						BuildTable builds from where they lie; this
 *						process's arrays hold its own share only, though
 *						nrows counts all (GpuJoinWholeInner reads the
 *						whole for what needs it on the host)
 *	gj_SharedBuilds		runs that probed another participant's build
 *	gj_InnerSharesRead	runs that read a share of the inner side
 *	gj_FillAttached		a parallel right or full join: this process runs
 *						the join and has not yet merged its inner rows'
 *						matched flags into the shared ones
 *	gj_InnerDigest		... the digest of its inner side as read
 *	gj_InnerPerm		... partitioned: inner row i of the batch is row
 *						gj_InnerPerm[i] as read (PartitionInner), or NULL
 *	gj_Workers			the leader: the counters the workers left there,
 *						a List of GpuJoinCounters
 */
/*
 * Where a column of a chain's scan tuple comes from (exec_chain.c): the
 * side that holds it, and where the last level's rounds carry its values
 * or its side's row numbers
 *
 *	side, col		the side holding it, and its column there
 *	scan_att		the top node's scan tuple column it fills
 *	in_inner		device values: in the round's inner arrays (the top
 *					node's own inner side), else in its outer ones
 *	values			their index there, or -1 for a host column
 *	rows			a host column's row numbers: GJ_CHAIN_OUTER_ROWS (the
 *					round's outer_rows: the chain's outer side),
 *					GJ_CHAIN_INNER_ROWS (its inner_rows: the top's inner
 *					side), else the outer column carrying that level's
 *					row numbers
 */
#define GJ_CHAIN_OUTER_ROWS	(-1)
#define GJ_CHAIN_INNER_ROWS	(-2)

typedef struct GpuJoinChainColumn
{
	GpuJoinSide *side;
	const GpuJoinColumn *col;
	int			scan_att;		/* the top's scan tuple column it fills */
	bool		in_inner;
	int			values;
	int			rows;
} GpuJoinChainColumn;

typedef struct GpuJoinState
{
	CustomScanState css;
	int			gj_JoinState;
	GpuJoinSide gj_Outer;
	GpuJoinSide gj_Inner;
	int			gj_NumKeys;
	int		   *gj_KeyBits;
	GjThetaOp  *gj_ThetaOps;
	bool		gj_KeyExact;
	ExprState  *gj_JoinQual;
	GpuJoinStrategy gj_Strategy;
	JoinType	gj_JoinType;
	bool	   *gj_OuterMatched;
	bool	   *gj_InnerMatched;
	int64		gj_FillPos;
	bool		gj_FillInOrder;
	int64	   *gj_OuterOrder;
	int64		gj_OrderPos;
	GjJoinSpec	gj_Spec;
	char	   *gj_SpreadConsidered;	/* the ways priced, for EXPLAIN
										 * VERBOSE; NULL: none was */
	GpuJoinDeviceContext gj_Device;
	bool		gj_TableBuilt;
	Bitmapset  *gj_InnerParams;
	bool		gj_ChunkCounted;
	int64		gj_ChunkMatches;
	int64		gj_NextMatch;
	GjMatchRound gj_Round;
	int64		gj_RoundPos;
	int			gj_CpuParts;
	bool		gj_OnFallback;
	const char *gj_FellBackFrom;
	int			gj_NumParts;
	int			gj_Part;
	int64	   *gj_PartStart;
	Tuplestorestate **gj_OuterParts;
	TupleTableSlot *gj_PartSlot;
	MemoryContext gj_PartCxt;
	int64		gj_ChunkRows;
	double		gj_OuterPlanRows;
	int64		gj_RoundMatches;
	int64		gj_InnerFirst;
	int64		gj_InnerCount;
	bool		gj_Timing;
	int64		gj_ScanChunks;
	int64		gj_Chunks;
	int64		gj_InnerRows;
	int64		gj_OuterRows;
	int64		gj_Matches;
	double		gj_LoadMs;
	double		gj_EmitMs;
	bool		gj_Ran;
	int			gj_Runs;
	GpuJoinParallelState *gj_Shared;
	bool		gj_SharedBuilder;
	bool		gj_InnerByTid;
	bool		gj_Borrowed;
	bool		gj_InnerShares;
	bool		gj_InnerReady;
	bool		gj_InnerInParts;
	int64		gj_BorrowedRows;
	uint64		gj_BorrowedDigest;
	bool		gj_ChainShare;
	GpuJoinPublishedBuild gj_ChainBuild;
	int64		gj_SharedBuilds;
	int64		gj_InnerSharesRead;
	bool		gj_FillAttached;
	uint64		gj_InnerDigest;
	int64	   *gj_InnerPerm;
	List	   *gj_Workers;
	struct GpuJoinAgg *gj_Agg;	/* GpuPreAgg (exec_agg.c), or NULL */
	struct GpuJoinChain *gj_Chain;	/* the chain of joins this node runs
									 * as its top (exec_chain.c), or NULL */
	struct GpuJoinState *gj_ChainedInto;	/* the top of the chain that runs
											 * this node as a level, or NULL */
	bool		gj_ChainBelow;	/* planned as a chain with the GPU join below
								 * (GpuJoinPrivateChainBelow) */
	bool		gj_NoInner;		/* a SCAN: no join, no inner side, no key
								 * (a GpuPreAgg over one relation) */
} GpuJoinState;

/* Milliseconds since start */
static inline double
GpuJoinElapsedMs(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/* exec.c */
extern const GjKernels *GpuJoinNodeKernels(GpuJoinState *node);
extern void GpuJoinSwitchToCpu(GpuJoinState *node, const GjError *cause);

/* exec_batch.c */
extern void GpuJoinInitSide(GpuJoinState *node, GpuJoinSide *side, PlanState *ps,
							List *tlist, bool heap, int scan_offset, Bitmapset *needed,
							List *key_args, List *key_clauses, List *codings, int varno,
							int64 max_rows, bool scaled_numeric, bool text_codes);
extern bool GpuJoinHeapNumericsOnDevice(List *tlist, int scan_offset, Bitmapset *needed);
extern void GpuJoinSpecColumns(const GpuJoinSide *side, int32_t *ncolumns, int32_t *widths);
extern void GpuJoinResetSide(GpuJoinSide *side);
extern void *GpuJoinSideAlloc(GpuJoinSide *side, Size size, bool zero);
extern void GpuJoinSideFree(GpuJoinSide *side, void *ptr);
extern void GpuJoinGrowSide(GpuJoinSide *side);
extern void GpuJoinStoreHostValue(GpuJoinSide *side, const GpuJoinColumn *col, int64 row,
								  Datum value, bool isnull);
extern void GpuJoinStoreDeviceValue(GpuJoinSide *side, const GpuJoinColumn *col, int64 row,
									Datum value, bool isnull);
extern void GpuJoinReserveSide(GpuJoinSide *side, int64 newcap);
extern Size GpuJoinSideRowBytes(const GpuJoinSide *side, int *narrays);
extern int64 GpuJoinDictCode(GpuJoinDict *dict, Datum value);
extern Datum GpuJoinDictValue(GpuJoinDict *dict, int64 code);
extern bool GpuJoinRowKey(GpuJoinState *node, GpuJoinSide *side, TupleTableSlot *slot,
						  uint64 *key);
extern bool GpuJoinStoreRowKey(GpuJoinState *node, GpuJoinSide *side, TupleTableSlot *slot,
							   int64 row);
extern bool GpuJoinEncodeKey(GpuJoinState *node, GpuJoinSide *side, Datum value,
							 uint64 *key);
extern GjBatch GpuJoinSideBatch(const GpuJoinSide *side, GjColumn *columns, int64 first,
								int64 nrows);
extern void GpuJoinForgetInner(GpuJoinState *node);
extern void GpuJoinLoadInner(GpuJoinState *node);
extern void GpuJoinReadInnerRows(GpuJoinState *node);
extern void GpuJoinInnerLoaded(GpuJoinState *node);
extern void GpuJoinInnerTooLarge(const GpuJoinSide *inner);
extern uint64 GpuJoinSideDigest(const GpuJoinSide *side);
extern bool GpuJoinLoadOuterChunk(GpuJoinState *node);

/* pinned.c */
extern void *GpuJoinPinnedAlloc(const GjKernels *kernels, Size size, Size *got);
extern void GpuJoinPinnedFree(const GjKernels *kernels, void *ptr, Size size);
extern void GpuJoinPinnedRelease(const GjKernels *kernels);

/* exec_heap.c */
extern void GpuJoinHeapBegin(GpuJoinState *node, GpuJoinSide *side, Index rti, List *quals,
							 EState *estate, int eflags);
extern bool GpuJoinHeapFill(GpuJoinState *node, GpuJoinSide *side, int64 max_rows);
extern void GpuJoinHeapTrimNulls(GpuJoinSide *side);
extern TupleTableSlot *GpuJoinHeapNextTuple(GpuJoinHeapReader *reader);
extern TupleTableSlot *GpuJoinHeapFetch(GpuJoinSide *side, int64 row);
extern void *GpuJoinGrowHostArray(MemoryContext cxt, void *old, Size newsize);
extern void GpuJoinHeapRescan(GpuJoinHeapReader *reader);
extern void GpuJoinHeapReplay(GpuJoinHeapReader *reader, const GpuJoinBlockRun *runs, int nruns);
extern void GpuJoinHeapSetParallel(GpuJoinHeapReader *reader, ParallelTableScanDesc pscan);
extern void GpuJoinHeapEnd(GpuJoinHeapReader *reader);

/* exec_agg.c */
extern void GpuJoinAggNeeded(CustomScan *cscan, List *join_tlist, Bitmapset **needed);
extern void GpuJoinAggInit(GpuJoinState *node, CustomScan *cscan, List *join_tlist,
						   List *agg_private);
extern void GpuJoinAggregateChunk(GpuJoinState *node);
extern GjAggSpec *GpuJoinAggSpec(GpuJoinState *node);
extern void GpuJoinAggSetSpec(GpuJoinState *node, GjAggSpec *spec);
extern GjStatus GpuJoinAggFoldRound(GpuJoinState *node, int64 first, int64 left,
									bool mid_chunk, bool fall_back, int64 *n, GjError *err);
extern TupleTableSlot *GpuJoinAggEmitNext(GpuJoinState *node);
extern TupleTableSlot *GpuJoinAggEmitTimed(GpuJoinState *node);
extern void GpuJoinCloseDevice(GpuJoinState *node);
extern void GpuJoinAggRescan(GpuJoinState *node);
extern void GpuJoinAggCounts(GpuJoinState *node, int64 *groups, int64 *spills,
							 int64 *host_sorted);
extern void GpuJoinAggExplain(GpuJoinState *node, int64 groups, int64 spills,
							  int64 host_sorted, ExplainState *es);

/* exec_emit.c */
extern void GpuJoinFillScanSlot(GpuJoinState *node, TupleTableSlot *slot, int64 i);
extern Datum GpuJoinSideDatum(GpuJoinSide *side, const GpuJoinColumn *col, int64 row,
							  bool *isnull);
extern void GpuJoinChainFillScanSlot(GpuJoinState *top, const GjMatchRound *round, int64 i,
									 const GpuJoinChainColumn *cols, int ncols);
extern TupleTableSlot *GpuJoinChainEmitNext(GpuJoinState *top, const GjMatchRound *round,
											int64 *pos, const GpuJoinChainColumn *cols,
											int ncols);

/* exec_chain.c */
extern void GpuJoinChainInit(GpuJoinState *node);
extern const GjJoinSpec *GpuJoinChainSpec(GpuJoinState *node);
extern bool GpuJoinChainFillMatch(GpuJoinState *node, const GjMatchRound *round, int64 i);
extern TupleTableSlot *GpuJoinChainExec(GpuJoinState *node, bool *handled);
extern void GpuJoinChainRescan(GpuJoinState *node);
extern void GpuJoinChainShutdown(GpuJoinState *node);
extern void GpuJoinChainExplain(GpuJoinState *node, ExplainState *es);
extern GpuJoinState **GpuJoinChainLevels(GpuJoinState *node, int *nlevels);

/* exec_partition.c */
extern void GpuJoinPlanPartitions(GpuJoinState *node);
extern void GpuJoinPartitionOuter(GpuJoinState *node);
extern bool GpuJoinNextPartition(GpuJoinState *node);
extern void GpuJoinEndOuterParts(GpuJoinState *node);
extern TupleTableSlot *GpuJoinNextOuterRow(GpuJoinState *node);

/* exec_emit.c */
extern TupleTableSlot *GpuJoinEmitNextMatch(GpuJoinState *node);
extern TupleTableSlot *GpuJoinEmitNextUnmatched(GpuJoinState *node, bool outer, int64 limit);
extern void GpuJoinSortOuterRows(GpuJoinState *node);

/* exec_explain.c */
extern void GpuJoinCollectCounters(GpuJoinState *node, GpuJoinCounters *c);
extern void ExplainGpuJoin(CustomScanState *css, List *ancestors, ExplainState *es);

/* exec_parallel.c */
extern Size EstimateGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt);
extern void InitializeGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt,
								 void *coordinate);
extern void ReInitializeGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt,
								   void *coordinate);
extern void InitializeGpuJoinWorker(CustomScanState *css, shm_toc *toc,
									void *coordinate);
extern void ShutdownGpuJoin(CustomScanState *css);
extern bool GpuJoinShareBuild(GpuJoinState *node);
extern void GpuJoinPublishBuild(GpuJoinState *node, bool built);
extern void GpuJoinReadBorrowedInner(GpuJoinState *node);
extern void GpuJoinLoadOwnInner(GpuJoinState *node);

/* What a level of a partial chain does about its table (GpuJoinChainClaimBuild) */
#define GJ_CHAIN_OWN_BUILD		0	/* reads its inner side and builds for itself */
#define GJ_CHAIN_BUILDS			1	/* ... and publishes the table for the others */
#define GJ_CHAIN_PROBES			2	/* probes another process's: reads nothing */
/*
 * A share of a chain level's inner side as the chain's table takes it
 * (exec_chain.c): its batch, columns and widths
 */
typedef GjBatch (*GpuJoinShareBatchFn) (GpuJoinState *node, void *arg, GjColumn *columns,
										int32 *ncolumns, const int32 **widths);
extern int	GpuJoinChainClaimBuild(GpuJoinState *node, bool shares_ok, bool by_tid_ok,
								   GpuJoinShareBatchFn share_batch, void *arg);
extern bool GpuJoinChainShareOpen(GpuJoinState *node, const GjKernels *kernels);
extern void GpuJoinWholeInner(GpuJoinState *node);
extern bool GpuJoinBuildShares(GpuJoinState *node, GjStatus *status, GjError *err);
extern void GpuJoinFillAttach(GpuJoinState *node);
extern void GpuJoinFillLoaded(GpuJoinState *node);
extern bool GpuJoinFillDetach(GpuJoinState *node);

#endif							/* GPUJOIN_EXEC_H */
