/*-------------------------------------------------------------------------
 *
 * common.cuh
 *	  The CUDA context and the helpers every kernel file uses
 *
 * Private to the *.cu files.  Everything a variant file (hash_join.cu,
 * partitioned_join.cu, sort_merge.cu, band_join.cu, theta_nlj.cu) needs
 * besides its own kernels is here, so that a variant is one more .cu file
 * written against these helpers:
 *
 *	  GJ_CUDA_TRY		check a CUDA call, fill the GjError, return a GjStatus
 *	  GJ_TRY			propagate a GjStatus from a helper that filled the GjError
 *	  GjCudaVariant		a variant's entry points: build, count, retrieve,
 *						destroy_state (registered in context.cu)
 *	  variant steps		context.cu: the variant's state
 *						(gj_cuda_variant_state), a side's key range
 *						(gj_cuda_key_range), a chunk's match offsets
 *						(gj_cuda_count_offsets)
 *	  device buffers	grow-only, counted against the context's memory limit,
 *						reused across chunks, freed with the context: the
 *						shared ones by GjBufferId (gj_cuda_buffer_reserve),
 *						a variant's own in its private state, and any other
 *						GjDeviceBuffer (gj_cuda_device_reserve)
 *	  sorted pairs		key_sort.cu, for SMJ and BAND: the stable sort of a
 *						side's (key, row) pairs (gj_cuda_sort_pairs), and a
 *						round of the ranges of sorted inner pairs that the
 *						count found (gj_cuda_ranges_retrieve)
 *	  payload columns	materialize.cu: upload a batch's columns, gather them
 *						by a map (GFTR transforms, and every round), both
 *						at once (gj_cuda_columns_load); a round's maps
 *						(gj_cuda_round_maps_reserve)
 *	  copies			gj_cuda_copy_to_device / gj_cuda_copy_from_device (and
 *						their _async forms),
 *						which count bytes and time for GjStats
 *	  launches			GJ_BLOCK_SIZE threads a block, gj_cuda_grid_size()
 *						blocks, grid-stride loops over int64 indices
 *
 * Nothing here throws, exits or prints.  CUB is used through its
 * cudaError_t-returning device-wide calls only; Thrust is not used at all,
 * since it reports errors by throwing.
 *
 * IDENTIFICATION
 *	  cuda/device/common.cuh
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

/* One device array: grow-only, see gj_cuda_device_reserve() */
typedef struct GjDeviceBuffer
{
	void	   *ptr;			/* device memory, or NULL */
	size_t		bytes;			/* allocated size */
} GjDeviceBuffer;

/*
 * The device arrays that every variant uses, in the context
 *
 * Held in one array indexed by GjBufferId, so that context_destroy frees
 * every one of them, and so that an allocation error can name the array
 * (BufferName() in context.cu).  A variant keeps its own arrays (its table,
 * its partitions) in its private state instead, so that adding a variant
 * does not touch this list.
 */
typedef enum GjBufferId
{
	/* CUB temporary storage, shared by every CUB call of the context */
	GJ_BUFFER_CUB_TEMP,

	/* A batch's keys as uploaded by gj_cuda_upload_keys */
	GJ_BUFFER_INNER_KEYS,		/* uint64_t[inner rows] */
	GJ_BUFFER_INNER_NULLS,		/* uint8_t[inner rows] */
	GJ_BUFFER_OUTER_KEYS,		/* uint64_t[outer rows] */
	GJ_BUFFER_OUTER_NULLS,		/* uint8_t[outer rows] */

	/* A batch's GjBatch.row_numbers, when it has them (context.cu) */
	GJ_BUFFER_INNER_ROW_NUMBERS,	/* GjRowId[inner rows] */
	GJ_BUFFER_OUTER_ROW_NUMBERS,	/* GjRowId[outer rows] */

	/* A chain's keys packed for this level (gj_cuda_pack_keys): uint64_t[rows], then the values */
	GJ_BUFFER_PACKED_KEYS,

	/* The heap deform's (scan/heap_deform.cu) */
	GJ_BUFFER_SCAN_INPUT,		/* its plan, the tuple offsets, the pages */
	GJ_BUFFER_SCAN_OUTPUT,		/* what it found, and the rows */

	GJ_NUM_BUFFERS
} GjBufferId;

