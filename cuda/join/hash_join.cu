/*-------------------------------------------------------------------------
 *
 * hash_join.cu
 *	  GPU non-partitioned hash join (NPHJ): build a bucket-sorted table on
 *	  the inner keys, then count and retrieve the matches of one outer
 *	  chunk at a time
 *
 * CPU twin: hash_join_cpu.c, the specification (same functions, same
 * order; its banner describes the table and the count/retrieve contract).
 * Both produce the very same arrays; here is how the GPU gets there.
 *
 * BUILD (one global, non-partitioned table (Wu et al. 2025, §3.1.3), built
 * by sorting rather than by atomic inserts)
 *
 *	  key_range_kernel		min and max of the non-NULL keys (context.cu,
 *							gj_cuda_key_range: warp shuffles, one atomicMin/
 *							atomicMax per warp), copied back to choose the
 *							layout: dense or hashed (common.h,
 *							gj_nphj_layout, the twin's very function)
 *	  nphj_assign_kernel	bucket of every inner row; NULL keys get the
 *							sentinel bucket nbuckets, which sorts last
 *	  cub::DeviceRadixSort	(bucket, row) pairs, on the bits that hold
 *							nbuckets, so the sentinel is included; LSD radix
 *							sort is stable, so rows stay ascending within a
 *							bucket, as the twin's counting sort leaves them
 *	  nphj_histogram_kernel	entries per bucket (warp-aggregated atomics)
 *	  cub::DeviceScan		exclusive sum of the histogram: bucket_start
 *	  nphj_gather_keys_kernel	entry_keys[e] = keys[entry_rows[e]]; hashed
 *							layout only: a dense bucket holds one key value,
 *							so the probe never compares keys
 *
 * Sorting replaces the open-addressing table of cuDF and Crystal: no slot
 * is ever "empty", so no key value has to be given up as a sentinel, and
 * the result does not depend on the order in which threads ran.
 *
 * PAYLOAD COLUMNS (materialize.cu; Wu et al. 2025, §3.1.3, §4.1)
 *
 * The stable bucket sort is the transform.  GFUR keeps the inner payload
 * columns as they came and gathers each round's values by inner row,
 * entry_rows[e]: one random access per match and column.  GFTR applies
 * the sort's permutation to every inner payload column once, after the
 * build (a gather by entry_rows into entry order: the permutation that a
 * CUB SortPairs of (bucket, value) per column would apply, in one pass
 * instead of one per radix digit), and gathers each round's values by
 * entry, e.  The matches of one outer row are neighbouring entries of one
 * bucket (all of the bucket, for dense keys), so a row with k matches
 * reads k neighbouring values where GFUR reads k random rows: GFTR pays
 * when matches per outer row are many (many-to-many joins, skewed keys),
 * or, for dense keys, when outer chunks arrive in key order.  A PK-FK
 * probe in random key order reads one random entry per row either way,
 * and GFTR only adds the transform (the match-ratio trade-off: Wu et al.
 * 2025, §4.1.4).  The outer side is probed in row order, so both gather its
 * payload by outer row, which ascends within a round: no outer transform
 * is needed ("random accesses only happen when materializing R's payload
 * data but not for S": Wu et al. 2025, §3.1.3).
 *
 * PROBE (the "double probe" (Rui 2020, §4.1.2.2): count pass, prefix
 * scan, write pass)
 *
 *	  nphj_count_kernel		one thread per outer row: the entries of its
 *							bucket with an equal key (dense: the bucket's
 *							size, or 0 outside [min, max])
 *	  cub::DeviceScan		exclusive sum into 64-bit offsets; one extra
 *							element, set to 0, comes out as the total
 *							(context.cu, gj_cuda_count_offsets)
 *	  nphj_retrieve_kernel	one thread per outer row whose matches meet the
 *							window [first, first + max_matches): it writes
 *							its k-th match's outer row, inner row and entry
 *							at offsets[row] + k - first (dense: entry
 *							bucket_start + k, found without a walk)
 *
 * The outer payload columns are uploaded only when the count found
 * matches.  Rui 2020 found a direct output buffer with atomics 20-25%
 * faster than the double probe, but its order depends on thread timing,
 * and the count is what bounds a round by max_matches.
 *
 * COSTS
 *
 * P is a side's payload bytes a row: the widths, plus one for each column
 * with NULL flags.  Device memory: the build peaks at about max(33, 20 +
 * P) bytes an inner row for GFUR and max(33, 20 + 2P) for GFTR (the keys,
 * bucket ids and rows twice for the sort, bucket_start, then the entry
 * keys; the payload is uploaded after the sort's scratch is freed, and a
 * GFTR build holds it twice while transforming), and keeps 20 + P hashed
 * or at most 12 + P dense (entry rows, bucket_start of up to 2 buckets a
 * row, the entry keys when hashed).  A chunk takes 17 + P bytes an outer
 * row, a round 8 bytes a match for the maps (12 for GFTR with row ids)
 * plus the P of both sides.  Work: one thread walks the whole bucket of
 * its outer row, so an outer row with m matches costs O(m) in one thread,
 * in every round that its matches touch (dense keys skip to the window).
 * Keys heavily duplicated on both sides (Zipf > 1) would want a warp per
 * heavy row, or the partitioned join (XXX, later work).
 *
 * Measured on an H200 (make -C cuda bench: 10M inner rows, 2 + 2 payload
 * columns of 4 and 8 bytes, 10M matches): build 1.2-2.5 ms (GFTR's
 * transform adds 0.6-0.8 ms), count 0.3-0.9 ms, materialize 0.8-1.7 ms
 * (GFTR 15-43% below GFUR, most for 10 matches an outer row), against
 * 26-48 ms of copies over the bus: the device work is the small part.
 *
 * IDENTIFICATION
 *	  cuda/join/hash_join.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <cub/cub.cuh>

#include "common.cuh"
#include "gpujoin_kernels.h"

/*
 * NPHJ's own device arrays, in its private state
 */
