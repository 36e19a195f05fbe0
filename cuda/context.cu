/*-------------------------------------------------------------------------
 *
 * context.cu
 *	  CUDA contexts: stream, grow-only device buffers, copies, the kernel
 *	  table, and the device probes
 *
 * A context holds everything one GpuJoin node needs between calls: the
 * table built on the inner side, the counts of the current outer chunk,
 * and the arrays one round of matches is handed out in.  Creating one
 * initializes CUDA in the calling process (cudaSetDevice), which is why
 * src/ creates contexts lazily in the backend and never in the postmaster:
 * CUDA does not survive fork().
 *
 * DEVICE MEMORY
 *
 * Every device allocation goes through gj_cuda_buffer_reserve().  It
 * enforces the context's memory limit (gpujoin's share of the device,
 * from a setting), so that running out is a GJ_ERROR_DEVICE_MEMORY that
 * the executor answers by switching to the CPU twin at a chunk boundary,
 * not a failure of whatever else uses the GPU.  Buffers are grow-only and
 * reused: a join over many chunks of the same size allocates once, since
 * cudaMalloc and cudaFree synchronize the device and cost far more than a
 * kernel on a chunk.  (Rui 2020 found "memory allocation/release" among
 * the CUDA calls that serialize a pipeline; papers/notes/rui-2020.md §0.)
 *
 * The arrays of one round of matches are page-locked host memory
 * (cudaMallocHost): device-to-host copies into them run at full bus speed
 * and need no staging copy.
 *
 * STATISTICS
 *
 * bytes_to_device and bytes_from_device count every copy; transfer_ms is
 * the host wall clock around each copy, taken after the stream has
 * drained, so kernels still running are not counted as transfer time.
 * build_ms and probe_ms are the wall clock of their calls less the
 * transfer time within them (hash_join.cu).
 *
 * CPU twin: context_cpu.c (the same functions, in the same order, up to
 * the copy and launch helpers, which only a device needs).  The device
 * probes gj_cuda_device_count and gj_cuda_device_info, at the end, have no
 * twin.
 *
 * IDENTIFICATION
 *	  cuda/context.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "common.cuh"
#include "gpujoin_kernels.h"

/* Release every buffer and the pinned arrays, ignoring errors */
static void
ReleaseAll(GjCudaContext *ctx)
{
	for (int id = 0; id < GJ_NUM_BUFFERS; id++)
		gj_cuda_buffer_release(ctx, (GjBufferId) id);
	if (ctx->h_match_outer != NULL)
		(void) cudaFreeHost(ctx->h_match_outer);
	if (ctx->h_match_inner != NULL)
		(void) cudaFreeHost(ctx->h_match_inner);
	ctx->h_match_outer = NULL;
	ctx->h_match_inner = NULL;
	ctx->pinned_bytes = 0;
}

/*
 * Allocate a pinned host array for a round of matches
 *
 * A failure is the host's, not the device's: GJ_ERROR_HOST_MEMORY.
 */
static GjStatus
AllocPinned(GjCudaContext *ctx, GjRowId **ptr, size_t bytes, GjError *err)
{
	cudaError_t rc = cudaMallocHost((void **) ptr, bytes);

	if (rc == cudaErrorMemoryAllocation)
	{
		(void) cudaGetLastError();
		*ptr = NULL;
		gj_error_set(err, GJ_ERROR_HOST_MEMORY,
					 "Could not allocate %zu bytes of page-locked host memory for a round of matches.",
					 bytes);
		if (err != NULL)
			snprintf(err->cuda_error, sizeof(err->cuda_error), "%s",
					 cudaGetErrorName(rc));
		return GJ_ERROR_HOST_MEMORY;
	}
	GJ_CUDA_TRY(err, rc);
	ctx->pinned_bytes += bytes;
	return GJ_OK;
}

