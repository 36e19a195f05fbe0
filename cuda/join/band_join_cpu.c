/*-------------------------------------------------------------------------
 *
 * band_join_cpu.c
 *	  CPU twin of band_join.cu, the band (range) join (BAND): the same
 *	  contract, written for clarity
 *
 * This file is the specification of the BAND kernels: if band_join.cu and
 * this file disagree on any input, band_join.cu is wrong.  It is also the
 * fallback when there is no GPU, or when the GPU runs out of memory in the
 * middle of a join, so it must produce the very same arrays, element by
 * element, not merely the same set of matches.
 *
 * WHAT MATCHES
 *
 * Outer row i carries a range, keys[i] .. keys_hi[i], inclusive, unsigned
 * (the caller turns strict bounds into inclusive ones, and an unbounded
 * side into 0 or UINT64_MAX); it matches the inner rows whose key lies in
 * it.  An outer row flagged NULL, or whose range is empty (keys[i] >
 * keys_hi[i]), matches nothing; an inner row with a NULL key is never
 * matched.  Bellas and Gounaris run such joins as a nested loop (Bellas
 * and Gounaris 2017, §1, §5); the sort and search done here instead cost
 * O((n + m) log m + matches) rather than O(n m).
 *
 * THE ORDER
 *
 * gpujoin_kernels.h numbers the matches of a BAND chunk by outer row, then
 * by inner key (unsigned), then by inner row.  The inner (key, row) pairs
 * are sorted by a stable sort, so the inner rows of one key keep ascending
 * order; the matches of outer row i are then one run of neighbouring
 * sorted pairs, in the contract's order, and the runs of the outer rows
 * one after the other, in row order, are the chunk's matches.  The outer
 * side is not sorted at all.
 *
 * BUILD
 *
 *	  1. the range [min, max] of the non-NULL inner keys; no keys: no build
 *	  2. the (key, row) pairs of the non-NULL rows, sorted by a stable LSD
 *		 radix sort on the low gj_smj_sort_bits(min, max) bits: the very
 *		 sort of SMJ's build (gj_cpu_sort_pairs, key_sort_cpu.c)
 *
 * COUNT (one outer chunk, in row order)
 *
 *	  1. for each outer row with a range: lower = the first sorted inner
 *		 position whose key is not below keys[i] (the lower bound), upper
 *		 = the first whose key is above keys_hi[i] (the upper bound,
 *		 searched from lower on), by binary search (gj_smj_bound); its
 *		 count is upper - lower
 *	  2. the exclusive prefix sum of the counts, in 64 bits: offsets[i] is
 *		 the number of row i's first match, offsets[n] the chunk's total
 *
 * A chunk's total can pass 2^32 by far (every range covering every inner
 * key: n x m matches, 10^10 for 10^5 rows a side); nothing is ever sized
 * by it.
 *
 * RETRIEVE (the matches first .. first + max_matches - 1)
 *
 * Match m of row i is sorted inner position lower[i] + (m - offsets[i]):
 * ranges of sorted pairs, the retrieve that SMJ shares
 * (gj_cpu_ranges_retrieve, key_sort_cpu.c), with outer row i as the
 * position.  A round finds the row of its first match by binary search on
 * the offsets and reads only the rows whose matches meet it, so a round
 * costs O(log n + max_matches) wherever it lies, and the 10^10 matches
 * above come out in bounded rounds like any others.
 *
 * PAYLOAD COLUMNS (materialize_cpu.c; Wu et al. 2025, §3.1.1, §4.1)
 *
 *	  GFUR	a round gathers the inner columns by inner row, from the columns
 *			as they came
 *	  GFTR	the inner columns are permuted into sorted order once, at
 *			build (the sort's transform, as for SMJ), and a round gathers
 *			them by sorted position: the matches of a row are neighbouring
 *			positions, a sequential read
 *
 * The outer side is taken in row order and not transformed: both gather
 * its columns by outer row, which ascends within a round.
 *
 * IDENTIFICATION
 *	  cuda/join/band_join_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cpu_internal.h"
#include "gpujoin_kernels.h"

/*
 * BAND's state (ctx->variant_state)
 *
 * The sorted inner side, kept from one build to the next:
 *	nkeys			inner rows with a non-NULL key; 0: nothing matches
 *	sort_bits		gj_smj_sort_bits of their smallest and largest key
 *	inner_keys		uint64_t[nkeys], sorted
 *	inner_rows		GjRowId[nkeys], the row of each sorted key
 *
 * The counted chunk, kept for retrieve:
 *	lower			GjRowId[outer rows], each row's lower bound
 *	offsets			uint64_t[outer rows + 1], exclusive prefix sum of the
 *					rows' match counts
 *
 * Scratch of the radix sort: keys_alt, rows_alt.
 */
