/*-------------------------------------------------------------------------
 *
 * partitioned_join.cu
 *	  GPU radix-partitioned hash join (PHJ): partition both sides by the top
 *	  bits of the key's hash, then join each inner partition, as a hash
 *	  table in shared memory, with its co-partition of one outer chunk
 *
 * CPU twin: partitioned_join_cpu.c, the specification (same functions,
 * same order; its banner gives the algorithm and why it yields PHJ's match
 * order).  Both produce the very same arrays; here is how the GPU gets
 * there.  The design is PHJ-TR (Wu et al. 2025, §4.1.4), with the radix
 * hash join of Rui (Rui 2020, §4.1.2) for the probe.
 *
 * PARTITIONING (Wu et al. 2025, §2.3, the radix-partition primitive)
 *
 *	  phj_digit_kernel		the digit of every row: its partition, the top
 *							radix_bits bits of gj_hash64(key) (common.h,
 *							gj_phj_radix_bits); on the inner side the bucket
 *							bits below them too (gj_phj_digit).  A NULL key
 *							gets the sentinel digit one past the last, which
 *							sorts last, so its row enters no partition
 *	  cub::DeviceRadixSort	SortPairs(digit, value) on the digit's bits only:
 *							stable and contiguous, a histogram and one pass
 *							of up to 8 bits each, 2 passes for 9 to 16
 *							partition bits (the inner side, ordered by bucket
 *							too, takes 2 to 4).  Once for the row ids and once
 *							for the keys, from the same digits, so the two
 *							land in the same places
 *	  phj_bounds_kernel		the start of each partition: a lower bound in
 *							the sorted digits (contiguous partitions need no
 *							histogram of their own); the inner side also
 *							counts its oversized partitions
 *
 * PROBE: THE COUNT (count, then write: Rui 2020, §4.1.2.2)
 *
 *	  phj_units_kernel		the work units: each co-partition's outer rows
 *							cut into units of PHJ_UNIT_ROWS (2048), so that a
 *							skewed outer partition spreads over many blocks
 *							instead of serializing on one (as PHJ-TR splits
 *							large partitions, Wu et al. 2025, §4.1.4; their
 *							code: units of <= 8192); a partition with no
 *							inner row gets none; an exclusive sum numbers them.
 *	  phj_count_kernel		persistent blocks take units from an atomic
 *							queue.  A block loads its co-partition's inner
 *							keys into shared memory, GJ_PHJ_TABLE_ROWS at a
 *							time (one table for a normal partition, several
 *							sub-tables for an oversized, skewed one, as
 *							Sioulas' block nested loop (Wu et al. 2025,
 *							§3.1.2)), finds the bucket starts by binary
 *							search, and each thread probes its 8 outer
 *							rows: the count of equal keys in the row's
 *							bucket, and the first and last matching entry
 *	  cub::DeviceScan		exclusive sum of the counts, 64-bit, in
 *							partitioned order (context.cu,
 *							gj_cuda_count_offsets)
 *
 * The table needs no insertion: the inner side was sorted by partition and
 * bucket at build, so a (sub-)table is a contiguous slice that a block
 * copies in with coalesced loads, and its order (rows ascending within a
 * key) is the order the matches must come out in.  No atomics, no empty-
 * slot sentinel, and the result does not depend on thread timing.
 *
 * PROBE: THE RETRIEVE
 *
 *	  phj_retrieve_kernel	a warp per 32 partitioned outer rows that meet the
 *							window.  A lane walks its row's bucket from the
 *							first match, in global memory (the entries of one
 *							partition: a few kB, cached); a row with more
 *							than PHJ_HEAVY_MATCHES matches in the window is
 *							walked by the whole warp, 32 entries a step,
 *							numbered by ballot and popc, so a hot key's rows
 *							do not serialize on one thread.  When a row's
 *							matches are neighbours (last - first + 1 of them:
 *							every unique-key join), match k is entry first +
 *							k, found without a walk.
 *
 * PAYLOAD COLUMNS (materialize.cu; Wu et al. 2025, §4.1.4)
 *
 * GFUR partitions (key, row id) only, and each round gathers every payload
 * column at the matches' rows, from the columns as they came: random
 * accesses on both sides.  GFTR partitions every payload column (and its
 * NULL flags) with the same SortPairs on the same digits, both sides, which
 * moves each value where its key went, in sequential passes; each round
 * then gathers at the matches' positions: the outer ones ascend within a
 * round, the inner ones stay within one co-partition's few kB ("only the
 * matching tuple identifiers of the probe relation are highly clustered,
 * whereas those of the build relation are not as clustered"; the model puts
 * the break-even near a 25-40% match ratio: Wu et al. 2025, §4.1.4).
 *
 * COSTS
 *
 * P is a side's payload bytes a row (widths, plus one for each column with
 * NULL flags).  Device memory: the build keeps 12 bytes an inner row (keys
 * and rows in entry order) plus P (GFUR: as they came; GFTR: transformed);
 * it peaks at about 45 bytes a row while sorting (CUB's temporary storage
 * holds a copy of the pairs being sorted), 32 + 2P for GFTR while
 * transforming.  A chunk holds about 61 bytes an outer row, 28 of them for
 * retrieve (partitioned keys and rows, offsets, first and last matches),
 * the rest partitioning scratch kept for the next chunk, plus P (GFUR) or
 * 2P (GFTR); a round, as for every variant, 16 bytes a match at most for
 * the maps plus the P of both sides.  Work: 2 sort passes
 * per partitioned array and side at up to 16 radix bits, the inner one
 * at radix bits + 11 (2 to 4 passes), once per build; a count reads each
 * inner partition once per work unit (and per sub-table), and walks one
 * bucket per outer row in shared memory.  A key heavily duplicated on both
 * sides costs its matches in the count's walk, as in any hash join.
 *
 * IDENTIFICATION
 *	  cuda/join/partitioned_join.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <cub/cub.cuh>

#include "common.cuh"
#include "gpujoin_kernels.h"

/* Outer rows a thread of phj_count_kernel probes, and a work unit */
#define PHJ_ROWS_PER_THREAD	8
#define PHJ_UNIT_ROWS		(GJ_BLOCK_SIZE * PHJ_ROWS_PER_THREAD)

