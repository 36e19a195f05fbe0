/*-------------------------------------------------------------------------
 *
 * theta_nlj.cu
 *	  GPU theta nested-loop join (NLJ): test every (outer, inner) pair
 *	  against a conjunction of comparison terms, the inner side staged
 *	  through shared memory tile by tile
 *
 * CPU twin: theta_nlj_cpu.c, the specification (same functions, same
 * order; its banner describes what matches, the order of the matches and
 * the count/retrieve contract).  Both produce the very same arrays; here
 * is how the GPU gets there.
 *
 * THE KERNEL (Bellas and Gounaris 2017, §5.2)
 *
 * Bellas and Gounaris' output-bound kernel: a 1-D grid of 1-D blocks over
 * the outer rows, one outer row a thread, its values held in registers;
 * the inner side goes through shared memory in tiles of
 * gj_nlj_tile_rows(nterms) rows (common.h: 512 to 1024 rows, every term of
 * a tile, at most 48 KiB), each loaded by the whole block in coalesced
 * reads, and each thread then tests its row against every row of the
 * tile.  All lanes of a warp read the same tile row at once: a shared-
 * memory broadcast, no bank conflict.  Every thread takes part in every
 * load and barrier, also past the last outer row: no early return before
 * a barrier, a pitfall of the code published with their paper.
 *
 * Each term "inner OP outer" becomes, once per outer row, an interval of
 * inner values: x in [lo, lo + span] (LT: [0, v - 1], LE: [0, v], GT:
 * [v + 1, max], GE: [v, max], EQ: [v, v]; NE: not in [v, v]), so that a
 * pair costs per term one subtraction and one unsigned comparison,
 * (x - lo) <= span, with no branch on the operator; a row whose interval
 * is empty (LT 0, GT max) or whose value is NULL matches nothing and only
 * helps with the loads.  The kernels are instantiated for 1 to
 * GJ_MAX_TERMS terms, so that the loop over the terms unrolls into
 * registers.
 *
 * Rows with a NULL term never match.  Their flags come in through a tile
 * too, and a tile without any (always, when the side has no NULL term)
 * takes a loop that does not read them.
 *
 * COUNT (one outer chunk; the "double probe" (Rui 2020, §4.1.2.2): count
 * pass, prefix scan, write pass, with 64-bit counts)
 *
 *	  nlj_skip_kernel		the rows of each side with a NULL term (inner:
 *							at build), from the term NULL flags uploaded
 *	  nlj_count_kernel		the matches of every outer row, in launches
 *							over slices of the outer rows (and of the inner
 *							side, accumulated, when it is large), each of at
 *							most NLJ_LAUNCH_COMPARISONS comparisons
 *	  cub::DeviceScan		exclusive sum into 64-bit offsets; one extra
 *							element, set to 0, comes out as the total
 *							(context.cu, gj_cuda_count_offsets)
 *
 * A count pass was slower than a global atomic cursor (Bellas and Gounaris
 * 2017, §5.3); but the cursor's order would depend on thread timing, and
 * the contract numbers the matches (outer row, inner row), which is also
 * what lets a round hold at most max_matches of them and a later round
 * pick up where it stopped.
 *
 * A count costs O(n m nterms), and splitting it into launches keeps each
 * kernel short (a few milliseconds on an H200), so that the device can
 * serve other work in between and the host waits on one slice at a time;
 * the PostgreSQL side bounds the whole call by bounding the chunk: count
 * may be called on a chunk whose size the caller bounds, and the caller
 * checks for cancellation between calls.
 *
 * RETRIEVE (the matches first .. first + max_matches - 1)
 *
 *	  nlj_window_kernel		the outer rows whose matches meet the window
 *							(gj_seek_match_row on both ends), copied back
 *	  nlj_retrieve_kernel	those rows only, in launches over slices of
 *							them and of the inner side like the count's:
 *							each thread runs its row's loop again, numbers
 *							its matches from offsets[i] (or from where the
 *							launch before stopped: the cursors) and writes
 *							those in the window; a block stops loading
 *							tiles once all its rows are done
 *
 * A row whose matches outlast the round goes on in the next, which finds
 * it again and numbers its matches from the start of the row.
 *
 * PAYLOAD COLUMNS (materialize.cu)
 *
 * A nested loop transforms neither side, so GFTR is GFUR here: both
 * sides' columns are uploaded as they came (inner at build, outer at
 * count, when it has matches) and gathered by row (gj_round_plan).
 *
 * COSTS
 *
 * P is a side's payload bytes a row (the widths, plus one for each column
 * with NULL flags), T the terms.  Build: 8 T + P bytes an inner row, plus
 * one for its skip flag when a term has NULLs (and the uploaded flags
 * while they are combined).  A chunk: 8 T + 16 + P bytes an outer row (the
 * terms, offsets, cursors, and skip flags when needed), kept from chunk to
 * chunk (grow-only).  A round: 4 bytes a match for each of the two maps it
 * needs, plus the round's values.  Work: n m T comparisons to count, and
 * to retrieve up to the rows of the window times m.
 *
 * IDENTIFICATION
 *	  cuda/join/theta_nlj.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "gpujoin_kernels.h"

/*
 * Comparisons (pairs x terms) one launch makes at most: 2^35, some 10 ms
 * of an H200 with one term
 */
