/*-------------------------------------------------------------------------
 *
 * exec_batch.c
 *	  Reading a side of a GpuJoin into a column batch: its columns and join keys
 *
 * A column batch keeps, for each side, only the columns referenced above the
 * join (targetlist and quals).  Fixed-width pass-by-value columns (int2/4/8,
 * float4/8, date, timestamp, bool, ...) are "device columns": packed arrays
 * of their 1, 2, 4 or 8 bytes that travel to the device, where the chosen
 * variant (NPHJ, PHJ or SMJ) materializes them for every match, by GFTR or
 * GFUR (Wu et al. 2025, §4); the matched values come back column
 * by column.  The other columns (text, numeric, ...) are "host columns":
 * arrays of Datums, by-reference values copied into the batch's memory
 * context (the child's slot is reused for its next row), reached through
 * the row numbers the device returns with each match.
 *
 * The inner side is read whole (GpuJoinLoadInner), the outer side a chunk
 * at a time (GpuJoinLoadOuterChunk, from its plan or from a partition's
 * tuplestore); each row's join keys are packed into one uint64 (keys.c), or
 * for a theta join into the ranges or terms the theta kernels compare.
 *
 * IDENTIFICATION
 *	  src/exec_batch.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tupmacs.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "exec.h"
#include "nodes/nodeFuncs.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

static void FreePinned(void *arg);

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

static GpuJoinDict *DictCreate(MemoryContext parent);

/*
 * Whether a join's side read as heap pages takes its numeric columns of
 * declared scale to the device as scaled integers, which the deform
 * converts (exec_heap.c) and the emission turns back into numerics
 * (exec_emit.c's DeviceDatum): where they are all the host columns it would
 * have (tlist, needed: as GpuJoinInitSide takes them), so that its tuples
 * need be neither deformed on the host nor fetched again by tid for them.
 * A side with a text column keeps its numerics on the host as well: they
 * come with the tuple the text is taken from.
 */
bool
GpuJoinHeapNumericsOnDevice(List *tlist, int scan_offset, Bitmapset *needed)
{
	int			ndevice = 0;
	int			nnumeric = 0;
	int			i = 0;
	ListCell   *lc;

	if (!gpujoin_deform_numeric)
		return false;
	foreach(lc, tlist)
	{
		Node	   *expr = (Node *) lfirst_node(TargetEntry, lc)->expr;
		int16		typlen;
		bool		typbyval;

		i++;
		if (!bms_is_member(scan_offset + i - FirstLowInvalidHeapAttributeNumber, needed))
			continue;
		get_typlenbyval(exprType(expr), &typlen, &typbyval);
		if (GpuJoinIsDeviceType(typlen, typbyval) && ndevice < GJ_MAX_COLUMNS)
			ndevice++;
		else if (IsA(expr, Var) && GpuJoinNumericScale(expr) >= 0)
			nnumeric++;
		else
			return false;
	}
	return nnumeric > 0 && ndevice + nnumeric <= GJ_MAX_COLUMNS;
}

/*
 * Set up one side: which of its columns to keep and where, how to compute
 * its keys
 *
 * needed holds the scan tuple columns referenced above the join, offset by
 * FirstLowInvalidHeapAttributeNumber as pull_varattnos leaves them.
 */
