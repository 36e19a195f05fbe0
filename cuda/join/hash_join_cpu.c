/*-------------------------------------------------------------------------
 *
 * hash_join_cpu.c
 *	  CPU twin of hash_join.cu, the non-partitioned hash join (NPHJ): the
 *	  same contract, written for clarity
 *
 * This file is the specification of the NPHJ kernels: if hash_join.cu and
 * this file disagree on any input, hash_join.cu is wrong.  It is also the
 * fallback when there is no GPU, or when the GPU runs out of memory in the
 * middle of a join, so it must produce the very same arrays, element by
 * element, not merely the same set of matches.
 *
 * THE TABLE
 *
 * One global, non-partitioned hash table on the inner keys, the shape of
 * cuDF's non-partitioned hash join (Wu et al. 2025, §3.1.3), but
 * built by sorting instead of by inserting into open-addressing slots:
 * the entries (key, inner row) of the rows with a non-NULL key, ordered by
 * bucket, plus bucket_start[], where bucket b's entries are
 * entry_keys/entry_rows[bucket_start[b] .. bucket_start[b + 1]).  Within
 * a bucket the entries are in ascending inner row order.
 *
 * What a bucket is depends on the inner keys (common.h, gj_nphj_layout):
 * when their range [min, max] holds at most 2 x inner rows values, the
 * table is dense, one bucket per key value, bucket(key) = key - min (a
 * perfect hash: a bucket holds only equal keys, so no key is compared and
 * entry_keys is not kept; outer keys outside [min, max] match nothing).
 * Otherwise it is hashed, with 2^bucket_bits buckets on the top bits of
 * gj_hash64(key).  The table is a counting sort either way:
 *
 *	  1. the range of the non-NULL keys, and from it the layout
 *	  2. histogram: count the non-NULL rows of each bucket
 *	  3. exclusive prefix sum of the counts: bucket_start[]
 *	  4. scatter the rows, in ascending row order, each to the next free
 *		 slot of its bucket (stable by construction)
 *
 * and a stable radix sort of (bucket, row) pairs on the GPU; both give the
 * same arrays.  Nothing needs an empty-slot sentinel, so every 64-bit value,
 * 0 and UINT64_MAX included, is an ordinary key.  An inner side without a
 * non-NULL key builds no table: nothing can match.
 *
 * PAYLOAD COLUMNS (materialize_cpu.c; Wu et al. 2025, §3.1.3, §4.1)
 *
 * The inner payload columns are copied in at build.  GFUR keeps them in
 * row order and gathers each match's values at its inner row,
 * entry_rows[e].  GFTR transforms them with the keys: the stable sort
 * above put row entry_rows[e] at entry e, so the transformed column holds
 * at entry e the value of row entry_rows[e]; a match then gathers its
 * values at its entry, e.  Both read the value of the same row.  The outer
 * side is probed in row order, so both gather its values by outer row.
 *
 * COUNT, THEN RETRIEVE
 *
 * Matches are produced by the "double probe" of the classic GPU joins
 * (Rui 2020, §4.1.2.2: count pass, prefix scan, write pass):
 *
 *	  count		for each outer row, the number of entries in its bucket
 *				with an equal key; their exclusive prefix sum gives every
 *				row the number of its first match, and the total
 *	  retrieve	the matches numbered first .. first + max_matches - 1,
 *				each written at its own number, so rounds can be taken
 *				in any order and each is deterministic
 *
 * Match number offsets[r] + k is the k-th entry of row r's bucket with an
 * equal key, so matches are ordered by outer row, then inner row, as
 * gpujoin_kernels.h promises for NPHJ.  Rui 2020 measured a direct output
 * buffer with atomics to be 20-25% faster than the double probe, but its
 * output order is not deterministic, and the count pass is what lets the
 * executor bound each round by max_matches.
 *
 * IDENTIFICATION
 *	  cuda/join/hash_join_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cpu_internal.h"
#include "gpujoin_kernels.h"

/*
 * NPHJ's state (ctx->variant_state)
 *
 * The table, kept from one build to the next:
 *	layout			the table's layout (common.h); valid when nentries > 0
 *	nentries		inner rows with a non-NULL key; 0: no table
 *	entry_keys		uint64_t[nentries], keys in bucket order; hashed only
 *	entry_rows		GjRowId[nentries], their inner rows
 *	bucket_start	uint32_t[nbuckets + 1], first entry of each bucket
 *
 * The counted chunk, kept for retrieve:
 *	outer_keys		uint64_t[outer rows], a copy of the chunk's keys (the
 *					caller's array need not outlive count)
 *	outer_nulls		uint8_t[outer rows], a copy of their NULL flags, where
 *					chunk_nulls: the chunk had them (a left join's
 *					retrieve reads them)
 *	offsets			uint64_t[outer rows + 1], exclusive prefix sum of the
 *					per-row match counts; row r's count is
 *					offsets[r + 1] - offsets[r]
 */
