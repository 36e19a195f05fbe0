/*-------------------------------------------------------------------------
 *
 * sort_merge_cpu.c
 *	  CPU twin of sort_merge.cu, the sort-merge join (SMJ): the same
 *	  contract, written for clarity
 *
 * This file is the specification of the SMJ kernels: if sort_merge.cu and
 * this file disagree on any input, sort_merge.cu is wrong.  It is also the
 * fallback when there is no GPU, or when the GPU runs out of memory in the
 * middle of a join, so it must produce the very same arrays, element by
 * element, not merely the same set of matches.
 *
 * THE ORDER
 *
 * gpujoin_kernels.h numbers the matches of an SMJ chunk by key (unsigned
 * order, which src/keys.c makes SQL order), then by outer row, then by
 * inner row: the order of a merge of the two sorted sides, which is what
 * lets PostgreSQL's GpuMergeJoin claim sorted output.  Both sides are
 * sorted as (key, row) pairs by a stable sort, so equal keys keep
 * ascending rows; then the matches of the i-th sorted outer pair are the
 * inner pairs with an equal key, in their sorted (ascending row) order,
 * and numbering them in sorted outer order is the contract's order.
 *
 * BUILD (Rui 2020, §4.1.3; Wu et al. 2025, §3.1.1)
 *
 *	  1. the range [min, max] of the non-NULL inner keys; no keys: no build
 *	  2. the (key, row) pairs of the non-NULL rows, in row order, sorted by
 *		 a stable LSD radix sort, 8 bits a pass, on the low
 *		 gj_smj_sort_bits(min, max) bits (common.h): the bits above them
 *		 are the same in every key of the range (gj_cpu_sort_pairs,
 *		 key_sort_cpu.c, shared with BAND)
 *	  3. unique: no two neighbouring sorted keys are equal, so an outer row
 *		 has at most one match (PK-FK, and PK-PK)
 *
 * Every 64-bit value, 0 and UINT64_MAX included, is an ordinary key:
 * nothing is a sentinel, since NULL keys are left out rather than sorted.
 *
 * COUNT (one outer chunk)
 *
 *	  1. the (key, row) pairs of the rows with a non-NULL key in [min, max],
 *		 in row order (no other key can match, so the rest are not
 *		 sorted), sorted the same way: "positions" 0 .. npos-1 of the chunk
 *	  2. for each position, the equal inner keys: sorted inner positions
 *		 lower .. upper-1, by the lower and upper bound of its key
 *	  3. counts upper - lower, and their exclusive prefix sum in 64 bits:
 *		 offsets[p] is the number of position p's first match
 *
 * Here the bounds come from a merge: the sorted outer keys ascend, so each
 * search starts where the last one ended and gallops forward (doubling
 * steps, then a binary search, gj_smj_bound), O(log gap) each, and a run
 * of equal outer keys searches once.  The GPU runs one binary search per
 * position instead; both find the same bounds, which are numbers, not
 * choices.
 *
 * With a unique inner side (PK-FK and PK-PK joins: the build's flag) a
 * position has at most one match: one search (the lower bound, and whether
 * its key is equal), counts of 0 or 1, and instead of expanding ranges the
 * count writes the list of matched positions itself, match_pos[offsets[p]]
 * = p, so that retrieve reads match m's position at match_pos[m].  In the
 * general case retrieve finds the position that holds match m by binary
 * search on the offsets (gj_seek_match_row) and takes inner position
 * lower + (m - offsets[p]): no position walks its own matches, so a key
 * with a million matches costs a million independent steps, not one long
 * one (the GPU gives each match its own thread).  Both are the retrieve of
 * ranges of sorted pairs that BAND shares (gj_cpu_ranges_retrieve,
 * key_sort_cpu.c).
 *
 * PAYLOAD COLUMNS (materialize_cpu.c; Wu et al. 2025, §3.1.1, §4.1)
 *
 *	  GFUR	the sort transforms (key, row); a round gathers each side's
 *			columns by row, from the columns as they came
 *	  GFTR	the columns are transformed with the keys: each is permuted
 *			into sorted order (inner at build, outer at count), the
 *			permutation that a stable sort of (key, column value) would
 *			apply; a round gathers them by sorted position: the outer
 *			side's positions ascend within a round (sequential), and the
 *			inner side's are runs of neighbours (clustered)
 *
 * Wu et al.'s SMJ-TR sorts every (key, column) pair again; sort_merge.cu's
 * banner says why we apply the sort's permutation instead.  Either way the
 * value at sorted position p is that of the row the sort put at p, so both
 * materializations hand out the same values.
 *
 * IDENTIFICATION
 *	  cuda/join/sort_merge_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cpu_internal.h"
#include "gpujoin_kernels.h"

/*
 * SMJ's state (ctx->variant_state)
 *
 * The sorted inner side, kept from one build to the next:
 *	nkeys			inner rows with a non-NULL key; 0: nothing matches
 *	min_key			smallest and largest of their keys
 *	max_key
 *	sort_bits		gj_smj_sort_bits(min_key, max_key)
 *	unique			no inner key occurs twice
 *	inner_keys		uint64_t[nkeys], sorted
 *	inner_rows		GjRowId[nkeys], the row of each sorted key
 *
 * The counted chunk, kept for retrieve:
 *	npos			outer rows with a key in [min_key, max_key]: the
 *					sorted positions
 *	outer_keys		uint64_t[npos], sorted (count's scratch)
 *	outer_rows		GjRowId[npos], the row of each position
 *	lower			GjRowId[npos], the first inner position with an equal
 *					key (the lower bound)
 *	offsets			uint64_t[npos + 1], exclusive prefix sum of the
 *					positions' match counts
 *	match_pos		GjRowId[matches], unique inner only: the position of
 *					each match
 *
 * Scratch of the radix sort: keys_alt, rows_alt.
 */