typedef struct BandState
{
	int64_t		nkeys;
	int			sort_bits;
	GjHostBuffer inner_keys;
	GjHostBuffer inner_rows;

	GjHostBuffer lower;
	GjHostBuffer offsets;

	GjHostBuffer keys_alt;
	GjHostBuffer rows_alt;
} BandState;

/* The body of the BAND build, for a non-empty inner side */
static GjStatus
BuildSorted(GjCpuContext *ctx, BandState *state, const GjBatch *inner,
			GjError *err)
{
	GjHostSortBuffers buffers;
	bool		has_keys;
	uint64_t	min_key;
	uint64_t	max_key;
	int64_t		nkeys;
	int			sort_bits;
	GjStatus	status;

	/* 1. The range of the keys; nothing to build without keys */
	gj_cpu_key_range(inner->keys, inner->nulls, inner->nrows, &has_keys,
					 &min_key, &max_key);
	if (!has_keys)
		return GJ_OK;
	sort_bits = gj_smj_sort_bits(min_key, max_key);

	/* 2. The pairs of the non-NULL rows, sorted */
	buffers.keys = &state->inner_keys;
	buffers.rows = &state->inner_rows;
	buffers.keys_alt = &state->keys_alt;
	buffers.rows_alt = &state->rows_alt;
	status = gj_cpu_sort_pairs(GJ_SIDE_INNER, inner->keys, inner->nulls,
							   inner->nrows, min_key, max_key, sort_bits,
							   &buffers, &nkeys, err);
	if (status != GJ_OK)
		return status;

	/*
	 * 3. The payload columns: GFUR keeps them in row order; GFTR permutes
	 * them into sorted order, the sort's transform, and drops the originals
	 * (BandBuild)
	 */
	status = gj_cpu_columns_load(ctx, GJ_SIDE_INNER, inner,
								 (const GjRowId *) state->inner_rows.ptr,
								 nkeys, err);
	if (status != GJ_OK)
		return status;

	state->sort_bits = sort_bits;
	state->nkeys = nkeys;
	return GJ_OK;
}

/*
 * Sort the inner side (GjCpuVariant.build)
 *
 * Replaces the sorted side of an earlier call.  An empty inner side, or
 * one whose keys are all NULL, sorts nothing: every outer row then counts
 * 0 matches.
 */
static GjStatus
BandBuild(GjCpuContext *ctx, const GjBatch *inner, GjError *err)
{
	BandState  *state = (BandState *) gj_cpu_variant_state(ctx, sizeof(BandState),
														   "a band join", err);
	GjStatus	status = GJ_OK;

	if (state == NULL)
		return GJ_ERROR_HOST_MEMORY;
	state->nkeys = 0;
	state->sort_bits = 0;

	if (inner->nrows > 0)
		status = BuildSorted(ctx, state, inner, err);

	/* The sort's scratch is not needed by the probe */
	gj_cpu_buffer_release(&state->keys_alt);
	gj_cpu_buffer_release(&state->rows_alt);
	if (ctx->spec.materialize == GJ_MATERIALIZE_GFTR)
		gj_cpu_columns_release(ctx, GJ_COLUMNS_INNER);

	if (status != GJ_OK)
		state->nkeys = 0;
	else
		gj_smj_describe(state->nkeys, state->sort_bits, false,
						ctx->stats.detail, sizeof(ctx->stats.detail));
	return status;
}

/*
 * The bounds of every outer row: lower[i], and the count (upper - lower)
 * into offsets[i]; offsets[nrows] = 0
 *
 * A row flagged NULL, or with an empty range, counts 0 (its lower bound,
 * 0, is never read).
 */
static void
FindBounds(const BandState *state, const GjBatch *outer, uint64_t *offsets,
		   GjRowId *lower)
{
	const uint64_t *inner_keys = (const uint64_t *) state->inner_keys.ptr;
	int64_t		n = state->nkeys;

	for (int64_t row = 0; row < outer->nrows; row++)
	{
		uint64_t	lo = outer->keys[row];
		uint64_t	hi = outer->keys_hi[row];
		int64_t		first = 0;
		int64_t		last = 0;

		if (!gj_flag_set(outer->nulls, row) && lo <= hi)
		{
			first = gj_smj_bound(inner_keys, 0, n, lo, false);
			last = gj_smj_bound(inner_keys, first, n, hi, true);
		}
		lower[row] = (GjRowId) first;
		offsets[row] = (uint64_t) (last - first);
	}
	offsets[outer->nrows] = 0;
}