/* Matches of a row in one round above which a whole warp retrieves them */
#define PHJ_HEAVY_MATCHES	16

/* The slots of PHJ_SCALARS */
#define PHJ_SCALAR_OVERSIZED	0	/* build: oversized inner partitions */
#define PHJ_SCALAR_ENTRIES		1	/* build: inner rows with a key */
#define PHJ_SCALAR_NEXT_UNIT	2	/* count: the work queue's head */
#define PHJ_NUM_SCALARS			4

/*
 * PHJ's own device arrays, in its private state
 */
typedef enum PhjBufferId
{
	/* The build, kept from one build to the next */
	PHJ_ENTRY_KEYS,				/* uint64_t[inner rows]: keys by partition,
								 * bucket, row; nentries are used */
	PHJ_ENTRY_ROWS,				/* GjRowId[inner rows]: their rows */
	PHJ_INNER_START,			/* uint32_t[npartitions + 1] */

	/* Scratch of a build or a count (a count's stays for the next one) */
	PHJ_DIGITS,					/* uint32_t[rows]: each row's digit */
	PHJ_DIGITS_SORTED,			/* uint32_t[rows]: the sort's keys out */
	PHJ_ROW_IDS,				/* GjRowId[rows]: 0, 1, 2, ... to sort */
	PHJ_SCALARS,				/* uint32_t[PHJ_NUM_SCALARS] */

	/* The counted chunk, kept for retrieve */
	PHJ_OUTER_KEYS,				/* uint64_t[outer rows], partitioned */
	PHJ_OUTER_ROWS,				/* GjRowId[outer rows], partitioned */
	PHJ_OUTER_START,			/* uint32_t[npartitions + 1] */
	PHJ_UNIT_START,				/* uint32_t[npartitions + 1] */
	PHJ_OFFSETS,				/* uint64_t[outer rows + 1] */
	PHJ_FIRST,					/* uint32_t[outer rows]: first matching entry */
	PHJ_LAST,					/* uint32_t[outer rows]: last matching entry */

	PHJ_NUM_BUFFERS
} PhjBufferId;

/*
 * PHJ's state (ctx->variant_state)
 *
 *	radix_bits	gj_phj_radix_bits(inner rows)
 *	nentries	inner rows with a non-NULL key; 0: nothing matches
 *	oversized	inner partitions of more than GJ_PHJ_TABLE_ROWS entries
 *	buffers		see PhjBufferId
 */
typedef struct PhjState
{
	int			radix_bits;
	int64_t		nentries;
	int64_t		oversized;
	GjDeviceBuffer buffers[PHJ_NUM_BUFFERS];
} PhjState;

/* A buffer of the state, typed */
#define PHJ_BUFFER(state, id, type)	((type *) (state)->buffers[(id)].ptr)

/* What a buffer holds, for error messages */
static const char *
PhjBufferName(PhjBufferId id)
{
	switch (id)
	{
		case PHJ_ENTRY_KEYS:
			return "the partitioned inner keys";
		case PHJ_ENTRY_ROWS:
			return "the partitioned inner rows";
		case PHJ_INNER_START:
			return "the inner partitions' starts";
		case PHJ_DIGITS:
			return "the rows' partitions";
		case PHJ_DIGITS_SORTED:
			return "the sorted partitions";
		case PHJ_ROW_IDS:
			return "the row numbers being partitioned";
		case PHJ_SCALARS:
			return "the partitioned join's counters";
		case PHJ_OUTER_KEYS:
			return "the partitioned outer keys";
		case PHJ_OUTER_ROWS:
			return "the partitioned outer rows";
		case PHJ_OUTER_START:
			return "the outer partitions' starts";
		case PHJ_UNIT_START:
			return "the probe's work units";
		case PHJ_OFFSETS:
			return "the outer chunk's match offsets";
		case PHJ_FIRST:
			return "the outer rows' first matches";
		case PHJ_LAST:
			return "the outer rows' last matches";
		case PHJ_NUM_BUFFERS:
			break;
	}
	return "a partitioned join buffer";
}

/* Make buffer id of the state hold bytes bytes (gj_cuda_device_reserve) */
static GjStatus
PhjReserve(GjCudaContext *ctx, PhjState *state, PhjBufferId id, size_t bytes,
		   GjError *err)
{
	return gj_cuda_device_reserve(ctx, &state->buffers[id], bytes,
								  PhjBufferName(id), err);
}

static void
PhjRelease(GjCudaContext *ctx, PhjState *state, PhjBufferId id)
{
	gj_cuda_device_release(ctx, &state->buffers[id]);
}

