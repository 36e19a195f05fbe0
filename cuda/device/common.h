/*-------------------------------------------------------------------------
 *
 * common.h
 *	  Helpers shared by the CUDA kernels and their CPU twins
 *
 * Plain C, included by gcc (the *_cpu.c twins, the kernel tests) and by
 * nvcc (the *.cu files, through common.cuh).  Whatever decides the layout
 * of a device structure or the answer to a call lives here, written once,
 * so that the two implementations cannot drift apart: the hash function,
 * the NPHJ table layout (hashed or dense) and the bucket of a key, what a
 * NULL flag array means, the size of an NLJ tile, the maps a round is
 * gathered through, the checks of every argument, and the words of every
 * message.  If
 * hash_join.cu computed a bucket in any other way than hash_join_cpu.c,
 * the two would order the entries of a bucket differently and the kernel
 * tests would fail on their first case.
 *
 * THE NPHJ TABLE (hash_join.cu, hash_join_cpu.c)
 *
 * A CSR-style ("compressed sparse row") array: the entries (key, inner
 * row) sorted by bucket, and bucket_start[b] the index of bucket b's first
 * entry, bucket_start[nbuckets] the number of entries.  Its layout is one
 * of two, chosen from the inner side by gj_nphj_layout():
 *
 *	  dense		the non-NULL inner keys lie in [min, max] with
 *				max - min + 1 <= 2 x inner rows (and <= 2^31): one bucket
 *				per key value, bucket(key) = key - min, so a bucket holds
 *				only equal keys and needs no key comparison (a perfect
 *				hash); outer keys outside [min, max] match nothing
 *	  hashed	otherwise: bucket_bits = the smallest b >= 1 with 2^b >=
 *				inner rows (load factor <= 1), bucket(key) = the top
 *				bucket_bits bits of gj_hash64(key)
 *
 * The top bits, not the bottom ones, because they are the best mixed bits
 * of a multiplicative finalizer, and because then the bucket order is the
 * order of the hash values themselves.
 *
 * IDENTIFICATION
 *	  cuda/device/common.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_COMMON_H
#define GPUJOIN_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gpujoin_kernels.h"

/* GJ_HOST_DEVICE: gpujoin_kernels.h */

#if defined(__GNUC__) || defined(__clang__)
#define GJ_PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define GJ_PRINTF_LIKE(f, a)
#endif

/*
 * Is row's flag set?
 *
 * A batch's key NULL flags and a payload column's are a NULL pointer when
 * no row has one (gpujoin_kernels.h), so "no array" reads as "not set".
 */
static inline GJ_HOST_DEVICE bool
gj_flag_set(const uint8_t *flags, int64_t row)
{
	return flags != NULL && flags[row] != 0;
}

/* gj_hash64, the hash the kernels place keys by: gpujoin_kernels.h */

/*
 * Number of bucket bits of a hashed table built on nrows inner rows
 *
 * The smallest b >= 1 with 2^b >= nrows.  Rows with a NULL key are counted
 * too, so the layout depends on nrows alone.  nrows <= GJ_MAX_ROWS < 2^31
 * gives at most 31 bits, so a bucket number, and the sentinel bucket
 * nbuckets that the GPU build sorts NULL keys into, fit in uint32.
 */
static inline GJ_HOST_DEVICE int
gj_bucket_bits(int64_t nrows)
{
	int			bits = 1;

	while (bits < 62 && ((int64_t) 1 << bits) < nrows)
		bits++;
	return bits;
}

/* Number of buckets of a table with bucket_bits bits */
static inline GJ_HOST_DEVICE int64_t
gj_bucket_count(int bucket_bits)
{
	return (int64_t) 1 << bucket_bits;
}

/* The bucket of a key: the top bucket_bits bits of its hash (bits >= 1) */
static inline GJ_HOST_DEVICE uint32_t
gj_bucket(uint64_t key, int bucket_bits)
{
	return (uint32_t) (gj_hash64(key) >> (64 - bucket_bits));
}

/*
 * The layout of an NPHJ table
 *
 *	dense		true: bucket(key) = key - min_key; false: hashed
 *	bucket_bits	hashed: bits of gj_bucket(); 0 when dense
 *	min_key		dense: the key of bucket 0; 0 when hashed
 *	nbuckets	dense: max - min + 1; hashed: 2^bucket_bits.  At most 2^31,
 *				so nbuckets itself, the GPU's NULL sentinel, fits in uint32
 */
typedef struct GjNphjLayout
{
	bool		dense;
	int			bucket_bits;
	uint64_t	min_key;
	uint32_t	nbuckets;
} GjNphjLayout;

/* Most buckets of a dense table: key - min_key must fit in a GjRowId */
#define GJ_NPHJ_MAX_DENSE_BUCKETS	(UINT64_C(1) << 31)

/*
 * Choose the layout of an NPHJ table on nrows inner rows (NULL keys
 * included, as for gj_bucket_bits) whose non-NULL keys lie in [min_key,
 * max_key] (unsigned order; min_key <= max_key, so at least one key is
 * not NULL)
 *
 * Dense when the range has at most 2 x nrows values, and at most 2^31:
 * the bucket array then costs at most 8 bytes an inner row, no more than
 * the hashed table's, and a probe costs one subtraction instead of a hash
 * and a walk over a bucket comparing keys.  Both implementations call
 * this with the same numbers, so they choose alike.
 */
static inline void
gj_nphj_layout(int64_t nrows, uint64_t min_key, uint64_t max_key,
			   GjNphjLayout *layout)
{
	uint64_t	span = max_key - min_key;	/* values in range, less one */

	if (span < (uint64_t) 2 * (uint64_t) nrows &&
		span < GJ_NPHJ_MAX_DENSE_BUCKETS)
	{
		layout->dense = true;
		layout->bucket_bits = 0;
		layout->min_key = min_key;
		layout->nbuckets = (uint32_t) (span + 1);
	}
	else
	{
		layout->dense = false;
		layout->bucket_bits = gj_bucket_bits(nrows);
		layout->min_key = 0;
		layout->nbuckets = (uint32_t) gj_bucket_count(layout->bucket_bits);
	}
}

