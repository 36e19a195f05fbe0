/*-------------------------------------------------------------------------
 *
 * exec_heap.c
 *	  A side of a GpuJoin read as heap pages: the join scans the table
 *	  itself, page at a time, instead of pulling tuples from a Seq Scan
 *
 * When a side is a plain scan of a heap table (quals the device evaluates,
 * columns and keys the deform takes: planner_clauses.c, GpuJoinHeapSide),
 * the plan has no child for it; the node opens the relation and reads it
 * here.  Each page is read as
 * heapam's page-mode scan reads it: with the scan's buffer strategy, the
 * page pruned when it can be, and the visibility of its tuples decided
 * against the query's snapshot.  An all-visible page's normal items are
 * its visible tuples (StageAllVisiblePage: the flag decides for the whole
 * page, as in heapgetpage, whose per-tuple loop such a page does not
 * need).  Any other page, and every page in recovery or in a serializable
 * transaction, is read by heapgetpage(), which checks its tuples one by
 * one (HeapTupleSatisfiesVisibility, serializable conflicts) and leaves
 * the visible ones in rs_vistuples.  The byte offsets of the visible
 * tuples are listed in a staging area, and the page is either left in
 * place in the shared buffers, its buffer pinned until its rows are taken
 * (the device reads it there), or copied under the share lock into the
 * staging area and the buffer released (gpujoin.heap_in_place off, a
 * temporary table, small shared_buffers: ChooseStaging).  So the join
 * sees exactly the rows PostgreSQL's Seq Scan would, and counts them in
 * the relation's statistics as it would.
 *
 * The staged tuples become the side's batch through the deform
 * (gpujoin_kernels.h, HEAP PAGES TO COLUMNS; its CPU twin is
 * cuda/scan/heap_deform_cpu.c): the needed attributes' values into the
 * column arrays, the key attributes' values packed into keys, in one pass
 * per tuple with no slot, no executor call and no per-row memory.  The
 * staging area holds gpujoin.heap_stage_pages pages (8 MB: few enough
 * calls of the deform per side), or the relation's pages when it has
 * fewer, or more where they are kept pages left unread (ChooseStaging);
 * an outer chunk takes what it needs of it and leaves the rest for
 * the next chunk.  On the device the deform is started, the next pages are
 * read into a second staging area while it runs, and then it is finished
 * (double buffering: the host's page reads overlap the bus and the
 * device); the CPU twin, which deforms at once, reads ahead the same way.
 *
 * The scan's quals, compiled by planner_expr.c, run in the deform: a
 * tuple that fails them becomes no row, and the rows that pass keep the
 * tuples' order.  Where the device could not decide a tuple (a step that
 * would raise an error in PostgreSQL: overflow, division by zero), the
 * quals are evaluated here, by PostgreSQL's executor on the tuple, which
 * raises the error exactly where a Seq Scan would (Recheck).
 *
 * A partitioned hash join reads its outer side into tuplestores before it
 * joins (exec_partition.c); a heap side gives it its visible tuples one at a
 * time (GpuJoinHeapNextTuple), as heap tuples in a slot of the relation's
 * row type, with its quals evaluated by the executor.
 *
 * IDENTIFICATION
 *	  src/exec_heap.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "access/tupdesc_details.h"
#include "access/tupmacs.h"
#include "access/visibilitymap.h"
#include "catalog/catalog.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "exec.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "rewrite/rewriteManip.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/memutils.h"
#include "utils/rel.h"

static void FreeStage(void *arg);


/* The alignment in bytes of an attalign code */
static int
AlignBytes(char attalign)
{
	switch (attalign)
	{
		case TYPALIGN_CHAR:
			return 1;
		case TYPALIGN_SHORT:
			return ALIGNOF_SHORT;
		case TYPALIGN_INT:
			return ALIGNOF_INT;
		case TYPALIGN_DOUBLE:
			return ALIGNOF_DOUBLE;
	}
	elog(ERROR, "gpujoin: unknown attalign '%c'", attalign);
	return 0;
}

/* How a key coding reads an attribute's bytes (GjKeyKind), or -1 */
int
GpuJoinHeapKeyKind(GpuJoinKeyKind kind)
{
	switch (kind)
	{
		case GPUJOIN_KEY_INT2:
		case GPUJOIN_KEY_INT4:
		case GPUJOIN_KEY_INT8:
		case GPUJOIN_KEY_DATE:
		case GPUJOIN_KEY_TIME:
		case GPUJOIN_KEY_TIMESTAMP:
		case GPUJOIN_KEY_TIMESTAMPTZ:
			return GJ_KEY_SIGNED;
		case GPUJOIN_KEY_OID:
			return GJ_KEY_OID;
		case GPUJOIN_KEY_BOOL:
			return GJ_KEY_BOOL;
		case GPUJOIN_KEY_FLOAT4:
			return GJ_KEY_FLOAT4;
		case GPUJOIN_KEY_FLOAT8:
			return GJ_KEY_FLOAT8;
		default:
			return -1;			/* numeric, hashed, cross-type conversions */
	}
}

/*
 * The host quals' results per value of the one column the quals read (a
 * dimension's text range under a collation the device does not compare
 * in, say: S2.2 of SSB): a tuple whose value came before is decided by
 * that value's result, without the quals' functions.  Only where the
 * quals read no other column, no parameter and nothing volatile, so that
 * the value alone decides them.  Open addressing; at most GJ_MEMO_VALUES
 * values of at most GJ_MEMO_BYTES bytes, the others evaluated each time.
 */
#define GJ_MEMO_SLOTS	8192		/* a power of 2, twice the values */
#define GJ_MEMO_VALUES	4096
#define GJ_MEMO_BYTES	256

typedef struct GpuJoinMemoEntry
{
	uint32		hash;
	int16		len;			/* of bytes; -1: an empty slot */
	bool		passes;
	char	   *bytes;			/* the value's bytes (see MemoBytes) */
} GpuJoinMemoEntry;

typedef struct GpuJoinQualMemo
{
	AttrNumber	attno;			/* the column */
	int16		typlen;
	bool		typbyval;
	int8		null_passes;	/* the result for NULL, or -1: not known yet */
	int			nvalues;
	GpuJoinMemoEntry slots[GJ_MEMO_SLOTS];
} GpuJoinQualMemo;

/*
 * A memo for the reader's quals (reader->memo), where the host evaluates
 * some of them for every tuple the device's pass (host_quals) and they
 * read one column of the relation alone (vars: their Vars) and no Param:
 * the host's have none, nor a SubPlan or anything volatile (HostQual), and
 * the device's Params are those its program lists (filter->params)
 */
static void
BeginMemo(GpuJoinHeapReader *reader, const GpuJoinDeviceExpr *filter, List *vars)
{
	AttrNumber	attno = InvalidAttrNumber;
	GpuJoinQualMemo *memo;
	Form_pg_attribute att;
	ListCell   *lc;

	if (reader->host_quals == NIL || vars == NIL || filter->params != NIL)
		return;
	foreach(lc, vars)
	{
		Var		   *var = lfirst(lc);

		if (!IsA(var, Var) || var->varattno <= 0 ||
			(attno != InvalidAttrNumber && var->varattno != attno))
			return;
		attno = var->varattno;
	}
	att = TupleDescAttr(RelationGetDescr(reader->rel), attno - 1);
	memo = palloc0(sizeof(GpuJoinQualMemo));
	memo->attno = attno;
	memo->typlen = att->attlen;
	memo->typbyval = att->attbyval;
	memo->null_passes = -1;
	for (int i = 0; i < GJ_MEMO_SLOTS; i++)
		memo->slots[i].len = -1;
	reader->memo = memo;
}

/*
 * The bytes that stand for *value in the memo: the Datum itself for a type
 * passed by value, else the value's bytes (a varlena's data without its
 * header, which may be short or long for one value: two entries then);
 * false for a value stored compressed or out of line, or too long
 */
static bool
MemoBytes(const GpuJoinQualMemo *memo, const Datum *value, const char **bytes, int *len)
{
	if (memo->typbyval)
	{
		*bytes = (const char *) value;
		*len = sizeof(Datum);
	}
	else if (memo->typlen > 0)
	{
		*bytes = DatumGetPointer(*value);
		*len = memo->typlen;
	}
	else if (memo->typlen == -1)
	{
		struct varlena *v = (struct varlena *) DatumGetPointer(*value);

		if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v))
			return false;
		*bytes = VARDATA_ANY(v);
		*len = VARSIZE_ANY_EXHDR(v);
	}
	else
	{
		*bytes = DatumGetCString(*value);
		*len = strlen(*bytes);
	}
	return *len <= GJ_MEMO_BYTES;
}

/* The entry of bytes, or the empty slot where it would go */
static GpuJoinMemoEntry *
MemoFind(GpuJoinQualMemo *memo, uint32 hash, const char *bytes, int len)
{
	uint32		i = hash & (GJ_MEMO_SLOTS - 1);

	for (;; i = (i + 1) & (GJ_MEMO_SLOTS - 1))
	{
		GpuJoinMemoEntry *e = &memo->slots[i];

		if (e->len < 0 ||
			(e->hash == hash && e->len == len && memcmp(e->bytes, bytes, len) == 0))
			return e;
	}
}

/*
 * Whether the tuple in slot passes the reader's quals: PostgreSQL's
 * evaluation, or the memo's result for its value
 */
