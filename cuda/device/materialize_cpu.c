/*-------------------------------------------------------------------------
 *
 * materialize_cpu.c
 *	  CPU twin of materialize.cu: payload columns and the rounds they are
 *	  handed out in, for every variant
 *
 * The specification of how payload values reach a round.  A variant's
 * retrieve writes the round's maps (GjRoundMap: the matches' rows, or
 * their positions in transformed columns) and names, for each side, the
 * column set to gather from (GjRoundSources); then, for every payload
 * column of that side and every match i of the round,
 *
 *	  round value[i] = source column[map[i]]
 *	  round NULL[i]  = source NULL flags[map[i]], when the column has them
 *
 * With GFUR the source is the column as it came and the map holds rows;
 * with GFTR the source is the column permuted by the variant's transform
 * (Wu et al. 2025, §4.1.2) and the map holds positions there.
 * Since the transform moved each value to the position that the key of its
 * row went to, both read the same value: the materialization changes how
 * values are reached, never which.  The GPU gathers the same way, and
 * copies the round to page-locked host arrays; here the ROUND column sets
 * are themselves the arrays handed out.
 *
 * CPU twin of: materialize.cu (same functions, same order).
 *
 * IDENTIFICATION
 *	  cuda/device/materialize_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "cpu_internal.h"
#include "gpujoin_kernels.h"

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
ReserveColumns(GjCpuContext *ctx, GjColumnSetId set, int64_t nrows,
			   const bool *has_nulls, GjError *err)
{
	GjHostColumns *cols = &ctx->columns[set];
	int			ncolumns = gj_side_ncolumns(&ctx->spec, cols->side);
	const int32_t *widths = gj_side_widths(&ctx->spec, cols->side);
	char		name[96];
	GjStatus	status;

	for (int c = 0; c < ncolumns; c++)
	{
		status = gj_cpu_buffer_reserve(&cols->values[c],
									   (size_t) nrows * (size_t) widths[c],
									   ColumnName(set, c, false, name, sizeof(name)),
									   err);
		if (status != GJ_OK)
			return status;
		cols->has_nulls[c] = has_nulls[c];
		if (has_nulls[c])
		{
			status = gj_cpu_buffer_reserve(&cols->nulls[c], (size_t) nrows,
										   ColumnName(set, c, true, name, sizeof(name)),
										   err);
			if (status != GJ_OK)
				return status;
		}
	}
	cols->nrows = nrows;
	return GJ_OK;
}

/* Give each column set its side; called once, by context_create */
void
gj_cpu_columns_init(GjCpuContext *ctx)
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
 * that have them.  (The caller's arrays need not outlive the call.)
 */
GjStatus
gj_cpu_columns_upload(GjCpuContext *ctx, GjColumnSetId set,
					  const GjBatch *batch, GjError *err)
{
	GjHostColumns *cols = &ctx->columns[set];
	int			ncolumns = gj_side_ncolumns(&ctx->spec, cols->side);
	const int32_t *widths = gj_side_widths(&ctx->spec, cols->side);
	size_t		nrows = (size_t) batch->nrows;
	bool		has_nulls[GJ_MAX_COLUMNS];
	GjStatus	status;

	memset(has_nulls, 0, sizeof(has_nulls));
	for (int c = 0; c < ncolumns; c++)
		has_nulls[c] = (batch->columns[c].nulls != NULL);
	status = ReserveColumns(ctx, set, batch->nrows, has_nulls, err);
	if (status != GJ_OK)
		return status;

	for (int c = 0; c < ncolumns && nrows > 0; c++)
	{
		memcpy(cols->values[c].ptr, batch->columns[c].values,
			   nrows * (size_t) widths[c]);
		if (has_nulls[c])
			memcpy(cols->nulls[c].ptr, batch->columns[c].nulls, nrows);
	}
	return GJ_OK;
}

/*
 * Make every column of set hold nrows rows, with NULL flags where
 * has_nulls[c], for a variant that fills the set itself
 */
GjStatus
gj_cpu_columns_reserve(GjCpuContext *ctx, GjColumnSetId set, int64_t nrows,
					   const bool *has_nulls, GjError *err)
{
	return ReserveColumns(ctx, set, nrows, has_nulls, err);
}

/* dst[i] = src[row] for one value of width bytes (1, 2, 4 or 8) */
static inline void
CopyValue(const uint8_t *src, uint8_t *dst, int64_t i, GjRowId row, int width)
{
	memcpy(dst + (size_t) i * (size_t) width,
		   src + (size_t) row * (size_t) width, (size_t) width);
}

/*
 * Gather every column of set src into set dst: dst[i] = src[map[i]] for
 * i in [0, n), NULL flags included where src has them or the spec makes
 * the side have them (gj_column_has_nulls); map[i] GJ_NO_ROW: NULL
 *
 * src and dst hold the same side.  For a GFTR transform, map is the
 * transform's permutation (NPHJ: the inner rows in entry order); for a
 * round, the round's map.
 */
GjStatus
gj_cpu_columns_gather(GjCpuContext *ctx, GjColumnSetId dst,
					  GjColumnSetId src, const GjRowId *map, int64_t n,
					  GjError *err)
{
	GjHostColumns *to = &ctx->columns[dst];
	const GjHostColumns *from = &(gj_column_set_built(src) ?
								  GJ_CPU_BUILD(ctx) : ctx)->columns[src];
	int			ncolumns = gj_side_ncolumns(&ctx->spec, from->side);
	const int32_t *widths = gj_side_widths(&ctx->spec, from->side);
	bool		has_nulls[GJ_MAX_COLUMNS] = {false};
	GjStatus	status;

	if (to->side != from->side)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"Cannot gather the %ss into the %ss.",
							gj_column_set_name(src), gj_column_set_name(dst));
	for (int c = 0; c < ncolumns; c++)
		has_nulls[c] = gj_column_has_nulls(&ctx->spec, from->side, from->has_nulls[c]);
	status = ReserveColumns(ctx, dst, n, has_nulls, err);
	if (status != GJ_OK)
		return status;

	for (int c = 0; c < ncolumns; c++)
	{
		const uint8_t *src_values = (const uint8_t *) from->values[c].ptr;
		const uint8_t *src_nulls = from->has_nulls[c] ? (const uint8_t *) from->nulls[c].ptr : NULL;
		uint8_t    *dst_values = (uint8_t *) to->values[c].ptr;
		uint8_t    *dst_nulls = has_nulls[c] ? (uint8_t *) to->nulls[c].ptr : NULL;

		for (int64_t i = 0; i < n; i++)
		{
			/* a left join's row with no match: NULL */
			if (map[i] == GJ_NO_ROW)
				memset(dst_values + (size_t) i * (size_t) widths[c], 0, (size_t) widths[c]);
			else
				CopyValue(src_values, dst_values, i, map[i], widths[c]);
			if (dst_nulls != NULL)
				dst_nulls[i] = map[i] == GJ_NO_ROW ? 1 : src_nulls != NULL ? src_nulls[map[i]] : 0;
		}
	}
	return GJ_OK;
}

