/*-------------------------------------------------------------------------
 *
 * hash_join.cu
 *	  GPU hash join: build a bucket-sorted table on the inner keys, then
 *	  count and retrieve the matches of one outer chunk at a time
 *
 * CPU twin: hash_join_cpu.c, the specification (same functions, same
 * order; its banner describes the table and the count/retrieve contract).
 * Both produce the very same arrays; here is how the GPU gets there.
 *
 * BUILD (one global, non-partitioned table: papers/notes/wu-2025-gftr.md
 * §3.3, built by sorting rather than by atomic inserts)
 *
 *	  hash_assign_kernel	bucket of every inner row; NULL keys get the
 *							sentinel bucket nbuckets, which sorts last
 *	  cub::DeviceRadixSort	(bucket, row) pairs, bits 0 .. bucket_bits, so
 *							the sentinel is included; LSD radix sort is
 *							stable, so rows stay ascending within a bucket,
 *							as the twin's counting sort leaves them
 *	  hash_histogram_kernel	entries per bucket (warp-aggregated atomics)
 *	  cub::DeviceScan		exclusive sum of the histogram: bucket_start
 *	  hash_gather_kernel	entry_keys[e] = keys[entry_rows[e]]
 *
 * Sorting replaces the open-addressing table of cuDF and Crystal: no slot
 * is ever "empty", so no key value has to be given up as a sentinel, and
 * the result does not depend on the order in which threads ran.
 *
 * PROBE (the "double probe" of papers/notes/rui-2020.md §1.2.3: count
 * pass, prefix scan, write pass)
 *
 *	  hash_count_kernel		one thread per outer row: equal keys in its bucket
 *	  cub::DeviceScan		exclusive sum into 64-bit offsets; one extra
 *							element, set to 0, comes out as the total
 *	  hash_retrieve_kernel	one thread per outer row whose matches meet the
 *							window [first, first + max_matches): it walks
 *							its bucket and writes the k-th equal key at
 *							offsets[row] + k - first
 *
 * The pairs of a round are copied into page-locked host arrays owned by
 * the context (context.cu).  Rui 2020 found a direct output buffer with
 * atomics 20-25% faster than the double probe, but its order depends on
 * thread timing, and the count is what bounds a round by max_matches.
 *
 * COSTS
 *
 * Device memory: the build peaks at about 41 bytes an inner row (the keys,
 * the NULL flags, bucket ids and rows twice for the sort, bucket_start,
 * the entry keys) and keeps at most 20 as the table; a chunk takes 17
 * bytes an outer row, a round 8 bytes a match.  Work: one thread walks the
 * whole bucket of its outer row, so an outer row with m matches costs O(m)
 * in one thread, in every round that its matches touch.  Keys heavily
 * duplicated on both sides (Zipf > 1) would want a warp per heavy row, or
 * a partitioned join (XXX, later work).
 *
 * Each entry point checks its arguments exactly as the twin does, then
 * runs a static function whose every CUDA call is checked by GJ_CUDA_TRY;
 * the entry point then records the time and the state.
 *
 * IDENTIFICATION
 *	  cuda/hash_join.cu
 *
 *-------------------------------------------------------------------------
 */
#include <cub/cub.cuh>

#include "common.cuh"
#include "gpujoin_kernels.h"

/* The table as the probe kernels see it; passed by value */
typedef struct GjDeviceTable
{
	const uint64_t *entry_keys;
	const GjRowId *entry_rows;
	const uint32_t *bucket_start;
	int			bucket_bits;
} GjDeviceTable;

/* Is row's key NULL?  (d_nulls is NULL when no key is) */
static __device__ __forceinline__ bool
KeyIsNull(const uint8_t *d_nulls, int64_t row)
{
	return d_nulls != NULL && d_nulls[row] != 0;
}

/* Add the wall clock since start, less the copies since then, to *timer */
static void
AddElapsed(GjCudaContext *ctx, double *timer, double start,
		   double transfer_start)
{
	*timer += (gj_clock_ms() - start) - (ctx->stats.transfer_ms - transfer_start);
}