typedef enum NphjBufferId
{
	/* The table, kept from one build to the next */
	NPHJ_ENTRY_KEYS,			/* uint64_t[nentries], hashed layout only */
	NPHJ_ENTRY_ROWS,			/* GjRowId[inner rows]; nentries are used */
	NPHJ_BUCKET_START,			/* uint32_t[nbuckets + 1] */

	/* Scratch of the build, released when it returns */
	NPHJ_RANGE,					/* unsigned long long[2]: min, max key, for
								 * gj_cuda_key_range */
	NPHJ_BUCKET_IDS,			/* uint32_t[inner rows], sort keys */
	NPHJ_BUCKET_IDS_ALT,		/* uint32_t[inner rows], their double buffer */
	NPHJ_ROWS_ALT,				/* GjRowId[inner rows], double buffer of
								 * NPHJ_ENTRY_ROWS */

	/* The counted chunk, kept for retrieve */
	NPHJ_OFFSETS,				/* uint64_t[outer rows + 1] */

	NPHJ_NUM_BUFFERS
} NphjBufferId;

/*
 * NPHJ's state (ctx->variant_state)
 *
 *	layout		the table's layout (common.h); valid when nentries > 0
 *	nentries	inner rows with a non-NULL key; 0: no table, nothing matches
 *	chunk_nulls	the counted chunk came with NULL flags (a left join's
 *				retrieve reads them)
 *	buffers		see NphjBufferId
 */
typedef struct NphjState
{
	GjNphjLayout layout;
	int64_t		nentries;
	bool		chunk_nulls;	/* the counted chunk's keys had NULL flags
								 * (GJ_BUFFER_OUTER_NULLS holds them) */
	GjDeviceBuffer buffers[NPHJ_NUM_BUFFERS];
} NphjState;

/* A buffer of the state, typed */
#define NPHJ_BUFFER(state, id, type)	((type *) (state)->buffers[(id)].ptr)

