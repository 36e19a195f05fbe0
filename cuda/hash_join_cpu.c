/*-------------------------------------------------------------------------
 *
 * hash_join_cpu.c
 *	  CPU twin of hash_join.cu: the same contract, written for clarity
 *
 * This file is the specification of the hash kernels: if hash_join.cu and
 * this file disagree on any input, hash_join.cu is wrong.  It is also the
 * fallback when there is no GPU, or when the GPU runs out of memory in the
 * middle of a join, so it must produce the very same arrays, element by
 * element, not merely the same set of matches.
 *
 * THE TABLE
 *
 * One global, non-partitioned hash table on the inner keys, the shape of
 * cuDF's non-partitioned hash join (papers/notes/wu-2025-gftr.md §3.3), but
 * built by sorting instead of by inserting into open-addressing slots:
 * the entries (key, inner row) of the rows with a non-NULL key, ordered by
 * bucket (common.h says what a bucket is), plus bucket_start[], where
 * bucket b's entries are entry_keys/entry_rows[bucket_start[b] ..
 * bucket_start[b + 1]).  Within a bucket the entries are in ascending
 * inner row order.  This is a counting sort here:
 *
 *	  1. histogram: count the non-NULL rows of each bucket
 *	  2. exclusive prefix sum of the counts: bucket_start[]
 *	  3. scatter the rows, in ascending row order, each to the next free
 *		 slot of its bucket (stable by construction)
 *
 * and a stable radix sort of (bucket, row) pairs on the GPU; both give the
 * same arrays.  Nothing needs an empty-slot sentinel, so every 64-bit value,
 * 0 and UINT64_MAX included, is an ordinary key.
 *
 * COUNT, THEN RETRIEVE
 *
 * Matches are produced by the "double probe" of the classic GPU joins
 * (papers/notes/rui-2020.md §1.2.3: count pass, prefix scan, write pass):
 *
 *	  hash_count	for each outer row, the number of entries in its bucket
 *					with an equal key; their exclusive prefix sum gives every
 *					row the number of its first match, and the total
 *	  hash_retrieve	the matches numbered first .. first + max_matches - 1,
 *					each written at its own number, so rounds can be taken
 *					in any order and each is deterministic
 *
 * Match number offsets[r] + k is the k-th entry of row r's bucket with an
 * equal key, so matches are ordered by outer row, then inner row, as
 * gpujoin_kernels.h promises.  Rui 2020 measured a direct output buffer
 * with atomics to be 20-25% faster than the double probe, but its output
 * order is not deterministic, and the count pass is what lets the
 * executor bound each round by max_matches.
 *
 * IDENTIFICATION
 *	  cuda/hash_join_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "common.h"
#include "cpu_internal.h"
#include "gpujoin_kernels.h"

/* Is row's key NULL?  (nulls is NULL when no key is) */
static inline bool
KeyIsNull(const uint8_t *nulls, int64_t row)
{
	return nulls != NULL && nulls[row] != 0;
}

/* Milliseconds since start, added to one of the phase timers */
static inline void
AddElapsed(double *timer, double start)
{
	*timer += gj_clock_ms() - start;
}

/*
 * Build the table on the inner keys
 *
 * Replaces the table of an earlier call and forgets any counted chunk,
 * also when it fails.  An empty inner side gives an empty table (every
 * outer row then counts 0 matches); so does one whose keys are all NULL.
 */
