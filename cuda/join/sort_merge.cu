/*-------------------------------------------------------------------------
 *
 * sort_merge.cu
 *	  GPU sort-merge join (SMJ): sort the inner side once, then sort each
 *	  outer chunk, find the range of equal inner keys of every outer key,
 *	  and hand out the matches in key order
 *
 * CPU twin: sort_merge_cpu.c, the specification (same functions, same
 * order; its banner describes the order of the matches, the sorted sides
 * and the count/retrieve contract).  Both produce the very same arrays;
 * here is how the GPU gets there.
 *
 * BUILD (Rui 2020, §4.1.3; Wu et al. 2025, §3.1.1)
 *
 *	  key_range_kernel		min and max of the non-NULL keys (context.cu,
 *							gj_cuda_key_range: warp shuffles, one atomicMin/
 *							atomicMax per warp), copied back: the sort's
 *							bits, gj_smj_sort_bits (common.h)
 *	  gj_cuda_sort_pairs	the (key, row) pairs of the rows whose key is
 *							not NULL, selected in row order and sorted by a
 *							stable radix sort on the low sort_bits bits
 *							(key_sort.cu, shared with BAND)
 *	  smj_unique_kernel		any two equal neighbours?  No: unique inner
 *
 * COUNT (one outer chunk)
 *
 *	  the same selection and sort on the chunk, of the rows whose key lies
 *	  in the inner range: its sorted positions
 *	  smj_bounds_kernel		one thread per position: the lower bound of its
 *							key among the sorted inner keys, by binary
 *							search, and the count: the upper bound minus
 *							the lower one, or, for a unique inner side, 1
 *							when the key at the lower bound is equal
 *	  cub::DeviceScan		exclusive sum of the counts into 64-bit
 *							offsets; one extra element, set to 0, comes out
 *							as the total (context.cu, gj_cuda_count_offsets)
 *	  smj_match_pos_kernel	unique inner only: match_pos[offsets[p]] = p
 *							for each position with a match
 *
 * The outer keys are sorted, so the binary searches of neighbouring
 * threads walk nearly the same path: their loads coalesce and hit in
 * cache.  A merge path (Rui 2020, §4.1.3.2) would read both sorted sides
 * once per chunk, O(n + m); the searches cost O(m log n), which is less
 * when a chunk is small against the inner side, the common case here
 * (gpujoin.chunk_rows outer rows against a whole inner relation), and do
 * not depend on how the keys repeat: an outer key with a million equal
 * inner keys costs two searches, like any other.
 *
 * RETRIEVE (the matches first .. first + max_matches - 1)
 *
 * Each sorted outer position p matches the sorted inner positions
 * lower[p] .. lower[p] + count - 1: ranges of sorted pairs, whose round
 * gj_cuda_ranges_retrieve writes (key_sort.cu, shared with BAND):
 *
 *	  unique inner			one thread per match m, position match_pos[m],
 *							inner position lower[match_pos[m]]: no search,
 *							no expansion
 *	  otherwise				one thread per match m; the position p that
 *							holds it is found by binary search on the
 *							offsets (gj_seek_match_row); inner position
 *							lower[p] + m - offsets[p]
 *
 * Every match is one thread's work whatever its key, so a skewed key (one
 * outer row with a million inner duplicates, or the other way round) is
 * spread over the grid instead of serializing a thread, in every round:
 * the load-balancing search of a merge path, done by binary search.
 *
 * PAYLOAD COLUMNS (materialize.cu; Wu et al. 2025, §3.1.1, §4.1)
 *
 * GFUR gathers each round's values by row from the columns as they came:
 * the sorted rows of both sides are permuted, so both gathers are random
 * (SMJ-UR).  GFTR transforms the columns with the keys, the inner ones at
 * build and the outer ones at count, and gathers by sorted position: the
 * outer positions of a round ascend (a sequential read) and the inner
 * ones are runs of neighbours (clustered).  SMJ-TR (Wu et al. 2025, §4.1.2)
 * sorts each (key, column) pair again with the same stable radix sort; we
 * apply the permutation that the sort of (key, row) found instead, one
 * gather per column (gj_cuda_columns_gather by the sorted rows).  The two
 * are the same permutation (the sort is stable and the keys are the
 * same), so the values are identical; but a radix sort of (key, value)
 * reads and writes the key and the value in every one of its passes, up
 * to 8 of them for 64-bit keys (about 2 x 8 x 16 = 256 bytes a row for a
 * 4-byte column), where the gather reads a row number and a value and
 * writes the value (about 40 bytes a row counting a random read as a
 * 32-byte sector): several times less traffic, and it needs no second
 * copy of the keys.
 *
 * COSTS
 *
 * P is a side's payload bytes a row (the widths, plus one for each column
 * with NULL flags).  Build: about 33 bytes an inner row at its peak (keys
 * and NULL flags uploaded, the rows, the keys and their double buffers),
 * then the sorted keys and rows, 12 bytes an inner row, plus P (GFTR: 2P
 * while transforming).  A chunk: about 45 bytes an outer row (the uploaded
 * keys, the sorted keys and rows and their double buffers, the bounds and
 * the offsets) plus P (GFTR: 2P), kept from chunk to chunk (grow-only).  A
 * round: 8 bytes a match for the maps (16 for GFTR with row ids) plus the
 * round's values.  Work: two radix sorts of the sort_bits bits, O(log n)
 * a position to count, O(log npos) a match to retrieve.
 *
 * Measured on an H200 (make -C cuda bench: 10M inner rows, 2 + 2 payload
 * columns of 4 and 8 bytes, 10M matches): build 1.2-2.4 ms (24-bit keys
 * in 3 radix passes, 64-bit keys in 8; GFTR's transform adds 0.6-0.7 ms),
 * count 0.7-1.9 ms, materialize 0.7-1.1 ms (GFTR 20-36% below GFUR): 3.5
 * to 5 ms in all, 0.6-0.8 ms more than NPHJ on PK-FK joins (the outer
 * chunk's sort) and about the same on M:N, against 23-44 ms of copies
 * over the bus: the device work is the small part here too.
 *
 * IDENTIFICATION
 *	  cuda/join/sort_merge.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <cub/cub.cuh>

#include "common.cuh"
#include "gpujoin_kernels.h"

/*
 * SMJ's own device arrays, in its private state
 */