/*
 * One side's payload columns on the device (materialize.cu)
 *
 *	side		whose columns: the spec's ncolumns and widths of that side
 *	nrows		rows the columns hold now
 *	has_nulls	has_nulls[c]: nulls[c] holds column c's NULL flags
 *	values		values[c]: nrows values of the column's width, packed
 *	nulls		nulls[c]: nrows uint8_t flags, when has_nulls[c]
 *
 * Every buffer is grow-only and counted like the GjBufferId ones.
 */
typedef struct GjDeviceColumns
{
	GjSide		side;
	int64_t		nrows;
	bool		has_nulls[GJ_MAX_COLUMNS];
	GjDeviceBuffer values[GJ_MAX_COLUMNS];
	GjDeviceBuffer nulls[GJ_MAX_COLUMNS];
} GjDeviceColumns;

/*
 * The page-locked host arrays a round is handed out in (materialize.cu)
 *
 *	rows		rows[side]: GjRowId[max_matches], when spec.row_ids
 *	values		values[side][c]: max_matches values of column c's width
 *	nulls		nulls[side][c]: uint8_t[max_matches], allocated by the first
 *				call that meets column c with NULL flags
 */
typedef struct GjPinnedRound
{
	GjRowId    *rows[GJ_NUM_SIDES];
	void	   *values[GJ_NUM_SIDES][GJ_MAX_COLUMNS];
	uint8_t    *nulls[GJ_NUM_SIDES][GJ_MAX_COLUMNS];
} GjPinnedRound;

struct GjCudaContext;

/*
 * A variant's entry points (hash_join.cu: gj_cuda_nphj)
 *
 * context.cu checks every argument, keeps the state that every variant
 * shares (has_build, has_chunk, nmatches, the NULL flags of each side's
 * columns), times each call, and then calls:
 *
 *	build			build on the inner side (checked; nrows may be 0);
 *					replaces any earlier build.  Sets stats.detail.
 *	count			count the matches of one outer chunk (checked; nrows may
 *					be 0) into *nmatches, and keep what retrieve needs
 *	retrieve		for the matches first .. first + round_size - 1 (round_size
 *					>= 1), fill *sources and write the round maps that
 *					gj_cuda_round_maps_reserve plans and reserves (those
 *					*sources names, and OUTER_ROWS and INNER_ROWS when
 *					spec.row_ids); context.cu then gathers the payload
 *					values and copies the round out (materialize.cu)
 *	destroy_state	free ctx->variant_state and the device buffers it holds;
 *					called by context_destroy when variant_state is set,
 *					cannot fail
 *
 * A variant allocates its private state (ctx->variant_state) in its first
 * build, through gj_cuda_variant_state, and keeps its device arrays there
 * as GjDeviceBuffers reserved by gj_cuda_device_reserve.
 */
typedef struct GjCudaVariant
{
	const char *name;
	GjStatus	(*build) (struct GjCudaContext *ctx, const GjBatch *inner,
						  GjError *err);
	GjStatus	(*count) (struct GjCudaContext *ctx, const GjBatch *outer,
						  uint64_t *nmatches, GjError *err);
	GjStatus	(*retrieve) (struct GjCudaContext *ctx, uint64_t first,
							 int64_t round_size, GjRoundSources *sources,
							 GjError *err);
	void		(*destroy_state) (struct GjCudaContext *ctx);
} GjCudaVariant;

