/*-------------------------------------------------------------------------
 *
 * scan.cu
 *	  SCAN: no join at all, every outer row one match (a GpuPreAgg over a
 *	  single relation runs through a join context of this variant)
 *
 * The contract and the reasons are scan_cpu.c's, its CPU twin and
 * specification: build reads nothing, count makes a chunk's rows its
 * matches (keeping its payload columns on the device), retrieve writes
 * match k's outer row, first + k, when the round needs it.
 *
 * IDENTIFICATION
 *	  cuda/join/scan.cu
 *
 *-------------------------------------------------------------------------
 */
#include "common.cuh"

/* Build on the inner side (GjCudaVariant.build): there is none to read */
static GjStatus
ScanBuild(GjCudaContext *ctx, const GjBatch *inner, GjError *err)
{
	(void) ctx;
	(void) inner;
	(void) err;
	return GJ_OK;
}

/* Count one outer chunk (GjCudaVariant.count): each row is a match */
static GjStatus
ScanCount(GjCudaContext *ctx, const GjBatch *outer, uint64_t *nmatches, GjError *err)
{
	*nmatches = 0;
	if (outer->nrows > 0 && ctx->spec.outer_ncolumns > 0)
		GJ_TRY(gj_cuda_columns_upload(ctx, GJ_COLUMNS_OUTER, outer, err));
	*nmatches = (uint64_t) outer->nrows;
	return GJ_OK;
}

/* Match k of the round is outer row first + k */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
scan_retrieve_kernel(uint64_t first, int64_t n, GjRowId *__restrict__ d_outer_rows)
{
	for (int64_t k = gj_thread_index(); k < n; k += gj_grid_stride())
		d_outer_rows[k] = (GjRowId) (first + (uint64_t) k);
}

/* The round's outer rows (GjCudaVariant.retrieve) */
static GjStatus
ScanRetrieve(GjCudaContext *ctx, uint64_t first, int64_t round_size,
			 GjRoundSources *sources, GjError *err)
{
	GjRowId    *maps[GJ_NUM_ROUND_MAPS];

	GJ_TRY(gj_cuda_round_maps_reserve(ctx, false, round_size, sources, maps, err));
	if (maps[GJ_ROUND_OUTER_ROWS] == NULL)
		return GJ_OK;
	scan_retrieve_kernel<<<gj_cuda_grid_size(ctx, round_size), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		first, round_size, maps[GJ_ROUND_OUTER_ROWS]);
	GJ_CUDA_TRY(err, cudaGetLastError());
	return GJ_OK;
}

/* Nothing to free (GjCudaVariant.destroy_state) */
static void
ScanDestroyState(GjCudaContext *ctx)
{
	(void) ctx;
}

const GjCudaVariant gj_cuda_scan = {
	"SCAN",						/* name */
	ScanBuild,
	ScanCount,
	ScanRetrieve,
	ScanDestroyState,
};