/*
 * The digit of every row, and the row numbers to partition along with it
 *
 * table: partition and bucket (gj_phj_digit), else the partition alone;
 * a NULL key gets null_digit, one past the largest, so its row sorts last.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
phj_digit_kernel(const uint64_t *__restrict__ d_keys,
				 const uint8_t *__restrict__ d_nulls, int64_t nrows,
				 int radix_bits, bool table, uint32_t null_digit,
				 uint32_t *__restrict__ d_digits, GjRowId *__restrict__ d_rows)
{
	for (int64_t row = gj_thread_index(); row < nrows; row += gj_grid_stride())
	{
		uint32_t	digit = null_digit;

		if (!gj_flag_set(d_nulls, row))
			digit = table ? gj_phj_digit(d_keys[row], radix_bits) :
				gj_phj_partition(d_keys[row], radix_bits);
		d_digits[row] = digit;
		d_rows[row] = (GjRowId) row;
	}
}

/* First index of the sorted d_digits[0 .. n) whose digit is >= digit */
static __device__ __forceinline__ uint32_t
LowerBound(const uint32_t *d_digits, uint32_t n, uint32_t digit)
{
	uint32_t	lo = 0;
	uint32_t	hi = n;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (d_digits[mid] < digit)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The start of each partition in the sorted digits: partition p holds
 * digits p << shift .. ((p + 1) << shift) - 1, so it starts at the lower
 * bound of the first; d_start[npartitions] is the end of the last (the
 * first NULL row's sentinel digit, or n).  With d_scalars (the inner side),
 * also count the partitions of more than GJ_PHJ_TABLE_ROWS rows, and store
 * the rows with a key.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
phj_bounds_kernel(const uint32_t *__restrict__ d_sorted, uint32_t n,
				  uint32_t npartitions, int shift,
				  uint32_t *__restrict__ d_start, uint32_t *d_scalars)
{
	for (int64_t p = gj_thread_index(); p < npartitions; p += gj_grid_stride())
	{
		uint32_t	start = LowerBound(d_sorted, n, (uint32_t) p << shift);
		uint32_t	end = LowerBound(d_sorted, n, (uint32_t) (p + 1) << shift);

		d_start[p] = start;
		if (p == npartitions - 1)
			d_start[npartitions] = end;
		if (d_scalars != NULL)
		{
			if (end - start > GJ_PHJ_TABLE_ROWS)
				atomicAdd(&d_scalars[PHJ_SCALAR_OVERSIZED], 1u);
			if (p == npartitions - 1)
				d_scalars[PHJ_SCALAR_ENTRIES] = end;
		}
	}
}

/*
 * Work units of each co-partition: its outer rows in units of
 * PHJ_UNIT_ROWS, none when either side is empty; d_units[npartitions] = 0,
 * so that the exclusive sum over npartitions + 1 ends in the total
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
phj_units_kernel(const uint32_t *__restrict__ d_inner_start,
				 const uint32_t *__restrict__ d_outer_start,
				 uint32_t npartitions, uint32_t *__restrict__ d_units)
{
	for (int64_t p = gj_thread_index(); p <= npartitions; p += gj_grid_stride())
	{
		uint32_t	units = 0;

		if (p < npartitions && d_inner_start[p] < d_inner_start[p + 1])
			units = (d_outer_start[p + 1] - d_outer_start[p] + PHJ_UNIT_ROWS - 1) / PHJ_UNIT_ROWS;
		d_units[p] = units;
	}
}

/*
 * Count the matches of every partitioned outer row that has a co-partition
 * (d_counts[j]: the caller zeroed it, so rows without one stay at 0), with
 * the first and last matching inner entry of each (d_first, d_last)
 *
 * Persistent blocks take work units from the queue *d_next_unit (zeroed
 * by the caller), so a skewed partition's many units, or its sub-tables,
 * spread over whichever blocks are free.  For a unit of partition p, each
 * thread holds up to PHJ_ROWS_PER_THREAD outer rows (key, bucket, count,
 * first, last) in registers; the block then walks p's inner entries in
 * sub-tables of at most GJ_PHJ_TABLE_ROWS: load the keys into shared
 * memory with their buckets, find each bucket's start by binary search
 * (the entries are in bucket order), and have every thread walk its rows'
 * buckets.  Sub-tables are taken in entry order, so a row's first match
 * is found first and its last last.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
phj_count_kernel(const uint64_t *__restrict__ d_entry_keys,
				 const uint32_t *__restrict__ d_inner_start,
				 const uint64_t *__restrict__ d_outer_keys,
				 const uint32_t *__restrict__ d_outer_start,
				 const uint32_t *__restrict__ d_unit_start,
				 uint32_t npartitions, int radix_bits,
				 unsigned int *d_next_unit,
				 uint64_t *__restrict__ d_counts,
				 uint32_t *__restrict__ d_first,
				 uint32_t *__restrict__ d_last)
{
	__shared__ uint64_t s_keys[GJ_PHJ_TABLE_ROWS];
	__shared__ uint16_t s_buckets[GJ_PHJ_TABLE_ROWS];
	__shared__ uint16_t s_bucket_start[GJ_PHJ_BUCKETS + 1];
	__shared__ uint32_t s_unit;
	uint32_t	total_units = d_unit_start[npartitions];

	for (;;)
	{
		uint32_t	unit;
		uint32_t	p;
		uint32_t	lo;
		uint32_t	hi;
		uint32_t	outer_begin;
		uint32_t	outer_end;
		uint32_t	inner_end;
		uint64_t	key[PHJ_ROWS_PER_THREAD];
		uint32_t	bucket[PHJ_ROWS_PER_THREAD];
		uint32_t	count[PHJ_ROWS_PER_THREAD];
		uint32_t	first[PHJ_ROWS_PER_THREAD];
		uint32_t	last[PHJ_ROWS_PER_THREAD];

		if (threadIdx.x == 0)
			s_unit = atomicAdd(d_next_unit, 1u);
		__syncthreads();
		unit = s_unit;
		if (unit >= total_units)
			break;				/* the same for every thread of the block */

		/* The unit's partition: the last p with d_unit_start[p] <= unit */
		lo = 0;
		hi = npartitions - 1;
		while (lo < hi)
		{
			uint32_t	mid = lo + (hi - lo + 1) / 2;

			if (d_unit_start[mid] <= unit)
				lo = mid;
			else
				hi = mid - 1;
		}
		p = lo;
		outer_begin = d_outer_start[p] + (unit - d_unit_start[p]) * PHJ_UNIT_ROWS;
		outer_end = min(d_outer_start[p + 1], outer_begin + PHJ_UNIT_ROWS);
		inner_end = d_inner_start[p + 1];

#pragma unroll
		for (int i = 0; i < PHJ_ROWS_PER_THREAD; i++)
		{
			uint32_t	j = outer_begin + i * GJ_BLOCK_SIZE + threadIdx.x;

			key[i] = j < outer_end ? d_outer_keys[j] : 0;
			bucket[i] = gj_phj_bucket(key[i], radix_bits);
			count[i] = 0;
			first[i] = 0;
			last[i] = 0;
		}

		for (uint32_t sub = d_inner_start[p]; sub < inner_end; sub += GJ_PHJ_TABLE_ROWS)
		{
			uint32_t	n = min(inner_end - sub, (uint32_t) GJ_PHJ_TABLE_ROWS);

			__syncthreads();	/* nobody reads the previous sub-table */
			for (uint32_t t = threadIdx.x; t < n; t += GJ_BLOCK_SIZE)
			{
				uint64_t	entry_key = d_entry_keys[sub + t];

				s_keys[t] = entry_key;
				s_buckets[t] = (uint16_t) gj_phj_bucket(entry_key, radix_bits);
			}
			__syncthreads();
			for (uint32_t b = threadIdx.x; b <= GJ_PHJ_BUCKETS; b += GJ_BLOCK_SIZE)
			{
				uint32_t	blo = 0;
				uint32_t	bhi = n;

				while (blo < bhi)
				{
					uint32_t	mid = (blo + bhi) / 2;

					if (s_buckets[mid] < b)
						blo = mid + 1;
					else
						bhi = mid;
				}
				s_bucket_start[b] = (uint16_t) blo;
			}
			__syncthreads();

#pragma unroll
			for (int i = 0; i < PHJ_ROWS_PER_THREAD; i++)
			{
				uint32_t	j = outer_begin + i * GJ_BLOCK_SIZE + threadIdx.x;
				uint32_t	end;

				if (j >= outer_end)
					continue;
				end = s_bucket_start[bucket[i] + 1];
				for (uint32_t s = s_bucket_start[bucket[i]]; s < end; s++)
				{
					if (s_keys[s] != key[i])
						continue;
					if (count[i] == 0)
						first[i] = sub + s;
					last[i] = sub + s;
					count[i]++;
				}
			}
		}

#pragma unroll
		for (int i = 0; i < PHJ_ROWS_PER_THREAD; i++)
		{
			uint32_t	j = outer_begin + i * GJ_BLOCK_SIZE + threadIdx.x;

			if (j < outer_end)
			{
				d_counts[j] = count[i];
				d_first[j] = first[i];
				d_last[j] = last[i];
			}
		}
		__syncthreads();		/* everyone has read s_unit */
	}
}

