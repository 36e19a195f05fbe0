/*-------------------------------------------------------------------------
 *
 * exchange.cu
 *	  PARTITION's exchange on the GPUs: each device partitions its slice
 *	  of a side into one run per device, and each device copies its runs from
 *	  the others over their peer links (GjKernels.exchange_send,
 *	  exchange_receive, exchange_free)
 *
 * As MG-Join does (Paul et al. 2021, section 3), the host copies each row
 * to one device only, the one whose slice it is in (each device over its
 * own link, at once); the devices partition on their own and send each
 * partition to its owner device to device.  The CPU twin is exchange_cpu.c.
 *
 *	send		the slice's keys, NULL flags, payload columns (and row
 *				numbers, when the side has them) are copied to the device;
 *				each row's device (gj_spread_device, a NULL key past the
 *				last) is counted tile by tile, and the rows are scattered
 *				into their runs in one pass that keeps the side's order in
 *				each run (the partition pass, below)
 *	receive		run "self" of each send, in the senders' order, is copied
 *				into the part on the receiver's device: cudaMemcpyPeerAsync
 *				between two GPUs (direct where peer access is possible,
 *				else the driver stages it through the host), a copy within
 *				one device for a logical device of the same GPU
 *
 * Every buffer is reserved through the context (gj_cuda_device_reserve), so
 * that it counts against the join's memory limit and fails with
 * GJ_ERROR_DEVICE_MEMORY, never worse; they stay with the context from one
 * exchange to the next (ExchangeState).  Buffers come from the device's
 * default memory pool; a pool's memory is readable by another device only
 * once the pool grants it (cudaMemPoolSetAccess), which GrantPeerAccess
 * does, once per pair of devices per process.
 *
 * IDENTIFICATION
 *	  cuda/device/exchange.cu
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cub/cub.cuh>

#include "common.cuh"

/*
 * Rows partitioned into runs on one device: what it sent (one run per device)
 * or the part it received (one run).  offset[t] .. offset[t + 1] - 1 is
 * run t.  The buffers are ctx's (its device, its limit).
 */
typedef struct CudaRuns
{
	GjCudaContext *ctx;
	GjSide		side;
	int			nruns;
	int64_t		offset[GJ_MAX_DEVICES + 1];
	int			ncolumns;
	int32_t		widths[GJ_MAX_COLUMNS];
	bool		has_nulls[GJ_MAX_COLUMNS];
	GjDeviceBuffer keys;
	GjDeviceBuffer numbers;
	GjDeviceBuffer values[GJ_MAX_COLUMNS];
	GjDeviceBuffer nulls[GJ_MAX_COLUMNS];
} CudaRuns;

/* The arrays of a slice as copied to the device, and its partition */
typedef struct SliceBuffers
{
	GjDeviceBuffer keys;
	GjDeviceBuffer key_nulls;
	GjDeviceBuffer numbers;
	GjDeviceBuffer values[GJ_MAX_COLUMNS];
	GjDeviceBuffer nulls[GJ_MAX_COLUMNS];
	GjDeviceBuffer positions;	/* GjRowId: each row's place in the runs */
	GjDeviceBuffer tile_counts; /* uint64_t[nbins][ntiles] */
	GjDeviceBuffer tile_offsets;	/* their exclusive sum */
	GjDeviceBuffer starts;		/* uint64_t[nbins]: where each run starts */
} SliceBuffers;

/*
 * A context's exchange arrays (ctx->exchange_state): grow-only, kept from
 * one exchange to the next, so that a spread join's chunks reuse them (an
 * allocation of a few GB costs more than the copies into it); freed with
 * the context (gj_cuda_exchange_destroy)
 */
typedef struct ExchangeState
{
	SliceBuffers slice;
	CudaRuns	sent;			/* what this device sent last */
	CudaRuns	part;			/* what it received last */
} ExchangeState;

static void
ReleaseSlice(GjCudaContext *ctx, SliceBuffers *b)
{
	gj_cuda_device_release(ctx, &b->keys);
	gj_cuda_device_release(ctx, &b->key_nulls);
	gj_cuda_device_release(ctx, &b->numbers);
	for (int c = 0; c < GJ_MAX_COLUMNS; c++)
	{
		gj_cuda_device_release(ctx, &b->values[c]);
		gj_cuda_device_release(ctx, &b->nulls[c]);
	}
	gj_cuda_device_release(ctx, &b->positions);
	gj_cuda_device_release(ctx, &b->tile_counts);
	gj_cuda_device_release(ctx, &b->tile_offsets);
	gj_cuda_device_release(ctx, &b->starts);
}

