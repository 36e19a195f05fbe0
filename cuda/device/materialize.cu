/*-------------------------------------------------------------------------
 *
 * materialize.cu
 *	  Payload columns on the device, and the rounds they are handed out in,
 *	  for every variant
 *
 * A join's output is, per match, the values of each side's fixed-width
 * payload columns (1, 2, 4 or 8 bytes, with optional NULL flags), besides
 * the row numbers.  Producing them is the most expensive part of a GPU
 * join, "up to 75% of the overall runtime" (Wu et al. 2025, §1), because
 * gathering a payload value for each match is a random access unless the
 * columns were rearranged to match the order in which they are read.  The
 * two ways to get there (Wu et al. 2025, §4.1):
 *
 *	  GFUR	the variant transforms (key, row id) only; each round gathers
 *			every payload column by the matches' row ids, from the columns
 *			as they came: one random access per match and column
 *	  GFTR	the variant transforms every payload column along with the keys,
 *			with the same stable transform; each round gathers from the
 *			transformed columns by the matches' positions there: clustered
 *			accesses, at the price of one transform per column
 *
 * Modeled (Wu et al. 2025, §4.1.4), GFUR costs ~ 104 M / B_G and GFTR ~
 * (36 N + 12 M) / B_G per 4-byte column (M matches, N rows), so that
 * GFTR pays off once matches are many per transformed row.  Which one a
 * join uses is the spec's; the values handed out are the same either way,
 * element by element.
 *
 * WHAT IS HERE
 *
 * The pieces every variant shares (a variant file only says whether it
 * transforms the outer side too; gj_round_plan, common.h, then chooses
 * which set and which map each side's round is gathered from):
 *
 *	  column sets	GjDeviceColumns by GjColumnSetId (common.h): one side's
 *					values and NULL flags, a grow-only GjDeviceBuffer each,
 *					counted against the memory limit, freed with the context
 *	  upload		gj_cuda_columns_upload: a batch's columns into a set
 *	  reserve		gj_cuda_columns_reserve: a set sized for a variant that
 *					fills it itself (PHJ sorts GFTR columns into it)
 *	  gather		gj_cuda_columns_gather: dst[i] = src[map[i]] for every
 *					column of a side, one kernel for all of them; used for
 *					a GFTR transform (the map is the transform's permutation)
 *					and for every round (the map is the round's rows or
 *					positions)
 *	  load			gj_cuda_columns_load: upload, then for GFTR the gather
 *					by the variant's transform; a variant's build (and
 *					SMJ's count) takes its payload in with it
 *	  round maps	GjRowId arrays a variant's retrieve writes (GjRoundMap),
 *					planned and reserved by gj_cuda_round_maps_reserve
 *	  the round		page-locked host arrays (GjPinnedRound): max_matches
 *					values per column and row numbers, allocated with the
 *					context; NULL arrays when a column first comes with
 *					NULL flags.  gj_cuda_round_materialize gathers both sides
 *					and copies them out; gj_cuda_round_fill points a
 *					GjMatchRound at them.  A round retrieved for another
 *					context's count (retrieve_device) is not copied out:
 *					the GjMatchRound points at the ROUND sets and the row
 *					maps on the device.
 *
 * COSTS
 *
 * Device memory per row of a side: the width of each column, plus one
 * byte for each column with NULL flags ("P bytes a row" in the variant
 * banners), once per set that holds the side.  A round takes P (outer) +
 * P (inner) bytes a match on the device and the same in page-locked host
 * memory, plus 4 bytes a match per round map.  The gather reads the map
 * once and each column once per match; writes are coalesced.
 *
 * CPU twin: materialize_cpu.c (same functions, same order).
 *
 * IDENTIFICATION
 *	  cuda/device/materialize.cu
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "common.cuh"
#include "gpujoin_kernels.h"

/*
 * One gather, as the kernel sees it: for each column of one side, where
 * to read and write its values and NULL flags.  Passed by value (1.3 kB,
 * well within the 4 kB of kernel parameters).
 */
typedef struct GjGatherColumn
{
	const void *src;
	void	   *dst;
	const uint8_t *src_nulls;	/* NULL: the column has no NULL flags */
	uint8_t    *dst_nulls;
	int			width;
} GjGatherColumn;

typedef struct GjGatherPlan
{
	int			ncolumns;
	GjGatherColumn columns[GJ_MAX_COLUMNS];
} GjGatherPlan;