/*
 * Bucket of every inner row, and the row numbers to sort along with them
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
hash_assign_kernel(const uint64_t *__restrict__ d_keys,
				   const uint8_t *__restrict__ d_nulls, int64_t nrows,
				   int bucket_bits, uint32_t *__restrict__ d_bucket_ids,
				   GjRowId *__restrict__ d_rows)
{
	uint32_t	null_bucket = (uint32_t) gj_bucket_count(bucket_bits);

	for (int64_t row = gj_thread_index(); row < nrows; row += gj_grid_stride())
	{
		d_bucket_ids[row] = KeyIsNull(d_nulls, row) ?
			null_bucket : gj_bucket(d_keys[row], bucket_bits);
		d_rows[row] = (GjRowId) row;
	}
}

/*
 * Histogram of the sorted bucket ids, NULL sentinel excluded
 *
 * The ids are sorted, so the rows of one bucket sit in neighbouring
 * lanes.  Most buckets hold a row or two, but a duplicate-heavy key puts
 * thousands of rows into one: one atomic per distinct bucket in the warp
 * (__match_any_sync), instead of one per row, keeps those from queueing on
 * a single address.  The loop steps a whole warp at a time, so that all
 * 32 lanes take part in every __match_any_sync.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
hash_histogram_kernel(const uint32_t *__restrict__ d_bucket_ids,
					  int64_t nrows, uint32_t nbuckets,
					  uint32_t *__restrict__ d_bucket_counts)
{
	int			lane = threadIdx.x % 32;

	for (int64_t warp_row = gj_thread_index() - lane; warp_row < nrows;
		 warp_row += gj_grid_stride())
	{
		int64_t		row = warp_row + lane;
		uint32_t	bucket = row < nrows ? d_bucket_ids[row] : nbuckets;
		unsigned int peers = __match_any_sync(0xFFFFFFFFu, bucket);

		if (bucket < nbuckets && lane == __ffs(peers) - 1)
			atomicAdd(&d_bucket_counts[bucket], (unsigned int) __popc(peers));
	}
}

/* Keys of the entries, in entry order */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
hash_gather_kernel(const uint64_t *__restrict__ d_keys,
				   const GjRowId *__restrict__ d_entry_rows, int64_t nentries,
				   uint64_t *__restrict__ d_entry_keys)
{
	for (int64_t e = gj_thread_index(); e < nentries; e += gj_grid_stride())
		d_entry_keys[e] = d_keys[d_entry_rows[e]];
}