/* The table as the probe kernels see it; passed by value */
typedef struct GjDeviceTable
{
	const uint64_t *entry_keys; /* NULL when dense */
	const GjRowId *entry_rows;
	const uint32_t *bucket_start;
	GjNphjLayout layout;
} GjDeviceTable;

/* What a buffer holds, for error messages */
static const char *
NphjBufferName(NphjBufferId id)
{
	switch (id)
	{
		case NPHJ_ENTRY_KEYS:
			return "the hash table's keys";
		case NPHJ_ENTRY_ROWS:
			return "the hash table's rows";
		case NPHJ_BUCKET_START:
			return "the hash table's buckets";
		case NPHJ_RANGE:
			return "the inner key range";
		case NPHJ_BUCKET_IDS:
		case NPHJ_BUCKET_IDS_ALT:
			return "the inner rows' buckets";
		case NPHJ_ROWS_ALT:
			return "the inner rows being sorted";
		case NPHJ_OFFSETS:
			return "the outer chunk's match offsets";
		case NPHJ_NUM_BUFFERS:
			break;
	}
	return "a hash join buffer";
}

/* Make buffer id of the state hold bytes bytes (gj_cuda_device_reserve) */
static GjStatus
NphjReserve(GjCudaContext *ctx, NphjState *state, NphjBufferId id,
			size_t bytes, GjError *err)
{
	return gj_cuda_device_reserve(ctx, &state->buffers[id], bytes,
								  NphjBufferName(id), err);
}

static void
NphjRelease(GjCudaContext *ctx, NphjState *state, NphjBufferId id)
{
	gj_cuda_device_release(ctx, &state->buffers[id]);
}

/* Bits a radix sort needs to order bucket ids up to the sentinel nbuckets */
static int
SortBits(uint32_t nbuckets)
{
	int			bits = 1;

	while (bits < 32 && ((uint64_t) 1 << bits) <= nbuckets)
		bits++;
	return bits;
}