typedef enum SmjBufferId
{
	/* The sorted inner side, kept from one build to the next */
	SMJ_INNER_KEYS,				/* uint64_t[nkeys], sorted */
	SMJ_INNER_ROWS,				/* GjRowId[inner rows]; nkeys are used */

	/* The counted chunk, kept for retrieve (grow-only, reused) */
	SMJ_OUTER_KEYS,				/* uint64_t[outer rows], sorted */
	SMJ_OUTER_ROWS,				/* GjRowId[outer rows]; npos are used */
	SMJ_LOWER,					/* GjRowId[npos], lower bounds */
	SMJ_OFFSETS,				/* uint64_t[npos + 1] */
	SMJ_MATCH_POS,				/* GjRowId[matches], unique inner only */

	/* Scratch of the sorts: the double buffers of the pairs */
	SMJ_KEYS_ALT,				/* uint64_t[rows] */
	SMJ_ROWS_ALT,				/* GjRowId[rows] */

	/* Scratch of one call: min and max key, rows selected, duplicates */
	SMJ_SCALARS,				/* unsigned long long[4] */

	SMJ_NUM_BUFFERS
} SmjBufferId;

/* The four words of SMJ_SCALARS; MIN and MAX are gj_cuda_key_range's two */
#define SMJ_SCALAR_MIN			0
#define SMJ_SCALAR_MAX			1
#define SMJ_SCALAR_SELECTED		2
#define SMJ_SCALAR_DUPLICATE	3
#define SMJ_NUM_SCALARS			4

/*
 * SMJ's state (ctx->variant_state)
 *
 *	nkeys		inner rows with a non-NULL key; 0: nothing matches
 *	min_key		smallest and largest of their keys
 *	max_key
 *	sort_bits	gj_smj_sort_bits(min_key, max_key)
 *	unique		no inner key occurs twice
 *	npos		rows of the counted chunk with a key in [min_key, max_key]
 *	buffers		see SmjBufferId
 */