/*
 * Take in a batch's payload columns (those of side) as the spec's
 * materialization wants them: copied into the side's set, GJ_COLUMNS_INNER
 * or GJ_COLUMNS_OUTER; for GFTR also gathered by map[0 .. n) into the
 * side's transformed set.  Nothing when the side has no payload columns.
 *
 * map is the variant's stable transform of the side's keys, as the rows in
 * transformed order (NPHJ: the inner rows in entry order; SMJ: each side's
 * rows in sorted order; PHJ: each side's rows in partitioned order).
 */
GjStatus
gj_cpu_columns_load(GjCpuContext *ctx, GjSide side, const GjBatch *batch,
					const GjRowId *map, int64_t n, GjError *err)
{
	GjColumnSetId set = side == GJ_SIDE_INNER ? GJ_COLUMNS_INNER : GJ_COLUMNS_OUTER;
	GjColumnSetId transformed = side == GJ_SIDE_INNER ?
		GJ_COLUMNS_INNER_TRANSFORMED : GJ_COLUMNS_OUTER_TRANSFORMED;
	GjStatus	status;

	if (gj_side_ncolumns(&ctx->spec, side) == 0)
		return GJ_OK;
	status = gj_cpu_columns_upload(ctx, set, batch, err);
	if (status == GJ_OK && ctx->spec.materialize == GJ_MATERIALIZE_GFTR)
		status = gj_cpu_columns_gather(ctx, transformed, set, map, n, err);
	return status;
}

