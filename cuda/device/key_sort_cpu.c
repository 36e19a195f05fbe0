/*-------------------------------------------------------------------------
 *
 * key_sort_cpu.c
 *	  CPU twin of key_sort.cu: the stable sort of (key, row) pairs and the
 *	  retrieve of ranges of sorted pairs, shared by the sort-merge join
 *	  (SMJ) and the band join (BAND)
 *
 * This file is the specification of both: if key_sort.cu and this file
 * disagree on any input, key_sort.cu is wrong.
 *
 * THE SORT (gj_cpu_sort_pairs)
 *
 *	  1. the (key, row) pairs of the rows whose key is not NULL and lies in
 *		 [min, max], in row order: no other key can match
 *	  2. stable LSD radix sort of the pairs, 8 bits a pass, on the low
 *		 "bits" bits (gj_smj_sort_bits(min, max), common.h): the bits above
 *		 them are the same in every key of the range
 *
 * so that equal keys keep ascending rows.  Every 64-bit value, 0 and
 * UINT64_MAX included, is an ordinary key: nothing is a sentinel, since
 * NULL keys are left out rather than sorted.
 *
 * THE RANGES (gj_cpu_ranges_retrieve; GjSortedRanges, common.h)
 *
 * After its count, a variant has for each position p (SMJ: a sorted outer
 * position; BAND: an outer row) the run of sorted inner pairs it matches,
 * lower[p] .. lower[p] + count - 1, and offsets[], the exclusive prefix
 * sum of the counts.  Match m is then match m - offsets[p] of the position
 * p with offsets[p] <= m < offsets[p + 1], i.e. sorted inner position
 * lower[p] + (m - offsets[p]).  A round finds the position of its first
 * match by binary search on the offsets (gj_seek_match_row), and walks on
 * from there until the round is full, so it touches only the positions
 * whose matches meet it: a chunk of 10^10 matches comes out in rounds of
 * max_matches like any other.  When every position has at most one match
 * (SMJ's unique inner side), match_pos[m] names match m's position and no
 * search is needed.
 *
 * IDENTIFICATION
 *	  cuda/device/key_sort_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "cpu_internal.h"
#include "gpujoin_kernels.h"

/* Digits of the radix sort: 8 bits, 256 buckets, at most 8 passes */
#define RADIX_BITS		8
#define RADIX_BUCKETS	(1 << RADIX_BITS)
#define RADIX_PASSES	(64 / RADIX_BITS)

/*
 * The (key, row) pairs of the rows whose key is not NULL and lies in
 * [min_key, max_key], in row order, into keys and rows (nrows entries
 * reserved); returns how many
 */
static int64_t
SelectRows(const uint64_t *batch_keys, const uint8_t *nulls, int64_t nrows,
		   uint64_t min_key, uint64_t max_key, uint64_t *keys, GjRowId *rows)
{
	int64_t		n = 0;

	for (int64_t row = 0; row < nrows; row++)
	{
		uint64_t	key = batch_keys[row];

		if (gj_flag_set(nulls, row) || key < min_key || key > max_key)
			continue;
		keys[n] = key;
		rows[n] = (GjRowId) row;
		n++;
	}
	return n;
}

/* Exchange two buffers (the radix sort's ping-pong) */
static void
SwapBuffers(GjHostBuffer *a, GjHostBuffer *b)
{
	GjHostBuffer t = *a;

	*a = *b;
	*b = t;
}

/*
 * Sort the n pairs (keys[i], rows[i]) by key on the low "bits" bits, stably
 *
 * LSD radix sort, 8 bits a pass: each pass is a counting sort on one digit
 * that visits the pairs in their current order, so pairs with equal digits
 * keep their order, and after the last pass pairs with equal keys are in
 * the order they came in (ascending rows, from SelectRows).  The digit
 * histograms of every pass come from one read of the keys (the digits of a
 * key do not change when it moves); a pass whose digit is the same in
 * every key would leave the order as it is, and is skipped.  A last digit
 * that reaches beyond "bits" sorts on bits that are equal in every key,
 * which changes nothing.
 *
 * The pairs may end up in the double buffers; the buffers are then
 * swapped, so that buffers->keys and buffers->rows hold the result either
 * way.
 */