/*
 * The bucket of key in an NPHJ table, into *bucket; false when the key
 * cannot be in the table (dense layout, key outside [min, max])
 */
static inline GJ_HOST_DEVICE bool
gj_nphj_bucket(const GjNphjLayout *layout, uint64_t key, uint32_t *bucket)
{
	if (layout->dense)
	{
		uint64_t	offset = key - layout->min_key;

		/* keys below min_key wrap around to offsets >= 2^63 */
		if (offset >= layout->nbuckets)
			return false;
		*bucket = (uint32_t) offset;
		return true;
	}
	*bucket = gj_bucket(key, layout->bucket_bits);
	return true;
}

/*
 * What an NPHJ build chose, for GjStats.detail (EXPLAIN): "dense keys,
 * 2000 buckets", "hashed, 2^20 buckets", or "no inner keys" when the inner
 * side has no non-NULL key (then no table is built at all)
 */
static inline void
gj_nphj_describe(const GjNphjLayout *layout, int64_t nentries, char *buf,
				 size_t size)
{
	if (nentries == 0)
		snprintf(buf, size, "no inner keys");
	else if (layout->dense)
		snprintf(buf, size, "dense keys, %lu buckets",
				 (unsigned long) layout->nbuckets);
	else
		snprintf(buf, size, "hashed, 2^%d buckets", layout->bucket_bits);
}

/*
 * THE SMJ SORT (sort_merge.cu, sort_merge_cpu.c)
 *
 * Both sides are sorted as (key, row) pairs by a stable LSD radix sort, on
 * the low gj_smj_sort_bits(min, max) bits only, min and max being the
 * inner side's smallest and largest non-NULL key: every key that can
 * match lies in [min, max] (outer keys outside it are left out of the
 * outer sort), and every value of that range has the same bits as min and
 * max above the highest bit in which the two differ.  So keys of a narrow
 * range (int4 keys, for one) sort in 4 passes of 8 bits, not 8, on either
 * implementation, and both describe the build alike.
 */
static inline GJ_HOST_DEVICE int
gj_smj_sort_bits(uint64_t min_key, uint64_t max_key)
{
	uint64_t	diff = min_key ^ max_key;
	int			bits = 0;

	while (diff != 0)
	{
		bits++;
		diff >>= 1;
	}
	return bits;
}

/*
 * What an SMJ build chose, for GjStats.detail (EXPLAIN): "sorted 24-bit
 * keys", "sorted 64-bit keys, unique inner" (at most one match an outer
 * row: the PK-FK and PK-PK path), "one key value" when every inner key is
 * the same, or "no inner keys" (then nothing is sorted at all).  A BAND
 * build sorts its inner side the same way and says the same, with unique
 * false: a range join has no unique path.
 */
static inline void
gj_smj_describe(int64_t nkeys, int sort_bits, bool unique, char *buf,
				size_t size)
{
	if (nkeys == 0)
		snprintf(buf, size, "no inner keys");
	else if (sort_bits == 0)
		snprintf(buf, size, "one key value%s", unique ? ", unique inner" : "");
	else
		snprintf(buf, size, "sorted %d-bit keys%s", sort_bits,
				 unique ? ", unique inner" : "");
}

/*
 * First index in [lo, hi) of the sorted keys whose key is not less than
 * key (upper: greater than key); hi when there is none.  The equal keys
 * of a sorted array are keys[lower bound .. upper bound).
 */