/*
 * Bucket of every inner row, and the row numbers to sort along with them
 *
 * Every non-NULL inner key lies within the layout's range, so a dense
 * bucket always exists.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
nphj_assign_kernel(const uint64_t *__restrict__ d_keys,
				   const uint8_t *__restrict__ d_nulls, int64_t nrows,
				   const GjNphjLayout layout,
				   uint32_t *__restrict__ d_bucket_ids,
				   GjRowId *__restrict__ d_rows)
{
	for (int64_t row = gj_thread_index(); row < nrows; row += gj_grid_stride())
	{
		uint32_t	bucket = layout.nbuckets;	/* NULL: the sentinel */

		if (!gj_flag_set(d_nulls, row))
			(void) gj_nphj_bucket(&layout, d_keys[row], &bucket);
		d_bucket_ids[row] = bucket;
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
nphj_histogram_kernel(const uint32_t *__restrict__ d_bucket_ids,
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
nphj_gather_keys_kernel(const uint64_t *__restrict__ d_keys,
						const GjRowId *__restrict__ d_entry_rows,
						int64_t nentries, uint64_t *__restrict__ d_entry_keys)
{
	for (int64_t e = gj_thread_index(); e < nentries; e += gj_grid_stride())
		d_entry_keys[e] = d_keys[d_entry_rows[e]];
}

/* The body of the NPHJ build, for a non-empty inner side */
static GjStatus
BuildTable(GjCudaContext *ctx, NphjState *state, const GjBatch *inner,
		   GjError *err)
{
	int64_t		nrows = inner->nrows;
	int			grid = gj_cuda_grid_size(ctx, nrows);
	const uint64_t *d_keys;
	const uint8_t *d_nulls;
	GjNphjLayout layout;
	bool		has_keys = false;
	uint64_t	min_key = 0;
	uint64_t	max_key = 0;
	uint32_t	nbuckets;
	int			sort_bits;
	uint32_t   *d_bucket_start;
	uint32_t	nentries = 0;
	size_t		temp_bytes = 0;

	GJ_TRY(gj_cuda_upload_keys(ctx, GJ_SIDE_INNER, inner, &d_keys, &d_nulls, err));

	/* 1. The layout, from the range of the keys; nothing to build without keys */
	GJ_TRY(NphjReserve(ctx, state, NPHJ_RANGE, 2 * sizeof(unsigned long long), err));
	GJ_TRY(gj_cuda_key_range(ctx, d_keys, d_nulls, nrows,
							 NPHJ_BUFFER(state, NPHJ_RANGE, unsigned long long),
							 &has_keys, &min_key, &max_key, err));
	if (!has_keys)
		return GJ_OK;
	gj_nphj_layout(nrows, min_key, max_key, &layout);
	nbuckets = layout.nbuckets;
	sort_bits = SortBits(nbuckets);

	GJ_TRY(NphjReserve(ctx, state, NPHJ_BUCKET_IDS, (size_t) nrows * sizeof(uint32_t), err));
	GJ_TRY(NphjReserve(ctx, state, NPHJ_BUCKET_IDS_ALT, (size_t) nrows * sizeof(uint32_t), err));
	GJ_TRY(NphjReserve(ctx, state, NPHJ_ENTRY_ROWS, (size_t) nrows * sizeof(GjRowId), err));
	GJ_TRY(NphjReserve(ctx, state, NPHJ_ROWS_ALT, (size_t) nrows * sizeof(GjRowId), err));
	GJ_TRY(NphjReserve(ctx, state, NPHJ_BUCKET_START,
					   ((size_t) nbuckets + 1) * sizeof(uint32_t), err));

	/* 2. The bucket of every row */
	nphj_assign_kernel<<<grid, GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		d_keys, d_nulls, nrows, layout,
		NPHJ_BUFFER(state, NPHJ_BUCKET_IDS, uint32_t),
		NPHJ_BUFFER(state, NPHJ_ENTRY_ROWS, GjRowId));
	GJ_CUDA_TRY(err, cudaGetLastError());

	/*
	 * 3. Stable sort of (bucket, row) by bucket.  The DoubleBuffer form
	 * needs O(1) temporary storage instead of a copy of the pairs; the
	 * result lands in either buffer of each pair, and the row buffer that
	 * holds it becomes NPHJ_ENTRY_ROWS.
	 */
	{
		cub::DoubleBuffer<uint32_t> sort_ids(NPHJ_BUFFER(state, NPHJ_BUCKET_IDS, uint32_t),
											 NPHJ_BUFFER(state, NPHJ_BUCKET_IDS_ALT, uint32_t));
		cub::DoubleBuffer<GjRowId> sort_rows(NPHJ_BUFFER(state, NPHJ_ENTRY_ROWS, GjRowId),
											 NPHJ_BUFFER(state, NPHJ_ROWS_ALT, GjRowId));

		GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(NULL, temp_bytes,
														 sort_ids, sort_rows,
														 nrows, 0, sort_bits,
														 ctx->stream));
		GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_CUB_TEMP, temp_bytes, err));
		GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(GJ_BUFFER(ctx, GJ_BUFFER_CUB_TEMP, void),
														 temp_bytes,
														 sort_ids, sort_rows,
														 nrows, 0, sort_bits,
														 ctx->stream));
		if (sort_rows.selector != 0)
		{
			GjDeviceBuffer sorted = state->buffers[NPHJ_ROWS_ALT];

			state->buffers[NPHJ_ROWS_ALT] = state->buffers[NPHJ_ENTRY_ROWS];
			state->buffers[NPHJ_ENTRY_ROWS] = sorted;
		}

		/* 4. Histogram of the buckets, then bucket_start by exclusive sum */
		d_bucket_start = NPHJ_BUFFER(state, NPHJ_BUCKET_START, uint32_t);
		GJ_CUDA_TRY(err, cudaMemsetAsync(d_bucket_start, 0,
										 ((size_t) nbuckets + 1) * sizeof(uint32_t),
										 ctx->stream));
		nphj_histogram_kernel<<<grid, GJ_BLOCK_SIZE, 0, ctx->stream>>>(
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

	/* The sort's scratch is done with (cudaFree waits for the device) */
	NphjRelease(ctx, state, NPHJ_BUCKET_IDS);
	NphjRelease(ctx, state, NPHJ_BUCKET_IDS_ALT);
	NphjRelease(ctx, state, NPHJ_ROWS_ALT);

	/* 5. The keys of the entries, in entry order; a dense table needs none */
	if (!layout.dense)
	{
		GJ_TRY(NphjReserve(ctx, state, NPHJ_ENTRY_KEYS,
						   (size_t) nentries * sizeof(uint64_t), err));
		nphj_gather_keys_kernel<<<gj_cuda_grid_size(ctx, nentries), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
			d_keys, NPHJ_BUFFER(state, NPHJ_ENTRY_ROWS, GjRowId), nentries,
			NPHJ_BUFFER(state, NPHJ_ENTRY_KEYS, uint64_t));
		GJ_CUDA_TRY(err, cudaGetLastError());
	}
	else
		NphjRelease(ctx, state, NPHJ_ENTRY_KEYS);
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_KEYS);
	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_NULLS);

	/*
	 * 6. The payload columns: GFUR keeps them in row order; GFTR permutes
	 * them into entry order, the sort's transform, and drops the originals
	 * (NphjBuild); the build waits for the transform
	 */
	GJ_TRY(gj_cuda_columns_load(ctx, GJ_SIDE_INNER, inner,
								NPHJ_BUFFER(state, NPHJ_ENTRY_ROWS, GjRowId),
								nentries, err));
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));

	state->layout = layout;
	state->nentries = nentries;
	return GJ_OK;
}