/* The fallible part of gj_cuda_context_create */
static GjStatus
InitContext(GjCudaContext *ctx, GjError *err)
{
	size_t		round_bytes = (size_t) ctx->max_matches * sizeof(GjRowId);
	int			multiprocessors = 0;

	GJ_CUDA_TRY(err, cudaSetDevice(ctx->device));
	GJ_CUDA_TRY(err, cudaDeviceGetAttribute(&multiprocessors,
											cudaDevAttrMultiProcessorCount,
											ctx->device));
	ctx->max_grid = (multiprocessors > 0 ? multiprocessors : 1) * GJ_BLOCKS_PER_SM;
	GJ_CUDA_TRY(err, cudaStreamCreateWithFlags(&ctx->stream,
											   cudaStreamNonBlocking));
	GJ_TRY(AllocPinned(ctx, &ctx->h_match_outer, round_bytes, err));
	GJ_TRY(AllocPinned(ctx, &ctx->h_match_inner, round_bytes, err));
	return GJ_OK;
}

/*
 * Create a context on device 0
 *
 * memory_limit: most device bytes the context may hold, 0 for no limit
 * but what the device has free.  max_matches: capacity of one round of
 * hash_retrieve; two pinned arrays of that many GjRowId are allocated here.
 */
extern "C" GjStatus
gj_cuda_context_create(GjContext **ctx, int64_t memory_limit,
					   int64_t max_matches, GjError *err)
{
	GjCudaContext *cuda;
	GjStatus	status;

	if (ctx == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No place to return the context was given.");
	*ctx = NULL;
	if (memory_limit < 0)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The memory limit must not be negative, but is %lld.",
							(long long) memory_limit);
	if (max_matches < 1)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A round of matches must hold at least 1 match, but max_matches is %lld.",
							(long long) max_matches);
	if ((uint64_t) max_matches > SIZE_MAX / sizeof(GjRowId))
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"A round of %lld matches does not fit into host memory.",
							(long long) max_matches);

	cuda = (GjCudaContext *) calloc(1, sizeof(GjCudaContext));
	if (cuda == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate %zu bytes of host memory for a join context.",
							sizeof(GjCudaContext));
	cuda->magic = GJ_CUDA_CONTEXT_MAGIC;
	cuda->device = 0;
	cuda->memory_limit = memory_limit;
	cuda->max_matches = max_matches;

	status = InitContext(cuda, err);
	if (status != GJ_OK)
	{
		gj_cuda_context_destroy((GjContext *) cuda);
		return status;
	}

	*ctx = (GjContext *) cuda;
	return GJ_OK;
}

/*
 * Free a context: every device buffer, the pinned arrays, the stream
 *
 * Accepts NULL and cannot fail: it runs on error paths (from a memory-
 * context reset callback on the PostgreSQL side), so errors are ignored
 * and cleared rather than reported.  It never resets the device, which
 * other contexts of the process may be using.
 */
extern "C" void
gj_cuda_context_destroy(GjContext *ctx)
{
	GjCudaContext *cuda = (GjCudaContext *) ctx;

	if (cuda == NULL || cuda->magic != GJ_CUDA_CONTEXT_MAGIC)
		return;

	if (cuda->stream != NULL)
		(void) cudaStreamSynchronize(cuda->stream);
	ReleaseAll(cuda);
	if (cuda->stream != NULL)
		(void) cudaStreamDestroy(cuda->stream);
	(void) cudaGetLastError();
	cuda->magic = 0;			/* a stale pointer no longer looks valid */
	free(cuda);
}

/* Copy out the context's counters; all zero for NULL */
extern "C" void
gj_cuda_context_stats(const GjContext *ctx, GjStats *stats)
{
	const GjCudaContext *cuda = (const GjCudaContext *) ctx;

	if (stats == NULL)
		return;
	if (cuda == NULL || cuda->magic != GJ_CUDA_CONTEXT_MAGIC)
	{
		memset(stats, 0, sizeof(GjStats));
		return;
	}
	*stats = cuda->stats;
}

/*
 * The CUDA context behind a GjContext, or NULL with err filled
 *
 * Catches a NULL context and one created by the CPU table.
 */
GjCudaContext *
gj_cuda_context_get(GjContext *ctx, GjError *err)
{
	GjCudaContext *cuda = (GjCudaContext *) ctx;

	if (cuda == NULL)
	{
		gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, "The join context is NULL.");
		return NULL;
	}
	if (cuda->magic != GJ_CUDA_CONTEXT_MAGIC)
	{
		gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
					 "The join context was not created by the \"cuda\" kernels.");
		return NULL;
	}
	return cuda;
}

