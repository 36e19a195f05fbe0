/*-------------------------------------------------------------------------
 *
 * common.cuh
 *	  The CUDA context and the helpers every kernel file uses
 *
 * Private to the *.cu files.  Everything a kernel file needs besides its
 * kernels is here, so that the next strategy (partitioned hash join, sort-
 * merge join, theta joins, payload materialization) is one more .cu file
 * written against these helpers:
 *
 *	  GJ_CUDA_TRY		check a CUDA call, fill the GjError, return a GjStatus
 *	  GJ_TRY			propagate a GjStatus from a helper that filled the GjError
 *	  buffers			device arrays by GjBufferId: grow-only, counted
 *						against the context's memory limit, reused across
 *						chunks (gj_cuda_buffer_reserve); CUB temporary
 *						storage is one of them
 *	  copies			gj_cuda_copy_to_device / gj_cuda_copy_from_device,
 *						which count bytes and time for GjStats
 *	  launches			GJ_BLOCK_SIZE threads a block, gj_cuda_grid_size()
 *						blocks, grid-stride loops over int64 indices
 *
 * Nothing here throws, exits or prints.  CUB is used through its
 * cudaError_t-returning device-wide calls only; Thrust is not used at all,
 * since it reports errors by throwing.
 *
 * IDENTIFICATION
 *	  cuda/common.cuh
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_COMMON_CUH
#define GPUJOIN_COMMON_CUH

#include <cuda_runtime.h>

#include "common.h"
#include "gpujoin_kernels.h"

/*
 * Threads per block of every kernel, and blocks per multiprocessor that a
 * grid is capped at: 8 x 256 = 2048 threads, the most an sm_80 or sm_90
 * multiprocessor keeps resident.  A bigger grid would only queue blocks
 * that grid-stride loops do without.
 */
#define GJ_BLOCK_SIZE		256
#define GJ_BLOCKS_PER_SM	8

/* First word of every CUDA context: catches a context of the other table */
#define GJ_CUDA_CONTEXT_MAGIC	0x55434a47	/* "GJCU" */

/*
 * Check a CUDA runtime call (or a CUB call, or cudaGetLastError() after a
 * launch).  On failure: clear the error where CUDA allows it, fill err
 * with the error's name, file:line and description, and return the mapped
 * GjStatus from the calling function.  The call is evaluated once.
 */
#define GJ_CUDA_TRY(err, call) \
	do { \
		cudaError_t gj_cuda_try_rc_ = (call); \
		if (gj_cuda_try_rc_ != cudaSuccess) \
			return gj_cuda_fail((err), gj_cuda_try_rc_, __FILE__, __LINE__); \
	} while (0)

/* Return the status of a helper that has filled err itself */
#define GJ_TRY(call) \
	do { \
		GjStatus	gj_try_status_ = (call); \
		if (gj_try_status_ != GJ_OK) \
			return gj_try_status_; \
	} while (0)

/*
 * The device arrays of a context
 *
 * Held in one array indexed by GjBufferId, so that context_destroy frees
 * every one of them, including those that later kernel files add here,
 * and so that an allocation error can name the array (BufferName() in
 * context.cu).  Each is grow-only: it is reallocated only when a call
 * needs more bytes than it holds.
 */
typedef enum GjBufferId
{
	/* CUB temporary storage, shared by every CUB call of the context */
	GJ_BUFFER_CUB_TEMP,

	/* The hash table (hash_join.cu), kept from hash_build to the next one */
	GJ_BUFFER_ENTRY_KEYS,		/* uint64_t[nentries] */
	GJ_BUFFER_ENTRY_ROWS,		/* GjRowId[inner rows]; nentries are used */
	GJ_BUFFER_BUCKET_START,		/* uint32_t[nbuckets + 1] */

	/* Scratch of hash_build, released when it returns */
	GJ_BUFFER_INNER_KEYS,		/* uint64_t[inner rows] */
	GJ_BUFFER_INNER_NULLS,		/* uint8_t[inner rows] */
	GJ_BUFFER_BUCKET_IDS,		/* uint32_t[inner rows], sort keys */
	GJ_BUFFER_BUCKET_IDS_ALT,	/* uint32_t[inner rows], their double buffer */
	GJ_BUFFER_ROWS_ALT,			/* GjRowId[inner rows], double buffer of
								 * GJ_BUFFER_ENTRY_ROWS */

	/* The counted chunk, kept for hash_retrieve */
	GJ_BUFFER_OUTER_KEYS,		/* uint64_t[outer rows] */
	GJ_BUFFER_OUTER_NULLS,		/* uint8_t[outer rows] */
	GJ_BUFFER_OFFSETS,			/* uint64_t[outer rows + 1] */

	/* One round of hash_retrieve, copied into the pinned h_match_* */
	GJ_BUFFER_MATCH_OUTER,		/* GjRowId[round] */
	GJ_BUFFER_MATCH_INNER,		/* GjRowId[round] */

	GJ_NUM_BUFFERS
} GjBufferId;