#define NLJ_LAUNCH_COMPARISONS	(INT64_C(1) << 35)

/*
 * NLJ's own device arrays, in its private state
 */
typedef enum NljBufferId
{
	/* The inner side, kept from one build to the next */
	NLJ_INNER_TERMS,			/* uint64_t[terms x inner rows], term-major */
	NLJ_INNER_SKIP,				/* uint8_t[inner rows], when a term has NULLs */

	/* The counted chunk, kept for retrieve (grow-only, reused) */
	NLJ_OUTER_TERMS,			/* uint64_t[terms x outer rows], term-major */
	NLJ_OUTER_SKIP,				/* uint8_t[outer rows], when a term has NULLs */
	NLJ_OFFSETS,				/* uint64_t[outer rows + 1] */
	NLJ_CURSORS,				/* uint64_t[outer rows]: a retrieve's next match
								 * of each row, from one launch to the next */

	/* Scratch: a side's term NULL flags as uploaded; the window's rows */
	NLJ_NULLS,					/* uint8_t[terms with NULLs x rows] */
	NLJ_WINDOW,					/* int64_t[2] */

	NLJ_NUM_BUFFERS
} NljBufferId;

/*
 * NLJ's state (ctx->variant_state)
 *
 *	inner_rows	rows of the inner side; 0: nothing matches
 *	inner_skip	some inner row has a NULL term: NLJ_INNER_SKIP holds flags
 *	outer_skip	likewise for the counted chunk
 *	buffers		see NljBufferId
 */
typedef struct NljState
{
	int64_t		inner_rows;
	bool		inner_skip;
	bool		outer_skip;
	GjDeviceBuffer buffers[NLJ_NUM_BUFFERS];
} NljState;

/* A buffer of the state, typed */
#define NLJ_BUFFER(state, id, type)	((type *) (state)->buffers[(id)].ptr)

/* One side's terms as the kernels see them; passed by value */
typedef struct NljSide
{
	const uint64_t *terms;		/* term t of row r: terms[t * nrows + r] */
	const uint8_t *skip;		/* 1: a term of the row is NULL; NULL when no
								 * row has one */
	int64_t		nrows;
} NljSide;

/* The spec's comparisons; passed by value */
typedef struct NljOps
{
	GjThetaOp	ops[GJ_MAX_TERMS];
} NljOps;

/* The term NULL flags of one side, for nlj_skip_kernel; passed by value */
typedef struct NljNullPlan
{
	int			nflags;
	const uint8_t *flags[GJ_MAX_TERMS];
} NljNullPlan;

/* What a buffer holds, for error messages */
static const char *
NljBufferName(NljBufferId id)
{
	switch (id)
	{
		case NLJ_INNER_TERMS:
			return "the inner terms";
		case NLJ_INNER_SKIP:
			return "the inner rows' NULL terms";
		case NLJ_OUTER_TERMS:
			return "the outer terms";
		case NLJ_OUTER_SKIP:
			return "the outer rows' NULL terms";
		case NLJ_OFFSETS:
			return "the outer chunk's match offsets";
		case NLJ_CURSORS:
			return "the outer chunk's retrieve cursors";
		case NLJ_NULLS:
			return "the term NULL flags";
		case NLJ_WINDOW:
			return "a round's outer rows";
		case NLJ_NUM_BUFFERS:
			break;
	}
	return "a nested-loop join buffer";
}