static bool
QualPasses(GpuJoinHeapReader *reader, TupleTableSlot *slot)
{
	GpuJoinQualMemo *memo = reader->memo;
	ExprContext *econtext = reader->econtext;
	GpuJoinMemoEntry *e = NULL;
	bool		isnull = false;
	Datum		value = (Datum) 0;
	const char *bytes = NULL;
	int			len = 0;
	uint32		hash = 0;
	bool		passes;

	if (memo != NULL)
	{
		value = slot_getattr(slot, memo->attno, &isnull);
		if (isnull && memo->null_passes >= 0)
		{
			reader->memo_hits++;
			return memo->null_passes != 0;
		}
		if (!isnull && MemoBytes(memo, &value, &bytes, &len))
		{
			hash = hash_bytes((const unsigned char *) bytes, len);
			e = MemoFind(memo, hash, bytes, len);
			if (e->len >= 0)
			{
				reader->memo_hits++;
				return e->passes;
			}
		}
	}
	econtext->ecxt_scantuple = slot;
	passes = ExecQual(reader->qual, econtext);
	ResetExprContext(econtext);
	if (memo != NULL && isnull)
		memo->null_passes = passes;
	else if (e != NULL && memo->nvalues < GJ_MEMO_VALUES)
	{
		e->bytes = MemoryContextAlloc(reader->cxt, Max(len, 1));
		memcpy(e->bytes, bytes, len);
		e->hash = hash;
		e->len = len;
		e->passes = passes;
		memo->nvalues++;
	}
	return passes;
}

/*
 * The scan's quals, as the plan holds them (with the range table index the
 * planner gave the relation), with their Vars of range table entry rti,
 * compiled for the device; the query parameters they read set in the
 * program's constants.  The executor's own evaluation (reader->qual) has no
 * parent plan node: its scan tuple is the relation's heap tuple, not the
 * join's scan tuple.  It decides the tuples the program leaves undecided,
 * among them every one that passes the device's quals where some are the
 * host's (reader->host_quals, as the planner allowed them: HostQual).
 */
static void
BeginQuals(GpuJoinHeapReader *reader, List *quals, Index rti, EState *estate)
{
	List	   *vars = pull_var_clause((Node *) quals, 0);
	GpuJoinDeviceExpr *filter = palloc0(sizeof(GpuJoinDeviceExpr));
	ListCell   *lc1;
	ListCell   *lc2;

	reader->quals = copyObject(quals);
	if (vars != NIL && ((Var *) linitial(vars))->varno != rti)
		ChangeVarNodes((Node *) reader->quals, ((Var *) linitial(vars))->varno, rti, 0);
	if (!GpuJoinCompileQual(reader->quals, rti, filter, &reader->host_quals))
		elog(ERROR, "gpujoin: neither the device nor the host can evaluate the quals of \"%s\"",
			 RelationGetRelationName(reader->rel));
	reader->econtext = CreateExprContext(estate);
	reader->qual = ExecInitQual(reader->quals, NULL);
	BeginMemo(reader, filter, vars);
	forboth(lc1, filter->params, lc2, filter->param_consts)
	{
		Param	   *param = lfirst_node(Param, lc1);
		ExprState  *state = ExecInitExpr((Expr *) param, NULL);
		bool		isnull;
		Datum		value = ExecEvalExprSwitchContext(state, reader->econtext, &isnull);

		GpuJoinDeviceExprDatum(param->paramtype, value, isnull,
							   &filter->program.consts[lfirst_int(lc2)]);
	}
	ResetExprContext(reader->econtext);
	reader->filter = filter;
}

/*
 * Open the side's relation and set up its scan and its deform; the side's
 * columns and keys (GpuJoinInitSide) give what to take from each tuple,
 * quals (or NIL) which tuples become rows
 */
void
GpuJoinHeapBegin(GpuJoinState *node, GpuJoinSide *side, Index rti, List *quals,
				 EState *estate, int eflags)
{
	GpuJoinHeapReader *reader = palloc0(sizeof(GpuJoinHeapReader));
	TupleDesc	tupdesc;
	GjDeformSpec *spec = &reader->spec;
	GjHeapAttr *attrs;
	int16	   *column_attnos;
	int8	   *column_scales;
	bool		deform_numerics;
	bool		deform_texts;
	int			ndeformed = 0;
	int16	   *key_attnos;
	uint8	   *key_kinds;

	reader->rel = ExecOpenScanRelation(estate, rti, eflags);
	if (reader->rel->rd_tableam != GetHeapamTableAmRoutine())
		elog(ERROR, "gpujoin: relation \"%s\" is not a heap table",
			 RelationGetRelationName(reader->rel));
	if (!IsMVCCSnapshot(estate->es_snapshot))
		elog(ERROR, "gpujoin: a heap side needs an MVCC snapshot");
	tupdesc = RelationGetDescr(reader->rel);
	reader->snapshot = estate->es_snapshot;
	reader->rti = rti;
	side->heap = reader;

	/* the tuple format, from PostgreSQL's own headers */
	spec->layout.infomask2_offset = offsetof(HeapTupleHeaderData, t_infomask2);
	spec->layout.infomask_offset = offsetof(HeapTupleHeaderData, t_infomask);
	spec->layout.hoff_offset = offsetof(HeapTupleHeaderData, t_hoff);
	spec->layout.bits_offset = offsetof(HeapTupleHeaderData, t_bits);
	spec->layout.natts_mask = HEAP_NATTS_MASK;
	spec->layout.hasnull_flag = HEAP_HASNULL;
	spec->layout.external_size = VARHDRSZ_EXTERNAL + sizeof(varatt_external);
	spec->layout.external_tag = VARTAG_ONDISK;

	if (quals != NIL)
	{
		BeginQuals(reader, quals, rti, estate);
		spec->filter = &reader->filter->program;
		spec->input_attnos = reader->filter->input_attnos;
		spec->input_kinds = reader->filter->input_kinds;
		spec->input_scales = reader->filter->input_scales;
		if (reader->filter->ntexts > 0)
		{
			spec->input_texts = reader->filter->input_texts;
			spec->text_offsets = reader->filter->text_offsets;
			spec->text_pool = reader->filter->text_pool;
		}
	}

	/* attributes 1 .. the highest needed, walked in every tuple */
	spec->natts = side->maxattno;
	for (int i = 0; spec->filter && i < spec->filter->ninputs; i++)
		spec->natts = Max(spec->natts, spec->input_attnos[i]);
	if (spec->natts > tupdesc->natts || spec->natts > GJ_MAX_HEAP_ATTS)
		elog(ERROR, "gpujoin: attribute %d of a relation of %d", spec->natts, tupdesc->natts);
	attrs = palloc0(sizeof(GjHeapAttr) * Max(spec->natts, 1));
	for (int a = 0; a < spec->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, a);

		attrs[a].len = att->attlen;
		attrs[a].align = AlignBytes(att->attalign);
		attrs[a].missing_isnull = true;
		if (att->atthasmissing && tupdesc->constr && tupdesc->constr->missing &&
			tupdesc->constr->missing[a].am_present)
		{
			attrs[a].missing_isnull = false;
			if (att->attbyval && att->attlen > 0 && att->attlen <= 8)
				store_att_byval(&attrs[a].missing_value, tupdesc->constr->missing[a].am_value,
								att->attlen);
		}
	}
	spec->attrs = attrs;

	/*
	 * The columns the join needs: the device columns are deformed with the
	 * keys; the host ones (variable-width or by reference: text, numeric
	 * ...) are taken on the host from the staged tuples (TakeHostColumns)
	 */
	column_attnos = palloc(sizeof(int16) * Max(side->ncolumns, 1));
	column_scales = palloc(sizeof(int8) * Max(side->ncolumns, 1));
	/*
	 * A GpuPreAgg's text codes are numbered last, after its numerics: the
	 * deform makes the short values' words (gj_text_word) where it converts
	 * the numerics too, or where there is none, and of all of its text keys
	 * or none, so that the columns it writes stay the first ones
	 */
	deform_numerics = gpujoin_deform_numeric;
	deform_texts = true;
	for (int c = 0; c < side->ncolumns; c++)
	{
		const GpuJoinColumn *col = &side->columns[c];
		bool		varlena = TupleDescAttr(tupdesc, col->attno - 1)->attlen == -1;

		if (GpuJoinColumnConverted(col) && col->dict == NULL &&
			(col->scale > GJ_NUMERIC_MAX_DIGITS || !varlena))
			deform_numerics = false;
		if (col->dict != NULL && !varlena)
			deform_texts = false;
	}
	deform_texts = deform_texts && (deform_numerics || side->nscaled == side->ndict);
	for (int c = 0; c < side->ncolumns; c++)
	{
		const GpuJoinColumn *col = &side->columns[c];

		if (col->device >= 0 && !GpuJoinColumnConverted(col))
		{
			column_attnos[col->device] = col->attno;
			column_scales[col->device] = -1;
		}
		else if (deform_numerics && GpuJoinColumnConverted(col) && col->dict == NULL)
		{
			/* a GpuPreAgg's numeric of declared scale, as its value times 10^scale */
			column_attnos[col->device] = col->attno;
			column_scales[col->device] = (int8) col->scale;
			ndeformed++;
			reader->numerics++;
		}
		else if (deform_texts && col->dict != NULL)
		{
			/* a GpuPreAgg's text key: a short value's word, a longer one's code here */
			column_attnos[col->device] = col->attno;
			column_scales[col->device] = GJ_COLUMN_TEXT_WORD;
			ndeformed++;
			reader->texts++;
		}
		else
			reader->host_maxattno = Max(reader->host_maxattno, col->attno);
	}

	/*
	 * Those of a GpuPreAgg's numerics and text codes the deform does not
	 * make are made on the host
	 */
	spec->ncolumns = side->ndevice - side->nscaled + ndeformed;
	spec->column_attnos = column_attnos;
	spec->column_scales = column_scales;

	/*
	 * The keys: plain attributes, each with its GjKeyKind; if one has a
	 * coding the deform does not compute (numeric, hashed, cross-type), all
	 * are encoded on the host from the staged tuples, as a child's rows are
	 * (TakeHostColumns)
	 */
	key_attnos = palloc(sizeof(int16) * Max(node->gj_NumKeys, 1));
	key_kinds = palloc(sizeof(uint8) * Max(node->gj_NumKeys, 1));
	for (int k = 0; k < node->gj_NumKeys; k++)
	{
		int			kind = GpuJoinHeapKeyKind(side->key_codings[k].kind);

		if (side->key_exprs[k] != NULL)
			elog(ERROR, "gpujoin: a heap side's key %d is not a plain attribute", k + 1);
		if (kind < 0)
			reader->host_keys = true;
		key_attnos[k] = side->key_attnos[k];
		key_kinds[k] = (uint8) Max(kind, 0);
	}
	for (int k = 0; reader->host_keys && k < node->gj_NumKeys; k++)
		reader->host_maxattno = Max(reader->host_maxattno, side->key_attnos[k]);
	spec->nkeys = reader->host_keys ? 0 : node->gj_NumKeys;
	spec->key_attnos = key_attnos;
	spec->key_kinds = key_kinds;
	spec->key_bits = node->gj_KeyBits;
	spec->keys_exact = node->gj_KeyExact;

	reader->cxt = CurrentMemoryContext;
	/*
	 * The staging areas go back with the node's memory: armed now, before
	 * the node's device context (GpuJoinDeviceInit), so that they go after
	 * it, once it has waited for its stream (a memory context's callbacks
	 * run newest first), and no copy queued from them is still running
	 */
	reader->stage_callback.func = FreeStage;
	reader->stage_callback.arg = reader;
	MemoryContextRegisterResetCallback(reader->cxt, &reader->stage_callback);
	reader->parallel = side == &node->gj_Outer && node->css.ss.ps.plan->parallel_aware;
	reader->slot = ExecInitExtraTupleSlot(estate, tupdesc, &TTSOpsHeapTuple);
	reader->side = side;
	reader->device = &node->gj_Device;
	reader->vmbuffer = InvalidBuffer;
}