typedef struct SmjState
{
	int64_t		nkeys;
	uint64_t	min_key;
	uint64_t	max_key;
	int			sort_bits;
	bool		unique;
	int64_t		npos;
	GjDeviceBuffer buffers[SMJ_NUM_BUFFERS];
} SmjState;

/* A buffer of the state, typed */
#define SMJ_BUFFER(state, id, type)	((type *) (state)->buffers[(id)].ptr)

/* What a buffer holds, for error messages */
static const char *
SmjBufferName(SmjBufferId id)
{
	switch (id)
	{
		case SMJ_INNER_KEYS:
			return "the sorted inner keys";
		case SMJ_INNER_ROWS:
			return "the sorted inner rows";
		case SMJ_OUTER_KEYS:
			return "the sorted outer keys";
		case SMJ_OUTER_ROWS:
			return "the sorted outer rows";
		case SMJ_LOWER:
			return "the outer chunk's lower bounds";
		case SMJ_OFFSETS:
			return "the outer chunk's match offsets";
		case SMJ_MATCH_POS:
			return "the outer chunk's matched positions";
		case SMJ_KEYS_ALT:
			return "the keys being sorted";
		case SMJ_ROWS_ALT:
			return "the rows being sorted";
		case SMJ_SCALARS:
			return "the sort-merge join's counters";
		case SMJ_NUM_BUFFERS:
			break;
	}
	return "a sort-merge join buffer";
}

/* Make buffer id of the state hold bytes bytes (gj_cuda_device_reserve) */
static GjStatus
SmjReserve(GjCudaContext *ctx, SmjState *state, SmjBufferId id, size_t bytes,
		   GjError *err)
{
	return gj_cuda_device_reserve(ctx, &state->buffers[id], bytes,
								  SmjBufferName(id), err);
}

static void
SmjRelease(GjCudaContext *ctx, SmjState *state, SmjBufferId id)
{
	gj_cuda_device_release(ctx, &state->buffers[id]);
}

/*
 * The sort buffers of one side (gj_cuda_sort_pairs): keys_id and rows_id,
 * the state's double buffers, and its selection counter
 */
static GjSortBuffers
SmjSortBuffers(SmjState *state, SmjBufferId keys_id, SmjBufferId rows_id)
{
	GjSortBuffers buffers;

	buffers.keys = &state->buffers[keys_id];
	buffers.rows = &state->buffers[rows_id];
	buffers.keys_alt = &state->buffers[SMJ_KEYS_ALT];
	buffers.rows_alt = &state->buffers[SMJ_ROWS_ALT];
	buffers.d_count = (int64_t *) (SMJ_BUFFER(state, SMJ_SCALARS, unsigned long long) +
								   SMJ_SCALAR_SELECTED);
	return buffers;
}

/* *d_duplicate = 1 when two neighbouring sorted keys are equal (else untouched) */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
smj_unique_kernel(const uint64_t *__restrict__ d_keys, int64_t n,
				  unsigned long long *__restrict__ d_duplicate)
{
	for (int64_t i = gj_thread_index() + 1; i < n; i += gj_grid_stride())
	{
		if (d_keys[i] == d_keys[i - 1])
			*d_duplicate = 1;	/* every writer writes the same value */
	}
}

/* Do n sorted keys hold no key twice? */
static GjStatus
KeysUnique(GjCudaContext *ctx, SmjState *state, const uint64_t *d_keys,
		   int64_t n, bool *unique, GjError *err)
{
	unsigned long long *d_scalars = SMJ_BUFFER(state, SMJ_SCALARS, unsigned long long);
	unsigned long long duplicate = 0;

	*unique = true;
	if (n < 2)
		return GJ_OK;
	GJ_CUDA_TRY(err, cudaMemsetAsync(d_scalars + SMJ_SCALAR_DUPLICATE, 0,
									 sizeof(duplicate), ctx->stream));
	smj_unique_kernel<<<gj_cuda_grid_size(ctx, n - 1), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		d_keys, n, d_scalars + SMJ_SCALAR_DUPLICATE);
	GJ_CUDA_TRY(err, cudaGetLastError());
	GJ_TRY(gj_cuda_copy_from_device(ctx, &duplicate, d_scalars + SMJ_SCALAR_DUPLICATE,
									sizeof(duplicate), err));
	*unique = (duplicate == 0);
	return GJ_OK;
}