void
GpuJoinInitSide(GpuJoinState *node, GpuJoinSide *side, PlanState *ps, List *tlist,
				bool heap, int scan_offset, Bitmapset *needed, List *key_args,
				List *key_clauses, List *codings, int varno, int64 max_rows,
				bool scaled_numeric, bool text_codes)
{
	int			natts = list_length(tlist);
	int			nkeys = list_length(key_args);
	SideVarsContext context;
	int			i;

	side->ps = ps;
	side->max_rows = max_rows;
	side->columns = palloc(sizeof(GpuJoinColumn) * Max(natts, 1));
	side->ncolumns = 0;
	side->ndevice = 0;
	side->nscaled = 0;
	side->ndict = 0;
	side->nhost = 0;
	side->maxattno = 0;

	for (i = 1; i <= natts; i++)
	{
		TargetEntry *tle = list_nth_node(TargetEntry, tlist, i - 1);
		GpuJoinColumn *col = &side->columns[side->ncolumns];

		if (!bms_is_member(scan_offset + i - FirstLowInvalidHeapAttributeNumber, needed))
			continue;
		/* the child's column i, or a heap side's attribute */
		col->attno = heap ? castNode(Var, tle->expr)->varattno : i;
		col->scan_att = scan_offset + i - 1;
		get_typlenbyval(exprType((Node *) tle->expr), &col->typlen, &col->typbyval);
		col->scale = scaled_numeric ? GpuJoinNumericScale((Node *) tle->expr) : -1;
		col->dict = NULL;
		col->host = -1;

		/*
		 * Fixed-width pass-by-value columns go to the device, as raw bytes;
		 * numeric columns of declared scale (a GpuPreAgg's, which its
		 * aggregates and group keys read, planner_expr.c, or a join's heap
		 * side's: GpuJoinHeapNumericsOnDevice) as their values times
		 * 10^scale, and a GpuPreAgg's text columns, which only its group
		 * keys read (planner_agg.c), as codes of their values: both
		 * numbered below
		 */
		if (text_codes && GpuJoinDictType(exprType((Node *) tle->expr)))
			col->dict = DictCreate(node->css.ss.ps.state->es_query_cxt);
		if (GpuJoinIsDeviceType(col->typlen, col->typbyval) && side->ndevice < GJ_MAX_COLUMNS)
			col->device = side->ndevice++;
		else if (GpuJoinColumnConverted(col))
		{
			col->typlen = sizeof(int64);
			col->typbyval = true;
			side->nscaled++;
			if (col->dict != NULL)
				side->ndict++;
		}
		else
		{
			col->device = -1;
			col->host = side->nhost++;
		}
		side->maxattno = Max(side->maxattno, col->attno);
		side->ncolumns++;
	}

	/*
	 * The scaled numerics after the raw columns, so that a heap side's
	 * deform writes those and the host these (exec_heap.c)
	 */
	if (side->ndevice + side->nscaled > GJ_MAX_COLUMNS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gpujoin: a side of a GpuPreAgg has more than %d columns for the device",
						GJ_MAX_COLUMNS),
				 errhint("Set gpujoin.enable_preagg = off for this query.")));
	/* the numerics first, then the text codes: a heap side's deform may
	 * convert the numerics too (exec_heap.c), never the codes */
	for (i = 0; i < side->ncolumns; i++)
		if (GpuJoinColumnConverted(&side->columns[i]) && side->columns[i].dict == NULL)
			side->columns[i].device = side->ndevice++;
	for (i = 0; i < side->ncolumns; i++)
		if (GpuJoinColumnConverted(&side->columns[i]) && side->columns[i].dict != NULL)
			side->columns[i].device = side->ndevice++;

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
			/* a heap side's attribute, not its position in the tlist */
			if (heap)
				side->key_attnos[i] = castNode(Var, list_nth_node(TargetEntry, tlist,
																  side->key_attnos[i] - 1)->expr)->varattno;
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

	/*
	 * The side's page-locked blocks go back with the node's memory, which
	 * outlives cxt's resets.  Armed now, before the node's device context
	 * (GpuJoinDeviceInit), so that they go after it: a memory context's
	 * callbacks run newest first, and the device context's waits for its
	 * stream, so that no copy queued into a block (the deform's rows) is
	 * still running when the block is given back after an error.
	 */
	side->pinned_callback.func = FreePinned;
	side->pinned_callback.arg = side;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &side->pinned_callback);
}

/*
 * Describe a side's device columns in a join spec
 */