static inline GJ_HOST_DEVICE int64_t
gj_smj_bound(const uint64_t *keys, int64_t lo, int64_t hi, uint64_t key,
			 bool upper)
{
	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (keys[mid] < key || (upper && keys[mid] == key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * RANGES OF SORTED INNER PAIRS (key_sort.cu, key_sort_cpu.c: SMJ and BAND)
 *
 * SMJ and BAND both end their count with, for each "position" p of the
 * chunk (SMJ: a sorted outer position; BAND: an outer row), a run of
 * neighbouring sorted inner pairs that it matches: lower[p] .. lower[p] +
 * count - 1, and offsets[], the exclusive prefix sum of the counts, so
 * that match m of the chunk is match m - offsets[p] of the position p
 * with offsets[p] <= m < offsets[p + 1].  Their retrieve is then one
 * piece of code, gj_cuda_ranges_retrieve / gj_cpu_ranges_retrieve, which
 * reads the ranges through this struct (device arrays on the GPU, host
 * arrays on the CPU):
 *
 *	npos		positions of the chunk
 *	offsets		uint64_t[npos + 1]: match offsets, offsets[npos] the total
 *	lower		GjRowId[npos]: each position's first sorted inner position
 *	match_pos	GjRowId[total]: the position of each match, when every
 *				position has at most one (SMJ's unique inner side); NULL
 *				otherwise
 *	outer_rows	GjRowId[npos]: the outer row of each position; NULL when
 *				position p is outer row p (BAND)
 *	inner_rows	GjRowId[sorted pairs]: the inner row of each sorted pair
 */
typedef struct GjSortedRanges
{
	int64_t		npos;
	const uint64_t *offsets;
	const GjRowId *lower;
	const GjRowId *match_pos;
	const GjRowId *outer_rows;
	const GjRowId *inner_rows;
} GjSortedRanges;

/*
 * THE NLJ TILES (theta_nlj.cu, theta_nlj_cpu.c)
 *
 * The GPU tests each outer row against the inner side one tile at a time,
 * the tile's values of every term in shared memory (Bellas and Gounaris
 * 2017, §5.2).  A tile holds as many inner rows as fit into
 * GJ_NLJ_TILE_BYTES with all nterms 8-byte values and a skip
 * flag each, in multiples of 256 (one load a thread of a 256-thread block),
 * at most GJ_NLJ_MAX_TILE_ROWS: 1024 rows for 1 to 5 terms, 768 for 6 and 7,
 * 512 for 8.  48 KiB is what a block gets without opting in to more, and
 * leaves room for four blocks or more a multiprocessor.  The CPU twin
 * names the same tile in its detail, so that EXPLAIN says the same on
 * either.
 */
#define GJ_NLJ_TILE_BYTES		49152
#define GJ_NLJ_MAX_TILE_ROWS	1024
#define GJ_NLJ_TILE_ALIGN		256

/* Inner rows of one NLJ tile, for nterms terms (1 .. GJ_MAX_TERMS) */
static inline GJ_HOST_DEVICE int
gj_nlj_tile_rows(int nterms)
{
	int			rows = GJ_NLJ_TILE_BYTES / (nterms * (int) sizeof(uint64_t) + 1);

	rows -= rows % GJ_NLJ_TILE_ALIGN;
	if (rows > GJ_NLJ_MAX_TILE_ROWS)
		rows = GJ_NLJ_MAX_TILE_ROWS;
	return rows;
}

/*
 * What an NLJ build chose, for GjStats.detail (EXPLAIN): "2 terms, tiles
 * of 1024 rows"
 */
static inline void
gj_nlj_describe(int nterms, char *buf, size_t size)
{
	snprintf(buf, size, "%d term%s, tiles of %d rows", nterms,
			 nterms == 1 ? "" : "s", gj_nlj_tile_rows(nterms));
}

/*
 * THE PHJ PARTITIONS (partitioned_join.cu, partitioned_join_cpu.c)
 *
 * PHJ splits both sides into 2^radix_bits partitions, partition(key) = the
 * top radix_bits bits of gj_hash64(key), by a stable radix partitioning,
 * and joins each inner partition with its co-partition of the outer side
 * alone.  Its matches are numbered by partition, then outer row, then
 * inner row (gpujoin_kernels.h), so the number of bits is part of the
 * answer: gj_phj_radix_bits() decides it from the inner side's rows (NULL
 * keys included, so that it depends on the row count alone), and both
 * implementations and the kernel tests call it.
 *
 * It takes the fewest bits, at most 16, that bring the average inner
 * partition down to GJ_PHJ_PARTITION_ROWS rows: half of what one shared-
 * memory table holds (GJ_PHJ_TABLE_ROWS), so that with the spread of a
 * bijective hash nearly every partition fits one table.  That is 0 bits
 * (one partition) up to 2048 inner rows, 10 bits (2 passes of 5) at 2M,
 * 13 at 10M, 15 at 33M to 67M and 16 (2 passes of 8) from 67M rows on,
 * where PHJ-TR uses 15 or 16 bits for every size (Wu et al. 2025, §4.1.4).
 * Beyond 2^16 x GJ_PHJ_TABLE_ROWS = 268M inner rows the average partition
 * no longer fits one table and is probed in several (sub-tables), as a skewed
 * partition is at any size.
 *
 * Within an inner partition, rows are ordered by bucket, the next
 * GJ_PHJ_BUCKET_BITS bits of the hash, and by row within a bucket: the
 * stable order of gj_phj_digit(), partition and bucket in one number.
 * Then any slice of a partition, a whole one or GJ_PHJ_TABLE_ROWS rows of
 * an oversized one, is a bucketed hash table once its bucket starts are
 * known, and the rows of one key come in ascending row order.
 */
#define GJ_PHJ_MAX_RADIX_BITS	16
#define GJ_PHJ_BITS_PER_PASS	8	/* radix bits of one partitioning pass */
#define GJ_PHJ_PARTITION_ROWS	2048	/* target average inner partition */
#define GJ_PHJ_TABLE_ROWS		4096	/* inner rows of one (sub-)table */
#define GJ_PHJ_BUCKET_BITS		11	/* buckets of a (sub-)table: 2048 */
#define GJ_PHJ_BUCKETS			(1 << GJ_PHJ_BUCKET_BITS)

/* Radix bits of a PHJ build on inner_rows rows (NULL keys included) */
static inline GJ_HOST_DEVICE int
gj_phj_radix_bits(int64_t inner_rows)
{
	int			bits = 0;

	while (bits < GJ_PHJ_MAX_RADIX_BITS &&
		   ((int64_t) GJ_PHJ_PARTITION_ROWS << bits) < inner_rows)
		bits++;
	return bits;
}

/* The partition of a key: the top radix_bits bits of its hash (0 bits: 0) */
static inline GJ_HOST_DEVICE uint32_t
gj_phj_partition(uint64_t key, int radix_bits)
{
	if (radix_bits == 0)
		return 0;
	return (uint32_t) (gj_hash64(key) >> (64 - radix_bits));
}

/*
 * Partition and bucket of a key in one number: the top radix_bits +
 * GJ_PHJ_BUCKET_BITS bits of its hash, partition above, bucket below
 */
static inline GJ_HOST_DEVICE uint32_t
gj_phj_digit(uint64_t key, int radix_bits)
{
	return (uint32_t) (gj_hash64(key) >> (64 - radix_bits - GJ_PHJ_BUCKET_BITS));
}

/* The bucket of a key within its partition's table */
static inline GJ_HOST_DEVICE uint32_t
gj_phj_bucket(uint64_t key, int radix_bits)
{
	return gj_phj_digit(key, radix_bits) & (GJ_PHJ_BUCKETS - 1);
}

/*
 * What a PHJ build chose, for GjStats.detail (EXPLAIN): the radix bits as
 * passes of at most GJ_PHJ_BITS_PER_PASS, split as evenly as they go
 * ("radix bits 2x8", "radix bits 7+6", "radix bits 1x5", "one partition"),
 * and the inner partitions of more than GJ_PHJ_TABLE_ROWS rows (skew), which
 * the GPU probes in several sub-tables ("..., 3 oversized partitions"); or
 * "no inner keys" when no inner key is non-NULL (then nothing is built)
 */
static inline void
gj_phj_describe(int radix_bits, int64_t nentries, int64_t oversized,
				char *buf, size_t size)
{
	int			passes = (radix_bits + GJ_PHJ_BITS_PER_PASS - 1) / GJ_PHJ_BITS_PER_PASS;
	int			first = passes > 0 ? (radix_bits + passes - 1) / passes : 0;
	int			len;

	if (nentries == 0)
	{
		snprintf(buf, size, "no inner keys");
		return;
	}
	if (passes == 0)
		len = snprintf(buf, size, "one partition");
	else if (first * passes == radix_bits)
		len = snprintf(buf, size, "radix bits %dx%d", passes, first);
	else
		len = snprintf(buf, size, "radix bits %d+%d", first, radix_bits - first);
	if (oversized > 0 && len > 0 && (size_t) len < size)
		snprintf(buf + len, size - (size_t) len, ", %lld oversized partition%s",
				 (long long) oversized, oversized == 1 ? "" : "s");
}

/*
 * The matches an outer row with count equal keys in the table has, as
 * the spec's outer_match counts them (GjOuterMatch): all of them; one
 * where there is any (a semi join); one where there is none (an anti
 * join, a NULL key's row too: its count is 0); all of them, or one where
 * there is none (a left join)
 */
static inline GJ_HOST_DEVICE uint64_t
gj_outer_match_count(uint8_t outer_match, uint64_t count)
{
	if (outer_match == GJ_OUTER_FIRST)
		return count > 0 ? 1 : 0;
	if (outer_match == GJ_OUTER_NONE)
		return count == 0 ? 1 : 0;
	if (outer_match == GJ_OUTER_LEFT)
		return count > 0 ? count : 1;
	return count;
}

/*
 * The outer row that holds match number "first" of a counted chunk
 *
 * offsets[0..nrows] is the exclusive prefix sum of the per-row match
 * counts, with offsets[nrows] the total; the caller guarantees first <
 * offsets[nrows].  Returns the row r with offsets[r] <= first <
 * offsets[r + 1], found by binary search, so a round of retrieve starts
 * where its window starts instead of at row 0.
 */
static inline GJ_HOST_DEVICE int64_t
gj_seek_match_row(const uint64_t *offsets, int64_t nrows, uint64_t first)
{
	int64_t		lo = 0;
	int64_t		hi = nrows;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (offsets[mid + 1] <= first)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The two sides of a join, as an index: per-side arrays of the contexts
 * (payload columns, NULL flags, output arrays) are indexed by it
 */
typedef enum GjSide
{
	GJ_SIDE_OUTER = 0,
	GJ_SIDE_INNER,
	GJ_NUM_SIDES
} GjSide;

/*
 * Whether payload column c of side comes with NULL flags in the rounds:
 * where the batch gave them (batch_nulls), and always on a left join's
 * inner side (its rows with no match are NULL there)
 */
static inline bool
gj_column_has_nulls(const GjJoinSpec *spec, GjSide side, bool batch_nulls)
{
	return batch_nulls || (side == GJ_SIDE_INNER && spec->outer_match == GJ_OUTER_LEFT);
}

/* "outer" or "inner", for messages */
static inline const char *
gj_side_name(GjSide side)
{
	return side == GJ_SIDE_OUTER ? "outer" : "inner";
}

/* Payload columns of one side of a spec, and their widths */
static inline int
gj_side_ncolumns(const GjJoinSpec *spec, GjSide side)
{
	return side == GJ_SIDE_OUTER ? spec->outer_ncolumns : spec->inner_ncolumns;
}

static inline const int32_t *
gj_side_widths(const GjJoinSpec *spec, GjSide side)
{
	return side == GJ_SIDE_OUTER ? spec->outer_widths : spec->inner_widths;
}

/*
 * The payload column sets of a context (materialize.cu,
 * materialize_cpu.c): each holds one side's payload columns, values and
 * NULL flags, in one order.  The variants choose which they fill:
 *
 *	INNER				the inner side as it came, in row order: the source
 *						of GFUR; scratch of a GFTR build
 *	INNER_TRANSFORMED	GFTR: the inner side permuted by the variant's stable
 *						transform, along with its keys (NPHJ: entry order)
 *	OUTER				the counted chunk as it came, in row order
 *	OUTER_TRANSFORMED	GFTR, for variants that transform the outer side too
 *						(PHJ, SMJ); NPHJ probes in row order and leaves it empty
 *	ROUND_OUTER			one round's values of each side, in match order:
 *	ROUND_INNER			what retrieve hands out
 */
typedef enum GjColumnSetId
{
	GJ_COLUMNS_INNER,
	GJ_COLUMNS_INNER_TRANSFORMED,
	GJ_COLUMNS_OUTER,
	GJ_COLUMNS_OUTER_TRANSFORMED,
	GJ_COLUMNS_ROUND_OUTER,
	GJ_COLUMNS_ROUND_INNER,
	GJ_NUM_COLUMN_SETS
} GjColumnSetId;

/* Which side's columns a set holds */
static inline GjSide
gj_column_set_side(GjColumnSetId set)
{
	switch (set)
	{
		case GJ_COLUMNS_OUTER:
		case GJ_COLUMNS_OUTER_TRANSFORMED:
		case GJ_COLUMNS_ROUND_OUTER:
			return GJ_SIDE_OUTER;
		default:
			return GJ_SIDE_INNER;
	}
}

/*
 * Is the set part of the build, read from the context whose build a
 * context shares (GjKernels.context_share)?
 */
static inline bool
gj_column_set_built(GjColumnSetId set)
{
	return set == GJ_COLUMNS_INNER || set == GJ_COLUMNS_INNER_TRANSFORMED;
}

/* What a set holds, for error messages: "the inner payload column" */
static inline const char *
gj_column_set_name(GjColumnSetId set)
{
	switch (set)
	{
		case GJ_COLUMNS_INNER:
			return "inner payload column";
		case GJ_COLUMNS_INNER_TRANSFORMED:
			return "transformed inner payload column";
		case GJ_COLUMNS_OUTER:
			return "outer payload column";
		case GJ_COLUMNS_OUTER_TRANSFORMED:
			return "transformed outer payload column";
		case GJ_COLUMNS_ROUND_OUTER:
			return "round's outer payload column";
		case GJ_COLUMNS_ROUND_INNER:
			return "round's inner payload column";
		case GJ_NUM_COLUMN_SETS:
			break;
	}
	return "payload column";
}

/*
 * The index arrays of one round of matches, GjRowId[round], written by a
 * variant's retrieve:
 *
 *	OUTER_ROWS, INNER_ROWS	the matches' row numbers; required when
 *							spec.row_ids (they become GjMatchRound's
 *							outer_rows and inner_rows)
 *	OUTER_POS, INNER_POS	positions in a TRANSFORMED column set, for GFTR
 *
 * and which set and which map each side's payload values are gathered
 * from (GjRoundSources): GFUR gathers from the untransformed sets by row,
 * GFTR from the transformed ones by position.  gj_round_plan decides both
 * for every variant.
 */
typedef enum GjRoundMap
{
	GJ_ROUND_OUTER_ROWS,
	GJ_ROUND_INNER_ROWS,
	GJ_ROUND_OUTER_POS,
	GJ_ROUND_INNER_POS,
	GJ_NUM_ROUND_MAPS
} GjRoundMap;

typedef struct GjRoundSources
{
	GjColumnSetId columns[GJ_NUM_SIDES];	/* gathered from ... */
	GjRoundMap	map[GJ_NUM_SIDES];	/* ... at these rows or positions */
} GjRoundSources;

/*
 * Plan a round of a variant's retrieve: where each side's payload values
 * are gathered from (sources), and which round maps the retrieve writes
 * (need[map])
 *
 * A side that the variant transforms is gathered by position from its
 * transformed set when the join is GFTR; otherwise by row from the set as
 * it came.  Every variant but NLJ transforms the inner side (a nested loop
 * puts no side in any order, so an NLJ join gathers both sides by row,
 * GFTR or not); outer_transformed says whether it transforms the outer
 * side too (PHJ and SMJ do; NPHJ and BAND take the outer side in row order
 * and leave it as it came).  A side's
 * row map is needed for spec.row_ids or to gather its payload by row, its
 * position map to gather its payload by position, and neither when the
 * side has no payload and no row ids are asked for.
 */
/* Has a match a row of this side?  (every join's: SCAN's has no inner row) */
static inline bool
gj_side_matched(const GjJoinSpec *spec, GjSide side)
{
	return side == GJ_SIDE_OUTER || spec->variant != GJ_VARIANT_SCAN;
}

static inline void
gj_round_plan(const GjJoinSpec *spec, bool outer_transformed,
			  GjRoundSources *sources, bool need[GJ_NUM_ROUND_MAPS])
{
	bool		gftr = (spec->materialize == GJ_MATERIALIZE_GFTR);
	bool		inner_transformed = (spec->variant != GJ_VARIANT_NLJ);

	for (int s = 0; s < GJ_NUM_SIDES; s++)
	{
		GjSide		side = (GjSide) s;
		bool		outer = (side == GJ_SIDE_OUTER);
		bool		transformed = gftr && (outer ? outer_transformed : inner_transformed);
		bool		payload = gj_side_ncolumns(spec, side) > 0;
		GjRoundMap	rows = outer ? GJ_ROUND_OUTER_ROWS : GJ_ROUND_INNER_ROWS;
		GjRoundMap	positions = outer ? GJ_ROUND_OUTER_POS : GJ_ROUND_INNER_POS;

		if (transformed)
			sources->columns[side] = outer ? GJ_COLUMNS_OUTER_TRANSFORMED :
				GJ_COLUMNS_INNER_TRANSFORMED;
		else
			sources->columns[side] = outer ? GJ_COLUMNS_OUTER : GJ_COLUMNS_INNER;
		sources->map[side] = transformed ? positions : rows;
		need[rows] = spec->row_ids || (!transformed && payload);
		need[positions] = transformed && payload;
		if (!gj_side_matched(spec, side))
			need[rows] = need[positions] = false;
	}
}

/* "NPHJ", "PHJ", "SMJ", "BAND", "NLJ", "SCAN", for messages */
static inline const char *
gj_variant_name(GjVariant variant)
{
	switch (variant)
	{
		case GJ_VARIANT_NPHJ:
			return "NPHJ";
		case GJ_VARIANT_PHJ:
			return "PHJ";
		case GJ_VARIANT_SMJ:
			return "SMJ";
		case GJ_VARIANT_BAND:
			return "BAND";
		case GJ_VARIANT_NLJ:
			return "NLJ";
		case GJ_VARIANT_SCAN:
			return "SCAN";
	}
	return "unknown";
}

/* "LT", "LE", ..., for messages */
static inline const char *
gj_theta_op_name(GjThetaOp op)
{
	switch (op)
	{
		case GJ_THETA_LT:
			return "LT";
		case GJ_THETA_LE:
			return "LE";
		case GJ_THETA_GT:
			return "GT";
		case GJ_THETA_GE:
			return "GE";
		case GJ_THETA_EQ:
			return "EQ";
		case GJ_THETA_NE:
			return "NE";
	}
	return "unknown";
}

/*
 * Fill *err and return its status
 *
 * The message becomes the errdetail of the caller's ereport, so it is one
 * sentence ending in a period.  Used by both implementations; the CUDA
 * side fills cuda_error through gj_cuda_fail() (common.cuh) instead.
 */
static inline GjStatus
gj_error_set(GjError *err, GjStatus status, const char *fmt,...)
GJ_PRINTF_LIKE(3, 4);

static inline GjStatus
gj_error_set(GjError *err, GjStatus status, const char *fmt,...)
{
	va_list		args;

	if (err == NULL)
		return status;
	err->status = status;
	err->cuda_error[0] = '\0';
	va_start(args, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, args);
	va_end(args);
	return status;
}

/* Return the status of a helper that has filled err itself */
#define GJ_TRY(call) \
	do { \
		GjStatus	gj_try_status_ = (call); \
		if (gj_try_status_ != GJ_OK) \
			return gj_try_status_; \
	} while (0)

/*
 * Check a GjJoinSpec passed to context_create
 *
 * implemented: whether the caller's kernel table has the spec's variant
 * (each implementation's variant table says).  Both implementations reject
 * the same specs with the same messages, so that switching from "cuda" to
 * "cpu" never changes what a caller bug looks like; every check of this
 * file is written for that reason.
 */
static inline GjStatus
gj_check_spec(const GjJoinSpec *spec, bool (*implemented) (GjVariant),
			  GjError *err)
{
	if (spec == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No join spec was given.");
	if ((int) spec->variant < 0 || (int) spec->variant >= GJ_NUM_VARIANTS)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The join variant %d is not one of NPHJ, PHJ, SMJ, BAND, NLJ and SCAN.",
							(int) spec->variant);
	if (spec->materialize != GJ_MATERIALIZE_GFUR &&
		spec->materialize != GJ_MATERIALIZE_GFTR)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The materialization %d is not one of GFUR and GFTR.",
							(int) spec->materialize);
	for (int s = 0; s < GJ_NUM_SIDES; s++)
	{
		GjSide		side = (GjSide) s;
		int			ncolumns = gj_side_ncolumns(spec, side);
		const int32_t *widths = gj_side_widths(spec, side);

		if (ncolumns < 0 || ncolumns > GJ_MAX_COLUMNS)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"The %s side has %d payload columns, but a side takes 0 to %d.",
								gj_side_name(side), ncolumns, GJ_MAX_COLUMNS);
		for (int c = 0; c < ncolumns; c++)
		{
			if (widths[c] != 1 && widths[c] != 2 && widths[c] != 4 &&
				widths[c] != 8)
				return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
									"The %s payload column %d is %d bytes wide, but a payload column is 1, 2, 4 or 8 bytes wide.",
									gj_side_name(side), c, (int) widths[c]);
		}
	}
	if (spec->variant == GJ_VARIANT_SCAN && spec->inner_ncolumns != 0)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A SCAN has no inner side, but the join spec gives it %d payload columns.",
							(int) spec->inner_ncolumns);
	if (spec->outer_match != GJ_OUTER_ALL &&
		(spec->outer_match > GJ_OUTER_LEFT || spec->variant != GJ_VARIANT_NPHJ ||
		 (spec->outer_match != GJ_OUTER_LEFT && spec->inner_ncolumns != 0)))
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"Outer match %d is for an NPHJ join, without inner payload columns but a left join's (semi: %d, anti: %d, left: %d).",
							(int) spec->outer_match, (int) GJ_OUTER_FIRST, (int) GJ_OUTER_NONE,
							(int) GJ_OUTER_LEFT);
	if (spec->ndevices > 1)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A join spread over %d devices runs through gj_spread_kernels, not one device's kernels.",
							(int) spec->ndevices);
	if (spec->device < 0)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The device ordinal %d is negative.", (int) spec->device);
	if (spec->max_matches < 1)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A round of matches must hold at least 1 match, but max_matches is %lld.",
							(long long) spec->max_matches);
	if (spec->memory_limit < 0)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The memory limit must not be negative, but is %lld.",
							(long long) spec->memory_limit);
	/* NLJ's terms; the other variants ignore nterms and ops */
	if (spec->variant == GJ_VARIANT_NLJ)
	{
		if (spec->nterms < 1 || spec->nterms > GJ_MAX_TERMS)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"An NLJ join takes 1 to %d comparison terms, but nterms is %d.",
								GJ_MAX_TERMS, (int) spec->nterms);
		for (int t = 0; t < spec->nterms; t++)
		{
			if ((int) spec->ops[t] < (int) GJ_THETA_LT ||
				(int) spec->ops[t] > (int) GJ_THETA_NE)
				return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
									"The comparison %d of NLJ term %d is not one of LT, LE, GT, GE, EQ and NE.",
									(int) spec->ops[t], t);
		}
	}
	if (!implemented(spec->variant))
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The %s join variant is not implemented yet.",
							gj_variant_name(spec->variant));
	/* the widest output array of a round: max_matches 8-byte values */
	if ((uint64_t) spec->max_matches > SIZE_MAX / sizeof(uint64_t))
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"A round of %lld matches does not fit into host memory.",
							(long long) spec->max_matches);
	return GJ_OK;
}