/*
 * Build the table on the inner keys (GjCudaVariant.build)
 *
 * Replaces the table of an earlier call.  The build's scratch buffers
 * (the inner keys, the bucket ids and the sort's second buffers, and for
 * GFTR the untransformed payload) are released before returning, also
 * when it fails, so the probe has that device memory; the table itself
 * stays.  An inner side with no non-NULL key builds no table.
 */
static GjStatus
NphjBuild(GjCudaContext *ctx, const GjBatch *inner, GjError *err)
{
	NphjState  *state = (NphjState *) gj_cuda_variant_state(ctx, sizeof(NphjState),
														   "a hash join", err);
	GjStatus	status = GJ_OK;

	if (state == NULL)
		return GJ_ERROR_HOST_MEMORY;
	memset(&state->layout, 0, sizeof(state->layout));
	state->nentries = 0;

	if (inner->nrows > 0)
		status = BuildTable(ctx, state, inner, err);

	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_KEYS);
	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_NULLS);
	NphjRelease(ctx, state, NPHJ_RANGE);
	NphjRelease(ctx, state, NPHJ_BUCKET_IDS);
	NphjRelease(ctx, state, NPHJ_BUCKET_IDS_ALT);
	NphjRelease(ctx, state, NPHJ_ROWS_ALT);
	if (ctx->spec.materialize == GJ_MATERIALIZE_GFTR)
		gj_cuda_columns_release(ctx, GJ_COLUMNS_INNER);

	if (status != GJ_OK)
		state->nentries = 0;
	else
		gj_nphj_describe(&state->layout, state->nentries, ctx->stats.detail,
						 sizeof(ctx->stats.detail));
	return status;
}

/* No table to probe: none was built, or it has no entry */
static bool
NoTable(const NphjState *state)
{
	return state == NULL || state->nentries == 0;
}