void
GpuJoinSpecColumns(const GpuJoinSide *side, int32_t *ncolumns, int32_t *widths)
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
void
GpuJoinResetSide(GpuJoinSide *side)
{
	MemoryContextReset(side->cxt);
	for (int i = 0; i < side->npinned; i++)
		side->pinned[i].used = false;
	side->nrows = 0;
	side->capacity = 0;
	memset(side->device_values, 0, sizeof(side->device_values));
	memset(side->device_nulls, 0, sizeof(side->device_nulls));
	side->host_values = NULL;
	side->host_isnull = NULL;
	side->tids = NULL;
	side->keys = NULL;
	side->keynulls = NULL;
	side->keys_hi = NULL;
	memset(side->terms, 0, sizeof(side->terms));
	memset(side->term_nulls, 0, sizeof(side->term_nulls));
	side->heap_null_columns = 0;
	side->heap_key_nulls = 0;
}

/*
 * Memory of a side's arrays that cross the bus: the device values and
 * their NULL flags, the keys, bounds and terms.  It is the kernels'
 * staging memory (pinned.c): on a GPU page-locked host memory, which
 * copies to and from the device reach at the bus's full speed, with no
 * bounce through the driver's buffers (a heap side's deform writes its
 * columns there, and the join ships them from there).  A side keeps its
 * blocks when the batch is emptied, for the next chunk's arrays, and gives
 * them back to pinned.c when the node's memory goes (FreePinned); on the
 * CPU twin it is plain memory, handled the same way, so that CI runs this
 * code.  Where the kernels have none to give, the arrays are memory of
 * cxt, as the host columns always are.
 */
static void
FreePinned(void *arg)
{
	GpuJoinSide *side = (GpuJoinSide *) arg;

	for (int i = 0; i < side->npinned; i++)
		GpuJoinPinnedFree(side->stage_kernels, side->pinned[i].ptr, side->pinned[i].size);
	side->npinned = 0;
}

/* Give block i of the side's back */
static void
DropPinned(GpuJoinSide *side, int i)
{
	GpuJoinPinnedFree(side->stage_kernels, side->pinned[i].ptr, side->pinned[i].size);
	side->pinned[i] = side->pinned[--side->npinned];
}

/* An array of a side's batch in cxt, where the kernels give no memory */
static void *
AllocInCxt(GpuJoinSide *side, Size size, bool zero)
{
	return MemoryContextAllocExtended(side->cxt, Max(size, 1),
									  MCXT_ALLOC_HUGE | (zero ? MCXT_ALLOC_ZERO : 0));
}

/*
 * size bytes for an array of a side's batch (zeroed when zero is true):
 * the smallest of the side's free blocks that holds them, else a new one
 */
void *
GpuJoinSideAlloc(GpuJoinSide *side, Size size, bool zero)
{
	GpuJoinPinned *best = NULL;
	void	   *ptr = NULL;
	Size		got;

	if (side->stage_kernels == NULL)
		return AllocInCxt(side, size, zero);
	for (int i = 0; i < side->npinned; i++)
	{
		GpuJoinPinned *p = &side->pinned[i];

		if (!p->used && p->size >= size && (best == NULL || p->size < best->size))
			best = p;
	}
	if (best == NULL)
	{
		/* the side's free blocks are all too small: make room for one more */
		for (int i = side->npinned - 1; i >= 0 && side->npinned == GJ_SIDE_MAX_PINNED; i--)
			if (!side->pinned[i].used)
				DropPinned(side, i);
		if (side->npinned < GJ_SIDE_MAX_PINNED)
			ptr = GpuJoinPinnedAlloc(side->stage_kernels, size, &got);
		if (ptr == NULL)
			return AllocInCxt(side, size, zero);
		best = &side->pinned[side->npinned++];
		best->ptr = ptr;
		best->size = got;
	}
	best->used = true;
	if (zero)
		memset(best->ptr, 0, size);
	return best->ptr;
}

/* Free an array GpuJoinSideAlloc gave */
void
GpuJoinSideFree(GpuJoinSide *side, void *ptr)
{
	for (int i = 0; i < side->npinned; i++)
	{
		if (side->pinned[i].ptr == ptr)
		{
			DropPinned(side, i);
			return;
		}
	}
	pfree(ptr);
}