/* Reset callback: free the staging areas the executor did not get to free */
static void
FreeStage(void *arg)
{
	GpuJoinHeapReader *reader = (GpuJoinHeapReader *) arg;
	GpuJoinHeapStage *stages[2] = {&reader->cur, &reader->next};

	for (int i = 0; i < 2; i++)
	{
		if (stages[i]->allocator != NULL)
			GpuJoinPinnedFree(stages[i]->allocator, stages[i]->mem, stages[i]->bytes);
		stages[i]->allocator = NULL;
		stages[i]->mem = NULL;
		stages[i]->pages = NULL;
		stages[i]->page_index = NULL;
		stages[i]->page_lsn = NULL;
		stages[i]->page_starts = NULL;
		stages[i]->tuples = NULL;
		/* memory of cxt: goes with it */
		stages[i]->lengths = NULL;
		stages[i]->offnums = NULL;
		stages[i]->blocks = NULL;
		stages[i]->buffers = NULL;
	}
	reader->selected = NULL;
}

/*
 * Release the buffers a stage read in place kept pinned.  (After an error
 * the resource owner has released them: only the executor's own ends of a
 * scan come here.)
 */
static void
ReleaseStage(GpuJoinHeapStage *stage)
{
	for (int i = 0; i < stage->npins; i++)
		if (BufferIsValid(stage->buffers[i]))
			ReleaseBuffer(stage->buffers[i]);
	stage->npins = 0;
	stage->nkept_only = 0;
}

/* Give back the pin of the page read ahead, if any */
static void
ReleaseAhead(GpuJoinHeapReader *reader)
{
	if (BufferIsValid(reader->ahead))
		ReleaseBuffer(reader->ahead);
	reader->ahead = InvalidBuffer;
}

/*
 * Whether the reader reads its pages in place, and its stages' size: in
 * place, each stage keeps its pages pinned, and a join has up to two sides
 * of two stages each in every process, so a stage pins at most 1/128 of
 * the shared buffers (fewer pages than gpujoin.heap_stage_pages with small
 * shared_buffers; in place not at all when that would make stages of
 * fewer than 64 pages, whose calls would cost more than the copies).  A
 * temporary table's pages are in this process's local buffers, which the
 * device does not read: they are copied.
 */
static void
ChooseStaging(GpuJoinHeapReader *reader)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(reader->rel);
	int			pages = Max(1, Min((BlockNumber) gpujoin_heap_stage_pages, nblocks));
	int			in_place_pages = Min(pages, NBuffers / 128);

	reader->in_place = gpujoin_heap_in_place && !RelationUsesLocalBuffers(reader->rel) &&
		in_place_pages >= Min(pages, 64);
	reader->stage_pages = reader->stage_reads = reader->in_place ? in_place_pages : pages;
	/*
	 * Pages kept by the device between joins (page_cache.h) are known by
	 * the LSN of their visibility map page (KeptLsn), which only a
	 * WAL-logged relation's map moves when it sets a bit; not a system
	 * catalog's, whose in-place updates change a page and leave its bit
	 * set.  The settings are read when the first stage is allocated.
	 */
	reader->keep_pages = reader->in_place && gpujoin_page_cache > 0 &&
		RelationNeedsWAL(reader->rel) && !RecoveryInProgress() &&
		!IsCatalogRelation(reader->rel);
	reader->unread = reader->keep_pages && gpujoin_page_cache_unread &&
		GpuJoinOldSnapshotsOff();
	/*
	 * A kept page left unread costs its stage no buffer and no copy, only
	 * its tuples' ordinals: such pages come GJ_KEPT_STAGE_FACTOR times as
	 * many a stage (fewer calls of the deform, fewer questions), the pages
	 * read still at most stage_reads.  Where the host must read them after
	 * all (ReadKeptPages) every page of the stage is pinned: no more than
	 * the 1/128 of the shared buffers a stage may pin, and no more than
	 * the setting's largest value (a tuple's place, page * BLCKSZ + offset,
	 * is a uint32).
	 */
	if (reader->unread)
		reader->stage_pages =
			Max(reader->stage_reads,
				Min(Min((BlockNumber) reader->stage_reads * GJ_KEPT_STAGE_FACTOR, nblocks),
					Min(NBuffers / 128, GPUJOIN_MAX_HEAP_STAGE_PAGES)));
}

/*
 * Allocate a staging area, the pages and then their tuples' offsets, in
 * the memory the kernels stage in (page-locked for the device, so that
 * the pages cross the bus at its full speed), or in ordinary memory when
 * they have none to give; freed when the node ends or its memory context
 * goes (an error), whichever comes first
 */
static void
AllocStage(GpuJoinHeapReader *reader, GpuJoinHeapStage *stage, const GjKernels *kernels)
{
	Size		pages_bytes;
	Size		bytes;

	if (stage->mem != NULL)
		return;
	/* a small table needs no more than its pages (a later scan may see more) */
	if (reader->stage_pages == 0)
		ChooseStaging(reader);
	if (reader->in_place)
		pages_bytes = MAXALIGN(sizeof(uint32) * reader->stage_pages);
	else
		pages_bytes = (Size) reader->stage_pages * BLCKSZ;
	bytes = pages_bytes + sizeof(uint32) * reader->stage_pages * MaxHeapTuplesPerPage;
	stage->mem = GpuJoinPinnedAlloc(kernels, bytes, &stage->bytes);
	if (stage->mem != NULL)
		stage->allocator = kernels;
	else
		stage->mem = MemoryContextAllocHuge(reader->cxt, bytes);
	if (reader->in_place)
	{
		stage->page_index = (uint32 *) stage->mem;
		stage->buffers = MemoryContextAlloc(reader->cxt, sizeof(Buffer) * reader->stage_pages);
		if (reader->keep_pages)
		{
			stage->page_lsn = MemoryContextAlloc(reader->cxt,
												 sizeof(uint64) * reader->stage_pages);
			stage->page_starts = MemoryContextAlloc(reader->cxt,
													sizeof(int64) * (reader->stage_pages + 1));
			stage->page_starts[0] = 0;
		}
	}
	else
		stage->pages = stage->mem;
	stage->tuples = (uint32 *) (stage->mem + pages_bytes);
	stage->lengths = MemoryContextAlloc(reader->cxt, sizeof(uint16) * reader->stage_pages *
										MaxHeapTuplesPerPage);
	stage->offnums = MemoryContextAlloc(reader->cxt, sizeof(OffsetNumber) * reader->stage_pages *
										MaxHeapTuplesPerPage);
	stage->blocks = MemoryContextAlloc(reader->cxt, sizeof(BlockNumber) * reader->stage_pages);
	if (reader->selected == NULL && reader->filter != NULL)
		reader->selected = MemoryContextAllocHuge(reader->cxt, sizeof(uint32) *
												  reader->stage_pages * MaxHeapTuplesPerPage);
}

/* Nothing staged, and blocks left to read: a scan (re)started */
static void
ForgetStaged(GpuJoinHeapReader *reader)
{
	ReleaseStage(&reader->cur);
	ReleaseStage(&reader->next);
	ReleaseAhead(reader);
	reader->cur.npages = 0;
	reader->cur.ntuples = 0;
	reader->next.npages = 0;
	reader->next.ntuples = 0;
	reader->next_ready = false;
	reader->consumed = 0;
	reader->done = false;
	reader->nasked = 0;
	reader->asked_at = 0;
}

/* Start the scan over: at the first block, with nothing staged */
static void
StartScan(GpuJoinHeapReader *reader)
{
	if (reader->scan == NULL && reader->pscan != NULL)
		reader->scan = table_beginscan_parallel(reader->rel, reader->pscan);
	else if (reader->scan == NULL)
		reader->scan = table_beginscan_strat(reader->rel, reader->snapshot, 0, NULL,
											 true, false);
	else
		table_rescan(reader->scan, NULL);
	reader->pscan_started = false;
	reader->try_all_visible = true;
	reader->next_block = 0;
	reader->nruns = 0;
	reader->replay_at = 0;
	reader->replay_off = 0;
	ForgetStaged(reader);
}

