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
 * A column batch keeps, for each side, only the columns referenced above the
 * join (targetlist and quals).  Fixed-width pass-by-value columns (int2/4/8,
 * float4/8, date, timestamp, bool, ...) are "device columns": packed arrays
 * of their 1, 2, 4 or 8 bytes that travel to the device, where the chosen
 * variant (NPHJ, PHJ or SMJ) materializes them for every match, by GFTR or
 * GFUR (papers/notes/wu-2025-gftr.md); the matched values come back column
 * by column.  The other columns (text, numeric, ...) are "host columns":
 * arrays of Datums, by-reference values copied into the batch's memory
 * context (the child's slot is reused for its next row), reached through
 * the row numbers the device returns with each match.
 *
 * A GpuHashJoin reads the outer side in chunks and emits each chunk's
 * matches in the variant's order; a GpuMergeJoin reads it whole, runs SMJ,
 * and so emits its matches in key order, which its pathkeys promise.
 *
 * STATE MACHINE
 *
 *	 GJ_LOAD_INNER	 -- read the inner plan into its batch, encode keys;
 *						partition it when it will not fit the device
 *	 GJ_PARTITION_OUTER -- partitioned: read the whole outer plan into one
 *						tuplestore per partition
 *	 GJ_BUILD		 -- kernels->hash_build (partitioned: the current
 *						partition's inner rows)
 *	 GJ_LOAD_OUTER	 -- read the next outer chunk (partitioned: from the
 *						partition's tuplestore; at its end, on to the next
 *						partition's GJ_BUILD), encode its keys
 *	 GJ_PROBE		 -- kernels->hash_count for the chunk
 *	 GJ_RETRIEVE	 -- kernels->hash_retrieve: the next round of matches
 *	 GJ_EMIT		 -- return one joined tuple per call
 *	 GJ_FILL_OUTER	 -- left/full/anti join: the chunk's outer rows that
 *						matched nothing
 *	 GJ_FILL_INNER	 -- right/full join: the inner rows that matched nothing
 *	 GJ_DONE		 -- nothing left
 *
 * Join types other than inner (Join Type in EXPLAIN) keep a matched flag
 * per outer row of the chunk and, for right and full joins, per inner row;
 * a pair matches when it passes the join quals, and the pushed-down quals
 * (the plan's qual) filter every row emitted, NULL-extended ones too, as in
 * nodeHashjoin.c.  A semi join emits an outer row at its first match and
 * skips the rest; an anti join emits only the rows left unmatched.
 *
 * PARTITIONED HASH JOINS
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
 * PARALLEL GPU JOINS
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

#include "commands/explain.h"
#include "executor/executor.h"
#include "gpujoin.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "portability/instr_time.h"
#include "access/parallel.h"
#include "access/tupmacs.h"
#include "storage/spin.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
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
 */
typedef struct GpuJoinColumn
{
	AttrNumber	attno;
	int			scan_att;
	int16		typlen;
	bool		typbyval;
	int			device;
	int			host;
} GpuJoinColumn;

/*
 * One side of the join: its child plan, how its rows are read, and the
 * column batch holding the rows read so far (all of the inner side, or the
 * current chunk of the outer side)
 *
 *	ps				child plan state
 *	ncolumns		columns referenced above the join, described by
 *	columns			... one GpuJoinColumn each
 *	ndevice			device columns among them (at most GJ_MAX_COLUMNS)
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
 *	keys			packed join key per row (theta joins: see AppendThetaKeys)
 *	keynulls		1 where a key is NULL; NULL until the first NULL key
 *	wants_keys_hi	BAND, outer side: keys_hi is kept
 *	nterms			NLJ: comparisons, each with a terms array
 *	keys_hi			BAND, outer side: the upper bound of each row's range
 *	terms			NLJ: per comparison, the encoded value of each row
 *	term_nulls		NLJ: per comparison, 1 where NULL; NULL until the first
 *	exhausted		the child has returned its last row
 */
typedef struct GpuJoinSide
{
	PlanState  *ps;
	int			ncolumns;
	GpuJoinColumn *columns;
	int			ndevice;
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
	uint64	   *keys;
	uint8	   *keynulls;
	bool		wants_keys_hi;
	int			nterms;
	uint64	   *keys_hi;
	uint64	   *terms[GJ_MAX_TERMS];
	uint8	   *term_nulls[GJ_MAX_TERMS];
	bool		exhausted;
} GpuJoinSide;

/*
 * One process's account of its runs of a GpuJoin node, for EXPLAIN ANALYZE
 * (CollectCounters): what the node's counters and device context say, and
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
	GjStats		stats;
	char		device[160];
} GpuJoinCounters;

/*
 * The dynamic shared memory of a parallel GpuJoin node: a slot per planned
 * worker, by ParallelWorkerNumber, filled when that worker shuts the node
 * down (processes 0 until then, and again once the leader took it)
 */
typedef struct GpuJoinShared
{
	slock_t		mutex;
	int			nworkers;
	GpuJoinCounters workers[FLEXIBLE_ARRAY_MEMBER];
} GpuJoinShared;

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
 *	gj_Strategy			hash (chunked outer) or merge (whole outer, sorted)
 *	gj_JoinType			inner, left, right, full, semi or anti
 *	gj_OuterMatched		per outer row of the chunk: matched (not inner joins)
 *	gj_InnerMatched		per inner row: matched (right and full joins)
 *	gj_FillPos			next row to consider in GJ_FILL_OUTER/GJ_FILL_INNER
 *	gj_FillInOrder		left, full and anti joins whose matches come in the
 *						order of their outer rows (NPHJ, BAND, NLJ) or, for a
 *						merge join, of their keys: the unmatched outer rows
 *						come out in their place, between the matches, as
 *						PostgreSQL's own hash, nested-loop and merge joins
 *						emit them (EmitNextMatch), not after the chunk's
 *	gj_OuterOrder		merge joins that emit unmatched outer rows: the
 *						outer rows in key order (NULL keys last), so that
 *						those rows come out in their place (EmitNextMatch)
 *	gj_OrderPos			gj_FillInOrder: the position, in the order of the
 *						matches (gj_OuterOrder, or the chunk's own), of
 *						the next outer row to consider
 *	gj_Spec				what device contexts are created for: variant,
 *						materialization, device columns, round capacity
 *	gj_Device			kernels and device context
 *	gj_TableBuilt		the device context holds the table of the inner
 *						batch as it is now (LoadInnerRelation clears it)
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
 *	gj_Workers			the leader: the counters the workers left there,
 *						a List of GpuJoinCounters
 */
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
	GpuJoinShared *gj_Shared;
	List	   *gj_Workers;
} GpuJoinState;

/*
 * NLJ outer chunks: at most this many comparisons (rows x inner rows x
 * terms) per chunk on the GPU, about 0.1 s at the H200's rate (theta_nlj.cu
 * does 2^35 in some 10 ms), and on the CPU twin (about 0.1 s at 10^9 a
 * second); but never fewer rows than GPUJOIN_NLJ_MIN_CHUNK_ROWS, as each
 * chunk has a fixed cost
 */
#define GPUJOIN_NLJ_CHUNK_COMPARISONS		((double) (INT64CONST(1) << 38))
#define GPUJOIN_NLJ_CPU_CHUNK_COMPARISONS	((double) (INT64CONST(1) << 27))
#define GPUJOIN_NLJ_MIN_CHUNK_ROWS			64

static Node *CreateGpuJoinState(CustomScan *cscan);
static void BeginGpuJoin(CustomScanState *css, EState *estate, int eflags);
static TupleTableSlot *ExecGpuJoin(CustomScanState *css);
static void EndGpuJoin(CustomScanState *css);
static void ReScanGpuJoin(CustomScanState *css);
static void ExplainGpuJoin(CustomScanState *css, List *ancestors,
						   ExplainState *es);
static Size EstimateGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt);
static void InitializeGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt,
								 void *coordinate);
static void ReInitializeGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt,
								   void *coordinate);
static void InitializeGpuJoinWorker(CustomScanState *css, shm_toc *toc,
									void *coordinate);
static void ShutdownGpuJoin(CustomScanState *css);

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
 * algorithm alone"
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
	};

	if ((int) variant < 0 || variant >= GJ_NUM_VARIANTS ||
		(materialize != GJ_MATERIALIZE_GFUR && materialize != GJ_MATERIALIZE_GFTR))
		elog(ERROR, "gpujoin: unrecognized variant %d-%d", (int) variant, (int) materialize);
	return names[variant][materialize];
}