/*
 * Partition values along with the digits: d_out gets d_in in the stable
 * order of d_digits' low sort_bits bits (d_digits itself is not changed:
 * every array of a side is partitioned by the same digits, into the same
 * places).  sort_bits 0 (one partition, no NULL key) is the identity.
 */
template <typename T>
static GjStatus
PartitionValues(GjCudaContext *ctx, PhjState *state, const uint32_t *d_digits,
				int sort_bits, const T *d_in, T *d_out, int64_t n,
				GjError *err)
{
	uint32_t   *d_sorted = PHJ_BUFFER(state, PHJ_DIGITS_SORTED, uint32_t);
	size_t		temp_bytes = 0;

	if (sort_bits == 0)
	{
		GJ_CUDA_TRY(err, cudaMemcpyAsync(d_sorted, d_digits, (size_t) n * sizeof(uint32_t),
										 cudaMemcpyDeviceToDevice, ctx->stream));
		GJ_CUDA_TRY(err, cudaMemcpyAsync(d_out, d_in, (size_t) n * sizeof(T),
										 cudaMemcpyDeviceToDevice, ctx->stream));
		return GJ_OK;
	}
	GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(NULL, temp_bytes,
													 d_digits, d_sorted,
													 d_in, d_out, n,
													 0, sort_bits, ctx->stream));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_CUB_TEMP, temp_bytes, err));
	GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(GJ_BUFFER(ctx, GJ_BUFFER_CUB_TEMP, void),
													 temp_bytes,
													 d_digits, d_sorted,
													 d_in, d_out, n,
													 0, sort_bits, ctx->stream));
	return GJ_OK;
}

/* PartitionValues for an untyped payload array of width bytes (1, 2, 4 or 8) */
static GjStatus
PartitionColumn(GjCudaContext *ctx, PhjState *state, const uint32_t *d_digits,
				int sort_bits, int width, const void *d_in, void *d_out,
				int64_t n, GjError *err)
{
	switch (width)
	{
		case 1:
			return PartitionValues(ctx, state, d_digits, sort_bits,
								   (const uint8_t *) d_in, (uint8_t *) d_out, n, err);
		case 2:
			return PartitionValues(ctx, state, d_digits, sort_bits,
								   (const uint16_t *) d_in, (uint16_t *) d_out, n, err);
		case 4:
			return PartitionValues(ctx, state, d_digits, sort_bits,
								   (const uint32_t *) d_in, (uint32_t *) d_out, n, err);
		default:
			return PartitionValues(ctx, state, d_digits, sort_bits,
								   (const uint64_t *) d_in, (uint64_t *) d_out, n, err);
	}
}

/*
 * GFTR's transform of one side's payload: every column of set src, values
 * and NULL flags, partitioned by the side's digits into set dst (PHJ-TR
 * partitions every payload column together with its key by the same
 * radix-partition primitive: Wu et al. 2025, §4.1.4)
 */
