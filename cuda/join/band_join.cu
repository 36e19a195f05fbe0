/*-------------------------------------------------------------------------
 *
 * band_join.cu
 *	  GPU band (range) join (BAND): sort the inner keys once, then search
 *	  both bounds of every outer row's range, and hand out the matches by
 *	  outer row
 *
 * CPU twin: band_join_cpu.c, the specification (same functions, same
 * order; its banner describes what matches, the order of the matches and
 * the count/retrieve contract).  Both produce the very same arrays; here
 * is how the GPU gets there.
 *
 * BUILD (the inner side; the very sort of SMJ's build)
 *
 *	  key_range_kernel		min and max of the non-NULL keys (context.cu,
 *							gj_cuda_key_range), copied back: the sort's
 *							bits, gj_smj_sort_bits (common.h)
 *	  gj_cuda_sort_pairs	the (key, row) pairs of the rows whose key is
 *							not NULL, selected in row order and sorted by a
 *							stable radix sort on those bits (key_sort.cu,
 *							shared with SMJ)
 *
 * COUNT (one outer chunk, in row order: the outer side is never sorted)
 *
 *	  band_bounds_kernel	one thread per outer row: the lower bound of
 *							keys[i] and the upper bound of keys_hi[i] among
 *							the sorted inner keys, by binary search (the
 *							second from the first on), and the count, upper
 *							minus lower; 0 for a row flagged NULL or with an
 *							empty range
 *	  cub::DeviceScan		exclusive sum of the counts into 64-bit offsets;
 *							one extra element, set to 0, comes out as the
 *							total (context.cu, gj_cuda_count_offsets)
 *
 * A thread's searches read O(log m) sorted keys; neighbouring outer rows
 * of a chunk with clustered ranges walk nearly the same path, and the top
 * levels of every search hit in cache.  Nothing is sized by the total,
 * which passes 2^32 easily (10^5 outer ranges that each cover 10^5 inner
 * keys: 10^10 matches).
 *
 * RETRIEVE (the matches first .. first + max_matches - 1)
 *
 * Match m of outer row i is sorted inner position lower[i] + (m -
 * offsets[i]): ranges of sorted pairs, written by gj_cuda_ranges_retrieve
 * (key_sort.cu, shared with SMJ): one thread per match, which finds its
 * row by binary search on the offsets, first between the rows that hold
 * the ends of its block's matches.  So a round touches only the rows
 * whose matches meet it, and a skewed chunk (one range covering the whole
 * inner side, the others tiny) spreads its big row over the whole grid:
 * each round costs O(max_matches) threads whatever the shape, and the
 * 10^10 matches above come out in rounds of max_matches like any others.
 *
 * PAYLOAD COLUMNS (materialize.cu; Wu et al. 2025, §3.1.1, §4.1)
 *
 * GFUR gathers each round's inner values by inner row, from the columns
 * as they came: random reads.  GFTR permutes the inner columns into sorted
 * order once, at build, by the sort's rows (gj_cuda_columns_load, as SMJ
 * does), and gathers by sorted position: a row's matches are neighbouring
 * positions, so a round reads runs of neighbours, one run per outer row.
 * GFTR pays when the ranges are wide (many matches an outer row), which is
 * when a band join's output is large.  The outer side is taken in row
 * order: both gather its values by outer row, which ascends within a
 * round, so it is never transformed.
 *
 * COSTS
 *
 * P is a side's payload bytes a row (the widths, plus one for each column
 * with NULL flags).  Build: about 33 bytes an inner row at its peak (keys
 * and NULL flags uploaded, the rows, the keys and their double buffers),
 * then the sorted keys and rows, 12 bytes an inner row, plus P (GFTR: 2P
 * while transforming).  A chunk: 29 bytes an outer row (both bounds and
 * the NULL flags uploaded, the lower bounds, the offsets) plus P, kept
 * from chunk to chunk (grow-only).  A round: 8 bytes a match for the maps
 * (12 for GFTR with row ids) plus the round's values.  Work: one radix sort
 * of the inner side, O(log m) a row to count, O(log n) a match to
 * retrieve.
 *
 * IDENTIFICATION
 *	  cuda/join/band_join.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "gpujoin_kernels.h"

/*
 * BAND's own device arrays, in its private state
 */
