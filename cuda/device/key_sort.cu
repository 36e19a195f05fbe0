/*-------------------------------------------------------------------------
 *
 * key_sort.cu
 *	  The stable sort of (key, row) pairs and the retrieve of ranges of
 *	  sorted pairs: what the sort-merge join (SMJ) and the band join (BAND)
 *	  share
 *
 * CPU twin: key_sort_cpu.c, the specification (same functions, same
 * order).  Written once here and called by both variants, so that the two
 * sort alike, number their matches alike, and cannot drift apart.
 *
 * SORT (gj_cuda_sort_pairs; Rui 2020, §4.1.3)
 *
 *	  key_sort_identity_kernel	row numbers 0 .. n-1
 *	  cub::DeviceSelect::If		in place: the rows whose key is not NULL
 *								and lies in [min, max], in their order
 *	  key_sort_gather_kernel	their keys
 *	  cub::DeviceRadixSort		SortPairs of (key, row) on the low "bits"
 *								bits (gj_smj_sort_bits, common.h): LSD
 *								radix sort is stable, so equal keys keep
 *								ascending rows, as the twin's sort leaves
 *								them
 *
 * SMJ sorts its inner side at build and each outer chunk at count; BAND
 * sorts its inner side at build, and takes its outer side in row order.
 *
 * RANGES (gj_cuda_ranges_retrieve; GjSortedRanges, common.h)
 *
 * After the count, each position p (SMJ: a sorted outer position; BAND: an
 * outer row) matches the sorted inner positions lower[p] .. lower[p] +
 * count - 1, and offsets[] numbers the matches.  A round writes the
 * matches first .. first + round_size - 1:
 *
 *	  unique inner			key_ranges_unique_kernel: one thread per match m,
 *							position match_pos[m], inner position
 *							lower[match_pos[m]]: no search, no expansion
 *	  otherwise				key_ranges_retrieve_kernel: one thread per match
 *							m; the position p that holds it is found by
 *							binary search on the offsets (gj_seek_match_row),
 *							first between the two positions that hold the
 *							ends of the block's matches, which thread 0
 *							finds; inner position lower[p] + m - offsets[p]
 *
 * Every match is one thread's work whatever its position, so a skewed
 * position (an outer key with a million inner duplicates, an outer range
 * that covers the whole inner side) is spread over the grid instead of
 * serializing a thread, in every round: the load-balancing search of a
 * merge path, done by binary search.  A round reads only the positions
 * whose matches meet its window, so a chunk of 10^10 matches (every outer
 * range covering every inner key) comes out in rounds of max_matches
 * like any other.
 *
 * IDENTIFICATION
 *	  cuda/device/key_sort.cu
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include <cub/cub.cuh>

#include "common.cuh"
#include "gpujoin_kernels.h"

/* d_rows[i] = i: the rows that the selection chooses from */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
key_sort_identity_kernel(GjRowId *__restrict__ d_rows, int64_t nrows)
{
	for (int64_t row = gj_thread_index(); row < nrows; row += gj_grid_stride())
		d_rows[row] = (GjRowId) row;
}

/*
 * Which rows the selection keeps: a non-NULL key in [min_key, max_key]
 * (cub::DeviceSelect::If's predicate, on the row number)
 */
struct KeepRow
{
	const uint64_t *keys;
	const uint8_t *nulls;
	uint64_t	min_key;
	uint64_t	max_key;

	__device__ __forceinline__ bool operator() (const GjRowId &row) const
	{
		uint64_t	key;

		if (gj_flag_set(nulls, row))
			return false;
		key = keys[row];
		return key >= min_key && key <= max_key;
	}
};

/* d_selected_keys[i] = d_keys[d_rows[i]]: the keys of the selected rows */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
key_sort_gather_kernel(const uint64_t *__restrict__ d_keys,
					   const GjRowId *__restrict__ d_rows, int64_t n,
					   uint64_t *__restrict__ d_selected_keys)
{
	for (int64_t i = gj_thread_index(); i < n; i += gj_grid_stride())
		d_selected_keys[i] = d_keys[d_rows[i]];
}

/* What a sort buffer holds, for error messages: "the sorted inner keys" */
static const char *
SortBufferName(GjSide side, bool rows, char *buf, size_t size)
{
	snprintf(buf, size, "the sorted %s %s", gj_side_name(side),
			 rows ? "rows" : "keys");
	return buf;
}

/*
 * The (key, row) pairs of the rows whose key is not NULL and lies in
 * [min_key, max_key], in row order, into buffers->keys and buffers->rows;
 * *selected gets how many
 *
 * The row numbers are written, then compacted in place by a stable
 * cub::DeviceSelect::If, whose predicate reads each row's key; the keys
 * of the rows kept are then gathered.
 */