/* Make buffer id of the state hold bytes bytes (gj_cuda_device_reserve) */
static GjStatus
NljReserve(GjCudaContext *ctx, NljState *state, NljBufferId id, size_t bytes,
		   GjError *err)
{
	return gj_cuda_device_reserve(ctx, &state->buffers[id], bytes,
								  NljBufferName(id), err);
}

static void
NljRelease(GjCudaContext *ctx, NljState *state, NljBufferId id)
{
	gj_cuda_device_release(ctx, &state->buffers[id]);
}

/* d_skip[row] = 1 when one of the side's term NULL flags is set */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
nlj_skip_kernel(const NljNullPlan plan, int64_t nrows,
				uint8_t *__restrict__ d_skip)
{
	for (int64_t row = gj_thread_index(); row < nrows; row += gj_grid_stride())
	{
		uint8_t		skip = 0;

#pragma unroll
		for (int k = 0; k < GJ_MAX_TERMS; k++)
		{
			if (k < plan.nflags)
				skip |= plan.flags[k][row] != 0;
		}
		d_skip[row] = skip;
	}
}

/*
 * Copy a batch's term values into terms_id, term after term; when a term
 * has NULL flags, combine them into one flag a row in skip_id (*has_skip)
 */
static GjStatus
UploadTerms(GjCudaContext *ctx, NljState *state, const GjBatch *batch,
			NljBufferId terms_id, NljBufferId skip_id, bool *has_skip,
			GjError *err)
{
	int			nterms = ctx->spec.nterms;
	size_t		nrows = (size_t) batch->nrows;
	NljNullPlan plan;
	uint8_t    *d_flags;

	*has_skip = false;
	GJ_TRY(NljReserve(ctx, state, terms_id, (size_t) nterms * nrows * sizeof(uint64_t), err));
	for (int t = 0; t < nterms; t++)
		GJ_TRY(gj_cuda_copy_to_device(ctx, NLJ_BUFFER(state, terms_id, uint64_t) + (size_t) t * nrows,
									  batch->terms[t], nrows * sizeof(uint64_t), err));

	memset(&plan, 0, sizeof(plan));
	for (int t = 0; t < nterms; t++)
		plan.nflags += batch->term_nulls[t] != NULL;
	if (plan.nflags == 0)
		return GJ_OK;

	GJ_TRY(NljReserve(ctx, state, NLJ_NULLS, (size_t) plan.nflags * nrows, err));
	GJ_TRY(NljReserve(ctx, state, skip_id, nrows, err));
	d_flags = NLJ_BUFFER(state, NLJ_NULLS, uint8_t);
	plan.nflags = 0;
	for (int t = 0; t < nterms; t++)
	{
		if (batch->term_nulls[t] == NULL)
			continue;
		GJ_TRY(gj_cuda_copy_to_device(ctx, d_flags, batch->term_nulls[t], nrows, err));
		plan.flags[plan.nflags++] = d_flags;
		d_flags += nrows;
	}
	nlj_skip_kernel<<<gj_cuda_grid_size(ctx, (int64_t) nrows), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		plan, (int64_t) nrows, NLJ_BUFFER(state, skip_id, uint8_t));
	GJ_CUDA_TRY(err, cudaGetLastError());
	*has_skip = true;
	return GJ_OK;
}

/* The inner or outer side of the state, for the kernels */
static NljSide
CurrentSide(const NljState *state, GjSide side, int64_t nrows)
{
	NljSide		s;
	bool		inner = (side == GJ_SIDE_INNER);

	s.terms = NLJ_BUFFER(state, inner ? NLJ_INNER_TERMS : NLJ_OUTER_TERMS, const uint64_t);
	s.skip = (inner ? state->inner_skip : state->outer_skip) ?
		NLJ_BUFFER(state, inner ? NLJ_INNER_SKIP : NLJ_OUTER_SKIP, const uint8_t) : NULL;
	s.nrows = nrows;
	return s;
}

/* The body of the NLJ build, for a non-empty inner side */
static GjStatus
UploadInner(GjCudaContext *ctx, NljState *state, const GjBatch *inner,
			GjError *err)
{
	GJ_TRY(UploadTerms(ctx, state, inner, NLJ_INNER_TERMS, NLJ_INNER_SKIP,
					   &state->inner_skip, err));
	if (ctx->spec.inner_ncolumns > 0)
		GJ_TRY(gj_cuda_columns_upload(ctx, GJ_COLUMNS_INNER, inner, err));
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
	return GJ_OK;
}