static GjStatus
SortPairs(const GjHostSortBuffers *buffers, int64_t n, int bits, GjError *err)
{
	int			npasses = (bits + RADIX_BITS - 1) / RADIX_BITS;
	int64_t		counts[RADIX_PASSES][RADIX_BUCKETS];
	GjStatus	status;

	if (n < 2 || npasses == 0)
		return GJ_OK;
	status = gj_cpu_buffer_reserve(buffers->keys_alt, (size_t) n * sizeof(uint64_t),
								   "the keys being sorted", err);
	if (status == GJ_OK)
		status = gj_cpu_buffer_reserve(buffers->rows_alt, (size_t) n * sizeof(GjRowId),
									   "the rows being sorted", err);
	if (status != GJ_OK)
		return status;

	memset(counts, 0, sizeof(counts));
	for (int64_t i = 0; i < n; i++)
	{
		uint64_t	key = ((const uint64_t *) buffers->keys->ptr)[i];

		for (int pass = 0; pass < npasses; pass++)
			counts[pass][(key >> (pass * RADIX_BITS)) & (RADIX_BUCKETS - 1)]++;
	}

	for (int pass = 0; pass < npasses; pass++)
	{
		const uint64_t *src_keys = (const uint64_t *) buffers->keys->ptr;
		const GjRowId *src_rows = (const GjRowId *) buffers->rows->ptr;
		uint64_t   *dst_keys = (uint64_t *) buffers->keys_alt->ptr;
		GjRowId    *dst_rows = (GjRowId *) buffers->rows_alt->ptr;
		int			shift = pass * RADIX_BITS;
		int64_t		next[RADIX_BUCKETS];
		int64_t		sum = 0;
		bool		one_digit = false;

		/* the next free slot of each digit: exclusive prefix sum */
		for (int d = 0; d < RADIX_BUCKETS; d++)
		{
			if (counts[pass][d] == n)
				one_digit = true;
			next[d] = sum;
			sum += counts[pass][d];
		}
		if (one_digit)
			continue;

		for (int64_t i = 0; i < n; i++)
		{
			int			d = (int) ((src_keys[i] >> shift) & (RADIX_BUCKETS - 1));
			int64_t		slot = next[d]++;

			dst_keys[slot] = src_keys[i];
			dst_rows[slot] = src_rows[i];
		}
		SwapBuffers(buffers->keys, buffers->keys_alt);
		SwapBuffers(buffers->rows, buffers->rows_alt);
	}
	return GJ_OK;
}

/*
 * The (key, row) pairs of a side's nrows keys whose key is not NULL and
 * lies in [min_key, max_key], sorted by key, stably, on the low "bits"
 * bits: into buffers->keys and buffers->rows, *npairs of them
 *
 * The buffers are the caller's (its private state), reserved here; the
 * double buffers are the sort's scratch, which the caller releases when
 * it is done sorting.  side names the buffers in messages ("the sorted
 * outer keys").
 */
GjStatus
gj_cpu_sort_pairs(GjSide side, const uint64_t *keys, const uint8_t *nulls,
				  int64_t nrows, uint64_t min_key, uint64_t max_key, int bits,
				  const GjHostSortBuffers *buffers, int64_t *npairs,
				  GjError *err)
{
	char		name[64];
	GjStatus	status;

	*npairs = 0;
	snprintf(name, sizeof(name), "the sorted %s keys", gj_side_name(side));
	status = gj_cpu_buffer_reserve(buffers->keys, (size_t) nrows * sizeof(uint64_t),
								   name, err);
	if (status != GJ_OK)
		return status;
	snprintf(name, sizeof(name), "the sorted %s rows", gj_side_name(side));
	status = gj_cpu_buffer_reserve(buffers->rows, (size_t) nrows * sizeof(GjRowId),
								   name, err);
	if (status != GJ_OK)
		return status;

	*npairs = SelectRows(keys, nulls, nrows, min_key, max_key,
						 (uint64_t *) buffers->keys->ptr,
						 (GjRowId *) buffers->rows->ptr);
	return SortPairs(buffers, *npairs, bits, err);
}

/*
 * Record match number "slot" of the round: position p, sorted inner
 * position q; each map when the round has it
 */
static inline void
WriteMatch(const GjSortedRanges *ranges, GjRowId *const *maps, int64_t slot,
		   int64_t p, int64_t q)
{
	if (maps[GJ_ROUND_OUTER_ROWS] != NULL)
		maps[GJ_ROUND_OUTER_ROWS][slot] = ranges->outer_rows != NULL ?
			ranges->outer_rows[p] : (GjRowId) p;
	if (maps[GJ_ROUND_INNER_ROWS] != NULL)
		maps[GJ_ROUND_INNER_ROWS][slot] = ranges->inner_rows[q];
	if (maps[GJ_ROUND_OUTER_POS] != NULL)
		maps[GJ_ROUND_OUTER_POS][slot] = (GjRowId) p;
	if (maps[GJ_ROUND_INNER_POS] != NULL)
		maps[GJ_ROUND_INNER_POS][slot] = (GjRowId) q;
}

/*
 * Write the round maps of the matches first .. first + round_size - 1 of
 * a counted chunk's ranges (see GjSortedRanges)
 *
 * With match_pos: match m is position match_pos[m] and its lower bound.
 * Otherwise: the first position of the window by binary search on the
 * offsets, then position by position, match k of position p being inner
 * position lower[p] + k, until the window is full.  maps are the round's
 * maps from gj_cpu_round_maps_reserve; each is written when it is not
 * NULL.
 */
void
gj_cpu_ranges_retrieve(const GjSortedRanges *ranges, uint64_t first,
					   int64_t round_size, GjRowId *const maps[GJ_NUM_ROUND_MAPS])
{
	const uint64_t *offsets = ranges->offsets;
	uint64_t	window_end = first + (uint64_t) round_size;

	if (ranges->match_pos != NULL)
	{
		for (int64_t slot = 0; slot < round_size; slot++)
		{
			GjRowId		p = ranges->match_pos[first + (uint64_t) slot];

			WriteMatch(ranges, maps, slot, p, ranges->lower[p]);
		}
		return;
	}

	for (int64_t p = gj_seek_match_row(offsets, ranges->npos, first);
		 p < ranges->npos && offsets[p] < window_end;
		 p++)
	{
		uint64_t	match = offsets[p] > first ? offsets[p] : first;

		for (; match < offsets[p + 1] && match < window_end; match++)
			WriteMatch(ranges, maps, (int64_t) (match - first), p,
					   (int64_t) ranges->lower[p] + (int64_t) (match - offsets[p]));
	}
}