static GjStatus
TransformColumns(GjCudaContext *ctx, PhjState *state, GjColumnSetId dst,
				 GjColumnSetId src, int sort_bits, int64_t n, GjError *err)
{
	const GjDeviceColumns *from = &ctx->columns[src];
	GjDeviceColumns *to = &ctx->columns[dst];
	const uint32_t *d_digits = PHJ_BUFFER(state, PHJ_DIGITS, uint32_t);
	int			ncolumns = gj_side_ncolumns(&ctx->spec, from->side);
	const int32_t *widths = gj_side_widths(&ctx->spec, from->side);

	GJ_TRY(gj_cuda_columns_reserve(ctx, dst, n, from->has_nulls, err));
	for (int c = 0; c < ncolumns; c++)
	{
		GJ_TRY(PartitionColumn(ctx, state, d_digits, sort_bits, widths[c],
							   from->values[c].ptr, to->values[c].ptr, n, err));
		if (from->has_nulls[c])
			GJ_TRY(PartitionValues(ctx, state, d_digits, sort_bits,
								   (const uint8_t *) from->nulls[c].ptr,
								   (uint8_t *) to->nulls[c].ptr, n, err));
	}
	return GJ_OK;
}

/*
 * Partition one side's keys and row numbers: reserve the scratch, compute
 * the digits (table: with the bucket bits) and sort the row numbers and
 * the keys by them into d_rows_out and d_keys_out; the sorted digits stay
 * in PHJ_DIGITS_SORTED, the digits in PHJ_DIGITS (for GFTR's columns)
 */
static GjStatus
PartitionKeys(GjCudaContext *ctx, PhjState *state, const uint64_t *d_keys,
			  const uint8_t *d_nulls, int64_t nrows, bool table,
			  int sort_bits, uint32_t null_digit, GjRowId *d_rows_out,
			  uint64_t *d_keys_out, GjError *err)
{
	size_t		n = (size_t) nrows;

	GJ_TRY(PhjReserve(ctx, state, PHJ_DIGITS, n * sizeof(uint32_t), err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_DIGITS_SORTED, n * sizeof(uint32_t), err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_ROW_IDS, n * sizeof(GjRowId), err));

	phj_digit_kernel<<<gj_cuda_grid_size(ctx, nrows), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		d_keys, d_nulls, nrows, state->radix_bits, table, null_digit,
		PHJ_BUFFER(state, PHJ_DIGITS, uint32_t),
		PHJ_BUFFER(state, PHJ_ROW_IDS, GjRowId));
	GJ_CUDA_TRY(err, cudaGetLastError());

	GJ_TRY(PartitionValues(ctx, state, PHJ_BUFFER(state, PHJ_DIGITS, uint32_t),
						   sort_bits, PHJ_BUFFER(state, PHJ_ROW_IDS, const GjRowId),
						   d_rows_out, nrows, err));
	GJ_TRY(PartitionValues(ctx, state, PHJ_BUFFER(state, PHJ_DIGITS, uint32_t),
						   sort_bits, d_keys, d_keys_out, nrows, err));
	return GJ_OK;
}

/* The body of the PHJ build, for a non-empty inner side */
static GjStatus
BuildPartitions(GjCudaContext *ctx, PhjState *state, const GjBatch *inner,
				GjError *err)
{
	int64_t		nrows = inner->nrows;
	int			radix_bits = state->radix_bits;
	uint32_t	npartitions = (uint32_t) 1 << radix_bits;
	int			table_bits = radix_bits + GJ_PHJ_BUCKET_BITS;
	int			sort_bits = table_bits + (inner->nulls != NULL ? 1 : 0);
	uint32_t	scalars[PHJ_NUM_SCALARS];
	const uint64_t *d_keys;
	const uint8_t *d_nulls;
	uint32_t   *d_scalars;

	GJ_TRY(gj_cuda_upload_keys(ctx, GJ_SIDE_INNER, inner, &d_keys, &d_nulls, err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_ENTRY_ROWS, (size_t) nrows * sizeof(GjRowId), err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_ENTRY_KEYS, (size_t) nrows * sizeof(uint64_t), err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_INNER_START,
					  ((size_t) npartitions + 1) * sizeof(uint32_t), err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_SCALARS, sizeof(scalars), err));
	d_scalars = PHJ_BUFFER(state, PHJ_SCALARS, uint32_t);

	/* 1. Partition (key, row) by partition and bucket, NULL keys last */
	GJ_TRY(PartitionKeys(ctx, state, d_keys, d_nulls, nrows, true, sort_bits,
						 (uint32_t) 1 << table_bits,
						 PHJ_BUFFER(state, PHJ_ENTRY_ROWS, GjRowId),
						 PHJ_BUFFER(state, PHJ_ENTRY_KEYS, uint64_t), err));

	/* 2. The partitions' starts, the oversized ones and the rows with a key */
	GJ_CUDA_TRY(err, cudaMemsetAsync(d_scalars, 0, sizeof(scalars), ctx->stream));
	phj_bounds_kernel<<<gj_cuda_grid_size(ctx, npartitions), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		PHJ_BUFFER(state, PHJ_DIGITS_SORTED, uint32_t), (uint32_t) nrows,
		npartitions, GJ_PHJ_BUCKET_BITS,
		PHJ_BUFFER(state, PHJ_INNER_START, uint32_t), d_scalars);
	GJ_CUDA_TRY(err, cudaGetLastError());
	GJ_TRY(gj_cuda_copy_from_device(ctx, scalars, d_scalars, sizeof(scalars), err));

	/* The keys are partitioned; their upload and the row numbers are done with */
	PhjRelease(ctx, state, PHJ_ROW_IDS);
	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_KEYS);
	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_NULLS);

	/*
	 * 3. The payload columns: GFUR keeps them in row order; GFTR partitions
	 * each like the keys, and drops the originals (PhjBuild)
	 */
	if (ctx->spec.inner_ncolumns > 0)
	{
		GJ_TRY(gj_cuda_columns_upload(ctx, GJ_COLUMNS_INNER, inner, err));
		if (ctx->spec.materialize == GJ_MATERIALIZE_GFTR)
			GJ_TRY(TransformColumns(ctx, state, GJ_COLUMNS_INNER_TRANSFORMED,
									GJ_COLUMNS_INNER, sort_bits, nrows, err));
	}
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));

	state->oversized = scalars[PHJ_SCALAR_OVERSIZED];
	state->nentries = scalars[PHJ_SCALAR_ENTRIES];
	return GJ_OK;
}