/* The body of the SMJ build, for a non-empty inner side */
static GjStatus
BuildSorted(GjCudaContext *ctx, SmjState *state, const GjBatch *inner,
			GjError *err)
{
	int64_t		nrows = inner->nrows;
	const uint64_t *d_keys;
	const uint8_t *d_nulls;
	bool		has_keys = false;
	uint64_t	min_key = 0;
	uint64_t	max_key = 0;
	int64_t		nkeys = 0;
	int			sort_bits;
	bool		unique = true;
	GjSortBuffers buffers = SmjSortBuffers(state, SMJ_INNER_KEYS, SMJ_INNER_ROWS);

	GJ_TRY(gj_cuda_upload_keys(ctx, GJ_SIDE_INNER, inner, &d_keys, &d_nulls, err));

	/* 1. The range of the keys; nothing to build without keys */
	GJ_TRY(gj_cuda_key_range(ctx, d_keys, d_nulls, nrows,
							 SMJ_BUFFER(state, SMJ_SCALARS, unsigned long long) + SMJ_SCALAR_MIN,
							 &has_keys, &min_key, &max_key, err));
	if (!has_keys)
		return GJ_OK;
	sort_bits = gj_smj_sort_bits(min_key, max_key);

	/* 2. The pairs of the non-NULL rows, sorted; 3. unique? */
	GJ_TRY(gj_cuda_sort_pairs(ctx, GJ_SIDE_INNER, d_keys, d_nulls, nrows,
							  min_key, max_key, sort_bits, &buffers, &nkeys,
							  err));
	GJ_TRY(KeysUnique(ctx, state, SMJ_BUFFER(state, SMJ_INNER_KEYS, uint64_t),
					  nkeys, &unique, err));

	/* The sort's scratch and the uploaded keys are done with */
	SmjRelease(ctx, state, SMJ_KEYS_ALT);
	SmjRelease(ctx, state, SMJ_ROWS_ALT);
	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_KEYS);
	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_NULLS);

	/*
	 * 4. The payload columns: GFUR keeps them in row order; GFTR permutes
	 * them into sorted order, the sort's transform, and drops the originals
	 * (SmjBuild); the build waits for the transform
	 */
	GJ_TRY(gj_cuda_columns_load(ctx, GJ_SIDE_INNER, inner,
								SMJ_BUFFER(state, SMJ_INNER_ROWS, GjRowId),
								nkeys, err));
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));

	state->min_key = min_key;
	state->max_key = max_key;
	state->sort_bits = sort_bits;
	state->unique = unique;
	state->nkeys = nkeys;
	return GJ_OK;
}

/*
 * Sort the inner side (GjCudaVariant.build)
 *
 * Replaces the sorted side of an earlier call.  The build's scratch
 * buffers (the uploaded keys, the sort's double buffers, and for GFTR the
 * untransformed payload) are released before returning, also when it
 * fails, so the probe has that device memory; the sorted side stays.  An
 * inner side with no non-NULL key sorts nothing.
 */