typedef struct NphjState
{
	GjNphjLayout layout;
	int64_t		nentries;
	GjHostBuffer entry_keys;
	GjHostBuffer entry_rows;
	GjHostBuffer bucket_start;
	GjHostBuffer outer_keys;
	GjHostBuffer outer_nulls;
	bool		chunk_nulls;
	GjHostBuffer offsets;
} NphjState;

/* No table to probe: none was built, or it has no entry */
static bool
NoTable(const NphjState *state)
{
	return state == NULL || state->nentries == 0;
}

/* The body of the NPHJ build, for a non-empty inner side */
static GjStatus
BuildTable(GjCpuContext *ctx, NphjState *state, const GjBatch *inner,
		   GjError *err)
{
	const uint64_t *keys = inner->keys;
	int64_t		nrows = inner->nrows;
	GjHostBuffer cursor_buf = {NULL, 0};
	GjNphjLayout layout;
	bool		has_keys;
	uint64_t	min_key;
	uint64_t	max_key;
	uint32_t   *bucket_start;
	uint32_t   *cursor;
	uint64_t   *entry_keys = NULL;
	GjRowId    *entry_rows;
	uint32_t	nentries;
	uint32_t	sum;
	uint32_t	bucket = 0;
	GjStatus	status;

	/* 1. The layout, from the range of the keys; nothing to build without keys */
	gj_cpu_key_range(keys, inner->nulls, nrows, &has_keys, &min_key, &max_key);
	if (!has_keys)
		return GJ_OK;
	gj_nphj_layout(nrows, min_key, max_key, &layout);

	status = gj_cpu_buffer_reserve(&state->bucket_start,
								   ((size_t) layout.nbuckets + 1) * sizeof(uint32_t),
								   "the hash table's buckets", err);
	if (status != GJ_OK)
		return status;
	bucket_start = (uint32_t *) state->bucket_start.ptr;

	/* 2. Histogram: the number of non-NULL keys in each bucket */
	memset(bucket_start, 0, ((size_t) layout.nbuckets + 1) * sizeof(uint32_t));
	for (int64_t row = 0; row < nrows; row++)
	{
		if (gj_flag_set(inner->nulls, row))
			continue;
		(void) gj_nphj_bucket(&layout, keys[row], &bucket);
		bucket_start[bucket]++;
	}

	/*
	 * 3. Exclusive prefix sum, in place.  bucket_start[nbuckets] starts at
	 * 0 and ends as the number of entries.  The sum fits in 32 bits since
	 * it counts at most GJ_MAX_ROWS rows.
	 */
	sum = 0;
	for (int64_t b = 0; b <= (int64_t) layout.nbuckets; b++)
	{
		uint32_t	count = bucket_start[b];

		bucket_start[b] = sum;
		sum += count;
	}
	nentries = bucket_start[layout.nbuckets];

	status = gj_cpu_buffer_reserve(&state->entry_rows,
								   (size_t) nentries * sizeof(GjRowId),
								   "the hash table's rows", err);
	if (status == GJ_OK && !layout.dense)
		status = gj_cpu_buffer_reserve(&state->entry_keys,
									   (size_t) nentries * sizeof(uint64_t),
									   "the hash table's keys", err);
	if (status == GJ_OK)
		status = gj_cpu_buffer_reserve(&cursor_buf,
									   (size_t) layout.nbuckets * sizeof(uint32_t),
									   "the hash table's bucket cursors", err);
	if (status != GJ_OK)
	{
		gj_cpu_buffer_release(&cursor_buf);
		return status;
	}
	if (layout.dense)
		gj_cpu_buffer_release(&state->entry_keys);
	else
		entry_keys = (uint64_t *) state->entry_keys.ptr;
	entry_rows = (GjRowId *) state->entry_rows.ptr;
	cursor = (uint32_t *) cursor_buf.ptr;

	/*
	 * 4. Scatter.  cursor[b] is the next free entry of bucket b; rows are
	 * visited in ascending order, so a bucket's entries end up in ascending
	 * row order, which is what the GPU's stable sort gives too.  A dense
	 * bucket holds one key value, which its number says: no entry keys.
	 */
	memcpy(cursor, bucket_start, (size_t) layout.nbuckets * sizeof(uint32_t));
	for (int64_t row = 0; row < nrows; row++)
	{
		uint32_t	entry;

		if (gj_flag_set(inner->nulls, row))
			continue;
		(void) gj_nphj_bucket(&layout, keys[row], &bucket);
		entry = cursor[bucket]++;
		if (entry_keys != NULL)
			entry_keys[entry] = keys[row];
		entry_rows[entry] = (GjRowId) row;
	}
	gj_cpu_buffer_release(&cursor_buf);

	/*
	 * 5. The payload columns: GFUR keeps them in row order; GFTR permutes
	 * them into entry order, the sort's transform, and drops the originals
	 * (NphjBuild)
	 */
	status = gj_cpu_columns_load(ctx, GJ_SIDE_INNER, inner, entry_rows,
								 nentries, err);
	if (status != GJ_OK)
		return status;

	state->layout = layout;
	state->nentries = nentries;
	return GJ_OK;
}