/* Name of column c of a set, for error messages */
static const char *
ColumnName(GjColumnSetId set, int c, bool nulls, char *buf, size_t size)
{
	snprintf(buf, size, "the %s %d%s", gj_column_set_name(set), c,
			 nulls ? "'s NULL flags" : "");
	return buf;
}

/* Make every column of set hold nrows rows; NULL arrays where has_nulls */
static GjStatus
ReserveColumns(GjCudaContext *ctx, GjColumnSetId set, int64_t nrows,
			   const bool *has_nulls, GjError *err)
{
	GjDeviceColumns *cols = &ctx->columns[set];
	int			ncolumns = gj_side_ncolumns(&ctx->spec, cols->side);
	const int32_t *widths = gj_side_widths(&ctx->spec, cols->side);
	char		name[96];

	for (int c = 0; c < ncolumns; c++)
	{
		GJ_TRY(gj_cuda_device_reserve(ctx, &cols->values[c],
									  (size_t) nrows * (size_t) widths[c],
									  ColumnName(set, c, false, name, sizeof(name)),
									  err));
		cols->has_nulls[c] = has_nulls[c];
		if (has_nulls[c])
			GJ_TRY(gj_cuda_device_reserve(ctx, &cols->nulls[c], (size_t) nrows,
										  ColumnName(set, c, true, name, sizeof(name)),
										  err));
	}
	cols->nrows = nrows;
	return GJ_OK;
}

/* Give each column set its side; called once, by context_create */
void
gj_cuda_columns_init(GjCudaContext *ctx)
{
	for (int set = 0; set < GJ_NUM_COLUMN_SETS; set++)
	{
		ctx->columns[set].side = gj_column_set_side((GjColumnSetId) set);
		ctx->columns[set].nrows = 0;
	}
}

/*
 * Copy a batch's payload columns (those of the set's side) into set
 *
 * The values as they are, in row order; the NULL flags of the columns
 * that have them.
 */
GjStatus
gj_cuda_columns_upload(GjCudaContext *ctx, GjColumnSetId set,
					   const GjBatch *batch, GjError *err)
{
	GjDeviceColumns *cols = &ctx->columns[set];
	int			ncolumns = gj_side_ncolumns(&ctx->spec, cols->side);
	const int32_t *widths = gj_side_widths(&ctx->spec, cols->side);
	size_t		nrows = (size_t) batch->nrows;
	bool		has_nulls[GJ_MAX_COLUMNS];

	memset(has_nulls, 0, sizeof(has_nulls));
	for (int c = 0; c < ncolumns; c++)
		has_nulls[c] = (batch->columns[c].nulls != NULL);
	GJ_TRY(ReserveColumns(ctx, set, batch->nrows, has_nulls, err));

	for (int c = 0; c < ncolumns; c++)
	{
		GJ_TRY(gj_cuda_copy_to_device(ctx, cols->values[c].ptr,
									  batch->columns[c].values,
									  nrows * (size_t) widths[c], err));
		if (has_nulls[c])
			GJ_TRY(gj_cuda_copy_to_device(ctx, cols->nulls[c].ptr,
										  batch->columns[c].nulls, nrows, err));
	}
	return GJ_OK;
}

/*
 * Make every column of set hold nrows rows, with NULL flags where
 * has_nulls[c], for a variant that fills the set itself (PHJ's GFTR
 * transform sorts each column into it)
 */
GjStatus
gj_cuda_columns_reserve(GjCudaContext *ctx, GjColumnSetId set, int64_t nrows,
						const bool *has_nulls, GjError *err)
{
	return ReserveColumns(ctx, set, nrows, has_nulls, err);
}

/* dst[i] = src[row] for one value of type T */
template <typename T>
static __device__ __forceinline__ void
GatherValue(const void *src, void *dst, int64_t i, GjRowId row)
{
	((T *) dst)[i] = ((const T *) src)[row];
}