/* The body of gj_cuda_hash_build, for a non-empty inner side */
static GjStatus
BuildTable(GjCudaContext *ctx, const GjKeyColumn *inner, GjError *err)
{
	int64_t		nrows = inner->nrows;
	int			bucket_bits = gj_bucket_bits(nrows);
	uint32_t	nbuckets = (uint32_t) gj_bucket_count(bucket_bits);
	int			grid = gj_cuda_grid_size(ctx, nrows);
	const uint8_t *d_nulls = NULL;
	uint32_t   *d_bucket_start;
	uint32_t	nentries = 0;
	size_t		temp_bytes = 0;

	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_INNER_KEYS,
								  (size_t) nrows * sizeof(uint64_t), err));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_BUCKET_IDS,
								  (size_t) nrows * sizeof(uint32_t), err));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_BUCKET_IDS_ALT,
								  (size_t) nrows * sizeof(uint32_t), err));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_ENTRY_ROWS,
								  (size_t) nrows * sizeof(GjRowId), err));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_ROWS_ALT,
								  (size_t) nrows * sizeof(GjRowId), err));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_BUCKET_START,
								  ((size_t) nbuckets + 1) * sizeof(uint32_t), err));

	GJ_TRY(gj_cuda_copy_to_device(ctx, GJ_BUFFER(ctx, GJ_BUFFER_INNER_KEYS, void),
								  inner->keys, (size_t) nrows * sizeof(uint64_t),
								  err));
	if (inner->nulls != NULL)
	{
		GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_INNER_NULLS,
									  (size_t) nrows, err));
		GJ_TRY(gj_cuda_copy_to_device(ctx, GJ_BUFFER(ctx, GJ_BUFFER_INNER_NULLS, void),
									  inner->nulls, (size_t) nrows, err));
		d_nulls = GJ_BUFFER(ctx, GJ_BUFFER_INNER_NULLS, uint8_t);
	}

	/* 1. The bucket of every row */
	hash_assign_kernel<<<grid, GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		GJ_BUFFER(ctx, GJ_BUFFER_INNER_KEYS, uint64_t), d_nulls, nrows,
		bucket_bits, GJ_BUFFER(ctx, GJ_BUFFER_BUCKET_IDS, uint32_t),
		GJ_BUFFER(ctx, GJ_BUFFER_ENTRY_ROWS, GjRowId));
	GJ_CUDA_TRY(err, cudaGetLastError());

	/*
	 * 2. Stable sort of (bucket, row) by bucket.  The DoubleBuffer form
	 * needs O(1) temporary storage instead of a copy of the pairs; the
	 * result lands in either buffer of each pair, and the row buffer that
	 * holds it becomes GJ_BUFFER_ENTRY_ROWS.
	 */
	{
		cub::DoubleBuffer<uint32_t> sort_ids(GJ_BUFFER(ctx, GJ_BUFFER_BUCKET_IDS, uint32_t),
											 GJ_BUFFER(ctx, GJ_BUFFER_BUCKET_IDS_ALT, uint32_t));
		cub::DoubleBuffer<GjRowId> sort_rows(GJ_BUFFER(ctx, GJ_BUFFER_ENTRY_ROWS, GjRowId),
											 GJ_BUFFER(ctx, GJ_BUFFER_ROWS_ALT, GjRowId));

		GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(NULL, temp_bytes,
														 sort_ids, sort_rows,
														 nrows, 0, bucket_bits + 1,
														 ctx->stream));
		GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_CUB_TEMP, temp_bytes, err));
		GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(GJ_BUFFER(ctx, GJ_BUFFER_CUB_TEMP, void),
														 temp_bytes,
														 sort_ids, sort_rows,
														 nrows, 0, bucket_bits + 1,
														 ctx->stream));
		if (sort_rows.selector != 0)
		{
			GjDeviceBuffer sorted = ctx->buffers[GJ_BUFFER_ROWS_ALT];

			ctx->buffers[GJ_BUFFER_ROWS_ALT] = ctx->buffers[GJ_BUFFER_ENTRY_ROWS];
			ctx->buffers[GJ_BUFFER_ENTRY_ROWS] = sorted;
		}

		/* 3. Histogram of the buckets, then bucket_start by exclusive sum */
		d_bucket_start = GJ_BUFFER(ctx, GJ_BUFFER_BUCKET_START, uint32_t);
		GJ_CUDA_TRY(err, cudaMemsetAsync(d_bucket_start, 0,
										 ((size_t) nbuckets + 1) * sizeof(uint32_t),
										 ctx->stream));
		hash_histogram_kernel<<<grid, GJ_BLOCK_SIZE, 0, ctx->stream>>>(
			sort_ids.Current(), nrows, nbuckets, d_bucket_start);
		GJ_CUDA_TRY(err, cudaGetLastError());
	}

	temp_bytes = 0;
	GJ_CUDA_TRY(err, cub::DeviceScan::ExclusiveSum(NULL, temp_bytes,
												   d_bucket_start,
												   (int64_t) nbuckets + 1,
												   ctx->stream));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_CUB_TEMP, temp_bytes, err));
	GJ_CUDA_TRY(err, cub::DeviceScan::ExclusiveSum(GJ_BUFFER(ctx, GJ_BUFFER_CUB_TEMP, void),
												   temp_bytes, d_bucket_start,
												   (int64_t) nbuckets + 1,
												   ctx->stream));
	GJ_TRY(gj_cuda_copy_from_device(ctx, &nentries, d_bucket_start + nbuckets,
									sizeof(uint32_t), err));
	ctx->bucket_bits = bucket_bits;
	ctx->nentries = nentries;

	/* 4. The keys of the entries, in entry order */
	if (nentries > 0)
	{
		GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_ENTRY_KEYS,
									  (size_t) nentries * sizeof(uint64_t), err));
		hash_gather_kernel<<<gj_cuda_grid_size(ctx, nentries), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
			GJ_BUFFER(ctx, GJ_BUFFER_INNER_KEYS, uint64_t),
			GJ_BUFFER(ctx, GJ_BUFFER_ENTRY_ROWS, GjRowId), nentries,
			GJ_BUFFER(ctx, GJ_BUFFER_ENTRY_KEYS, uint64_t));
		GJ_CUDA_TRY(err, cudaGetLastError());
	}
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
	return GJ_OK;
}