/*
 * Build the table on the inner keys (GjCpuVariant.build)
 *
 * Replaces the table of an earlier call.  An empty inner side, or one
 * whose keys are all NULL, builds no table: every outer row then counts
 * 0 matches.
 */
static GjStatus
NphjBuild(GjCpuContext *ctx, const GjBatch *inner, GjError *err)
{
	NphjState  *state = (NphjState *) gj_cpu_variant_state(ctx, sizeof(NphjState),
														  "a hash join", err);
	GjStatus	status = GJ_OK;

	if (state == NULL)
		return GJ_ERROR_HOST_MEMORY;
	memset(&state->layout, 0, sizeof(state->layout));
	state->nentries = 0;

	if (inner->nrows > 0)
		status = BuildTable(ctx, state, inner, err);

	if (ctx->spec.materialize == GJ_MATERIALIZE_GFTR)
		gj_cpu_columns_release(ctx, GJ_COLUMNS_INNER);

	if (status != GJ_OK)
		state->nentries = 0;
	else
		gj_nphj_describe(&state->layout, state->nentries, ctx->stats.detail,
						 sizeof(ctx->stats.detail));
	return status;
}

/* Number of entries of the table whose key equals key */
static uint64_t
CountKeyMatches(const NphjState *state, uint64_t key)
{
	const uint64_t *entry_keys = (const uint64_t *) state->entry_keys.ptr;
	const uint32_t *bucket_start = (const uint32_t *) state->bucket_start.ptr;
	uint32_t	bucket;
	uint64_t	count = 0;

	if (!gj_nphj_bucket(&state->layout, key, &bucket))
		return 0;
	if (state->layout.dense)
		return bucket_start[bucket + 1] - bucket_start[bucket];
	for (uint32_t e = bucket_start[bucket]; e < bucket_start[bucket + 1]; e++)
	{
		if (entry_keys[e] == key)
			count++;
	}
	return count;
}

/*
 * The body of the NPHJ count, for a chunk that can have matches: table is
 * the state that holds the table (the context's own, or the one it
 * shares), state the context's own, which keeps the chunk
 */