/*
 * The CUDA implementation's GjContext
 *
 *	magic			GJ_CUDA_CONTEXT_MAGIC
 *	device			CUDA ordinal the context lives on (0)
 *	stream			the one stream every copy and kernel is ordered on
 *	max_grid		cap of gj_cuda_grid_size(): multiprocessors x
 *					GJ_BLOCKS_PER_SM
 *	spec			the validated GjJoinSpec the context was created with
 *	variant			the spec's variant's entry points
 *	variant_state	the variant's private state, or NULL before its first
 *					build; freed by variant->destroy_state
 *	device_bytes	device bytes the buffers hold now
 *	pinned_bytes	page-locked host bytes held (the round's arrays): host
 *					memory, so not counted against spec.memory_limit
 *	stats			what context_stats reports
 *	buffers			shared device arrays, see GjBufferId
 *	columns			payload column sets, see GjColumnSetId (common.h)
 *	round_maps		index arrays of one round, see GjRoundMap (common.h)
 *	pinned			the round's page-locked output arrays
 *	build_of		the context whose build this one probes (context_share),
 *					or NULL: its own; GJ_CUDA_BUILD(ctx) is the one to read
 *					the table and the inner payload columns from
 *
 * The state every variant shares, kept by context.cu:
 *	has_build		a build has succeeded (and no later one has failed)
 *	has_chunk		a chunk has been counted since
 *	outer_rows		rows of the counted chunk
 *	nmatches		its matches
 *	has_nulls		has_nulls[side][c]: the build's (inner) or the chunk's
 *					(outer) column c came with NULL flags
 */
typedef struct GjCudaContext
{
	uint32_t	magic;
	int			device;
	cudaStream_t stream;
	int			max_grid;
	GjJoinSpec	spec;
	const GjCudaVariant *variant;
	void	   *variant_state;
	size_t		device_bytes;
	size_t		pinned_bytes;
	GjStats		stats;
	GjDeviceBuffer buffers[GJ_NUM_BUFFERS];
	GjDeviceColumns columns[GJ_NUM_COLUMN_SETS];
	GjDeviceBuffer round_maps[GJ_NUM_ROUND_MAPS];
	GjPinnedRound pinned;
	const struct GjCudaContext *build_of;

	bool		has_build;
	bool		has_chunk;
	int64_t		outer_rows;
	uint64_t	nmatches;
	bool		has_nulls[GJ_NUM_SIDES][GJ_MAX_COLUMNS];
	bool		has_row_numbers[GJ_NUM_SIDES];	/* the build's (inner) or
												 * the chunk's (outer) batch
												 * had row_numbers, kept in
												 * GJ_BUFFER_*_ROW_NUMBERS */

	/* the heap deform started and not yet finished (scan/heap_deform.cu),
	 * malloc'ed there at the first start, freed with the context */
	void	   *deform_state;

	/* the grouped aggregation's groups (agg/group_agg.cu), or NULL */
	void	   *agg_state;

	/* PARTITION's exchange arrays (device/exchange.cu), or NULL */
	void	   *exchange_state;
} GjCudaContext;

/* The context that holds ctx's build: its own, or the one it shares */
#define GJ_CUDA_BUILD(ctx)	((ctx)->build_of != NULL ? (ctx)->build_of : (ctx))

/* The variants (one line per implemented variant; see context.cu) */
/* heap_deform.cu: drop a deform started and not finished (the slots of kept pages it holds) */
extern "C" void gj_cuda_heap_deform_forget(GjCudaContext *ctx);

extern const GjCudaVariant gj_cuda_nphj;	/* hash_join.cu */
extern const GjCudaVariant gj_cuda_phj;	/* partitioned_join.cu */
extern const GjCudaVariant gj_cuda_smj;	/* sort_merge.cu */
extern const GjCudaVariant gj_cuda_band;	/* band_join.cu */
extern const GjCudaVariant gj_cuda_nlj;	/* theta_nlj.cu */
extern const GjCudaVariant gj_cuda_scan;	/* scan.cu */