GjStatus
gj_cpu_hash_build(GjContext *ctx, const GjKeyColumn *inner, GjError *err)
{
	GjCpuContext *cpu = gj_cpu_context_get(ctx, err);
	double		start = gj_clock_ms();
	GjHostBuffer cursor_buf = {NULL, 0};
	const uint64_t *keys;
	int64_t		nrows;
	int64_t		nbuckets;
	uint32_t   *bucket_start;
	uint32_t   *cursor;
	uint64_t   *entry_keys;
	GjRowId    *entry_rows;
	uint32_t	sum;
	GjStatus	status;

	if (cpu == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	cpu->has_table = false;
	cpu->has_chunk = false;
	status = gj_check_key_column(inner, "inner", err);
	if (status != GJ_OK)
		return status;

	keys = inner->keys;
	nrows = inner->nrows;
	if (nrows == 0)
	{
		cpu->bucket_bits = 0;
		cpu->nentries = 0;
		cpu->has_table = true;
		AddElapsed(&cpu->stats.build_ms, start);
		return GJ_OK;
	}

	cpu->bucket_bits = gj_bucket_bits(nrows);
	nbuckets = gj_bucket_count(cpu->bucket_bits);
	status = gj_cpu_buffer_reserve(&cpu->bucket_start,
								   (size_t) (nbuckets + 1) * sizeof(uint32_t),
								   "the hash table's buckets", err);
	if (status != GJ_OK)
		return status;
	bucket_start = (uint32_t *) cpu->bucket_start.ptr;

	/* 1. Histogram: the number of non-NULL keys in each bucket */
	memset(bucket_start, 0, (size_t) (nbuckets + 1) * sizeof(uint32_t));
	for (int64_t row = 0; row < nrows; row++)
	{
		if (!KeyIsNull(inner->nulls, row))
			bucket_start[gj_bucket(keys[row], cpu->bucket_bits)]++;
	}

	/*
	 * 2. Exclusive prefix sum, in place.  bucket_start[nbuckets] starts at
	 * 0 and ends as the number of entries.  The sum fits in 32 bits since
	 * it counts at most GJ_MAX_ROWS rows.
	 */
	sum = 0;
	for (int64_t b = 0; b <= nbuckets; b++)
	{
		uint32_t	count = bucket_start[b];

		bucket_start[b] = sum;
		sum += count;
	}
	cpu->nentries = bucket_start[nbuckets];

	status = gj_cpu_buffer_reserve(&cpu->entry_keys,
								   (size_t) cpu->nentries * sizeof(uint64_t),
								   "the hash table's keys", err);
	if (status == GJ_OK)
		status = gj_cpu_buffer_reserve(&cpu->entry_rows,
									   (size_t) cpu->nentries * sizeof(GjRowId),
									   "the hash table's rows", err);
	if (status == GJ_OK)
		status = gj_cpu_buffer_reserve(&cursor_buf,
									   (size_t) nbuckets * sizeof(uint32_t),
									   "the hash table's bucket cursors", err);
	if (status != GJ_OK)
	{
		gj_cpu_buffer_release(&cursor_buf);
		return status;
	}
	entry_keys = (uint64_t *) cpu->entry_keys.ptr;
	entry_rows = (GjRowId *) cpu->entry_rows.ptr;
	cursor = (uint32_t *) cursor_buf.ptr;

	/*
	 * 3. Scatter.  cursor[b] is the next free entry of bucket b; rows are
	 * visited in ascending order, so a bucket's entries end up in ascending
	 * row order, which is what the GPU's stable sort gives too.
	 */
	memcpy(cursor, bucket_start, (size_t) nbuckets * sizeof(uint32_t));
	for (int64_t row = 0; row < nrows; row++)
	{
		uint32_t	entry;

		if (KeyIsNull(inner->nulls, row))
			continue;
		entry = cursor[gj_bucket(keys[row], cpu->bucket_bits)]++;
		entry_keys[entry] = keys[row];
		entry_rows[entry] = (GjRowId) row;
	}
	gj_cpu_buffer_release(&cursor_buf);

	cpu->has_table = true;
	AddElapsed(&cpu->stats.build_ms, start);
	return GJ_OK;
}

/* Number of entries of the table whose key equals key */
static uint64_t
CountKeyMatches(const GjCpuContext *cpu, uint64_t key)
{
	const uint64_t *entry_keys = (const uint64_t *) cpu->entry_keys.ptr;
	const uint32_t *bucket_start = (const uint32_t *) cpu->bucket_start.ptr;
	uint32_t	bucket = gj_bucket(key, cpu->bucket_bits);
	uint64_t	count = 0;

	for (uint32_t e = bucket_start[bucket]; e < bucket_start[bucket + 1]; e++)
	{
		if (entry_keys[e] == key)
			count++;
	}
	return count;
}

/*
 * Count the matches of one outer chunk
 *
 * Forgets the previous chunk, then keeps this one's keys and match offsets
 * for hash_retrieve.  *nmatches is the chunk's total, which can exceed
 * 2^32 (every outer row may match every inner row).
 */
GjStatus
gj_cpu_hash_count(GjContext *ctx, const GjKeyColumn *outer,
				  int64_t *nmatches, GjError *err)
{
	GjCpuContext *cpu = gj_cpu_context_get(ctx, err);
	double		start = gj_clock_ms();
	int64_t		nrows;
	uint64_t   *offsets;
	uint64_t	sum;
	GjStatus	status;

	if (cpu == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	cpu->has_chunk = false;
	if (!cpu->has_table)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"hash_count was called before hash_build.");
	if (nmatches == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No place to return the number of matches was given.");
	status = gj_check_key_column(outer, "outer", err);
	if (status != GJ_OK)
		return status;

	nrows = outer->nrows;
	cpu->outer_rows = nrows;
	cpu->nmatches = 0;

	/* Nothing can match: no arrays are needed, hash_retrieve returns 0 */
	if (nrows == 0 || cpu->nentries == 0)
	{
		cpu->has_chunk = true;
		*nmatches = 0;
		AddElapsed(&cpu->stats.probe_ms, start);
		return GJ_OK;
	}

	status = gj_cpu_buffer_reserve(&cpu->outer_keys,
								   (size_t) nrows * sizeof(uint64_t),
								   "the outer chunk's keys", err);
	if (status == GJ_OK)
		status = gj_cpu_buffer_reserve(&cpu->offsets,
									   (size_t) (nrows + 1) * sizeof(uint64_t),
									   "the outer chunk's match offsets", err);
	if (status != GJ_OK)
		return status;
	memcpy(cpu->outer_keys.ptr, outer->keys, (size_t) nrows * sizeof(uint64_t));
	offsets = (uint64_t *) cpu->offsets.ptr;

	/* The count of each row, then their exclusive prefix sum in place */
	for (int64_t row = 0; row < nrows; row++)
	{
		offsets[row] = 0;
		if (!KeyIsNull(outer->nulls, row))
			offsets[row] = CountKeyMatches(cpu, outer->keys[row]);
	}
	offsets[nrows] = 0;

	sum = 0;
	for (int64_t row = 0; row <= nrows; row++)
	{
		uint64_t	count = offsets[row];

		offsets[row] = sum;
		sum += count;
	}

	cpu->nmatches = offsets[nrows];
	cpu->has_chunk = true;
	*nmatches = (int64_t) cpu->nmatches;
	AddElapsed(&cpu->stats.probe_ms, start);
	return GJ_OK;
}

/*
 * Hand out the matches numbered first .. first + max_matches - 1
 *
 * round->nmatches is min(max_matches, total - first), 0 once first reaches
 * the total.  Only the rows whose matches intersect the window are
 * visited: the first one is found by binary search on the offsets, and the
 * walk stops at the first row that starts beyond the window.
 */
GjStatus
gj_cpu_hash_retrieve(GjContext *ctx, int64_t first, GjMatchRound *round,
					 GjError *err)
{
	GjCpuContext *cpu = gj_cpu_context_get(ctx, err);
	double		start = gj_clock_ms();
	const uint64_t *entry_keys;
	const GjRowId *entry_rows;
	const uint32_t *bucket_start;
	const uint64_t *outer_keys;
	const uint64_t *offsets;
	uint64_t	window_begin;
	uint64_t	window_end;
	int64_t		round_size = 0;
	GjStatus	status;

	if (cpu == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	status = gj_check_retrieve(cpu->has_chunk, cpu->nmatches, cpu->max_matches,
							   first, round, cpu->match_outer, cpu->match_inner,
							   &round_size, err);
	if (status != GJ_OK || round_size == 0)
		return status;
	window_begin = (uint64_t) first;
	window_end = window_begin + (uint64_t) round_size;

	entry_keys = (const uint64_t *) cpu->entry_keys.ptr;
	entry_rows = (const GjRowId *) cpu->entry_rows.ptr;
	bucket_start = (const uint32_t *) cpu->bucket_start.ptr;
	outer_keys = (const uint64_t *) cpu->outer_keys.ptr;
	offsets = (const uint64_t *) cpu->offsets.ptr;

	for (int64_t row = gj_seek_match_row(offsets, cpu->outer_rows, window_begin);
		 row < cpu->outer_rows && offsets[row] < window_end;
		 row++)
	{
		uint64_t	key = outer_keys[row];
		uint32_t	bucket;
		uint64_t	match;

		if (offsets[row] == offsets[row + 1])
			continue;			/* no matches (or a NULL key) */

		/* Walk the bucket; the k-th equal key is match offsets[row] + k */
		bucket = gj_bucket(key, cpu->bucket_bits);
		match = offsets[row];
		for (uint32_t e = bucket_start[bucket];
			 e < bucket_start[bucket + 1] && match < window_end;
			 e++)
		{
			if (entry_keys[e] != key)
				continue;
			if (match >= window_begin)
			{
				cpu->match_outer[match - window_begin] = (GjRowId) row;
				cpu->match_inner[match - window_begin] = entry_rows[e];
			}
			match++;
		}
	}

	round->nmatches = round_size;
	AddElapsed(&cpu->stats.probe_ms, start);
	return GJ_OK;
}