/*
 * Allocate (old == NULL) or enlarge an array of a batch whose every row
 * AppendRow writes: the new bytes are left as they are (zeroing them first
 * would be one more pass over the batch)
 */
static void *
GrowValues(GpuJoinSide *side, void *old, Size oldsize, Size newsize)
{
	void	   *array;

	if (old == NULL)
		return GpuJoinSideAlloc(side, newsize, false);
	if (side->stage_kernels == NULL)
		return repalloc_huge(old, newsize);
	array = GpuJoinSideAlloc(side, newsize, false);
	memcpy(array, old, oldsize);
	GpuJoinSideFree(side, old);
	return array;
}

/*
 * Allocate (old == NULL) or enlarge a flag array of a batch, set only for
 * the rows flagged; new bytes are zero
 */
static void *
GrowArray(GpuJoinSide *side, void *old, Size oldsize, Size newsize)
{
	char	   *array;

	if (old == NULL)
		return GpuJoinSideAlloc(side, newsize, true);
	array = GrowValues(side, old, oldsize, newsize);
	memset(array + oldsize, 0, newsize - oldsize);
	return array;
}

/* Allocate or enlarge an array of host memory, in cxt */
void *
GpuJoinGrowHostArray(MemoryContext cxt, void *old, Size newsize)
{
	if (old == NULL)
		return MemoryContextAllocExtended(cxt, newsize, MCXT_ALLOC_HUGE);
	return repalloc_huge(old, newsize);
}

/*
 * Make room for more rows in a side's batch
 */
void
GpuJoinGrowSide(GpuJoinSide *side)
{
	int64		oldcap = side->capacity;

	GpuJoinReserveSide(side, Min((oldcap == 0) ? GJ_INITIAL_BATCH_ROWS : oldcap * 2,
								 side->max_rows));
}

/*
 * The bytes a row takes in a side's staging arrays, each device column and
 * key with its NULL flags (a side read as heap pages has them all), and how
 * many arrays that is
 */
Size
GpuJoinSideRowBytes(const GpuJoinSide *side, int *narrays)
{
	Size		bytes = sizeof(uint64) + 1;

	*narrays = 2;
	for (int i = 0; i < side->ncolumns; i++)
		if (side->columns[i].device >= 0)
		{
			bytes += side->columns[i].typlen + 1;
			*narrays += 2;
		}
	if (side->wants_keys_hi)
	{
		bytes += sizeof(uint64);
		*narrays += 1;
	}
	bytes += (Size) side->nterms * (sizeof(uint64) + 1);
	*narrays += 2 * side->nterms;
	return bytes;
}

/*
 * Make room for newcap rows in a side's batch (no less than it has)
 */