/*
 * dst[i] = src[map[i]] for i in [0, n), for every column of the plan
 *
 * One thread per i, grid-stride.  Each thread reads its map entry once and
 * then moves one value (and NULL flag) per column: the loads of different
 * columns are independent, so a thread has several in flight, and the
 * writes of a warp are 32 neighbouring elements.  Whether the loads are
 * random (GFUR) or clustered (GFTR) is the map's doing.  The switch on the
 * width takes the same branch in every thread.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
gather_columns_kernel(const GjGatherPlan plan,
					  const GjRowId *__restrict__ d_map, int64_t n)
{
	for (int64_t i = gj_thread_index(); i < n; i += gj_grid_stride())
	{
		GjRowId		row = d_map[i];

		if (row == GJ_NO_ROW)
		{
			/* a left join's row with no match: NULL in every column */
			for (int c = 0; c < plan.ncolumns; c++)
			{
				const GjGatherColumn *col = &plan.columns[c];

				memset((char *) col->dst + i * col->width, 0, col->width);
				if (col->dst_nulls != NULL)
					col->dst_nulls[i] = 1;
			}
			continue;
		}
		for (int c = 0; c < plan.ncolumns; c++)
		{
			const GjGatherColumn *col = &plan.columns[c];

			switch (col->width)
			{
				case 1:
					GatherValue<uint8_t>(col->src, col->dst, i, row);
					break;
				case 2:
					GatherValue<uint16_t>(col->src, col->dst, i, row);
					break;
				case 4:
					GatherValue<uint32_t>(col->src, col->dst, i, row);
					break;
				default:
					GatherValue<uint64_t>(col->src, col->dst, i, row);
					break;
			}
			if (col->dst_nulls != NULL)
				col->dst_nulls[i] = col->src_nulls != NULL ? col->src_nulls[row] : 0;
		}
	}
}

/*
 * Gather every column of set src into set dst: dst[i] = src[d_map[i]] for
 * i in [0, n), NULL flags included where src has them or the spec makes
 * the side have them (gj_column_has_nulls); d_map[i] GJ_NO_ROW: NULL
 *
 * src and dst hold the same side; d_map is a device array of n row
 * numbers (or positions) of src.  For a GFTR transform, d_map is the
 * transform's permutation (NPHJ: the inner rows in entry order); for a
 * round, the round's map.  Queued on the stream, not waited for.
 */
GjStatus
gj_cuda_columns_gather(GjCudaContext *ctx, GjColumnSetId dst,
					   GjColumnSetId src, const GjRowId *d_map, int64_t n,
					   GjError *err)
{
	GjDeviceColumns *to = &ctx->columns[dst];
	const GjDeviceColumns *from = &(gj_column_set_built(src) ?
									GJ_CUDA_BUILD(ctx) : ctx)->columns[src];
	int			ncolumns = gj_side_ncolumns(&ctx->spec, from->side);
	const int32_t *widths = gj_side_widths(&ctx->spec, from->side);
	bool		has_nulls[GJ_MAX_COLUMNS] = {false};
	GjGatherPlan plan;

	if (to->side != from->side)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"Cannot gather the %ss into the %ss.",
							gj_column_set_name(src), gj_column_set_name(dst));
	for (int c = 0; c < ncolumns; c++)
		has_nulls[c] = gj_column_has_nulls(&ctx->spec, from->side, from->has_nulls[c]);
	GJ_TRY(ReserveColumns(ctx, dst, n, has_nulls, err));
	if (ncolumns == 0 || n == 0)
		return GJ_OK;

	memset(&plan, 0, sizeof(plan));
	plan.ncolumns = ncolumns;
	for (int c = 0; c < ncolumns; c++)
	{
		plan.columns[c].src = from->values[c].ptr;
		plan.columns[c].dst = to->values[c].ptr;
		plan.columns[c].src_nulls = from->has_nulls[c] ? (const uint8_t *) from->nulls[c].ptr : NULL;
		plan.columns[c].dst_nulls = has_nulls[c] ? (uint8_t *) to->nulls[c].ptr : NULL;
		plan.columns[c].width = widths[c];
	}
	gather_columns_kernel<<<gj_cuda_grid_size(ctx, n), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		plan, d_map, n);
	GJ_CUDA_TRY(err, cudaGetLastError());
	return GJ_OK;
}

/*
 * Take in a batch's payload columns (those of side) as the spec's
 * materialization wants them: copied into the side's set, GJ_COLUMNS_INNER
 * or GJ_COLUMNS_OUTER; for GFTR also gathered by d_map[0 .. n) into the
 * side's transformed set.  Nothing when the side has no payload columns.
 *
 * d_map is the variant's stable transform of the side's keys, as the rows
 * in transformed order (NPHJ: the inner rows in entry order; SMJ: each
 * side's rows in sorted order).  PHJ partitions each column instead, and
 * calls the pieces itself.  The gather is queued on the stream, not
 * waited for.
 */