/*
 * Partition the inner side, ordered by bucket within each partition
 * (GjCudaVariant.build)
 *
 * Replaces the build of an earlier call.  The build's scratch (the keys
 * as uploaded, the digits, the row numbers, for GFTR the untransformed
 * payload) is released before returning, also when it fails; the
 * partitioned keys and rows stay.  An inner side with no non-NULL key
 * matches nothing.
 */
static GjStatus
PhjBuild(GjCudaContext *ctx, const GjBatch *inner, GjError *err)
{
	PhjState   *state = (PhjState *) gj_cuda_variant_state(ctx, sizeof(PhjState),
														   "a partitioned hash join", err);
	GjStatus	status = GJ_OK;

	if (state == NULL)
		return GJ_ERROR_HOST_MEMORY;
	state->radix_bits = gj_phj_radix_bits(inner->nrows);
	state->nentries = 0;
	state->oversized = 0;

	if (inner->nrows > 0)
		status = BuildPartitions(ctx, state, inner, err);

	(void) cudaStreamSynchronize(ctx->stream);	/* before freeing what it uses */
	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_KEYS);
	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_NULLS);

	/*
	 * The sorts' temporary storage holds a copy of the pairs (the digits and
	 * 8-byte values: 12 bytes an inner row); a count reserves its own, for
	 * outer chunk rows, instead of keeping this one for the whole join
	 */
	gj_cuda_buffer_release(ctx, GJ_BUFFER_CUB_TEMP);
	PhjRelease(ctx, state, PHJ_DIGITS);
	PhjRelease(ctx, state, PHJ_DIGITS_SORTED);
	PhjRelease(ctx, state, PHJ_ROW_IDS);
	if (ctx->spec.materialize == GJ_MATERIALIZE_GFTR)
		gj_cuda_columns_release(ctx, GJ_COLUMNS_INNER);

	if (status != GJ_OK)
		state->nentries = 0;
	else
		gj_phj_describe(state->radix_bits, state->nentries, state->oversized,
						ctx->stats.detail, sizeof(ctx->stats.detail));
	return status;
}

/* The body of the PHJ count, for a chunk that can have matches */
static GjStatus
CountChunk(GjCudaContext *ctx, PhjState *state, const GjBatch *outer,
		   uint64_t *nmatches, GjError *err)
{
	int64_t		nrows = outer->nrows;
	size_t		n = (size_t) nrows;
	uint32_t	npartitions = (uint32_t) 1 << state->radix_bits;
	int			sort_bits = state->radix_bits + (outer->nulls != NULL ? 1 : 0);
	const uint64_t *d_keys;
	const uint8_t *d_nulls;
	uint32_t   *d_unit_start;
	uint64_t   *d_offsets;
	uint64_t	total = 0;
	size_t		temp_bytes = 0;

	GJ_TRY(gj_cuda_upload_keys(ctx, GJ_SIDE_OUTER, outer, &d_keys, &d_nulls, err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_OUTER_KEYS, n * sizeof(uint64_t), err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_OUTER_ROWS, n * sizeof(GjRowId), err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_OUTER_START, ((size_t) npartitions + 1) * sizeof(uint32_t), err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_UNIT_START, ((size_t) npartitions + 1) * sizeof(uint32_t), err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_OFFSETS, (n + 1) * sizeof(uint64_t), err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_FIRST, n * sizeof(uint32_t), err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_LAST, n * sizeof(uint32_t), err));
	GJ_TRY(PhjReserve(ctx, state, PHJ_SCALARS, PHJ_NUM_SCALARS * sizeof(uint32_t), err));
	d_unit_start = PHJ_BUFFER(state, PHJ_UNIT_START, uint32_t);
	d_offsets = PHJ_BUFFER(state, PHJ_OFFSETS, uint64_t);

	/* 1. Partition (key, row) by partition, NULL keys last */
	GJ_TRY(PartitionKeys(ctx, state, d_keys, d_nulls, nrows, false, sort_bits,
						 npartitions,
						 PHJ_BUFFER(state, PHJ_OUTER_ROWS, GjRowId),
						 PHJ_BUFFER(state, PHJ_OUTER_KEYS, uint64_t), err));
	phj_bounds_kernel<<<gj_cuda_grid_size(ctx, npartitions), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		PHJ_BUFFER(state, PHJ_DIGITS_SORTED, uint32_t), (uint32_t) nrows,
		npartitions, 0, PHJ_BUFFER(state, PHJ_OUTER_START, uint32_t), NULL);
	GJ_CUDA_TRY(err, cudaGetLastError());

	/* 2. The work units, numbered by an exclusive sum */
	phj_units_kernel<<<gj_cuda_grid_size(ctx, (int64_t) npartitions + 1), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		PHJ_BUFFER(state, PHJ_INNER_START, uint32_t),
		PHJ_BUFFER(state, PHJ_OUTER_START, uint32_t), npartitions, d_unit_start);
	GJ_CUDA_TRY(err, cudaGetLastError());
	GJ_CUDA_TRY(err, cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, d_unit_start,
												   (int64_t) npartitions + 1, ctx->stream));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_CUB_TEMP, temp_bytes, err));
	GJ_CUDA_TRY(err, cub::DeviceScan::ExclusiveSum(GJ_BUFFER(ctx, GJ_BUFFER_CUB_TEMP, void),
												   temp_bytes, d_unit_start,
												   (int64_t) npartitions + 1, ctx->stream));

	/* 3. Count every position's matches in its co-partition's tables */
	GJ_CUDA_TRY(err, cudaMemsetAsync(d_offsets, 0, (n + 1) * sizeof(uint64_t), ctx->stream));
	GJ_CUDA_TRY(err, cudaMemsetAsync(PHJ_BUFFER(state, PHJ_SCALARS, uint32_t) + PHJ_SCALAR_NEXT_UNIT,
									 0, sizeof(uint32_t), ctx->stream));
	phj_count_kernel<<<ctx->max_grid, GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		PHJ_BUFFER(state, PHJ_ENTRY_KEYS, uint64_t),
		PHJ_BUFFER(state, PHJ_INNER_START, uint32_t),
		PHJ_BUFFER(state, PHJ_OUTER_KEYS, uint64_t),
		PHJ_BUFFER(state, PHJ_OUTER_START, uint32_t),
		d_unit_start, npartitions, state->radix_bits,
		PHJ_BUFFER(state, PHJ_SCALARS, unsigned int) + PHJ_SCALAR_NEXT_UNIT,
		d_offsets, PHJ_BUFFER(state, PHJ_FIRST, uint32_t),
		PHJ_BUFFER(state, PHJ_LAST, uint32_t));
	GJ_CUDA_TRY(err, cudaGetLastError());

	/* 4. Exclusive sum of the counts, in place, 64-bit; the last is the total */
	GJ_TRY(gj_cuda_count_offsets(ctx, d_offsets, nrows, &total, err));

	/*
	 * 5. The payload columns only travel when some row has a match; GFTR
	 * partitions them like the keys
	 */
	if (total > 0 && ctx->spec.outer_ncolumns > 0)
	{
		GJ_TRY(gj_cuda_columns_upload(ctx, GJ_COLUMNS_OUTER, outer, err));
		if (ctx->spec.materialize == GJ_MATERIALIZE_GFTR)
			GJ_TRY(TransformColumns(ctx, state, GJ_COLUMNS_OUTER_TRANSFORMED,
									GJ_COLUMNS_OUTER, sort_bits, nrows, err));
	}
	*nmatches = total;
	return GJ_OK;
}