/*
 * Take in the inner side (GjCudaVariant.build): its terms, the rows with a
 * NULL term, and its payload columns, as they came
 *
 * Replaces the inner side of an earlier call.  The uploaded NULL flags are
 * scratch, released before returning.
 */
static GjStatus
NljBuild(GjCudaContext *ctx, const GjBatch *inner, GjError *err)
{
	NljState   *state = (NljState *) gj_cuda_variant_state(ctx, sizeof(NljState),
														   "a nested-loop join", err);
	GjStatus	status = GJ_OK;

	if (state == NULL)
		return GJ_ERROR_HOST_MEMORY;
	state->inner_rows = 0;
	state->inner_skip = false;

	if (inner->nrows > 0)
		status = UploadInner(ctx, state, inner, err);
	NljRelease(ctx, state, NLJ_NULLS);

	if (status != GJ_OK)
		state->inner_rows = 0;
	else
	{
		state->inner_rows = inner->nrows;
		gj_nlj_describe(ctx->spec.nterms, ctx->stats.detail,
						sizeof(ctx->stats.detail));
	}
	return status;
}

/*
 * One outer row's terms as intervals of inner values: term t holds for
 * inner value x when ((x - lo[t]) <= span[t]) != negate bit t
 */
template <int NTERMS>
struct NljRowTest
{
	uint64_t	lo[NTERMS];
	uint64_t	span[NTERMS];
	unsigned	negate;
};

/*
 * Make the test of outer row "row"; false when the row can match nothing:
 * a NULL term, or a term whose interval is empty (inner < 0, inner > max)
 */
template <int NTERMS>
static __device__ __forceinline__ bool
PrepareRow(const NljSide &outer, const NljOps &ops, int64_t row,
		   NljRowTest<NTERMS> *test)
{
	bool		possible = !gj_flag_set(outer.skip, row);

	test->negate = 0;
#pragma unroll
	for (int t = 0; t < NTERMS; t++)
	{
		uint64_t	v = outer.terms[t * outer.nrows + row];

		switch (ops.ops[t])
		{
			case GJ_THETA_LT:
				possible = possible && v != 0;
				test->lo[t] = 0;
				test->span[t] = v - 1;
				break;
			case GJ_THETA_LE:
				test->lo[t] = 0;
				test->span[t] = v;
				break;
			case GJ_THETA_GT:
				possible = possible && v != UINT64_MAX;
				test->lo[t] = v + 1;
				test->span[t] = UINT64_MAX - v - 1;
				break;
			case GJ_THETA_GE:
				test->lo[t] = v;
				test->span[t] = UINT64_MAX - v;
				break;
			case GJ_THETA_EQ:
				test->lo[t] = v;
				test->span[t] = 0;
				break;
			default:			/* GJ_THETA_NE */
				test->lo[t] = v;
				test->span[t] = 0;
				test->negate |= 1u << t;
				break;
		}
	}
	return possible;
}

/* Does the row of test match tile row j?  (Its skip flag aside) */
template <int NTERMS>
static __device__ __forceinline__ bool
PairHolds(const NljRowTest<NTERMS> &test, const uint64_t *s_terms,
		  int tile_rows, int j)
{
	bool		holds = true;

#pragma unroll
	for (int t = 0; t < NTERMS; t++)
	{
		bool		inside = s_terms[t * tile_rows + j] - test.lo[t] <= test.span[t];

		holds &= inside != (bool) ((test.negate >> t) & 1u);
	}
	return holds;
}

/*
 * Load inner rows tile .. tile + n - 1 into shared memory: each term's
 * values at s_terms[t * tile_rows + k], the skip flags at s_skip[k] (when
 * the side has them); the whole block takes part, and the barrier at the
 * end answers whether any row of the tile is to be skipped
 */
template <int NTERMS>
static __device__ __forceinline__ bool
LoadTile(const NljSide &inner, int64_t tile, int n, int tile_rows,
		 uint64_t *s_terms, uint8_t *s_skip)
{
	int			skips = 0;

	for (int k = threadIdx.x; k < n; k += blockDim.x)
	{
#pragma unroll
		for (int t = 0; t < NTERMS; t++)
			s_terms[t * tile_rows + k] = inner.terms[t * inner.nrows + tile + k];
		if (inner.skip != NULL)
		{
			s_skip[k] = inner.skip[tile + k];
			skips |= s_skip[k];
		}
	}
	return __syncthreads_or(skips) != 0;
}