/* Milliseconds since start */
static inline double
ElapsedMs(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
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

/*
 * Rewrite the INDEX_VAR references of a key expression (setrefs.c made them
 * point into the scan tuple) into references to one child's tuple
 */
typedef struct SideVarsContext
{
	int			scan_offset;	/* the side's first scan tuple column - 1 */
	int			natts;			/* columns of the side */
	int			varno;			/* OUTER_VAR or INNER_VAR */
} SideVarsContext;

static Node *
ToSideVarsMutator(Node *node, SideVarsContext *context)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == INDEX_VAR)
	{
		Var		   *var = (Var *) copyObject(node);

		var->varattno -= context->scan_offset;
		if (var->varattno < 1 || var->varattno > context->natts)
			elog(ERROR, "gpujoin: join key refers to the other side of the join");
		var->varno = context->varno;
		return (Node *) var;
	}
	return expression_tree_mutator(node, ToSideVarsMutator, (void *) context);
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

/*
 * Set up one side: which of its columns to keep and where, how to compute
 * its keys
 *
 * needed holds the scan tuple columns referenced above the join, offset by
 * FirstLowInvalidHeapAttributeNumber as pull_varattnos leaves them.
 */
static void
InitSide(GpuJoinState *node, GpuJoinSide *side, PlanState *ps, int scan_offset,
		 Bitmapset *needed, List *key_args, List *key_clauses, List *codings,
		 int varno, int64 max_rows)
{
	List	   *tlist = ps->plan->targetlist;
	int			natts = list_length(tlist);
	int			nkeys = list_length(key_args);
	SideVarsContext context;
	int			i;

	side->ps = ps;
	side->max_rows = max_rows;
	side->columns = palloc(sizeof(GpuJoinColumn) * Max(natts, 1));
	side->ncolumns = 0;
	side->ndevice = 0;
	side->nhost = 0;
	side->maxattno = 0;

	for (i = 1; i <= natts; i++)
	{
		TargetEntry *tle = list_nth_node(TargetEntry, tlist, i - 1);
		GpuJoinColumn *col = &side->columns[side->ncolumns];

		if (!bms_is_member(scan_offset + i - FirstLowInvalidHeapAttributeNumber, needed))
			continue;
		col->attno = i;
		col->scan_att = scan_offset + i - 1;
		get_typlenbyval(exprType((Node *) tle->expr), &col->typlen, &col->typbyval);

		/* fixed-width pass-by-value columns go to the device, as raw bytes */
		if (col->typbyval && side->ndevice < GJ_MAX_COLUMNS &&
			(col->typlen == 1 || col->typlen == 2 || col->typlen == 4 || col->typlen == 8))
		{
			col->device = side->ndevice++;
			col->host = -1;
		}
		else
		{
			col->device = -1;
			col->host = side->nhost++;
		}
		side->maxattno = i;
		side->ncolumns++;
	}

	context.scan_offset = scan_offset;
	context.natts = natts;
	context.varno = varno;
	side->key_exprs = palloc0(sizeof(ExprState *) * Max(nkeys, 1));
	side->key_attnos = palloc0(sizeof(AttrNumber) * Max(nkeys, 1));
	side->key_codings = palloc0(sizeof(GpuJoinKeyCoding) * Max(nkeys, 1));
	side->key_hash = palloc0(sizeof(FmgrInfo) * Max(nkeys, 1));
	side->key_collations = palloc0(sizeof(Oid) * Max(nkeys, 1));
	if (list_length(codings) != 4 * nkeys)
		elog(ERROR, "gpujoin: %d key codings for %d key clauses",
			 list_length(codings), nkeys);
	for (i = 0; i < nkeys; i++)
	{
		Expr	   *arg = (Expr *) ToSideVarsMutator(list_nth(key_args, i), &context);
		Expr	   *stripped = arg;
		int			first = 4 * i + (varno == OUTER_VAR ? 0 : 2);
		GpuJoinKeyCoding *coding = &side->key_codings[i];

		coding->kind = (GpuJoinKeyKind) list_nth_int(codings, first);
		coding->arg = list_nth_int(codings, first + 1);
		if (coding->kind <= GPUJOIN_KEY_NONE || coding->kind > GPUJOIN_KEY_HASHED)
			elog(ERROR, "gpujoin: join key %d has no coding", i + 1);
		if (coding->kind == GPUJOIN_KEY_HASHED)
			fmgr_info((Oid) coding->arg, &side->key_hash[i]);
		side->key_collations[i] = list_nth_node(OpExpr, key_clauses, i)->inputcollid;

		/* a plain column (or a binary-compatible relabeling of one) is read directly */
		while (IsA(stripped, RelabelType))
			stripped = ((RelabelType *) stripped)->arg;
		if (IsA(stripped, Var))
		{
			side->key_attnos[i] = ((Var *) stripped)->varattno;
			side->maxattno = Max(side->maxattno, side->key_attnos[i]);
		}
		else
			side->key_exprs[i] = ExecInitExpr(arg, &node->css.ss.ps);
	}

	if (varno == OUTER_VAR)
		side->cxt = AllocSetContextCreate(CurrentMemoryContext,
										  "GpuJoin outer batch",
										  ALLOCSET_DEFAULT_SIZES);
	else
		side->cxt = AllocSetContextCreate(CurrentMemoryContext,
										  "GpuJoin inner batch",
										  ALLOCSET_DEFAULT_SIZES);
}

/*
 * Describe a side's device columns in a join spec
 */
static void
SpecColumns(const GpuJoinSide *side, int32_t *ncolumns, int32_t *widths)
{
	*ncolumns = side->ndevice;
	for (int i = 0; i < side->ncolumns; i++)
	{
		const GpuJoinColumn *col = &side->columns[i];

		if (col->device >= 0)
			widths[col->device] = col->typlen;
	}
}

/*
 * Empty a side's batch, releasing its memory
 */
static void
ResetSide(GpuJoinSide *side)
{
	MemoryContextReset(side->cxt);
	side->nrows = 0;
	side->capacity = 0;
	memset(side->device_values, 0, sizeof(side->device_values));
	memset(side->device_nulls, 0, sizeof(side->device_nulls));
	side->host_values = NULL;
	side->host_isnull = NULL;
	side->keys = NULL;
	side->keynulls = NULL;
	side->keys_hi = NULL;
	memset(side->terms, 0, sizeof(side->terms));
	memset(side->term_nulls, 0, sizeof(side->term_nulls));
}

/*
 * Allocate (old == NULL) or enlarge an array of a batch whose every row
 * AppendRow writes: the new bytes are left as they are (zeroing them first
 * would be one more pass over the batch)
 */
static void *
GrowValues(MemoryContext cxt, void *old, Size newsize)
{
	if (old == NULL)
		return MemoryContextAllocExtended(cxt, newsize, MCXT_ALLOC_HUGE);
	return repalloc_huge(old, newsize);
}

/*
 * Allocate (old == NULL) or enlarge a flag array of a batch, set only for
 * the rows flagged; new bytes are zero
 */
