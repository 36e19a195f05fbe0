/*-------------------------------------------------------------------------
 *
 * partitioned_join_cpu.c
 *	  CPU twin of partitioned_join.cu, the radix-partitioned hash join
 *	  (PHJ): the same contract, written for clarity
 *
 * This file is the specification of the PHJ kernels: if partitioned_join.cu
 * and this file disagree on any input, partitioned_join.cu is wrong.  It is
 * also the fallback when there is no GPU, or when the GPU runs out of
 * memory in the middle of a join, so it must produce the very same arrays,
 * element by element, not merely the same set of matches.
 *
 * THE ALGORITHM (PHJ-TR: Wu et al. 2025, §4.1.4; the in-core radix hash
 * join: Rui 2020, §4.1.2)
 *
 *	  partition	both sides into 2^radix_bits partitions by the top bits of
 *				gj_hash64(key) (common.h: gj_phj_radix_bits decides how many
 *				from the inner rows), with the paper's radix-partition
 *				primitive: a histogram, its exclusive prefix sum (the start
 *				of each partition), a scatter.  It is stable, so the rows of
 *				a partition keep their order, and contiguous, so partition p
 *				is rows start[p] .. start[p + 1] of one array.  NULL keys
 *				never match: their rows enter no partition.
 *	  table		the inner side is also ordered by bucket within each
 *				partition (the next GJ_PHJ_BUCKET_BITS bits of the hash), in
 *				two stable passes, bucket first, then partition: the LSD
 *				radix sort that the GPU's CUB sort of gj_phj_digit() is.
 *				Each partition's entries (key, inner row) are then a bucketed
 *				hash table of their own, whose bucket starts a probe
 *				computes when it comes to the partition, as a GPU block
 *				does in shared memory.
 *	  count		partition the outer chunk; for each partitioned outer row,
 *				walk its bucket in its co-partition's table and count the
 *				entries with an equal key, keeping the first and the last;
 *				an exclusive prefix sum of the counts, in partitioned order,
 *				gives each row the number of its first match, and the total
 *	  retrieve	the matches numbered first .. first + max_matches - 1, each
 *				written at its own number
 *
 * THE ORDER
 *
 * Partitioned outer rows come by partition, then by row (the partitioning
 * is stable).  The entries with one key lie in one bucket of one partition,
 * in ascending inner row order (both passes are stable).  Match number
 * offsets[j] + k of partitioned outer row j is the k-th entry of its
 * bucket with its key, found by walking the bucket from the first one
 * (straight there when the row's matches are neighbours: last - first + 1
 * entries hold them all).  So matches come by partition, then outer row,
 * then inner row: PHJ's order in gpujoin_kernels.h.  Which bucket or which
 * table size the walk uses does not change the order; the radix bits do,
 * which is why gj_phj_radix_bits() is one function for both.
 *
 * PAYLOAD COLUMNS (materialize_cpu.c; Wu et al. 2025, §4.1.4)
 *
 * GFUR transforms (key, row id) only and gathers each match's payload from
 * the columns as they came, at its outer and inner row.  GFTR gives every
 * payload column of both sides the same stable transform as the keys, and
 * gathers a match's values at its positions there: partitioned outer row j
 * and inner entry e.  Here the transform is a gather by the partitioned row
 * numbers, which puts every value where the GPU's per-column radix
 * partitioning puts it.  The values handed out are the same either way.
 *
 * Unlike a GPU block, the CPU has no shared memory to fit: every partition,
 * however skewed, is one table here.  The GPU's oversized partitions (more
 * than GJ_PHJ_TABLE_ROWS entries, probed in sub-tables) are only counted,
 * for GjStats.detail, which both implementations must word alike.
 *
 * IDENTIFICATION
 *	  cuda/join/partitioned_join_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cpu_internal.h"
#include "gpujoin_kernels.h"

/*
 * PHJ's state (ctx->variant_state)
 *
 * The build, kept from one build to the next:
 *	radix_bits		gj_phj_radix_bits(inner rows)
 *	nentries		inner rows with a non-NULL key; 0: nothing matches
 *	oversized		inner partitions of more than GJ_PHJ_TABLE_ROWS entries
 *	entry_keys		uint64_t[nentries], keys by partition, bucket, row
 *	entry_rows		GjRowId[nentries], their inner rows
 *	inner_start		uint32_t[npartitions + 1], first entry of each partition
 *
 * The counted chunk, kept for retrieve ("positions" are the chunk's rows
 * with a non-NULL key, in partitioned order):
 *	npositions		how many
 *	outer_keys		uint64_t[npositions], their keys
 *	outer_rows		GjRowId[npositions], their rows
 *	outer_start		uint32_t[npartitions + 1], first position of each partition
 *	offsets			uint64_t[npositions + 1], exclusive prefix sum of the
 *					per-position match counts; the last is the total
 *	first, last		uint32_t[npositions], the first and last matching entry
 *					of each position that has matches
 *
 * Scratch:
 *	digits			uint32_t[rows], a digit of each row of a side
 *	rows			GjRowId[rows], rows between two partitioning passes
 *	bucket_start	uint32_t[GJ_PHJ_BUCKETS + 1], one partition's buckets
 */