typedef struct SmjState
{
	int64_t		nkeys;
	uint64_t	min_key;
	uint64_t	max_key;
	int			sort_bits;
	bool		unique;
	GjHostBuffer inner_keys;
	GjHostBuffer inner_rows;

	int64_t		npos;
	GjHostBuffer outer_keys;
	GjHostBuffer outer_rows;
	GjHostBuffer lower;
	GjHostBuffer offsets;
	GjHostBuffer match_pos;

	GjHostBuffer keys_alt;
	GjHostBuffer rows_alt;
} SmjState;

/*
 * The sort buffers of one side (gj_cpu_sort_pairs): keys and rows, and the
 * state's double buffers
 */
static GjHostSortBuffers
SmjSortBuffers(SmjState *state, GjHostBuffer *keys, GjHostBuffer *rows)
{
	GjHostSortBuffers buffers;

	buffers.keys = keys;
	buffers.rows = rows;
	buffers.keys_alt = &state->keys_alt;
	buffers.rows_alt = &state->rows_alt;
	return buffers;
}

/* Do n sorted keys hold no key twice? */
static bool
KeysUnique(const uint64_t *keys, int64_t n)
{
	for (int64_t i = 1; i < n; i++)
	{
		if (keys[i] == keys[i - 1])
			return false;
	}
	return true;
}