typedef struct GjDeviceBuffer
{
	void	   *ptr;			/* device memory, or NULL */
	size_t		bytes;			/* allocated size */
} GjDeviceBuffer;

/*
 * The CUDA implementation's GjContext
 *
 *	magic			GJ_CUDA_CONTEXT_MAGIC
 *	device			CUDA ordinal the context lives on (0)
 *	stream			the one stream every copy and kernel is ordered on
 *	max_grid		cap of gj_cuda_grid_size(): multiprocessors x
 *					GJ_BLOCKS_PER_SM
 *	memory_limit	most device bytes the buffers may hold; 0 = no limit but
 *					the device's own
 *	max_matches		capacity of one round of hash_retrieve
 *	device_bytes	device bytes the buffers hold now
 *	pinned_bytes	page-locked host bytes held (h_match_*): host memory, so
 *					not counted against memory_limit
 *	stats			what context_stats reports
 *	buffers			device arrays, see GjBufferId
 *
 * The table (hash_join.cu), valid once has_table is set:
 *	bucket_bits, nentries	as in the CPU twin (cpu_internal.h)
 *
 * The counted chunk, valid once has_chunk is set:
 *	outer_rows, nmatches	as in the CPU twin
 *
 * One round of hash_retrieve:
 *	h_match_outer, h_match_inner	pinned GjRowId[max_matches], handed out
 *					in the GjMatchRound
 */
typedef struct GjCudaContext
{
	uint32_t	magic;
	int			device;
	cudaStream_t stream;
	int			max_grid;
	int64_t		memory_limit;
	int64_t		max_matches;
	size_t		device_bytes;
	size_t		pinned_bytes;
	GjStats		stats;
	GjDeviceBuffer buffers[GJ_NUM_BUFFERS];

	bool		has_table;
	int			bucket_bits;
	int64_t		nentries;

	bool		has_chunk;
	int64_t		outer_rows;
	uint64_t	nmatches;

	GjRowId    *h_match_outer;
	GjRowId    *h_match_inner;
} GjCudaContext;

/* The kernel table's entry points; context.cu collects them in gj_cuda_kernels */
extern "C"
{
	/* context.cu */
	GjStatus	gj_cuda_context_create(GjContext **ctx, int64_t memory_limit,
									   int64_t max_matches, GjError *err);
	void		gj_cuda_context_destroy(GjContext *ctx);
	void		gj_cuda_context_stats(const GjContext *ctx, GjStats *stats);

	/* hash_join.cu */
	GjStatus	gj_cuda_hash_build(GjContext *ctx, const GjKeyColumn *inner,
								   GjError *err);
	GjStatus	gj_cuda_hash_count(GjContext *ctx, const GjKeyColumn *outer,
								   int64_t *nmatches, GjError *err);
	GjStatus	gj_cuda_hash_retrieve(GjContext *ctx, int64_t first,
									  GjMatchRound *round, GjError *err);
}

/* Helpers, context.cu */
extern GjCudaContext *gj_cuda_context_get(GjContext *ctx, GjError *err);
extern GjStatus gj_cuda_buffer_reserve(GjCudaContext *ctx, GjBufferId id,
									   size_t bytes, GjError *err);
extern void gj_cuda_buffer_release(GjCudaContext *ctx, GjBufferId id);
extern GjStatus gj_cuda_copy_to_device(GjCudaContext *ctx, void *d_dst,
									   const void *h_src, size_t bytes,
									   GjError *err);
extern GjStatus gj_cuda_copy_from_device(GjCudaContext *ctx, void *h_dst,
										 const void *d_src, size_t bytes,
										 GjError *err);
extern int	gj_cuda_grid_size(const GjCudaContext *ctx, int64_t nitems);
extern GjStatus gj_cuda_fail(GjError *err, cudaError_t rc, const char *file,
							 int line);

/* A buffer's device memory, typed: GJ_BUFFER(ctx, GJ_BUFFER_OFFSETS, uint64_t) */
#define GJ_BUFFER(ctx, id, type)	((type *) (ctx)->buffers[(id)].ptr)

/* Index of this thread in the grid, and the stride of a grid-stride loop */
static __device__ __forceinline__ int64_t
gj_thread_index(void)
{
	return (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
}

static __device__ __forceinline__ int64_t
gj_grid_stride(void)
{
	return (int64_t) gridDim.x * blockDim.x;
}

#endif							/* GPUJOIN_COMMON_CUH */