typedef enum BandBufferId
{
	/* The sorted inner side, kept from one build to the next */
	BAND_INNER_KEYS,			/* uint64_t[nkeys], sorted */
	BAND_INNER_ROWS,			/* GjRowId[inner rows]; nkeys are used */

	/* The counted chunk, kept for retrieve (grow-only, reused) */
	BAND_OUTER_HI,				/* uint64_t[outer rows], the upper bounds */
	BAND_LOWER,					/* GjRowId[outer rows], lower bounds */
	BAND_OFFSETS,				/* uint64_t[outer rows + 1] */

	/* Scratch of the sort: the double buffers of the pairs */
	BAND_KEYS_ALT,				/* uint64_t[inner rows] */
	BAND_ROWS_ALT,				/* GjRowId[inner rows] */

	/* Scratch of the build: min and max key, rows selected */
	BAND_SCALARS,				/* unsigned long long[3] */

	BAND_NUM_BUFFERS
} BandBufferId;

/* The words of BAND_SCALARS; MIN and MAX are gj_cuda_key_range's two */
#define BAND_SCALAR_MIN			0
#define BAND_SCALAR_SELECTED	2
#define BAND_NUM_SCALARS		3

/*
 * BAND's state (ctx->variant_state)
 *
 *	nkeys		inner rows with a non-NULL key; 0: nothing matches
 *	sort_bits	gj_smj_sort_bits of their smallest and largest key
 *	buffers		see BandBufferId
 */
typedef struct BandState
{
	int64_t		nkeys;
	int			sort_bits;
	GjDeviceBuffer buffers[BAND_NUM_BUFFERS];
} BandState;

/* A buffer of the state, typed */
#define BAND_BUFFER(state, id, type)	((type *) (state)->buffers[(id)].ptr)

/* What a buffer holds, for error messages */
static const char *
BandBufferName(BandBufferId id)
{
	switch (id)
	{
		case BAND_INNER_KEYS:
			return "the sorted inner keys";
		case BAND_INNER_ROWS:
			return "the sorted inner rows";
		case BAND_OUTER_HI:
			return "the outer chunk's upper bounds";
		case BAND_LOWER:
			return "the outer chunk's lower bounds";
		case BAND_OFFSETS:
			return "the outer chunk's match offsets";
		case BAND_KEYS_ALT:
			return "the keys being sorted";
		case BAND_ROWS_ALT:
			return "the rows being sorted";
		case BAND_SCALARS:
			return "the band join's counters";
		case BAND_NUM_BUFFERS:
			break;
	}
	return "a band join buffer";
}

/* Make buffer id of the state hold bytes bytes (gj_cuda_device_reserve) */
static GjStatus
BandReserve(GjCudaContext *ctx, BandState *state, BandBufferId id,
			size_t bytes, GjError *err)
{
	return gj_cuda_device_reserve(ctx, &state->buffers[id], bytes,
								  BandBufferName(id), err);
}

static void
BandRelease(GjCudaContext *ctx, BandState *state, BandBufferId id)
{
	gj_cuda_device_release(ctx, &state->buffers[id]);
}

/* The body of the BAND build, for a non-empty inner side */
static GjStatus
BuildSorted(GjCudaContext *ctx, BandState *state, const GjBatch *inner,
			GjError *err)
{
	unsigned long long *d_scalars = BAND_BUFFER(state, BAND_SCALARS, unsigned long long);
	const uint64_t *d_keys;
	const uint8_t *d_nulls;
	GjSortBuffers buffers;
	bool		has_keys = false;
	uint64_t	min_key = 0;
	uint64_t	max_key = 0;
	int64_t		nkeys = 0;
	int			sort_bits;

	GJ_TRY(gj_cuda_upload_keys(ctx, GJ_SIDE_INNER, inner, &d_keys, &d_nulls, err));

	/* 1. The range of the keys; nothing to build without keys */
	GJ_TRY(gj_cuda_key_range(ctx, d_keys, d_nulls, inner->nrows,
							 d_scalars + BAND_SCALAR_MIN, &has_keys, &min_key,
							 &max_key, err));
	if (!has_keys)
		return GJ_OK;
	sort_bits = gj_smj_sort_bits(min_key, max_key);

	/* 2. The pairs of the non-NULL rows, sorted */
	buffers.keys = &state->buffers[BAND_INNER_KEYS];
	buffers.rows = &state->buffers[BAND_INNER_ROWS];
	buffers.keys_alt = &state->buffers[BAND_KEYS_ALT];
	buffers.rows_alt = &state->buffers[BAND_ROWS_ALT];
	buffers.d_count = (int64_t *) (d_scalars + BAND_SCALAR_SELECTED);
	GJ_TRY(gj_cuda_sort_pairs(ctx, GJ_SIDE_INNER, d_keys, d_nulls,
							  inner->nrows, min_key, max_key, sort_bits,
							  &buffers, &nkeys, err));

	/* The sort's scratch and the uploaded keys are done with */
	BandRelease(ctx, state, BAND_KEYS_ALT);
	BandRelease(ctx, state, BAND_ROWS_ALT);
	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_KEYS);
	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_NULLS);

	/*
	 * 3. The payload columns: GFUR keeps them in row order; GFTR permutes
	 * them into sorted order, the sort's transform, and drops the originals
	 * (BandBuild); the build waits for the transform
	 */
	GJ_TRY(gj_cuda_columns_load(ctx, GJ_SIDE_INNER, inner,
								BAND_BUFFER(state, BAND_INNER_ROWS, GjRowId),
								nkeys, err));
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));

	state->sort_bits = sort_bits;
	state->nkeys = nkeys;
	return GJ_OK;
}

