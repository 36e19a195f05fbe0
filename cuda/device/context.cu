/*-------------------------------------------------------------------------
 *
 * context.cu
 *	  CUDA contexts: the variant table, the entry points of the kernel
 *	  table, stream, grow-only device buffers, copies, the steps that every
 *	  variant takes alike, and the device probes
 *
 * A context holds everything one GpuJoin node needs between calls: the
 * spec it was created for, what the variant built on the inner side, the
 * counts of the current outer chunk, and the arrays one round of matches
 * is handed out in.  Creating one initializes CUDA in the calling process
 * (cudaSetDevice), which is why src/ creates contexts lazily in the
 * backend and never in the postmaster: CUDA does not survive fork().
 *
 * ENTRY POINTS AND VARIANTS
 *
 * gj_cuda_build, gj_cuda_count and gj_cuda_retrieve check their arguments
 * (through common.h, as the twin does), keep the state that every variant
 * shares, time the call, and dispatch on the spec's variant through the
 * table "variants" below to the variant's own functions (GjCudaVariant,
 * common.cuh).  A round is then materialized the same way for every
 * variant: the variant writes the round's maps and names the column sets
 * they index (GjRoundSources), and materialize.cu gathers each payload
 * column into the round and copies it to page-locked host memory.
 *
 * How to add a variant (say PHJ, in partitioned_join.cu):
 *	  1. write its build, count, retrieve and destroy_state against
 *		 common.cuh, with its device arrays in a private state struct hung
 *		 off ctx->variant_state (allocated by its first build through
 *		 gj_cuda_variant_state, reserved with gj_cuda_device_reserve, freed
 *		 by its destroy_state), and export them as "const GjCudaVariant
 *		 gj_cuda_phj";
 *	  2. declare gj_cuda_phj in common.cuh next to gj_cuda_nphj;
 *	  3. replace the NULL of its line in "variants" below with &gj_cuda_phj.
 * Nothing else here changes: the Makefile compiles every *.cu, and the
 * payload columns, the round and its output arrays are materialize.cu's.
 * The CPU twin (context_cpu.c) takes the same three steps.
 *
 * STEPS EVERY VARIANT TAKES ALIKE
 *
 * Written once here, called from the variants' own functions:
 *	  gj_cuda_variant_state		the variant's state, allocated by its first
 *								build
 *	  gj_cuda_key_range			min and max of a side's non-NULL keys
 *								(key_range_kernel): NPHJ's layout, SMJ's
 *								sort bits
 *	  gj_cuda_count_offsets		a chunk's match counts into match offsets by
 *								an exclusive sum, and the total
 * (and materialize.cu's gj_cuda_columns_load and gj_cuda_round_maps_reserve
 * for the payload columns and a round's maps; key_sort.cu's
 * gj_cuda_sort_pairs and gj_cuda_ranges_retrieve for the sorted (key, row)
 * pairs of SMJ and BAND).
 *
 * DEVICE MEMORY
 *
 * Every device allocation goes through gj_cuda_device_reserve().  It
 * enforces the context's memory limit (gpujoin's share of the device,
 * from a setting) and the process's, for all its contexts together
 * (gj_cuda_pool_limit: the gpujoin service's pool), so that running out
 * is a GJ_ERROR_DEVICE_MEMORY that
 * the executor answers by switching to the CPU twin at a chunk boundary,
 * not a failure of whatever else uses the GPU.  Buffers are grow-only and
 * reused: a join over many chunks of the same size allocates once, since
 * an allocation costs far more than a kernel on a chunk.  ("Memory
 * allocation/release" is among the CUDA calls that serialize a pipeline:
 * Rui 2020, §5.3.1.3.)  They come from the device's stream-ordered memory
 * pool (cudaMallocAsync and cudaFreeAsync on the context's stream): a free
 * is ordered after the stream's own work instead of waiting for the whole
 * device, as cudaFree does (in the gpujoin service, where many sessions'
 * contexts share the device, a cudaFree would stall all of them), and the
 * pool hands memory one context freed to the next without the driver, as
 * much of it as gj_cuda_pool_keep lets it keep.  The page-locked arrays of
 * a round are kept the same way (gj_cuda_pinned_alloc).
 * The shared buffers are indexed by GjBufferId, the payload columns by
 * GjColumnSetId (materialize.cu), a variant's own in its state; all are
 * freed by context_destroy.
 *
 * STATISTICS
 *
 * bytes_to_device and bytes_from_device count every copy; transfer_ms is
 * the host wall clock around each copy, taken after the stream has
 * drained, so kernels still running are not counted as transfer time.
 * build_ms, probe_ms (count) and materialize_ms (retrieve) are the wall
 * clock of their calls less the transfer time within them.
 *
 * CPU twin: context_cpu.c (the same functions, in the same order, up to
 * the key upload, copy and launch helpers, which only a device needs).
 * The device probes gj_cuda_device_count and gj_cuda_device_info, at the
 * end, have no twin.
 *
 * IDENTIFICATION
 *	  cuda/device/context.cu
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cub/cub.cuh>

#include "common.cuh"
#include "gpujoin_kernels.h"

/*
 * The variants, indexed by GjVariant: one line each, NULL for a variant
 * that is not implemented yet (context_create then refuses its specs)
 */
static const GjCudaVariant *const variants[GJ_NUM_VARIANTS] = {
	&gj_cuda_nphj,				/* GJ_VARIANT_NPHJ: hash_join.cu */
	&gj_cuda_phj,				/* GJ_VARIANT_PHJ: partitioned_join.cu */
	&gj_cuda_smj,				/* GJ_VARIANT_SMJ: sort_merge.cu */
	&gj_cuda_band,				/* GJ_VARIANT_BAND: band_join.cu */
	&gj_cuda_nlj,				/* GJ_VARIANT_NLJ: theta_nlj.cu */
	&gj_cuda_scan,				/* GJ_VARIANT_SCAN: scan.cu */
};