/*
 * Count the matches of one outer chunk (GjCudaVariant.count)
 *
 * Keeps the chunk's partitioned keys and rows, its match offsets and
 * first and last matches, and its payload columns on the device for
 * retrieve.  The partitioning scratch stays allocated for the next chunk.
 */
static GjStatus
PhjCount(GjCudaContext *ctx, const GjBatch *outer, uint64_t *nmatches,
		 GjError *err)
{
	PhjState   *state = (PhjState *) ctx->variant_state;

	*nmatches = 0;
	/* Nothing can match: no device work, retrieve returns 0 */
	if (outer->nrows == 0 || state == NULL || state->nentries == 0)
		return GJ_OK;
	return CountChunk(ctx, state, outer, nmatches, err);
}

/* The arrays phj_retrieve_kernel reads and writes; passed by value */
typedef struct PhjRetrieveArgs
{
	const uint64_t *entry_keys;
	const GjRowId *entry_rows;
	const uint64_t *outer_keys;
	const GjRowId *outer_rows;
	const uint64_t *offsets;
	const uint32_t *first;
	const uint32_t *last;
	int64_t		npositions;
	uint64_t	window_begin;
	uint64_t	window_end;
	GjRowId    *maps[GJ_NUM_ROUND_MAPS];	/* NULL: not written */
} PhjRetrieveArgs;

/* Record match number slot of the round: position j, inner entry e */
static __device__ __forceinline__ void
WriteMatch(const PhjRetrieveArgs *args, uint64_t slot, int64_t j, uint32_t e)
{
	if (args->maps[GJ_ROUND_OUTER_ROWS] != NULL)
		args->maps[GJ_ROUND_OUTER_ROWS][slot] = args->outer_rows[j];
	if (args->maps[GJ_ROUND_INNER_ROWS] != NULL)
		args->maps[GJ_ROUND_INNER_ROWS][slot] = args->entry_rows[e];
	if (args->maps[GJ_ROUND_OUTER_POS] != NULL)
		args->maps[GJ_ROUND_OUTER_POS][slot] = (GjRowId) j;
	if (args->maps[GJ_ROUND_INNER_POS] != NULL)
		args->maps[GJ_ROUND_INNER_POS][slot] = e;
}

/*
 * Write the window's matches of position j alone (one lane): walk the
 * bucket from the first match, numbering the equal keys, or, when the
 * matches are neighbours, go straight to the window
 */
static __device__ void
RetrieveRow(const PhjRetrieveArgs *args, int64_t j)
{
	uint64_t	match = args->offsets[j];
	uint64_t	end = min(args->offsets[j + 1], args->window_end);
	uint64_t	key = args->outer_keys[j];
	uint32_t	e = args->first[j];
	bool		neighbours = (uint64_t) (args->last[j] - e) + 1 ==
		args->offsets[j + 1] - match;

	if (neighbours && match < args->window_begin)
	{
		e += (uint32_t) (args->window_begin - match);
		match = args->window_begin;
	}
	for (; match < end; e++)
	{
		if (!neighbours && args->entry_keys[e] != key)
			continue;
		if (match >= args->window_begin)
			WriteMatch(args, match - args->window_begin, j, e);
		match++;
	}
}

/*
 * Write the window's matches of position j with the whole warp (every
 * lane calls it with the same j): neighbours take one match a lane; else
 * the warp reads 32 entries a step, and a lane's match number is the
 * matches found before plus those of the lower lanes (ballot, popc)
 */