/* The table of a state, for the probe kernels; zeros where NoTable */
static GjDeviceTable
CurrentTable(const NphjState *state)
{
	GjDeviceTable table;

	if (NoTable(state))
	{
		memset(&table, 0, sizeof(table));
		return table;
	}

	table.entry_keys = state->layout.dense ? NULL :
		NPHJ_BUFFER(state, NPHJ_ENTRY_KEYS, const uint64_t);
	table.entry_rows = NPHJ_BUFFER(state, NPHJ_ENTRY_ROWS, const GjRowId);
	table.bucket_start = NPHJ_BUFFER(state, NPHJ_BUCKET_START, const uint32_t);
	table.layout = state->layout;
	return table;
}

/* Number of entries of the table whose key equals key */
static __device__ __forceinline__ uint64_t
CountKeyMatches(const GjDeviceTable *table, uint64_t key)
{
	uint32_t	bucket;
	uint32_t	end;
	uint64_t	count = 0;

	if (!gj_nphj_bucket(&table->layout, key, &bucket))
		return 0;
	end = table->bucket_start[bucket + 1];
	if (table->layout.dense)
		return end - table->bucket_start[bucket];
	for (uint32_t e = table->bucket_start[bucket]; e < end; e++)
	{
		if (table->entry_keys[e] == key)
			count++;
	}
	return count;
}

/*
 * Matches of every outer row (as outer_match counts them), into
 * d_counts[0 .. nrows); d_counts[nrows] is set to 0, so that the
 * exclusive sum over nrows + 1 elements ends in the total.  no_table: an
 * anti or left join's empty inner side, nothing to look up.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
nphj_count_kernel(const GjDeviceTable table, bool no_table, uint8_t outer_match,
				  const uint64_t *__restrict__ d_keys,
				  const uint8_t *__restrict__ d_nulls, int64_t nrows,
				  uint64_t *__restrict__ d_counts)
{
	for (int64_t row = gj_thread_index(); row < nrows; row += gj_grid_stride())
	{
		uint64_t	count = 0;

		if (!no_table && !gj_flag_set(d_nulls, row))
			count = CountKeyMatches(&table, d_keys[row]);
		d_counts[row] = gj_outer_match_count(outer_match, count);
	}
	if (gj_thread_index() == 0)
		d_counts[nrows] = 0;
}

/*
 * The body of the NPHJ count, for a chunk that can have matches: table is
 * the state that holds the table (the context's own, or the one it
 * shares), state the context's own, which keeps the chunk
 */
static GjStatus
CountChunk(GjCudaContext *ctx, const NphjState *table, NphjState *state,
		   const GjBatch *outer, uint64_t *nmatches, GjError *err)
{
	int64_t		nrows = outer->nrows;
	const uint64_t *d_keys;
	const uint8_t *d_nulls;
	uint64_t   *d_offsets;
	uint64_t	total = 0;

	GJ_TRY(gj_cuda_upload_keys(ctx, GJ_SIDE_OUTER, outer, &d_keys, &d_nulls, err));
	GJ_TRY(NphjReserve(ctx, state, NPHJ_OFFSETS,
					   ((size_t) nrows + 1) * sizeof(uint64_t), err));
	d_offsets = NPHJ_BUFFER(state, NPHJ_OFFSETS, uint64_t);

	nphj_count_kernel<<<gj_cuda_grid_size(ctx, nrows), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		CurrentTable(table), NoTable(table), ctx->spec.outer_match, d_keys, d_nulls, nrows,
		d_offsets);
	state->chunk_nulls = d_nulls != NULL;
	GJ_CUDA_TRY(err, cudaGetLastError());
	GJ_TRY(gj_cuda_count_offsets(ctx, d_offsets, nrows, &total, err));

	/* The payload columns only travel when some row has a match */
	if (total > 0 && ctx->spec.outer_ncolumns > 0)
		GJ_TRY(gj_cuda_columns_upload(ctx, GJ_COLUMNS_OUTER, outer, err));
	*nmatches = total;
	return GJ_OK;
}