/*
 * May a context's build be shared (GjKernels.context_share)?  Its spec's
 * variant (named variant_name) must allow it, and it must have a build;
 * both implementations check alike
 */
static inline GjStatus
gj_check_share(const GjJoinSpec *spec, const char *variant_name, bool has_build,
			   GjError *err)
{
	if (!gj_variant_shares_build(spec->variant))
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A %s join cannot share its build.", variant_name);
	if (!has_build)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The context to share has no build.");
	return GJ_OK;
}

/*
 * Check pack_keys's arguments (GjKernels.pack_keys), for both
 * implementations: 0 .. GJ_MAX_ROWS integers of 4 or 8 bytes, keys of 1
 * to 64 bits
 */
static inline GjStatus
gj_check_pack(const void *values, int width, int64_t n, int32_t bits, GjError *err)
{
	if ((width != 4 && width != 8) || n < 0 || n > GJ_MAX_ROWS || bits < 1 || bits > 64 ||
		(n > 0 && values == NULL))
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"pack_keys takes 0 to %lld integers of 4 or 8 bytes into keys of 1 to 64 bits.",
							(long long) GJ_MAX_ROWS);
	return GJ_OK;
}

/*
 * Check a batch passed to build (side inner) or count (side outer):
 * 0 .. GJ_MAX_ROWS rows, what the variant matches on, and the spec's
 * payload columns of that side, each with its values (NULL flags are
 * optional).  What a variant matches on: the keys, and for BAND's outer
 * side the upper bounds too (keys_hi); for NLJ the values of each of the
 * spec's terms, and no keys; for SCAN nothing.
 */