/* Block, handed to this process by the parallel scan, added to its runs */
static void
RecordBlock(GpuJoinHeapReader *reader, BlockNumber block)
{
	GpuJoinBlockRun *last = reader->nruns > 0 ? &reader->runs[reader->nruns - 1] : NULL;

	if (last != NULL && last->start + last->count == block)
	{
		last->count++;
		return;
	}
	if (reader->nruns == reader->maxruns)
	{
		reader->maxruns = Max(64, 2 * reader->maxruns);
		reader->runs = reader->runs == NULL ?
			MemoryContextAlloc(reader->cxt, sizeof(GpuJoinBlockRun) * reader->maxruns) :
			repalloc(reader->runs, sizeof(GpuJoinBlockRun) * reader->maxruns);
	}
	reader->runs[reader->nruns].start = block;
	reader->runs[reader->nruns].count = 1;
	reader->nruns++;
}

/*
 * Read the blocks of runs, in their order, and no others, from the next
 * start of the scan (GpuJoinHeapRescan, or the first read after
 * GpuJoinHeapSetParallel ended it: StartScan starts the runs over); NULL:
 * all, as usual.  The runs stay the caller's.
 */
void
GpuJoinHeapReplay(GpuJoinHeapReader *reader, const GpuJoinBlockRun *runs, int nruns)
{
	reader->replay = runs;
	reader->nreplay = nruns;
}

/*
 * The next block to read, or InvalidBlockNumber when there is none: the
 * next one in order, or, when the processes of a parallel join share the
 * relation, the next one the shared block scan hands this process (in
 * chunks, as to a Parallel Seq Scan)
 */
static BlockNumber
NextBlock(GpuJoinHeapReader *reader)
{
	HeapScanDesc scan = (HeapScanDesc) reader->scan;
	BlockNumber block;

	if (reader->replay != NULL)
	{
		while (reader->replay_at < reader->nreplay &&
			   reader->replay_off >= reader->replay[reader->replay_at].count)
		{
			reader->replay_at++;
			reader->replay_off = 0;
		}
		if (reader->replay_at >= reader->nreplay)
			return InvalidBlockNumber;
		return reader->replay[reader->replay_at].start + reader->replay_off++;
	}
	if (reader->pscan == NULL)
	{
		if (reader->next_block >= scan->rs_nblocks)
			return InvalidBlockNumber;
		return reader->next_block++;
	}

	if (!reader->pscan_started)
	{
		table_block_parallelscan_startblock_init(reader->rel, scan->rs_parallelworkerdata,
												 (ParallelBlockTableScanDesc) reader->pscan);
		reader->pscan_started = true;
	}
	block = table_block_parallelscan_nextpage(reader->rel, scan->rs_parallelworkerdata,
											  (ParallelBlockTableScanDesc) reader->pscan);
	if (block != InvalidBlockNumber)
	{
		reader->next_block = block + 1;
		if (reader->record)
		{
			RecordBlock(reader, block);
			/* a test aid: the others get shares too (test/028) */
			if (gpujoin_inject_fault == GPUJOIN_FAULT_SHARE_PACE ||
				gpujoin_inject_fault == GPUJOIN_FAULT_SHARE_PACE_RETRIEVE_OOM ||
				gpujoin_inject_fault == GPUJOIN_FAULT_SHARE_PACE_REFUSED)
				pg_usleep(2000);
		}
	}
	return block;
}

/*
 * A parallel join's outer side: share the relation's blocks through pscan
 * (exec_parallel.c, in the join's dynamic shared memory; NULL when that is
 * gone).  A scan begun on another one starts over on this one.
 */
void
GpuJoinHeapSetParallel(GpuJoinHeapReader *reader, ParallelTableScanDesc pscan)
{
	if (reader->scan != NULL && reader->scan->rs_parallel != pscan)
	{
		table_endscan(reader->scan);
		reader->scan = NULL;
		ForgetStaged(reader);
	}
	reader->pscan = pscan;
	if (pscan == NULL)
		reader->participants = 0;
}

/*
 * Keep buffer, pinned, as the page the stage lists tuples of next (in
 * place): its index in the buffer pool goes to the device
 */
static inline void
StageBuffer(GpuJoinHeapStage *stage, Buffer buffer)
{
	stage->buffers[stage->npins++] = buffer;
	stage->page_index[stage->npages] = (uint32) (buffer - 1);
}

/*
 * List items offs[0 .. n - 1] of page, the stage's next page (copied, or
 * in place), as the stage's next tuples; with locals in the loop, as
 * StageNormalItems below says why
 */
static void
StageItems(GpuJoinHeapStage *stage, Page page, const OffsetNumber *offs, int n)
{
	uint32		base = (uint32) stage->npages * BLCKSZ;
	uint32	   *tuples = stage->tuples + stage->ntuples;
	uint16	   *lengths = stage->lengths + stage->ntuples;
	OffsetNumber *offnums = stage->offnums + stage->ntuples;

	for (int i = 0; i < n; i++)
	{
		ItemId		item = PageGetItemId(page, offs[i]);

		tuples[i] = base + ItemIdGetOffset(item);
		lengths[i] = (uint16) ItemIdGetLength(item);
		offnums[i] = offs[i];
	}
	stage->ntuples += n;
}

/*
 * List every normal item of the all-visible page, the stage's next page,
 * as the stage's next tuples.  Locals, not the stage's fields, in the loop
 * (PostgreSQL compiles with -fno-strict-aliasing, so each store to the
 * arrays would reload the count), and no branch: each item is written,
 * and the count moves past the normal ones (the stage has room for
 * MaxHeapTuplesPerPage items of every page).
 */
static void
StageNormalItems(GpuJoinHeapStage *stage, Page page)
{
	const ItemIdData *items = ((PageHeader) page)->pd_linp;
	int			nitems = PageGetMaxOffsetNumber(page);
	uint32		base = (uint32) stage->npages * BLCKSZ;
	uint32	   *tuples = stage->tuples + stage->ntuples;
	uint16	   *lengths = stage->lengths + stage->ntuples;
	OffsetNumber *offnums = stage->offnums + stage->ntuples;
	int			n = 0;

	for (int i = 0; i < nitems; i++)
	{
		ItemIdData	item = items[i];

		tuples[n] = base + item.lp_off;
		lengths[n] = (uint16) item.lp_len;
		offnums[n] = (OffsetNumber) (i + FirstOffsetNumber);
		n += (item.lp_flags == LP_NORMAL);
	}
	stage->ntuples += n;
}

/*
 * The block NextBlock returns after block, where that is known now: the
 * next one in a scan of its own; in a parallel scan, the next one of the
 * chunk the shared block scan handed this process (as
 * table_block_parallelscan_nextpage takes it), none after the chunk's last
 */
static BlockNumber
FollowingBlock(GpuJoinHeapReader *reader, BlockNumber block)
{
	HeapScanDesc scan = (HeapScanDesc) reader->scan;
	ParallelBlockTableScanWorker worker = scan->rs_parallelworkerdata;
	ParallelBlockTableScanDesc pbscan = (ParallelBlockTableScanDesc) reader->pscan;

	if (reader->replay != NULL)
		return InvalidBlockNumber;
	if (pbscan == NULL)
		return block + 1 < scan->rs_nblocks ? block + 1 : InvalidBlockNumber;
	if (worker == NULL || worker->phsw_chunk_remaining == 0 ||
		worker->phsw_nallocated + 1 >= pbscan->phs_nblocks)
		return InvalidBlockNumber;
	return (block + 1) % pbscan->phs_nblocks;
}

/*
 * In place: pin block, the page after the one being staged, now (none when
 * it is not known yet), and start its header and item array on their way
 * into the CPU's cache, so that they are there when its turn comes (the
 * buffer lookup and the item list are otherwise mostly cache misses, one
 * after another)
 */
static void
ReadAhead(GpuJoinHeapReader *reader, BlockNumber block)
{
	HeapScanDesc scan = (HeapScanDesc) reader->scan;
	const char *page;

	if (!reader->in_place || block == InvalidBlockNumber)
		return;
	reader->ahead = ReadBufferExtended(reader->rel, MAIN_FORKNUM, block, RBM_NORMAL,
									   scan->rs_strategy);
	reader->ahead_block = block;
	page = (const char *) BufferGetPage(reader->ahead);
	for (Size off = 0; off < SizeOfPageHeaderData + MaxHeapTuplesPerPage * sizeof(ItemIdData);
		 off += 64)
		__builtin_prefetch(page + off);
}

/*
 * The heap blocks one visibility map page covers (visibilitymap.c's
 * HEAPBLOCKS_PER_PAGE: two bits a block in the page's MAXALIGNed contents)
 */
#define GPUJOIN_MAP_BLOCKS	((BLCKSZ - MAXALIGN(SizeOfPageHeaderData)) * 4)

/*
 * The LSN a page is kept under (page_cache.h): that of the visibility map
 * page that holds its bits, read with the bits under the map page's share
 * lock, while its all-visible bit is set; 0 when it is not (or there is no
 * map page), and the page is not kept.  The map page is pinned
 * (reader->vmbuffer) for block already.  Called with the heap page's share
 * lock held, under which its items are listed: a change to the page
 * clears the bit first, under the page's exclusive lock, and the bit set
 * again (vacuum) moves the map page's LSN past this one
 * (visibilitymap_set: the LSN of its WAL record), so that while the bit is
 * set under the same LSN the page's listed items are as they were.  On
 * PostgreSQL 18 the clear moves it too (the change's WAL record takes the
 * map page): one change there gives every page under that map page a new
 * LSN, and they are kept again when next read.  (Not a system catalog's:
 * heap_inplace_update changes a tuple and leaves the bit; ChooseStaging
 * keeps none.)
 */