/* The kernel table's entry points; context.cu collects them in gj_cuda_kernels */
extern "C"
{
	GjStatus	gj_cuda_context_create(GjContext **ctx, const GjJoinSpec *spec,
									   GjError *err);
	void		gj_cuda_context_destroy(GjContext *ctx);
	void		gj_cuda_context_stats(const GjContext *ctx, GjStats *stats);
	GjStatus	gj_cuda_context_share(GjContext **ctx, GjContext *built,
									  GjError *err);
	GjStatus	gj_cuda_build(GjContext *ctx, const GjBatch *inner, GjError *err);
	GjStatus	gj_cuda_count(GjContext *ctx, const GjBatch *outer,
							  int64_t *nmatches, GjError *err);
	GjStatus	gj_cuda_retrieve(GjContext *ctx, int64_t first,
								 GjMatchRound *round, GjError *err);
	GjStatus	gj_cuda_retrieve_device(GjContext *ctx, int64_t first,
										GjMatchRound *round, GjError *err);
	GjStatus	gj_cuda_pack_keys(GjContext *ctx, const void *values, int width,
								  int64_t n, int32_t bits, bool exact,
								  const uint64_t **keys, GjError *err);
	GjStatus	gj_cuda_heap_deform(GjContext *ctx, const GjPageBatch *pages,
									const GjDeformSpec *spec, int64_t first,
									int64_t n, GjDeformOut *out, GjError *err);
	GjStatus	gj_cuda_heap_deform_start(GjContext *ctx, const GjPageBatch *pages,
										  const GjDeformSpec *spec, int64_t first,
										  int64_t n, GjDeformOut *out, GjError *err);
	GjStatus	gj_cuda_heap_deform_finish(GjContext *ctx, GjError *err);
	GjStatus	gj_cuda_pages_kept(GjContext *ctx, const uint32_t relation[3],
								   const uint32_t *blocks, const uint64_t *lsns, int64_t n,
								   int32_t page_size, int16_t *counts, GjError *err);
	void	   *gj_cuda_stage_alloc(size_t bytes);
	void		gj_cuda_stage_free(void *ptr);
	GjStatus	gj_cuda_agg_begin(GjContext *ctx, const GjAggSpec *spec, GjError *err);
	GjStatus	gj_cuda_aggregate(GjContext *ctx, int64_t first, int64_t *nmatches,
								  int64_t *undecided, GjError *err);
	GjStatus	gj_cuda_agg_result(GjContext *ctx, GjAggResult *out, GjError *err);
	/* exchange.cu */
	GjStatus	gj_cuda_exchange_send(GjContext *ctx, const GjBatch *side, bool inner,
									  int64_t start, int64_t end, int ndevices,
									  GjExchange *sent, GjError *err);
	GjStatus	gj_cuda_exchange_receive(GjContext *ctx, const GjExchange *sent,
										 int nsent, int self, GjExchange *part,
										 GjError *err);
	void		gj_cuda_exchange_free(GjExchange *x);
}

/* agg/group_agg.cu: frees the aggregation's state with the context */
extern void gj_cuda_agg_destroy(GjCudaContext *ctx);

/* device/exchange.cu: frees the exchange's arrays with the context */
extern void gj_cuda_exchange_destroy(GjCudaContext *ctx);

/* Helpers, context.cu */
extern GjCudaContext *gj_cuda_context_get(GjContext *ctx, GjError *err);
extern void *gj_cuda_variant_state(GjCudaContext *ctx, size_t size,
								   const char *what, GjError *err);
extern GjStatus gj_cuda_device_reserve(GjCudaContext *ctx, GjDeviceBuffer *buf,
									   size_t bytes, const char *what,
									   GjError *err);
extern void gj_cuda_device_release(GjCudaContext *ctx, GjDeviceBuffer *buf);
extern GjStatus gj_cuda_buffer_reserve(GjCudaContext *ctx, GjBufferId id,
									   size_t bytes, GjError *err);
extern void gj_cuda_buffer_release(GjCudaContext *ctx, GjBufferId id);
extern GjStatus gj_cuda_upload_keys(GjCudaContext *ctx, GjSide side,
									const GjBatch *batch,
									const uint64_t **d_keys,
									const uint8_t **d_nulls, GjError *err);
extern GjStatus gj_cuda_key_range(GjCudaContext *ctx, const uint64_t *d_keys,
								  const uint8_t *d_nulls, int64_t nrows,
								  unsigned long long *d_range, bool *has_keys,
								  uint64_t *min_key, uint64_t *max_key,
								  GjError *err);
extern GjStatus gj_cuda_count_offsets(GjCudaContext *ctx, uint64_t *d_counts,
									  int64_t nrows, uint64_t *total,
									  GjError *err);
extern GjStatus gj_cuda_copy_to_device(GjCudaContext *ctx, void *d_dst,
									   const void *h_src, size_t bytes,
									   GjError *err);
extern GjStatus gj_cuda_copy_to_device_async(GjCudaContext *ctx, void *d_dst,
											 const void *h_src, size_t bytes,
											 GjError *err);