static inline GjStatus
gj_check_batch(const GjBatch *batch, const GjJoinSpec *spec, GjSide side,
			   GjError *err)
{
	const char *name = gj_side_name(side);
	int			ncolumns = gj_side_ncolumns(spec, side);

	if (batch == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The %s batch is NULL.", name);
	if (batch->nrows < 0 || batch->nrows > GJ_MAX_ROWS)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The %s batch has %lld rows, but a call takes 0 to %lld rows.",
							name, (long long) batch->nrows,
							(long long) GJ_MAX_ROWS);
	if (batch->nrows > 0 && spec->variant != GJ_VARIANT_NLJ &&
		spec->variant != GJ_VARIANT_SCAN && batch->keys == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The %s batch has %lld rows but no key array.",
							name, (long long) batch->nrows);
	if (batch->nrows > 0 && spec->variant == GJ_VARIANT_BAND &&
		side == GJ_SIDE_OUTER && batch->keys_hi == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The outer batch of a BAND join has %lld rows but no upper bounds (keys_hi).",
							(long long) batch->nrows);
	for (int t = 0; spec->variant == GJ_VARIANT_NLJ && t < spec->nterms &&
		 batch->nrows > 0; t++)
	{
		if (batch->terms[t] == NULL)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"The %s batch of an NLJ join has %lld rows but no values of term %d.",
								name, (long long) batch->nrows, t);
	}
	if (ncolumns > 0 && batch->columns == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The %s batch has no payload columns, but the join spec gives it %d.",
							name, ncolumns);
	for (int c = 0; c < ncolumns && batch->nrows > 0; c++)
	{
		if (batch->columns[c].values == NULL)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"The %s payload column %d has %lld rows but no value array.",
								name, c, (long long) batch->nrows);
	}
	return GJ_OK;
}