static uint64
KeptLsn(GpuJoinHeapReader *reader, BlockNumber block)
{
	uint64		lsn = 0;

	if (!BufferIsValid(reader->vmbuffer) ||
		BufferGetBlockNumber(reader->vmbuffer) != block / GPUJOIN_MAP_BLOCKS)
		return 0;
	LockBuffer(reader->vmbuffer, BUFFER_LOCK_SHARE);
	if (visibilitymap_get_status(reader->rel, block, &reader->vmbuffer) & VISIBILITYMAP_ALL_VISIBLE)
		lsn = PageGetLSN(BufferGetPage(reader->vmbuffer));
	LockBuffer(reader->vmbuffer, BUFFER_LOCK_UNLOCK);
	return lsn;
}

/*
 * Take the next blocks the stage has room for from the scan, and ask the
 * device which of them it keeps under the LSN of their map page, whose
 * bits say they are all-visible (read under that page's share lock, a
 * page at a time; ask_lsns 0 for the others); the stage takes them in
 * order (StagePagesInto).  A kept one is left unread (StageKeptPage): the
 * query's snapshot sees every tuple of a page the map vouches for (its
 * bit is set only when all are visible to every transaction, as an
 * index-only scan relies on), and they are the ones listed when the copy
 * was made (KeptLsn).  A change being made now has not cleared the bit
 * yet: it is of a transaction this snapshot does not see, as for an
 * index-only scan.  (CollectAsk lists them, Ask asks.)
 */
static void
CollectAsk(GpuJoinHeapReader *reader, int room)
{
	Buffer		locked = InvalidBuffer;
	uint64		map_lsn = 0;

	if (reader->ask_blocks == NULL)
	{
		reader->ask_blocks = MemoryContextAlloc(reader->cxt, sizeof(BlockNumber) * reader->stage_pages);
		reader->ask_lsns = MemoryContextAlloc(reader->cxt, sizeof(uint64) * reader->stage_pages);
		reader->ask_counts = MemoryContextAlloc(reader->cxt, sizeof(int16) * reader->stage_pages);
	}
	reader->nasked = 0;
	reader->asked_at = 0;
	/* heapgetpage's ways, where StageAllVisiblePage would not read (below) */
	if (reader->snapshot->takenDuringRecovery || IsolationIsSerializable())
		room = Min(room, 1);
	while (reader->nasked < room)
	{
		BlockNumber block = NextBlock(reader);

		if (block == InvalidBlockNumber)
			break;
		reader->ask_blocks[reader->nasked++] = block;
	}
	for (int i = 0; i < reader->nasked; i++)
	{
		BlockNumber block = reader->ask_blocks[i];
		uint8		bits;

		if (BufferIsValid(locked) &&
			BufferGetBlockNumber(locked) != block / GPUJOIN_MAP_BLOCKS)
		{
			LockBuffer(locked, BUFFER_LOCK_UNLOCK);
			locked = InvalidBuffer;
		}
		if (!BufferIsValid(locked))
		{
			/* pin the block's map page (no lock held), then lock it */
			(void) visibilitymap_get_status(reader->rel, block, &reader->vmbuffer);
			if (BufferIsValid(reader->vmbuffer) &&
				BufferGetBlockNumber(reader->vmbuffer) == block / GPUJOIN_MAP_BLOCKS)
			{
				locked = reader->vmbuffer;
				LockBuffer(locked, BUFFER_LOCK_SHARE);
				map_lsn = PageGetLSN(BufferGetPage(locked));
			}
		}
		bits = BufferIsValid(locked) ?
			visibilitymap_get_status(reader->rel, block, &reader->vmbuffer) : 0;
		reader->ask_lsns[i] = (bits & VISIBILITYMAP_ALL_VISIBLE) ? map_lsn : 0;
	}
	if (BufferIsValid(locked))
		LockBuffer(locked, BUFFER_LOCK_UNLOCK);
}

/* The device's answer about the blocks CollectAsk listed (-1: not kept) */
static void
Ask(GpuJoinHeapReader *reader)
{
	GpuJoinDeviceContext *dev = reader->device;
	uint32		relation[3];
	GjError		err;

	GpuJoinRelationWords(reader->rel, relation);
	memset(&err, 0, sizeof(err));
	if (reader->snapshot->takenDuringRecovery || IsolationIsSerializable() ||
		dev->ctx == NULL || dev->kernels->pages_kept == NULL ||
		dev->kernels->pages_kept(dev->ctx, relation, reader->ask_blocks, reader->ask_lsns,
								 reader->nasked, BLCKSZ, reader->ask_counts, &err) != GJ_OK)
		for (int i = 0; i < reader->nasked; i++)
			reader->ask_counts[i] = -1;
}

static void
AskKept(GpuJoinHeapReader *reader, int room)
{
	CollectAsk(reader, room);
	Ask(reader);
}

/*
 * Before a deform that takes the last tuples of the current stage, when
 * the next stage is not read yet: ask about its blocks along with that
 * deform where the device is the gpujoin service's (the answer is there
 * when the deform's is, and StagePagesInto finds them asked), else not
 * yet (false: the next stage asks as it is read, while the device works)
 */
static bool
AskAhead(GpuJoinHeapReader *reader)
{
	GpuJoinDeviceContext *dev = reader->device;
	uint32		relation[3];
	bool		gpu;

	if (!reader->unread || reader->done || reader->next_ready ||
		reader->asked_at < reader->nasked || dev->ctx == NULL ||
		!GpuJoinIsServiceKernels(dev->kernels, &gpu) ||
		reader->snapshot->takenDuringRecovery || IsolationIsSerializable())
		return false;
	CollectAsk(reader, reader->stage_pages);
	if (reader->nasked == 0)
		return false;			/* the scan is done: the next stage finds so */
	GpuJoinRelationWords(reader->rel, relation);
	if (GpuJoinServiceAskAhead(dev->kernels, dev->ctx, relation, reader->ask_blocks,
							   reader->ask_lsns, reader->nasked, BLCKSZ, reader->ask_counts))
		return true;
	Ask(reader);
	return false;
}

/*
 * Stage a block the device keeps with count tuples under lsn (AskKept) as
 * the stage's next page, unread: no buffer, its tuples' offsets their
 * ordinals (GJ_PAGE_KEPT_ONLY)
 */
static void
StageKeptPage(GpuJoinHeapStage *stage, uint64 lsn, int count)
{
	uint32		base = (uint32) stage->npages * BLCKSZ;
	uint32	   *tuples = stage->tuples + stage->ntuples;

	for (int k = 0; k < count; k++)
		tuples[k] = base + (uint32) k;
	stage->ntuples += count;
	stage->buffers[stage->npins++] = InvalidBuffer;
	stage->page_index[stage->npages] = GJ_PAGE_KEPT_ONLY;
	stage->page_lsn[stage->npages] = lsn;
	stage->nkept_only++;
}

/*
 * Stage block as the stage's next page if it is all-visible: then every
 * normal item on it is a tuple the query sees, as heapgetpage decides for
 * such a page, and its per-tuple loop can be skipped (what is left of the
 * page's cost is the buffer lookup, the list of its items, and the copy
 * when it is not read in place).  The rest of heapgetpage's work is done
 * as it does it: interrupts checked, the page pruned when it can be, the
 * old-snapshot test.  Under the share lock the page is copied, or, in
 * place, its items are listed and the buffer stays pinned: while it is,
 * a listed tuple cannot move or go (pruning and vacuum need the only pin),
 * and what other backends may still change in it (hint bits, xmax, new
 * tuples in free space) is nothing the deform reads.  False, with the
 * buffer released and nothing staged, when the page's tuples must be
 * checked one by one (heapgetpage then reads it), in recovery (where
 * heapgetpage does not trust the flag), and in a serializable transaction
 * (whose reads heapgetpage records).
 */
static bool
StageAllVisiblePage(GpuJoinHeapReader *reader, BlockNumber block, GpuJoinHeapStage *stage)
{
	HeapScanDesc scan = (HeapScanDesc) reader->scan;
	Snapshot	snapshot = scan->rs_base.rs_snapshot;
	Buffer		buffer;
	Page		page;

	if (snapshot->takenDuringRecovery || IsolationIsSerializable())
		return false;
	CHECK_FOR_INTERRUPTS();
	if (BufferIsValid(reader->ahead) && reader->ahead_block == block)
	{
		buffer = reader->ahead;
		reader->ahead = InvalidBuffer;
	}
	else
	{
		ReleaseAhead(reader);	/* not the block read ahead */
		buffer = ReadBufferExtended(reader->rel, MAIN_FORKNUM, block, RBM_NORMAL,
									scan->rs_strategy);
	}
	ReadAhead(reader, FollowingBlock(reader, block));
	heap_page_prune_opt(reader->rel, buffer);
	/* the map page that vouches for it, pinned before the lock (no I/O under it) */
	if (stage->page_lsn != NULL)
		(void) visibilitymap_get_status(reader->rel, block, &reader->vmbuffer);
	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buffer);
	GpuJoinTestForOldSnapshot(snapshot, reader->rel, page);
	if (!PageIsAllVisible(page))
	{
		UnlockReleaseBuffer(buffer);
		return false;
	}
	if (reader->in_place)
	{
		int64		first = stage->ntuples;

		/* the map's word on it when its items are listed: under this lock */
		if (stage->page_lsn != NULL)
			stage->page_lsn[stage->npages] = KeptLsn(reader, block);
		StageNormalItems(stage, page);
		if (stage->ntuples > first)
		{
			LockBuffer(buffer, BUFFER_LOCK_UNLOCK);
			StageBuffer(stage, buffer);
		}
		else
			UnlockReleaseBuffer(buffer);	/* nothing to keep it for */
	}
	else
	{
		char	   *copy = stage->pages + (Size) stage->npages * BLCKSZ;

		memcpy(copy, page, BLCKSZ);
		UnlockReleaseBuffer(buffer);
		StageNormalItems(stage, (Page) copy);
	}
	return true;
}