/*
 * Sort the inner side (GjCudaVariant.build)
 *
 * Replaces the sorted side of an earlier call.  The build's scratch
 * buffers (the uploaded keys, the sort's double buffers and counters, and
 * for GFTR the untransformed payload) are released before returning, also
 * when it fails, so the probe has that device memory; the sorted side
 * stays.  An inner side with no non-NULL key sorts nothing.
 */
static GjStatus
BandBuild(GjCudaContext *ctx, const GjBatch *inner, GjError *err)
{
	BandState  *state = (BandState *) gj_cuda_variant_state(ctx, sizeof(BandState),
															"a band join", err);
	GjStatus	status = GJ_OK;

	if (state == NULL)
		return GJ_ERROR_HOST_MEMORY;
	state->nkeys = 0;
	state->sort_bits = 0;

	if (inner->nrows > 0)
	{
		status = BandReserve(ctx, state, BAND_SCALARS,
							 BAND_NUM_SCALARS * sizeof(unsigned long long), err);
		if (status == GJ_OK)
			status = BuildSorted(ctx, state, inner, err);
	}

	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_KEYS);
	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_NULLS);
	BandRelease(ctx, state, BAND_KEYS_ALT);
	BandRelease(ctx, state, BAND_ROWS_ALT);
	BandRelease(ctx, state, BAND_SCALARS);
	if (ctx->spec.materialize == GJ_MATERIALIZE_GFTR)
		gj_cuda_columns_release(ctx, GJ_COLUMNS_INNER);

	if (status != GJ_OK)
		state->nkeys = 0;
	else
		gj_smj_describe(state->nkeys, state->sort_bits, false,
						ctx->stats.detail, sizeof(ctx->stats.detail));
	return status;
}