void
GpuJoinReserveSide(GpuJoinSide *side, int64 newcap)
{
	int64		oldcap = side->capacity;

	if (newcap <= oldcap)
		return;

	if (side->host_by_tid)
		side->tids = GpuJoinGrowHostArray(side->cxt, side->tids, newcap * sizeof(ItemPointerData));
	else if (oldcap == 0 && side->nhost > 0)
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

			side->device_values[d] = GrowValues(side, side->device_values[d],
												oldcap * col->typlen, newcap * col->typlen);
			if (side->device_nulls[d] != NULL)
				side->device_nulls[d] = GrowArray(side, side->device_nulls[d],
												  oldcap, newcap);
		}
		else if (!side->host_by_tid)
		{
			int			h = col->host;

			side->host_values[h] = GpuJoinGrowHostArray(side->cxt, side->host_values[h],
												 newcap * sizeof(Datum));
			side->host_isnull[h] = GpuJoinGrowHostArray(side->cxt, side->host_isnull[h],
												 newcap * sizeof(bool));
		}
	}
	side->keys = GrowValues(side, side->keys, oldcap * sizeof(uint64), newcap * sizeof(uint64));
	if (side->keynulls != NULL)
		side->keynulls = GrowArray(side, side->keynulls, oldcap, newcap);
	if (side->wants_keys_hi)
		side->keys_hi = GrowValues(side, side->keys_hi, oldcap * sizeof(uint64),
								   newcap * sizeof(uint64));
	for (int t = 0; t < side->nterms; t++)
	{
		side->terms[t] = GrowValues(side, side->terms[t], oldcap * sizeof(uint64),
									newcap * sizeof(uint64));
		if (side->term_nulls[t] != NULL)
			side->term_nulls[t] = GrowArray(side, side->term_nulls[t], oldcap, newcap);
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

/*
 * The key of a join of one key clause, from that clause's value on a side,
 * as the side's rows encode and pack it (GpuJoinRowKey) into *key; false
 * when the value can match nothing.  In the node's per-tuple memory, which
 * the caller resets.
 */
bool
GpuJoinEncodeKey(GpuJoinState *node, GpuJoinSide *side, Datum value, uint64 *key)
{
	int64		result;

	Assert(node->gj_NumKeys == 1);
	if (!KeyValue(node, side, 0, value, &result))
		return false;
	*key = GpuJoinPackKeys(&result, node->gj_KeyBits, 1, node->gj_KeyExact);
	return true;
}

/* Mark row's value NULL in a lazily allocated flag array */
static inline void
SetNullFlag(GpuJoinSide *side, uint8 **flags, int64 row)
{
	if (*flags == NULL)
		*flags = GpuJoinSideAlloc(side, side->capacity, true);
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
bool
GpuJoinRowKey(GpuJoinState *node, GpuJoinSide *side, TupleTableSlot *slot, uint64 *key)
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
 * The packed equi-join key of the slot's row into row of the side's batch;
 * false when it is NULL or beyond the other side's range, and the row then
 * flagged in keynulls: NULL never equals anything, and the kernels skip it
 */
bool
GpuJoinStoreRowKey(GpuJoinState *node, GpuJoinSide *side, TupleTableSlot *slot, int64 row)
{
	if (GpuJoinRowKey(node, side, slot, &side->keys[row]))
		return true;
	SetNullFlag(side, &side->keynulls, row);
	side->keys[row] = 0;
	return false;
}

/*
 * A host column's value in row row of the side's batch; a by-reference
 * value is copied into the batch's memory, as its source goes on
 */
void
GpuJoinStoreHostValue(GpuJoinSide *side, const GpuJoinColumn *col, int64 row,
					  Datum value, bool isnull)
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

/* ----------------------------------------------------------------
 *		Text group keys as codes
 * ----------------------------------------------------------------
 */

/*
 * A GpuPreAgg's text column goes to the device as a number per distinct
 * value.  A value of at most GJ_TEXT_WORD_MAX_BYTES bytes is its own
 * number, its bytes packed in a negative word (gj_text_word), which the
 * heap deform makes on the device just as GpuJoinDictCode makes it here;
 * a longer one gets a code 0, 1, 2 ... from the values met so far, each
 * once, and an open-addressing table from a value's bytes to its number.
 * A word comes back as a value through a table of the words decoded so
 * far (words_decoded: each value made once, kept with the codes'), for a
 * group's key and for every emitted row alike.  Values that are the same bytes
 * (detoasted) share a code, and are equal for every collation; values that
 * differ in bytes but compare equal (char(n)'s trailing blanks, a
 * nondeterministic collation) get codes of their own, so their groups come
 * out as separate rows of partial aggregates, which Finalize Aggregate
 * groups as PostgreSQL compares them.  The codes are this process's alone.
 */
struct GpuJoinDict
{
	MemoryContext cxt;
	int64		nvalues;
	int64		capacity;		/* of values */
	Datum	   *values;			/* by code: the value, detoasted, copied */
	uint32	   *hashes;			/* by code */
	int64		nslots;			/* a power of 2, at least twice nvalues */
	int64	   *slots;			/* a code + 1, or 0 for an empty slot */
	HTAB	   *words_decoded;	/* gj_text_word -> DecodedWord, made when needed */
};

/* A short value's word and the value, in words_decoded */
typedef struct DecodedWord
{
	int64		word;			/* the hash key */
	Datum		value;
} DecodedWord;

static GpuJoinDict *
DictCreate(MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "GpuJoin text codes",
											  ALLOCSET_DEFAULT_SIZES);
	GpuJoinDict *dict = MemoryContextAllocZero(cxt, sizeof(GpuJoinDict));

	dict->cxt = cxt;
	dict->capacity = 256;
	dict->values = MemoryContextAlloc(cxt, sizeof(Datum) * dict->capacity);
	dict->hashes = MemoryContextAlloc(cxt, sizeof(uint32) * dict->capacity);
	dict->nslots = 512;
	dict->slots = MemoryContextAllocZero(cxt, sizeof(int64) * dict->nslots);
	return dict;
}

/* The slot of bytes p (len, hash h): its code's, or the empty one it would take */
static int64
DictSlot(const GpuJoinDict *dict, const char *p, Size len, uint32 h)
{
	int64		mask = dict->nslots - 1;

	for (int64 s = h & mask;; s = (s + 1) & mask)
	{
		int64		code = dict->slots[s] - 1;
		const struct varlena *v;

		if (code < 0)
			return s;
		v = (const struct varlena *) DatumGetPointer(dict->values[code]);
		if (dict->hashes[code] == h && VARSIZE_ANY_EXHDR(v) == len &&
			memcmp(VARDATA_ANY(v), p, len) == 0)
			return s;
	}
}

/* A text value's code (its word, when short), the value taken in when new */
int64
GpuJoinDictCode(GpuJoinDict *dict, Datum value)
{
	struct varlena *v = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(value));
	const char *p = VARDATA_ANY(v);
	Size		len = VARSIZE_ANY_EXHDR(v);
	uint32		h;
	int64		s;
	int64		code;

	if (len <= GJ_TEXT_WORD_MAX_BYTES)
	{
		code = gj_text_word(p, (int64_t) len);
		if ((Pointer) v != DatumGetPointer(value))
			pfree(v);
		return code;
	}
	h = DatumGetUInt32(hash_any((const unsigned char *) p, (int) len));
	s = DictSlot(dict, p, len, h);
	if (dict->slots[s] != 0)
		return dict->slots[s] - 1;
	if (dict->nvalues == dict->capacity)
	{
		dict->capacity *= 2;
		dict->values = repalloc_huge(dict->values, sizeof(Datum) * dict->capacity);
		dict->hashes = repalloc_huge(dict->hashes, sizeof(uint32) * dict->capacity);
	}
	code = dict->nvalues++;
	dict->values[code] = datumCopy(PointerGetDatum(v), false, -1);
	dict->hashes[code] = h;
	dict->slots[s] = code + 1;
	if (dict->nvalues * 2 > dict->nslots)
	{
		/* twice the slots, every code placed again */
		pfree(dict->slots);
		dict->nslots *= 2;
		dict->slots = MemoryContextAllocExtended(dict->cxt, sizeof(int64) * dict->nslots,
												  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
		for (int64 c = 0; c < dict->nvalues; c++)
		{
			const struct varlena *cv = (const struct varlena *) DatumGetPointer(dict->values[c]);

			dict->slots[DictSlot(dict, VARDATA_ANY(cv), VARSIZE_ANY_EXHDR(cv),
								 dict->hashes[c])] = c + 1;
		}
	}
	if ((Pointer) v != DatumGetPointer(value))
		pfree(v);
	return code;
}

/* The value of a code GpuJoinDictCode or the deform gave */
Datum
GpuJoinDictValue(GpuJoinDict *dict, int64 code)
{
	if (gj_is_text_word(code))
	{
		DecodedWord *entry;
		bool		found;

		if (dict->words_decoded == NULL)
		{
			HASHCTL		ctl;

			ctl.keysize = sizeof(int64);
			ctl.entrysize = sizeof(DecodedWord);
			ctl.hcxt = dict->cxt;
			dict->words_decoded = hash_create("GpuJoin text words", 256, &ctl,
											  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		}
		entry = hash_search(dict->words_decoded, &code, HASH_ENTER, &found);
		if (!found)
		{
			char		bytes[GJ_TEXT_WORD_MAX_BYTES];
			int			len = gj_text_word_bytes(code, bytes);
			text	   *t = MemoryContextAlloc(dict->cxt, VARHDRSZ + len);

			SET_VARSIZE(t, VARHDRSZ + len);
			memcpy(VARDATA(t), bytes, len);
			entry->value = PointerGetDatum(t);
		}
		return entry->value;
	}
	if (code < 0 || code >= dict->nvalues)
		elog(ERROR, "gpujoin: text code " INT64_FORMAT " of " INT64_FORMAT, code, dict->nvalues);
	return dict->values[code];
}

/*
 * A device column's value in row row of the side's batch: the bytes of the
 * value, as heap tuples store it (tupmacs.h), a numeric's scaled integer or
 * a text's code
 */
void
GpuJoinStoreDeviceValue(GpuJoinSide *side, const GpuJoinColumn *col, int64 row,
						Datum value, bool isnull)
{
	int			d = col->device;

	if (isnull)
	{
		if (side->device_nulls[d] == NULL)
			side->device_nulls[d] = GpuJoinSideAlloc(side, side->capacity, true);
		side->device_nulls[d][row] = 1;
		/* defined bytes for the device to carry (never read as a value) */
		memset(side->device_values[d] + row * col->typlen, 0, col->typlen);
	}
	else if (col->scale >= 0)
	{
		int64		scaled = GpuJoinNumericScaled(value, col->scale);

		memcpy(side->device_values[d] + row * sizeof(int64), &scaled, sizeof(int64));
	}
	else if (col->dict != NULL)
	{
		int64		code = GpuJoinDictCode(col->dict, value);

		memcpy(side->device_values[d] + row * sizeof(int64), &code, sizeof(int64));
	}
	else
		store_att_byval(side->device_values[d] + row * col->typlen, value, col->typlen);
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
		GpuJoinGrowSide(side);
	row = side->nrows++;

	slot_getsomeattrs(slot, side->maxattno);

	for (int i = 0; i < side->ncolumns; i++)
	{
		const GpuJoinColumn *col = &side->columns[i];
		Datum		value = slot->tts_values[col->attno - 1];
		bool		isnull = slot->tts_isnull[col->attno - 1];

		if (col->device >= 0)
			GpuJoinStoreDeviceValue(side, col, row, value, isnull);
		else
			GpuJoinStoreHostValue(side, col, row, value, isnull);
	}

	if (node->gj_Strategy == GPUJOIN_STRATEGY_THETA)
	{
		AppendThetaKeys(node, side, slot, row);
		return;
	}

	(void) GpuJoinStoreRowKey(node, side, slot, row);
}

/*
 * Rows first .. first + nrows - 1 of a side's batch as the kernels take them
 * (all of them, or an inner partition); columns must hold GJ_MAX_COLUMNS
 */
GjBatch
GpuJoinSideBatch(const GpuJoinSide *side, GjColumn *columns, int64 first, int64 nrows)
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
 * Forget the inner batch and what was made of it: the device's table (of
 * the old batch), the matched flags and partitions (in its memory)
 */
void
GpuJoinForgetInner(GpuJoinState *node)
{
	GpuJoinResetSide(&node->gj_Inner);
	node->gj_TableBuilt = false;
	node->gj_InnerMatched = NULL;
	node->gj_InnerPerm = NULL;
	node->gj_PartStart = NULL;
	node->gj_NumParts = 1;
}

/* An inner side of more rows than a batch may hold */
void
GpuJoinInnerTooLarge(const GpuJoinSide *inner)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("inner relation of a GPU join has more than " INT64_FORMAT " rows",
					inner->max_rows),
			 errhint("Set gpujoin.enabled = off to run this join with PostgreSQL's own join methods.")));
}