static __device__ void
RetrieveRowWarp(const PhjRetrieveArgs *args, int64_t j, int lane)
{
	uint64_t	begin = args->offsets[j];
	uint64_t	count = args->offsets[j + 1] - begin;
	uint64_t	lo = max(begin, args->window_begin);
	uint64_t	hi = min(begin + count, args->window_end);
	uint64_t	key = args->outer_keys[j];
	uint32_t	first = args->first[j];
	uint32_t	last = args->last[j];

	if ((uint64_t) (last - first) + 1 == count)
	{
		for (uint64_t m = lo + lane; m < hi; m += 32)
			WriteMatch(args, m - args->window_begin, j, first + (uint32_t) (m - begin));
		return;
	}
	for (uint64_t match = begin, e0 = first; match < hi; e0 += 32)
	{
		uint32_t	e = (uint32_t) e0 + lane;
		bool		is_match = e <= last && args->entry_keys[e] == key;
		unsigned int found = __ballot_sync(0xFFFFFFFFu, is_match);
		uint64_t	m = match + __popc(found & ((1u << lane) - 1));

		if (is_match && m >= lo && m < hi)
			WriteMatch(args, m - args->window_begin, j, e);
		match += __popc(found);
	}
}

/*
 * Write the matches numbered window_begin .. window_end - 1
 *
 * Thread 0 of each block finds the first position of the window by
 * binary search on the offsets; each warp then takes 32 positions at a
 * time from there, and stops at the first group that starts at or beyond
 * the window's end (offsets never decrease; the test is on the group's
 * first position, the same for every lane).  A lane retrieves its own
 * position's matches when they are few in this window; the positions with
 * more than PHJ_HEAVY_MATCHES are then taken one by one by the whole warp.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
phj_retrieve_kernel(const PhjRetrieveArgs args)
{
	__shared__ int64_t first_position;
	int			lane = threadIdx.x % 32;
	int64_t		warp = gj_thread_index() / 32;
	int64_t		nwarps = gj_grid_stride() / 32;

	if (threadIdx.x == 0)
		first_position = gj_seek_match_row(args.offsets, args.npositions,
										   args.window_begin);
	__syncthreads();

	for (int64_t base = first_position + warp * 32; base < args.npositions;
		 base += nwarps * 32)
	{
		int64_t		j = base + lane;
		uint64_t	in_window = 0;
		unsigned int heavy;

		if (args.offsets[base] >= args.window_end)
			break;
		if (j < args.npositions)
		{
			uint64_t	lo = max(args.offsets[j], args.window_begin);
			uint64_t	hi = min(args.offsets[j + 1], args.window_end);

			in_window = hi > lo ? hi - lo : 0;
		}
		if (in_window > 0 && in_window <= PHJ_HEAVY_MATCHES)
			RetrieveRow(&args, j);

		heavy = __ballot_sync(0xFFFFFFFFu, in_window > PHJ_HEAVY_MATCHES);
		while (heavy != 0)
		{
			int			src = __ffs(heavy) - 1;

			heavy &= heavy - 1;
			RetrieveRowWarp(&args, base + src, lane);
		}
	}
}

/*
 * Write the round maps of the matches first .. first + round_size - 1
 * (GjCudaVariant.retrieve)
 *
 * GFUR gathers both sides' payload from the columns as they came, by row;
 * GFTR from the partitioned ones, by position, both sides (gj_round_plan).
 * Each map is written only when the round needs it.
 */
static GjStatus
PhjRetrieve(GjCudaContext *ctx, uint64_t first, int64_t round_size,
			GjRoundSources *sources, GjError *err)
{
	PhjState   *state = (PhjState *) ctx->variant_state;
	int64_t		rows_to_cover = ctx->outer_rows < round_size ? ctx->outer_rows : round_size;
	PhjRetrieveArgs args;

	memset(&args, 0, sizeof(args));
	GJ_TRY(gj_cuda_round_maps_reserve(ctx, true, round_size, sources,
									  args.maps, err));
	args.entry_keys = PHJ_BUFFER(state, PHJ_ENTRY_KEYS, const uint64_t);
	args.entry_rows = PHJ_BUFFER(state, PHJ_ENTRY_ROWS, const GjRowId);
	args.outer_keys = PHJ_BUFFER(state, PHJ_OUTER_KEYS, const uint64_t);
	args.outer_rows = PHJ_BUFFER(state, PHJ_OUTER_ROWS, const GjRowId);
	args.offsets = PHJ_BUFFER(state, PHJ_OFFSETS, const uint64_t);
	args.first = PHJ_BUFFER(state, PHJ_FIRST, const uint32_t);
	args.last = PHJ_BUFFER(state, PHJ_LAST, const uint32_t);
	args.npositions = ctx->outer_rows;
	args.window_begin = first;
	args.window_end = first + (uint64_t) round_size;

	phj_retrieve_kernel<<<gj_cuda_grid_size(ctx, rows_to_cover), GJ_BLOCK_SIZE, 0, ctx->stream>>>(args);
	GJ_CUDA_TRY(err, cudaGetLastError());
	return GJ_OK;
}

/* Free the state and its device arrays (GjCudaVariant.destroy_state) */
static void
PhjDestroyState(GjCudaContext *ctx)
{
	PhjState   *state = (PhjState *) ctx->variant_state;

	if (state == NULL)
		return;
	for (int id = 0; id < PHJ_NUM_BUFFERS; id++)
		PhjRelease(ctx, state, (PhjBufferId) id);
	free(state);
	ctx->variant_state = NULL;
}

const GjCudaVariant gj_cuda_phj = {
	"PHJ",						/* name */
	PhjBuild,
	PhjCount,
	PhjRetrieve,
	PhjDestroyState,
};