/*
 * Build the table on the inner keys
 *
 * Replaces the table of an earlier call and forgets any counted chunk,
 * also when it fails.  The build's scratch buffers (the inner keys, the
 * bucket ids and the sort's second buffers, about 21 bytes a row) are
 * released before returning, so the probe has that device memory; the
 * table itself (about 16 bytes a row) stays.
 */
extern "C" GjStatus
gj_cuda_hash_build(GjContext *ctx, const GjKeyColumn *inner, GjError *err)
{
	GjCudaContext *cuda = gj_cuda_context_get(ctx, err);
	double		start = gj_clock_ms();
	double		transfer_start;
	GjStatus	status;

	if (cuda == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	cuda->has_table = false;
	cuda->has_chunk = false;
	status = gj_check_key_column(inner, "inner", err);
	if (status != GJ_OK)
		return status;

	transfer_start = cuda->stats.transfer_ms;
	cuda->bucket_bits = 0;
	cuda->nentries = 0;
	if (inner->nrows > 0)
		status = BuildTable(cuda, inner, err);

	gj_cuda_buffer_release(cuda, GJ_BUFFER_INNER_KEYS);
	gj_cuda_buffer_release(cuda, GJ_BUFFER_INNER_NULLS);
	gj_cuda_buffer_release(cuda, GJ_BUFFER_BUCKET_IDS);
	gj_cuda_buffer_release(cuda, GJ_BUFFER_BUCKET_IDS_ALT);
	gj_cuda_buffer_release(cuda, GJ_BUFFER_ROWS_ALT);

	cuda->has_table = (status == GJ_OK);
	AddElapsed(cuda, &cuda->stats.build_ms, start, transfer_start);
	return status;
}

/* Number of entries of the table whose key equals key */
static __device__ __forceinline__ uint64_t
CountKeyMatches(const GjDeviceTable *table, uint64_t key)
{
	uint32_t	bucket = gj_bucket(key, table->bucket_bits);
	uint32_t	end = table->bucket_start[bucket + 1];
	uint64_t	count = 0;

	for (uint32_t e = table->bucket_start[bucket]; e < end; e++)
	{
		if (table->entry_keys[e] == key)
			count++;
	}
	return count;
}

/* The table of a context, for the probe kernels */
static GjDeviceTable
CurrentTable(GjCudaContext *ctx)
{
	GjDeviceTable table;

	table.entry_keys = GJ_BUFFER(ctx, GJ_BUFFER_ENTRY_KEYS, const uint64_t);
	table.entry_rows = GJ_BUFFER(ctx, GJ_BUFFER_ENTRY_ROWS, const GjRowId);
	table.bucket_start = GJ_BUFFER(ctx, GJ_BUFFER_BUCKET_START, const uint32_t);
	table.bucket_bits = ctx->bucket_bits;
	return table;
}

/*
 * Matches of every outer row, into d_counts[0 .. nrows); d_counts[nrows]
 * is set to 0, so that the exclusive sum over nrows + 1 elements ends in
 * the total
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
hash_count_kernel(const GjDeviceTable table,
				  const uint64_t *__restrict__ d_keys,
				  const uint8_t *__restrict__ d_nulls, int64_t nrows,
				  uint64_t *__restrict__ d_counts)
{
	for (int64_t row = gj_thread_index(); row < nrows; row += gj_grid_stride())
	{
		uint64_t	count = 0;

		if (!KeyIsNull(d_nulls, row))
			count = CountKeyMatches(&table, d_keys[row]);
		d_counts[row] = count;
	}
	if (gj_thread_index() == 0)
		d_counts[nrows] = 0;
}

/* The body of gj_cuda_hash_count, for a chunk that can have matches */
static GjStatus
CountChunk(GjCudaContext *ctx, const GjKeyColumn *outer, GjError *err)
{
	int64_t		nrows = outer->nrows;
	const uint8_t *d_nulls = NULL;
	uint64_t   *d_offsets;
	uint64_t	nmatches = 0;
	size_t		temp_bytes = 0;

	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_OUTER_KEYS,
								  (size_t) nrows * sizeof(uint64_t), err));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_OFFSETS,
								  ((size_t) nrows + 1) * sizeof(uint64_t), err));
	GJ_TRY(gj_cuda_copy_to_device(ctx, GJ_BUFFER(ctx, GJ_BUFFER_OUTER_KEYS, void),
								  outer->keys, (size_t) nrows * sizeof(uint64_t),
								  err));
	if (outer->nulls != NULL)
	{
		GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_OUTER_NULLS,
									  (size_t) nrows, err));
		GJ_TRY(gj_cuda_copy_to_device(ctx, GJ_BUFFER(ctx, GJ_BUFFER_OUTER_NULLS, void),
									  outer->nulls, (size_t) nrows, err));
		d_nulls = GJ_BUFFER(ctx, GJ_BUFFER_OUTER_NULLS, uint8_t);
	}
	d_offsets = GJ_BUFFER(ctx, GJ_BUFFER_OFFSETS, uint64_t);

	hash_count_kernel<<<gj_cuda_grid_size(ctx, nrows), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		CurrentTable(ctx), GJ_BUFFER(ctx, GJ_BUFFER_OUTER_KEYS, uint64_t),
		d_nulls, nrows, d_offsets);
	GJ_CUDA_TRY(err, cudaGetLastError());

	/* In place; 64-bit elements, so the sum cannot wrap */
	GJ_CUDA_TRY(err, cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, d_offsets,
												   nrows + 1, ctx->stream));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_CUB_TEMP, temp_bytes, err));
	GJ_CUDA_TRY(err, cub::DeviceScan::ExclusiveSum(GJ_BUFFER(ctx, GJ_BUFFER_CUB_TEMP, void),
												   temp_bytes, d_offsets,
												   nrows + 1, ctx->stream));
	GJ_TRY(gj_cuda_copy_from_device(ctx, &nmatches, d_offsets + nrows,
									sizeof(uint64_t), err));
	ctx->nmatches = nmatches;
	return GJ_OK;
}