static void
ReleaseRuns(GjCudaContext *ctx, CudaRuns *runs)
{
	gj_cuda_device_release(ctx, &runs->keys);
	gj_cuda_device_release(ctx, &runs->numbers);
	for (int c = 0; c < GJ_MAX_COLUMNS; c++)
	{
		gj_cuda_device_release(ctx, &runs->values[c]);
		gj_cuda_device_release(ctx, &runs->nulls[c]);
	}
}

/* Room for nrows rows in runs' arrays on its context's device */
static GjStatus
ReserveRuns(CudaRuns *runs, int64_t nrows, GjError *err)
{
	GjCudaContext *ctx = runs->ctx;
	size_t		n = (size_t) nrows;

	GJ_TRY(gj_cuda_device_reserve(ctx, &runs->keys, n * sizeof(uint64_t),
								  "the exchanged keys", err));
	GJ_TRY(gj_cuda_device_reserve(ctx, &runs->numbers, n * sizeof(GjRowId),
								  "the exchanged row numbers", err));
	for (int c = 0; c < runs->ncolumns; c++)
	{
		GJ_TRY(gj_cuda_device_reserve(ctx, &runs->values[c], n * (size_t) runs->widths[c],
									  "the exchanged payload", err));
		if (runs->has_nulls[c])
			GJ_TRY(gj_cuda_device_reserve(ctx, &runs->nulls[c], n,
										  "the exchanged NULL flags", err));
	}
	return GJ_OK;
}

/* ctx's exchange arrays, allocated (zeroed) by its first exchange; NULL
 * with err filled when the host has no memory for them */
static ExchangeState *
GetState(GjCudaContext *ctx, GjError *err)
{
	if (ctx->exchange_state == NULL &&
		(ctx->exchange_state = calloc(1, sizeof(ExchangeState))) == NULL)
		gj_error_set(err, GJ_ERROR_HOST_MEMORY,
					 "Could not allocate host memory for an exchange.");
	return (ExchangeState *) ctx->exchange_state;
}

/* Free ctx's exchange arrays; for context_destroy */
void
gj_cuda_exchange_destroy(GjCudaContext *ctx)
{
	ExchangeState *state = (ExchangeState *) ctx->exchange_state;

	if (state == NULL)
		return;
	ReleaseSlice(ctx, &state->slice);
	ReleaseRuns(ctx, &state->sent);
	ReleaseRuns(ctx, &state->part);
	free(state);
	ctx->exchange_state = NULL;
}

/*
 * The partition pass.  A slice's rows go to their runs in one pass, not by
 * a sort: the slice is cut into tiles of SEND_TILE_ROWS rows, a block
 * each; tile_counts_kernel counts each tile's rows per bin (a device, or
 * the NULL keys' bin past the last); an exclusive sum of those counts,
 * bin by bin and tile by tile within a bin, is where each tile's rows of
 * each bin start; scatter_keys_kernel walks each tile in the side's order
 * again, ranking a warp's rows of one bin among themselves
 * (__match_any_sync) and the warps among each other, so that every run
 * keeps the side's order (what a stable sort by device gave), and writes
 * each row's key and number where its run puts it, and its position for
 * the payload columns (scatter_column_kernel).  The rows with a NULL key
 * come last, past every run, and are written nowhere.
 */
#define SEND_TILE_ITEMS		16
#define SEND_TILE_ROWS		(GJ_BLOCK_SIZE * SEND_TILE_ITEMS)
#define SEND_WARPS			(GJ_BLOCK_SIZE / 32)
#define SEND_BINS			(GJ_MAX_DEVICES + 1)

/* A row's bin: its device, or ndevices for a NULL key (-1 past the slice) */
static __device__ __forceinline__ int
RowBin(const uint64_t *__restrict__ keys, const uint8_t *__restrict__ nulls,
	   int64_t i, int64_t n, int ndevices, uint64_t *key)
{
	if (i >= n)
		return -1;
	*key = keys[i];
	if (nulls != NULL && nulls[i] != 0)
		return ndevices;
	return gj_spread_device(*key, ndevices);
}