/*
 * Stage the page heapgetpage just read, its visible tuples listed in
 * rs_vistuples: copied, or in place with a pin of our own on its buffer
 * (the scan's goes with its next page).  The items of a pinned page's
 * visible tuples stay as they are without the lock, as heapgettup_pagemode
 * reads them.
 */
static void
StageScannedPage(GpuJoinHeapReader *reader, GpuJoinHeapStage *stage)
{
	HeapScanDesc scan = (HeapScanDesc) reader->scan;
	Page		page;

	if (reader->in_place)
	{
		IncrBufferRefCount(scan->rs_cbuf);
		StageBuffer(stage, scan->rs_cbuf);
		page = BufferGetPage(scan->rs_cbuf);
		/* its tuples checked one by one: not kept */
		if (stage->page_lsn != NULL)
			stage->page_lsn[stage->npages] = 0;
	}
	else
	{
		page = (Page) (stage->pages + (Size) stage->npages * BLCKSZ);
		LockBuffer(scan->rs_cbuf, BUFFER_LOCK_SHARE);
		memcpy(page, BufferGetPage(scan->rs_cbuf), BLCKSZ);
		LockBuffer(scan->rs_cbuf, BUFFER_LOCK_UNLOCK);
	}
	StageItems(stage, page, scan->rs_vistuples, scan->rs_ntuples);
}

/*
 * Stage the next pages into stage: read pages until some have visible
 * tuples and the staging area is full or the relation is done; false when
 * nothing is left
 */
static bool
StagePagesInto(GpuJoinHeapReader *reader, GpuJoinHeapStage *stage, const GjKernels *kernels)
{
	HeapScanDesc scan;
	instr_time	start;

	AllocStage(reader, stage, kernels);
	ReleaseStage(stage);		/* its rows have been taken */
	if (reader->scan == NULL)
		StartScan(reader);
	scan = (HeapScanDesc) reader->scan;
	stage->npages = 0;
	stage->ntuples = 0;
	if (reader->done)
		return false;

	INSTR_TIME_SET_CURRENT(start);
	while (stage->npages < reader->stage_pages &&
		   stage->npages - stage->nkept_only < reader->stage_reads)
	{
		BlockNumber block;
		int			asked = -1;
		int64		first;

		/*
		 * The blocks asked about (AskKept) first, those a stage before left
		 * too (it read as many pages as it may): the scan has handed them
		 * out, and they are read even where the host has stopped leaving
		 * pages unread since
		 */
		if (reader->unread && reader->asked_at >= reader->nasked)
			AskKept(reader, reader->stage_pages - stage->npages);
		if (reader->asked_at < reader->nasked)
		{
			asked = reader->asked_at++;
			block = reader->ask_blocks[asked];
		}
		else
			block = reader->unread ? InvalidBlockNumber : NextBlock(reader);
		if (block == InvalidBlockNumber)
		{
			reader->done = true;
			break;
		}
		first = stage->ntuples;
		reader->pages_read++;
		/*
		 * Pages come in runs, all-visible or not: after one that is not,
		 * the next goes straight to heapgetpage, which would otherwise read
		 * its buffer a second time.  (Its flag is read with the pin alone
		 * in place: it only chooses the way the next page is read.)
		 */
		if (asked >= 0 && reader->unread && reader->ask_counts[asked] > 0)
		{
			/* kept, and vouched for by the map: not read */
			CHECK_FOR_INTERRUPTS();
			StageKeptPage(stage, reader->ask_lsns[asked], reader->ask_counts[asked]);
			reader->pages_unread++;
			reader->try_all_visible = true;
		}
		else if (reader->try_all_visible && StageAllVisiblePage(reader, block, stage))
			reader->try_all_visible = true;
		else
		{
			ReleaseAhead(reader);
			GpuJoinHeapReadPage(reader->scan, block);	/* checks for interrupts */
			reader->try_all_visible = PageIsAllVisible(BufferGetPage(scan->rs_cbuf));
			if (scan->rs_ntuples == 0)
				continue;
			StageScannedPage(reader, stage);
		}
		if (stage->ntuples == first)
			continue;
		stage->blocks[stage->npages] = block;
		if (reader->try_all_visible)
			reader->pages_all_visible++;
		if (reader->in_place && stage->page_index[stage->npages] != GJ_PAGE_KEPT_ONLY)
			reader->pages_in_place++;
		/* as heap_getnextslot counts the rows a scan returns */
		if (pgstat_should_count_relation(reader->rel))
			GpuJoinCountTuplesReturned(reader->rel, stage->ntuples - first);
		stage->npages++;
		if (stage->page_starts != NULL)
			stage->page_starts[stage->npages] = stage->ntuples;
	}
	reader->tuples_read += stage->ntuples;
	reader->read_ms += GpuJoinElapsedMs(start);
	return stage->ntuples > 0;
}

/*
 * The next staged pages to take rows from: those staged ahead (Prefetch),
 * or newly read ones; false when nothing is left
 */
static bool
StagePages(GpuJoinHeapReader *reader, const GjKernels *kernels)
{
	reader->consumed = 0;
	if (reader->next_ready)
	{
		GpuJoinHeapStage cur = reader->cur;

		reader->cur = reader->next;
		reader->next = cur;
		reader->next_ready = false;
		return true;
	}
	return StagePagesInto(reader, &reader->cur, kernels);
}

/*
 * While the device deforms the current pages, read the ones after them
 * into the other staging area (double buffering).  The CPU twin, which has
 * deformed them already, reads ahead all the same: the same reads in the
 * same order, and the same states of the reader as on the device.
 */
static void
Prefetch(GpuJoinHeapReader *reader, const GjKernels *kernels)
{
	if (reader->next_ready || reader->done)
		return;
	reader->next_ready = StagePagesInto(reader, &reader->next, kernels);
}

/*
 * Make sure every flag array of a heap side's batch is allocated, for its
 * capacity (the deform writes them all)
 */
static void
AllocFlags(GpuJoinSide *side)
{
	for (int d = 0; d < side->ndevice; d++)
		if (side->device_nulls[d] == NULL)
			side->device_nulls[d] = GpuJoinSideAlloc(side, side->capacity, true);
	if (side->keynulls == NULL)
		side->keynulls = GpuJoinSideAlloc(side, side->capacity, true);
}

/*
 * The join's device context, opened here if the build has not opened it
 * yet: the pages are staged for, and deformed on, the device the join runs on
 */
static GpuJoinDeviceContext *
OpenDevice(GpuJoinState *node)
{
	GpuJoinDeviceContext *dev = &node->gj_Device;

	if (dev->ctx == NULL)
	{
		GpuJoinDeviceOpen(dev, GpuJoinChooseKernels(), &node->gj_Spec);
		node->gj_OnFallback = false;
	}
	return dev;
}

/*
 * Start the deform of the next n staged tuples into out, with the join's
 * kernels (the context is open: OpenDevice); FinishDeform waits for it, and
 * the caller may read the next pages meanwhile.  A device that cannot take
 * them (out of memory, or gone) leaves them to the CPU twin, which writes
 * the same rows at once.
 */
static bool
StartDeform(GpuJoinState *node, GpuJoinHeapReader *reader, const GjPageBatch *batch,
			int64 n, GjDeformOut *out)
{
	GpuJoinDeviceContext *dev = &node->gj_Device;
	instr_time	start;
	GjError		err;
	GjStatus	status;

	INSTR_TIME_SET_CURRENT(start);
	memset(&err, 0, sizeof(err));
	status = dev->kernels->heap_deform_start(dev->ctx, batch, &reader->spec, reader->consumed,
											 n, out, &err);
	if (status == GJ_ERROR_DEVICE_MEMORY || status == GJ_ERROR_NO_DEVICE)
	{
		memset(&err, 0, sizeof(err));
		status = gj_cpu_heap_deform(NULL, batch, &reader->spec, reader->consumed, n, out, &err);
	}
	reader->deform_ms += GpuJoinElapsedMs(start);
	if (status == GJ_ERROR_PAGES_GONE)
		return false;
	GpuJoinCheckStatus(status, &err, "could not read the heap pages of a GPU join");
	return true;
}

/*
 * Wait for the deform StartDeform left to the device: its rows are in out;
 * false when a kept copy it was to read was gone (no row written)
 */
static bool
FinishDeform(GpuJoinState *node, GpuJoinHeapReader *reader)
{
	GpuJoinDeviceContext *dev = &node->gj_Device;
	instr_time	start;
	GjError		err;
	GjStatus	status;

	INSTR_TIME_SET_CURRENT(start);
	memset(&err, 0, sizeof(err));
	status = dev->kernels->heap_deform_finish(dev->ctx, &err);
	reader->deform_ms += GpuJoinElapsedMs(start);
	if (status == GJ_ERROR_PAGES_GONE)
		return false;
	GpuJoinCheckStatus(status, &err, "could not read the heap pages of a GPU join");
	return true;
}

/*
 * Read the pages of the stage that were left unread (their kept copies
 * only: StageKeptPage), as they would have been read: each in place, its
 * visible tuples listed where its ordinals were.  The snapshot sees the
 * same tuples in them (the map vouched for them after it was taken: every
 * change since is of a transaction it does not see), so the counts agree;
 * an ERROR if one does not.  For the host's own reads of their tuples
 * (host columns, tids, quals the device left undecided, numerics it left)
 * and for a kept copy gone before the deform read it.
 */