extern GjStatus gj_cuda_copy_from_device(GjCudaContext *ctx, void *h_dst,
										 const void *d_src, size_t bytes,
										 GjError *err);
extern GjStatus gj_cuda_copy_from_device_async(GjCudaContext *ctx, void *h_dst,
											   const void *d_src, size_t bytes,
											   GjError *err);
extern int	gj_cuda_grid_size(const GjCudaContext *ctx, int64_t nitems);
extern GjStatus gj_cuda_fail(GjError *err, cudaError_t rc, const char *file,
							 int line);

/*
 * The buffers of one sort of (key, row) pairs (key_sort.cu), held by the
 * caller (in its private state)
 *
 *	keys, rows			the sorted pairs: uint64_t[] and GjRowId[]
 *	keys_alt, rows_alt	the sort's double buffers: scratch, which the
 *						caller releases when it is done sorting
 *	d_count				one word of device memory, for the selection's count
 */
typedef struct GjSortBuffers
{
	GjDeviceBuffer *keys;
	GjDeviceBuffer *rows;
	GjDeviceBuffer *keys_alt;
	GjDeviceBuffer *rows_alt;
	int64_t    *d_count;
} GjSortBuffers;

/* Sorted pairs and their ranges, key_sort.cu */
extern GjStatus gj_cuda_sort_pairs(GjCudaContext *ctx, GjSide side,
								   const uint64_t *d_keys,
								   const uint8_t *d_nulls, int64_t nrows,
								   uint64_t min_key, uint64_t max_key,
								   int bits, const GjSortBuffers *buffers,
								   int64_t *npairs, GjError *err);
extern GjStatus gj_cuda_ranges_retrieve(GjCudaContext *ctx,
										const GjSortedRanges *ranges,
										uint64_t first, int64_t round_size,
										GjRowId *const maps[GJ_NUM_ROUND_MAPS],
										GjError *err);

/* Payload columns and rounds, materialize.cu */
extern void gj_cuda_columns_init(GjCudaContext *ctx);
extern GjStatus gj_cuda_columns_upload(GjCudaContext *ctx, GjColumnSetId set,
									   const GjBatch *batch, GjError *err);
extern GjStatus gj_cuda_columns_reserve(GjCudaContext *ctx, GjColumnSetId set,
										int64_t nrows, const bool *has_nulls,
										GjError *err);
extern GjStatus gj_cuda_columns_gather(GjCudaContext *ctx, GjColumnSetId dst,
									   GjColumnSetId src, const GjRowId *d_map,
									   int64_t n, GjError *err);
extern GjStatus gj_cuda_columns_load(GjCudaContext *ctx, GjSide side,
									 const GjBatch *batch, const GjRowId *d_map,
									 int64_t n, GjError *err);
extern void gj_cuda_columns_release(GjCudaContext *ctx, GjColumnSetId set);
extern GjStatus gj_cuda_round_maps_reserve(GjCudaContext *ctx,
										   bool outer_transformed, int64_t n,
										   GjRoundSources *sources,
										   GjRowId *maps[GJ_NUM_ROUND_MAPS],
										   GjError *err);
extern GjStatus gj_cuda_round_alloc(GjCudaContext *ctx, GjError *err);
extern GjStatus gj_cuda_round_gather(GjCudaContext *ctx, const GjRoundSources *sources,
									 int64_t n, GjError *err);
extern GjStatus gj_cuda_round_materialize(GjCudaContext *ctx,
										  const GjRoundSources *sources,
										  int64_t n, GjMatchRound *on_device,
										  GjError *err);
extern void gj_cuda_round_fill(const GjCudaContext *ctx, GjMatchRound *round);
extern void gj_cuda_materialize_release(GjCudaContext *ctx);

/* A buffer's device memory, typed: GJ_BUFFER(ctx, GJ_BUFFER_OUTER_KEYS, uint64_t) */
#define GJ_BUFFER(ctx, id, type)	((type *) (ctx)->buffers[(id)].ptr)

/* A round map's device memory: GJ_ROUND_MAP(ctx, GJ_ROUND_OUTER_ROWS) */
#define GJ_ROUND_MAP(ctx, map)		((GjRowId *) (ctx)->round_maps[(map)].ptr)

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
