/*-------------------------------------------------------------------------
 *
 * scan_cpu.c
 *	  CPU twin of scan.cu, SCAN: no join at all, every outer row one match
 *
 * This file is the specification of the SCAN kernels: if scan.cu and this
 * file disagree on any input, scan.cu is wrong.
 *
 * A GpuPreAgg over a single relation (no join) still runs through a join
 * context, so that everything after the matches is the joins': the rounds,
 * the gather of the payload columns, the grouped aggregation that folds
 * each round (cuda/agg/), the host's folding of the matches the device
 * could not decide (through retrieve), the spill of the groups, a spread
 * over several devices (broadcast: each device counts its share of the
 * chunks).  SCAN is the join that makes a chunk's rows its matches.
 *
 * WHAT MATCHES
 *
 * Outer row i of a chunk is match i, of no inner row.  The inner side has
 * no payload columns (gj_check_spec refuses any); build reads nothing of
 * its batch, whatever its rows, and no batch needs keys (gj_check_batch).
 *
 * THE ORDER
 *
 * The chunk's: match i is row i.
 *
 * BUILD
 *
 * Nothing.
 *
 * COUNT (one outer chunk)
 *
 * The chunk's rows are its matches; its payload columns are copied (the
 * caller's arrays need not outlive the call) when it has any row.
 *
 * RETRIEVE (the matches first .. first + max_matches - 1)
 *
 * The outer rows first .. first + round_size - 1, written when the round
 * needs them (payload by row, or row ids); the inner maps never are
 * (gj_round_plan), since a match has no inner row.
 *
 * IDENTIFICATION
 *	  cuda/join/scan_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cpu_internal.h"
#include "gpujoin_kernels.h"

/* Build on the inner side (GjCpuVariant.build): there is none to read */
static GjStatus
ScanBuild(GjCpuContext *ctx, const GjBatch *inner, GjError *err)
{
	(void) ctx;
	(void) inner;
	(void) err;
	return GJ_OK;
}

/* Count one outer chunk (GjCpuVariant.count): each row is a match */
static GjStatus
ScanCount(GjCpuContext *ctx, const GjBatch *outer, uint64_t *nmatches, GjError *err)
{
	*nmatches = 0;
	if (outer->nrows > 0 && ctx->spec.outer_ncolumns > 0)
	{
		GjStatus	status = gj_cpu_columns_upload(ctx, GJ_COLUMNS_OUTER, outer, err);

		if (status != GJ_OK)
			return status;
	}
	*nmatches = (uint64_t) outer->nrows;
	return GJ_OK;
}

/* The round's outer rows (GjCpuVariant.retrieve): match k is row k */
static GjStatus
ScanRetrieve(GjCpuContext *ctx, uint64_t first, int64_t round_size,
			 GjRoundSources *sources, GjError *err)
{
	GjRowId    *maps[GJ_NUM_ROUND_MAPS];
	GjStatus	status;

	status = gj_cpu_round_maps_reserve(ctx, false, round_size, sources, maps, err);
	if (status != GJ_OK)
		return status;
	if (maps[GJ_ROUND_OUTER_ROWS] != NULL)
		for (int64_t k = 0; k < round_size; k++)
			maps[GJ_ROUND_OUTER_ROWS][k] = (GjRowId) (first + (uint64_t) k);
	return GJ_OK;
}

/* Nothing to free (GjCpuVariant.destroy_state) */
static void
ScanDestroyState(GjCpuContext *ctx)
{
	(void) ctx;
}

const GjCpuVariant gj_cpu_scan = {
	.name = "SCAN",
	.build = ScanBuild,
	.count = ScanCount,
	.retrieve = ScanRetrieve,
	.destroy_state = ScanDestroyState,
};