static GjStatus
SelectRows(GjCudaContext *ctx, GjSide side, const uint64_t *d_keys,
		   const uint8_t *d_nulls, int64_t nrows, uint64_t min_key,
		   uint64_t max_key, const GjSortBuffers *buffers, int64_t *selected,
		   GjError *err)
{
	int			grid = gj_cuda_grid_size(ctx, nrows);
	KeepRow		keep;
	GjRowId    *d_rows;
	size_t		temp_bytes = 0;
	int64_t		count = 0;
	char		name[64];

	*selected = 0;
	GJ_TRY(gj_cuda_device_reserve(ctx, buffers->rows, (size_t) nrows * sizeof(GjRowId),
								  SortBufferName(side, true, name, sizeof(name)),
								  err));
	GJ_TRY(gj_cuda_device_reserve(ctx, buffers->keys, (size_t) nrows * sizeof(uint64_t),
								  SortBufferName(side, false, name, sizeof(name)),
								  err));
	d_rows = (GjRowId *) buffers->rows->ptr;

	key_sort_identity_kernel<<<grid, GJ_BLOCK_SIZE, 0, ctx->stream>>>(d_rows, nrows);
	GJ_CUDA_TRY(err, cudaGetLastError());

	keep.keys = d_keys;
	keep.nulls = d_nulls;
	keep.min_key = min_key;
	keep.max_key = max_key;
	GJ_CUDA_TRY(err, cub::DeviceSelect::If(NULL, temp_bytes, d_rows,
										   buffers->d_count, nrows, keep,
										   ctx->stream));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_CUB_TEMP, temp_bytes, err));
	GJ_CUDA_TRY(err, cub::DeviceSelect::If(GJ_BUFFER(ctx, GJ_BUFFER_CUB_TEMP, void),
										   temp_bytes, d_rows, buffers->d_count,
										   nrows, keep, ctx->stream));
	GJ_TRY(gj_cuda_copy_from_device(ctx, &count, buffers->d_count,
									sizeof(count), err));

	if (count > 0)
	{
		key_sort_gather_kernel<<<gj_cuda_grid_size(ctx, count), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
			d_keys, d_rows, count, (uint64_t *) buffers->keys->ptr);
		GJ_CUDA_TRY(err, cudaGetLastError());
	}
	*selected = count;
	return GJ_OK;
}

/* Exchange two buffers (the sort's double buffers) */
static void
SwapBuffers(GjDeviceBuffer *a, GjDeviceBuffer *b)
{
	GjDeviceBuffer t = *a;

	*a = *b;
	*b = t;
}

/*
 * Sort the n pairs in buffers->keys and buffers->rows by key on the low
 * "bits" bits, stably (CUB's LSD radix sort)
 *
 * The DoubleBuffer form needs O(1) temporary storage instead of a copy of
 * the pairs; the result lands in either buffer of each pair, and the
 * buffer that holds it becomes buffers->keys (buffers->rows).
 */
static GjStatus
SortPairs(GjCudaContext *ctx, const GjSortBuffers *buffers, int64_t n,
		  int bits, GjError *err)
{
	size_t		temp_bytes = 0;

	if (n < 2 || bits == 0)
		return GJ_OK;
	GJ_TRY(gj_cuda_device_reserve(ctx, buffers->keys_alt, (size_t) n * sizeof(uint64_t),
								  "the keys being sorted", err));
	GJ_TRY(gj_cuda_device_reserve(ctx, buffers->rows_alt, (size_t) n * sizeof(GjRowId),
								  "the rows being sorted", err));
	{
		cub::DoubleBuffer<uint64_t> sort_keys((uint64_t *) buffers->keys->ptr,
											  (uint64_t *) buffers->keys_alt->ptr);
		cub::DoubleBuffer<GjRowId> sort_rows((GjRowId *) buffers->rows->ptr,
											 (GjRowId *) buffers->rows_alt->ptr);

		GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(NULL, temp_bytes,
														 sort_keys, sort_rows,
														 n, 0, bits,
														 ctx->stream));
		GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_CUB_TEMP, temp_bytes, err));
		GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(GJ_BUFFER(ctx, GJ_BUFFER_CUB_TEMP, void),
														 temp_bytes,
														 sort_keys, sort_rows,
														 n, 0, bits,
														 ctx->stream));
		if (sort_keys.selector != 0)
			SwapBuffers(buffers->keys, buffers->keys_alt);
		if (sort_rows.selector != 0)
			SwapBuffers(buffers->rows, buffers->rows_alt);
	}
	return GJ_OK;
}

