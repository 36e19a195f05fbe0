/*-------------------------------------------------------------------------
 *
 * exec_emit.c
 *	  Emitting the rows of a GpuJoin: matched pairs and unmatched rows, in order
 *
 * Join types other than inner (Join Type in EXPLAIN) keep a matched flag
 * per outer row of the chunk and, for right and full joins, per inner row;
 * a pair matches when it passes the join quals, and the pushed-down quals
 * (the plan's qual) filter every row emitted, NULL-extended ones too, as in
 * nodeHashjoin.c.  A semi join emits an outer row at its first match and
 * skips the rest; an anti join emits only the rows left unmatched.
 *
 * Each match fills the scan tuple from the values the device materialized
 * (device columns) and from the batches through the row numbers it returned
 * (host columns).  Where the variant returns the matches by outer row (NPHJ,
 * BAND, NLJ) or by key (a merge join), the unmatched outer rows of a left,
 * full or anti join come out in their place between the matches
 * (gj_FillInOrder), so the output keeps the order PostgreSQL's own joins
 * would give it.
 *
 * IDENTIFICATION
 *	  src/exec_emit.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "exec.h"
#include "utils/memutils.h"

/*
 * A device column's value from its bytes: raw, a numeric's scaled integer,
 * or a text's code
 */
static inline Datum
DeviceDatum(const GpuJoinColumn *col, const char *bytes)
{
	int64		word;

	if (!GpuJoinColumnConverted(col))
		return fetch_att(bytes, true, col->typlen);
	memcpy(&word, bytes, sizeof(word));
	if (col->dict != NULL)
		return GpuJoinDictValue(col->dict, word);
	return GpuJoinNumericDatum(word, col->scale, word == PG_INT64_MAX);
}

/*
 * Fill the scan tuple with one side's columns of match i of the round:
 * device columns from the values the kernels materialized, host columns
 * from the batch, through the row number
 */
static inline void
FillSide(GpuJoinSide *side, TupleTableSlot *slot, int64 i,
		 const void *const *values, const uint8_t *const *nulls,
		 const GjRowId *rows, int64 first, int64 nrows)
{
	TupleTableSlot *fetched = NULL;

	/* host columns: through the row number, or the row's tuple fetched */
	if (side->nhost > 0)
	{
		if (rows[i] >= nrows)
			elog(ERROR, "gpujoin: the kernels returned row %u of a side of " INT64_FORMAT " rows",
				 rows[i], nrows);
		if (side->host_by_tid)
			fetched = GpuJoinHeapFetch(side, first + rows[i]);
	}
	for (int c = 0; c < side->ncolumns; c++)
	{
		const GpuJoinColumn *col = &side->columns[c];

		if (col->device >= 0)
		{
			const uint8_t *null = nulls[col->device];

			slot->tts_isnull[col->scan_att] = (null != NULL && null[i] != 0);
			slot->tts_values[col->scan_att] =
				slot->tts_isnull[col->scan_att] ? (Datum) 0 :
				DeviceDatum(col, (const char *) values[col->device] + i * col->typlen);
		}
		else if (fetched != NULL)
		{
			slot->tts_values[col->scan_att] = fetched->tts_values[col->attno - 1];
			slot->tts_isnull[col->scan_att] = fetched->tts_isnull[col->attno - 1];
		}
		else
		{
			slot->tts_values[col->scan_att] = side->host_values[col->host][first + rows[i]];
			slot->tts_isnull[col->scan_att] = side->host_isnull[col->host][first + rows[i]];
		}
	}
}

/* The value of a column of row "row" of a side's batch */
Datum
GpuJoinSideDatum(GpuJoinSide *side, const GpuJoinColumn *col, int64 row, bool *isnull)
{
	if (col->device >= 0)
	{
		const uint8 *null = side->device_nulls[col->device];

		*isnull = (null != NULL && null[row] != 0);
		return *isnull ? (Datum) 0 :
			DeviceDatum(col, side->device_values[col->device] + row * col->typlen);
	}
	*isnull = side->host_isnull[col->host][row];
	return side->host_values[col->host][row];
}