/*
 * THE POOL: what the process keeps between contexts (gj_cuda_pool_keep)
 *
 * Device memory: the release threshold of each device's default memory
 * pool, set when a context is created on it after a change.  Page-locked
 * host memory: freed blocks, each with its size in a header in front of
 * it, on a list that holds at most pool_host_keep bytes, those freed last
 * (gj_cuda_pinned_free); a request takes
 * the smallest block of at least its size and at most twice it.  One
 * mutex, since the gpujoin service's worker threads create and destroy
 * contexts at once.
 */
typedef struct PinnedBlock
{
	size_t		bytes;			/* usable bytes after the header */
	struct PinnedBlock *next;	/* on the free list */
} PinnedBlock;

/* the header's size: keeps the block 256-byte aligned, as cudaMallocHost */
#define PINNED_HEADER 256

static pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;
static size_t pool_device_keep = 0;
static size_t pool_host_keep = 0;
static uint64_t pool_generation = 1;	/* bumped by gj_cuda_pool_keep */
static uint64_t pool_applied[GJ_MAX_DEVICES];	/* the generation each
												 * device's pool has */
static PinnedBlock *pinned_free = NULL;
static size_t pinned_free_bytes = 0;
static int	pools_supported = -1;	/* device 0 has cudaMallocAsync; -1 unknown */

/*
 * Device bytes every context of the process holds, and the most they may
 * (gj_cuda_pool_limit; 0: none): atomics, since the service's threads
 * reserve and release at once
 */
static uint64_t pool_held = 0;
static uint64_t pool_limit = 0;

extern "C" void
gj_cuda_pool_limit(size_t bytes)
{
	__atomic_store_n(&pool_limit, (uint64_t) bytes, __ATOMIC_RELAXED);
}

extern "C" size_t
gj_cuda_pool_held(void)
{
	return (size_t) __atomic_load_n(&pool_held, __ATOMIC_RELAXED);
}

/*
 * Under pool_mutex: take the blocks freed longest ago (the list's tail: it
 * is newest first) off the list until room more bytes fit under
 * pool_host_keep; they are returned as a list, for FreeBlocks after the
 * mutex
 */
static PinnedBlock *
OldestBlocks(size_t room)
{
	PinnedBlock *drop = NULL;

	while (pinned_free != NULL && pinned_free_bytes + room > pool_host_keep)
	{
		PinnedBlock **last = &pinned_free;
		PinnedBlock *b;

		while ((*last)->next != NULL)
			last = &(*last)->next;
		b = *last;
		*last = NULL;
		pinned_free_bytes -= b->bytes;
		b->next = drop;
		drop = b;
	}
	return drop;
}

static void
FreeBlocks(PinnedBlock *drop)
{
	while (drop != NULL)
	{
		PinnedBlock *b = drop;

		drop = b->next;
		(void) cudaFreeHost(b);
	}
}

extern "C" void
gj_cuda_pool_keep(size_t device_bytes, size_t host_bytes)
{
	PinnedBlock *drop;

	pthread_mutex_lock(&pool_mutex);
	pool_device_keep = device_bytes;
	pool_host_keep = host_bytes;
	pool_generation++;
	drop = OldestBlocks(0);		/* blocks past the new limit go */
	pthread_mutex_unlock(&pool_mutex);
	FreeBlocks(drop);
}

/* Give device's memory pool the release threshold last asked for */
static void
ApplyPoolKeep(int device)
{
	pthread_mutex_lock(&pool_mutex);
	if (pools_supported < 0)
	{
		int			value = 0;

		if (cudaDeviceGetAttribute(&value, cudaDevAttrMemoryPoolsSupported,
								   device) != cudaSuccess)
			value = 0;
		pools_supported = value != 0;
	}
	if (pools_supported && device >= 0 && device < GJ_MAX_DEVICES &&
		pool_applied[device] != pool_generation)
	{
		cudaMemPool_t pool;
		uint64_t	threshold = pool_device_keep;

		if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess)
			(void) cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold,
										   &threshold);
		pool_applied[device] = pool_generation;
	}
	(void) cudaGetLastError();
	pthread_mutex_unlock(&pool_mutex);
}

extern "C" void *
gj_cuda_pinned_alloc(size_t bytes)
{
	PinnedBlock **best = NULL;
	PinnedBlock *block = NULL;

	if (bytes == 0)
		bytes = 1;
	pthread_mutex_lock(&pool_mutex);
	for (PinnedBlock **b = &pinned_free; *b != NULL; b = &(*b)->next)
		if ((*b)->bytes >= bytes && (*b)->bytes / 2 <= bytes &&
			(best == NULL || (*b)->bytes < (*best)->bytes))
			best = b;
	if (best != NULL)
	{
		block = *best;
		*best = block->next;
		pinned_free_bytes -= block->bytes;
	}
	pthread_mutex_unlock(&pool_mutex);
	if (block == NULL)
	{
		void	   *ptr = NULL;

		if (cudaMallocHost(&ptr, PINNED_HEADER + bytes) != cudaSuccess)
		{
			(void) cudaGetLastError();
			return NULL;
		}
		block = (PinnedBlock *) ptr;
		block->bytes = bytes;
	}
	block->next = NULL;
	return (char *) block + PINNED_HEADER;
}

/*
 * A block freed is kept, newest first, in place of those freed longest ago
 * where the pool is full: the sizes the joins of the moment ask for stay
 * (a pool that kept its first blocks and freed every later one kept sizes
 * no join asked for any more, and TPC-H Q5's contexts went on pinning
 * their arrays anew, 12 to 39 ms each on the H200)
 */