/*
 * The bounds of every outer row: d_lower[i], and the count into
 * d_counts[i]; d_counts[nrows] = 0, so that the exclusive sum over nrows +
 * 1 elements ends in the total
 *
 * One thread per row, two binary searches over the sorted inner keys (the
 * upper bound from the lower one on).  A row flagged NULL, or whose range
 * is empty, counts 0.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
band_bounds_kernel(const uint64_t *__restrict__ d_inner_keys, int64_t nkeys,
				   const uint64_t *__restrict__ d_lo,
				   const uint64_t *__restrict__ d_hi,
				   const uint8_t *__restrict__ d_nulls, int64_t nrows,
				   GjRowId *__restrict__ d_lower,
				   uint64_t *__restrict__ d_counts)
{
	for (int64_t row = gj_thread_index(); row < nrows; row += gj_grid_stride())
	{
		uint64_t	lo = d_lo[row];
		uint64_t	hi = d_hi[row];
		int64_t		first = 0;
		int64_t		last = 0;

		if (!gj_flag_set(d_nulls, row) && lo <= hi)
		{
			first = gj_smj_bound(d_inner_keys, 0, nkeys, lo, false);
			last = gj_smj_bound(d_inner_keys, first, nkeys, hi, true);
		}
		d_lower[row] = (GjRowId) first;
		d_counts[row] = (uint64_t) (last - first);
	}
	if (gj_thread_index() == 0)
		d_counts[nrows] = 0;
}

/* The body of the BAND count, for a chunk that can have matches */
static GjStatus
CountChunk(GjCudaContext *ctx, BandState *state, const GjBatch *outer,
		   uint64_t *nmatches, GjError *err)
{
	int64_t		nrows = outer->nrows;
	const uint64_t *d_keys;
	const uint8_t *d_nulls;
	uint64_t   *d_offsets;
	uint64_t	total = 0;

	/* 1. Both bounds of every row, and its NULL flag */
	GJ_TRY(gj_cuda_upload_keys(ctx, GJ_SIDE_OUTER, outer, &d_keys, &d_nulls, err));
	GJ_TRY(BandReserve(ctx, state, BAND_OUTER_HI, (size_t) nrows * sizeof(uint64_t), err));
	GJ_TRY(gj_cuda_copy_to_device(ctx, state->buffers[BAND_OUTER_HI].ptr,
								  outer->keys_hi, (size_t) nrows * sizeof(uint64_t),
								  err));

	/* 2. The bounds and counts of each row; 3. offsets by prefix sum */
	GJ_TRY(BandReserve(ctx, state, BAND_LOWER, (size_t) nrows * sizeof(GjRowId), err));
	GJ_TRY(BandReserve(ctx, state, BAND_OFFSETS,
					   ((size_t) nrows + 1) * sizeof(uint64_t), err));
	d_offsets = BAND_BUFFER(state, BAND_OFFSETS, uint64_t);
	band_bounds_kernel<<<gj_cuda_grid_size(ctx, nrows), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		BAND_BUFFER(state, BAND_INNER_KEYS, uint64_t), state->nkeys, d_keys,
		BAND_BUFFER(state, BAND_OUTER_HI, uint64_t), d_nulls, nrows,
		BAND_BUFFER(state, BAND_LOWER, GjRowId), d_offsets);
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
 * Keeps the chunk's bounds, match offsets and payload columns on the
 * device for retrieve.
 */
static GjStatus
BandCount(GjCudaContext *ctx, const GjBatch *outer, uint64_t *nmatches,
		  GjError *err)
{
	BandState  *state = (BandState *) ctx->variant_state;

	*nmatches = 0;
	/* Nothing can match: no device work, retrieve returns 0 */
	if (outer->nrows == 0 || state == NULL || state->nkeys == 0)
		return GJ_OK;
	return CountChunk(ctx, state, outer, nmatches, err);
}

/*
 * Write the round maps of the matches first .. first + round_size - 1
 * (GjCudaVariant.retrieve)
 *
 * The ranges of sorted inner positions that the count found, one per
 * outer row (gj_cuda_ranges_retrieve, key_sort.cu).  The outer payload
 * comes by row; the inner payload by row from the columns as they came
 * (GFUR) or by sorted position from the transformed ones (GFTR)
 * (gj_round_plan: the outer side is not transformed).
 */
static GjStatus
BandRetrieve(GjCudaContext *ctx, uint64_t first, int64_t round_size,
			 GjRoundSources *sources, GjError *err)
{
	BandState  *state = (BandState *) ctx->variant_state;
	GjRowId    *round_maps[GJ_NUM_ROUND_MAPS];
	GjSortedRanges ranges;

	GJ_TRY(gj_cuda_round_maps_reserve(ctx, false, round_size, sources,
									  round_maps, err));

	ranges.npos = ctx->outer_rows;
	ranges.offsets = BAND_BUFFER(state, BAND_OFFSETS, const uint64_t);
	ranges.lower = BAND_BUFFER(state, BAND_LOWER, const GjRowId);
	ranges.match_pos = NULL;
	ranges.outer_rows = NULL;	/* position i is outer row i */
	ranges.inner_rows = BAND_BUFFER(state, BAND_INNER_ROWS, const GjRowId);
	return gj_cuda_ranges_retrieve(ctx, &ranges, first, round_size,
								   round_maps, err);
}

/* Free the state and its device arrays (GjCudaVariant.destroy_state) */
static void
BandDestroyState(GjCudaContext *ctx)
{
	BandState  *state = (BandState *) ctx->variant_state;

	if (state == NULL)
		return;
	for (int id = 0; id < BAND_NUM_BUFFERS; id++)
		BandRelease(ctx, state, (BandBufferId) id);
	free(state);
	ctx->variant_state = NULL;
}

const GjCudaVariant gj_cuda_band = {
	"BAND",						/* name */
	BandBuild,
	BandCount,
	BandRetrieve,
	BandDestroyState,
};