/* What a buffer holds, for error messages */
static const char *
BufferName(GjBufferId id)
{
	switch (id)
	{
		case GJ_BUFFER_CUB_TEMP:
			return "CUB temporary storage";
		case GJ_BUFFER_ENTRY_KEYS:
			return "the hash table's keys";
		case GJ_BUFFER_ENTRY_ROWS:
			return "the hash table's rows";
		case GJ_BUFFER_BUCKET_START:
			return "the hash table's buckets";
		case GJ_BUFFER_INNER_KEYS:
			return "the inner keys";
		case GJ_BUFFER_INNER_NULLS:
			return "the inner NULL flags";
		case GJ_BUFFER_BUCKET_IDS:
		case GJ_BUFFER_BUCKET_IDS_ALT:
			return "the inner rows' buckets";
		case GJ_BUFFER_ROWS_ALT:
			return "the inner rows being sorted";
		case GJ_BUFFER_OUTER_KEYS:
			return "the outer chunk's keys";
		case GJ_BUFFER_OUTER_NULLS:
			return "the outer chunk's NULL flags";
		case GJ_BUFFER_OFFSETS:
			return "the outer chunk's match offsets";
		case GJ_BUFFER_MATCH_OUTER:
		case GJ_BUFFER_MATCH_INNER:
			return "a round of matches";
		case GJ_NUM_BUFFERS:
			break;
	}
	return "a device buffer";
}

/*
 * Make buffer id hold at least bytes bytes of device memory
 *
 * Grow-only: a large enough buffer is kept as it is; a smaller one is
 * freed first and replaced, without copying its contents (every caller
 * overwrites what it reserved), so that the old and the new one never
 * count against the limit together.  Fails with GJ_ERROR_DEVICE_MEMORY,
 * and a message with the numbers, when the context would hold more than
 * its memory_limit, or when the device itself is out of memory.
 */
GjStatus
gj_cuda_buffer_reserve(GjCudaContext *ctx, GjBufferId id, size_t bytes,
					   GjError *err)
{
	GjDeviceBuffer *buf = &ctx->buffers[id];
	void	   *ptr = NULL;
	cudaError_t rc;

	if (buf->ptr != NULL && buf->bytes >= bytes)
		return GJ_OK;
	if (bytes == 0)
		bytes = 1;				/* a valid pointer, even for no rows */

	gj_cuda_buffer_release(ctx, id);
	if (ctx->memory_limit > 0 &&
		(uint64_t) ctx->device_bytes + bytes > (uint64_t) ctx->memory_limit)
		return gj_error_set(err, GJ_ERROR_DEVICE_MEMORY,
							"Allocating %zu bytes of device memory for %s would exceed the limit of %lld bytes; the join holds %zu bytes already.",
							bytes, BufferName(id), (long long) ctx->memory_limit,
							ctx->device_bytes);

	rc = cudaMalloc(&ptr, bytes);
	if (rc == cudaErrorMemoryAllocation)
	{
		size_t		free_bytes = 0;
		size_t		total_bytes = 0;

		(void) cudaGetLastError();
		(void) cudaMemGetInfo(&free_bytes, &total_bytes);
		(void) cudaGetLastError();
		gj_error_set(err, GJ_ERROR_DEVICE_MEMORY,
					 "Could not allocate %zu bytes of device memory for %s; the device has %zu of %zu bytes free and the join holds %zu bytes.",
					 bytes, BufferName(id), free_bytes, total_bytes,
					 ctx->device_bytes);
		if (err != NULL)
			snprintf(err->cuda_error, sizeof(err->cuda_error), "%s",
					 cudaGetErrorName(rc));
		return GJ_ERROR_DEVICE_MEMORY;
	}
	GJ_CUDA_TRY(err, rc);

	buf->ptr = ptr;
	buf->bytes = bytes;
	ctx->device_bytes += bytes;
	if ((int64_t) ctx->device_bytes > ctx->stats.device_memory_peak)
		ctx->stats.device_memory_peak = (int64_t) ctx->device_bytes;
	return GJ_OK;
}