/*
 * GJ_LOAD_INNER: read the whole inner side
 */
void
GpuJoinLoadInner(GpuJoinState *node)
{
	GpuJoinForgetInner(node);
	GpuJoinReadInnerRows(node);
	GpuJoinInnerLoaded(node);
}

/*
 * Read the inner side's rows into its batch, which is empty: all of them,
 * or, where a parallel join shares its pages out (exec_parallel.c), this
 * process's share
 */
void
GpuJoinReadInnerRows(GpuJoinState *node)
{
	GpuJoinSide *inner = &node->gj_Inner;

	if (inner->stage_kernels == NULL)
		inner->stage_kernels = GpuJoinNodeKernels(node);
	if (inner->heap != NULL)
	{
		/* a heap side: its pages, straight into the batch */
		GpuJoinHeapFill(node, inner, inner->max_rows);
		if (inner->nrows >= inner->max_rows && !inner->exhausted)
			GpuJoinInnerTooLarge(inner);
		GpuJoinHeapTrimNulls(inner);
	}
	/* (a SCAN has no inner side: an empty batch) */
	for (; inner->heap == NULL && inner->ps != NULL;)
	{
		TupleTableSlot *slot = ExecProcNode(inner->ps);

		if (TupIsNull(slot))
			break;
		if (inner->nrows >= inner->max_rows)
			GpuJoinInnerTooLarge(inner);
		AppendRow(node, inner, slot);
	}
}

