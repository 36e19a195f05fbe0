/*-------------------------------------------------------------------------
 *
 * theta_nlj_cpu.c
 *	  CPU twin of theta_nlj.cu, the theta nested-loop join (NLJ): the same
 *	  contract, written for clarity
 *
 * This file is the specification of the NLJ kernels: if theta_nlj.cu and
 * this file disagree on any input, theta_nlj.cu is wrong.  It is also the
 * fallback when there is no GPU, or when the GPU runs out of memory in the
 * middle of a join, so it must produce the very same arrays, element by
 * element, not merely the same set of matches.
 *
 * WHAT MATCHES
 *
 * The spec has nterms comparison terms (1 .. GJ_MAX_TERMS); each row of
 * either side carries one normalized value per term, terms[t][row].  Outer
 * row i matches inner row j when every term holds:
 *
 *	  inner.terms[t][j]  ops[t]  outer.terms[t][i]		(unsigned)
 *
 * with ops LT, LE, GT, GE, EQ and NE.  A row with a NULL value in any term
 * matches nothing (the value is unknown, so no comparison on it holds, and
 * a conjunction with an unknown term is not true).  The keys of the
 * batches are not used.  This is the join that Bellas and Gounaris run on
 * the GPU (Bellas and Gounaris 2017, §5: every pair is tested):
 * the answer for any conjunction of comparisons that no sort can prune,
 * while a single range on one column is BAND's (band_join_cpu.c).
 *
 * THE ORDER
 *
 * gpujoin_kernels.h numbers the matches of an NLJ chunk by outer row, then
 * by inner row: the order of the nested loop below, outer loop outside.
 *
 * BUILD
 *
 * The inner side's term values are copied (the caller's arrays need not
 * outlive the call), with one flag a row: skip, when any of its terms is
 * NULL.  Nothing is sorted or indexed.
 *
 * COUNT (one outer chunk)
 *
 *	  1. the outer terms and skip flags, copied likewise
 *	  2. for each outer row, the inner rows that match it, counted by
 *		 testing every pair: O(n m nterms)
 *	  3. the exclusive prefix sum of the counts, in 64 bits: offsets[i] is
 *		 the number of row i's first match, offsets[n] the chunk's total,
 *		 which can pass 2^32 (n x m when every pair matches)
 *
 * The cost of a count grows with the outer chunk times the inner side, so
 * count may be called on a chunk whose size the caller bounds (the
 * PostgreSQL side checks for cancellation between calls).
 *
 * RETRIEVE (the matches first .. first + max_matches - 1)
 *
 * The row of the first match by binary search on the offsets
 * (gj_seek_match_row); then, row by row, the same loop over the inner side
 * as the count's, numbering the row's matches from offsets[i] and writing
 * those that fall into the window, until the window is full.  A row whose
 * matches outlast the round goes on in the next one, which finds it again
 * by the search and numbers its matches from the start.  Only the rows
 * whose matches meet the window are visited.
 *
 * PAYLOAD COLUMNS (materialize_cpu.c)
 *
 * A nested loop transforms neither side: it puts no rows in any order.
 * So both materializations gather both sides' columns by row, from the
 * columns as they came: GFTR is GFUR here (gj_round_plan), and there is
 * nothing to transform at build or count.
 *
 * IDENTIFICATION
 *	  cuda/join/theta_nlj_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cpu_internal.h"
#include "gpujoin_kernels.h"

/*
 * One side's terms, as copied: terms[t * nrows + row] is term t of row,
 * and skip[row] is 1 when one of its terms is NULL
 */
typedef struct NljSide
{
	int64_t		nrows;
	GjHostBuffer terms;
	GjHostBuffer skip;
} NljSide;

/*
 * NLJ's state (ctx->variant_state)
 *
 *	inner		the inner side's terms, kept from one build to the next
 *	outer		the counted chunk's terms, kept for retrieve
 *	offsets		uint64_t[outer rows + 1], exclusive prefix sum of the
 *				outer rows' match counts
 */
typedef struct NljState
{
	NljSide		inner;
	NljSide		outer;
	GjHostBuffer offsets;
} NljState;

/*
 * Copy a batch's term values into side, term after term, and flag the rows
 * with a NULL term
 */