static void
ReadKeptPages(GpuJoinHeapReader *reader, GpuJoinHeapStage *stage)
{
	HeapScanDesc scan = (HeapScanDesc) reader->scan;
	int64		t = 0;

	for (int p = 0; p < stage->npages && stage->nkept_only > 0; p++)
	{
		BlockNumber block = stage->blocks[p];
		int64		first = t;
		int64		count;
		GpuJoinHeapStage one;
		Page		page;
		uint32		tuples[MaxHeapTuplesPerPage + 1];
		uint16		lengths[MaxHeapTuplesPerPage + 1];
		OffsetNumber offnums[MaxHeapTuplesPerPage + 1];

		while (t < stage->ntuples && stage->tuples[t] / BLCKSZ == (uint32) p)
			t++;
		count = t - first;
		if (stage->page_index[p] != GJ_PAGE_KEPT_ONLY)
			continue;
		/*
		 * list it as the stage lists a page, in a stage of one page at p
		 * (whose lists may write one entry past the page's)
		 */
		memset(&one, 0, sizeof(one));
		one.tuples = tuples;
		one.lengths = lengths;
		one.offnums = offnums;
		one.npages = p;
		one.page_index = stage->page_index;
		one.page_lsn = stage->page_lsn;
		one.buffers = stage->buffers + p;
		one.blocks = stage->blocks;
		if (!StageAllVisiblePage(reader, block, &one))
		{
			GpuJoinHeapReadPage(reader->scan, block);
			page = BufferGetPage(scan->rs_cbuf);
			IncrBufferRefCount(scan->rs_cbuf);
			StageBuffer(&one, scan->rs_cbuf);
			stage->page_lsn[p] = 0;
			StageItems(&one, page, scan->rs_vistuples, scan->rs_ntuples);
		}
		else if (one.npins == 0)
			stage->buffers[p] = InvalidBuffer;	/* no tuple: released */
		/* StageItems and StageNormalItems list from 0, each at its page */
		if (one.ntuples != count)
			elog(ERROR, "gpujoin: block %u of \"%s\" holds %lld visible tuples, its kept copy %lld",
				 block, RelationGetRelationName(reader->rel), (long long) one.ntuples,
				 (long long) count);
		memcpy(stage->tuples + first, tuples, sizeof(uint32) * count);
		memcpy(stage->lengths + first, lengths, sizeof(uint16) * count);
		memcpy(stage->offnums + first, offnums, sizeof(OffsetNumber) * count);
		stage->nkept_only--;
		/* read after all: counted so */
		reader->pages_unread--;
		reader->pages_in_place++;
	}
	ReleaseAhead(reader);
}

/* Does the deform write the column (raw bytes, or a numeric it converts)? */
static inline bool
DeformedColumn(const GpuJoinHeapReader *reader, const GpuJoinColumn *col)
{
	return col->device >= 0 && col->device < reader->spec.ncolumns;
}

/* Staged tuple t, in the reader's slot (of the relation's row type) */
static TupleTableSlot *
StoreStagedTuple(GpuJoinHeapReader *reader, int64 t)
{
	const GpuJoinHeapStage *stage = &reader->cur;
	uint32		off = stage->tuples[t];
	char	   *data;

	if (stage->pages != NULL)
		data = stage->pages + off;
	else
		data = (char *) BufferGetPage(stage->buffers[off / BLCKSZ]) + off % BLCKSZ;
	reader->tuple.t_len = stage->lengths[t];
	reader->tuple.t_data = (HeapTupleHeader) data;
	reader->tuple.t_tableOid = RelationGetRelid(reader->rel);
	ItemPointerSetInvalid(&reader->tuple.t_self);
	return ExecStoreHeapTuple(&reader->tuple, reader->slot, false);
}

/*
 * The host columns of the n rows the deform just wrote, into rows nrows ..
 * nrows + n - 1 of the side's batch: from the next n staged tuples, or with
 * quals from those selected; each tuple deformed in the reader's slot as a
 * Seq Scan's would be (attmissing values included), its by-reference values
 * copied into the batch's memory, for the staging area is reused; and with
 * host_keys the row's packed key, stored as a child's row's is
 * (GpuJoinStoreRowKey)
 */
static void
TakeHostColumns(GpuJoinState *node, GpuJoinSide *side, GpuJoinHeapReader *reader, int64 n)
{
	TupleTableSlot *slot = reader->slot;

	if (side->host_by_tid)
	{
		/* only where each row's tuple is: its columns are fetched per match */
		const GpuJoinHeapStage *stage = &reader->cur;

		for (int64 i = 0; i < n; i++)
		{
			int64		t = reader->consumed + (reader->filter ? reader->selected[i] : i);

			ItemPointerSet(&side->tids[side->nrows + i],
						   stage->blocks[stage->tuples[t] / BLCKSZ], stage->offnums[t]);
		}
		return;
	}
	for (int64 i = 0; i < n; i++)
	{
		int64		row = side->nrows + i;

		StoreStagedTuple(reader, reader->consumed +
						 (reader->filter ? reader->selected[i] : i));
		slot_getsomeattrs(slot, reader->host_maxattno);
		for (int c = 0; c < side->ncolumns; c++)
		{
			const GpuJoinColumn *col = &side->columns[c];
			Datum		value;
			bool		isnull;

			if (DeformedColumn(reader, col))
				continue;		/* deformed on the device */
			value = slot->tts_values[col->attno - 1];
			isnull = slot->tts_isnull[col->attno - 1];
			if (col->device < 0)
				GpuJoinStoreHostValue(side, col, row, value, isnull);
			else
			{
				/* a GpuPreAgg's scaled numeric or text code */
				GpuJoinStoreDeviceValue(side, col, row, value, isnull);
				if (isnull)
					side->heap_null_columns |= UINT32_C(1) << col->device;
			}
		}
		if (reader->host_keys && !GpuJoinStoreRowKey(node, side, slot, row))
			side->heap_key_nulls++;
	}
	ExecClearTuple(slot);
}

/*
 * The numerics and texts the deform left to the host (GJ_NUMERIC_ON_HOST:
 * a TOAST pointer or compressed value, a value an ALTER TABLE ... ADD
 * COLUMN gave, an infinity, a value not exact at its scale, a text longer
 * than a word) of the n rows it just wrote: converted from their staged
 * tuples as TakeHostColumns converts them, so that the values, the codes
 * and the errors are the host's
 */
static void
TakeHostNumerics(GpuJoinSide *side, GpuJoinHeapReader *reader, int64 n)
{
	TupleTableSlot *slot = reader->slot;

	/* a text word column's values left to the host are marked alike */
	StaticAssertStmt(GJ_TEXT_ON_HOST == GJ_NUMERIC_ON_HOST, "one mark for values left to the host");

	for (int64 i = 0; i < n; i++)
	{
		int64		row = side->nrows + i;
		bool		stored = false;

		for (int c = 0; c < side->ncolumns; c++)
		{
			const GpuJoinColumn *col = &side->columns[c];

			if (!DeformedColumn(reader, col) || !GpuJoinColumnConverted(col) ||
				((int64 *) side->device_values[col->device])[row] != GJ_NUMERIC_ON_HOST ||
				side->device_nulls[col->device][row])
				continue;
			if (!stored)
			{
				StoreStagedTuple(reader, reader->consumed +
								 (reader->filter ? reader->selected[i] : i));
				stored = true;
			}
			slot_getsomeattrs(slot, col->attno);
			GpuJoinStoreDeviceValue(side, col, row, slot->tts_values[col->attno - 1],
									slot->tts_isnull[col->attno - 1]);
		}
		if (stored)
			ExecClearTuple(slot);
	}
}

/* Move row from of the side's batch (device columns and key) to row to */
static void
MoveRow(GpuJoinSide *side, int64 from, int64 to)
{
	for (int c = 0; c < side->ncolumns; c++)
	{
		const GpuJoinColumn *col = &side->columns[c];

		if (col->device < 0)
			continue;
		memcpy(side->device_values[col->device] + to * col->typlen,
			   side->device_values[col->device] + from * col->typlen, col->typlen);
		side->device_nulls[col->device][to] = side->device_nulls[col->device][from];
	}
	side->keys[to] = side->keys[from];
	side->keynulls[to] = side->keynulls[from];
}

/*
 * The quals of the n rows the deform just wrote (at the side's nrows), for
 * those it left undecided evaluated by the executor on their tuples, which
 * raises the error the device only noticed if PostgreSQL's order of
 * evaluation reaches it; the rows that pass close up, in order, with their
 * tuples in selected.  The rows left.
 */
static int64
Recheck(GpuJoinSide *side, GpuJoinHeapReader *reader, int64 n)
{
	int64		kept = 0;

	for (int64 r = 0; r < n; r++)
	{
		uint32		t = reader->selected[r];

		if (t & GJ_DEFORM_UNDECIDED)
		{
			t &= ~GJ_DEFORM_UNDECIDED;
			if (!QualPasses(reader, StoreStagedTuple(reader, reader->consumed + t)))
				continue;
		}
		if (kept != r)
			MoveRow(side, side->nrows + r, side->nrows + kept);
		reader->selected[kept++] = t;
	}
	ExecClearTuple(reader->slot);

	/* the deform sets only the NULLs: clear the places left for the next */
	for (int d = 0; d < side->ndevice; d++)
		memset(side->device_nulls[d] + side->nrows + kept, 0, n - kept);
	memset(side->keynulls + side->nrows + kept, 0, n - kept);
	return kept;
}

/*
 * Whether the host reads tuples of the rows a deform just wrote: numerics
 * it left, or quals it left undecided (TakeHostNumerics, Recheck)
 */
static bool
HostReads(const GpuJoinHeapReader *reader, const GjDeformOut *out)
{
	if (out->host_numerics > 0)
		return true;
	for (int64 r = 0; reader->filter != NULL && r < out->nrows; r++)
		if (reader->selected[r] & GJ_DEFORM_UNDECIDED)
			return true;
	return false;
}

/*
 * Read rows into the side's batch until it holds max_rows or the relation
 * is done; false when the relation had no more rows
 */
