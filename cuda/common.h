/*-------------------------------------------------------------------------
 *
 * common.h
 *	  Helpers shared by the CUDA kernels and their CPU twins
 *
 * Plain C, included by gcc (the *_cpu.c twins, the kernel tests) and by
 * nvcc (the *.cu files, through common.cuh).  Whatever decides the layout
 * of a device table lives here, written once, so that the two
 * implementations cannot drift apart: the hash function, the number of
 * buckets and the bucket of a key.  If hash_join.cu computed a bucket in
 * any other way than hash_join_cpu.c, the two would order the entries of a
 * bucket differently and the kernel tests would fail on their first case.
 *
 * THE BUCKET-SORTED HASH TABLE
 *
 * The hash table is a CSR-style ("compressed sparse row") array: the
 * entries (key, inner row) sorted by bucket, and bucket_start[b] the index
 * of bucket b's first entry, bucket_start[nbuckets] the number of entries.
 *
 *	  bucket_bits   smallest b >= 1 with 2^b >= inner rows (load factor <= 1)
 *	  bucket(key)   the top bucket_bits bits of gj_hash64(key)
 *
 * The top bits, not the bottom ones, because they are the best mixed bits
 * of a multiplicative finalizer, and because then the bucket order is the
 * order of the hash values themselves.
 *
 * IDENTIFICATION
 *	  cuda/common.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_COMMON_H
#define GPUJOIN_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "gpujoin_kernels.h"

#ifdef __CUDACC__
#define GJ_HOST_DEVICE __host__ __device__
#else
#define GJ_HOST_DEVICE
#endif

#if defined(__GNUC__) || defined(__clang__)
#define GJ_PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define GJ_PRINTF_LIKE(f, a)
#endif

/*
 * Hash a normalized 64-bit key
 *
 * The 64-bit finalizer of MurmurHash3 (fmix64): two multiply-xorshift
 * rounds.  It is a bijection on 64-bit words, so distinct keys never share
 * a hash value, and every input bit affects every output bit with
 * probability close to one half, so dense integer keys (1, 2, 3, ...) and
 * keys that differ only in their high bits spread evenly over the buckets.
 */
static inline GJ_HOST_DEVICE uint64_t
gj_hash64(uint64_t key)
{
	uint64_t	h = key;

	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

/*
 * Number of bucket bits for a table built on nrows inner rows
 *
 * The smallest b >= 1 with 2^b >= nrows.  Rows with a NULL key are counted
 * too, so the layout depends on nrows alone.  nrows <= GJ_MAX_ROWS < 2^31
 * gives at most 31 bits, so a bucket number, and the sentinel bucket
 * 2^bucket_bits that the GPU build sorts NULL keys into, fit in uint32.
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
 * The outer row that holds match number "first" of a counted chunk
 *
 * offsets[0..nrows] is the exclusive prefix sum of the per-row match
 * counts, with offsets[nrows] the total; the caller guarantees first <
 * offsets[nrows].  Returns the row r with offsets[r] <= first <
 * offsets[r + 1], found by binary search, so a round of hash_retrieve
 * starts where its window starts instead of at row 0.
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

/*
 * Check a key column passed to hash_build or hash_count
 *
 * Both implementations reject the same calls with the same messages, so
 * that switching from "cuda" to "cpu" never changes what a caller bug
 * looks like.  side is "inner" or "outer".
 */
static inline GjStatus
gj_check_key_column(const GjKeyColumn *column, const char *side, GjError *err)
{
	if (column == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The %s key column is NULL.", side);
	if (column->nrows < 0 || column->nrows > GJ_MAX_ROWS)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The %s key column has %lld rows, but a call takes 0 to %lld rows.",
							side, (long long) column->nrows,
							(long long) GJ_MAX_ROWS);
	if (column->nrows > 0 && column->keys == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The %s key column has %lld rows but no key array.",
							side, (long long) column->nrows);
	return GJ_OK;
}

/*
 * Check hash_retrieve's arguments and size its round
 *
 * has_chunk: a chunk has been counted; nmatches: its matches; max_matches:
 * the context's round capacity.  Points round at the context's arrays
 * (outer_rows, inner_rows) with no matches yet, and sets *round_size to
 * the matches this round returns: 0 when first is past the last match.
 * Both implementations call it, so they accept and size rounds alike.
 */
static inline GjStatus
gj_check_retrieve(bool has_chunk, uint64_t nmatches, int64_t max_matches,
				  int64_t first, GjMatchRound *round,
				  const GjRowId *outer_rows, const GjRowId *inner_rows,
				  int64_t *round_size, GjError *err)
{
	if (round == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No place to return the round of matches was given.");
	if (!has_chunk)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"hash_retrieve was called before hash_count.");
	if (first < 0)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The first match of a round must not be negative, but is %lld.",
							(long long) first);

	round->outer_rows = outer_rows;
	round->inner_rows = inner_rows;
	round->nmatches = 0;
	*round_size = 0;
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