/* The rows of each bin in each tile: counts[bin * ntiles + tile] */
static __global__ void
tile_counts_kernel(const uint64_t *__restrict__ keys, const uint8_t *__restrict__ nulls,
				   int64_t n, int ndevices, unsigned long long *__restrict__ counts)
{
	__shared__ unsigned int warp_counts[SEND_WARPS][SEND_BINS];
	int			warp = threadIdx.x / 32;
	int			lane = threadIdx.x % 32;
	int64_t		first = (int64_t) blockIdx.x * SEND_TILE_ROWS;

	for (int b = threadIdx.x; b < SEND_WARPS * SEND_BINS; b += blockDim.x)
		warp_counts[b / SEND_BINS][b % SEND_BINS] = 0;
	__syncthreads();
	for (int it = 0; it < SEND_TILE_ITEMS; it++)
	{
		uint64_t	key = 0;
		int			bin = RowBin(keys, nulls, first + (int64_t) it * GJ_BLOCK_SIZE + threadIdx.x,
								 n, ndevices, &key);
		unsigned int peers = __match_any_sync(0xFFFFFFFFu, bin);

		/* the lowest lane of a bin counts its lanes */
		if (bin >= 0 && (peers & ((1u << lane) - 1)) == 0)
			warp_counts[warp][bin] += (unsigned int) __popc(peers);
		__syncwarp();
	}
	__syncthreads();
	for (int b = threadIdx.x; b <= ndevices; b += blockDim.x)
	{
		unsigned long long sum = 0;

		for (int w = 0; w < SEND_WARPS; w++)
			sum += warp_counts[w][b];
		counts[(int64_t) b * gridDim.x + blockIdx.x] = sum;
	}
}

/* Where each bin's run starts: the sum of the counts before its first tile */
static __global__ void
run_starts_kernel(const unsigned long long *__restrict__ offsets, int64_t ntiles,
				  int nbins, unsigned long long *__restrict__ starts)
{
	int			b = threadIdx.x;

	if (b < nbins)
		starts[b] = offsets[(int64_t) b * ntiles];
}

/*
 * Each row's key and number to its place in the runs (rows before m; the
 * NULL keys' rows, at m and past it, nowhere), and its place in positions
 */
static __global__ void
scatter_keys_kernel(const uint64_t *__restrict__ keys, const uint8_t *__restrict__ nulls,
					const GjRowId *__restrict__ numbers, GjRowId first_number, int64_t n,
					int ndevices, const unsigned long long *__restrict__ offsets, int64_t m,
					uint64_t *__restrict__ out_keys, GjRowId *__restrict__ out_numbers,
					GjRowId *__restrict__ positions)
{
	__shared__ unsigned long long base[SEND_BINS];
	__shared__ unsigned int warp_counts[SEND_WARPS][SEND_BINS];
	int			warp = threadIdx.x / 32;
	int			lane = threadIdx.x % 32;
	int64_t		first = (int64_t) blockIdx.x * SEND_TILE_ROWS;

	if (threadIdx.x <= ndevices)
		base[threadIdx.x] = offsets[(int64_t) threadIdx.x * gridDim.x + blockIdx.x];
	for (int it = 0; it < SEND_TILE_ITEMS; it++)
	{
		int64_t		i = first + (int64_t) it * GJ_BLOCK_SIZE + threadIdx.x;
		uint64_t	key = 0;
		int			bin = RowBin(keys, nulls, i, n, ndevices, &key);
		unsigned int peers = __match_any_sync(0xFFFFFFFFu, bin);
		unsigned int rank = (unsigned int) __popc(peers & ((1u << lane) - 1));

		/* this warp's rows of each bin */
		if (lane <= ndevices)
			warp_counts[warp][lane] = 0;
		__syncwarp();
		if (bin >= 0 && rank == 0)
			warp_counts[warp][bin] = (unsigned int) __popc(peers);
		__syncthreads();

		if (bin >= 0)
		{
			unsigned long long at = base[bin] + rank;

			for (int w = 0; w < warp; w++)
				at += warp_counts[w][bin];
			positions[i] = (GjRowId) at;
			if ((int64_t) at < m)
			{
				out_keys[at] = key;
				out_numbers[at] = numbers != NULL ? numbers[i] : first_number + (GjRowId) i;
			}
		}
		__syncthreads();
		if (threadIdx.x <= ndevices)
			for (int w = 0; w < SEND_WARPS; w++)
				base[threadIdx.x] += warp_counts[w][threadIdx.x];
		__syncthreads();
	}
}