/*
 * Fill the scan tuple's columns of one side from row "row" of its batch,
 * or with NULLs when row is -1 (a NULL-extended row)
 */
static void
FillSideFromBatch(GpuJoinSide *side, TupleTableSlot *slot, int64 row)
{
	TupleTableSlot *fetched = (row >= 0 && side->host_by_tid && side->nhost > 0) ?
		GpuJoinHeapFetch(side, row) : NULL;

	for (int c = 0; c < side->ncolumns; c++)
	{
		const GpuJoinColumn *col = &side->columns[c];

		if (row < 0)
		{
			slot->tts_values[col->scan_att] = (Datum) 0;
			slot->tts_isnull[col->scan_att] = true;
		}
		else if (col->device < 0 && fetched != NULL)
		{
			slot->tts_values[col->scan_att] = fetched->tts_values[col->attno - 1];
			slot->tts_isnull[col->scan_att] = fetched->tts_isnull[col->attno - 1];
		}
		else
			slot->tts_values[col->scan_att] =
				GpuJoinSideDatum(side, col, row, &slot->tts_isnull[col->scan_att]);
	}
}

/*
 * Fill the scan tuple with match i of the round
 */
void
GpuJoinFillScanSlot(GpuJoinState *node, TupleTableSlot *slot, int64 i)
{
	const GjMatchRound *round = &node->gj_Round;

	ExecClearTuple(slot);
	FillSide(&node->gj_Outer, slot, i, round->outer_values, round->outer_nulls,
			 round->outer_rows, 0, node->gj_Outer.nrows);
	FillSide(&node->gj_Inner, slot, i, round->inner_values, round->inner_nulls,
			 round->inner_rows, node->gj_InnerFirst, node->gj_InnerCount);
	ExecStoreVirtualTuple(slot);
}

/*
 * The row in the scan tuple as the join returns it: NULL when the plan's
 * qual (the pushed-down quals of an outer join) rejects it, else projected
 */
static inline TupleTableSlot *
OutputRow(GpuJoinState *node, ExprContext *econtext, TupleTableSlot *scanslot)
{
	ExprState  *otherqual = node->css.ss.ps.qual;

	if (otherqual != NULL && !ExecQual(otherqual, econtext))
	{
		InstrCountFiltered1(node, 1);
		return NULL;
	}
	if (node->css.ss.ps.ps_ProjInfo != NULL)
		return ExecProject(node->css.ss.ps.ps_ProjInfo);
	return scanslot;
}

/*
 * A chain of joins (exec_chain.c): match i of the last level's round in
 * the top node's scan tuple.  Each column comes from the side cols names:
 * device values carried in the round, host columns through the row number
 * the round carries for that side.
 */
void
GpuJoinChainFillScanSlot(GpuJoinState *top, const GjMatchRound *round, int64 i,
						 const GpuJoinChainColumn *cols, int ncols)
{
	TupleTableSlot *scanslot = top->css.ss.ss_ScanTupleSlot;
	TupleTableSlot *fetched = NULL;
	GpuJoinSide *fetched_side = NULL;

	ExecClearTuple(scanslot);
	for (int c = 0; c < ncols; c++)
	{
		const GpuJoinChainColumn *cc = &cols[c];
		const GpuJoinColumn *col = cc->col;
		int			att = cc->scan_att;
		GjRowId		row;

		if (cc->values >= 0)
		{
			const uint8_t *null = cc->in_inner ? round->inner_nulls[cc->values] :
				round->outer_nulls[cc->values];
			const char *bytes = cc->in_inner ? round->inner_values[cc->values] :
				round->outer_values[cc->values];

			scanslot->tts_isnull[att] = (null != NULL && null[i] != 0);
			scanslot->tts_values[att] = scanslot->tts_isnull[att] ? (Datum) 0 :
				DeviceDatum(col, bytes + i * col->typlen);
			continue;
		}
		row = cc->rows == GJ_CHAIN_OUTER_ROWS ? round->outer_rows[i] :
			cc->rows == GJ_CHAIN_INNER_ROWS ? round->inner_rows[i] :
			((const GjRowId *) round->outer_values[cc->rows])[i];
		if (row == GJ_NO_ROW)
		{
			/* a left level's row with no match: its side's columns NULL */
			scanslot->tts_values[att] = (Datum) 0;
			scanslot->tts_isnull[att] = true;
			continue;
		}
		if (row >= cc->side->nrows)
			elog(ERROR, "gpujoin: a chain of joins returned row %u of a side of " INT64_FORMAT " rows",
				 row, cc->side->nrows);
		if (cc->side->host_by_tid)
		{
			/* the row's tuple, fetched once for all its columns */
			if (fetched_side != cc->side)
			{
				fetched = GpuJoinHeapFetch(cc->side, row);
				fetched_side = cc->side;
			}
			scanslot->tts_values[att] = fetched->tts_values[col->attno - 1];
			scanslot->tts_isnull[att] = fetched->tts_isnull[col->attno - 1];
			continue;
		}
		scanslot->tts_values[att] = cc->side->host_values[col->host][row];
		scanslot->tts_isnull[att] = cc->side->host_isnull[col->host][row];
	}
	ExecStoreVirtualTuple(scanslot);
}