typedef struct PhjState
{
	int			radix_bits;
	int64_t		nentries;
	int64_t		oversized;
	GjHostBuffer entry_keys;
	GjHostBuffer entry_rows;
	GjHostBuffer inner_start;

	int64_t		npositions;
	GjHostBuffer outer_keys;
	GjHostBuffer outer_rows;
	GjHostBuffer outer_start;
	GjHostBuffer offsets;
	GjHostBuffer first;
	GjHostBuffer last;

	GjHostBuffer digits;
	GjHostBuffer rows;
	GjHostBuffer bucket_start;
} PhjState;

/* Reserve one array of the state, or return the error from the caller */
#define PHJ_RESERVE(buf, bytes, what) \
	do { \
		GjStatus	phj_reserve_status_ = gj_cpu_buffer_reserve((buf), (bytes), (what), err); \
		if (phj_reserve_status_ != GJ_OK) \
			return phj_reserve_status_; \
	} while (0)

/*
 * One stable counting-sort pass, the radix-partition primitive
 * (Wu et al. 2025, §2.3): the rows in[0 .. n) ordered by their digit,
 * (digits[row] >> shift) & (ndigits - 1), into out, the rows of one digit
 * in their order in "in"; start[d] becomes the index in out of the first
 * row of digit d, start[ndigits] = n.  ndigits is a power of two.
 */
static void
CountingSortPass(const GjRowId *in, int64_t n, const uint32_t *digits,
				 int shift, uint32_t ndigits, GjRowId *out, uint32_t *start)
{
	uint32_t	mask = ndigits - 1;
	uint32_t	sum = 0;

	/* histogram */
	memset(start, 0, ((size_t) ndigits + 1) * sizeof(uint32_t));
	for (int64_t i = 0; i < n; i++)
		start[(digits[in[i]] >> shift) & mask]++;

	/* exclusive prefix sum: start[d] is where digit d begins */
	for (uint32_t d = 0; d <= ndigits; d++)
	{
		uint32_t	count = start[d];

		start[d] = sum;
		sum += count;
	}

	/*
	 * Scatter, in input order, each row to the next free slot of its digit.
	 * start[d] advances to the end of digit d, which is where digit d + 1
	 * begins; shifting the array by one restores the starts.
	 */
	for (int64_t i = 0; i < n; i++)
		out[start[(digits[in[i]] >> shift) & mask]++] = in[i];
	memmove(start + 1, start, (size_t) ndigits * sizeof(uint32_t));
	start[0] = 0;
}

/*
 * The rows of a batch with a non-NULL key, in ascending order, into rows;
 * returns how many.  digits[row] gets partition(key) (table: false) or
 * gj_phj_digit(key), partition and bucket (table: true), for those rows.
 */
static int64_t
ListKeyedRows(const GjBatch *batch, int radix_bits, bool table,
			  GjRowId *rows, uint32_t *digits)
{
	int64_t		n = 0;

	for (int64_t row = 0; row < batch->nrows; row++)
	{
		uint64_t	key = batch->keys[row];

		if (gj_flag_set(batch->nulls, row))
			continue;
		digits[row] = table ? gj_phj_digit(key, radix_bits) :
			gj_phj_partition(key, radix_bits);
		rows[n++] = (GjRowId) row;
	}
	return n;
}