/*
 * The inner side's batch holds the whole inner side: count it, and set up
 * what the join keeps per inner row
 */
void
GpuJoinInnerLoaded(GpuJoinState *node)
{
	GpuJoinSide *inner = &node->gj_Inner;

	node->gj_InnerRows += inner->nrows;
	if (GJ_FILL_INNER_NEEDED(node))
		node->gj_InnerMatched = MemoryContextAllocExtended(inner->cxt, Max(inner->nrows, 1),
														   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	node->gj_InnerFirst = 0;
	node->gj_InnerCount = inner->nrows;
}

/*
 * A digest of a side's keys, in row order (a NULL key as such): two reads
 * of one side with equal digests hold the same keys in the same rows, so
 * the kernels number their matches alike
 */
uint64
GpuJoinSideDigest(const GpuJoinSide *side)
{
	uint64		h = (uint64) side->nrows;

	for (int64 row = 0; row < side->nrows; row++)
	{
		bool		isnull = side->keynulls != NULL && side->keynulls[row];

		h = (h ^ (isnull ? UINT64CONST(0x9E3779B97F4A7C15) : side->keys[row])) *
			UINT64CONST(0x100000001B3);
		h ^= h >> 29;
	}
	return h;
}

/*
 * GJ_LOAD_OUTER: read the next chunk of the outer side; false when no rows
 * are left
 */
bool
GpuJoinLoadOuterChunk(GpuJoinState *node)
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
		double		budget = GpuJoinIsCpuTwin(GpuJoinNodeKernels(node)) ?
			GPUJOIN_NLJ_CPU_CHUNK_COMPARISONS : GPUJOIN_NLJ_CHUNK_COMPARISONS;
		double		per_row = (double) Max(node->gj_Inner.nrows, 1) * Max(outer->nterms, 1);

		max_rows = Min(max_rows, Max((int64) (budget / per_row), GPUJOIN_NLJ_MIN_CHUNK_ROWS));
	}

	GpuJoinResetSide(outer);
	if (outer->stage_kernels == NULL)
		outer->stage_kernels = GpuJoinNodeKernels(node);
	node->gj_OuterMatched = NULL;	/* was in the batch's memory */
	node->gj_OuterOrder = NULL;
	node->gj_OrderPos = 0;
	if (outer->heap != NULL && node->gj_NumParts == 1)
	{
		/* a heap side: its pages, straight into the batch */
		if (!outer->exhausted)
			GpuJoinHeapFill(node, outer, max_rows);
		GpuJoinHeapTrimNulls(outer);
	}
	while (!outer->exhausted && outer->nrows < max_rows &&
		   (outer->heap == NULL || node->gj_NumParts > 1))
	{
		TupleTableSlot *slot = GpuJoinNextOuterRow(node);

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