extern "C" void
gj_cuda_pinned_free(void *ptr)
{
	PinnedBlock *block;
	PinnedBlock *drop = NULL;
	bool		keep;

	if (ptr == NULL)
		return;
	block = (PinnedBlock *) ((char *) ptr - PINNED_HEADER);
	pthread_mutex_lock(&pool_mutex);
	keep = block->bytes <= pool_host_keep;
	if (keep)
	{
		drop = OldestBlocks(block->bytes);
		block->next = pinned_free;
		pinned_free = block;
		pinned_free_bytes += block->bytes;
	}
	pthread_mutex_unlock(&pool_mutex);
	FreeBlocks(drop);
	if (!keep)
		(void) cudaFreeHost(block);
}

extern "C" size_t
gj_cuda_pinned_cached(void)
{
	size_t		bytes;

	pthread_mutex_lock(&pool_mutex);
	bytes = pinned_free_bytes;
	pthread_mutex_unlock(&pool_mutex);
	return bytes;
}

extern "C" bool
gj_cuda_host_register(void *ptr, size_t bytes)
{
	cudaError_t rc = cudaHostRegister(ptr, bytes, cudaHostRegisterPortable);

	(void) cudaGetLastError();	/* not a sticky error: clear it */
	return rc == cudaSuccess;
}

extern "C" void
gj_cuda_host_unregister(void *ptr)
{
	(void) cudaHostUnregister(ptr);
	(void) cudaGetLastError();
}

/* Does this table implement the variant?  (for gj_check_spec) */
static bool
VariantImplemented(GjVariant variant)
{
	return variants[variant] != NULL;
}

/* Release the variant's state, every buffer and the pinned arrays */
static void
ReleaseAll(GjCudaContext *ctx)
{
	if (ctx->variant_state != NULL && ctx->variant != NULL)
		ctx->variant->destroy_state(ctx);
	ctx->variant_state = NULL;
	gj_cuda_agg_destroy(ctx);
	gj_cuda_exchange_destroy(ctx);
	for (int id = 0; id < GJ_NUM_BUFFERS; id++)
		gj_cuda_buffer_release(ctx, (GjBufferId) id);
	gj_cuda_materialize_release(ctx);
}

/* The fallible part of gj_cuda_context_create */
static GjStatus
InitContext(GjCudaContext *ctx, GjError *err)
{
	int			multiprocessors = 0;

	GJ_CUDA_TRY(err, cudaSetDevice(ctx->device));
	ApplyPoolKeep(ctx->device);
	GJ_CUDA_TRY(err, cudaDeviceGetAttribute(&multiprocessors,
											cudaDevAttrMultiProcessorCount,
											ctx->device));
	ctx->max_grid = (multiprocessors > 0 ? multiprocessors : 1) * GJ_BLOCKS_PER_SM;
	GJ_CUDA_TRY(err, cudaStreamCreateWithFlags(&ctx->stream,
											   cudaStreamNonBlocking));
	gj_cuda_columns_init(ctx);
	return GJ_OK;
}

/*
 * Create a context on device spec->device for the join spec describes
 *
 * The spec is checked (common.h) and copied.  The page-locked arrays a
 * round is handed out in (max_matches values for each payload column, and
 * row numbers when spec->row_ids) wait for the first retrieve that hands
 * one to the host: a context that aggregates its matches, or hands its
 * rounds on on the device (a chain's level), never needs them, and a
 * context that shares a build no longer pins them before its first chunk
 * (cudaMallocHost serializes the threads of the gpujoin service: four
 * processes sharing one build each waited 12 to 58 ms for their 24 MB on
 * the H200).
 */