static GjStatus
CopyTerms(const GjJoinSpec *spec, const GjBatch *batch, NljSide *side,
		  const char *terms_name, const char *skip_name, GjError *err)
{
	size_t		nrows = (size_t) batch->nrows;
	uint64_t   *terms;
	uint8_t    *skip;
	GjStatus	status;

	status = gj_cpu_buffer_reserve(&side->terms,
								   (size_t) spec->nterms * nrows * sizeof(uint64_t),
								   terms_name, err);
	if (status == GJ_OK)
		status = gj_cpu_buffer_reserve(&side->skip, nrows, skip_name, err);
	if (status != GJ_OK)
		return status;
	terms = (uint64_t *) side->terms.ptr;
	skip = (uint8_t *) side->skip.ptr;

	memset(skip, 0, nrows);
	for (int t = 0; t < spec->nterms && nrows > 0; t++)
	{
		memcpy(terms + (size_t) t * nrows, batch->terms[t], nrows * sizeof(uint64_t));
		for (size_t row = 0; row < nrows; row++)
		{
			if (gj_flag_set(batch->term_nulls[t], (int64_t) row))
				skip[row] = 1;
		}
	}
	side->nrows = batch->nrows;
	return GJ_OK;
}

/*
 * Take in the inner side (GjCpuVariant.build): its terms and payload
 * columns, as they came
 *
 * Replaces the inner side of an earlier call.
 */
static GjStatus
NljBuild(GjCpuContext *ctx, const GjBatch *inner, GjError *err)
{
	NljState   *state = (NljState *) gj_cpu_variant_state(ctx, sizeof(NljState),
														  "a nested-loop join", err);
	GjStatus	status;

	if (state == NULL)
		return GJ_ERROR_HOST_MEMORY;
	state->inner.nrows = 0;

	status = CopyTerms(&ctx->spec, inner, &state->inner, "the inner terms",
					   "the inner rows' NULL terms", err);
	if (status == GJ_OK && ctx->spec.inner_ncolumns > 0)
		status = gj_cpu_columns_upload(ctx, GJ_COLUMNS_INNER, inner, err);

	if (status != GJ_OK)
		state->inner.nrows = 0;
	else
		gj_nlj_describe(ctx->spec.nterms, ctx->stats.detail,
						sizeof(ctx->stats.detail));
	return status;
}

/* Does "inner op outer" hold? */
static bool
TermHolds(GjThetaOp op, uint64_t inner, uint64_t outer)
{
	switch (op)
	{
		case GJ_THETA_LT:
			return inner < outer;
		case GJ_THETA_LE:
			return inner <= outer;
		case GJ_THETA_GT:
			return inner > outer;
		case GJ_THETA_GE:
			return inner >= outer;
		case GJ_THETA_EQ:
			return inner == outer;
		case GJ_THETA_NE:
			return inner != outer;
	}
	return false;
}

/* Does outer row i match inner row j?  Every term holds, no value is NULL */
static bool
PairMatches(const GjJoinSpec *spec, const NljSide *inner, int64_t j,
			const NljSide *outer, int64_t i)
{
	const uint64_t *inner_terms = (const uint64_t *) inner->terms.ptr;
	const uint64_t *outer_terms = (const uint64_t *) outer->terms.ptr;

	if (((const uint8_t *) inner->skip.ptr)[j] || ((const uint8_t *) outer->skip.ptr)[i])
		return false;
	for (int t = 0; t < spec->nterms; t++)
	{
		if (!TermHolds(spec->ops[t], inner_terms[t * inner->nrows + j],
					   outer_terms[t * outer->nrows + i]))
			return false;
	}
	return true;
}

/* The body of the NLJ count, for a chunk that can have matches */
static GjStatus
CountChunk(GjCpuContext *ctx, NljState *state, const GjBatch *outer,
		   uint64_t *nmatches, GjError *err)
{
	uint64_t   *offsets;
	uint64_t	sum;
	GjStatus	status;

	/* 1. The outer terms */
	status = CopyTerms(&ctx->spec, outer, &state->outer, "the outer terms",
					   "the outer rows' NULL terms", err);
	if (status == GJ_OK)
		status = gj_cpu_buffer_reserve(&state->offsets,
									   (size_t) (outer->nrows + 1) * sizeof(uint64_t),
									   "the outer chunk's match offsets", err);
	if (status != GJ_OK)
		return status;
	offsets = (uint64_t *) state->offsets.ptr;

	/* 2. The matches of every outer row, every pair tested */
	for (int64_t i = 0; i < outer->nrows; i++)
	{
		uint64_t	count = 0;

		for (int64_t j = 0; j < state->inner.nrows; j++)
		{
			if (PairMatches(&ctx->spec, &state->inner, j, &state->outer, i))
				count++;
		}
		offsets[i] = count;
	}
	offsets[outer->nrows] = 0;

	/* 3. Offsets by prefix sum */
	sum = gj_cpu_count_offsets(offsets, outer->nrows);

	/* The payload columns, kept only when some row has a match */
	if (sum > 0 && ctx->spec.outer_ncolumns > 0)
	{
		status = gj_cpu_columns_upload(ctx, GJ_COLUMNS_OUTER, outer, err);
		if (status != GJ_OK)
			return status;
	}
	*nmatches = sum;
	return GJ_OK;
}