/*
 * BUILD FROM PARTS (GjKernels.build_parts): the parts of an inner side,
 * concatenated in their order into one batch that lies in one block of
 * memory the implementation provides (host memory for the CPU twin, device
 * memory for CUDA), which it then builds as it builds any batch.  Both
 * implementations check, size and copy alike: gj_parts_layout checks the
 * parts (keys and payload columns only: no upper bounds, terms or row
 * numbers) and sizes the block; gj_parts_gather points *whole into it and
 * has copy() put each part's arrays at their place, and zero() clear the
 * NULL flags of a part that has none where another part has some.
 */
typedef struct GjPartsLayout
{
	int64_t		nrows;
	bool		key_nulls;
	bool		column_nulls[GJ_MAX_COLUMNS];
	size_t		bytes;			/* the block's */
} GjPartsLayout;

typedef GjStatus (*GjPartsCopy) (void *arg, void *dst, const void *src, size_t bytes,
								 GjError *err);
typedef GjStatus (*GjPartsZero) (void *arg, void *dst, size_t bytes, GjError *err);

#define GJ_PARTS_ALIGN(bytes) (((bytes) + 15) & ~(size_t) 15)

static inline GjStatus
gj_parts_layout(const GjJoinSpec *spec, const GjBatch *parts, int nparts,
				GjPartsLayout *l, GjError *err)
{
	int			ncolumns = spec->inner_ncolumns;
	size_t		n;

	memset(l, 0, sizeof(*l));
	if (parts == NULL || nparts < 1)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"An inner side in parts was given no parts.");
	if (spec->variant == GJ_VARIANT_NLJ || spec->variant == GJ_VARIANT_SCAN)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"Only an inner side with keys can be built from parts.");
	for (int p = 0; p < nparts; p++)
	{
		const GjBatch *b = &parts[p];

		GJ_TRY(gj_check_batch(b, spec, GJ_SIDE_INNER, err));
		if (b->keys_hi != NULL || b->row_numbers != NULL)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"Part %d of an inner side carries upper bounds or row numbers, which a build from parts does not take.",
								p);
		l->nrows += b->nrows;
		if (l->nrows > GJ_MAX_ROWS)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"The parts of an inner side have more than %lld rows.",
								(long long) GJ_MAX_ROWS);
		l->key_nulls |= b->nulls != NULL;
		for (int c = 0; c < ncolumns; c++)
			l->column_nulls[c] |= b->columns[c].nulls != NULL;
	}
	n = (size_t) l->nrows;
	l->bytes = GJ_PARTS_ALIGN(n * sizeof(uint64_t)) + (l->key_nulls ? GJ_PARTS_ALIGN(n) : 0);
	for (int c = 0; c < ncolumns; c++)
		l->bytes += GJ_PARTS_ALIGN(n * (size_t) spec->inner_widths[c]) +
			(l->column_nulls[c] ? GJ_PARTS_ALIGN(n) : 0);
	return GJ_OK;
}