extern "C" GjStatus
gj_cuda_context_create(GjContext **ctx, const GjJoinSpec *spec, GjError *err)
{
	GjCudaContext *cuda;
	GjStatus	status;

	if (ctx == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No place to return the context was given.");
	*ctx = NULL;
	status = gj_check_spec(spec, VariantImplemented, err);
	if (status != GJ_OK)
		return status;

	cuda = (GjCudaContext *) calloc(1, sizeof(GjCudaContext));
	if (cuda == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate %zu bytes of host memory for a join context.",
							sizeof(GjCudaContext));
	cuda->magic = GJ_CUDA_CONTEXT_MAGIC;
	cuda->device = spec->device;
	cuda->spec = *spec;
	cuda->variant = variants[spec->variant];

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
 * Free a context: the variant's state, every device buffer, the pinned
 * arrays, the stream
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

	(void) cudaSetDevice(cuda->device);
	if (cuda->stream != NULL)
		(void) cudaStreamSynchronize(cuda->stream);
	gj_cuda_heap_deform_forget(cuda);
	ReleaseAll(cuda);
	if (cuda->stream != NULL)
		(void) cudaStreamDestroy(cuda->stream);
	(void) cudaGetLastError();
	free(cuda->deform_state);
	cuda->magic = 0;			/* a stale pointer no longer looks valid */
	free(cuda);
}

/*
 * Make *ctx a context that probes built's build (GjKernels.context_share)
 *
 * It gets built's spec, the NULL flags of built's inner columns and the
 * description of its table; everything else (its stream, chunks, rounds,
 * groups) is its own.  built's stream is waited for once, so that the
 * build is complete on the device before another stream reads it.  A
 * context that shares passes on the build it shares.
 */
extern "C" GjStatus
gj_cuda_context_share(GjContext **ctx, GjContext *built, GjError *err)
{
	GjCudaContext *owner = gj_cuda_context_get(built, err);
	GjCudaContext *cuda;

	if (ctx != NULL)
		*ctx = NULL;
	if (owner == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	owner = (GjCudaContext *) GJ_CUDA_BUILD(owner);
	GJ_TRY(gj_check_share(&owner->spec, owner->variant->name, owner->has_build, err));
	GJ_CUDA_TRY(err, cudaStreamSynchronize(owner->stream));
	GJ_TRY(gj_cuda_context_create(ctx, &owner->spec, err));
	cuda = (GjCudaContext *) *ctx;
	cuda->build_of = owner;
	cuda->has_build = true;
	memcpy(cuda->has_nulls[GJ_SIDE_INNER], owner->has_nulls[GJ_SIDE_INNER],
		   sizeof(cuda->has_nulls[GJ_SIDE_INNER]));
	memcpy(cuda->stats.detail, owner->stats.detail, sizeof(cuda->stats.detail));
	return GJ_OK;
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
	/* the calling thread works on the context's device from here on */
	{
		cudaError_t rc = cudaSetDevice(cuda->device);

		if (rc != cudaSuccess)
		{
			gj_cuda_fail(err, rc, __FILE__, __LINE__);
			return NULL;
		}
	}
	return cuda;
}

/* Add the wall clock since start, less the copies since then, to *timer */
static void
AddElapsed(GjCudaContext *ctx, double *timer, double start,
		   double transfer_start)
{
	*timer += (gj_clock_ms() - start) - (ctx->stats.transfer_ms - transfer_start);
}

/*
 * Keep a side's row numbers (GjBatch.row_numbers) on the device for the
 * rounds to report, or note that the batch has none
 */
static GjStatus
KeepRowNumbers(GjCudaContext *ctx, GjSide side, const GjBatch *batch, GjError *err)
{
	GjBufferId	id = side == GJ_SIDE_INNER ? GJ_BUFFER_INNER_ROW_NUMBERS : GJ_BUFFER_OUTER_ROW_NUMBERS;
	size_t		bytes = (size_t) batch->nrows * sizeof(GjRowId);

	ctx->has_row_numbers[side] = false;
	if (batch->row_numbers == NULL)
	{
		gj_cuda_buffer_release(ctx, id);
		return GJ_OK;
	}
	GJ_TRY(gj_cuda_buffer_reserve(ctx, id, bytes, err));
	GJ_TRY(gj_cuda_copy_to_device(ctx, ctx->buffers[id].ptr, batch->row_numbers, bytes, err));
	ctx->has_row_numbers[side] = true;
	return GJ_OK;
}

/* Remember which of a batch's payload columns came with NULL flags */
static void
RecordNulls(GjCudaContext *ctx, GjSide side, const GjBatch *batch)
{
	int			ncolumns = gj_side_ncolumns(&ctx->spec, side);

	memset(ctx->has_nulls[side], 0, sizeof(ctx->has_nulls[side]));
	for (int c = 0; c < ncolumns; c++)
		ctx->has_nulls[side][c] = gj_column_has_nulls(&ctx->spec, side,
													  batch->columns[c].nulls != NULL);
}

/*
 * Build on the inner side: keys and payload columns
 *
 * Replaces the build of an earlier call and forgets any counted chunk,
 * also when it fails.
 */
extern "C" GjStatus
gj_cuda_build(GjContext *ctx, const GjBatch *inner, GjError *err)
{
	GjCudaContext *cuda = gj_cuda_context_get(ctx, err);
	double		start = gj_clock_ms();
	double		transfer_start;
	GjStatus	status;

	if (cuda == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	if (cuda->build_of != NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A context that shares another's build cannot build.");
	cuda->has_build = false;
	cuda->has_chunk = false;
	status = gj_check_batch(inner, &cuda->spec, GJ_SIDE_INNER, err);
	if (status != GJ_OK)
		return status;

	transfer_start = cuda->stats.transfer_ms;
	RecordNulls(cuda, GJ_SIDE_INNER, inner);
	status = cuda->variant->build(cuda, inner, err);
	if (status == GJ_OK)
		status = KeepRowNumbers(cuda, GJ_SIDE_INNER, inner, err);
	cuda->has_build = (status == GJ_OK);
	AddElapsed(cuda, &cuda->stats.build_ms, start, transfer_start);
	return status;
}

/*
 * Build on an inner side in parts (GjKernels.build_parts): the parts
 * gathered into one block of device memory by a copy per array of each
 * part on the context's stream (from page-locked memory, at the bus's
 * speed), then built as a batch that lies on the device, whose arrays the
 * build copies device to device; the block goes when the build is done.
 */
static GjStatus
PartsCopy(void *arg, void *dst, const void *src, size_t bytes, GjError *err)
{
	return gj_cuda_copy_to_device_async((GjCudaContext *) arg, dst, src, bytes, err);
}

static GjStatus
PartsZero(void *arg, void *dst, size_t bytes, GjError *err)
{
	GJ_CUDA_TRY(err, cudaMemsetAsync(dst, 0, bytes, ((GjCudaContext *) arg)->stream));
	return GJ_OK;
}

extern "C" GjStatus
gj_cuda_build_parts(GjContext *ctx, const GjBatch *parts, int nparts, GjError *err)
{
	GjCudaContext *cuda = gj_cuda_context_get(ctx, err);
	GjPartsLayout l;
	GjDeviceBuffer block = {NULL, 0};
	GjBatch		whole;
	GjColumn	columns[GJ_MAX_COLUMNS];
	GjStatus	status;
	double		start;

	if (cuda == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	GJ_TRY(gj_parts_layout(&cuda->spec, parts, nparts, &l, err));
	GJ_TRY(gj_cuda_device_reserve(cuda, &block, l.bytes, "the inner side's parts", err));
	start = gj_clock_ms();
	status = gj_parts_gather(&cuda->spec, parts, nparts, &l, (char *) block.ptr,
							 &whole, columns, PartsCopy, PartsZero, cuda, err);
	if (status == GJ_OK)
	{
		cudaError_t rc = cudaStreamSynchronize(cuda->stream);

		if (rc != cudaSuccess)
			status = gj_cuda_fail(err, rc, __FILE__, __LINE__);
	}
	cuda->stats.transfer_ms += gj_clock_ms() - start;
	if (status == GJ_OK)
		status = gj_cuda_build(ctx, &whole, err);
	gj_cuda_device_release(cuda, &block);
	return status;
}

/*
 * Count the matches of one outer chunk
 *
 * Forgets the previous chunk, then keeps what retrieve needs of this one
 * on the device.  *nmatches is the chunk's total, which can exceed 2^32.
 */
extern "C" GjStatus
gj_cuda_count(GjContext *ctx, const GjBatch *outer, int64_t *nmatches,
			  GjError *err)
{
	GjCudaContext *cuda = gj_cuda_context_get(ctx, err);
	double		start = gj_clock_ms();
	double		transfer_start;
	uint64_t	total = 0;
	GjStatus	status;

	if (cuda == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	cuda->has_chunk = false;
	if (!cuda->has_build)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"count was called before build.");
	if (nmatches == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No place to return the number of matches was given.");
	status = gj_check_batch(outer, &cuda->spec, GJ_SIDE_OUTER, err);
	if (status != GJ_OK)
		return status;

	transfer_start = cuda->stats.transfer_ms;
	RecordNulls(cuda, GJ_SIDE_OUTER, outer);
	cuda->outer_rows = outer->nrows;
	cuda->nmatches = 0;
	status = cuda->variant->count(cuda, outer, &total, err);
	if (status == GJ_OK)
		status = KeepRowNumbers(cuda, GJ_SIDE_OUTER, outer, err);
	if (status == GJ_OK)
	{
		cuda->nmatches = total;
		cuda->has_chunk = true;
		*nmatches = (int64_t) total;
	}
	AddElapsed(cuda, &cuda->stats.probe_ms, start, transfer_start);
	return status;
}

/*
 * Hand out the matches numbered first .. first + max_matches - 1
 *
 * round->nmatches is min(max_matches, total - first), 0 once first reaches
 * the total.  The arrays are the context's pinned ones; a column's NULL
 * array is there when the column came with NULL flags (in the build for
 * the inner side, in the counted chunk for the outer side).
 */
static GjStatus
Retrieve(GjContext *ctx, int64_t first, GjMatchRound *round, bool on_device,
		 GjError *err)
{
	GjCudaContext *cuda = gj_cuda_context_get(ctx, err);
	double		start = gj_clock_ms();
	double		transfer_start;
	int64_t		round_size = 0;
	GjRoundSources sources;
	GjStatus	status;

	if (cuda == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	status = gj_check_retrieve(cuda->has_chunk, cuda->nmatches,
							   cuda->spec.max_matches, first, round,
							   &round_size, err);
	if (status != GJ_OK)
		return status;

	transfer_start = cuda->stats.transfer_ms;
	if (!on_device)
	{
		/* the first round for the host, or NULL arrays met since */
		status = gj_cuda_round_alloc(cuda, err);
		if (status != GJ_OK)
			return status;
	}
	gj_cuda_round_fill(cuda, round);
	if (round_size > 0)
	{
		memset(&sources, 0, sizeof(sources));
		status = cuda->variant->retrieve(cuda, (uint64_t) first, round_size,
										 &sources, err);
		if (status == GJ_OK)
			status = gj_cuda_round_materialize(cuda, &sources, round_size,
											   on_device ? round : NULL, err);
		if (status == GJ_OK)
			round->nmatches = round_size;
	}
	AddElapsed(cuda, &cuda->stats.materialize_ms, start, transfer_start);
	return status;
}

extern "C" GjStatus
gj_cuda_retrieve(GjContext *ctx, int64_t first, GjMatchRound *round,
				 GjError *err)
{
	return Retrieve(ctx, first, round, false, err);
}

/*
 * retrieve, the round left in the context's device memory
 * (GjKernels.retrieve_device): for the count of another context, which
 * copies it on its own stream, so this one's work is done on return
 */
extern "C" GjStatus
gj_cuda_retrieve_device(GjContext *ctx, int64_t first, GjMatchRound *round,
						GjError *err)
{
	return Retrieve(ctx, first, round, true, err);
}

/* Each row's integer, signed, of width 4 or 8, packed as one key */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
pack_keys_kernel(const char *__restrict__ d_values, int width, int64_t n, int32_t bits,
				 bool exact, uint64_t *__restrict__ d_keys)
{
	for (int64_t row = gj_thread_index(); row < n; row += gj_grid_stride())
		d_keys[row] = gj_pack_int_key(d_values, width, row, bits, exact);
}

/*
 * A chain's key packed on the device (GjKernels.pack_keys): the values,
 * wherever they lie (a round's column on this or another device, or host
 * memory), are copied behind the keys in the context's buffer, and packed
 * from there
 */
extern "C" GjStatus
gj_cuda_pack_keys(GjContext *ctx, const void *values, int width, int64_t n,
				  int32_t bits, bool exact, const uint64_t **keys, GjError *err)
{
	GjCudaContext *cuda = gj_cuda_context_get(ctx, err);
	double		start = gj_clock_ms();
	double		transfer_start;
	char	   *d_buffer;

	*keys = NULL;
	if (cuda == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	GJ_TRY(gj_check_pack(values, width, n, bits, err));
	transfer_start = cuda->stats.transfer_ms;
	GJ_TRY(gj_cuda_buffer_reserve(cuda, GJ_BUFFER_PACKED_KEYS,
								  (size_t) n * (sizeof(uint64_t) + (size_t) width) + 1, err));
	d_buffer = GJ_BUFFER(cuda, GJ_BUFFER_PACKED_KEYS, char);
	if (n > 0)
	{
		GJ_TRY(gj_cuda_copy_to_device(cuda, d_buffer + (size_t) n * sizeof(uint64_t), values,
									  (size_t) n * (size_t) width, err));
		pack_keys_kernel<<<gj_cuda_grid_size(cuda, n), GJ_BLOCK_SIZE, 0, cuda->stream>>>(
			d_buffer + (size_t) n * sizeof(uint64_t), width, n, bits, exact,
			(uint64_t *) d_buffer);
		GJ_CUDA_TRY(err, cudaGetLastError());
	}
	*keys = (const uint64_t *) d_buffer;
	AddElapsed(cuda, &cuda->stats.probe_ms, start, transfer_start);
	return GJ_OK;
}

/*
 * The variant's private state, ctx->variant_state: allocated, zeroed, by
 * the first call (a variant's first build), returned as it is by later
 * ones; NULL with err filled when the host has no memory for it
 *
 * size is the variant's state struct; "what" names the join in the
 * message ("a hash join").  The variant's destroy_state frees it.
 */
void *
gj_cuda_variant_state(GjCudaContext *ctx, size_t size, const char *what,
					  GjError *err)
{
	if (ctx->variant_state == NULL)
	{
		ctx->variant_state = calloc(1, size);
		if (ctx->variant_state == NULL)
			gj_error_set(err, GJ_ERROR_HOST_MEMORY,
						 "Could not allocate %zu bytes of host memory for %s.",
						 size, what);
	}
	return ctx->variant_state;
}

/* What a shared buffer holds, for error messages */
static const char *
BufferName(GjBufferId id)
{
	switch (id)
	{
		case GJ_BUFFER_CUB_TEMP:
			return "CUB temporary storage";
		case GJ_BUFFER_INNER_KEYS:
			return "the inner keys";
		case GJ_BUFFER_INNER_NULLS:
			return "the inner NULL flags";
		case GJ_BUFFER_OUTER_KEYS:
			return "the outer chunk's keys";
		case GJ_BUFFER_OUTER_NULLS:
			return "the outer chunk's NULL flags";
		case GJ_BUFFER_INNER_ROW_NUMBERS:
			return "the inner row numbers";
		case GJ_BUFFER_OUTER_ROW_NUMBERS:
			return "the outer chunk's row numbers";
		case GJ_BUFFER_PACKED_KEYS:
			return "a chain's packed keys";
		case GJ_BUFFER_SCAN_INPUT:
			return "the heap pages";
		case GJ_BUFFER_SCAN_OUTPUT:
			return "the rows deformed from heap pages";
		case GJ_NUM_BUFFERS:
			break;
	}
	return "a device buffer";
}

/*
 * Make buf hold at least bytes bytes of device memory
 *
 * Grow-only: a large enough buffer is kept as it is; a smaller one is
 * freed first and replaced, without copying its contents (every caller
 * overwrites what it reserved), so that the old and the new one never
 * count against the limit together.  Fails with GJ_ERROR_DEVICE_MEMORY,
 * and a message with the numbers, when the context would hold more than
 * its memory limit, or when the device itself is out of memory.  "what"
 * names the buffer in the message ("the inner keys").
 *
 * buf may be any GjDeviceBuffer of the context: a shared one, a payload
 * column's, or one in a variant's private state; whoever holds it
 * releases it with gj_cuda_device_release before the context goes.
 */
GjStatus
gj_cuda_device_reserve(GjCudaContext *ctx, GjDeviceBuffer *buf, size_t bytes,
					   const char *what, GjError *err)
{
	void	   *ptr = NULL;
	cudaError_t rc;

	if (buf->ptr != NULL && buf->bytes >= bytes)
		return GJ_OK;
	if (bytes == 0)
		bytes = 1;				/* a valid pointer, even for no rows */

	gj_cuda_device_release(ctx, buf);
	if (ctx->spec.memory_limit > 0 &&
		(uint64_t) ctx->device_bytes + bytes > (uint64_t) ctx->spec.memory_limit)
		return gj_error_set(err, GJ_ERROR_DEVICE_MEMORY,
							"Allocating %zu bytes of device memory for %s would exceed the limit of %lld bytes; the join holds %zu bytes already.",
							bytes, what, (long long) ctx->spec.memory_limit,
							ctx->device_bytes);

	/* the process's share: taken first, given back when the device fails */
	{
		uint64_t	limit = __atomic_load_n(&pool_limit, __ATOMIC_RELAXED);
		uint64_t	held = __atomic_add_fetch(&pool_held, (uint64_t) bytes,
											  __ATOMIC_RELAXED);

		if (limit > 0 && held > limit)
		{
			__atomic_sub_fetch(&pool_held, (uint64_t) bytes, __ATOMIC_RELAXED);
			return gj_error_set(err, GJ_ERROR_DEVICE_MEMORY,
								"Allocating %zu bytes of device memory for %s would exceed the limit of %llu bytes for all joins together; they hold %llu bytes, this join %zu.",
								bytes, what, (unsigned long long) limit,
								(unsigned long long) (held - bytes),
								ctx->device_bytes);
		}
	}
	rc = pools_supported > 0 ? cudaMallocAsync(&ptr, bytes, ctx->stream) : cudaMalloc(&ptr, bytes);
	if (rc != cudaSuccess)
		__atomic_sub_fetch(&pool_held, (uint64_t) bytes, __ATOMIC_RELAXED);
	if (rc == cudaErrorMemoryAllocation)
	{
		size_t		free_bytes = 0;
		size_t		total_bytes = 0;

		(void) cudaGetLastError();
		(void) cudaMemGetInfo(&free_bytes, &total_bytes);
		(void) cudaGetLastError();
		gj_error_set(err, GJ_ERROR_DEVICE_MEMORY,
					 "Could not allocate %zu bytes of device memory for %s; the device has %zu of %zu bytes free and the join holds %zu bytes.",
					 bytes, what, free_bytes, total_bytes, ctx->device_bytes);
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
 * Free buf; it can be reserved again
 *
 * Into the pool after the stream's work that may still use the buffer
 * (cudaFree, without pools, waits for the whole device instead).  Errors
 * are ignored: this also runs on error paths.
 */
void
gj_cuda_device_release(GjCudaContext *ctx, GjDeviceBuffer *buf)
{
	if (buf->ptr == NULL)
		return;
	if (pools_supported > 0)
		(void) cudaFreeAsync(buf->ptr, ctx->stream);
	else
		(void) cudaFree(buf->ptr);
	ctx->device_bytes -= buf->bytes;
	__atomic_sub_fetch(&pool_held, (uint64_t) buf->bytes, __ATOMIC_RELAXED);
	buf->ptr = NULL;
	buf->bytes = 0;
}

/* Make shared buffer id hold at least bytes bytes (gj_cuda_device_reserve) */
GjStatus
gj_cuda_buffer_reserve(GjCudaContext *ctx, GjBufferId id, size_t bytes,
					   GjError *err)
{
	return gj_cuda_device_reserve(ctx, &ctx->buffers[id], bytes,
								  BufferName(id), err);
}

/* Free shared buffer id; it can be reserved again */
void
gj_cuda_buffer_release(GjCudaContext *ctx, GjBufferId id)
{
	gj_cuda_device_release(ctx, &ctx->buffers[id]);
}

/*
 * Copy a batch's keys, and their NULL flags when it has them, into the
 * side's key buffers; *d_keys and *d_nulls (NULL when no key is NULL)
 * point at them.  The batch has rows (nrows > 0).
 */
GjStatus
gj_cuda_upload_keys(GjCudaContext *ctx, GjSide side, const GjBatch *batch,
					const uint64_t **d_keys, const uint8_t **d_nulls,
					GjError *err)
{
	GjBufferId	keys_id = side == GJ_SIDE_OUTER ? GJ_BUFFER_OUTER_KEYS : GJ_BUFFER_INNER_KEYS;
	GjBufferId	nulls_id = side == GJ_SIDE_OUTER ? GJ_BUFFER_OUTER_NULLS : GJ_BUFFER_INNER_NULLS;
	size_t		nrows = (size_t) batch->nrows;

	*d_keys = NULL;
	*d_nulls = NULL;
	GJ_TRY(gj_cuda_buffer_reserve(ctx, keys_id, nrows * sizeof(uint64_t), err));
	GJ_TRY(gj_cuda_copy_to_device(ctx, ctx->buffers[keys_id].ptr, batch->keys,
								  nrows * sizeof(uint64_t), err));
	*d_keys = GJ_BUFFER(ctx, keys_id, const uint64_t);
	if (batch->nulls != NULL)
	{
		GJ_TRY(gj_cuda_buffer_reserve(ctx, nulls_id, nrows, err));
		GJ_TRY(gj_cuda_copy_to_device(ctx, ctx->buffers[nulls_id].ptr,
									  batch->nulls, nrows, err));
		*d_nulls = GJ_BUFFER(ctx, nulls_id, const uint8_t);
	}
	return GJ_OK;
}

/*
 * Min and max of the non-NULL keys into d_range[0] and d_range[1], which
 * the caller set to UINT64_MAX and 0: they stay so when every key is NULL
 *
 * Each thread reduces its rows, each warp its threads by shuffles, and
 * lane 0 of each warp does one atomicMin and one atomicMax.  Every lane
 * reaches the shuffles (the loop ends before them), so the full mask holds.
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
key_range_kernel(const uint64_t *__restrict__ d_keys,
				 const uint8_t *__restrict__ d_nulls, int64_t nrows,
				 unsigned long long *__restrict__ d_range)
{
	unsigned long long lo = ~0ULL;
	unsigned long long hi = 0;

	for (int64_t row = gj_thread_index(); row < nrows; row += gj_grid_stride())
	{
		if (!gj_flag_set(d_nulls, row))
		{
			unsigned long long key = d_keys[row];

			lo = key < lo ? key : lo;
			hi = key > hi ? key : hi;
		}
	}
	for (int offset = 16; offset > 0; offset /= 2)
	{
		unsigned long long other_lo = __shfl_xor_sync(0xFFFFFFFFu, lo, offset);
		unsigned long long other_hi = __shfl_xor_sync(0xFFFFFFFFu, hi, offset);

		lo = other_lo < lo ? other_lo : lo;
		hi = other_hi > hi ? other_hi : hi;
	}
	if (threadIdx.x % 32 == 0 && lo <= hi)
	{
		atomicMin(&d_range[0], lo);
		atomicMax(&d_range[1], hi);
	}
}

/*
 * The range of a side's uploaded keys (nrows > 0): *has_keys is false when
 * every key is NULL, else [*min_key, *max_key] in unsigned order
 *
 * d_range is two words of device memory that the caller holds (its own
 * scratch, so that the variant's buffers and their accounting stay its
 * own); key_range_kernel reduces into it, and the two words come back.
 */
GjStatus
gj_cuda_key_range(GjCudaContext *ctx, const uint64_t *d_keys,
				  const uint8_t *d_nulls, int64_t nrows,
				  unsigned long long *d_range, bool *has_keys,
				  uint64_t *min_key, uint64_t *max_key, GjError *err)
{
	unsigned long long range[2] = {0, 0};

	GJ_CUDA_TRY(err, cudaMemsetAsync(d_range, 0xFF, sizeof(range[0]), ctx->stream));
	GJ_CUDA_TRY(err, cudaMemsetAsync(d_range + 1, 0, sizeof(range[1]), ctx->stream));
	key_range_kernel<<<gj_cuda_grid_size(ctx, nrows), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		d_keys, d_nulls, nrows, d_range);
	GJ_CUDA_TRY(err, cudaGetLastError());
	GJ_TRY(gj_cuda_copy_from_device(ctx, range, d_range, sizeof(range), err));

	*has_keys = range[0] <= range[1];
	*min_key = range[0];
	*max_key = range[1];
	return GJ_OK;
}

/*
 * Turn the match counts of a chunk's nrows rows (or positions) into match
 * offsets: the exclusive sum of d_counts[0 .. nrows], in place, and
 * *total, the matches in all
 *
 * The caller set d_counts[nrows] to 0, so that it ends as the total, which
 * comes back to the host (unless total is NULL: then nothing waits, and
 * the total stays in d_counts[nrows] for a later copy).  64-bit elements, so the sum cannot wrap.  The
 * CUB temporary storage is the context's shared buffer.
 */
GjStatus
gj_cuda_count_offsets(GjCudaContext *ctx, uint64_t *d_counts, int64_t nrows,
					  uint64_t *total, GjError *err)
{
	size_t		temp_bytes = 0;

	if (total != NULL)
		*total = 0;
	GJ_CUDA_TRY(err, cub::DeviceScan::ExclusiveSum(NULL, temp_bytes, d_counts,
												   nrows + 1, ctx->stream));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_CUB_TEMP, temp_bytes, err));
	GJ_CUDA_TRY(err, cub::DeviceScan::ExclusiveSum(GJ_BUFFER(ctx, GJ_BUFFER_CUB_TEMP, void),
												   temp_bytes, d_counts,
												   nrows + 1, ctx->stream));
	if (total == NULL)
		return GJ_OK;
	return gj_cuda_copy_from_device(ctx, total, d_counts + nrows,
									sizeof(uint64_t), err);
}

/* Is ptr device memory, not the host's? */
static bool
OnDevice(const void *ptr)
{
	cudaPointerAttributes attributes;

	if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return false;
	}
	return attributes.type == cudaMemoryTypeDevice;
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
	/* the kind counts the bytes; the copy goes by the pointers (unified
	 * addressing), so that a batch may also lie on a device: an exchanged
	 * part (device/exchange.cu) */
	GJ_CUDA_TRY(err, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ctx->stream));
	GJ_CUDA_TRY(err, cudaStreamSynchronize(ctx->stream));
	ctx->stats.transfer_ms += gj_clock_ms() - start;
	/* only what crossed the bus: not a batch that lay on a device already
	 * (a chain's round, an exchanged part) */
	if (OnDevice(kind == cudaMemcpyHostToDevice ? src : dst))
		return GJ_OK;
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

/*
 * Queue a copy of bytes from host memory to the device on the context's
 * stream, counted in the statistics but not timed: the caller synchronizes
 * later (any copy of gj_cuda_copy_from_device does) and times the whole.
 * The source must stay as it is until then; from page-locked memory the
 * copy runs at the bus's speed while the host goes on.
 */
GjStatus
gj_cuda_copy_to_device_async(GjCudaContext *ctx, void *d_dst, const void *h_src,
							 size_t bytes, GjError *err)
{
	if (bytes == 0)
		return GJ_OK;
	GJ_CUDA_TRY(err, cudaMemcpyAsync(d_dst, h_src, bytes, cudaMemcpyDefault,
									 ctx->stream));
	ctx->stats.bytes_to_device += (int64_t) bytes;
	return GJ_OK;
}

/*
 * Queue a copy of bytes from the device to host memory on the context's
 * stream, counted in the statistics but not timed: the destination holds
 * them once the stream is synchronized (any gj_cuda_copy_from_device does
 * it); into page-locked memory the copy runs while the host goes on.
 */
GjStatus
gj_cuda_copy_from_device_async(GjCudaContext *ctx, void *h_dst, const void *d_src,
							   size_t bytes, GjError *err)
{
	if (bytes == 0)
		return GJ_OK;
	GJ_CUDA_TRY(err, cudaMemcpyAsync(h_dst, d_src, bytes, cudaMemcpyDeviceToHost,
									 ctx->stream));
	ctx->stats.bytes_from_device += (int64_t) bytes;
	return GJ_OK;
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
	gj_cuda_build,
	gj_cuda_count,
	gj_cuda_retrieve,
	gj_cuda_heap_deform,
	gj_cuda_heap_deform_start,
	gj_cuda_heap_deform_finish,
	gj_cuda_stage_alloc,
	gj_cuda_stage_free,
	gj_cuda_agg_begin,
	gj_cuda_aggregate,
	gj_cuda_agg_result,
	gj_cuda_context_share,
	gj_cuda_exchange_send,
	gj_cuda_exchange_receive,
	gj_cuda_exchange_free,
	gj_cuda_retrieve_device,
	gj_cuda_build_parts,
	NULL,						/* hand_down: the chain's own */
	gj_cuda_pack_keys,
	gj_cuda_pages_kept,
};

/* Page-locked host memory for staging (GjKernels.stage_alloc), or NULL */
extern "C" void *
gj_cuda_stage_alloc(size_t bytes)
{
	void	   *ptr = NULL;

	if (cudaMallocHost(&ptr, bytes > 0 ? bytes : 1) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return NULL;
	}
	return ptr;
}

extern "C" void
gj_cuda_stage_free(void *ptr)
{
	if (ptr != NULL)
		(void) cudaFreeHost(ptr);
}

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
	/* what this process's pool keeps unused is free for its next joins */
	if (pools_supported > 0)
	{
		cudaMemPool_t pool;
		uint64_t	reserved = 0;
		uint64_t	used = 0;

		if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess &&
			cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess &&
			cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess &&
			reserved > used)
			free_bytes += reserved - used;
		(void) cudaGetLastError();
	}
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