/*
 * Free buffer id; it can be reserved again
 *
 * cudaFree waits for the device to finish work that may still use the
 * buffer.  Errors are ignored: this also runs on error paths.
 */
void
gj_cuda_buffer_release(GjCudaContext *ctx, GjBufferId id)
{
	GjDeviceBuffer *buf = &ctx->buffers[id];

	if (buf->ptr == NULL)
		return;
	(void) cudaFree(buf->ptr);
	ctx->device_bytes -= buf->bytes;
	buf->ptr = NULL;
	buf->bytes = 0;
}

/*
 * Copy bytes between host and device, counted in the statistics
 *
 * Synchronous: when it returns, the copy is done and the source may be
 * reused.  The stream is drained before the clock starts, so that kernels
 * queued earlier are not counted as transfer time.
 */
static GjStatus
CopyCounted(GjCudaContext *ctx, void *dst, const void *src, size_t bytes,
			cudaMemcpyKind kind, GjError *err)
{
	double		start;

	if (bytes == 0)
		return GJ_OK;
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
	start = gj_clock_ms();
	GJ_CUDA_TRY(err, cudaMemcpyAsync(dst, src, bytes, kind, ctx->stream));
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
	ctx->stats.transfer_ms += gj_clock_ms() - start;
	if (kind == cudaMemcpyHostToDevice)
		ctx->stats.bytes_to_device += (int64_t) bytes;
	else
		ctx->stats.bytes_from_device += (int64_t) bytes;
	return GJ_OK;
}

/* Copy bytes from host memory to the device */
GjStatus
gj_cuda_copy_to_device(GjCudaContext *ctx, void *d_dst, const void *h_src,
					   size_t bytes, GjError *err)
{
	return CopyCounted(ctx, d_dst, h_src, bytes, cudaMemcpyHostToDevice, err);
}

/* Copy bytes from the device to host memory */
GjStatus
gj_cuda_copy_from_device(GjCudaContext *ctx, void *h_dst, const void *d_src,
						 size_t bytes, GjError *err)
{
	return CopyCounted(ctx, h_dst, d_src, bytes, cudaMemcpyDeviceToHost, err);
}

/*
 * Blocks for a grid-stride loop over nitems items (nitems > 0)
 *
 * One thread per item up to the cap of max_grid blocks; beyond it each
 * thread loops.
 */
int
gj_cuda_grid_size(const GjCudaContext *ctx, int64_t nitems)
{
	int64_t		blocks = (nitems + GJ_BLOCK_SIZE - 1) / GJ_BLOCK_SIZE;

	if (blocks > ctx->max_grid)
		blocks = ctx->max_grid;
	if (blocks < 1)
		blocks = 1;
	return (int) blocks;
}

/*
 * The GjStatus of a CUDA error
 *
 * Besides the two the ABI names (no device, a driver older than the
 * runtime), the errors that mean "this process cannot use this GPU at all"
 * also map to GJ_ERROR_NO_DEVICE, whose answer is the CPU twin: a device
 * in exclusive use by another process, a driver stub or mismatch, and a
 * GPU that this build has neither machine code nor usable PTX for.
 */
static GjStatus
StatusOfCudaError(cudaError_t rc)
{
	switch (rc)
	{
		case cudaErrorMemoryAllocation:
			return GJ_ERROR_DEVICE_MEMORY;
		case cudaErrorNoDevice:
		case cudaErrorInsufficientDriver:
		case cudaErrorDevicesUnavailable:
		case cudaErrorStubLibrary:
		case cudaErrorSystemDriverMismatch:
		case cudaErrorNoKernelImageForDevice:
		case cudaErrorUnsupportedPtxVersion:
			return GJ_ERROR_NO_DEVICE;
		default:
			return GJ_ERROR_KERNEL;
	}
}

/*
 * Report a failed CUDA call (the body of GJ_CUDA_TRY)
 *
 * Clears the error, so that the next call on a healthy context starts
 * clean (a sticky error, such as an illegal address, cannot be cleared:
 * every later call fails too, and the executor falls back to the CPU).
 * err gets the error's name, and file:line plus CUDA's description as the
 * message.
 */