GjStatus
gj_cuda_columns_load(GjCudaContext *ctx, GjSide side, const GjBatch *batch,
					 const GjRowId *d_map, int64_t n, GjError *err)
{
	GjColumnSetId set = side == GJ_SIDE_INNER ? GJ_COLUMNS_INNER : GJ_COLUMNS_OUTER;
	GjColumnSetId transformed = side == GJ_SIDE_INNER ?
		GJ_COLUMNS_INNER_TRANSFORMED : GJ_COLUMNS_OUTER_TRANSFORMED;

	if (gj_side_ncolumns(&ctx->spec, side) == 0)
		return GJ_OK;
	GJ_TRY(gj_cuda_columns_upload(ctx, set, batch, err));
	if (ctx->spec.materialize == GJ_MATERIALIZE_GFTR)
		GJ_TRY(gj_cuda_columns_gather(ctx, transformed, set, d_map, n, err));
	return GJ_OK;
}

/* Free set's buffers; the set can be filled again */
void
gj_cuda_columns_release(GjCudaContext *ctx, GjColumnSetId set)
{
	GjDeviceColumns *cols = &ctx->columns[set];

	for (int c = 0; c < GJ_MAX_COLUMNS; c++)
	{
		gj_cuda_device_release(ctx, &cols->values[c]);
		gj_cuda_device_release(ctx, &cols->nulls[c]);
		cols->has_nulls[c] = false;
	}
	cols->nrows = 0;
}

/* What a round map holds, for error messages */
static const char *
RoundMapName(GjRoundMap map)
{
	switch (map)
	{
		case GJ_ROUND_OUTER_ROWS:
			return "a round's outer rows";
		case GJ_ROUND_INNER_ROWS:
			return "a round's inner rows";
		case GJ_ROUND_OUTER_POS:
			return "a round's outer positions";
		case GJ_ROUND_INNER_POS:
			return "a round's inner positions";
		case GJ_NUM_ROUND_MAPS:
			break;
	}
	return "a round map";
}

/*
 * Plan a variant's round of n matches (gj_round_plan, common.h: *sources,
 * and the maps it needs) and make each map it needs hold n entries:
 * maps[map] points at the map's device memory, or is NULL when the round
 * does not need it.  The variant's retrieve then writes every map that is
 * not NULL.
 */
GjStatus
gj_cuda_round_maps_reserve(GjCudaContext *ctx, bool outer_transformed,
						   int64_t n, GjRoundSources *sources,
						   GjRowId *maps[GJ_NUM_ROUND_MAPS], GjError *err)
{
	bool		need[GJ_NUM_ROUND_MAPS];

	gj_round_plan(&ctx->spec, outer_transformed, sources, need);
	for (int map = 0; map < GJ_NUM_ROUND_MAPS; map++)
	{
		maps[map] = NULL;
		if (!need[map])
			continue;
		GJ_TRY(gj_cuda_device_reserve(ctx, &ctx->round_maps[map],
									  (size_t) n * sizeof(GjRowId),
									  RoundMapName((GjRoundMap) map), err));
		maps[map] = GJ_ROUND_MAP(ctx, (GjRoundMap) map);
	}
	return GJ_OK;
}

/*
 * Allocate a page-locked host array of a round, once
 *
 * A failure is the host's, not the device's: GJ_ERROR_HOST_MEMORY.
 */
static GjStatus
AllocPinned(GjCudaContext *ctx, void **ptr, size_t bytes, GjError *err)
{
	if (*ptr != NULL)
		return GJ_OK;
	*ptr = gj_cuda_pinned_alloc(bytes);
	if (*ptr == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate %zu bytes of page-locked host memory for a round of matches.",
							bytes);
	ctx->pinned_bytes += bytes;
	return GJ_OK;
}

/*
 * Make sure the round's page-locked arrays exist
 *
 * Called by context_create, for the row numbers (when spec.row_ids) and
 * the values of each payload column, max_matches of each; and by each
 * retrieve, for the NULL arrays of the columns that have come with NULL
 * flags since (max_matches bytes each, allocated once).  An array is
 * never reallocated, so its address stays the same for the context's
 * life.
 */