/* One array of the whole: each part's in turn, or zeros where it has none */
static inline GjStatus
gj_parts_gather_array(char *dst, size_t width, const GjBatch *parts, int nparts,
					  int column, bool flags, GjPartsCopy copy, GjPartsZero zero,
					  void *arg, GjError *err)
{
	for (int p = 0; p < nparts; p++)
	{
		const GjBatch *b = &parts[p];
		size_t		bytes = (size_t) b->nrows * width;
		const void *src;

		if (b->nrows == 0)
			continue;
		if (column < 0)
			src = flags ? (const void *) b->nulls : (const void *) b->keys;
		else
			src = flags ? (const void *) b->columns[column].nulls : b->columns[column].values;
		GJ_TRY(src != NULL ? copy(arg, dst, src, bytes, err) : zero(arg, dst, bytes, err));
		dst += bytes;
	}
	return GJ_OK;
}

static inline GjStatus
gj_parts_gather(const GjJoinSpec *spec, const GjBatch *parts, int nparts,
				const GjPartsLayout *l, char *block, GjBatch *whole, GjColumn *columns,
				GjPartsCopy copy, GjPartsZero zero, void *arg, GjError *err)
{
	size_t		n = (size_t) l->nrows;
	char	   *at = block;

	memset(whole, 0, sizeof(*whole));
	whole->nrows = l->nrows;
	whole->columns = columns;
	whole->keys = (const uint64_t *) at;
	GJ_TRY(gj_parts_gather_array(at, sizeof(uint64_t), parts, nparts, -1, false,
								 copy, zero, arg, err));
	at += GJ_PARTS_ALIGN(n * sizeof(uint64_t));
	if (l->key_nulls)
	{
		whole->nulls = (const uint8_t *) at;
		GJ_TRY(gj_parts_gather_array(at, 1, parts, nparts, -1, true, copy, zero, arg, err));
		at += GJ_PARTS_ALIGN(n);
	}
	for (int c = 0; c < spec->inner_ncolumns; c++)
	{
		size_t		width = (size_t) spec->inner_widths[c];

		columns[c].values = at;
		columns[c].nulls = NULL;
		GJ_TRY(gj_parts_gather_array(at, width, parts, nparts, c, false, copy, zero, arg, err));
		at += GJ_PARTS_ALIGN(n * width);
		if (l->column_nulls[c])
		{
			columns[c].nulls = (const uint8_t *) at;
			GJ_TRY(gj_parts_gather_array(at, 1, parts, nparts, c, true, copy, zero, arg, err));
			at += GJ_PARTS_ALIGN(n);
		}
	}
	return GJ_OK;
}