/* The body of the SMJ build, for a non-empty inner side */
static GjStatus
BuildSorted(GjCpuContext *ctx, SmjState *state, const GjBatch *inner,
			GjError *err)
{
	GjHostSortBuffers buffers = SmjSortBuffers(state, &state->inner_keys,
											   &state->inner_rows);
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

	/* 2. The pairs of the non-NULL rows (all of them lie in the range), sorted */
	status = gj_cpu_sort_pairs(GJ_SIDE_INNER, inner->keys, inner->nulls,
							   inner->nrows, min_key, max_key, sort_bits,
							   &buffers, &nkeys, err);
	if (status != GJ_OK)
		return status;

	/* 3. Are the keys unique? */
	state->unique = KeysUnique((const uint64_t *) state->inner_keys.ptr, nkeys);

	/*
	 * 4. The payload columns: GFUR keeps them in row order; GFTR permutes
	 * them into sorted order, the sort's transform, and drops the originals
	 * (SmjBuild)
	 */
	status = gj_cpu_columns_load(ctx, GJ_SIDE_INNER, inner,
								 (const GjRowId *) state->inner_rows.ptr,
								 nkeys, err);
	if (status != GJ_OK)
		return status;

	state->min_key = min_key;
	state->max_key = max_key;
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
SmjBuild(GjCpuContext *ctx, const GjBatch *inner, GjError *err)
{
	SmjState   *state = (SmjState *) gj_cpu_variant_state(ctx, sizeof(SmjState),
														  "a sort-merge join", err);
	GjStatus	status = GJ_OK;

	if (state == NULL)
		return GJ_ERROR_HOST_MEMORY;
	state->nkeys = 0;
	state->unique = false;
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
		gj_smj_describe(state->nkeys, state->sort_bits, state->unique,
						ctx->stats.detail, sizeof(ctx->stats.detail));
	return status;
}

/*
 * The first index in sorted keys[from, n) whose key is not less than key
 * (upper: greater than key), when every key before "from" is less (upper:
 * not greater): steps of 1, 2, 4, ... until one lands at or beyond the
 * answer, then a binary search within the last step.  O(log distance).
 */
static int64_t
GallopBound(const uint64_t *keys, int64_t from, int64_t n, uint64_t key,
			bool upper)
{
	int64_t		lo = from;
	int64_t		step = 1;
	int64_t		hi;

	while (lo + step - 1 < n &&
		   (keys[lo + step - 1] < key || (upper && keys[lo + step - 1] == key)))
	{
		lo += step;
		step *= 2;
	}
	hi = lo + step - 1 < n ? lo + step - 1 : n;
	return gj_smj_bound(keys, lo, hi, key, upper);
}

/*
 * The bounds of every sorted outer position: lower[p], and the count
 * (upper - lower) into offsets[p]; offsets[npos] = 0
 *
 * A merge of the two sorted key arrays: the outer keys ascend, so each
 * bound is searched from the previous one on, and a run of equal outer
 * keys searches once.  With a unique inner side the upper bound is the
 * lower one plus one when the key there is equal, so one search does.
 */
static void
FindBounds(const SmjState *state, uint64_t *offsets, GjRowId *lower)
{
	const uint64_t *inner_keys = (const uint64_t *) state->inner_keys.ptr;
	const uint64_t *outer_keys = (const uint64_t *) state->outer_keys.ptr;
	int64_t		n = state->nkeys;
	int64_t		lo = 0;
	int64_t		hi = 0;

	for (int64_t p = 0; p < state->npos; p++)
	{
		uint64_t	key = outer_keys[p];

		if (p == 0 || key != outer_keys[p - 1])
		{
			lo = GallopBound(inner_keys, hi, n, key, false);
			if (state->unique)
				hi = lo < n && inner_keys[lo] == key ? lo + 1 : lo;
			else
				hi = GallopBound(inner_keys, lo, n, key, true);
		}
		lower[p] = (GjRowId) lo;
		offsets[p] = (uint64_t) (hi - lo);
	}
	offsets[state->npos] = 0;
}

/* The body of the SMJ count, for a chunk that can have matches */
static GjStatus
CountChunk(GjCpuContext *ctx, SmjState *state, const GjBatch *outer,
		   uint64_t *nmatches, GjError *err)
{
	GjHostSortBuffers buffers = SmjSortBuffers(state, &state->outer_keys,
											   &state->outer_rows);
	uint64_t   *offsets;
	uint64_t	sum;
	GjStatus	status;

	/* 1. The pairs of the rows that can match, sorted */
	status = gj_cpu_sort_pairs(GJ_SIDE_OUTER, outer->keys, outer->nulls,
							   outer->nrows, state->min_key, state->max_key,
							   state->sort_bits, &buffers, &state->npos, err);
	if (status != GJ_OK)
		return status;

	/* 2. The bounds and counts of each position; 3. offsets by prefix sum */
	status = gj_cpu_buffer_reserve(&state->lower,
								   (size_t) state->npos * sizeof(GjRowId),
								   "the outer chunk's lower bounds", err);
	if (status == GJ_OK)
		status = gj_cpu_buffer_reserve(&state->offsets,
									   (size_t) (state->npos + 1) * sizeof(uint64_t),
									   "the outer chunk's match offsets", err);
	if (status != GJ_OK)
		return status;
	offsets = (uint64_t *) state->offsets.ptr;
	FindBounds(state, offsets, (GjRowId *) state->lower.ptr);
	sum = gj_cpu_count_offsets(offsets, state->npos);

	/* Unique inner: the list of matched positions, match by match */
	if (state->unique && sum > 0)
	{
		GjRowId    *match_pos;

		status = gj_cpu_buffer_reserve(&state->match_pos,
									   (size_t) sum * sizeof(GjRowId),
									   "the outer chunk's matched positions", err);
		if (status != GJ_OK)
			return status;
		match_pos = (GjRowId *) state->match_pos.ptr;
		for (int64_t p = 0; p < state->npos; p++)
		{
			if (offsets[p + 1] != offsets[p])
				match_pos[offsets[p]] = (GjRowId) p;
		}
	}

	/*
	 * The payload columns, kept only when some row has a match: GFTR
	 * permutes them into sorted order, as the build did the inner ones
	 */
	if (sum > 0)
	{
		status = gj_cpu_columns_load(ctx, GJ_SIDE_OUTER, outer,
									 (const GjRowId *) state->outer_rows.ptr,
									 state->npos, err);
		if (status != GJ_OK)
			return status;
	}
	*nmatches = sum;
	return GJ_OK;
}

/*
 * Count the matches of one outer chunk (GjCpuVariant.count)
 *
 * Keeps the chunk's sorted rows, bounds, match offsets and payload
 * columns for retrieve (copies: the caller's arrays need not outlive
 * count).
 */
static GjStatus
SmjCount(GjCpuContext *ctx, const GjBatch *outer, uint64_t *nmatches,
		 GjError *err)
{
	SmjState   *state = (SmjState *) ctx->variant_state;

	*nmatches = 0;
	if (state != NULL)
		state->npos = 0;
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
 * sorted outer position (gj_cpu_ranges_retrieve, key_sort_cpu.c).  The
 * payload comes by row from the columns as they came (GFUR) or by sorted
 * position from the transformed ones (GFTR), both sides (gj_round_plan).
 */
static GjStatus
SmjRetrieve(GjCpuContext *ctx, uint64_t first, int64_t round_size,
			GjRoundSources *sources, GjError *err)
{
	SmjState   *state = (SmjState *) ctx->variant_state;
	GjRowId    *round_maps[GJ_NUM_ROUND_MAPS];
	GjSortedRanges ranges;
	GjStatus	status;

	status = gj_cpu_round_maps_reserve(ctx, true, round_size, sources,
									   round_maps, err);
	if (status != GJ_OK)
		return status;

	ranges.npos = state->npos;
	ranges.offsets = (const uint64_t *) state->offsets.ptr;
	ranges.lower = (const GjRowId *) state->lower.ptr;
	ranges.match_pos = state->unique ? (const GjRowId *) state->match_pos.ptr : NULL;
	ranges.outer_rows = (const GjRowId *) state->outer_rows.ptr;
	ranges.inner_rows = (const GjRowId *) state->inner_rows.ptr;
	gj_cpu_ranges_retrieve(&ranges, first, round_size, round_maps);
	return GJ_OK;
}

/* Free the state and its arrays (GjCpuVariant.destroy_state) */
static void
SmjDestroyState(GjCpuContext *ctx)
{
	SmjState   *state = (SmjState *) ctx->variant_state;

	if (state == NULL)
		return;
	gj_cpu_buffer_release(&state->inner_keys);
	gj_cpu_buffer_release(&state->inner_rows);
	gj_cpu_buffer_release(&state->outer_keys);
	gj_cpu_buffer_release(&state->outer_rows);
	gj_cpu_buffer_release(&state->lower);
	gj_cpu_buffer_release(&state->offsets);
	gj_cpu_buffer_release(&state->match_pos);
	gj_cpu_buffer_release(&state->keys_alt);
	gj_cpu_buffer_release(&state->rows_alt);
	free(state);
	ctx->variant_state = NULL;
}

const GjCpuVariant gj_cpu_smj = {
	.name = "SMJ",
	.build = SmjBuild,
	.count = SmjCount,
	.retrieve = SmjRetrieve,
	.destroy_state = SmjDestroyState,
};