/* The body of the PHJ build, for a non-empty inner side */
static GjStatus
BuildPartitions(GjCpuContext *ctx, PhjState *state, const GjBatch *inner,
				GjError *err)
{
	int			radix_bits = state->radix_bits;
	uint32_t	npartitions = (uint32_t) 1 << radix_bits;
	size_t		nrows = (size_t) inner->nrows;
	uint32_t   *inner_start;
	uint32_t   *buckets;
	uint64_t   *entry_keys;
	GjRowId    *entry_rows;
	int64_t		nentries;
	GjStatus	status;

	PHJ_RESERVE(&state->digits, nrows * sizeof(uint32_t), "the inner rows' partitions");
	PHJ_RESERVE(&state->rows, nrows * sizeof(GjRowId), "the inner rows being partitioned");
	PHJ_RESERVE(&state->entry_rows, nrows * sizeof(GjRowId), "the partitioned inner rows");
	PHJ_RESERVE(&state->inner_start, ((size_t) npartitions + 1) * sizeof(uint32_t),
				"the inner partitions' starts");
	PHJ_RESERVE(&state->bucket_start, ((size_t) GJ_PHJ_BUCKETS + 1) * sizeof(uint32_t),
				"a partition's buckets");
	inner_start = (uint32_t *) state->inner_start.ptr;
	buckets = (uint32_t *) state->bucket_start.ptr;

	/*
	 * Two stable passes over the rows with a key: by bucket into
	 * entry_rows, then by partition back into rows, the result, which then
	 * becomes entry_rows (LSD order: the last pass is the major one)
	 */
	nentries = ListKeyedRows(inner, radix_bits, true,
							 (GjRowId *) state->rows.ptr,
							 (uint32_t *) state->digits.ptr);
	CountingSortPass((const GjRowId *) state->rows.ptr, nentries,
					 (const uint32_t *) state->digits.ptr, 0, GJ_PHJ_BUCKETS,
					 (GjRowId *) state->entry_rows.ptr, buckets);
	CountingSortPass((const GjRowId *) state->entry_rows.ptr, nentries,
					 (const uint32_t *) state->digits.ptr, GJ_PHJ_BUCKET_BITS,
					 npartitions, (GjRowId *) state->rows.ptr, inner_start);
	{
		GjHostBuffer sorted = state->rows;

		state->rows = state->entry_rows;
		state->entry_rows = sorted;
	}
	entry_rows = (GjRowId *) state->entry_rows.ptr;

	/* The keys of the entries, in entry order */
	PHJ_RESERVE(&state->entry_keys, (size_t) nentries * sizeof(uint64_t),
				"the partitioned inner keys");
	entry_keys = (uint64_t *) state->entry_keys.ptr;
	for (int64_t e = 0; e < nentries; e++)
		entry_keys[e] = inner->keys[entry_rows[e]];

	/* Partitions a GPU block cannot hold in one table, for the detail */
	state->oversized = 0;
	for (uint32_t p = 0; p < npartitions; p++)
	{
		if (inner_start[p + 1] - inner_start[p] > GJ_PHJ_TABLE_ROWS)
			state->oversized++;
	}

	/*
	 * The payload columns: GFUR keeps them in row order; GFTR transforms
	 * them as the keys were, into entry order, and drops the originals
	 * (PhjBuild)
	 */
	status = gj_cpu_columns_load(ctx, GJ_SIDE_INNER, inner, entry_rows,
								 nentries, err);
	if (status != GJ_OK)
		return status;

	state->nentries = nentries;
	return GJ_OK;
}

/*
 * Partition the inner side and order each partition by bucket
 * (GjCpuVariant.build)
 *
 * Replaces the build of an earlier call.  An empty inner side, or one
 * whose keys are all NULL, builds nothing: every outer row then counts 0
 * matches.
 */
static GjStatus
PhjBuild(GjCpuContext *ctx, const GjBatch *inner, GjError *err)
{
	PhjState   *state = (PhjState *) gj_cpu_variant_state(ctx, sizeof(PhjState),
														  "a partitioned hash join", err);
	GjStatus	status = GJ_OK;

	if (state == NULL)
		return GJ_ERROR_HOST_MEMORY;
	state->radix_bits = gj_phj_radix_bits(inner->nrows);
	state->nentries = 0;
	state->oversized = 0;

	if (inner->nrows > 0)
		status = BuildPartitions(ctx, state, inner, err);

	/* The build's scratch is not needed by the chunks */
	gj_cpu_buffer_release(&state->digits);
	gj_cpu_buffer_release(&state->rows);
	if (ctx->spec.materialize == GJ_MATERIALIZE_GFTR)
		gj_cpu_columns_release(ctx, GJ_COLUMNS_INNER);

	if (status != GJ_OK)
		state->nentries = 0;
	else
		gj_phj_describe(state->radix_bits, state->nentries, state->oversized,
						ctx->stats.detail, sizeof(ctx->stats.detail));
	return status;
}