/* Free set's arrays; the set can be filled again */
void
gj_cpu_columns_release(GjCpuContext *ctx, GjColumnSetId set)
{
	GjHostColumns *cols = &ctx->columns[set];

	for (int c = 0; c < GJ_MAX_COLUMNS; c++)
	{
		gj_cpu_buffer_release(&cols->values[c]);
		gj_cpu_buffer_release(&cols->nulls[c]);
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
 * maps[map] points at the map's array, or is NULL when the round does not
 * need it.  The variant's retrieve then writes every map that is not NULL.
 */
GjStatus
gj_cpu_round_maps_reserve(GjCpuContext *ctx, bool outer_transformed,
						  int64_t n, GjRoundSources *sources,
						  GjRowId *maps[GJ_NUM_ROUND_MAPS], GjError *err)
{
	bool		need[GJ_NUM_ROUND_MAPS];

	gj_round_plan(&ctx->spec, outer_transformed, sources, need);
	for (int map = 0; map < GJ_NUM_ROUND_MAPS; map++)
	{
		GjStatus	status;

		maps[map] = NULL;
		if (!need[map])
			continue;
		status = gj_cpu_buffer_reserve(&ctx->round_maps[map],
									   (size_t) n * sizeof(GjRowId),
									   RoundMapName((GjRoundMap) map), err);
		if (status != GJ_OK)
			return status;
		maps[map] = GJ_CPU_ROUND_MAP(ctx, (GjRoundMap) map);
	}
	return GJ_OK;
}

/*
 * Make sure the arrays a round is handed out in exist
 *
 * Called by context_create, for the row numbers (when spec.row_ids) and
 * the values of each payload column, max_matches of each (the ROUND sets);
 * and by each retrieve, for the NULL arrays of the columns that have come
 * with NULL flags since.  The arrays are never smaller than max_matches,
 * so a round's gather never reallocates them, and their addresses stay the
 * same for the context's life.
 */
GjStatus
gj_cpu_round_alloc(GjCpuContext *ctx, GjError *err)
{
	static const GjColumnSetId round_sets[GJ_NUM_SIDES] = {
		GJ_COLUMNS_ROUND_OUTER, GJ_COLUMNS_ROUND_INNER
	};
	size_t		max_matches = (size_t) ctx->spec.max_matches;
	char		name[96];
	GjStatus	status;

	for (int s = 0; s < GJ_NUM_SIDES; s++)
	{
		GjSide		side = (GjSide) s;
		GjHostColumns *cols = &ctx->columns[round_sets[s]];
		int			ncolumns = gj_side_ncolumns(&ctx->spec, side);
		const int32_t *widths = gj_side_widths(&ctx->spec, side);

		if (ctx->spec.row_ids)
		{
			status = gj_cpu_buffer_reserve(&ctx->round_rows[side],
										   max_matches * sizeof(GjRowId),
										   "a round's row numbers", err);
			if (status != GJ_OK)
				return status;
		}
		for (int c = 0; c < ncolumns; c++)
		{
			status = gj_cpu_buffer_reserve(&cols->values[c],
										   max_matches * (size_t) widths[c],
										   ColumnName(round_sets[s], c, false, name, sizeof(name)),
										   err);
			if (status == GJ_OK && ctx->has_nulls[side][c])
				status = gj_cpu_buffer_reserve(&cols->nulls[c], max_matches,
											   ColumnName(round_sets[s], c, true, name, sizeof(name)),
											   err);
			if (status != GJ_OK)
				return status;
		}
	}
	return GJ_OK;
}

/*
 * Materialize a round of n matches whose maps the variant has written
 *
 * Gathers each side's payload columns from the set that sources names, at
 * the rows or positions its map holds, into the ROUND sets (the arrays
 * handed out), and copies the row numbers when spec.row_ids.
 */
GjStatus
gj_cpu_round_materialize(GjCpuContext *ctx, const GjRoundSources *sources,
						 int64_t n, GjError *err)
{
	static const GjColumnSetId round_sets[GJ_NUM_SIDES] = {
		GJ_COLUMNS_ROUND_OUTER, GJ_COLUMNS_ROUND_INNER
	};
	static const GjRoundMap row_maps[GJ_NUM_SIDES] = {
		GJ_ROUND_OUTER_ROWS, GJ_ROUND_INNER_ROWS
	};
	GjStatus	status;

	for (int s = 0; s < GJ_NUM_SIDES; s++)
	{
		if (gj_side_ncolumns(&ctx->spec, (GjSide) s) == 0)
			continue;
		status = gj_cpu_columns_gather(ctx, round_sets[s], sources->columns[s],
									   GJ_CPU_ROUND_MAP(ctx, sources->map[s]),
									   n, err);
		if (status != GJ_OK)
			return status;
	}

	for (int s = 0; s < GJ_NUM_SIDES; s++)
	{
		GjSide		side = (GjSide) s;
		const GjHostColumns *cols = &ctx->columns[round_sets[s]];
		int			ncolumns = gj_side_ncolumns(&ctx->spec, side);

		if (ctx->spec.row_ids && gj_side_matched(&ctx->spec, side))
		{
			const GjCpuContext *of = side == GJ_SIDE_INNER ? GJ_CPU_BUILD(ctx) : ctx;
			const GjRowId *map = GJ_CPU_ROUND_MAP(ctx, row_maps[s]);
			GjRowId    *rows = (GjRowId *) ctx->round_rows[side].ptr;

			/* the batch's own numbers for its rows, where it had them */
			if (of->has_row_numbers[side])
			{
				const GjRowId *numbers = (const GjRowId *) of->row_numbers[side].ptr;

				for (int64_t m = 0; m < n; m++)
					rows[m] = map[m] == GJ_NO_ROW ? GJ_NO_ROW : numbers[map[m]];
			}
			else
				memcpy(rows, map, (size_t) n * sizeof(GjRowId));
		}
		for (int c = 0; c < ncolumns; c++)
		{
			/* a variant that gathered from a set of another batch */
			if (cols->has_nulls[c] != ctx->has_nulls[side][c])
				return gj_error_set(err, GJ_ERROR_KERNEL,
									"The %s payload column %d of a round was gathered from columns of another batch.",
									gj_side_name(side), c);
		}
	}
	return GJ_OK;
}

/*
 * Point round at the context's arrays, with no matches yet
 *
 * The row arrays when spec.row_ids; the values of every payload column;
 * the NULL flags of those that came with them; NULL everywhere else.
 */
void
gj_cpu_round_fill(const GjCpuContext *ctx, GjMatchRound *round)
{
	const GjHostColumns *outer = &ctx->columns[GJ_COLUMNS_ROUND_OUTER];
	const GjHostColumns *inner = &ctx->columns[GJ_COLUMNS_ROUND_INNER];

	memset(round, 0, sizeof(GjMatchRound));
	if (ctx->spec.row_ids)
	{
		round->outer_rows = (const GjRowId *) ctx->round_rows[GJ_SIDE_OUTER].ptr;
		if (gj_side_matched(&ctx->spec, GJ_SIDE_INNER))
			round->inner_rows = (const GjRowId *) ctx->round_rows[GJ_SIDE_INNER].ptr;
	}
	for (int c = 0; c < ctx->spec.outer_ncolumns; c++)
	{
		round->outer_values[c] = outer->values[c].ptr;
		if (ctx->has_nulls[GJ_SIDE_OUTER][c])
			round->outer_nulls[c] = (const uint8_t *) outer->nulls[c].ptr;
	}
	for (int c = 0; c < ctx->spec.inner_ncolumns; c++)
	{
		round->inner_values[c] = inner->values[c].ptr;
		if (ctx->has_nulls[GJ_SIDE_INNER][c])
			round->inner_nulls[c] = (const uint8_t *) inner->nulls[c].ptr;
	}
}

/* Free every column set, round map and round array; for context_destroy */
void
gj_cpu_materialize_release(GjCpuContext *ctx)
{
	for (int set = 0; set < GJ_NUM_COLUMN_SETS; set++)
		gj_cpu_columns_release(ctx, (GjColumnSetId) set);
	for (int map = 0; map < GJ_NUM_ROUND_MAPS; map++)
		gj_cpu_buffer_release(&ctx->round_maps[map]);
	for (int s = 0; s < GJ_NUM_SIDES; s++)
	{
		gj_cpu_buffer_release(&ctx->round_rows[s]);
		gj_cpu_buffer_release(&ctx->row_numbers[s]);
	}
}