/*
 * Count the matches of one outer chunk (GjCudaVariant.count)
 *
 * Keeps the chunk's keys, match offsets and payload columns on the device
 * for retrieve.
 */
static GjStatus
NphjCount(GjCudaContext *ctx, const GjBatch *outer, uint64_t *nmatches,
		  GjError *err)
{
	const NphjState *table = (const NphjState *) GJ_CUDA_BUILD(ctx)->variant_state;
	NphjState  *state;

	*nmatches = 0;
	/* Nothing can match: no device work, retrieve returns 0 (but an anti
	 * or left join's rows are also those that match nothing) */
	if (outer->nrows == 0 || (NoTable(table) && !gj_outer_match_unmatched(ctx->spec.outer_match)))
		return GJ_OK;
	state = (NphjState *) gj_cuda_variant_state(ctx, sizeof(NphjState),
												"a hash join", err);
	if (state == NULL)
		return GJ_ERROR_HOST_MEMORY;
	return CountChunk(ctx, table, state, outer, nmatches, err);
}

/* Record match number match - window_begin: its outer row, inner row, entry */
static __device__ __forceinline__ void
WriteMatch(const GjDeviceTable *table, uint64_t slot, int64_t row, uint32_t e,
		   GjRowId *d_outer_rows, GjRowId *d_inner_rows, GjRowId *d_inner_pos)
{
	if (d_outer_rows != NULL)
		d_outer_rows[slot] = (GjRowId) row;
	if (d_inner_rows != NULL)
		d_inner_rows[slot] = table->entry_rows[e];
	if (d_inner_pos != NULL)
		d_inner_pos[slot] = (GjRowId) e;
}

/* Record a row with no match (anti, left) as match number slot: no inner row */
static __device__ __forceinline__ void
WriteNoMatch(uint64_t slot, int64_t row, GjRowId *d_outer_rows, GjRowId *d_inner_rows,
			 GjRowId *d_inner_pos)
{
	if (d_outer_rows != NULL)
		d_outer_rows[slot] = (GjRowId) row;
	if (d_inner_rows != NULL)
		d_inner_rows[slot] = GJ_NO_ROW;
	if (d_inner_pos != NULL)
		d_inner_pos[slot] = GJ_NO_ROW;
}

/*
 * Write the matches numbered window_begin .. window_end - 1
 *
 * Thread 0 of each block finds the first outer row of the window by
 * binary search on the offsets; the block's threads then stride over the
 * rows from there, and stop at the first row whose matches start at or
 * beyond the window's end (offsets never decrease).  A row of a hashed
 * table walks its bucket from the start and numbers the equal keys it
 * meets, so the numbering is the one count counted; in a dense table
 * every entry of the bucket matches, so match k is entry start + k.
 * A row writes no more than its count (a semi join's row: its first
 * match); an anti join's row writes itself with no inner row, and so does
 * a left join's row that has no match (a NULL key, d_nulls; no table,
 * no_table; or none in its bucket).
 * Each of the three outputs is written when its pointer is not NULL.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
nphj_retrieve_kernel(const GjDeviceTable table, bool no_table, uint8_t outer_match,
					 const uint8_t *__restrict__ d_nulls,
					 const uint64_t *__restrict__ d_keys,
					 const uint64_t *__restrict__ d_offsets, int64_t nrows,
					 uint64_t window_begin, uint64_t window_end,
					 GjRowId *__restrict__ d_outer_rows,
					 GjRowId *__restrict__ d_inner_rows,
					 GjRowId *__restrict__ d_inner_pos)
{
	__shared__ int64_t first_row;

	if (threadIdx.x == 0)
		first_row = gj_seek_match_row(d_offsets, nrows, window_begin);
	__syncthreads();

	for (int64_t row = first_row + gj_thread_index(); row < nrows;
		 row += gj_grid_stride())
	{
		uint64_t	match = d_offsets[row];
		uint64_t	row_end = d_offsets[row + 1];
		uint64_t	key;
		uint32_t	bucket = 0;
		uint32_t	e;
		uint32_t	end;

		if (match >= window_end)
			break;
		if (match == row_end)
			continue;			/* no matches (or a NULL key) */
		key = d_keys[row];
		if (outer_match == GJ_OUTER_NONE ||
			(outer_match == GJ_OUTER_LEFT &&
			 (no_table || gj_flag_set(d_nulls, row) || CountKeyMatches(&table, key) == 0)))
		{
			WriteNoMatch(match - window_begin, row, d_outer_rows, d_inner_rows, d_inner_pos);
			continue;
		}
		if (row_end > window_end)
			row_end = window_end;

		(void) gj_nphj_bucket(&table.layout, key, &bucket);
		e = table.bucket_start[bucket];
		end = table.bucket_start[bucket + 1];

		if (table.layout.dense)
		{
			if (match < window_begin)
			{
				e += (uint32_t) (window_begin - match);
				match = window_begin;
			}
			for (; e < end && match < row_end; e++, match++)
				WriteMatch(&table, match - window_begin, row, e,
						   d_outer_rows, d_inner_rows, d_inner_pos);
			continue;
		}

		for (; e < end && match < row_end; e++)
		{
			if (table.entry_keys[e] != key)
				continue;
			if (match >= window_begin)
				WriteMatch(&table, match - window_begin, row, e,
						   d_outer_rows, d_inner_rows, d_inner_pos);
			match++;
		}
	}
}