/*
 * The buckets of the table of inner partition p: bucket_start[b] becomes
 * the first entry of bucket b, bucket_start[GJ_PHJ_BUCKETS] the partition's
 * end.  The entries are already in bucket order; this counts them.
 */
static void
PartitionBuckets(const PhjState *state, uint32_t p, uint32_t *bucket_start)
{
	const uint64_t *entry_keys = (const uint64_t *) state->entry_keys.ptr;
	const uint32_t *inner_start = (const uint32_t *) state->inner_start.ptr;
	uint32_t	sum = inner_start[p];

	memset(bucket_start, 0, ((size_t) GJ_PHJ_BUCKETS + 1) * sizeof(uint32_t));
	for (uint32_t e = inner_start[p]; e < inner_start[p + 1]; e++)
		bucket_start[gj_phj_bucket(entry_keys[e], state->radix_bits)]++;
	for (uint32_t b = 0; b <= GJ_PHJ_BUCKETS; b++)
	{
		uint32_t	count = bucket_start[b];

		bucket_start[b] = sum;
		sum += count;
	}
}

/*
 * Count the matches of every position of partition p into offsets[j],
 * with the first and last matching entry of those that have any
 */
static void
ProbePartition(PhjState *state, uint32_t p)
{
	const uint64_t *entry_keys = (const uint64_t *) state->entry_keys.ptr;
	const uint64_t *outer_keys = (const uint64_t *) state->outer_keys.ptr;
	const uint32_t *outer_start = (const uint32_t *) state->outer_start.ptr;
	const uint32_t *inner_start = (const uint32_t *) state->inner_start.ptr;
	uint32_t   *bucket_start = (uint32_t *) state->bucket_start.ptr;
	uint64_t   *offsets = (uint64_t *) state->offsets.ptr;
	uint32_t   *first = (uint32_t *) state->first.ptr;
	uint32_t   *last = (uint32_t *) state->last.ptr;
	bool		uniform[GJ_PHJ_BUCKETS];

	/* An empty side: nothing to probe, or nothing to match */
	for (uint32_t j = outer_start[p]; j < outer_start[p + 1]; j++)
		offsets[j] = 0;
	if (outer_start[p] == outer_start[p + 1] ||
		inner_start[p] == inner_start[p + 1])
		return;

	PartitionBuckets(state, p, bucket_start);

	/*
	 * A bucket whose entries all have one key (a skewed key fills its
	 * bucket) is counted at once: scanning it for each outer row would take
	 * |bucket| steps per row, 10^10 for 10^5 x 10^5 rows of one key, and
	 * keep the call from returning for seconds.  The counts, first and last
	 * entries are those the scan would give.
	 */
	for (uint32_t b = 0; b < GJ_PHJ_BUCKETS; b++)
	{
		uniform[b] = bucket_start[b] < bucket_start[b + 1];
		for (uint32_t e = bucket_start[b] + 1; uniform[b] && e < bucket_start[b + 1]; e++)
			uniform[b] = (entry_keys[e] == entry_keys[bucket_start[b]]);
	}

	for (uint32_t j = outer_start[p]; j < outer_start[p + 1]; j++)
	{
		uint64_t	key = outer_keys[j];
		uint32_t	bucket = gj_phj_bucket(key, state->radix_bits);
		uint64_t	count = 0;

		if (uniform[bucket])
		{
			if (entry_keys[bucket_start[bucket]] == key)
			{
				first[j] = bucket_start[bucket];
				last[j] = bucket_start[bucket + 1] - 1;
				count = bucket_start[bucket + 1] - bucket_start[bucket];
			}
			offsets[j] = count;
			continue;
		}
		for (uint32_t e = bucket_start[bucket]; e < bucket_start[bucket + 1]; e++)
		{
			if (entry_keys[e] != key)
				continue;
			if (count == 0)
				first[j] = e;
			last[j] = e;
			count++;
		}
		offsets[j] = count;
	}
}