/* A payload column of width sizeof(T) (and its NULL flags) to the runs */
template <typename T>
static __global__ void
scatter_column_kernel(const GjRowId *__restrict__ positions, int64_t n, int64_t m,
					  const T *__restrict__ values, const uint8_t *__restrict__ nulls,
					  T *__restrict__ out_values, uint8_t *__restrict__ out_nulls)
{
	for (int64_t i = gj_thread_index(); i < n; i += gj_grid_stride())
	{
		int64_t		at = positions[i];

		if (at >= m)
			continue;
		out_values[at] = values[i];
		if (nulls != NULL)
			out_nulls[at] = nulls[i];
	}
}

static GjStatus
ScatterColumn(GjCudaContext *ctx, int width, const GjRowId *positions, int64_t n, int64_t m,
			  const void *values, const uint8_t *nulls, void *out_values,
			  uint8_t *out_nulls, GjError *err)
{
	int			grid = gj_cuda_grid_size(ctx, n);

	switch (width)
	{
		case 8:
			scatter_column_kernel<uint64_t><<<grid, GJ_BLOCK_SIZE, 0, ctx->stream>>>
				(positions, n, m, (const uint64_t *) values, nulls, (uint64_t *) out_values, out_nulls);
			break;
		case 4:
			scatter_column_kernel<uint32_t><<<grid, GJ_BLOCK_SIZE, 0, ctx->stream>>>
				(positions, n, m, (const uint32_t *) values, nulls, (uint32_t *) out_values, out_nulls);
			break;
		case 2:
			scatter_column_kernel<uint16_t><<<grid, GJ_BLOCK_SIZE, 0, ctx->stream>>>
				(positions, n, m, (const uint16_t *) values, nulls, (uint16_t *) out_values, out_nulls);
			break;
		default:
			scatter_column_kernel<uint8_t><<<grid, GJ_BLOCK_SIZE, 0, ctx->stream>>>
				(positions, n, m, (const uint8_t *) values, nulls, (uint8_t *) out_values, out_nulls);
			break;
	}
	GJ_CUDA_TRY(err, cudaGetLastError());
	return GJ_OK;
}

/* The slice copied to the device, and its runs' lengths (tiles counted and
 * summed: the partition pass above); *partitioned is when the copy ended */