GjStatus
gj_cuda_round_alloc(GjCudaContext *ctx, GjError *err)
{
	size_t		max_matches = (size_t) ctx->spec.max_matches;
	GjPinnedRound *pinned = &ctx->pinned;

	for (int s = 0; s < GJ_NUM_SIDES; s++)
	{
		GjSide		side = (GjSide) s;
		int			ncolumns = gj_side_ncolumns(&ctx->spec, side);
		const int32_t *widths = gj_side_widths(&ctx->spec, side);

		if (ctx->spec.row_ids)
			GJ_TRY(AllocPinned(ctx, (void **) &pinned->rows[side],
							   max_matches * sizeof(GjRowId), err));
		for (int c = 0; c < ncolumns; c++)
		{
			GJ_TRY(AllocPinned(ctx, &pinned->values[side][c],
							   max_matches * (size_t) widths[c], err));
			if (ctx->has_nulls[side][c])
				GJ_TRY(AllocPinned(ctx, (void **) &pinned->nulls[side][c],
								   max_matches, err));
		}
	}
	return GJ_OK;
}

static const GjColumnSetId round_sets[GJ_NUM_SIDES] = {
	GJ_COLUMNS_ROUND_OUTER, GJ_COLUMNS_ROUND_INNER
};

/*
 * Gather a round of n matches whose maps the variant has written: each
 * side's payload columns from the set that sources names, at the rows or
 * positions its map holds, into the ROUND sets, on the device
 */
GjStatus
gj_cuda_round_gather(GjCudaContext *ctx, const GjRoundSources *sources, int64_t n,
					 GjError *err)
{
	for (int s = 0; s < GJ_NUM_SIDES; s++)
	{
		if (gj_side_ncolumns(&ctx->spec, (GjSide) s) > 0)
			GJ_TRY(gj_cuda_columns_gather(ctx, round_sets[s], sources->columns[s],
										  GJ_ROUND_MAP(ctx, sources->map[s]),
										  n, err));
	}
	return GJ_OK;
}

/* rows[i] = numbers[rows[i]]: a round's row positions as the batch numbers them */
static __global__ void
number_rows_kernel(GjRowId *__restrict__ rows, const GjRowId *__restrict__ numbers,
				   int64_t n)
{
	for (int64_t i = gj_thread_index(); i < n; i += gj_grid_stride())
		if (rows[i] != GJ_NO_ROW)
			rows[i] = numbers[rows[i]];
}

/*
 * Materialize a round of n matches whose maps the variant has written:
 * gather it (gj_cuda_round_gather), then copy the ROUND sets, and the row
 * numbers when spec.row_ids, into the page-locked arrays; or, with
 * on_device, point on_device at them where they are, once the stream is
 * done with them
 */