/* The body of the BAND count, for a chunk that can have matches */
static GjStatus
CountChunk(GjCpuContext *ctx, BandState *state, const GjBatch *outer,
		   uint64_t *nmatches, GjError *err)
{
	int64_t		nrows = outer->nrows;
	uint64_t	sum;
	GjStatus	status;

	/* 1. The bounds and counts of each row; 2. offsets by prefix sum */
	status = gj_cpu_buffer_reserve(&state->lower, (size_t) nrows * sizeof(GjRowId),
								   "the outer chunk's lower bounds", err);
	if (status == GJ_OK)
		status = gj_cpu_buffer_reserve(&state->offsets,
									   (size_t) (nrows + 1) * sizeof(uint64_t),
									   "the outer chunk's match offsets", err);
	if (status != GJ_OK)
		return status;
	FindBounds(state, outer, (uint64_t *) state->offsets.ptr,
			   (GjRowId *) state->lower.ptr);
	sum = gj_cpu_count_offsets((uint64_t *) state->offsets.ptr, nrows);

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
 * Keeps the chunk's bounds, match offsets and payload columns for
 * retrieve (copies: the caller's arrays need not outlive count).
 */
static GjStatus
BandCount(GjCpuContext *ctx, const GjBatch *outer, uint64_t *nmatches,
		  GjError *err)
{
	BandState  *state = (BandState *) ctx->variant_state;

	*nmatches = 0;
	/* Nothing can match: no arrays are needed, retrieve returns 0 */
	if (outer->nrows == 0 || state == NULL || state->nkeys == 0)
		return GJ_OK;
	return CountChunk(ctx, state, outer, nmatches, err);
}

/*
 * Write the round maps of the matches first .. first + round_size - 1
 * (GjCpuVariant.retrieve)
 *
 * The ranges of sorted inner positions that the count found, one per
 * outer row (gj_cpu_ranges_retrieve, key_sort_cpu.c).  The outer payload
 * comes by row; the inner payload by row from the columns as they came
 * (GFUR) or by sorted position from the transformed ones (GFTR)
 * (gj_round_plan: the outer side is not transformed).
 */
static GjStatus
BandRetrieve(GjCpuContext *ctx, uint64_t first, int64_t round_size,
			 GjRoundSources *sources, GjError *err)
{
	BandState  *state = (BandState *) ctx->variant_state;
	GjRowId    *round_maps[GJ_NUM_ROUND_MAPS];
	GjSortedRanges ranges;
	GjStatus	status;

	status = gj_cpu_round_maps_reserve(ctx, false, round_size, sources,
									   round_maps, err);
	if (status != GJ_OK)
		return status;

	ranges.npos = ctx->outer_rows;
	ranges.offsets = (const uint64_t *) state->offsets.ptr;
	ranges.lower = (const GjRowId *) state->lower.ptr;
	ranges.match_pos = NULL;
	ranges.outer_rows = NULL;	/* position i is outer row i */
	ranges.inner_rows = (const GjRowId *) state->inner_rows.ptr;
	gj_cpu_ranges_retrieve(&ranges, first, round_size, round_maps);
	return GJ_OK;
}

/* Free the state and its arrays (GjCpuVariant.destroy_state) */
static void
BandDestroyState(GjCpuContext *ctx)
{
	BandState  *state = (BandState *) ctx->variant_state;

	if (state == NULL)
		return;
	gj_cpu_buffer_release(&state->inner_keys);
	gj_cpu_buffer_release(&state->inner_rows);
	gj_cpu_buffer_release(&state->lower);
	gj_cpu_buffer_release(&state->offsets);
	gj_cpu_buffer_release(&state->keys_alt);
	gj_cpu_buffer_release(&state->rows_alt);
	free(state);
	ctx->variant_state = NULL;
}

const GjCpuVariant gj_cpu_band = {
	.name = "BAND",
	.build = BandBuild,
	.count = BandCount,
	.retrieve = BandRetrieve,
	.destroy_state = BandDestroyState,
};