/* The body of the PHJ count, for a chunk that can have matches */
static GjStatus
CountChunk(GjCpuContext *ctx, PhjState *state, const GjBatch *outer,
		   uint64_t *nmatches, GjError *err)
{
	uint32_t	npartitions = (uint32_t) 1 << state->radix_bits;
	size_t		nrows = (size_t) outer->nrows;
	const GjRowId *outer_rows;
	uint64_t   *outer_keys;
	uint64_t   *offsets;
	int64_t		npositions;
	uint64_t	sum = 0;

	PHJ_RESERVE(&state->digits, nrows * sizeof(uint32_t), "the outer rows' partitions");
	PHJ_RESERVE(&state->rows, nrows * sizeof(GjRowId), "the outer rows being partitioned");
	PHJ_RESERVE(&state->outer_rows, nrows * sizeof(GjRowId), "the partitioned outer rows");
	PHJ_RESERVE(&state->outer_keys, nrows * sizeof(uint64_t), "the partitioned outer keys");
	PHJ_RESERVE(&state->outer_start, ((size_t) npartitions + 1) * sizeof(uint32_t),
				"the outer partitions' starts");
	PHJ_RESERVE(&state->offsets, (nrows + 1) * sizeof(uint64_t), "the outer chunk's match offsets");
	PHJ_RESERVE(&state->first, nrows * sizeof(uint32_t), "the outer rows' first matches");
	PHJ_RESERVE(&state->last, nrows * sizeof(uint32_t), "the outer rows' last matches");

	/* 1. Partition the rows with a key, stably, one pass */
	npositions = ListKeyedRows(outer, state->radix_bits, false,
							   (GjRowId *) state->rows.ptr,
							   (uint32_t *) state->digits.ptr);
	CountingSortPass((const GjRowId *) state->rows.ptr, npositions,
					 (const uint32_t *) state->digits.ptr, 0, npartitions,
					 (GjRowId *) state->outer_rows.ptr,
					 (uint32_t *) state->outer_start.ptr);
	outer_rows = (const GjRowId *) state->outer_rows.ptr;
	outer_keys = (uint64_t *) state->outer_keys.ptr;
	for (int64_t j = 0; j < npositions; j++)
		outer_keys[j] = outer->keys[outer_rows[j]];
	state->npositions = npositions;

	/* 2. Probe each co-partition's table */
	for (uint32_t p = 0; p < npartitions; p++)
		ProbePartition(state, p);

	/* 3. Exclusive prefix sum of the counts, in partitioned order */
	offsets = (uint64_t *) state->offsets.ptr;
	offsets[npositions] = 0;
	sum = gj_cpu_count_offsets(offsets, npositions);

	/*
	 * 4. The payload columns, kept only when some row has a match: GFUR in
	 * row order, GFTR also transformed like the keys, into partitioned order
	 */
	if (sum > 0)
	{
		GjStatus	status = gj_cpu_columns_load(ctx, GJ_SIDE_OUTER, outer,
												 outer_rows, npositions, err);

		if (status != GJ_OK)
			return status;
	}
	*nmatches = sum;
	return GJ_OK;
}

/*
 * Count the matches of one outer chunk (GjCpuVariant.count)
 *
 * Keeps the chunk's partitioned keys and rows, its match offsets and its
 * payload columns for retrieve.
 */
static GjStatus
PhjCount(GjCpuContext *ctx, const GjBatch *outer, uint64_t *nmatches,
		 GjError *err)
{
	PhjState   *state = (PhjState *) ctx->variant_state;

	*nmatches = 0;
	if (state != NULL)
		state->npositions = 0;
	/* Nothing can match: no arrays are needed, retrieve returns 0 */
	if (outer->nrows == 0 || state == NULL || state->nentries == 0)
		return GJ_OK;
	return CountChunk(ctx, state, outer, nmatches, err);
}

/*
 * Record match number "slot" of the round: partitioned outer row j and
 * inner entry e, as rows and positions; each when its array is not NULL
 */