/*
 * Write the round maps of the matches first .. first + round_size - 1
 * (GjCudaVariant.retrieve)
 *
 * The outer payload comes from the chunk's columns by outer row; the inner
 * payload from the untransformed columns by inner row (GFUR) or from the
 * transformed ones by entry (GFTR): the outer side is not transformed
 * (gj_round_plan).  Each map is written only when the round needs it.
 */
static GjStatus
NphjRetrieve(GjCudaContext *ctx, uint64_t first, int64_t round_size,
			 GjRoundSources *sources, GjError *err)
{
	const NphjState *table = (const NphjState *) GJ_CUDA_BUILD(ctx)->variant_state;
	NphjState  *state = (NphjState *) ctx->variant_state;
	int64_t		rows_to_cover = ctx->outer_rows < round_size ? ctx->outer_rows : round_size;
	GjRowId    *maps[GJ_NUM_ROUND_MAPS];

	GJ_TRY(gj_cuda_round_maps_reserve(ctx, false, round_size, sources, maps, err));

	nphj_retrieve_kernel<<<gj_cuda_grid_size(ctx, rows_to_cover), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		CurrentTable(table), NoTable(table), ctx->spec.outer_match,
		state->chunk_nulls ? GJ_BUFFER(ctx, GJ_BUFFER_OUTER_NULLS, uint8_t) : NULL,
		GJ_BUFFER(ctx, GJ_BUFFER_OUTER_KEYS, uint64_t),
		NPHJ_BUFFER(state, NPHJ_OFFSETS, uint64_t), ctx->outer_rows,
		first, first + (uint64_t) round_size, maps[GJ_ROUND_OUTER_ROWS],
		maps[GJ_ROUND_INNER_ROWS], maps[GJ_ROUND_INNER_POS]);
	GJ_CUDA_TRY(err, cudaGetLastError());
	return GJ_OK;
}

/* Free the state and its device arrays (GjCudaVariant.destroy_state) */
static void
NphjDestroyState(GjCudaContext *ctx)
{
	NphjState  *state = (NphjState *) ctx->variant_state;

	if (state == NULL)
		return;
	for (int id = 0; id < NPHJ_NUM_BUFFERS; id++)
		NphjRelease(ctx, state, (NphjBufferId) id);
	free(state);
	ctx->variant_state = NULL;
}

const GjCudaVariant gj_cuda_nphj = {
	"NPHJ",						/* name */
	NphjBuild,
	NphjCount,
	NphjRetrieve,
	NphjDestroyState,
};