/*
 * Count the matches of one outer chunk
 *
 * Forgets the previous chunk, then keeps this one's keys and match offsets
 * on the device for hash_retrieve.  *nmatches is the chunk's total, which
 * can exceed 2^32.
 */
extern "C" GjStatus
gj_cuda_hash_count(GjContext *ctx, const GjKeyColumn *outer,
				   int64_t *nmatches, GjError *err)
{
	GjCudaContext *cuda = gj_cuda_context_get(ctx, err);
	double		start = gj_clock_ms();
	double		transfer_start;
	GjStatus	status;

	if (cuda == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	cuda->has_chunk = false;
	if (!cuda->has_table)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"hash_count was called before hash_build.");
	if (nmatches == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No place to return the number of matches was given.");
	status = gj_check_key_column(outer, "outer", err);
	if (status != GJ_OK)
		return status;

	transfer_start = cuda->stats.transfer_ms;
	cuda->outer_rows = outer->nrows;
	cuda->nmatches = 0;

	/* Nothing can match: no device work, hash_retrieve returns 0 */
	if (outer->nrows > 0 && cuda->nentries > 0)
		status = CountChunk(cuda, outer, err);

	if (status == GJ_OK)
	{
		cuda->has_chunk = true;
		*nmatches = (int64_t) cuda->nmatches;
	}
	AddElapsed(cuda, &cuda->stats.probe_ms, start, transfer_start);
	return status;
}

/*
 * Write the matches numbered window_begin .. window_end - 1
 *
 * Thread 0 of each block finds the first outer row of the window by
 * binary search on the offsets; the block's threads then stride over the
 * rows from there, and stop at the first row whose matches start at or
 * beyond the window's end (offsets never decrease).  A row walks its
 * bucket from the start and numbers the equal keys it meets, so the
 * numbering is the one hash_count counted.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
hash_retrieve_kernel(const GjDeviceTable table,
					 const uint64_t *__restrict__ d_keys,
					 const uint64_t *__restrict__ d_offsets, int64_t nrows,
					 uint64_t window_begin, uint64_t window_end,
					 GjRowId *__restrict__ d_match_outer,
					 GjRowId *__restrict__ d_match_inner)
{
	__shared__ int64_t first_row;

	if (threadIdx.x == 0)
		first_row = gj_seek_match_row(d_offsets, nrows, window_begin);
	__syncthreads();

	for (int64_t row = first_row + gj_thread_index(); row < nrows;
		 row += gj_grid_stride())
	{
		uint64_t	match = d_offsets[row];
		uint64_t	key;
		uint32_t	bucket;
		uint32_t	end;

		if (match >= window_end)
			break;
		if (match == d_offsets[row + 1])
			continue;			/* no matches (or a NULL key) */

		key = d_keys[row];
		bucket = gj_bucket(key, table.bucket_bits);
		end = table.bucket_start[bucket + 1];
		for (uint32_t e = table.bucket_start[bucket]; e < end && match < window_end; e++)
		{
			if (table.entry_keys[e] != key)
				continue;
			if (match >= window_begin)
			{
				d_match_outer[match - window_begin] = (GjRowId) row;
				d_match_inner[match - window_begin] = table.entry_rows[e];
			}
			match++;
		}
	}
}