static inline void
WriteMatch(const PhjState *state, uint64_t slot, int64_t j, uint32_t e,
		   GjRowId *const maps[GJ_NUM_ROUND_MAPS])
{
	if (maps[GJ_ROUND_OUTER_ROWS] != NULL)
		maps[GJ_ROUND_OUTER_ROWS][slot] = ((const GjRowId *) state->outer_rows.ptr)[j];
	if (maps[GJ_ROUND_INNER_ROWS] != NULL)
		maps[GJ_ROUND_INNER_ROWS][slot] = ((const GjRowId *) state->entry_rows.ptr)[e];
	if (maps[GJ_ROUND_OUTER_POS] != NULL)
		maps[GJ_ROUND_OUTER_POS][slot] = (GjRowId) j;
	if (maps[GJ_ROUND_INNER_POS] != NULL)
		maps[GJ_ROUND_INNER_POS][slot] = e;
}

/*
 * Write the round maps of the matches first .. first + round_size - 1
 * (GjCpuVariant.retrieve)
 *
 * Only the positions whose matches meet the window are visited: the
 * first one by binary search on the offsets, and the walk stops at the
 * first position that starts beyond the window.  GFUR gathers both sides'
 * payload from the columns as they came, by row; GFTR from the transformed
 * ones, by position, both sides (gj_round_plan).
 */
static GjStatus
PhjRetrieve(GjCpuContext *ctx, uint64_t first, int64_t round_size,
			GjRoundSources *sources, GjError *err)
{
	PhjState   *state = (PhjState *) ctx->variant_state;
	GjRowId    *maps[GJ_NUM_ROUND_MAPS];
	const uint64_t *entry_keys = (const uint64_t *) state->entry_keys.ptr;
	const uint64_t *outer_keys = (const uint64_t *) state->outer_keys.ptr;
	const uint64_t *offsets = (const uint64_t *) state->offsets.ptr;
	const uint32_t *first_entry = (const uint32_t *) state->first.ptr;
	const uint32_t *last_entry = (const uint32_t *) state->last.ptr;
	uint64_t	window_begin = first;
	uint64_t	window_end = first + (uint64_t) round_size;
	GjStatus	status;

	status = gj_cpu_round_maps_reserve(ctx, true, round_size, sources, maps, err);
	if (status != GJ_OK)
		return status;

	for (int64_t j = gj_seek_match_row(offsets, state->npositions, window_begin);
		 j < state->npositions && offsets[j] < window_end;
		 j++)
	{
		uint64_t	key = outer_keys[j];
		uint64_t	match = offsets[j];
		uint64_t	count = offsets[j + 1] - offsets[j];
		uint32_t	e;
		bool		neighbours;

		if (count == 0)
			continue;
		e = first_entry[j];

		/* When the matches are neighbours, every entry matches: skip to the window */
		neighbours = (uint64_t) (last_entry[j] - first_entry[j]) + 1 == count;
		if (neighbours && match < window_begin)
		{
			e += (uint32_t) (window_begin - match);
			match = window_begin;
		}

		/* Walk the bucket; the k-th entry with an equal key is match offsets[j] + k */
		for (; match < offsets[j + 1] && match < window_end; e++)
		{
			if (!neighbours && entry_keys[e] != key)
				continue;
			if (match >= window_begin)
				WriteMatch(state, match - window_begin, j, e, maps);
			match++;
		}
	}
	return GJ_OK;
}

/* Free the state and its arrays (GjCpuVariant.destroy_state) */
static void
PhjDestroyState(GjCpuContext *ctx)
{
	PhjState   *state = (PhjState *) ctx->variant_state;

	if (state == NULL)
		return;
	gj_cpu_buffer_release(&state->entry_keys);
	gj_cpu_buffer_release(&state->entry_rows);
	gj_cpu_buffer_release(&state->inner_start);
	gj_cpu_buffer_release(&state->outer_keys);
	gj_cpu_buffer_release(&state->outer_rows);
	gj_cpu_buffer_release(&state->outer_start);
	gj_cpu_buffer_release(&state->offsets);
	gj_cpu_buffer_release(&state->first);
	gj_cpu_buffer_release(&state->last);
	gj_cpu_buffer_release(&state->digits);
	gj_cpu_buffer_release(&state->rows);
	gj_cpu_buffer_release(&state->bucket_start);
	free(state);
	ctx->variant_state = NULL;
}

const GjCpuVariant gj_cpu_phj = {
	.name = "PHJ",
	.build = PhjBuild,
	.count = PhjCount,
	.retrieve = PhjRetrieve,
	.destroy_state = PhjDestroyState,
};