static void *
GrowArray(MemoryContext cxt, void *old, Size oldsize, Size newsize)
{
	char	   *array;

	if (old == NULL)
		return MemoryContextAllocExtended(cxt, newsize, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	array = repalloc_huge(old, newsize);
	memset(array + oldsize, 0, newsize - oldsize);
	return array;
}

/*
 * Make room for more rows in a side's batch
 */
static void
GrowSide(GpuJoinSide *side)
{
	int64		oldcap = side->capacity;
	int64		newcap;

	newcap = (oldcap == 0) ? GJ_INITIAL_BATCH_ROWS : oldcap * 2;
	newcap = Min(newcap, side->max_rows);
	Assert(newcap > oldcap);

	if (oldcap == 0 && side->nhost > 0)
	{
		side->host_values = MemoryContextAllocZero(side->cxt, sizeof(Datum *) * side->nhost);
		side->host_isnull = MemoryContextAllocZero(side->cxt, sizeof(bool *) * side->nhost);
	}
	for (int i = 0; i < side->ncolumns; i++)
	{
		const GpuJoinColumn *col = &side->columns[i];

		if (col->device >= 0)
		{
			int			d = col->device;

			side->device_values[d] = GrowValues(side->cxt, side->device_values[d],
												newcap * col->typlen);
			if (side->device_nulls[d] != NULL)
				side->device_nulls[d] = GrowArray(side->cxt, side->device_nulls[d],
												  oldcap, newcap);
		}
		else
		{
			int			h = col->host;

			side->host_values[h] = GrowValues(side->cxt, side->host_values[h],
											  newcap * sizeof(Datum));
			side->host_isnull[h] = GrowValues(side->cxt, side->host_isnull[h],
											  newcap * sizeof(bool));
		}
	}
	side->keys = GrowValues(side->cxt, side->keys, newcap * sizeof(uint64));
	if (side->keynulls != NULL)
		side->keynulls = GrowArray(side->cxt, side->keynulls, oldcap, newcap);
	if (side->wants_keys_hi)
		side->keys_hi = GrowValues(side->cxt, side->keys_hi, newcap * sizeof(uint64));
	for (int t = 0; t < side->nterms; t++)
	{
		side->terms[t] = GrowValues(side->cxt, side->terms[t], newcap * sizeof(uint64));
		if (side->term_nulls[t] != NULL)
			side->term_nulls[t] = GrowArray(side->cxt, side->term_nulls[t], oldcap, newcap);
	}
	side->capacity = newcap;
}

/*
 * The value of key expression k of a side for the child's current row
 */
static inline Datum
EvalKey(GpuJoinState *node, GpuJoinSide *side, TupleTableSlot *slot, int k,
		bool *isnull)
{
	ExprContext *econtext = node->css.ss.ps.ps_ExprContext;

	/* also frees what encoding the previous key allocated (KeyValue) */
	ResetExprContext(econtext);
	if (side->key_exprs[k] == NULL)
	{
		*isnull = slot->tts_isnull[side->key_attnos[k] - 1];
		return slot->tts_values[side->key_attnos[k] - 1];
	}
	econtext->ecxt_outertuple = slot;
	econtext->ecxt_innertuple = slot;
	return ExecEvalExprSwitchContext(side->key_exprs[k], econtext, isnull);
}

/*
 * The encoded value of key k of a side (GpuJoinKeyValue), computed in the
 * per-tuple memory that the next EvalKey frees; false when the value can
 * match nothing
 */
static inline bool
KeyValue(GpuJoinState *node, GpuJoinSide *side, int k, Datum value, int64 *result)
{
	const GpuJoinKeyCoding *coding = &side->key_codings[k];
	MemoryContext oldcxt;
	bool		ok;

	/* the common integer keys need no memory */
	switch (coding->kind)
	{
		case GPUJOIN_KEY_INT4:
		case GPUJOIN_KEY_DATE:
			*result = DatumGetInt32(value);
			return true;
		case GPUJOIN_KEY_INT8:
			*result = DatumGetInt64(value);
			return true;
		default:
			break;
	}
	oldcxt = MemoryContextSwitchTo(node->css.ss.ps.ps_ExprContext->ecxt_per_tuple_memory);
	ok = GpuJoinKeyValue(value, coding, &side->key_hash[k], side->key_collations[k], result);
	MemoryContextSwitchTo(oldcxt);
	return ok;
}

/* Mark row's value NULL in a lazily allocated flag array */
static inline void
SetNullFlag(GpuJoinSide *side, uint8 **flags, int64 row)
{
	if (*flags == NULL)
		*flags = GrowArray(side->cxt, NULL, 0, side->capacity);
	(*flags)[row] = 1;
}

/*
 * A theta join's keys of the child's current row, encoded so that unsigned
 * order is SQL order (GpuJoinOrderedKey)
 *
 * BAND: every comparison is on the same inner expression, so the inner
 * side's key is that expression's value, and an outer row's comparisons
 * fold into one inclusive range of it, [keys, keys_hi]: inner >= v raises
 * the lower bound to v, inner > v to the next value after v (the encoding
 * has no value between), and likewise for the upper bound.  An empty range
 * (lower > upper) matches nothing.  NLJ: each comparison's value goes to its
 * own terms array.  A NULL anywhere makes the row match nothing.
 */
static void
AppendThetaKeys(GpuJoinState *node, GpuJoinSide *side, TupleTableSlot *slot,
				int64 row)
{
	bool		isnull = false;

	if (node->gj_Spec.variant == GJ_VARIANT_NLJ)
	{
		for (int t = 0; t < side->nterms; t++)
		{
			Datum		value = EvalKey(node, side, slot, t, &isnull);
			int64		v = 0;

			if (isnull || !KeyValue(node, side, t, value, &v))
			{
				SetNullFlag(side, &side->term_nulls[t], row);
				side->terms[t][row] = 0;
			}
			else
				side->terms[t][row] = GpuJoinOrderedKey(v);
		}
		side->keys[row] = 0;	/* unused by NLJ */
	}
	else if (!side->wants_keys_hi)
	{
		/* BAND, inner side: the value of the (one) inner expression */
		Datum		value = EvalKey(node, side, slot, 0, &isnull);
		int64		v = 0;

		if (!isnull && !KeyValue(node, side, 0, value, &v))
			isnull = true;
		side->keys[row] = isnull ? 0 : GpuJoinOrderedKey(v);
		if (isnull)
			SetNullFlag(side, &side->keynulls, row);
	}
	else
	{
		/* BAND, outer side: the range of inner values this row matches */
		uint64		lo = 0;
		uint64		hi = PG_UINT64_MAX;

		for (int k = 0; k < node->gj_NumKeys && !isnull; k++)
		{
			Datum		value = EvalKey(node, side, slot, k, &isnull);
			int64		sv;
			uint64		v;

			if (isnull || !KeyValue(node, side, k, value, &sv))
			{
				isnull = true;
				break;
			}
			v = GpuJoinOrderedKey(sv);
			switch (node->gj_ThetaOps[k])
			{
				case GJ_THETA_GE:
					lo = Max(lo, v);
					break;
				case GJ_THETA_GT:
					if (v == PG_UINT64_MAX)
						hi = 0, lo = 1; /* nothing is greater */
					else
						lo = Max(lo, v + 1);
					break;
				case GJ_THETA_LE:
					hi = Min(hi, v);
					break;
				case GJ_THETA_LT:
					if (v == 0)
						hi = 0, lo = 1; /* nothing is smaller */
					else
						hi = Min(hi, v - 1);
					break;
				default:
					elog(ERROR, "gpujoin: a band join cannot evaluate comparison %d",
						 (int) node->gj_ThetaOps[k]);
			}
		}
		if (isnull)
		{
			SetNullFlag(side, &side->keynulls, row);
			lo = 1;
			hi = 0;
		}
		side->keys[row] = lo;
		side->keys_hi[row] = hi;
	}
}

/*
 * The packed equi-join key of the child's current row (GpuJoinPackKeys);
 * false when it is NULL or can match nothing
 */
static bool
RowKey(GpuJoinState *node, GpuJoinSide *side, TupleTableSlot *slot, uint64 *key)
{
	int64		keyvals[64];
	bool		keynull = false;

	for (int k = 0; k < node->gj_NumKeys && !keynull; k++)
	{
		Datum		value = EvalKey(node, side, slot, k, &keynull);

		if (!keynull && !KeyValue(node, side, k, value, &keyvals[k]))
			keynull = true;
	}
	if (keynull)
		return false;
	*key = GpuJoinPackKeys(keyvals, node->gj_KeyBits, node->gj_NumKeys,
						   node->gj_KeyExact);
	return true;
}

/*
 * Append the child's current row to a side's batch: its needed columns and
 * its join keys
 */
static void
AppendRow(GpuJoinState *node, GpuJoinSide *side, TupleTableSlot *slot)
{
	int64		row;

	if (side->nrows >= side->capacity)
		GrowSide(side);
	row = side->nrows++;

	slot_getsomeattrs(slot, side->maxattno);

	for (int i = 0; i < side->ncolumns; i++)
	{
		const GpuJoinColumn *col = &side->columns[i];
		Datum		value = slot->tts_values[col->attno - 1];
		bool		isnull = slot->tts_isnull[col->attno - 1];

		if (col->device >= 0)
		{
			int			d = col->device;

			/* the bytes of the value, as heap tuples store it (tupmacs.h) */
			if (isnull)
			{
				if (side->device_nulls[d] == NULL)
					side->device_nulls[d] = GrowArray(side->cxt, NULL, 0, side->capacity);
				side->device_nulls[d][row] = 1;
				/* defined bytes for the device to carry (never read as a value) */
				memset(side->device_values[d] + row * col->typlen, 0, col->typlen);
			}
			else
				store_att_byval(side->device_values[d] + row * col->typlen,
								value, col->typlen);
		}
		else
		{
			if (!isnull && !col->typbyval)
			{
				MemoryContext oldcxt = MemoryContextSwitchTo(side->cxt);

				value = datumCopy(value, false, col->typlen);
				MemoryContextSwitchTo(oldcxt);
			}
			side->host_values[col->host][row] = value;
			side->host_isnull[col->host][row] = isnull;
		}
	}

	if (node->gj_Strategy == GPUJOIN_STRATEGY_THETA)
	{
		AppendThetaKeys(node, side, slot, row);
		return;
	}

	if (!RowKey(node, side, slot, &side->keys[row]))
	{
		/*
		 * NULL never equals anything, nor does a value beyond the other
		 * side's range: the kernels skip this row
		 */
		if (side->keynulls == NULL)
			side->keynulls = GrowArray(side->cxt, NULL, 0, side->capacity);
		side->keynulls[row] = 1;
		side->keys[row] = 0;
	}
}

/*
 * Rows first .. first + nrows - 1 of a side's batch as the kernels take them
 * (all of them, or an inner partition); columns must hold GJ_MAX_COLUMNS
 */
static GjBatch
SideBatch(const GpuJoinSide *side, GjColumn *columns, int64 first, int64 nrows)
{
	GjBatch		batch;

	Assert(first >= 0 && first + nrows <= side->nrows);
	for (int c = 0; c < side->ncolumns; c++)
	{
		const GpuJoinColumn *col = &side->columns[c];
		int			d = col->device;

		if (d < 0)
			continue;
		columns[d].values = side->device_values[d] ? side->device_values[d] + first * col->typlen : NULL;
		columns[d].nulls = side->device_nulls[d] ? side->device_nulls[d] + first : NULL;
	}
	memset(&batch, 0, sizeof(batch));
	batch.keys = side->keys ? side->keys + first : NULL;
	batch.nulls = side->keynulls ? side->keynulls + first : NULL;
	batch.nrows = nrows;
	batch.columns = columns;
	batch.keys_hi = side->keys_hi ? side->keys_hi + first : NULL;
	for (int t = 0; t < side->nterms; t++)
	{
		batch.terms[t] = side->terms[t] ? side->terms[t] + first : NULL;
		batch.term_nulls[t] = side->term_nulls[t] ? side->term_nulls[t] + first : NULL;
	}
	return batch;
}

/*
 * GJ_LOAD_INNER: read the whole inner side
 */
static void
LoadInnerRelation(GpuJoinState *node)
{
	GpuJoinSide *inner = &node->gj_Inner;

	ResetSide(inner);
	node->gj_TableBuilt = false;	/* the device's table is of the old batch */
	node->gj_InnerMatched = NULL;	/* was in the batch's memory */
	node->gj_PartStart = NULL;		/* likewise */
	node->gj_NumParts = 1;
	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(inner->ps);

		if (TupIsNull(slot))
			break;
		if (inner->nrows >= inner->max_rows)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("inner relation of a GPU join has more than " INT64_FORMAT " rows",
							inner->max_rows),
					 errhint("Set gpujoin.enabled = off to run this join with PostgreSQL's own join methods.")));
		AppendRow(node, inner, slot);
	}
	node->gj_InnerRows += inner->nrows;
	if (GJ_FILL_INNER_NEEDED(node))
		node->gj_InnerMatched = MemoryContextAllocExtended(inner->cxt, Max(inner->nrows, 1),
														   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	node->gj_InnerFirst = 0;
	node->gj_InnerCount = inner->nrows;
}