static GjStatus
CountSlice(GjCudaContext *ctx, const GjBatch *batch, GjSide side, int64_t start,
		   int64_t n, int ndevices, SliceBuffers *b, int64_t *run_rows,
		   double *partitioned, GjError *err)
{
	int			ncolumns = gj_side_ncolumns(&ctx->spec, side);
	const int32_t *widths = gj_side_widths(&ctx->spec, side);
	int64_t		ntiles = (n + SEND_TILE_ROWS - 1) / SEND_TILE_ROWS;
	int			nbins = ndevices + 1;
	unsigned long long starts[SEND_BINS];
	size_t		temp_bytes = 0;
	double		clock;

	if (ntiles > INT32_MAX || n > (int64_t) UINT32_MAX)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A slice of %lld rows is too large to exchange.", (long long) n);

	/* the slice, each row over the host's link once */
	GJ_TRY(gj_cuda_device_reserve(ctx, &b->keys, (size_t) n * sizeof(uint64_t),
								  "the keys to exchange", err));
	GJ_TRY(gj_cuda_device_reserve(ctx, &b->positions, (size_t) n * sizeof(GjRowId),
								  "the rows' places in the runs", err));
	GJ_TRY(gj_cuda_device_reserve(ctx, &b->tile_counts,
								  (size_t) (ntiles * nbins) * sizeof(unsigned long long),
								  "the runs' counts", err));
	GJ_TRY(gj_cuda_device_reserve(ctx, &b->tile_offsets,
								  (size_t) (ntiles * nbins) * sizeof(unsigned long long),
								  "the runs' counts", err));
	GJ_TRY(gj_cuda_device_reserve(ctx, &b->starts, sizeof(starts), "the runs' lengths", err));
	if (batch->nulls != NULL)
		GJ_TRY(gj_cuda_device_reserve(ctx, &b->key_nulls, (size_t) n,
									  "the NULL flags of the keys to exchange", err));
	if (batch->row_numbers != NULL)
		GJ_TRY(gj_cuda_device_reserve(ctx, &b->numbers, (size_t) n * sizeof(GjRowId),
									  "the row numbers to exchange", err));
	for (int c = 0; c < ncolumns; c++)
	{
		GJ_TRY(gj_cuda_device_reserve(ctx, &b->values[c], (size_t) n * (size_t) widths[c],
									  "the payload to exchange", err));
		if (batch->columns[c].nulls != NULL)
			GJ_TRY(gj_cuda_device_reserve(ctx, &b->nulls[c], (size_t) n,
										  "the NULL flags to exchange", err));
	}

	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
	clock = gj_clock_ms();
	GJ_TRY(gj_cuda_copy_to_device_async(ctx, b->keys.ptr, batch->keys + start,
										(size_t) n * sizeof(uint64_t), err));
	if (batch->nulls != NULL)
		GJ_TRY(gj_cuda_copy_to_device_async(ctx, b->key_nulls.ptr, batch->nulls + start,
											(size_t) n, err));
	if (batch->row_numbers != NULL)
		GJ_TRY(gj_cuda_copy_to_device_async(ctx, b->numbers.ptr, batch->row_numbers + start,
											(size_t) n * sizeof(GjRowId), err));
	for (int c = 0; c < ncolumns; c++)
	{
		GJ_TRY(gj_cuda_copy_to_device_async(ctx, b->values[c].ptr,
											(const char *) batch->columns[c].values +
											start * widths[c],
											(size_t) n * (size_t) widths[c], err));
		if (batch->columns[c].nulls != NULL)
			GJ_TRY(gj_cuda_copy_to_device_async(ctx, b->nulls[c].ptr,
												batch->columns[c].nulls + start,
												(size_t) n, err));
	}
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
	ctx->stats.transfer_ms += gj_clock_ms() - clock;
	*partitioned = gj_clock_ms();

	/* each tile's rows per bin, summed bin by bin */
	tile_counts_kernel<<<(unsigned int) ntiles, GJ_BLOCK_SIZE, 0, ctx->stream>>>
		((const uint64_t *) b->keys.ptr,
		 batch->nulls != NULL ? (const uint8_t *) b->key_nulls.ptr : NULL, n, ndevices,
		 (unsigned long long *) b->tile_counts.ptr);
	GJ_CUDA_TRY(err, cudaGetLastError());
	GJ_CUDA_TRY(err, cub::DeviceScan::ExclusiveSum(NULL, temp_bytes,
												   (const unsigned long long *) b->tile_counts.ptr,
												   (unsigned long long *) b->tile_offsets.ptr,
												   ntiles * nbins, ctx->stream));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_CUB_TEMP, temp_bytes, err));
	GJ_CUDA_TRY(err, cub::DeviceScan::ExclusiveSum(GJ_BUFFER(ctx, GJ_BUFFER_CUB_TEMP, void),
												   temp_bytes,
												   (const unsigned long long *) b->tile_counts.ptr,
												   (unsigned long long *) b->tile_offsets.ptr,
												   ntiles * nbins, ctx->stream));
	run_starts_kernel<<<1, SEND_BINS, 0, ctx->stream>>>
		((const unsigned long long *) b->tile_offsets.ptr, ntiles, nbins,
		 (unsigned long long *) b->starts.ptr);
	GJ_CUDA_TRY(err, cudaGetLastError());
	GJ_TRY(gj_cuda_copy_from_device(ctx, starts, b->starts.ptr,
									(size_t) nbins * sizeof(unsigned long long), err));
	for (int t = 0; t < ndevices; t++)
		run_rows[t] = (int64_t) (starts[t + 1] - starts[t]);
	return GJ_OK;
}