/*
 * A chain of joins: the next match of the last level's round, from *pos
 * on, that passes the top node's join quals, projected; NULL when the round
 * is used up
 */
TupleTableSlot *
GpuJoinChainEmitNext(GpuJoinState *top, const GjMatchRound *round, int64 *pos,
					 const GpuJoinChainColumn *cols, int ncols)
{
	ExprContext *econtext = top->css.ss.ps.ps_ExprContext;
	TupleTableSlot *scanslot = top->css.ss.ss_ScanTupleSlot;

	while (*pos < round->nmatches)
	{
		int64		i = (*pos)++;
		TupleTableSlot *slot;

		ResetExprContext(econtext);
		GpuJoinChainFillScanSlot(top, round, i, cols, ncols);
		econtext->ecxt_scantuple = scanslot;

		if (top->gj_JoinQual != NULL && !ExecQual(top->gj_JoinQual, econtext))
		{
			InstrCountFiltered2(top, 1);
			continue;
		}
		slot = OutputRow(top, econtext, scanslot);
		if (slot != NULL)
			return slot;
	}
	return NULL;
}

/*
 * GJ_EMIT: the next match of the round that passes the quals, projected;
 * NULL when the round is used up
 */
TupleTableSlot *
GpuJoinEmitNextMatch(GpuJoinState *node)
{
	ExprContext *econtext = node->css.ss.ps.ps_ExprContext;
	TupleTableSlot *scanslot = node->css.ss.ss_ScanTupleSlot;

	while (node->gj_RoundPos < node->gj_Round.nmatches)
	{
		int64		i = node->gj_RoundPos;
		GjRowId		outer_row = 0;
		TupleTableSlot *slot;

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
			slot = GpuJoinEmitNextUnmatched(node, true, outer_row);
			if (slot != NULL)
				return slot;
		}
		node->gj_RoundPos++;

		/* a semi join wants one match per outer row */
		if (node->gj_JoinType == JOIN_SEMI && node->gj_OuterMatched[outer_row])
			continue;

		ResetExprContext(econtext);
		GpuJoinFillScanSlot(node, scanslot, i);
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

		slot = OutputRow(node, econtext, scanslot);
		if (slot != NULL)
			return slot;
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
void
GpuJoinSortOuterRows(GpuJoinState *node)
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
TupleTableSlot *
GpuJoinEmitNextUnmatched(GpuJoinState *node, bool outer, int64 limit)
{
	ExprContext *econtext = node->css.ss.ps.ps_ExprContext;
	TupleTableSlot *scanslot = node->css.ss.ss_ScanTupleSlot;
	const GpuJoinSide *side = outer ? &node->gj_Outer : &node->gj_Inner;
	const bool *matched = outer ? node->gj_OuterMatched : node->gj_InnerMatched;

	for (;;)
	{
		int64		row;
		TupleTableSlot *slot;

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

		slot = OutputRow(node, econtext, scanslot);
		if (slot != NULL)
			return slot;
	}
	return NULL;
}