static GjStatus
CountChunk(GjCpuContext *ctx, const NphjState *table, NphjState *state,
		   const GjBatch *outer, uint64_t *nmatches, GjError *err)
{
	int64_t		nrows = outer->nrows;
	uint64_t   *offsets;
	uint64_t	sum;
	GjStatus	status;

	status = gj_cpu_buffer_reserve(&state->outer_keys,
								   (size_t) nrows * sizeof(uint64_t),
								   "the outer chunk's keys", err);
	if (status == GJ_OK)
		status = gj_cpu_buffer_reserve(&state->offsets,
									   (size_t) (nrows + 1) * sizeof(uint64_t),
									   "the outer chunk's match offsets", err);
	if (status != GJ_OK)
		return status;
	memcpy(state->outer_keys.ptr, outer->keys, (size_t) nrows * sizeof(uint64_t));
	state->chunk_nulls = outer->nulls != NULL;
	if (state->chunk_nulls)
	{
		status = gj_cpu_buffer_reserve(&state->outer_nulls, (size_t) nrows,
									   "the outer chunk's NULL flags", err);
		if (status != GJ_OK)
			return status;
		memcpy(state->outer_nulls.ptr, outer->nulls, (size_t) nrows);
	}
	offsets = (uint64_t *) state->offsets.ptr;

	/* The count of each row (as outer_match counts them), then their
	 * exclusive prefix sum in place; no table: an anti or left join's, empty */
	for (int64_t row = 0; row < nrows; row++)
	{
		uint64_t	count = 0;

		if (!NoTable(table) && !gj_flag_set(outer->nulls, row))
			count = CountKeyMatches(table, outer->keys[row]);
		offsets[row] = gj_outer_match_count(ctx->spec.outer_match, count);
	}
	offsets[nrows] = 0;
	sum = gj_cpu_count_offsets(offsets, nrows);

	/* The payload columns are kept only when some row has a match */
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
 * Keeps copies of the chunk's keys, its match offsets and its payload
 * columns for retrieve.
 */
static GjStatus
NphjCount(GjCpuContext *ctx, const GjBatch *outer, uint64_t *nmatches,
		  GjError *err)
{
	const NphjState *table = (const NphjState *) GJ_CPU_BUILD(ctx)->variant_state;
	NphjState  *state;

	*nmatches = 0;
	/* Nothing can match: no arrays are needed, retrieve returns 0 (but an
	 * anti or left join's rows are also those that match nothing) */
	if (outer->nrows == 0 || (NoTable(table) && !gj_outer_match_unmatched(ctx->spec.outer_match)))
		return GJ_OK;
	state = (NphjState *) gj_cpu_variant_state(ctx, sizeof(NphjState),
											   "a hash join", err);
	if (state == NULL)
		return GJ_ERROR_HOST_MEMORY;
	return CountChunk(ctx, table, state, outer, nmatches, err);
}

/*
 * Record match number "slot" of the round: its outer row, its inner row,
 * its entry; each when its array is not NULL
 */
static inline void
WriteMatch(const NphjState *state, uint64_t slot, int64_t row, uint32_t e,
		   GjRowId *outer_rows, GjRowId *inner_rows, GjRowId *inner_pos)
{
	const GjRowId *entry_rows = (const GjRowId *) state->entry_rows.ptr;

	if (outer_rows != NULL)
		outer_rows[slot] = (GjRowId) row;
	if (inner_rows != NULL)
		inner_rows[slot] = entry_rows[e];
	if (inner_pos != NULL)
		inner_pos[slot] = (GjRowId) e;
}

/* Record a row with no match (anti, left) as match number "slot": no inner row */
static inline void
WriteNoMatch(uint64_t slot, int64_t row, GjRowId *outer_rows, GjRowId *inner_rows,
			 GjRowId *inner_pos)
{
	if (outer_rows != NULL)
		outer_rows[slot] = (GjRowId) row;
	if (inner_rows != NULL)
		inner_rows[slot] = GJ_NO_ROW;
	if (inner_pos != NULL)
		inner_pos[slot] = GJ_NO_ROW;
}

/*
 * Write the round maps of the matches first .. first + round_size - 1
 * (GjCpuVariant.retrieve)
 *
 * Only the rows whose matches intersect the window are visited: the first
 * one is found by binary search on the offsets, and the walk stops at the
 * first row that starts beyond the window.  The outer payload comes from
 * the chunk's columns by outer row; the inner payload from the
 * untransformed columns by inner row (GFUR) or from the transformed ones
 * by entry (GFTR): the outer side is not transformed (gj_round_plan).
 */
static GjStatus
NphjRetrieve(GjCpuContext *ctx, uint64_t first, int64_t round_size,
			 GjRoundSources *sources, GjError *err)
{
	const NphjState *table = (const NphjState *) GJ_CPU_BUILD(ctx)->variant_state;
	const NphjState *state = (const NphjState *) ctx->variant_state;
	const uint64_t *outer_keys = (const uint64_t *) state->outer_keys.ptr;
	const uint8_t *outer_nulls = state->chunk_nulls ? (const uint8_t *) state->outer_nulls.ptr : NULL;
	const uint64_t *offsets = (const uint64_t *) state->offsets.ptr;
	uint64_t	window_begin = first;
	uint64_t	window_end = first + (uint64_t) round_size;
	GjRowId    *maps[GJ_NUM_ROUND_MAPS];
	GjStatus	status;

	status = gj_cpu_round_maps_reserve(ctx, false, round_size, sources, maps, err);
	if (status != GJ_OK)
		return status;

	for (int64_t row = gj_seek_match_row(offsets, ctx->outer_rows, window_begin);
		 row < ctx->outer_rows && offsets[row] < window_end;
		 row++)
	{
		uint64_t	key = outer_keys[row];
		uint64_t	match = offsets[row];
		uint64_t	row_end = offsets[row + 1];
		const uint64_t *entry_keys;
		const uint32_t *bucket_start;
		uint32_t	bucket = 0;
		uint32_t	e;

		if (match == row_end)
			continue;			/* no matches (or a NULL key) */
		if (ctx->spec.outer_match == GJ_OUTER_NONE ||
			(ctx->spec.outer_match == GJ_OUTER_LEFT &&
			 (NoTable(table) || gj_flag_set(outer_nulls, row) ||
			  CountKeyMatches(table, key) == 0)))
		{
			/* an anti join's row, a left join's with no match: no inner
			 * row (and maybe no table) */
			WriteNoMatch(match - window_begin, row, maps[GJ_ROUND_OUTER_ROWS],
						 maps[GJ_ROUND_INNER_ROWS], maps[GJ_ROUND_INNER_POS]);
			continue;
		}
		entry_keys = (const uint64_t *) table->entry_keys.ptr;
		bucket_start = (const uint32_t *) table->bucket_start.ptr;
		(void) gj_nphj_bucket(&table->layout, key, &bucket);
		e = bucket_start[bucket];

		/* In a dense bucket every entry matches: skip to the window */
		if (table->layout.dense && match < window_begin)
		{
			e += (uint32_t) (window_begin - match);
			match = window_begin;
		}

		/*
		 * Walk the bucket; the k-th entry with an equal key is match
		 * offsets[row] + k, up to the row's count (a semi join's: 1)
		 */
		for (; e < bucket_start[bucket + 1] && match < window_end && match < row_end; e++)
		{
			if (!table->layout.dense && entry_keys[e] != key)
				continue;
			if (match >= window_begin)
				WriteMatch(table, match - window_begin, row, e,
						   maps[GJ_ROUND_OUTER_ROWS], maps[GJ_ROUND_INNER_ROWS],
						   maps[GJ_ROUND_INNER_POS]);
			match++;
		}
	}
	return GJ_OK;
}

/* Free the state and its arrays (GjCpuVariant.destroy_state) */
static void
NphjDestroyState(GjCpuContext *ctx)
{
	NphjState  *state = (NphjState *) ctx->variant_state;

	if (state == NULL)
		return;
	gj_cpu_buffer_release(&state->entry_keys);
	gj_cpu_buffer_release(&state->entry_rows);
	gj_cpu_buffer_release(&state->bucket_start);
	gj_cpu_buffer_release(&state->outer_keys);
	gj_cpu_buffer_release(&state->outer_nulls);
	gj_cpu_buffer_release(&state->offsets);
	free(state);
	ctx->variant_state = NULL;
}

const GjCpuVariant gj_cpu_nphj = {
	.name = "NPHJ",
	.build = NphjBuild,
	.count = NphjCount,
	.retrieve = NphjRetrieve,
	.destroy_state = NphjDestroyState,
};