/*
 * Count the matches of one outer chunk (GjCpuVariant.count)
 *
 * Keeps the chunk's terms, match offsets and payload columns for retrieve
 * (copies: the caller's arrays need not outlive count).
 */
static GjStatus
NljCount(GjCpuContext *ctx, const GjBatch *outer, uint64_t *nmatches,
		 GjError *err)
{
	NljState   *state = (NljState *) ctx->variant_state;

	*nmatches = 0;
	if (state != NULL)
		state->outer.nrows = 0;
	/* Nothing can match: no arrays are needed, retrieve returns 0 */
	if (outer->nrows == 0 || state == NULL || state->inner.nrows == 0)
		return GJ_OK;
	return CountChunk(ctx, state, outer, nmatches, err);
}

/*
 * Write the round maps of the matches first .. first + round_size - 1
 * (GjCpuVariant.retrieve)
 *
 * From the row that holds match "first" on, each row's matches are found
 * again by the count's loop and numbered from offsets[i]; those in the
 * window are written.  Both sides' payload comes by row (gj_round_plan),
 * so the round's maps are the rows alone, and when the round needs
 * neither (no payload, no row ids) there is nothing to write.
 */
static GjStatus
NljRetrieve(GjCpuContext *ctx, uint64_t first, int64_t round_size,
			GjRoundSources *sources, GjError *err)
{
	NljState   *state = (NljState *) ctx->variant_state;
	const uint64_t *offsets = (const uint64_t *) state->offsets.ptr;
	uint64_t	window_end = first + (uint64_t) round_size;
	GjRowId    *maps[GJ_NUM_ROUND_MAPS];
	GjRowId    *outer_rows;
	GjRowId    *inner_rows;
	GjStatus	status;

	status = gj_cpu_round_maps_reserve(ctx, false, round_size, sources, maps, err);
	if (status != GJ_OK)
		return status;
	outer_rows = maps[GJ_ROUND_OUTER_ROWS];
	inner_rows = maps[GJ_ROUND_INNER_ROWS];
	if (outer_rows == NULL && inner_rows == NULL)
		return GJ_OK;

	for (int64_t i = gj_seek_match_row(offsets, state->outer.nrows, first);
		 i < state->outer.nrows && offsets[i] < window_end;
		 i++)
	{
		uint64_t	match = offsets[i];

		for (int64_t j = 0; j < state->inner.nrows && match < offsets[i + 1] &&
			 match < window_end; j++)
		{
			if (!PairMatches(&ctx->spec, &state->inner, j, &state->outer, i))
				continue;
			if (match >= first)
			{
				if (outer_rows != NULL)
					outer_rows[match - first] = (GjRowId) i;
				if (inner_rows != NULL)
					inner_rows[match - first] = (GjRowId) j;
			}
			match++;
		}
	}
	return GJ_OK;
}

/* Free the state and its arrays (GjCpuVariant.destroy_state) */
static void
NljDestroyState(GjCpuContext *ctx)
{
	NljState   *state = (NljState *) ctx->variant_state;

	if (state == NULL)
		return;
	gj_cpu_buffer_release(&state->inner.terms);
	gj_cpu_buffer_release(&state->inner.skip);
	gj_cpu_buffer_release(&state->outer.terms);
	gj_cpu_buffer_release(&state->outer.skip);
	gj_cpu_buffer_release(&state->offsets);
	free(state);
	ctx->variant_state = NULL;
}

const GjCpuVariant gj_cpu_nlj = {
	.name = "NLJ",
	.build = NljBuild,
	.count = NljCount,
	.retrieve = NljRetrieve,
	.destroy_state = NljDestroyState,
};