GjStatus
gj_cuda_fail(GjError *err, cudaError_t rc, const char *file, int line)
{
	GjStatus	status = StatusOfCudaError(rc);
	const char *slash = strrchr(file, '/');

	(void) cudaGetLastError();
	if (err == NULL)
		return status;
	gj_error_set(err, status, "CUDA error at %s:%d: %s.",
				 slash != NULL ? slash + 1 : file, line, cudaGetErrorString(rc));
	snprintf(err->cuda_error, sizeof(err->cuda_error), "%s", cudaGetErrorName(rc));
	return status;
}

const GjKernels gj_cuda_kernels = {
	"cuda",						/* name */
	gj_cuda_context_create,
	gj_cuda_context_destroy,
	gj_cuda_context_stats,
	gj_cuda_hash_build,
	gj_cuda_hash_count,
	gj_cuda_hash_retrieve,
};

/*
 * Device probes, for src/device.c and gpujoin_device_info(); no CPU twin.
 */

/*
 * Number of usable CUDA devices
 *
 * Initializes the CUDA runtime in the calling process.  0 when there is
 * none, with err saying why, e.g. "cudaErrorInsufficientDriver: CUDA
 * driver version is insufficient for CUDA runtime version."
 */
extern "C" int
gj_cuda_device_count(GjError *err)
{
	int			count = 0;
	cudaError_t rc = cudaGetDeviceCount(&count);

	if (rc != cudaSuccess)
	{
		(void) cudaGetLastError();
		gj_error_set(err, GJ_ERROR_NO_DEVICE, "%s: %s.",
					 cudaGetErrorName(rc), cudaGetErrorString(rc));
		if (err != NULL)
			snprintf(err->cuda_error, sizeof(err->cuda_error), "%s",
					 cudaGetErrorName(rc));
		return 0;
	}
	if (count <= 0)
	{
		gj_error_set(err, GJ_ERROR_NO_DEVICE, "No CUDA device was found.");
		return 0;
	}
	return count;
}

/* Fill *info for one device; the fallible part of gj_cuda_device_info */
static GjStatus
ReadDeviceInfo(int device, GjDeviceInfo *info, GjError *err)
{
	cudaDeviceProp prop;
	size_t		free_bytes = 0;
	size_t		total_bytes = 0;

	GJ_CUDA_TRY(err, cudaGetDeviceProperties(&prop, device));
	GJ_CUDA_TRY(err, cudaSetDevice(device));
	GJ_CUDA_TRY(err, cudaMemGetInfo(&free_bytes, &total_bytes));
	GJ_CUDA_TRY(err, cudaDriverGetVersion(&info->driver_version));
	GJ_CUDA_TRY(err, cudaRuntimeGetVersion(&info->runtime_version));

	info->device = device;
	snprintf(info->name, sizeof(info->name), "%s", prop.name);
	info->total_memory = (int64_t) total_bytes;
	info->free_memory = (int64_t) free_bytes;
	info->cc_major = prop.major;
	info->cc_minor = prop.minor;
	info->multiprocessors = prop.multiProcessorCount;
	return GJ_OK;
}

/*
 * Describe device number "device"
 *
 * cudaMemGetInfo reports on the current device, so this makes "device"
 * current for the call and then restores the previous one.
 */
extern "C" GjStatus
gj_cuda_device_info(int device, GjDeviceInfo *info, GjError *err)
{
	int			count = gj_cuda_device_count(err);
	int			previous = 0;
	GjStatus	status;

	if (count == 0)
		return GJ_ERROR_NO_DEVICE;
	if (info == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No place to return the device information was given.");
	if (device < 0 || device >= count)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"There is no CUDA device %d; the devices are 0 to %d.",
							device, count - 1);

	memset(info, 0, sizeof(GjDeviceInfo));
	GJ_CUDA_TRY(err, cudaGetDevice(&previous));
	status = ReadDeviceInfo(device, info, err);
	(void) cudaSetDevice(previous);
	(void) cudaGetLastError();
	return status;
}