/* build_parts in host memory: the parts gathered into a block of malloc */
static inline GjStatus
gj_parts_host_copy(void *arg, void *dst, const void *src, size_t bytes, GjError *err)
{
	memcpy(dst, src, bytes);
	return GJ_OK;
}

static inline GjStatus
gj_parts_host_zero(void *arg, void *dst, size_t bytes, GjError *err)
{
	memset(dst, 0, bytes);
	return GJ_OK;
}

static inline GjStatus
gj_build_parts_on_host(GjStatus (*build) (void *arg, const GjBatch *whole, GjError *err),
					   void *arg, const GjJoinSpec *spec, const GjBatch *parts,
					   int nparts, GjError *err)
{
	GjPartsLayout l;
	GjBatch		whole;
	GjColumn	columns[GJ_MAX_COLUMNS];
	char	   *block;
	GjStatus	status;

	GJ_TRY(gj_parts_layout(spec, parts, nparts, &l, err));
	block = (char *) malloc(l.bytes > 0 ? l.bytes : 1);
	if (block == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate %zu bytes of host memory to gather an inner side's parts.",
							l.bytes);
	status = gj_parts_gather(spec, parts, nparts, &l, block, &whole, columns,
							 gj_parts_host_copy, gj_parts_host_zero, NULL, err);
	if (status == GJ_OK)
		status = build(arg, &whole, err);
	free(block);
	return status;
}

/*
 * Check the arguments of PARTITION's exchange (GjKernels.exchange_send,
 * exchange_receive), as both implementations do
 */
static inline GjStatus
gj_check_exchange_send(const GjBatch *batch, int64_t start, int64_t end,
					   int ndevices, const GjExchange *sent, GjError *err)
{
	if (sent == NULL || batch == NULL || ndevices < 1 || ndevices > GJ_MAX_DEVICES ||
		start < 0 || end < start || end > batch->nrows)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"An exchange was asked to send rows %lld .. %lld of %lld to %d devices.",
							(long long) start, (long long) end,
							(long long) (batch != NULL ? batch->nrows : 0), ndevices);
	return GJ_OK;
}

static inline GjStatus
gj_check_exchange_receive(const GjExchange *sent, int nsent, int self,
						  const GjExchange *part, GjError *err)
{
	if (part == NULL || sent == NULL || nsent < 1 || self < 0 ||
		self >= sent[0].ndevices || sent[0].impl == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"An exchange was asked to receive run %d of %d sends.",
							self, nsent);
	return GJ_OK;
}

/*
 * The bytes one exchanged row carries: its key, its row number, and per
 * column its value and, where the column has them, its NULL flag
 */
static inline size_t
gj_exchange_row_bytes(int ncolumns, const int32_t *widths, const bool *has_nulls)
{
	size_t		bytes = sizeof(uint64_t) + sizeof(GjRowId);

	for (int c = 0; c < ncolumns; c++)
		bytes += (size_t) widths[c] + (has_nulls[c] ? 1 : 0);
	return bytes;
}

/*
 * Check retrieve's arguments and size its round
 *
 * has_chunk: a chunk has been counted; nmatches: its matches; max_matches:
 * the context's round capacity.  Sets *round_size to the matches this
 * round returns: 0 when first is past the last match.  Both
 * implementations call it, so they accept and size rounds alike.
 */
static inline GjStatus
gj_check_retrieve(bool has_chunk, uint64_t nmatches, int64_t max_matches,
				  int64_t first, const GjMatchRound *round,
				  int64_t *round_size, GjError *err)
{
	*round_size = 0;
	if (round == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No place to return the round of matches was given.");
	if (!has_chunk)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"retrieve was called before count.");
	if (first < 0)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The first match of a round must not be negative, but is %lld.",
							(long long) first);

	if ((uint64_t) first < nmatches)
	{
		*round_size = max_matches;
		if ((uint64_t) *round_size > nmatches - (uint64_t) first)
			*round_size = (int64_t) (nmatches - (uint64_t) first);
	}
	return GJ_OK;
}

/* Milliseconds on the monotonic clock, for GjStats */
static inline double
gj_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec * 1000.0 + (double) ts.tv_nsec / 1000000.0;
}

#endif							/* GPUJOIN_COMMON_H */