extern "C" GjStatus
gj_cuda_exchange_send(GjContext *context, const GjBatch *batch, bool inner,
					  int64_t start, int64_t end, int ndevices, GjExchange *sent,
					  GjError *err)
{
	GjCudaContext *ctx = gj_cuda_context_get(context, err);
	GjSide		side = inner ? GJ_SIDE_INNER : GJ_SIDE_OUTER;
	int			ncolumns;
	const int32_t *widths;
	int64_t		n = end - start;
	ExchangeState *state;
	SliceBuffers *b;
	CudaRuns   *runs;
	int64_t		m = 0;
	GjStatus	status = GJ_OK;
	double		clock = gj_clock_ms();

	if (ctx == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	GJ_TRY(gj_check_exchange_send(batch, start, end, ndevices, sent, err));
	memset(sent, 0, sizeof(*sent));
	ncolumns = gj_side_ncolumns(&ctx->spec, side);
	widths = gj_side_widths(&ctx->spec, side);
	if ((state = GetState(ctx, err)) == NULL)
		return GJ_ERROR_HOST_MEMORY;
	b = &state->slice;
	runs = &state->sent;
	memset(runs->offset, 0, sizeof(runs->offset));
	memset(runs->has_nulls, 0, sizeof(runs->has_nulls));
	runs->ctx = ctx;
	runs->side = side;
	runs->nruns = ndevices;
	runs->ncolumns = ncolumns;
	memcpy(runs->widths, widths, (size_t) ncolumns * sizeof(int32_t));
	for (int c = 0; c < ncolumns; c++)
		runs->has_nulls[c] = batch->columns[c].nulls != NULL;
	sent->ndevices = ndevices;
	sent->impl = runs;

	if (n > 0)
		GJ_TRY(CountSlice(ctx, batch, side, start, n, ndevices, b, sent->rows, &clock, err));
	for (int t = 0; t < ndevices; t++)
	{
		runs->offset[t + 1] = runs->offset[t] + sent->rows[t];
		m += sent->rows[t];
	}

	/* the rows with a key, in the runs' order */
	GJ_TRY(ReserveRuns(runs, m, err));
	if (m == 0)
	{
		ctx->stats.exchange_ms += gj_clock_ms() - clock;
		return GJ_OK;
	}
	scatter_keys_kernel<<<(unsigned int) ((n + SEND_TILE_ROWS - 1) / SEND_TILE_ROWS),
		GJ_BLOCK_SIZE, 0, ctx->stream>>>
		((const uint64_t *) b->keys.ptr,
		 batch->nulls != NULL ? (const uint8_t *) b->key_nulls.ptr : NULL,
		 batch->row_numbers != NULL ? (const GjRowId *) b->numbers.ptr : NULL,
		 (GjRowId) start, n, ndevices, (const unsigned long long *) b->tile_offsets.ptr, m,
		 (uint64_t *) runs->keys.ptr, (GjRowId *) runs->numbers.ptr,
		 (GjRowId *) b->positions.ptr);
	GJ_CUDA_TRY(err, cudaGetLastError());
	for (int c = 0; c < ncolumns && status == GJ_OK; c++)
		status = ScatterColumn(ctx, widths[c], (const GjRowId *) b->positions.ptr, n, m,
							   b->values[c].ptr,
							   runs->has_nulls[c] ? (const uint8_t *) b->nulls[c].ptr : NULL,
							   runs->values[c].ptr, (uint8_t *) runs->nulls[c].ptr, err);
	GJ_TRY(status);
	/* the other devices read the runs once this returns */
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
	ctx->stats.exchange_ms += gj_clock_ms() - clock;
	return GJ_OK;
}

/* ----------------------------------------------------------------
 *		Peer access
 * ----------------------------------------------------------------
 */

static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;
static int8_t peer_state[GJ_MAX_DEVICES][GJ_MAX_DEVICES];	/* 0 not tried,
															 * 1 granted,
															 * -1 not possible */

/*
 * Let device "to" reach device "from"'s memory directly, where the two
 * can: peer access for to (memory from cudaMalloc) and from's default
 * pool's grant (memory from cudaMallocAsync); once per pair and process.
 * The caller holds peer_lock.
 */
static void
GrantOneWay(int to, int from)
{
	int			can = 0;

	if (peer_state[to][from] != 0)
		return;
	peer_state[to][from] = -1;
	if (cudaDeviceCanAccessPeer(&can, to, from) == cudaSuccess && can)
	{
		cudaMemPool_t pool;
		cudaError_t rc;

		(void) cudaSetDevice(to);
		rc = cudaDeviceEnablePeerAccess(from, 0);
		if (rc == cudaSuccess || rc == cudaErrorPeerAccessAlreadyEnabled)
			peer_state[to][from] = 1;
		if (cudaDeviceGetDefaultMemPool(&pool, from) == cudaSuccess)
		{
			cudaMemAccessDesc desc;

			memset(&desc, 0, sizeof(desc));
			desc.location.type = cudaMemLocationTypeDevice;
			desc.location.id = to;
			desc.flags = cudaMemAccessFlagsProtReadWrite;
			if (cudaMemPoolSetAccess(pool, &desc, 1) != cudaSuccess)
				peer_state[to][from] = -1;
		}
	}
	(void) cudaGetLastError();
}

/*
 * Let devices a and b reach each other's memory, both ways: a copy between
 * them may run on either's copy engines, reading the one and writing the
 * other, so both grants come before the first copy.  Without them the
 * copies still work, through the host.  Leaves a the current device.
 */
static void
GrantPeerAccess(int a, int b)
{
	if (a == b || a >= GJ_MAX_DEVICES || b >= GJ_MAX_DEVICES)
		return;
	pthread_mutex_lock(&peer_lock);
	GrantOneWay(a, b);
	GrantOneWay(b, a);
	pthread_mutex_unlock(&peer_lock);
	(void) cudaSetDevice(a);
}

/* ----------------------------------------------------------------
 *		Receive
 * ----------------------------------------------------------------
 */

/* Copy bytes from device "from" to ctx's device on ctx's stream */
static GjStatus
CopyFrom(GjCudaContext *ctx, void *dst, const void *src, int from, size_t bytes,
		 GjError *err)
{
	if (bytes == 0)
		return GJ_OK;
	if (from == ctx->device)
		GJ_CUDA_TRY(err, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx->stream));
	else
		GJ_CUDA_TRY(err, cudaMemcpyPeerAsync(dst, ctx->device, src, from, bytes, ctx->stream));
	return GJ_OK;
}