/* The kernels the node's device calls go to: its context's, or the choice now */
static const GjKernels *
NodeKernels(GpuJoinState *node)
{
	return node->gj_Device.kernels ? node->gj_Device.kernels : GpuJoinChooseKernels();
}

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
 * MurmurHash3's finalizer (cuda/common.h), so a partition's keys still
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
 * capacity of rows
 */
static void *
PermuteArray(MemoryContext cxt, void *array, Size width, const int64 *perm,
			 int64 n, int64 capacity)
{
	char	   *to;
	const char *from = array;

	if (array == NULL)
		return NULL;
	to = MemoryContextAllocExtended(cxt, Max(capacity, 1) * width, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
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
	pfree(array);
	return to;
}

/*
 * Split the inner batch into nparts partitions by key (KeyPartition): its
 * rows reordered so that each partition's are contiguous, gj_PartStart[p]
 * the first of partition p, and the rows with a NULL key last
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

	start = MemoryContextAllocZero(inner->cxt, sizeof(int64) * (nparts + 2));
	next = palloc(sizeof(int64) * (nparts + 1));
	part = MemoryContextAllocExtended(CurrentMemoryContext, sizeof(int32) * Max(n, 1),
									  MCXT_ALLOC_HUGE);
	perm = MemoryContextAllocExtended(CurrentMemoryContext, sizeof(int64) * Max(n, 1),
									  MCXT_ALLOC_HUGE);

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

	inner->keys = PermuteArray(inner->cxt, inner->keys, sizeof(uint64), perm, n, inner->capacity);
	inner->keynulls = PermuteArray(inner->cxt, inner->keynulls, 1, perm, n, inner->capacity);
	for (int c = 0; c < inner->ncolumns; c++)
	{
		const GpuJoinColumn *col = &inner->columns[c];

		if (col->device >= 0)
		{
			inner->device_values[col->device] =
				PermuteArray(inner->cxt, inner->device_values[col->device], col->typlen,
							 perm, n, inner->capacity);
			inner->device_nulls[col->device] =
				PermuteArray(inner->cxt, inner->device_nulls[col->device], 1, perm, n,
							 inner->capacity);
		}
		else
		{
			inner->host_values[col->host] =
				PermuteArray(inner->cxt, inner->host_values[col->host], sizeof(Datum),
							 perm, n, inner->capacity);
			inner->host_isnull[col->host] =
				PermuteArray(inner->cxt, inner->host_isnull[col->host], sizeof(bool),
							 perm, n, inner->capacity);
		}
	}
	pfree(perm);
	node->gj_PartStart = start;
}

/*
 * Decide, with the inner side loaded, whether a hash join runs in
 * partitions (GpuJoinPartitions), and if so partition its inner batch; the
 * outer side's chunk and the rounds of matches shrink with the partitions
 */
static void
PlanPartitions(GpuJoinState *node)
{
	GpuJoinSide *inner = &node->gj_Inner;
	GpuJoinSide *outer = &node->gj_Outer;
	int64		chunk_rows = node->gj_ChunkRows;
	int			nparts = 1;
	int64		max_matches;

	if (node->gj_Strategy == GPUJOIN_STRATEGY_HASH)
	{
		double		budget = GpuJoinExecutorDeviceBudget(NodeKernels(node));

		nparts = GpuJoinPartitions((double) inner->nrows, SideDeviceBytes(inner),
								   outer->ps->plan->plan_rows, SideDeviceBytes(outer),
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
		GpuJoinDeviceClose(&node->gj_Device);
	}

	node->gj_NumParts = nparts;
	node->gj_Part = -1;
	if (nparts > 1)
		PartitionInner(node, nparts);
}

/*
 * Partitioned: read the whole outer side into one tuplestore per partition
 */
static void
PartitionOuter(GpuJoinState *node)
{
	GpuJoinSide *outer = &node->gj_Outer;
	int			nparts = node->gj_NumParts;
	bool		keep_nulls = GJ_FILL_OUTER_NEEDED(node);
	MemoryContext oldcxt;

	oldcxt = MemoryContextSwitchTo(node->gj_PartCxt);
	node->gj_OuterParts = palloc0(sizeof(Tuplestorestate *) * nparts);
	for (int p = 0; p < nparts; p++)
		node->gj_OuterParts[p] = tuplestore_begin_heap(false, false, Max(work_mem / nparts, 64));
	MemoryContextSwitchTo(oldcxt);

	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(outer->ps);
		uint64		key;
		int			p;

		if (TupIsNull(slot))
			break;
		slot_getsomeattrs(slot, outer->maxattno);
		if (RowKey(node, outer, slot, &key))
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
static bool
NextPartition(GpuJoinState *node)
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
			GpuJoinDeviceClose(&node->gj_Device);
		return true;
	}
	return false;
}

/* End the outer side's tuplestores, if any */
static void
EndOuterParts(GpuJoinState *node)
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
static inline TupleTableSlot *
NextOuterRow(GpuJoinState *node)
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

/*
 * GJ_LOAD_OUTER: read the next chunk of the outer side; false when no rows
 * are left
 */
static bool
LoadOuterChunk(GpuJoinState *node)
{
	GpuJoinSide *outer = &node->gj_Outer;
	int64		max_rows = outer->max_rows;

	/*
	 * NLJ compares every pair of a chunk in one count call, which cannot be
	 * cancelled: chunks of at most GPUJOIN_NLJ_CHUNK_COMPARISONS pairs x
	 * terms keep each call short (well under a second), and cancel is
	 * checked between them
	 */
	if (node->gj_Spec.variant == GJ_VARIANT_NLJ)
	{
		double		budget = (NodeKernels(node) == &gj_cpu_kernels) ?
			GPUJOIN_NLJ_CPU_CHUNK_COMPARISONS : GPUJOIN_NLJ_CHUNK_COMPARISONS;
		double		per_row = (double) Max(node->gj_Inner.nrows, 1) * Max(outer->nterms, 1);

		max_rows = Min(max_rows, Max((int64) (budget / per_row), GPUJOIN_NLJ_MIN_CHUNK_ROWS));
	}

	ResetSide(outer);
	node->gj_OuterMatched = NULL;	/* was in the batch's memory */
	node->gj_OuterOrder = NULL;
	node->gj_OrderPos = 0;
	while (!outer->exhausted && outer->nrows < max_rows)
	{
		TupleTableSlot *slot = NextOuterRow(node);

		if (TupIsNull(slot))
		{
			outer->exhausted = true;
			break;
		}
		AppendRow(node, outer, slot);
	}
	if (outer->nrows == 0)
		return false;
	/* a second chunk in one scan: more than GJ_MAX_ROWS outer rows */
	if (node->gj_Strategy == GPUJOIN_STRATEGY_MERGE && node->gj_ScanChunks > 0)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("outer relation of a GPU merge join has more than " INT64_FORMAT " rows",
						outer->max_rows),
				 errhint("Set gpujoin.enable_mergejoin = off to run this join as a GPU hash join.")));

	node->gj_ScanChunks++;
	node->gj_Chunks++;
	node->gj_OuterRows += outer->nrows;
	if (GJ_FILL_OUTER_NEEDED(node) || node->gj_JoinType == JOIN_SEMI)
		node->gj_OuterMatched = MemoryContextAllocExtended(outer->cxt, outer->nrows,
														   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	return true;
}