/*
 * Count the matches of outer rows row_begin .. row_end - 1 among inner rows
 * inner_begin .. inner_end - 1, one thread a row, the inner rows tile by
 * tile through shared memory; the counts go to d_counts[row], added to
 * what the launches of the inner rows before left there (inner_begin >
 * 0).
 *
 * Dynamic shared memory: tile_rows x NTERMS values, then tile_rows flags.
 */
template <int NTERMS>
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
nlj_count_kernel(const NljSide inner, const NljSide outer, const NljOps ops,
				 int tile_rows, int64_t row_begin, int64_t row_end,
				 int64_t inner_begin, int64_t inner_end,
				 uint64_t *__restrict__ d_counts)
{
	extern __shared__ uint64_t s_tile[];
	uint64_t   *s_terms = s_tile;
	uint8_t    *s_skip = (uint8_t *) (s_tile + NTERMS * tile_rows);
	int64_t		row = row_begin + (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	NljRowTest<NTERMS> test;
	bool		active = row < row_end && PrepareRow<NTERMS>(outer, ops, row, &test);
	uint64_t	count = 0;

	/* The block's barriers are taken by all its threads, or by none */
	if (__syncthreads_or(active))
	{
		for (int64_t tile = inner_begin; tile < inner_end; tile += tile_rows)
		{
			int			n = (int) (inner_end - tile < tile_rows ? inner_end - tile : tile_rows);
			bool		skips = LoadTile<NTERMS>(inner, tile, n, tile_rows, s_terms, s_skip);

			if (active && skips)
			{
				for (int j = 0; j < n; j++)
					count += !s_skip[j] && PairHolds<NTERMS>(test, s_terms, tile_rows, j);
			}
			else if (active)
			{
				uint32_t	tile_count = 0;

				for (int j = 0; j < n; j++)
					tile_count += PairHolds<NTERMS>(test, s_terms, tile_rows, j);
				count += tile_count;
			}
			__syncthreads();	/* before the next tile overwrites this one */
		}
	}
	if (row < row_end)
		d_counts[row] = (inner_begin > 0 ? d_counts[row] : 0) + count;
}

/*
 * Write the matches first .. window_end - 1 that outer rows row_begin ..
 * row_end - 1 find among inner rows inner_begin .. inner_end - 1
 *
 * Each thread's row numbers its matches on from d_cursors[row] (from
 * offsets[row] in the launch of the first inner rows) and leaves its next
 * number there; match m goes to slot m - first of the maps that are not
 * NULL.  A thread is done when its row has no match left in the window;
 * the block stops loading tiles once all its threads are.
 */
template <int NTERMS>
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
nlj_retrieve_kernel(const NljSide inner, const NljSide outer, const NljOps ops,
					int tile_rows, int64_t row_begin, int64_t row_end,
					int64_t inner_begin, int64_t inner_end,
					const uint64_t *__restrict__ d_offsets,
					uint64_t *__restrict__ d_cursors, uint64_t first,
					uint64_t window_end, GjRowId *__restrict__ d_outer_rows,
					GjRowId *__restrict__ d_inner_rows)
{
	extern __shared__ uint64_t s_tile[];
	uint64_t   *s_terms = s_tile;
	uint8_t    *s_skip = (uint8_t *) (s_tile + NTERMS * tile_rows);
	int64_t		row = row_begin + (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	NljRowTest<NTERMS> test;
	uint64_t	match = 0;
	uint64_t	end = 0;
	bool		active = false;

	if (row < row_end)
	{
		match = inner_begin == 0 ? d_offsets[row] : d_cursors[row];
		end = d_offsets[row + 1] < window_end ? d_offsets[row + 1] : window_end;
		active = match < end && PrepareRow<NTERMS>(outer, ops, row, &test);
	}

	for (int64_t tile = inner_begin; __syncthreads_or(active) && tile < inner_end;
		 tile += tile_rows)
	{
		int			n = (int) (inner_end - tile < tile_rows ? inner_end - tile : tile_rows);
		bool		skips = LoadTile<NTERMS>(inner, tile, n, tile_rows, s_terms, s_skip);

		for (int j = 0; active && j < n; j++)
		{
			if ((skips && s_skip[j]) || !PairHolds<NTERMS>(test, s_terms, tile_rows, j))
				continue;
			if (match >= first)
			{
				if (d_outer_rows != NULL)
					d_outer_rows[match - first] = (GjRowId) row;
				if (d_inner_rows != NULL)
					d_inner_rows[match - first] = (GjRowId) (tile + j);
			}
			match++;
			active = match < end;
		}
		/* the barrier of the loop's condition comes before the next load */
	}
	if (row < row_end)
		d_cursors[row] = match;
}

/* The rows whose matches meet the window [first, last]: d_window[0 .. 1] */
__global__ void
nlj_window_kernel(const uint64_t *__restrict__ d_offsets, int64_t nrows,
				  uint64_t first, uint64_t last, int64_t *__restrict__ d_window)
{
	if (gj_thread_index() == 0)
	{
		d_window[0] = gj_seek_match_row(d_offsets, nrows, first);
		d_window[1] = gj_seek_match_row(d_offsets, nrows, last) + 1;
	}
}

/*
 * How the pairs of outer rows [0, nrows) x the inner side are cut into
 * launches: outer slices of *rows_per_launch rows (a multiple of the block,
 * at least one full wave of the device's blocks), and inner slices of
 * *inner_per_launch rows (a multiple of the tile), so that a launch makes
 * at most NLJ_LAUNCH_COMPARISONS comparisons, or the fewest that one wave
 * against one tile makes
 */
static void
PlanLaunches(const GjCudaContext *ctx, int64_t inner_rows, int tile_rows,
			 int64_t *rows_per_launch, int64_t *inner_per_launch)
{
	int64_t		pairs = NLJ_LAUNCH_COMPARISONS / ctx->spec.nterms;
	int64_t		wave = (int64_t) ctx->max_grid * GJ_BLOCK_SIZE;
	int64_t		rows = pairs / (inner_rows > 0 ? inner_rows : 1);
	int64_t		inner;

	rows -= rows % GJ_BLOCK_SIZE;
	if (rows < wave)
		rows = wave;
	inner = pairs / rows;
	if (inner >= inner_rows)
		inner = inner_rows;		/* the whole inner side in one launch */
	else
	{
		inner -= inner % tile_rows;
		if (inner < tile_rows)
			inner = tile_rows;
	}
	*rows_per_launch = rows;
	*inner_per_launch = inner;
}

/* Launch the count kernel of nterms terms (1 .. GJ_MAX_TERMS) */
template <int NTERMS>
static void
LaunchCount(const GjCudaContext *ctx, const NljSide &inner, const NljSide &outer,
			const NljOps &ops, int tile_rows, int64_t row_begin, int64_t row_end,
			int64_t inner_begin, int64_t inner_end, uint64_t *d_counts)
{
	int64_t		blocks = (row_end - row_begin + GJ_BLOCK_SIZE - 1) / GJ_BLOCK_SIZE;
	size_t		shared = (size_t) tile_rows * (NTERMS * sizeof(uint64_t) + 1);

	nlj_count_kernel<NTERMS><<<(unsigned int) blocks, GJ_BLOCK_SIZE, shared, ctx->stream>>>(
		inner, outer, ops, tile_rows, row_begin, row_end, inner_begin, inner_end,
		d_counts);
}

/* Launch the retrieve kernel of nterms terms (1 .. GJ_MAX_TERMS) */
template <int NTERMS>
static void
LaunchRetrieve(const GjCudaContext *ctx, const NljSide &inner,
			   const NljSide &outer, const NljOps &ops, int tile_rows,
			   int64_t row_begin, int64_t row_end, int64_t inner_begin,
			   int64_t inner_end, const uint64_t *d_offsets,
			   uint64_t *d_cursors, uint64_t first, uint64_t window_end,
			   GjRowId *d_outer_rows, GjRowId *d_inner_rows)
{
	int64_t		blocks = (row_end - row_begin + GJ_BLOCK_SIZE - 1) / GJ_BLOCK_SIZE;
	size_t		shared = (size_t) tile_rows * (NTERMS * sizeof(uint64_t) + 1);

	nlj_retrieve_kernel<NTERMS><<<(unsigned int) blocks, GJ_BLOCK_SIZE, shared, ctx->stream>>>(
		inner, outer, ops, tile_rows, row_begin, row_end, inner_begin, inner_end,
		d_offsets, d_cursors, first, window_end, d_outer_rows, d_inner_rows);
}

/* Dispatch on the number of terms: the kernels are instantiated for each */
#define NLJ_DISPATCH(nterms, launch, args) \
	do { \
		switch (nterms) \
		{ \
			case 1: launch<1> args; break; \
			case 2: launch<2> args; break; \
			case 3: launch<3> args; break; \
			case 4: launch<4> args; break; \
			case 5: launch<5> args; break; \
			case 6: launch<6> args; break; \
			case 7: launch<7> args; break; \
			default: launch<8> args; break; \
		} \
	} while (0)

/* The spec's comparisons, for the kernels */
static NljOps
CurrentOps(const GjCudaContext *ctx)
{
	NljOps		ops;

	memset(&ops, 0, sizeof(ops));
	for (int t = 0; t < ctx->spec.nterms; t++)
		ops.ops[t] = ctx->spec.ops[t];
	return ops;
}

/*
 * bench_theta.c's tile sweep sets this; 0 (always, in the extension) keeps
 * gj_nlj_tile_rows()
 */
extern "C" int gj_nlj_tile_rows_override = 0;

/* Inner rows of one tile: gj_nlj_tile_rows(), unless a benchmark says */
static int
NljTileRows(int nterms)
{
	int			rows = gj_nlj_tile_rows_override;

	if (rows <= 0 || rows % GJ_NLJ_TILE_ALIGN != 0 ||
		(size_t) rows * (nterms * sizeof(uint64_t) + 1) > GJ_NLJ_TILE_BYTES)
		return gj_nlj_tile_rows(nterms);
	return rows;
}

/* The body of the NLJ count, for a chunk that can have matches */
static GjStatus
CountChunk(GjCudaContext *ctx, NljState *state, const GjBatch *outer,
		   uint64_t *nmatches, GjError *err)
{
	int64_t		nrows = outer->nrows;
	int			nterms = ctx->spec.nterms;
	int			tile_rows = NljTileRows(nterms);
	NljOps		ops = CurrentOps(ctx);
	NljSide		inner_side;
	NljSide		outer_side;
	uint64_t   *d_offsets;
	int64_t		rows_per_launch;
	int64_t		inner_per_launch;
	uint64_t	total = 0;

	/* 1. The outer terms, and the rows with a NULL term */
	GJ_TRY(UploadTerms(ctx, state, outer, NLJ_OUTER_TERMS, NLJ_OUTER_SKIP,
					   &state->outer_skip, err));
	GJ_TRY(NljReserve(ctx, state, NLJ_OFFSETS, ((size_t) nrows + 1) * sizeof(uint64_t), err));
	GJ_TRY(NljReserve(ctx, state, NLJ_CURSORS, (size_t) nrows * sizeof(uint64_t), err));
	d_offsets = NLJ_BUFFER(state, NLJ_OFFSETS, uint64_t);
	inner_side = CurrentSide(state, GJ_SIDE_INNER, state->inner_rows);
	outer_side = CurrentSide(state, GJ_SIDE_OUTER, nrows);

	/*
	 * 2. The counts of every row, launch by launch; each launch is waited
	 * for, so that the stream never holds more than one
	 */
	PlanLaunches(ctx, state->inner_rows, tile_rows, &rows_per_launch,
				 &inner_per_launch);
	for (int64_t row = 0; row < nrows; row += rows_per_launch)
	{
		int64_t		row_end = nrows - row < rows_per_launch ? nrows : row + rows_per_launch;

		for (int64_t in = 0; in < state->inner_rows; in += inner_per_launch)
		{
			int64_t		in_end = state->inner_rows - in < inner_per_launch ?
				state->inner_rows : in + inner_per_launch;

			NLJ_DISPATCH(nterms, LaunchCount,
						 (ctx, inner_side, outer_side, ops, tile_rows, row,
						  row_end, in, in_end, d_offsets));
			GJ_CUDA_TRY(err, cudaGetLastError());
			GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
		}
	}

	/* 3. Offsets by prefix sum, over one more element, 0, to end in the total */
	GJ_CUDA_TRY(err, cudaMemsetAsync(d_offsets + nrows, 0, sizeof(uint64_t), ctx->stream));
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
 * Keeps the chunk's terms, match offsets and payload columns on the device
 * for retrieve.
 */
static GjStatus
NljCount(GjCudaContext *ctx, const GjBatch *outer, uint64_t *nmatches,
		 GjError *err)
{
	NljState   *state = (NljState *) ctx->variant_state;

	*nmatches = 0;
	if (state != NULL)
		state->outer_skip = false;
	/* Nothing can match: no device work, retrieve returns 0 */
	if (outer->nrows == 0 || state == NULL || state->inner_rows == 0)
		return GJ_OK;
	return CountChunk(ctx, state, outer, nmatches, err);
}

/*
 * Write the round maps of the matches first .. first + round_size - 1
 * (GjCudaVariant.retrieve)
 *
 * The outer rows whose matches meet the window come back from the device
 * first, so that only they are launched, in slices like the count's.
 * Both sides' payload comes by row (gj_round_plan), so the round's maps
 * are the rows alone, and when the round needs neither (no payload, no
 * row ids) there is nothing to write.
 */
static GjStatus
NljRetrieve(GjCudaContext *ctx, uint64_t first, int64_t round_size,
			GjRoundSources *sources, GjError *err)
{
	NljState   *state = (NljState *) ctx->variant_state;
	int			nterms = ctx->spec.nterms;
	int			tile_rows = NljTileRows(nterms);
	uint64_t	window_end = first + (uint64_t) round_size;
	NljOps		ops = CurrentOps(ctx);
	NljSide		inner_side = CurrentSide(state, GJ_SIDE_INNER, state->inner_rows);
	NljSide		outer_side = CurrentSide(state, GJ_SIDE_OUTER, ctx->outer_rows);
	const uint64_t *d_offsets = NLJ_BUFFER(state, NLJ_OFFSETS, const uint64_t);
	GjRowId    *maps[GJ_NUM_ROUND_MAPS];
	int64_t		window[2] = {0, 0};
	int64_t		rows_per_launch;
	int64_t		inner_per_launch;

	GJ_TRY(gj_cuda_round_maps_reserve(ctx, false, round_size, sources, maps, err));
	if (maps[GJ_ROUND_OUTER_ROWS] == NULL && maps[GJ_ROUND_INNER_ROWS] == NULL)
		return GJ_OK;

	/* 1. The rows of the window */
	GJ_TRY(NljReserve(ctx, state, NLJ_WINDOW, sizeof(window), err));
	nlj_window_kernel<<<1, 1, 0, ctx->stream>>>(d_offsets, ctx->outer_rows, first,
												window_end - 1,
												NLJ_BUFFER(state, NLJ_WINDOW, int64_t));
	GJ_CUDA_TRY(err, cudaGetLastError());
	GJ_TRY(gj_cuda_copy_from_device(ctx, window, state->buffers[NLJ_WINDOW].ptr,
									sizeof(window), err));

	/* 2. Their matches, launch by launch, each waited for */
	PlanLaunches(ctx, state->inner_rows, tile_rows, &rows_per_launch,
				 &inner_per_launch);
	for (int64_t row = window[0]; row < window[1]; row += rows_per_launch)
	{
		int64_t		row_end = window[1] - row < rows_per_launch ? window[1] : row + rows_per_launch;

		for (int64_t in = 0; in < state->inner_rows; in += inner_per_launch)
		{
			int64_t		in_end = state->inner_rows - in < inner_per_launch ?
				state->inner_rows : in + inner_per_launch;

			NLJ_DISPATCH(nterms, LaunchRetrieve,
						 (ctx, inner_side, outer_side, ops, tile_rows, row,
						  row_end, in, in_end, d_offsets,
						  NLJ_BUFFER(state, NLJ_CURSORS, uint64_t), first,
						  window_end, maps[GJ_ROUND_OUTER_ROWS],
						  maps[GJ_ROUND_INNER_ROWS]));
			GJ_CUDA_TRY(err, cudaGetLastError());
			GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
		}
	}
	return GJ_OK;
}

/* Free the state and its device arrays (GjCudaVariant.destroy_state) */
static void
NljDestroyState(GjCudaContext *ctx)
{
	NljState   *state = (NljState *) ctx->variant_state;

	if (state == NULL)
		return;
	for (int id = 0; id < NLJ_NUM_BUFFERS; id++)
		NljRelease(ctx, state, (NljBufferId) id);
	free(state);
	ctx->variant_state = NULL;
}

const GjCudaVariant gj_cuda_nlj = {
	"NLJ",						/* name */
	NljBuild,
	NljCount,
	NljRetrieve,
	NljDestroyState,
};