GjStatus
gj_cuda_round_materialize(GjCudaContext *ctx, const GjRoundSources *sources,
						  int64_t n, GjMatchRound *on_device, GjError *err)
{
	static const GjRoundMap row_maps[GJ_NUM_SIDES] = {
		GJ_ROUND_OUTER_ROWS, GJ_ROUND_INNER_ROWS
	};

	GJ_TRY(gj_cuda_round_gather(ctx, sources, n, err));

	for (int s = 0; s < GJ_NUM_SIDES; s++)
	{
		GjSide		side = (GjSide) s;
		const GjDeviceColumns *cols = &ctx->columns[round_sets[s]];
		int			ncolumns = gj_side_ncolumns(&ctx->spec, side);
		const int32_t *widths = gj_side_widths(&ctx->spec, side);

		if (ctx->spec.row_ids && gj_side_matched(&ctx->spec, side))
		{
			const GjCudaContext *of = side == GJ_SIDE_INNER ? GJ_CUDA_BUILD(ctx) : ctx;
			GjRowId    *rows = GJ_ROUND_MAP(ctx, row_maps[s]);

			/* the batch's own numbers for its rows, where it had them (the
			 * gathers above are done with the map) */
			if (of->has_row_numbers[side] && n > 0)
			{
				GjBufferId	id = side == GJ_SIDE_INNER ?
					GJ_BUFFER_INNER_ROW_NUMBERS : GJ_BUFFER_OUTER_ROW_NUMBERS;

				number_rows_kernel<<<gj_cuda_grid_size(ctx, n), GJ_BLOCK_SIZE, 0, ctx->stream>>>
					(rows, (const GjRowId *) of->buffers[id].ptr, n);
				GJ_CUDA_TRY(err, cudaGetLastError());
			}
			if (on_device != NULL)
				*(side == GJ_SIDE_INNER ? &on_device->inner_rows : &on_device->outer_rows) = rows;
			else
				GJ_TRY(gj_cuda_copy_from_device(ctx, ctx->pinned.rows[side], rows,
												(size_t) n * sizeof(GjRowId), err));
		}
		for (int c = 0; c < ncolumns; c++)
		{
			/* a variant that gathered from a set of another batch */
			if (cols->has_nulls[c] != ctx->has_nulls[side][c])
				return gj_error_set(err, GJ_ERROR_KERNEL,
									"The %s payload column %d of a round was gathered from columns of another batch.",
									gj_side_name(side), c);
			if (on_device != NULL)
			{
				const uint8_t *nulls = ctx->has_nulls[side][c] ?
					(const uint8_t *) cols->nulls[c].ptr : NULL;

				if (side == GJ_SIDE_INNER)
				{
					on_device->inner_values[c] = cols->values[c].ptr;
					on_device->inner_nulls[c] = nulls;
				}
				else
				{
					on_device->outer_values[c] = cols->values[c].ptr;
					on_device->outer_nulls[c] = nulls;
				}
				continue;
			}
			GJ_TRY(gj_cuda_copy_from_device(ctx, ctx->pinned.values[side][c],
											cols->values[c].ptr,
											(size_t) n * (size_t) widths[c], err));
			if (ctx->has_nulls[side][c])
				GJ_TRY(gj_cuda_copy_from_device(ctx, ctx->pinned.nulls[side][c],
												cols->nulls[c].ptr, (size_t) n,
												err));
		}
	}
	if (on_device != NULL)
		GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
	return GJ_OK;
}

/*
 * Point round at the page-locked arrays, with no matches yet
 *
 * The row arrays when spec.row_ids; the values of every payload column;
 * the NULL flags of those that came with them; NULL everywhere else.
 */
void
gj_cuda_round_fill(const GjCudaContext *ctx, GjMatchRound *round)
{
	const GjPinnedRound *pinned = &ctx->pinned;

	memset(round, 0, sizeof(GjMatchRound));
	if (ctx->spec.row_ids)
	{
		round->outer_rows = pinned->rows[GJ_SIDE_OUTER];
		if (gj_side_matched(&ctx->spec, GJ_SIDE_INNER))
			round->inner_rows = pinned->rows[GJ_SIDE_INNER];
	}
	for (int c = 0; c < ctx->spec.outer_ncolumns; c++)
	{
		round->outer_values[c] = pinned->values[GJ_SIDE_OUTER][c];
		if (ctx->has_nulls[GJ_SIDE_OUTER][c])
			round->outer_nulls[c] = pinned->nulls[GJ_SIDE_OUTER][c];
	}
	for (int c = 0; c < ctx->spec.inner_ncolumns; c++)
	{
		round->inner_values[c] = pinned->values[GJ_SIDE_INNER][c];
		if (ctx->has_nulls[GJ_SIDE_INNER][c])
			round->inner_nulls[c] = pinned->nulls[GJ_SIDE_INNER][c];
	}
}

/*
 * Free every column set, round map and page-locked array; for
 * context_destroy, so errors are ignored
 */
void
gj_cuda_materialize_release(GjCudaContext *ctx)
{
	GjPinnedRound *pinned = &ctx->pinned;

	for (int set = 0; set < GJ_NUM_COLUMN_SETS; set++)
		gj_cuda_columns_release(ctx, (GjColumnSetId) set);
	for (int map = 0; map < GJ_NUM_ROUND_MAPS; map++)
		gj_cuda_device_release(ctx, &ctx->round_maps[map]);

	for (int s = 0; s < GJ_NUM_SIDES; s++)
	{
		gj_cuda_pinned_free(pinned->rows[s]);
		pinned->rows[s] = NULL;
		for (int c = 0; c < GJ_MAX_COLUMNS; c++)
		{
			gj_cuda_pinned_free(pinned->values[s][c]);
			gj_cuda_pinned_free(pinned->nulls[s][c]);
			pinned->values[s][c] = NULL;
			pinned->nulls[s][c] = NULL;
		}
	}
	ctx->pinned_bytes = 0;
	(void) cudaGetLastError();
}