static GjStatus
SmjBuild(GjCudaContext *ctx, const GjBatch *inner, GjError *err)
{
	SmjState   *state = (SmjState *) gj_cuda_variant_state(ctx, sizeof(SmjState),
														   "a sort-merge join", err);
	GjStatus	status = GJ_OK;

	if (state == NULL)
		return GJ_ERROR_HOST_MEMORY;
	state->nkeys = 0;
	state->unique = false;
	state->sort_bits = 0;
	state->npos = 0;

	if (inner->nrows > 0)
	{
		status = SmjReserve(ctx, state, SMJ_SCALARS,
							SMJ_NUM_SCALARS * sizeof(unsigned long long), err);
		if (status == GJ_OK)
			status = BuildSorted(ctx, state, inner, err);
	}

	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_KEYS);
	gj_cuda_buffer_release(ctx, GJ_BUFFER_INNER_NULLS);
	SmjRelease(ctx, state, SMJ_KEYS_ALT);
	SmjRelease(ctx, state, SMJ_ROWS_ALT);
	if (ctx->spec.materialize == GJ_MATERIALIZE_GFTR)
		gj_cuda_columns_release(ctx, GJ_COLUMNS_INNER);

	if (status != GJ_OK)
		state->nkeys = 0;
	else
		gj_smj_describe(state->nkeys, state->sort_bits, state->unique,
						ctx->stats.detail, sizeof(ctx->stats.detail));
	return status;
}

/*
 * The bounds of every sorted outer position: d_lower[p], and the count
 * into d_counts[p]; d_counts[npos] = 0, so that the exclusive sum over
 * npos + 1 elements ends in the total
 *
 * One thread per position, two binary searches over the sorted inner keys
 * (the upper bound from the lower one on), or one when the inner keys are
 * unique.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
smj_bounds_kernel(const uint64_t *__restrict__ d_inner_keys, int64_t nkeys,
				  bool unique, const uint64_t *__restrict__ d_outer_keys,
				  int64_t npos, GjRowId *__restrict__ d_lower,
				  uint64_t *__restrict__ d_counts)
{
	for (int64_t p = gj_thread_index(); p < npos; p += gj_grid_stride())
	{
		uint64_t	key = d_outer_keys[p];
		int64_t		lo = gj_smj_bound(d_inner_keys, 0, nkeys, key, false);
		int64_t		hi;

		if (unique)
			hi = lo < nkeys && d_inner_keys[lo] == key ? lo + 1 : lo;
		else
			hi = gj_smj_bound(d_inner_keys, lo, nkeys, key, true);
		d_lower[p] = (GjRowId) lo;
		d_counts[p] = (uint64_t) (hi - lo);
	}
	if (gj_thread_index() == 0)
		d_counts[npos] = 0;
}

/* Unique inner: the position of each match, match_pos[offsets[p]] = p */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
smj_match_pos_kernel(const uint64_t *__restrict__ d_offsets, int64_t npos,
					 GjRowId *__restrict__ d_match_pos)
{
	for (int64_t p = gj_thread_index(); p < npos; p += gj_grid_stride())
	{
		if (d_offsets[p + 1] != d_offsets[p])
			d_match_pos[d_offsets[p]] = (GjRowId) p;
	}
}

/* The body of the SMJ count, for a chunk that can have matches */
static GjStatus
CountChunk(GjCudaContext *ctx, SmjState *state, const GjBatch *outer,
		   uint64_t *nmatches, GjError *err)
{
	int64_t		nrows = outer->nrows;
	const uint64_t *d_keys;
	const uint8_t *d_nulls;
	uint64_t   *d_offsets;
	int64_t		npos = 0;
	uint64_t	total = 0;
	GjSortBuffers buffers = SmjSortBuffers(state, SMJ_OUTER_KEYS, SMJ_OUTER_ROWS);

	/* 1. The pairs of the rows that can match, sorted */
	GJ_TRY(gj_cuda_upload_keys(ctx, GJ_SIDE_OUTER, outer, &d_keys, &d_nulls, err));
	GJ_TRY(gj_cuda_sort_pairs(ctx, GJ_SIDE_OUTER, d_keys, d_nulls, nrows,
							  state->min_key, state->max_key, state->sort_bits,
							  &buffers, &npos, err));

	/* 2. The bounds and counts of each position; 3. offsets by prefix sum */
	GJ_TRY(SmjReserve(ctx, state, SMJ_LOWER, (size_t) npos * sizeof(GjRowId), err));
	GJ_TRY(SmjReserve(ctx, state, SMJ_OFFSETS,
					  ((size_t) npos + 1) * sizeof(uint64_t), err));
	d_offsets = SMJ_BUFFER(state, SMJ_OFFSETS, uint64_t);
	smj_bounds_kernel<<<gj_cuda_grid_size(ctx, npos), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		SMJ_BUFFER(state, SMJ_INNER_KEYS, uint64_t), state->nkeys, state->unique,
		SMJ_BUFFER(state, SMJ_OUTER_KEYS, uint64_t), npos,
		SMJ_BUFFER(state, SMJ_LOWER, GjRowId), d_offsets);
	GJ_CUDA_TRY(err, cudaGetLastError());
	GJ_TRY(gj_cuda_count_offsets(ctx, d_offsets, npos, &total, err));

	/* Unique inner: the list of matched positions, match by match */
	if (state->unique && total > 0)
	{
		GJ_TRY(SmjReserve(ctx, state, SMJ_MATCH_POS,
						  (size_t) total * sizeof(GjRowId), err));
		smj_match_pos_kernel<<<gj_cuda_grid_size(ctx, npos), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
			d_offsets, npos, SMJ_BUFFER(state, SMJ_MATCH_POS, GjRowId));
		GJ_CUDA_TRY(err, cudaGetLastError());
	}

	/*
	 * The payload columns only travel when some row has a match: GFTR
	 * permutes them into sorted order, as the build did the inner ones
	 */
	if (total > 0)
		GJ_TRY(gj_cuda_columns_load(ctx, GJ_SIDE_OUTER, outer,
									SMJ_BUFFER(state, SMJ_OUTER_ROWS, GjRowId),
									npos, err));
	state->npos = npos;
	*nmatches = total;
	return GJ_OK;
}