/*
 * The (key, row) pairs of a side's uploaded keys (nrows > 0) whose key is
 * not NULL and lies in [min_key, max_key], sorted by key, stably, on the
 * low "bits" bits (every key of the range has the same bits above them):
 * into buffers->keys and buffers->rows, *npairs of them
 *
 * The buffers are the caller's (its private state), reserved here; the
 * sort's double buffers, buffers->keys_alt and rows_alt, are its scratch,
 * which the caller releases when it is done sorting; buffers->d_count is
 * one word of device memory the caller holds.  side names the buffers in
 * messages ("the sorted outer keys").
 */
GjStatus
gj_cuda_sort_pairs(GjCudaContext *ctx, GjSide side, const uint64_t *d_keys,
				   const uint8_t *d_nulls, int64_t nrows, uint64_t min_key,
				   uint64_t max_key, int bits, const GjSortBuffers *buffers,
				   int64_t *npairs, GjError *err)
{
	*npairs = 0;
	GJ_TRY(SelectRows(ctx, side, d_keys, d_nulls, nrows, min_key, max_key,
					  buffers, npairs, err));
	return SortPairs(ctx, buffers, *npairs, bits, err);
}

/*
 * Record match number "slot" of the round: position p, sorted inner
 * position q; each map when the round has it
 */
static __device__ __forceinline__ void
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

/* The round's maps, as a kernel parameter */
typedef struct RoundMaps
{
	GjRowId    *maps[GJ_NUM_ROUND_MAPS];
} RoundMaps;

/* At most one match a position: match first + i is position match_pos[first + i] */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
key_ranges_unique_kernel(const GjSortedRanges ranges, const RoundMaps maps,
						 uint64_t first, int64_t round_size)
{
	for (int64_t i = gj_thread_index(); i < round_size; i += gj_grid_stride())
	{
		GjRowId		p = ranges.match_pos[first + (uint64_t) i];

		WriteMatch(&ranges, maps.maps, i, p, ranges.lower[p]);
	}
}

/*
 * Write the matches first .. first + round_size - 1, one thread each
 *
 * The block takes GJ_BLOCK_SIZE neighbouring matches at a time; thread 0
 * finds the positions that hold the first and the last of them, and each
 * thread then finds its own match's position between the two by binary
 * search on the offsets: a short search when the matches are dense, and
 * one that no position's number of matches can lengthen.  Match m of
 * position p is inner position lower[p] + m - offsets[p].  The loop steps
 * the whole block at once, so every thread reaches both barriers.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
key_ranges_retrieve_kernel(const GjSortedRanges ranges, const RoundMaps maps,
						   uint64_t first, int64_t round_size)
{
	__shared__ int64_t tile_pos[2];

	for (int64_t tile = (int64_t) blockIdx.x * blockDim.x; tile < round_size;
		 tile += gj_grid_stride())
	{
		int64_t		tile_end = tile + blockDim.x < round_size ? tile + blockDim.x : round_size;
		int64_t		i = tile + threadIdx.x;

		if (threadIdx.x == 0)
		{
			tile_pos[0] = gj_seek_match_row(ranges.offsets, ranges.npos,
											first + (uint64_t) tile);
			tile_pos[1] = gj_seek_match_row(ranges.offsets, ranges.npos,
											first + (uint64_t) tile_end - 1) + 1;
		}
		__syncthreads();
		if (i < round_size)
		{
			uint64_t	match = first + (uint64_t) i;
			int64_t		p = tile_pos[0] +
				gj_seek_match_row(ranges.offsets + tile_pos[0],
								  tile_pos[1] - tile_pos[0], match);

			WriteMatch(&ranges, maps.maps, i, p,
					   (int64_t) ranges.lower[p] + (int64_t) (match - ranges.offsets[p]));
		}
		__syncthreads();
	}
}

/*
 * Write the round maps of the matches first .. first + round_size - 1 of
 * a counted chunk's ranges (device arrays; see GjSortedRanges)
 *
 * maps are the round's maps from gj_cuda_round_maps_reserve; each is
 * written when it is not NULL.  Queued on the stream, not waited for.
 */
GjStatus
gj_cuda_ranges_retrieve(GjCudaContext *ctx, const GjSortedRanges *ranges,
						uint64_t first, int64_t round_size,
						GjRowId *const maps[GJ_NUM_ROUND_MAPS], GjError *err)
{
	int			grid = gj_cuda_grid_size(ctx, round_size);
	RoundMaps	round_maps;

	memcpy(round_maps.maps, maps, sizeof(round_maps.maps));
	if (ranges->match_pos != NULL)
		key_ranges_unique_kernel<<<grid, GJ_BLOCK_SIZE, 0, ctx->stream>>>(
			*ranges, round_maps, first, round_size);
	else
		key_ranges_retrieve_kernel<<<grid, GJ_BLOCK_SIZE, 0, ctx->stream>>>(
			*ranges, round_maps, first, round_size);
	GJ_CUDA_TRY(err, cudaGetLastError());
	return GJ_OK;
}