static void BuildTable(GpuJoinState *node);
static void CountChunk(GpuJoinState *node);

/*
 * Continue on the CPU twin after the device ran out of memory
 *
 * The keys are still in host memory, so the CPU twin rebuilds the table and
 * recounts the current chunk; its matches are numbered like the GPU's, so
 * the caller repeats its call and carries on where it stood.  A partitioned
 * join does so for the current partition only (NextPartition goes back to
 * the GPU for the next one): one key can make one partition larger than
 * the device, and the others should not pay for it.  One NOTICE per join.
 */
static void
SwitchToCpu(GpuJoinState *node, const GjError *cause)
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
	node->gj_FellBackFrom = (node->gj_Device.kernels == &gj_cpu_kernels) ?
		"the CPU twin, gpujoin.inject_fault" : "the GPU";
	GpuJoinDeviceClose(&node->gj_Device);
	GpuJoinDeviceOpen(&node->gj_Device, &gj_cpu_kernels, &node->gj_Spec);
	node->gj_OnFallback = true;
	node->gj_CpuParts++;
	node->gj_TableBuilt = false;
	BuildTable(node);
	if (node->gj_ChunkCounted)
	{
		node->gj_ChunkCounted = false;
		CountChunk(node);
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
	GjBatch		inner = SideBatch(&node->gj_Inner, columns, node->gj_InnerFirst,
									  node->gj_InnerCount);
	GjError		err;
	GjStatus	status;

	if (dev->ctx == NULL)
	{
		GpuJoinDeviceOpen(dev, GpuJoinChooseKernels(), &node->gj_Spec);
		node->gj_OnFallback = false;
	}

	memset(&err, 0, sizeof(err));
	status = dev->kernels->build(dev->ctx, &inner, &err);
	status = GpuJoinInjectFault(GPUJOIN_FAULT_BUILD, node->gj_OnFallback, status, &err);
	if (GJ_CAN_FALL_BACK(node, status))
	{
		SwitchToCpu(node, &err);	/* builds on the CPU */
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
	GjBatch		outer = SideBatch(&node->gj_Outer, columns, 0, node->gj_Outer.nrows);

	for (;;)
	{
		GpuJoinDeviceContext *dev = &node->gj_Device;
		GjError		err;
		GjStatus	status;

		memset(&err, 0, sizeof(err));
		status = dev->kernels->count(dev->ctx, &outer, &node->gj_ChunkMatches, &err);
		status = GpuJoinInjectFault(GPUJOIN_FAULT_COUNT, node->gj_OnFallback, status, &err);
		if (GJ_CAN_FALL_BACK(node, status))
		{
			SwitchToCpu(node, &err);
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
		status = GpuJoinInjectFault(GPUJOIN_FAULT_RETRIEVE, node->gj_OnFallback, status, &err);
		if (GJ_CAN_FALL_BACK(node, status))
		{
			SwitchToCpu(node, &err);	/* recounts the chunk */
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
 * Fill the scan tuple with one side's columns of match i of the round:
 * device columns from the values the kernels materialized, host columns
 * from the batch, through the row number
 */
static inline void
FillSide(const GpuJoinSide *side, TupleTableSlot *slot, int64 i,
		 const void *const *values, const uint8_t *const *nulls,
		 const GjRowId *rows, int64 first, int64 nrows)
{
	for (int c = 0; c < side->ncolumns; c++)
	{
		const GpuJoinColumn *col = &side->columns[c];

		if (col->device >= 0)
		{
			const uint8_t *null = nulls[col->device];

			slot->tts_isnull[col->scan_att] = (null != NULL && null[i] != 0);
			slot->tts_values[col->scan_att] =
				slot->tts_isnull[col->scan_att] ? (Datum) 0 :
				fetch_att((const char *) values[col->device] + i * col->typlen,
						  true, col->typlen);
		}
		else
		{
			GjRowId		row = rows[i];

			if (row >= nrows)
				elog(ERROR, "gpujoin: the kernels returned row %u of a side of " INT64_FORMAT " rows",
					 row, nrows);
			slot->tts_values[col->scan_att] = side->host_values[col->host][first + row];
			slot->tts_isnull[col->scan_att] = side->host_isnull[col->host][first + row];
		}
	}
}

/*
 * Fill the scan tuple's columns of one side from row "row" of its batch,
 * or with NULLs when row is -1 (a NULL-extended row)
 */
static void
FillSideFromBatch(const GpuJoinSide *side, TupleTableSlot *slot, int64 row)
{
	for (int c = 0; c < side->ncolumns; c++)
	{
		const GpuJoinColumn *col = &side->columns[c];

		if (row < 0)
		{
			slot->tts_values[col->scan_att] = (Datum) 0;
			slot->tts_isnull[col->scan_att] = true;
		}
		else if (col->device >= 0)
		{
			const uint8 *null = side->device_nulls[col->device];

			slot->tts_isnull[col->scan_att] = (null != NULL && null[row] != 0);
			slot->tts_values[col->scan_att] =
				slot->tts_isnull[col->scan_att] ? (Datum) 0 :
				fetch_att(side->device_values[col->device] + row * col->typlen,
						  true, col->typlen);
		}
		else
		{
			slot->tts_values[col->scan_att] = side->host_values[col->host][row];
			slot->tts_isnull[col->scan_att] = side->host_isnull[col->host][row];
		}
	}
}

/*
 * Fill the scan tuple with match i of the round
 */
static inline void
FillScanSlot(GpuJoinState *node, TupleTableSlot *slot, int64 i)
{
	const GjMatchRound *round = &node->gj_Round;

	ExecClearTuple(slot);
	FillSide(&node->gj_Outer, slot, i, round->outer_values, round->outer_nulls,
			 round->outer_rows, 0, node->gj_Outer.nrows);
	FillSide(&node->gj_Inner, slot, i, round->inner_values, round->inner_nulls,
			 round->inner_rows, node->gj_InnerFirst, node->gj_InnerCount);
	ExecStoreVirtualTuple(slot);
}

static TupleTableSlot *EmitNextUnmatched(GpuJoinState *node, bool outer,
										  int64 limit);

/*
 * GJ_EMIT: the next match of the round that passes the quals, projected;
 * NULL when the round is used up
 */
static TupleTableSlot *
EmitNextMatch(GpuJoinState *node)
{
	ExprContext *econtext = node->css.ss.ps.ps_ExprContext;
	TupleTableSlot *scanslot = node->css.ss.ss_ScanTupleSlot;
	ExprState  *otherqual = node->css.ss.ps.qual;

	while (node->gj_RoundPos < node->gj_Round.nmatches)
	{
		int64		i = node->gj_RoundPos;
		GjRowId		outer_row = 0;

		if (node->gj_OuterMatched != NULL)
		{
			outer_row = node->gj_Round.outer_rows[i];
			if (outer_row >= node->gj_Outer.nrows)
				elog(ERROR, "gpujoin: the kernels returned outer row %u of a chunk of " INT64_FORMAT " rows",
					 outer_row, node->gj_Outer.nrows);
		}

		/*
		 * The unmatched outer rows that come before this match's outer row,
		 * in the order of the matches, come out first.  Their matches, if
		 * any, came before, so their flags are final.  (Only joins that
		 * emit unmatched outer rows fill in order, and all keep flags.)
		 */
		if (node->gj_FillInOrder)
		{
			TupleTableSlot *slot = EmitNextUnmatched(node, true, outer_row);

			if (slot != NULL)
				return slot;
		}
		node->gj_RoundPos++;

		/* a semi join wants one match per outer row */
		if (node->gj_JoinType == JOIN_SEMI && node->gj_OuterMatched[outer_row])
			continue;

		ResetExprContext(econtext);
		FillScanSlot(node, scanslot, i);
		econtext->ecxt_scantuple = scanslot;

		if (node->gj_JoinQual != NULL && !ExecQual(node->gj_JoinQual, econtext))
		{
			InstrCountFiltered2(node, 1);
			continue;
		}

		/* the pair matches */
		if (node->gj_OuterMatched != NULL)
			node->gj_OuterMatched[outer_row] = true;
		if (node->gj_InnerMatched != NULL)
		{
			GjRowId		inner_row = node->gj_Round.inner_rows[i];

			if (inner_row >= node->gj_InnerCount)
				elog(ERROR, "gpujoin: the kernels returned inner row %u of " INT64_FORMAT " rows",
					 inner_row, node->gj_InnerCount);
			node->gj_InnerMatched[node->gj_InnerFirst + inner_row] = true;
		}
		if (node->gj_JoinType == JOIN_ANTI)
			continue;			/* only unmatched rows come out */

		if (otherqual != NULL && !ExecQual(otherqual, econtext))
		{
			InstrCountFiltered1(node, 1);
			continue;
		}

		if (node->css.ss.ps.ps_ProjInfo != NULL)
			return ExecProject(node->css.ss.ps.ps_ProjInfo);
		return scanslot;
	}
	return NULL;
}

/* qsort_arg comparator: outer rows by key, NULL keys last, then row */
static int
CompareOuterRows(const void *a, const void *b, void *arg)
{
	const GpuJoinSide *side = arg;
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;
	bool		xnull = side->keynulls != NULL && side->keynulls[x];
	bool		ynull = side->keynulls != NULL && side->keynulls[y];

	if (xnull != ynull)
		return xnull ? 1 : -1;
	if (!xnull && side->keys[x] != side->keys[y])
		return side->keys[x] < side->keys[y] ? -1 : 1;
	return (x > y) - (x < y);
}

/*
 * A merge join that emits unmatched outer rows (LEFT, ANTI): the outer rows
 * in the order of their keys, which is the order of the SMJ's matches
 * (exact keys are order-preserving, keys.c), NULL keys last as ASC sorts
 * them; kept in the chunk's memory
 */
static void
SortOuterRows(GpuJoinState *node)
{
	GpuJoinSide *outer = &node->gj_Outer;

	node->gj_OuterOrder = MemoryContextAllocExtended(outer->cxt,
													 sizeof(int64) * Max(outer->nrows, 1),
													 MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < outer->nrows; i++)
		node->gj_OuterOrder[i] = i;
	qsort_arg(node->gj_OuterOrder, outer->nrows, sizeof(int64), CompareOuterRows, outer);
	node->gj_OrderPos = 0;
}

/*
 * gj_FillInOrder: does outer row "row" come before the matches of outer row
 * "match_row"?  By key for a merge join (NULL keys last), else by row.
 */
static inline bool
OuterRowPrecedes(const GpuJoinState *node, int64 row, int64 match_row)
{
	const GpuJoinSide *side = &node->gj_Outer;

	if (node->gj_OuterOrder == NULL)
		return row < match_row;
	if (side->keynulls != NULL && side->keynulls[row])
		return false;
	return side->keys[row] < side->keys[match_row];
}

/*
 * GJ_FILL_OUTER / GJ_FILL_INNER: the next row of one side that matched
 * nothing and passes the plan's qual, with the other side's columns NULL;
 * NULL when none is left.  With gj_FillInOrder and a limit (the outer row
 * of the match about to be emitted), only the outer rows before it.
 */
static TupleTableSlot *
EmitNextUnmatched(GpuJoinState *node, bool outer, int64 limit)
{
	ExprContext *econtext = node->css.ss.ps.ps_ExprContext;
	TupleTableSlot *scanslot = node->css.ss.ss_ScanTupleSlot;
	ExprState  *otherqual = node->css.ss.ps.qual;
	const GpuJoinSide *side = outer ? &node->gj_Outer : &node->gj_Inner;
	const bool *matched = outer ? node->gj_OuterMatched : node->gj_InnerMatched;

	for (;;)
	{
		int64		row;

		if (outer && node->gj_FillInOrder)
		{
			/* in the order of the matches, up to the limit */
			if (node->gj_OrderPos >= side->nrows)
				break;
			row = node->gj_OuterOrder ? node->gj_OuterOrder[node->gj_OrderPos] :
				node->gj_OrderPos;
			if (limit >= 0 && !OuterRowPrecedes(node, row, limit))
				break;
			node->gj_OrderPos++;
		}
		else if (node->gj_FillPos < side->nrows)
			row = node->gj_FillPos++;
		else
			break;

		if (matched[row])
			continue;

		ResetExprContext(econtext);
		ExecClearTuple(scanslot);
		FillSideFromBatch(&node->gj_Outer, scanslot, outer ? row : -1);
		FillSideFromBatch(&node->gj_Inner, scanslot, outer ? -1 : row);
		ExecStoreVirtualTuple(scanslot);
		econtext->ecxt_scantuple = scanslot;

		if (otherqual != NULL && !ExecQual(otherqual, econtext))
		{
			InstrCountFiltered1(node, 1);
			continue;
		}
		if (node->css.ss.ps.ps_ProjInfo != NULL)
			return ExecProject(node->css.ss.ps.ps_ProjInfo);
		return scanslot;
	}
	return NULL;
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
	List	   *outer_args = NIL;
	List	   *inner_args = NIL;
	Bitmapset  *needed = NULL;
	PlanState  *outer_ps;
	PlanState  *inner_ps;
	TupleTableSlot *scanslot = css->ss.ss_ScanTupleSlot;
	ListCell   *lc1;
	ListCell   *lc2;
	int			k;

	/* no backward scan, no mark/restore: the path does not offer them */
	eflags &= ~(EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK);
	outer_ps = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
	inner_ps = ExecInitNode(lsecond(cscan->custom_plans), estate, eflags);
	css->custom_ps = list_make2(outer_ps, inner_ps);

	/* the join keys, split by side */
	forboth(lc1, key_clauses, lc2, outer_is_left)
	{
		OpExpr	   *op = lfirst_node(OpExpr, lc1);

		outer_args = lappend(outer_args, lfirst_int(lc2) ? linitial(op->args) : lsecond(op->args));
		inner_args = lappend(inner_args, lfirst_int(lc2) ? lsecond(op->args) : linitial(op->args));
	}
	node->gj_NumKeys = list_length(key_clauses);
	if (node->gj_NumKeys < 1 || node->gj_NumKeys > 64)
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

	/* a merge join sorts the outer side whole: one chunk */
	node->gj_Strategy = (GpuJoinStrategy) intVal(list_nth(priv, GpuJoinPrivateStrategy));
	InitSide(node, &node->gj_Outer, outer_ps, 0, needed, outer_args, key_clauses,
			 codings, OUTER_VAR,
			 node->gj_Strategy == GPUJOIN_STRATEGY_MERGE ? GJ_MAX_ROWS : gpujoin_chunk_rows);
	InitSide(node, &node->gj_Inner, inner_ps, num_outer_cols, needed, inner_args,
			 key_clauses, codings, INNER_VAR, GJ_MAX_ROWS);
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
	SpecColumns(&node->gj_Outer, &node->gj_Spec.outer_ncolumns, node->gj_Spec.outer_widths);
	SpecColumns(&node->gj_Inner, &node->gj_Spec.inner_ncolumns, node->gj_Spec.inner_widths);
	node->gj_JoinType = (JoinType) intVal(list_nth(priv, GpuJoinPrivateJoinType));
	/* matched flags need to know which rows each match joins */
	node->gj_Spec.row_ids = (node->gj_Outer.nhost > 0 || node->gj_Inner.nhost > 0 ||
							 node->gj_JoinType != JOIN_INNER);
	node->gj_Spec.nterms = node->gj_Outer.nterms;
	for (int t = 0; t < node->gj_Spec.nterms; t++)
		node->gj_Spec.ops[t] = node->gj_ThetaOps[t];
	/* unmatched outer rows in their place, where the matches' order allows */
	node->gj_FillInOrder = GJ_FILL_OUTER_NEEDED(node) &&
		(node->gj_Strategy == GPUJOIN_STRATEGY_MERGE ||
		 node->gj_Spec.variant == GJ_VARIANT_NPHJ ||
		 node->gj_Spec.variant == GJ_VARIANT_BAND ||
		 node->gj_Spec.variant == GJ_VARIANT_NLJ);
	node->gj_Spec.max_matches = Max((int64) gpujoin_chunk_rows, GJ_MIN_ROUND_MATCHES);
	node->gj_RoundMatches = node->gj_Spec.max_matches;

	node->gj_JoinQual = ExecInitQual(join_quals, &css->ss.ps);

	/* columns nobody reads stay NULL in the scan tuple */
	for (int i = 0; i < scanslot->tts_tupleDescriptor->natts; i++)
	{
		scanslot->tts_values[i] = (Datum) 0;
		scanslot->tts_isnull[i] = true;
	}

	/* partitioned hash joins (PlanPartitions) */
	node->gj_ChunkRows = node->gj_Outer.max_rows;
	node->gj_NumParts = 1;
	node->gj_PartCxt = AllocSetContextCreate(CurrentMemoryContext,
											 "GpuJoin partitions",
											 ALLOCSET_DEFAULT_SIZES);
	if (node->gj_Strategy == GPUJOIN_STRATEGY_HASH)
		node->gj_PartSlot = ExecInitExtraTupleSlot(estate, ExecGetResultType(outer_ps),
												   &TTSOpsMinimalTuple);

	node->gj_JoinState = GJ_LOAD_INNER;

	/* the device context is created on first use, and cleaned up by this */
	GpuJoinDeviceInit(&node->gj_Device, CurrentMemoryContext);
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
				LoadInnerRelation(node);
				if (node->gj_Timing)
					node->gj_LoadMs += ElapsedMs(start);
				if (node->gj_Inner.nrows == 0 && !GJ_FILL_OUTER_NEEDED(node))
				{
					/* no outer row can match, and none comes out unmatched */
					node->gj_JoinState = GJ_DONE;
					continue;
				}
				PlanPartitions(node);
				node->gj_JoinState = (node->gj_NumParts > 1) ? GJ_PARTITION_OUTER : GJ_BUILD;
				continue;

			case GJ_PARTITION_OUTER:
				if (node->gj_Timing)
					INSTR_TIME_SET_CURRENT(start);
				EndOuterParts(node);
				PartitionOuter(node);
				if (node->gj_Timing)
					node->gj_LoadMs += ElapsedMs(start);
				node->gj_Part = -1;
				if (!NextPartition(node))
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
				node->gj_JoinState = GJ_LOAD_OUTER;
				/* FALL THRU */

			case GJ_LOAD_OUTER:
				{
					bool		loaded;

					if (node->gj_Timing)
						INSTR_TIME_SET_CURRENT(start);
					node->gj_ChunkCounted = false;
					loaded = LoadOuterChunk(node);
					if (node->gj_Timing)
						node->gj_LoadMs += ElapsedMs(start);
					if (!loaded && node->gj_NumParts > 1 && NextPartition(node))
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
						SortOuterRows(node);
				}
				node->gj_JoinState = GJ_PROBE;
				/* FALL THRU */

			case GJ_PROBE:
				CountChunk(node);
				node->gj_JoinState = GJ_RETRIEVE;
				/* FALL THRU */

			case GJ_RETRIEVE:
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
					slot = EmitNextMatch(node);
					if (node->gj_Timing)
						node->gj_EmitMs += ElapsedMs(start);
					if (slot != NULL)
						return slot;
					node->gj_JoinState = GJ_RETRIEVE;
					break;
				}

			case GJ_FILL_OUTER:
				{
					TupleTableSlot *slot = EmitNextUnmatched(node, true, -1);

					if (slot != NULL)
						return slot;
					node->gj_JoinState = GJ_LOAD_OUTER;
					break;
				}

			case GJ_FILL_INNER:
				{
					TupleTableSlot *slot = EmitNextUnmatched(node, false, -1);

					if (slot != NULL)
						return slot;
					node->gj_JoinState = GJ_DONE;
					break;
				}

			case GJ_DONE:
				return NULL;

			default:
				elog(ERROR, "unrecognized gpujoin state: %d", node->gj_JoinState);
		}
	}
}

/*
 * EndCustomScan callback
 */
static void
EndGpuJoin(CustomScanState *css)
{
	GpuJoinState *node = (GpuJoinState *) css;

	GpuJoinDeviceClose(&node->gj_Device);
	EndOuterParts(node);
	ExecEndNode(node->gj_Outer.ps);
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
	if (css->ss.ps.chgParam != NULL)
	{
		UpdateChangedParamSet(outer_ps, css->ss.ps.chgParam);
		UpdateChangedParamSet(inner_ps, css->ss.ps.chgParam);
	}

	if (!node->gj_TableBuilt || inner_ps->chgParam != NULL ||
		bms_overlap(css->ss.ps.chgParam, node->gj_InnerParams))
	{
		node->gj_JoinState = GJ_LOAD_INNER;
		if (inner_ps->chgParam == NULL)
			ExecReScan(inner_ps);
	}
	else if (node->gj_NumParts > 1)
	{
		/* the table holds the last partition: partition the outer side again */
		node->gj_JoinState = GJ_PARTITION_OUTER;
	}
	else
		node->gj_JoinState = GJ_LOAD_OUTER;
	EndOuterParts(node);

	ResetSide(&node->gj_Outer);
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
	if (outer_ps->chgParam == NULL)
		ExecReScan(outer_ps);
}

/*
 * Show a label's count the way explain.c shows "Rows Removed by ..."
 */
static void
ShowRowsRemoved(const char *qlabel, CustomScanState *css, ExplainState *es)
{
	Instrumentation *instr = css->ss.ps.instrument;
	double		nloops;

	if (instr == NULL)
		return;
	nloops = instr->nloops;
	if (instr->nfiltered2 > 0 || es->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyFloat(qlabel, NULL,
							 nloops > 0 ? instr->nfiltered2 / nloops : 0.0, 0, es);
}

/*
 * Show expressions the way explain.c's show_qual does
 */
static void
ShowExprs(const char *qlabel, List *exprs, List *context, bool useprefix,
		  ExplainState *es)
{
	char	   *exprstr;

	if (exprs == NIL)
		return;
	exprstr = deparse_expression((Node *) make_ands_explicit(exprs), context,
								 useprefix, false);
	ExplainPropertyText(qlabel, exprstr, es);
}

/*
 * What this process's run of the node would show in EXPLAIN ANALYZE
 */
static void
CollectCounters(GpuJoinState *node, GpuJoinCounters *c)
{
	const char *device;

	memset(c, 0, sizeof(*c));
	c->processes = node->gj_Runs;
	c->num_parts = node->gj_NumParts;
	c->chunks = node->gj_Chunks;
	c->inner_rows = node->gj_InnerRows;
	c->outer_rows = node->gj_OuterRows;
	c->matches = node->gj_Matches;
	c->load_ms = node->gj_LoadMs;
	c->emit_ms = node->gj_EmitMs;
	GpuJoinDeviceStats(&node->gj_Device, &c->stats);

	if (node->gj_Device.kernels == NULL)
		device = "";			/* not run (yet): see DeviceText */
	else if (node->gj_CpuParts > 0 && node->gj_NumParts > 1)
		device = psprintf("%s; %d partition%s joined on the CPU (out of device memory)",
						  GpuJoinDescribeDevice(NULL), node->gj_CpuParts,
						  node->gj_CpuParts == 1 ? "" : "s");
	else if (node->gj_CpuParts > 0)
		device = psprintf("CPU (fell back from %s: out of device memory)",
						  node->gj_FellBackFrom);
	else
		device = GpuJoinDescribeDevice(node->gj_Device.kernels);
	strlcpy(c->device, device, sizeof(c->device));
}

/*
 * The Device line of one process's counters; for one whose node has not
 * opened a device, the device it would use (asked only here, in the leader,
 * which has probed it while planning: a worker must not open the GPU just
 * to describe it)
 */
static const char *
DeviceText(const GpuJoinCounters *c)
{
	return c->device[0] != '\0' ? c->device : GpuJoinDescribeDevice(NULL);
}

/* Add one process's counters to a sum */
static void
AddCounters(GpuJoinCounters *sum, const GpuJoinCounters *add)
{
	sum->processes += add->processes;
	sum->num_parts = Max(sum->num_parts, add->num_parts);
	sum->chunks += add->chunks;
	sum->inner_rows += add->inner_rows;
	sum->outer_rows += add->outer_rows;
	sum->matches += add->matches;
	sum->load_ms += add->load_ms;
	sum->emit_ms += add->emit_ms;
	GpuJoinAddStats(&sum->stats, &add->stats);
}

/*
 * The leader: take the counters the workers have left in shared memory,
 * and clear their slots for the next launch (a rescan of the Gather)
 */
static void
CollectWorkerCounters(GpuJoinState *node)
{
	GpuJoinShared *shared = node->gj_Shared;
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
static Size
EstimateGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt)
{
	return add_size(offsetof(GpuJoinShared, workers),
					mul_size(pcxt->nworkers, sizeof(GpuJoinCounters)));
}

/*
 * InitializeDSMCustomScan callback (the leader, before the workers start)
 */
static void
InitializeGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt, void *coordinate)
{
	GpuJoinState *node = (GpuJoinState *) css;
	GpuJoinShared *shared = (GpuJoinShared *) coordinate;

	SpinLockInit(&shared->mutex);
	shared->nworkers = pcxt->nworkers;
	memset(shared->workers, 0, pcxt->nworkers * sizeof(GpuJoinCounters));
	node->gj_Shared = shared;
}

/*
 * ReInitializeDSMCustomScan callback: the Gather is rescanned and will
 * start new workers; keep what the last ones left
 */
static void
ReInitializeGpuJoinDSM(CustomScanState *css, ParallelContext *pcxt, void *coordinate)
{
	GpuJoinState *node = (GpuJoinState *) css;

	node->gj_Shared = (GpuJoinShared *) coordinate;
	CollectWorkerCounters(node);
}

/*
 * InitializeWorkerCustomScan callback
 */
static void
InitializeGpuJoinWorker(CustomScanState *css, shm_toc *toc, void *coordinate)
{
	((GpuJoinState *) css)->gj_Shared = (GpuJoinShared *) coordinate;
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
static void
ShutdownGpuJoin(CustomScanState *css)
{
	GpuJoinState *node = (GpuJoinState *) css;

	if (node->gj_Shared == NULL)
		return;
	if (IsParallelWorker())
	{
		GpuJoinCounters c;

		Assert(ParallelWorkerNumber < node->gj_Shared->nworkers);
		CollectCounters(node, &c);
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

/*
 * The Device line of a parallel run: each distinct device description of
 * the participants, with how many had it
 */
static const char *
DescribeParticipants(const GpuJoinCounters *leader, List *workers)
{
	List	   *all = NIL;
	List	   *names = NIL;
	List	   *counts = NIL;
	StringInfoData out;
	ListCell   *lc;

	if (leader->processes > 0)
		all = lappend(all, (void *) leader);
	all = list_concat(all, workers);
	foreach(lc, all)
	{
		const GpuJoinCounters *c = lfirst(lc);
		int			i = 0;
		ListCell   *ln;

		foreach(ln, names)
		{
			if (strcmp(lfirst(ln), DeviceText(c)) == 0)
				break;
			i++;
		}
		if (i < list_length(names))
			list_nth_cell(counts, i)->int_value++;
		else
		{
			names = lappend(names, (void *) DeviceText(c));
			counts = lappend_int(counts, 1);
		}
	}
	if (list_length(names) == 1)
		return linitial(names);

	initStringInfo(&out);
	for (int i = 0; i < list_length(names); i++)
		appendStringInfo(&out, "%s%s (%d participant%s)", i > 0 ? "; " : "",
						 (char *) list_nth(names, i), list_nth_int(counts, i),
						 list_nth_int(counts, i) == 1 ? "" : "s");
	return out.data;
}

/*
 * ExplainCustomScan callback
 *
 * Plain EXPLAIN: the keys, the rechecked quals and the device.  ANALYZE adds
 * chunks, rows and matches; the bus traffic (hardware-specific, hidden with
 * gpujoin.explain_device = off); and, with TIMING, the time per phase.  A
 * parallel join shows the sums over its processes (Participants), the
 * largest device memory one of them held, and the most partitions one made.
 */
static void
ExplainGpuJoin(CustomScanState *css, List *ancestors, ExplainState *es)
{
	GpuJoinState *node = (GpuJoinState *) css;
	CustomScan *cscan = (CustomScan *) css->ss.ps.plan;
	List	   *join_quals = list_nth(cscan->custom_exprs, GpuJoinExprsJoinQuals);
	bool		parallel = cscan->scan.plan.parallel_aware && es->analyze;
	GpuJoinCounters leader;
	GpuJoinCounters total;
	List	   *context;
	bool		useprefix;
	ListCell   *lc;

	context = set_deparse_context_plan(es->deparse_cxt, (Plan *) cscan, ancestors);
	useprefix = list_length(es->rtable) > 1 || es->verbose;

	CollectCounters(node, &leader);
	total = leader;
	foreach(lc, node->gj_Workers)
		AddCounters(&total, lfirst(lc));

	ShowExprs(node->gj_Strategy == GPUJOIN_STRATEGY_MERGE ? "Merge Cond" :
			  node->gj_Strategy == GPUJOIN_STRATEGY_THETA ? "Join Cond" : "Hash Cond",
			  list_nth(cscan->custom_exprs, GpuJoinExprsKeyClauses),
			  context, useprefix, es);
	if (node->gj_JoinType != JOIN_INNER)
	{
		static const char *const names[] = {
			[JOIN_LEFT] = "Left", [JOIN_FULL] = "Full", [JOIN_RIGHT] = "Right",
			[JOIN_SEMI] = "Semi", [JOIN_ANTI] = "Anti",
		};

		ExplainPropertyText("Join Type", names[node->gj_JoinType], es);
	}
	ExplainPropertyText("Variant", GpuJoinVariantName(node->gj_Spec.variant,
													  node->gj_Spec.materialize), es);
	if (es->verbose)
		ExplainPropertyText("Variants Considered",
							strVal(list_nth(cscan->custom_private, GpuJoinPrivateConsidered)),
							es);
	ShowExprs("Join Filter", join_quals, context, useprefix, es);
	if (join_quals != NIL && es->analyze)
		ShowRowsRemoved("Rows Removed by Join Filter", css, es);

	if (gpujoin_explain_device)
		ExplainPropertyText("Device", node->gj_Workers != NIL ?
							DescribeParticipants(&leader, node->gj_Workers) :
							DeviceText(&leader), es);

	if (!es->analyze)
		return;

	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		appendStringInfoSpaces(es->str, es->indent * 2);
		if (parallel)
			appendStringInfo(es->str, "Participants: %d  ", total.processes);
		if (total.num_parts > 1)
			appendStringInfo(es->str, "Partitions: %d  ", total.num_parts);
		appendStringInfo(es->str,
						 "Chunks: " INT64_FORMAT "  Inner Rows: " INT64_FORMAT
						 "  Outer Rows: " INT64_FORMAT "  Matches: " INT64_FORMAT "\n",
						 total.chunks, total.inner_rows,
						 total.outer_rows, total.matches);
	}
	else
	{
		if (parallel)
			ExplainPropertyInteger("Participants", NULL, total.processes, es);
		ExplainPropertyInteger("Partitions", NULL, total.num_parts, es);
		ExplainPropertyInteger("Chunks", NULL, total.chunks, es);
		ExplainPropertyInteger("Inner Rows", NULL, total.inner_rows, es);
		ExplainPropertyInteger("Outer Rows", NULL, total.outer_rows, es);
		ExplainPropertyInteger("Matches", NULL, total.matches, es);
	}

	if (total.stats.detail[0] != '\0')
		ExplainPropertyText("Kernels", total.stats.detail, es);

	if (gpujoin_explain_device)
	{
		int64		to_kb = (total.stats.bytes_to_device + 1023) / 1024;
		int64		from_kb = (total.stats.bytes_from_device + 1023) / 1024;
		int64		peak_kb = (total.stats.device_memory_peak + 1023) / 1024;

		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str,
							 "Transfer: to device " INT64_FORMAT "kB  from device " INT64_FORMAT
							 "kB  Device Memory: " INT64_FORMAT "kB\n",
							 to_kb, from_kb, peak_kb);
		}
		else
		{
			ExplainPropertyInteger("Transfer To Device", "kB", to_kb, es);
			ExplainPropertyInteger("Transfer From Device", "kB", from_kb, es);
			ExplainPropertyInteger("Device Memory", "kB", peak_kb, es);
		}
	}

	if (es->timing)
	{
		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str,
							 "Time: load=%.3f transfer=%.3f build=%.3f probe=%.3f materialize=%.3f emit=%.3f ms\n",
							 total.load_ms, total.stats.transfer_ms, total.stats.build_ms,
							 total.stats.probe_ms, total.stats.materialize_ms, total.emit_ms);
		}
		else
		{
			ExplainPropertyFloat("Load Time", "ms", total.load_ms, 3, es);
			ExplainPropertyFloat("Transfer Time", "ms", total.stats.transfer_ms, 3, es);
			ExplainPropertyFloat("Build Time", "ms", total.stats.build_ms, 3, es);
			ExplainPropertyFloat("Probe Time", "ms", total.stats.probe_ms, 3, es);
			ExplainPropertyFloat("Materialize Time", "ms", total.stats.materialize_ms, 3, es);
			ExplainPropertyFloat("Emit Time", "ms", total.emit_ms, 3, es);
		}
	}
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
}