/*
 * Count the matches of one outer chunk (GjCudaVariant.count)
 *
 * Keeps the chunk's sorted rows, bounds, match offsets and payload
 * columns on the device for retrieve.
 */
static GjStatus
SmjCount(GjCudaContext *ctx, const GjBatch *outer, uint64_t *nmatches,
		 GjError *err)
{
	SmjState   *state = (SmjState *) ctx->variant_state;

	*nmatches = 0;
	if (state != NULL)
		state->npos = 0;
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
 * sorted outer position (gj_cuda_ranges_retrieve, key_sort.cu).  The
 * payload comes by row from the columns as they came (GFUR) or by sorted
 * position from the transformed ones (GFTR), both sides (gj_round_plan).
 * Each map is written only when the round needs it.
 */
static GjStatus
SmjRetrieve(GjCudaContext *ctx, uint64_t first, int64_t round_size,
			GjRoundSources *sources, GjError *err)
{
	SmjState   *state = (SmjState *) ctx->variant_state;
	GjRowId    *round_maps[GJ_NUM_ROUND_MAPS];
	GjSortedRanges ranges;

	GJ_TRY(gj_cuda_round_maps_reserve(ctx, true, round_size, sources,
									  round_maps, err));

	ranges.npos = state->npos;
	ranges.offsets = SMJ_BUFFER(state, SMJ_OFFSETS, const uint64_t);
	ranges.lower = SMJ_BUFFER(state, SMJ_LOWER, const GjRowId);
	ranges.match_pos = state->unique ? SMJ_BUFFER(state, SMJ_MATCH_POS, const GjRowId) : NULL;
	ranges.outer_rows = SMJ_BUFFER(state, SMJ_OUTER_ROWS, const GjRowId);
	ranges.inner_rows = SMJ_BUFFER(state, SMJ_INNER_ROWS, const GjRowId);
	return gj_cuda_ranges_retrieve(ctx, &ranges, first, round_size,
								   round_maps, err);
}

/* Free the state and its device arrays (GjCudaVariant.destroy_state) */
static void
SmjDestroyState(GjCudaContext *ctx)
{
	SmjState   *state = (SmjState *) ctx->variant_state;

	if (state == NULL)
		return;
	for (int id = 0; id < SMJ_NUM_BUFFERS; id++)
		SmjRelease(ctx, state, (SmjBufferId) id);
	free(state);
	ctx->variant_state = NULL;
}

const GjCudaVariant gj_cuda_smj = {
	"SMJ",						/* name */
	SmjBuild,
	SmjCount,
	SmjRetrieve,
	SmjDestroyState,
};