extern "C" GjStatus
gj_cuda_exchange_receive(GjContext *context, const GjExchange *sent, int nsent,
						 int self, GjExchange *part, GjError *err)
{
	GjCudaContext *ctx = gj_cuda_context_get(context, err);
	const CudaRuns *first;
	ExchangeState *state;
	CudaRuns   *runs;
	int64_t		total = 0;
	int64_t		at = 0;
	int64_t		received = 0;
	double		clock;
	double		ms;

	if (ctx == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	GJ_TRY(gj_check_exchange_receive(sent, nsent, self, part, err));
	memset(part, 0, sizeof(*part));
	first = (const CudaRuns *) sent[0].impl;
	if ((state = GetState(ctx, err)) == NULL)
		return GJ_ERROR_HOST_MEMORY;
	runs = &state->part;
	runs->ctx = ctx;
	runs->side = first->side;
	runs->nruns = 1;
	runs->ncolumns = first->ncolumns;
	memcpy(runs->widths, first->widths, sizeof(runs->widths));
	memcpy(runs->has_nulls, first->has_nulls, sizeof(runs->has_nulls));
	part->impl = runs;
	for (int s = 0; s < nsent; s++)
		total += sent[s].rows[self];
	runs->offset[1] = total;
	GJ_TRY(ReserveRuns(runs, total, err));

	for (int s = 0; s < nsent; s++)
		GrantPeerAccess(ctx->device, ((const CudaRuns *) sent[s].impl)->ctx->device);
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
	clock = gj_clock_ms();

	/* run "self" of each send, in the senders' order */
	for (int s = 0; s < nsent; s++)
	{
		const CudaRuns *from = (const CudaRuns *) sent[s].impl;
		int			device = from->ctx->device;
		int64_t		off = from->offset[self];
		size_t		n = (size_t) sent[s].rows[self];

		GJ_TRY(CopyFrom(ctx, (uint64_t *) runs->keys.ptr + at,
						(const uint64_t *) from->keys.ptr + off, device,
						n * sizeof(uint64_t), err));
		GJ_TRY(CopyFrom(ctx, (GjRowId *) runs->numbers.ptr + at,
						(const GjRowId *) from->numbers.ptr + off, device,
						n * sizeof(GjRowId), err));
		for (int c = 0; c < runs->ncolumns; c++)
		{
			size_t		w = (size_t) runs->widths[c];

			GJ_TRY(CopyFrom(ctx, (char *) runs->values[c].ptr + at * w,
							(const char *) from->values[c].ptr + off * w, device,
							n * w, err));
			if (runs->has_nulls[c])
				GJ_TRY(CopyFrom(ctx, (uint8_t *) runs->nulls[c].ptr + at,
								(const uint8_t *) from->nulls[c].ptr + off, device,
								n, err));
		}
		at += (int64_t) n;
		if (s != self)
			received += (int64_t) gj_exchange_row_bytes(runs->ncolumns, runs->widths,
														runs->has_nulls) * (int64_t) n;
	}
	/* the senders may free their runs once every receiver returns */
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
	ms = gj_clock_ms() - clock;
	ctx->stats.transfer_ms += ms;
	ctx->stats.exchange_ms += ms;
	ctx->stats.exchange_copy_ms += ms;
	ctx->stats.bytes_received += received;

	part->batch.keys = (const uint64_t *) runs->keys.ptr;
	part->batch.nrows = total;
	part->batch.row_numbers = (const GjRowId *) runs->numbers.ptr;
	for (int c = 0; c < runs->ncolumns; c++)
	{
		part->columns[c].values = runs->values[c].ptr;
		part->columns[c].nulls = runs->has_nulls[c] ? (const uint8_t *) runs->nulls[c].ptr : NULL;
	}
	part->batch.columns = part->columns;
	return GJ_OK;
}

extern "C" void
gj_cuda_exchange_free(GjExchange *x)
{
	/* the arrays stay with their context for its next exchange */
	if (x != NULL)
		x->impl = NULL;
}

/* ----------------------------------------------------------------
 *		The link's bandwidth, for gpujoin_calibrate()
 * ----------------------------------------------------------------
 */

extern "C" double
gj_cuda_peer_gbps(int from, int to, size_t bytes, GjError *err)
{
	void	   *src = NULL;
	void	   *dst = NULL;
	cudaStream_t stream = NULL;
	double		best = -1.0;
	cudaError_t rc;

	if (from < 0 || to < 0 || from == to || bytes == 0)
	{
		gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
					 "The bandwidth between devices %d and %d cannot be measured.", from, to);
		return -1.0;
	}
	GrantPeerAccess(to, from);
	if ((rc = cudaSetDevice(from)) != cudaSuccess ||
		(rc = cudaMalloc(&src, bytes)) != cudaSuccess ||
		(rc = cudaMemset(src, 1, bytes)) != cudaSuccess ||
		(rc = cudaSetDevice(to)) != cudaSuccess ||
		(rc = cudaMalloc(&dst, bytes)) != cudaSuccess ||
		(rc = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess)
		goto fail;
	for (int i = 0; i < 4; i++)
	{
		double		start = gj_clock_ms();
		double		ms;

		if ((rc = cudaMemcpyPeerAsync(dst, to, src, from, bytes, stream)) != cudaSuccess ||
			(rc = cudaStreamSynchronize(stream)) != cudaSuccess)
			goto fail;
		ms = gj_clock_ms() - start;
		/* the first copy maps the buffers: not counted */
		if (i > 0 && ms > 0.0 && (best < 0.0 || bytes / (ms * 1e6) > best))
			best = bytes / (ms * 1e6);
	}
	(void) cudaStreamDestroy(stream);
	(void) cudaFree(dst);
	(void) cudaSetDevice(from);
	(void) cudaFree(src);
	return best;

fail:
	gj_cuda_fail(err, rc, __FILE__, __LINE__);
	if (stream != NULL)
		(void) cudaStreamDestroy(stream);
	if (dst != NULL)
		(void) cudaFree(dst);
	if (src != NULL)
	{
		(void) cudaSetDevice(from);
		(void) cudaFree(src);
	}
	(void) cudaGetLastError();
	return -1.0;
}