bool
GpuJoinHeapFill(GpuJoinState *node, GpuJoinSide *side, int64 max_rows)
{
	GpuJoinHeapReader *reader = side->heap;
	bool		any = false;
	instr_time	start;

	while (side->nrows < max_rows)
	{
		int64		n;
		int64		rows;
		char	   *values[GJ_MAX_COLUMNS];
		uint8	   *nulls[GJ_MAX_COLUMNS];
		GjDeformOut out;
		GjPageBatch batch;

		if (reader->consumed >= reader->cur.ntuples &&
			!StagePages(reader, OpenDevice(node)->kernels))
			break;
		n = Min(reader->cur.ntuples - reader->consumed, max_rows - side->nrows);
		if (side->capacity < side->nrows + n)
		{
			/*
			 * Room for the rest of the relation at the density read so far
			 * (at most max_rows): one allocation, not a doubling per page
			 * (each new array is new staging memory, which the gpujoin
			 * service maps and registers with the driver).  A share of an
			 * inner side whose blocks the processes of a parallel join
			 * share out: room for half as much again as the relation over
			 * the processes, and half as much again past that.  On the
			 * H200 host the shares of 10^8 rows were 0.9 to 1.1 times the
			 * even part over 9 processes and 0.69 to 1.25 times over 5, and
			 * a share that grows takes new staging memory, which the
			 * service page-locks during the query.
			 */
			HeapScanDesc scan = (HeapScanDesc) reader->scan;
			double		per_page = (double) reader->tuples_read / Max(reader->pages_read, 1);
			double		left = per_page * (scan->rs_nblocks - Min(reader->next_block, scan->rs_nblocks)) * 1.05;
			int64		want;
			int			narrays;
			Size		row_bytes = GpuJoinSideRowBytes(side, &narrays);

			if (reader->participants > 0)
				left = Max(per_page * scan->rs_nblocks * 1.5 / reader->participants -
						   side->nrows - n, (double) side->capacity / 2);
			want = Min(max_rows, side->nrows + n + (int64) left);

			/*
			 * the arrays at want rows come together (pinned.c); the set
			 * announced ends with them, or with an ERROR on the way
			 */
			INSTR_TIME_SET_CURRENT(start);
			GpuJoinPinnedExpect(row_bytes * want, narrays);
			PG_TRY();
			{
				GpuJoinReserveSide(side, want);
				AllocFlags(side);
			}
			PG_FINALLY();
			{
				GpuJoinPinnedExpect(0, 0);
			}
			PG_END_TRY();
			reader->alloc_ms += GpuJoinElapsedMs(start);
		}
		AllocFlags(side);

		for (int c = 0; c < side->ncolumns; c++)
		{
			const GpuJoinColumn *col = &side->columns[c];

			if (!DeformedColumn(reader, col))
				continue;		/* a host column, text code or numeric: TakeHostColumns */
			values[col->device] = side->device_values[col->device] + side->nrows * col->typlen;
			nulls[col->device] = side->device_nulls[col->device] + side->nrows;
		}
		out.values = values;
		out.nulls = nulls;
		out.keys = side->keys + side->nrows;
		out.keynulls = side->keynulls + side->nrows;
		out.selected = reader->selected;
		memset(&batch, 0, sizeof(batch));
		batch.pages = reader->cur.pages;
		batch.bytes = (int64) reader->cur.npages * BLCKSZ;
		batch.ntuples = reader->cur.ntuples;
		batch.tuples = reader->cur.tuples;
		batch.page_size = BLCKSZ;
		batch.region = BufferBlocks;
		batch.region_bytes = (int64) NBuffers * BLCKSZ;
		batch.page_index = reader->cur.page_index;
		if (reader->cur.page_lsn != NULL)
		{
			batch.cache_bytes = (int64) gpujoin_page_cache * 1024 * 1024;
			batch.page_lsn = reader->cur.page_lsn;
			batch.page_block = reader->cur.blocks;
			batch.page_starts = reader->cur.page_starts;
			GpuJoinRelationWords(reader->rel, batch.relation);
		}
		/*
		 * The deform; again, with the pages left unread read, where a kept
		 * copy was gone, or where the host must read the tuples itself
		 */
		if (reader->cur.nkept_only > 0 && (side->host_by_tid || reader->host_maxattno > 0))
			ReadKeptPages(reader, &reader->cur);
		for (bool prefetched = false, ahead = false;;)
		{
			bool		last = reader->consumed + n >= reader->cur.ntuples;
			bool		deformed;

			if (last && !prefetched && !ahead)
				ahead = AskAhead(reader);
			deformed = StartDeform(node, reader, &batch, n, &out);

			/*
			 * The device has these pages: read the next ones meanwhile; or,
			 * with their question gone along, once the deform is answered
			 */
			if (deformed && last && !prefetched && !ahead)
			{
				Prefetch(reader, node->gj_Device.kernels);
				prefetched = true;
			}
			if (deformed)
				deformed = FinishDeform(node, reader);
			if (ahead && !prefetched)
			{
				Prefetch(reader, node->gj_Device.kernels);
				prefetched = true;
			}
			if (deformed && (reader->cur.nkept_only == 0 || !HostReads(reader, &out)))
				break;
			/* the host reads this relation's tuples: its next pages are read too */
			if (deformed)
				reader->unread = false;
			ReadKeptPages(reader, &reader->cur);
		}
		reader->bytes_shipped += out.bytes_shipped;
		reader->pages_cached += out.pages_cached;
		rows = out.nrows;
		INSTR_TIME_SET_CURRENT(start);
		if (reader->filter != NULL)
			rows = Recheck(side, reader, rows);
		if (reader->host_maxattno > 0)
			TakeHostColumns(node, side, reader, rows);
		if (out.host_numerics > 0)
			TakeHostNumerics(side, reader, rows);
		reader->host_ms += GpuJoinElapsedMs(start);
		reader->numerics_on_host += out.host_numerics;
		side->heap_null_columns |= out.null_columns;
		side->heap_key_nulls += out.key_nulls;
		side->nrows += rows;
		reader->rows_removed += n - rows;
		reader->consumed += n;
		/* its rows are all taken: its pages need stay pinned no longer */
		if (reader->consumed >= reader->cur.ntuples)
			ReleaseStage(&reader->cur);
		any = true;
	}
	if (side->nrows == 0 && !any)
		side->exhausted = true;
	else if (reader->done && reader->consumed >= reader->cur.ntuples && !reader->next_ready)
		side->exhausted = true;
	return any;
}

/*
 * The side is loaded: drop the flag arrays of the columns and keys that had
 * no NULL, so that nothing is shipped for them
 */
void
GpuJoinHeapTrimNulls(GpuJoinSide *side)
{
	for (int d = 0; d < side->ndevice; d++)
		if ((side->heap_null_columns & (UINT32_C(1) << d)) == 0)
			side->device_nulls[d] = NULL;
	if (side->heap_key_nulls == 0)
		side->keynulls = NULL;
}

/*
 * The next visible tuple of the relation, in a slot of its row type, for a
 * partitioned join's outer side; NULL when there is none
 */
TupleTableSlot *
GpuJoinHeapNextTuple(GpuJoinHeapReader *reader)
{
	for (;;)
	{
		TupleTableSlot *slot;

		if (reader->consumed >= reader->cur.ntuples && !StagePages(reader, &gj_cpu_kernels))
			return NULL;
		slot = StoreStagedTuple(reader, reader->consumed++);
		if (reader->qual == NULL)
			return slot;
		reader->econtext->ecxt_scantuple = slot;
		if (ExecQual(reader->qual, reader->econtext))
		{
			ResetExprContext(reader->econtext);
			return slot;
		}
		ResetExprContext(reader->econtext);
		reader->rows_removed++;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The tuple of row "row" of a side whose host columns are fetched by tid
 * (GpuJoinSide.host_by_tid), deformed up to its host columns in the
 * reader's fetch slot, which keeps its buffer pinned until the next fetch:
 * the scan tuple's values may point into it while the row is returned.  The
 * tuple was visible to the query's snapshot when its page was read, and
 * stays so under the same snapshot (nor can pruning or vacuum remove it
 * while the snapshot holds it back); fetching its own tid, as heap_fetch
 * does, reads that very version, a heap-only one too.
 */
TupleTableSlot *
GpuJoinHeapFetch(GpuJoinSide *side, int64 row)
{
	GpuJoinHeapReader *reader = side->heap;
	ItemPointer tid = &side->tids[row];

	if (reader->fetch_slot == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(reader->cxt);

		reader->fetch_slot = table_slot_create(reader->rel, NULL);
		MemoryContextSwitchTo(old);
		ItemPointerSetInvalid(&reader->fetched);
	}
	if (ItemPointerEquals(&reader->fetched, tid) && !TTS_EMPTY(reader->fetch_slot))
		return reader->fetch_slot;	/* the same outer row, matched again */
	if (!table_tuple_fetch_row_version(reader->rel, tid, reader->snapshot, reader->fetch_slot))
		elog(ERROR, "gpujoin: the tuple at (%u,%u) of \"%s\", read before, is no longer visible",
			 ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid),
			 RelationGetRelationName(reader->rel));
	slot_getsomeattrs(reader->fetch_slot, reader->host_maxattno);
	reader->fetched = *tid;
	return reader->fetch_slot;
}

/* Read the relation again from its first page (a rescan) */
void
GpuJoinHeapRescan(GpuJoinHeapReader *reader)
{
	if (reader->scan != NULL)
		StartScan(reader);
}

void
GpuJoinHeapEnd(GpuJoinHeapReader *reader)
{
	if (reader->fetch_slot != NULL)
		ExecDropSingleTupleTableSlot(reader->fetch_slot);
	reader->fetch_slot = NULL;
	ReleaseStage(&reader->cur);
	ReleaseStage(&reader->next);
	ReleaseAhead(reader);
	if (BufferIsValid(reader->vmbuffer))
		ReleaseBuffer(reader->vmbuffer);
	reader->vmbuffer = InvalidBuffer;
	if (reader->scan != NULL)
		table_endscan(reader->scan);
	reader->scan = NULL;
	FreeStage(reader);
}