/* The body of gj_cuda_hash_retrieve, for a non-empty window */
static GjStatus
RetrieveRound(GjCudaContext *ctx, uint64_t window_begin, int64_t round_size,
			  GjError *err)
{
	size_t		round_bytes = (size_t) round_size * sizeof(GjRowId);
	int64_t		rows_to_cover = ctx->outer_rows < round_size ? ctx->outer_rows : round_size;

	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_MATCH_OUTER, round_bytes, err));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_MATCH_INNER, round_bytes, err));

	hash_retrieve_kernel<<<gj_cuda_grid_size(ctx, rows_to_cover), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		CurrentTable(ctx), GJ_BUFFER(ctx, GJ_BUFFER_OUTER_KEYS, uint64_t),
		GJ_BUFFER(ctx, GJ_BUFFER_OFFSETS, uint64_t), ctx->outer_rows,
		window_begin, window_begin + (uint64_t) round_size,
		GJ_BUFFER(ctx, GJ_BUFFER_MATCH_OUTER, GjRowId),
		GJ_BUFFER(ctx, GJ_BUFFER_MATCH_INNER, GjRowId));
	GJ_CUDA_TRY(err, cudaGetLastError());

	GJ_TRY(gj_cuda_copy_from_device(ctx, ctx->h_match_outer,
									GJ_BUFFER(ctx, GJ_BUFFER_MATCH_OUTER, void),
									round_bytes, err));
	GJ_TRY(gj_cuda_copy_from_device(ctx, ctx->h_match_inner,
									GJ_BUFFER(ctx, GJ_BUFFER_MATCH_INNER, void),
									round_bytes, err));
	return GJ_OK;
}

/*
 * Hand out the matches numbered first .. first + max_matches - 1
 *
 * round->nmatches is min(max_matches, total - first), 0 once first reaches
 * the total.  The arrays are the context's pinned ones.
 */
extern "C" GjStatus
gj_cuda_hash_retrieve(GjContext *ctx, int64_t first, GjMatchRound *round,
					  GjError *err)
{
	GjCudaContext *cuda = gj_cuda_context_get(ctx, err);
	double		start = gj_clock_ms();
	double		transfer_start;
	int64_t		round_size = 0;
	GjStatus	status;

	if (cuda == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	status = gj_check_retrieve(cuda->has_chunk, cuda->nmatches, cuda->max_matches,
							   first, round, cuda->h_match_outer,
							   cuda->h_match_inner, &round_size, err);
	if (status != GJ_OK || round_size == 0)
		return status;

	transfer_start = cuda->stats.transfer_ms;
	status = RetrieveRound(cuda, (uint64_t) first, round_size, err);
	if (status == GJ_OK)
		round->nmatches = round_size;
	AddElapsed(cuda, &cuda->stats.probe_ms, start, transfer_start);
	return status;
}
