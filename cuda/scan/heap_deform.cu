/*-------------------------------------------------------------------------
 *
 * heap_deform.cu
 *	  The heap deform on the device: heap pages in, a join side's column
 *	  arrays and packed keys out
 *
 * One call ships what the tuples first .. first + n - 1 need (the plan,
 * their byte offsets, the pages: queued on the stream with no wait, at the
 * bus's speed when the caller staged them in GjKernels.stage_alloc's
 * page-locked memory, or from PostgreSQL's shared buffers in place, with
 * no copy on the host: a run of pages at a time, or read by the device
 * page by page: ShipPagesInPlace), runs gj_heap_deform_row (heap_deform.h)
 * in one thread per tuple, and copies the rows back into the caller's
 * arrays.
 * Without a filter the copies (values, keys and every NULL flag array,
 * which start at zero on both sides) are queued behind the kernel, so
 * that they cross the bus while the caller reads its next pages
 * (QueueRowsBack).  With a filter, each thread also runs the qual's
 * program (expr.h) on its tuple; the rows that stay are then moved
 * together, in tuple order (their places an exclusive sum over the
 * verdicts), and only they come back at the finish: the values and keys
 * always, the NULL flags of a column or of the keys only when one was set
 * (the caller's are zero).  The rows come back
 * to host memory because the join's build and count take host batches
 * today; the pages are what crosses the bus, not per-row executor work.
 *
 * The device arrays are two of the context's shared buffers: the input
 * (plan, attributes, offsets, pages) and the output (what the tuples
 * found, the NULL flags, the keys, the values), each laid out in one
 * allocation, grown as needed and reused by the next call.
 *
 * IDENTIFICATION
 *	  cuda/scan/heap_deform.cu
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdlib.h>

#include "common.cuh"
#include "heap_deform.h"

/* What the tuples of one call found, at the start of the output buffer */
typedef struct DeformFound
{
	unsigned int null_columns;	/* bits of GjDeformFound.null_columns */
	int			bad_attno;		/* the highest GjDeformFound.bad_attno */
	unsigned long long key_nulls;	/* rows with a NULL key */
	unsigned long long host_numerics;	/* GjDeformFound.host_numerics */
	unsigned long long rows;	/* with a filter: the rows that stay */
} DeformFound;

/* Offsets in a buffer, each array aligned to 8 bytes */
static size_t
Align8(size_t off)
{
	return (off + 7) & ~(size_t) 7;
}

/*
 * Lay out n rows (the NULL flags of the columns, then of the keys, the
 * keys, the values) in buffer from off, into rows when buffer is not NULL;
 * the end.  The flags come first, so that one memset clears them.
 */
static size_t
LayoutRows(const GjDeformPlan *plan, char *buffer, size_t off, int64_t n, GjDeformRows *rows)
{
	if (buffer != NULL)
	{
		memset(rows, 0, sizeof(*rows));
		for (int c = 0; c < plan->ncolumns; c++)
			rows->nulls[c] = (uint8_t *) buffer + off + (size_t) c * n;
		rows->keynulls = (uint8_t *) buffer + off + (size_t) plan->ncolumns * n;
	}
	off = Align8(off + (size_t) n * (plan->ncolumns + 1));
	if (plan->nkeys > 0)
	{
		if (buffer != NULL)
			rows->keys = (uint64_t *) (buffer + off);
		off += sizeof(uint64_t) * (size_t) n;
	}
	for (int c = 0; c < plan->ncolumns; c++)
	{
		if (buffer != NULL)
			rows->values[c] = buffer + off;
		off = Align8(off + (size_t) plan->column_widths[c] * n);
	}
	return off;
}

/*
 * Pages left in place (GjPageBatch.region): the device reads them straight
 * from host memory the driver has registered (mapped, at the address the
 * host uses, where the device can: cudaDevAttrCanUseHostPointerForRegisteredMem).
 * A region is registered in parts of REGION_PART bytes, aligned in the
 * address space (so that two parts never share an OS page), each the first
 * time a batch has a page in it: PostgreSQL's shared buffers can be tens of
 * gigabytes, registering them costs about 3.6 ms per 64 MB (H100 host), and
 * a join reads few of them.  Registrations last as long as the process.
 * The tables are the process's: the gpujoin service deforms the batches of
 * several contexts at once, in threads, so they are read and changed under
 * region_mutex only.
 * A part that cannot be registered is not tried again; batches with pages
 * in it are copied on the host (CopyPagesOnHost), which is slower but right.
 */
#define REGION_PART		((size_t) 64 << 20)
#define MAX_REGIONS		4

typedef enum PartState
{
	PART_UNTRIED = 0,
	PART_MAPPED,
	PART_FAILED
} PartState;

typedef struct HostRegion
{
	const char *base;
	size_t		bytes;
	size_t		first_part;		/* base / REGION_PART */
	uint8_t    *parts;			/* PartState, per part from first_part */
} HostRegion;

static HostRegion host_regions[MAX_REGIONS];
static int	device_reads_host = -1;	/* the device attribute, once known */
static pthread_mutex_t region_mutex = PTHREAD_MUTEX_INITIALIZER;

/* The entry of the region at base, made at its first use; NULL when full */
static HostRegion *
FindRegion(const char *base, size_t bytes)
{
	for (int i = 0; i < MAX_REGIONS; i++)
	{
		HostRegion *region = &host_regions[i];

		if (region->base == base && region->bytes == bytes)
			return region;
		if (region->base == NULL)
		{
			size_t		first = (uintptr_t) base / REGION_PART;
			size_t		last = ((uintptr_t) base + bytes - 1) / REGION_PART;

			region->parts = (uint8_t *) calloc(last - first + 1, 1);
			if (region->parts == NULL)
				return NULL;
			region->base = base;
			region->bytes = bytes;
			region->first_part = first;
			return region;
		}
	}
	return NULL;
}

/* Register part (an absolute number) of region, once; whether it is mapped */
static bool
MapPart(HostRegion *region, size_t part)
{
	uint8_t    *state = &region->parts[part - region->first_part];

	if (*state == PART_UNTRIED)
	{
		uintptr_t	start = part * REGION_PART;
		uintptr_t	end = start + REGION_PART;
		uintptr_t	base = (uintptr_t) region->base;
		cudaError_t rc;

		if (start < base)
			start = base;
		if (end > base + region->bytes)
			end = base + region->bytes;
		rc = cudaHostRegister((void *) start, end - start,
							  cudaHostRegisterMapped | cudaHostRegisterPortable);
		if (rc == cudaErrorHostMemoryAlreadyRegistered)
			rc = cudaSuccess;
		(void) cudaGetLastError();	/* not a sticky error: clear it */
		*state = rc == cudaSuccess ? PART_MAPPED : PART_FAILED;
	}
	return *state == PART_MAPPED;
}

/*
 * Whether the device can read pages p0 .. p1 - 1 of a batch in place,
 * registering the parts of the region they lie in as needed (under
 * region_mutex: MapPages)
 */
static bool
MapPagesLocked(GjCudaContext *ctx, const GjPageBatch *pages, int64_t p0, int64_t p1)
{
	size_t		page = (size_t) pages->page_size;
	HostRegion *region;
	size_t		mapped = SIZE_MAX;	/* the last part found mapped */

	if (device_reads_host < 0)
	{
		int			value = 0;

		if (cudaDeviceGetAttribute(&value, cudaDevAttrCanUseHostPointerForRegisteredMem,
								   ctx->device) != cudaSuccess)
		{
			(void) cudaGetLastError();
			value = 0;
		}
		device_reads_host = value;
	}
	/* the gather reads 16 bytes at a time */
	if (!device_reads_host || (uintptr_t) pages->region % 16 != 0 || page % 16 != 0)
		return false;
	region = FindRegion(pages->region, (size_t) pages->region_bytes);
	if (region == NULL)
		return false;
	for (int64_t p = p0; p < p1; p++)
	{
		uintptr_t	start;
		size_t		first;
		size_t		last;

		if (gj_heap_page_kept_only(pages, p))
			continue;			/* not in the region: read from its copy */
		start = (uintptr_t) gj_heap_page_in_place(pages, p);
		first = start / REGION_PART;
		last = (start + page - 1) / REGION_PART;
		for (size_t part = first; part <= last; part++)
		{
			if (part == mapped)
				continue;
			if (!MapPart(region, part))
				return false;
			mapped = part;
		}
	}
	return true;
}

static bool
MapPages(GjCudaContext *ctx, const GjPageBatch *pages, int64_t p0, int64_t p1)
{
	bool		mapped;

	pthread_mutex_lock(&region_mutex);
	mapped = MapPagesLocked(ctx, pages, p0, p1);
	pthread_mutex_unlock(&region_mutex);
	return mapped;
}

/* Pages in place read by the device: page p of the call from region at index[p] */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
heap_gather_kernel(const char *__restrict__ region, const uint32_t *__restrict__ index,
				   int64_t npages, int32_t page_size, char *__restrict__ to)
{
	int			words = page_size / (int) sizeof(uint4);

	for (int64_t p = blockIdx.x; p < npages; p += gridDim.x)
	{
		const uint4 *from = (const uint4 *) (region + (size_t) index[p] * page_size);
		uint4	   *dst = (uint4 *) (to + (size_t) p * page_size);

		for (int w = threadIdx.x; w < words; w += blockDim.x)
			dst[w] = from[w];
	}
}

/*
 * Pages p0 .. p1 - 1 of a batch in place, where the device cannot read
 * them: copied one after another on the host and shipped (pageable
 * memory: the copy has taken them when it returns)
 */
static GjStatus
CopyPagesOnHost(GjCudaContext *ctx, const GjPageBatch *pages, int64_t p0, int64_t p1,
				char *d_pages, GjError *err)
{
	size_t		page = (size_t) pages->page_size;
	char	   *copy = (char *) malloc((size_t) (p1 - p0) * page);
	GjStatus	status;

	if (copy == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY, "heap deform: out of memory.");
	for (int64_t p = p0; p < p1; p++)
		memcpy(copy + (size_t) (p - p0) * page, gj_heap_page_in_place(pages, p), page);
	status = gj_cuda_copy_to_device_async(ctx, d_pages, copy, (size_t) (p1 - p0) * page, err);
	free(copy);
	return status;
}

/*
 * Pages in place that lie one after another in the region (a relation read
 * into the buffers in order) are copied a run at a time by the copy
 * engine.  The gather reads host memory from the SMs (27-31 GB/s alone on
 * an H100 host, 51 on an H200, where copies of page-locked memory reach
 * 55), and the copies leave the SMs to the kernels of the other calls the
 * gpujoin service runs at once: with seven processes reading SSB's fact
 * table at SF 10 the deforms' waits went from 498 to 276 ms summed (H200).
 * A batch is copied so when it has at most one run per MIN_RUN_PAGES pages
 * (256 kB a copy on average, enough to hide each copy's cost of starting),
 * or is one run; else gathered page by page.
 */
#define MIN_RUN_PAGES	32

/* The runs of pages p0 .. p1 - 1: pages whose indexes follow one another */
static int64_t
CountRuns(const GjPageBatch *pages, int64_t p0, int64_t p1)
{
	int64_t		runs = 1;

	for (int64_t p = p0 + 1; p < p1; p++)
		runs += pages->page_index[p] != pages->page_index[p - 1] + 1;
	return runs;
}

/*
 * Copy pages p0 .. p1 - 1 (mapped) to d_pages a run at a time; a run in
 * pieces that each lie in one registered part (the driver refuses a copy
 * whose source spans two registrations), so a page may be cut in two
 */
static GjStatus
CopyPageRuns(GjCudaContext *ctx, const GjPageBatch *pages, int64_t p0, int64_t p1,
			 char *d_pages, GjError *err)
{
	size_t		page = (size_t) pages->page_size;
	int64_t		start = p0;

	for (int64_t p = p0 + 1; p <= p1; p++)
	{
		const char *from;
		char	   *to;
		size_t		bytes;

		if (p < p1 && pages->page_index[p] == pages->page_index[p - 1] + 1)
			continue;
		from = pages->region + (size_t) pages->page_index[start] * page;
		to = d_pages + (size_t) (start - p0) * page;
		bytes = (size_t) (p - start) * page;
		while (bytes > 0)
		{
			size_t		room = REGION_PART - (uintptr_t) from % REGION_PART;
			size_t		piece = bytes < room ? bytes : room;

			GJ_CUDA_TRY(err, cudaMemcpyAsync(to, from, piece, cudaMemcpyHostToDevice,
											 ctx->stream));
			from += piece;
			to += piece;
			bytes -= piece;
		}
		start = p;
	}
	return GJ_OK;
}

/*
 * Pages kept between calls (page_cache.h), per device: device memory of
 * the first call's GjPageBatch.cache_bytes, taken by the process's first
 * call that asks for it and kept while the process lives (none when it
 * cannot be had), with GJ_PAGE_MAX_ITEMS offsets a slot: where its
 * tuples listed when it was filled lie in it.  A call's kept pages are the
 * slots it holds from its start to its finish: the slots it reads (its
 * pages copied from them into its input, on the device), the slots it
 * fills (from its input, behind the pages' shipping, with the offsets of
 * the page's tuples in the batch), let go once its stream has done both.
 */
typedef struct KeptPages
{
	GjPageCache *cache;			/* NULL: none held */
	int64_t		n;
	uint8_t    *use;
	int64_t    *slot;
} KeptPages;

static GjPageCache device_caches[GJ_MAX_DEVICES];
static char *device_cache_memory[GJ_MAX_DEVICES];
static uint16_t *device_cache_items[GJ_MAX_DEVICES];
static bool device_cache_tried[GJ_MAX_DEVICES];
static int32_t device_cache_page[GJ_MAX_DEVICES];
static pthread_mutex_t device_cache_mutex = PTHREAD_MUTEX_INITIALIZER;

/* The device's cache for the batch's pages, made at its first use; NULL when none */
static GjPageCache *
DeviceCache(GjCudaContext *ctx, const GjPageBatch *pages)
{
	int			dev = ctx->device;
	GjPageCache *cache = NULL;

	if (pages->cache_bytes <= 0 || pages->page_lsn == NULL || pages->page_block == NULL ||
		dev < 0 || dev >= GJ_MAX_DEVICES)
		return NULL;
	pthread_mutex_lock(&device_cache_mutex);
	if (!device_cache_tried[dev])
	{
		int64_t		nslots = pages->cache_bytes / pages->page_size;
		size_t		items_bytes = sizeof(uint16_t) * (size_t) nslots *
			(size_t) GJ_PAGE_MAX_ITEMS(pages->page_size);
		void	   *memory = NULL;
		void	   *items = NULL;

		device_cache_tried[dev] = true;
		device_cache_page[dev] = pages->page_size;
		if (nslots > 0 &&
			cudaMalloc(&memory, (size_t) nslots * (size_t) pages->page_size) == cudaSuccess &&
			cudaMalloc(&items, items_bytes) == cudaSuccess &&
			gj_page_cache_init(&device_caches[dev], nslots))
		{
			device_cache_memory[dev] = (char *) memory;
			device_cache_items[dev] = (uint16_t *) items;
		}
		else
		{
			(void) cudaFree(memory);
			(void) cudaFree(items);
		}
		(void) cudaGetLastError();	/* out of memory is not sticky: no cache */
	}
	if (device_cache_memory[dev] != NULL && device_cache_page[dev] == pages->page_size)
		cache = &device_caches[dev];
	pthread_mutex_unlock(&device_cache_mutex);
	return cache;
}

/* GjKernels.pages_kept: what the context's device keeps (nothing held) */
extern "C" GjStatus
gj_cuda_pages_kept(GjContext *gctx, const uint32_t relation[3], const uint32_t *blocks,
				   const uint64_t *lsns, int64_t n, int32_t page_size, int16_t *counts,
				   GjError *err)
{
	GjCudaContext *ctx = gj_cuda_context_get(gctx, err);
	GjPageCache *cache = NULL;
	int			dev;

	if (ctx == NULL)
		return err->status;
	dev = ctx->device;
	pthread_mutex_lock(&device_cache_mutex);
	if (dev >= 0 && dev < GJ_MAX_DEVICES && device_cache_memory[dev] != NULL &&
		device_cache_page[dev] == page_size)
		cache = &device_caches[dev];
	pthread_mutex_unlock(&device_cache_mutex);
	gj_page_cache_probe(cache, relation, blocks, lsns, n, counts);
	return GJ_OK;
}

/* Let go of a call's kept pages: the ones it filled readable, or dropped */
static void
ReleaseKept(KeptPages *kept, bool filled)
{
	if (kept->cache != NULL)
		gj_page_cache_release(kept->cache, kept->use, kept->slot, kept->n, filled);
	free(kept->use);
	free(kept->slot);
	memset(kept, 0, sizeof(*kept));
}

/* Each page from[i] to to[i], a block a page */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
copy_pages_kernel(const char *const *__restrict__ from, char *const *__restrict__ to,
				  int64_t npages, int32_t page_size)
{
	int			words = page_size / (int) sizeof(uint4);

	for (int64_t p = blockIdx.x; p < npages; p += gridDim.x)
	{
		const uint4 *src = (const uint4 *) from[p];
		uint4	   *dst = (uint4 *) to[p];

		for (int w = threadIdx.x; w < words; w += blockDim.x)
			dst[w] = src[w];
	}
}

/*
 * The tuples' offsets of the pages filled (block b: slot slots[b], its
 * offsets offs[starts[b] .. starts[b + 1] - 1]) into their slots' lists
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
keep_items_kernel(const int64_t *__restrict__ slots, const int32_t *__restrict__ starts,
				  const uint16_t *__restrict__ offs, int64_t nfills, int32_t max_items,
				  uint16_t *__restrict__ items)
{
	for (int64_t b = blockIdx.x; b < nfills; b += gridDim.x)
	{
		uint16_t   *to = items + slots[b] * max_items;

		for (int32_t k = starts[b] + threadIdx.x; k < starts[b + 1]; k += blockDim.x)
			to[k - starts[b]] = offs[k];
	}
}

/*
 * A kept copy's tuples (GJ_PAGE_KEPT_ONLY): each of the call's n tuples
 * whose page p0 + p is one (slots[p] >= 0) has its ordinal as its offset's
 * place in the page; it becomes the offset the copy's list keeps there
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
kept_tuples_kernel(uint32_t *__restrict__ tuples, int64_t n, int64_t p0, int32_t page_size,
				   const int64_t *__restrict__ slots, int32_t max_items,
				   const uint16_t *__restrict__ items)
{
	for (int64_t i = gj_thread_index(); i < n; i += gj_grid_stride())
	{
		uint32_t	t = tuples[i];
		int64_t		p = t / (uint32_t) page_size;
		int64_t		s = slots[p - p0];

		if (s >= 0)
			tuples[i] = (uint32_t) (p * page_size) + items[s * max_items + t % (uint32_t) page_size];
	}
}

/*
 * Queue the copies of count pages, from[i] to to[i], through d_ptrs (room
 * for 2 x count pointers on the device); the host arrays may go when this
 * returns (pageable memory: the copy has taken them)
 */
static GjStatus
CopyPagesByPointer(GjCudaContext *ctx, const char **from, char **to, int64_t count,
				   int32_t page_size, char **d_ptrs, GjError *err)
{
	if (count == 0)
		return GJ_OK;
	GJ_CUDA_TRY(err, cudaMemcpyAsync(d_ptrs, from, sizeof(char *) * (size_t) count,
									 cudaMemcpyHostToDevice, ctx->stream));
	GJ_CUDA_TRY(err, cudaMemcpyAsync(d_ptrs + count, to, sizeof(char *) * (size_t) count,
									 cudaMemcpyHostToDevice, ctx->stream));
	copy_pages_kernel<<<count < ctx->max_grid ? (int) count : ctx->max_grid,
		GJ_BLOCK_SIZE, 0, ctx->stream>>>((const char *const *) d_ptrs, d_ptrs + count, count,
										 page_size);
	GJ_CUDA_TRY(err, cudaGetLastError());
	return GJ_OK;
}

static GjStatus ShipPages(GjCudaContext *ctx, const GjPageBatch *pages, int64_t p0, int64_t p1,
						  uint32_t *d_index, char *d_pages, GjError *err);

/*
 * What a call with pages kept needs on the device besides the pages: its
 * tuples' offsets (kept copies only: rewritten from their lists), and the
 * lists of the pages it fills; laid out by DeformStart in its input
 */
typedef struct KeptInput
{
	uint32_t   *tuples;			/* the call's n offsets (device) */
	int64_t		n;
	const int64_t *starts;		/* host: per page of the call, where its
								 * tuples start in the batch (npages + 1) */
	int64_t    *page_slots;		/* npages: a kept copy's slot, or -1 */
	int64_t    *fill_slots;		/* npages: the slots filled */
	int32_t    *fill_starts;	/* npages + 1 */
	uint16_t   *fill_offs;		/* the offsets of their tuples */
} KeptInput;

/*
 * The lists of the pages the call fills (uses GJ_PAGE_FILL), from the
 * batch's offsets, into their slots' lists: through the device, behind
 * what is queued
 */
static GjStatus
KeepItems(GjCudaContext *ctx, const GjPageBatch *pages, const KeptPages *kept,
		  const KeptInput *in, int64_t nfills, GjError *err)
{
	uint32_t	page = (uint32_t) pages->page_size;
	int64_t		nitems = in->starts[kept->n] - in->starts[0];
	int64_t    *slots = (int64_t *) malloc(sizeof(int64_t) * (size_t) nfills);
	int32_t    *starts = (int32_t *) malloc(sizeof(int32_t) * (size_t) (nfills + 1));
	uint16_t   *offs = (uint16_t *) malloc(sizeof(uint16_t) * (size_t) (nitems > 0 ? nitems : 1));
	int64_t		f = 0;
	GjStatus	status = GJ_OK;

	if (slots == NULL || starts == NULL || offs == NULL)
		status = gj_error_set(err, GJ_ERROR_HOST_MEMORY, "heap deform: out of memory.");
	else
	{
		starts[0] = 0;
		for (int64_t i = 0; i < kept->n; i++)
		{
			if (kept->use[i] != GJ_PAGE_FILL)
				continue;
			slots[f] = kept->slot[i];
			starts[f + 1] = starts[f];
			for (int64_t t = in->starts[i]; t < in->starts[i + 1]; t++)
				offs[starts[f + 1]++] = (uint16_t) (pages->tuples[t] % page);
			f++;
		}
		/* pageable: the copies have taken the arrays when they return */
		status = gj_cuda_copy_to_device_async(ctx, in->fill_slots, slots,
											  sizeof(int64_t) * (size_t) nfills, err);
		if (status == GJ_OK)
			status = gj_cuda_copy_to_device_async(ctx, in->fill_starts, starts,
												  sizeof(int32_t) * (size_t) (nfills + 1), err);
		if (status == GJ_OK && starts[nfills] > 0)
			status = gj_cuda_copy_to_device_async(ctx, in->fill_offs, offs,
												  sizeof(uint16_t) * (size_t) starts[nfills], err);
		if (status == GJ_OK)
		{
			keep_items_kernel<<<nfills < ctx->max_grid ? (int) nfills : ctx->max_grid,
				GJ_BLOCK_SIZE, 0, ctx->stream>>>(in->fill_slots, in->fill_starts, in->fill_offs,
												 nfills, GJ_PAGE_MAX_ITEMS(pages->page_size),
												 device_cache_items[ctx->device]);
			if (cudaGetLastError() != cudaSuccess)
				status = gj_error_set(err, GJ_ERROR_KERNEL, "heap deform: a launch failed.");
		}
	}
	free(slots);
	free(starts);
	free(offs);
	return status;
}

/*
 * The call's tuples on kept copies only (GJ_PAGE_KEPT_ONLY): their offsets
 * from the copies' lists (queued behind the copies of the offsets)
 */
static GjStatus
KeptTuples(GjCudaContext *ctx, const GjPageBatch *pages, int64_t p0, const KeptPages *kept,
		   const uint8_t *only, const KeptInput *in, GjError *err)
{
	int64_t    *slots = (int64_t *) malloc(sizeof(int64_t) * (size_t) kept->n);

	if (slots == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY, "heap deform: out of memory.");
	for (int64_t i = 0; i < kept->n; i++)
		slots[i] = only[i] ? kept->slot[i] : -1;
	if (gj_cuda_copy_to_device_async(ctx, in->page_slots, slots,
									 sizeof(int64_t) * (size_t) kept->n, err) != GJ_OK)
	{
		free(slots);
		return err->status;
	}
	free(slots);
	kept_tuples_kernel<<<gj_cuda_grid_size(ctx, in->n), GJ_BLOCK_SIZE, 0, ctx->stream>>>
		(in->tuples, in->n, p0, pages->page_size, in->page_slots,
		 GJ_PAGE_MAX_ITEMS(pages->page_size), device_cache_items[ctx->device]);
	GJ_CUDA_TRY(err, cudaGetLastError());
	return GJ_OK;
}

/*
 * Pages p0 .. p1 - 1 of a batch in place (mapped), with pages kept: the
 * kept ones copied on the device from their slots, the others shipped
 * (all of them as ShipPages does when none is kept), then the ones to
 * keep copied into their slots, with their tuples' offsets; the offsets of
 * the tuples on kept copies only rewritten; d_ptrs has room for 4 x (p1 -
 * p0) pointers.  The slots stay held in kept until the finish.  A kept
 * copy only that is gone: GJ_ERROR_PAGES_GONE, nothing queued, nothing held.
 */
static GjStatus
ShipKeptPages(GjCudaContext *ctx, GjPageCache *cache, const GjPageBatch *pages, int64_t p0,
			  int64_t p1, uint32_t *d_index, char *d_pages, char **d_ptrs, KeptPages *kept,
			  const KeptInput *in, int64_t *nhits, GjError *err)
{
	size_t		page = (size_t) pages->page_size;
	char	   *memory = device_cache_memory[ctx->device];
	int64_t		npages = p1 - p0;
	const char **from = (const char **) malloc(sizeof(char *) * 2 * (size_t) npages);
	char	  **to = (char **) malloc(sizeof(char *) * 2 * (size_t) npages);
	int16_t    *counts = (int16_t *) malloc(sizeof(int16_t) * (size_t) npages);
	uint8_t    *only = (uint8_t *) malloc((size_t) npages);
	int64_t		count = 0;
	int64_t		nfills = 0;
	int64_t		nonly = 0;
	int64_t		ngone = 0;
	GjStatus	status = GJ_OK;

	*nhits = 0;
	kept->use = (uint8_t *) malloc((size_t) npages);
	kept->slot = (int64_t *) malloc(sizeof(int64_t) * (size_t) npages);
	if (from == NULL || to == NULL || counts == NULL || only == NULL || kept->use == NULL ||
		kept->slot == NULL)
	{
		status = gj_error_set(err, GJ_ERROR_HOST_MEMORY, "heap deform: out of memory.");
		goto done;
	}
	nonly = gj_heap_page_kept_counts(pages, p0, npages, in->starts, counts, only);
	kept->cache = cache;
	kept->n = npages;
	gj_page_cache_acquire(cache, pages->relation, pages->page_block + p0, pages->page_lsn + p0,
						  counts, only, npages, kept->use, kept->slot);
	for (int64_t i = 0; i < npages; i++)
	{
		*nhits += kept->use[i] == GJ_PAGE_HIT;
		nfills += kept->use[i] == GJ_PAGE_FILL;
		ngone += kept->use[i] == GJ_PAGE_GONE;
	}
	if (ngone > 0)
	{
		*nhits = 0;
		status = gj_error_set(err, GJ_ERROR_PAGES_GONE, "heap deform: a page kept is gone.");
		goto done;
	}

	/* the pages into d_pages: from the host, and the kept ones from their slots */
	if (*nhits == 0)
		status = ShipPages(ctx, pages, p0, p1, d_index, d_pages, err);
	else
	{
		for (int64_t i = 0; i < npages; i++)
		{
			from[count] = kept->use[i] == GJ_PAGE_HIT ? memory + (size_t) kept->slot[i] * page :
				gj_heap_page_in_place(pages, p0 + i);
			to[count++] = d_pages + (size_t) i * page;
		}
		status = CopyPagesByPointer(ctx, from, to, count, pages->page_size, d_ptrs, err);
		ctx->stats.bytes_to_device += (npages - *nhits) * (int64_t) page;
	}
	/* then the ones to keep into their slots, behind them on the stream */
	if (status == GJ_OK && nfills > 0)
	{
		count = 0;
		for (int64_t i = 0; i < npages; i++)
			if (kept->use[i] == GJ_PAGE_FILL)
			{
				from[count] = d_pages + (size_t) i * page;
				to[count++] = memory + (size_t) kept->slot[i] * page;
			}
		status = CopyPagesByPointer(ctx, from, to, count, pages->page_size,
									d_ptrs + 2 * npages, err);
		if (status == GJ_OK)
			status = KeepItems(ctx, pages, kept, in, nfills, err);
	}
	if (status == GJ_OK && nonly > 0)
		status = KeptTuples(ctx, pages, p0, kept, only, in, err);
done:
	if (status != GJ_OK && kept->cache == NULL)
	{
		free(kept->use);
		free(kept->slot);
		memset(kept, 0, sizeof(*kept));
	}
	else if (status == GJ_ERROR_PAGES_GONE)
	{
		/* nothing queued: let go of what was taken */
		ReleaseKept(kept, false);
	}
	free(from);
	free(to);
	free(counts);
	free(only);
	return status;
}

/*
 * Ship pages p0 .. p1 - 1 of a batch in place to d_pages, one after
 * another: copied a run at a time or read by the device from the region
 * (their indexes first, to d_index), or copied on the host
 */
static GjStatus
ShipPages(GjCudaContext *ctx, const GjPageBatch *pages, int64_t p0, int64_t p1,
		  uint32_t *d_index, char *d_pages, GjError *err)
{
	int64_t		npages = p1 - p0;
	int64_t		runs;

	if (!MapPages(ctx, pages, p0, p1))
		return CopyPagesOnHost(ctx, pages, p0, p1, d_pages, err);
	/* the pages cross the bus either way */
	ctx->stats.bytes_to_device += npages * (int64_t) pages->page_size;
	runs = CountRuns(pages, p0, p1);
	if (runs == 1 || runs <= npages / MIN_RUN_PAGES)
		return CopyPageRuns(ctx, pages, p0, p1, d_pages, err);
	GJ_TRY(gj_cuda_copy_to_device_async(ctx, d_index, pages->page_index + p0,
										sizeof(uint32_t) * (size_t) npages, err));
	heap_gather_kernel<<<npages < ctx->max_grid ? (int) npages : ctx->max_grid,
		GJ_BLOCK_SIZE, 0, ctx->stream>>>(pages->region, d_index, npages,
										 pages->page_size, d_pages);
	GJ_CUDA_TRY(err, cudaGetLastError());
	return GJ_OK;
}

/*
 * Pages p0 .. p1 - 1 of a batch in place to d_pages: with pages kept (and
 * the region mapped), ShipKeptPages; else ShipPages, and a kept copy only
 * among them is gone.  d_ptrs: room for 4 x (p1 - p0) pointers, or NULL
 * when the call keeps no page.
 */
static GjStatus
ShipPagesInPlace(GjCudaContext *ctx, const GjPageBatch *pages, int64_t p0, int64_t p1,
				 uint32_t *d_index, char *d_pages, char **d_ptrs, KeptPages *kept,
				 const KeptInput *in, int64_t *nhits, GjError *err)
{
	GjPageCache *cache = d_ptrs != NULL ? DeviceCache(ctx, pages) : NULL;

	*nhits = 0;
	if (cache != NULL && MapPages(ctx, pages, p0, p1))
		return ShipKeptPages(ctx, cache, pages, p0, p1, d_index, d_pages, d_ptrs, kept, in,
							 nhits, err);
	if (gj_heap_any_kept_only(pages, p0, p1))
		return gj_error_set(err, GJ_ERROR_PAGES_GONE, "heap deform: a page kept is gone.");
	return ShipPages(ctx, pages, p0, p1, d_index, d_pages, err);
}

/*
 * One thread per tuple: tuple i into row i of rows, and with a filter its
 * verdict, and keep[i] = 1 where the row stays; only the rows that stay
 * count in found
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
heap_deform_kernel(const GjDeformPlan *__restrict__ plan,
				   const GjDeformAttr *__restrict__ attrs,
				   const char *__restrict__ pages, uint32_t base,
				   const uint32_t *__restrict__ tuples, int64_t n,
				   const __grid_constant__ GjDeformRows rows,
				   uint8_t *__restrict__ verdict,
				   unsigned long long *__restrict__ keep,
				   DeformFound *__restrict__ found)
{
	for (int64_t i = gj_thread_index(); i < n; i += gj_grid_stride())
	{
		GjDeformFound f;

		gj_heap_deform_row(plan, attrs, pages + (tuples[i] - base), i, &rows, &f);
		if (f.bad_attno > 0)
			atomicMax(&found->bad_attno, f.bad_attno);
		if (verdict != NULL)
		{
			verdict[i] = f.verdict;
			if (f.verdict == GJ_QUAL_FAILS)
				continue;
			keep[i] = 1;
		}
		if (f.null_columns != 0)
			atomicOr(&found->null_columns, f.null_columns);
		if (f.keynull)
			atomicAdd(&found->key_nulls, 1ULL);
		if (f.host_numerics != 0)
			atomicAdd(&found->host_numerics, (unsigned long long) f.host_numerics);
	}
}

/*
 * The rows that stay, moved to their places in order (pos: the exclusive
 * sum of keep), each with the tuple it came from in selected
 */
__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
heap_compact_kernel(const GjDeformPlan *__restrict__ plan, int64_t n,
					const uint8_t *__restrict__ verdict,
					const unsigned long long *__restrict__ pos,
					const __grid_constant__ GjDeformRows from,
					const __grid_constant__ GjDeformRows to,
					uint32_t *__restrict__ selected)
{
	for (int64_t i = gj_thread_index(); i < n; i += gj_grid_stride())
	{
		int64_t		r = (int64_t) pos[i];

		if (verdict[i] == GJ_QUAL_FAILS)
			continue;
		for (int c = 0; c < plan->ncolumns; c++)
		{
			int			width = plan->column_widths[c];

			gj_heap_store(to.values[c], r, width,
						  gj_heap_load(from.values[c] + i * width, width));
			to.nulls[c][r] = from.nulls[c][i];
		}
		if (plan->nkeys > 0)
		{
			to.keys[r] = from.keys[i];
			to.keynulls[r] = from.keynulls[i];
		}
		selected[r] = (uint32_t) i |
			(verdict[i] == GJ_QUAL_UNDECIDED ? GJ_DEFORM_UNDECIDED : 0);
	}
}

/*
 * A deform between its start and its finish (the context's deform_state):
 * where its rows will lie in the output buffer, and what to bring back
 */
typedef struct PendingDeform
{
	bool		active;
	GjDeformOut *out;
	int64_t		n;
	int			ncolumns;
	int			nkeys;
	int16_t		widths[GJ_MAX_COLUMNS];
	GjDeformRows result;		/* the rows to bring back (device) */
	bool		queued;			/* their copies back are queued already */
	size_t		selected_off;	/* with a filter: each row's tuple */
	KeptPages	kept;			/* the slots of pages kept that it holds */
} PendingDeform;

/*
 * Without a filter every tuple is a row: their copies back into out (the
 * keys, the columns and all their NULL flags, which start at zero on both
 * sides) are queued behind the deform, so that they cross the bus while
 * the host reads the next pages, and DeformFinish only waits
 */
static GjStatus
QueueRowsBack(GjCudaContext *ctx, PendingDeform *pending, GjError *err)
{
	GjDeformOut *out = pending->out;
	const GjDeformRows *result = &pending->result;
	size_t		n = (size_t) pending->n;

	if (pending->nkeys > 0)
	{
		GJ_TRY(gj_cuda_copy_from_device_async(ctx, out->keys, result->keys,
											  sizeof(uint64_t) * n, err));
		GJ_TRY(gj_cuda_copy_from_device_async(ctx, out->keynulls, result->keynulls, n, err));
	}
	for (int c = 0; c < pending->ncolumns; c++)
	{
		GJ_TRY(gj_cuda_copy_from_device_async(ctx, out->values[c], result->values[c],
											  (size_t) pending->widths[c] * n, err));
		GJ_TRY(gj_cuda_copy_from_device_async(ctx, out->nulls[c], result->nulls[c], n, err));
	}
	pending->queued = true;
	return GJ_OK;
}

/*
 * Ship plan and tuples first .. first + n - 1 and queue their deform on the
 * device (and the filter, then the closing of the gaps); DeformFinish brings
 * the rows back into out
 */
static GjStatus
DeformStart(GjCudaContext *ctx, const GjPageBatch *pages, const GjDeformPlan *plan,
			const GjDeformAttr *attrs, int64_t first, int64_t n, GjDeformOut *out,
			PendingDeform *pending, GjError *err)
{
	size_t		attrs_bytes = sizeof(GjDeformAttr) * (size_t) plan->natts;
	size_t		attrs_off = Align8(sizeof(GjDeformPlan));
	size_t		tuples_off = Align8(attrs_off + attrs_bytes);
	size_t		index_off = Align8(tuples_off + sizeof(uint32_t) * (size_t) n);
	size_t		pages_off;
	size_t		ptrs_off = 0;
	size_t		kept_off = 0;
	int64_t    *found = NULL;	/* the pages' starts, where the batch has none */
	const int64_t *starts = NULL;
	KeptInput	kin;
	int64_t		nhits = 0;
	size_t		ship_off = 0;	/* the pages the call's tuples lie in */
	size_t		ship_bytes = (size_t) pages->bytes;
	size_t		input_bytes;
	size_t		rows_off = Align8(sizeof(DeformFound));
	size_t		verdict_off = 0;
	size_t		keep_off = 0;
	size_t		selected_off = 0;
	size_t		compact_off = 0;
	size_t		output_bytes;
	char	   *input;
	char	   *output;
	GjDeformRows rows;
	GjDeformRows compact;

	if (pages->page_size > 0)
	{
		size_t		page = (size_t) pages->page_size;
		size_t		end = ((size_t) pages->tuples[first + n - 1] / page + 1) * page;

		ship_off = (size_t) pages->tuples[first] / page * page;
		ship_bytes = (end < (size_t) pages->bytes ? end : (size_t) pages->bytes) - ship_off;
	}
	/* in place: the pages' indexes in their region, then the pages */
	pages_off = index_off;
	if (pages->pages == NULL)
		pages_off = Align8(index_off + sizeof(uint32_t) * ship_bytes / (size_t) pages->page_size);
	pages_off = (pages_off + 15) & ~(size_t) 15;	/* the gather writes 16 bytes */
	input_bytes = pages_off + ship_bytes;
	/*
	 * pages kept between calls: the pointers their copies take, and what
	 * their tuples' lists take (KeptInput)
	 */
	memset(&kin, 0, sizeof(kin));
	if (pages->pages == NULL && pages->cache_bytes > 0 && pages->page_lsn != NULL)
	{
		int64_t		p0 = (int64_t) (ship_off / (size_t) pages->page_size);
		int64_t		npages = (int64_t) (ship_bytes / (size_t) pages->page_size);

		if (pages->page_starts == NULL &&
			(found = (int64_t *) malloc(sizeof(int64_t) * (size_t) (npages + 1))) == NULL)
			return gj_error_set(err, GJ_ERROR_HOST_MEMORY, "heap deform: out of memory.");
		starts = gj_heap_page_starts(pages, p0, p0 + npages, found);
		ptrs_off = Align8(input_bytes);
		kept_off = Align8(ptrs_off + 4 * sizeof(char *) * (size_t) npages);
		input_bytes = kept_off + 2 * sizeof(int64_t) * (size_t) npages +
			Align8(sizeof(int32_t) * (size_t) (npages + 1)) +
			sizeof(uint16_t) * (size_t) (starts[npages] - starts[0]);
	}

	/* the output: found, the rows, and with a filter what compacts them */
	output_bytes = LayoutRows(plan, NULL, rows_off, n, NULL);
	if (plan->has_filter)
	{
		verdict_off = output_bytes;
		keep_off = Align8(verdict_off + (size_t) n);
		selected_off = keep_off + sizeof(unsigned long long) * (size_t) (n + 1);
		compact_off = Align8(selected_off + sizeof(uint32_t) * (size_t) n);
		output_bytes = LayoutRows(plan, NULL, compact_off, n, NULL);
	}

	if (gj_cuda_buffer_reserve(ctx, GJ_BUFFER_SCAN_INPUT, input_bytes, err) != GJ_OK ||
		gj_cuda_buffer_reserve(ctx, GJ_BUFFER_SCAN_OUTPUT, output_bytes, err) != GJ_OK)
	{
		free(found);
		return err->status;
	}
	input = GJ_BUFFER(ctx, GJ_BUFFER_SCAN_INPUT, char);
	if (starts != NULL)
	{
		int64_t		npages = (int64_t) (ship_bytes / (size_t) pages->page_size);

		kin.tuples = (uint32_t *) (input + tuples_off);
		kin.n = n;
		kin.starts = starts;
		kin.page_slots = (int64_t *) (input + kept_off);
		kin.fill_slots = kin.page_slots + npages;
		kin.fill_starts = (int32_t *) (kin.fill_slots + npages);
		kin.fill_offs = (uint16_t *) (input + kept_off + 2 * sizeof(int64_t) * (size_t) npages +
									  Align8(sizeof(int32_t) * (size_t) (npages + 1)));
	}
	output = GJ_BUFFER(ctx, GJ_BUFFER_SCAN_OUTPUT, char);
	LayoutRows(plan, output, rows_off, n, &rows);
	if (plan->has_filter)
		LayoutRows(plan, output, compact_off, n, &compact);

	/* queued: the copy of found below waits for them and the kernels */
	if (gj_cuda_copy_to_device_async(ctx, input, plan, sizeof(GjDeformPlan), err) != GJ_OK ||
		gj_cuda_copy_to_device_async(ctx, input + attrs_off, attrs, attrs_bytes, err) != GJ_OK ||
		gj_cuda_copy_to_device_async(ctx, input + tuples_off, pages->tuples + first,
									 sizeof(uint32_t) * (size_t) n, err) != GJ_OK)
	{
		free(found);
		return err->status;
	}
	if (pages->pages != NULL)
		GJ_TRY(gj_cuda_copy_to_device_async(ctx, input + pages_off, pages->pages + ship_off,
											ship_bytes, err));
	else
	{
		int64_t		p0 = (int64_t) (ship_off / (size_t) pages->page_size);
		GjStatus	status = ShipPagesInPlace(ctx, pages, p0,
											  p0 + (int64_t) (ship_bytes / (size_t) pages->page_size),
											  (uint32_t *) (input + index_off), input + pages_off,
											  ptrs_off > 0 ? (char **) (input + ptrs_off) : NULL,
											  &pending->kept, &kin, &nhits, err);

		free(found);
		if (status != GJ_OK)
			return status;
	}
	/* the pages, the tuple offsets and, in place, the pages' indexes */
	out->bytes_shipped = (int64_t) (ship_bytes + sizeof(uint32_t) * (size_t) n);
	if (pages->pages == NULL)
		out->bytes_shipped += (int64_t) (sizeof(uint32_t) * ship_bytes / (size_t) pages->page_size);
	out->bytes_shipped -= nhits * (int64_t) pages->page_size;
	out->pages_cached = nhits > 0 ?
		gj_heap_pages_kept(pages, first, pending->kept.use, pending->kept.n) : 0;
	/* found and the NULL flags start at zero, and so does keep */
	GJ_CUDA_TRY(err, cudaMemsetAsync(output, 0, rows_off + (size_t) n * (plan->ncolumns + 1),
									 ctx->stream));
	if (plan->has_filter)
		GJ_CUDA_TRY(err, cudaMemsetAsync(output + keep_off, 0,
										 sizeof(unsigned long long) * (size_t) (n + 1),
										 ctx->stream));

	heap_deform_kernel<<<gj_cuda_grid_size(ctx, n), GJ_BLOCK_SIZE, 0, ctx->stream>>>
		((const GjDeformPlan *) input, (const GjDeformAttr *) (input + attrs_off),
		 input + pages_off, (uint32_t) ship_off, (const uint32_t *) (input + tuples_off), n, rows,
		 plan->has_filter ? (uint8_t *) (output + verdict_off) : NULL,
		 (unsigned long long *) (output + keep_off), (DeformFound *) output);
	GJ_CUDA_TRY(err, cudaGetLastError());

	pending->out = out;
	pending->queued = false;
	pending->n = n;
	pending->ncolumns = plan->ncolumns;
	pending->nkeys = plan->nkeys;
	for (int c = 0; c < plan->ncolumns; c++)
		pending->widths[c] = plan->column_widths[c];
	pending->result = rows;
	pending->selected_off = selected_off;
	if (plan->has_filter)
	{
		unsigned long long *keep = (unsigned long long *) (output + keep_off);

		/* keep[] becomes each row's place; keep[n], the rows that stay, goes
		 * into found, so that the finish learns it with the rest of found */
		GJ_TRY(gj_cuda_count_offsets(ctx, (uint64_t *) keep, n, NULL, err));
		GJ_CUDA_TRY(err, cudaMemcpyAsync(&((DeformFound *) output)->rows, keep + n,
										 sizeof(unsigned long long),
										 cudaMemcpyDeviceToDevice, ctx->stream));
		heap_compact_kernel<<<gj_cuda_grid_size(ctx, n), GJ_BLOCK_SIZE, 0, ctx->stream>>>
			((const GjDeformPlan *) input, n, (const uint8_t *) (output + verdict_off),
			 keep, rows, compact, (uint32_t *) (output + selected_off));
		GJ_CUDA_TRY(err, cudaGetLastError());
		pending->result = compact;
	}
	else
		GJ_TRY(QueueRowsBack(ctx, pending, err));
	pending->active = true;
	return GJ_OK;
}

/*
 * Wait for the deform DeformStart queued, and bring its rows back (or, if
 * their copies were queued, wait for those)
 */
static GjStatus
DeformFinish(GjCudaContext *ctx, PendingDeform *pending, GjError *err)
{
	char	   *output = GJ_BUFFER(ctx, GJ_BUFFER_SCAN_OUTPUT, char);
	GjDeformOut *out = pending->out;
	const GjDeformRows *result = &pending->result;
	DeformFound found;
	size_t		nrows;
	double		start;
	cudaError_t rc;
	GjStatus	status;

	pending->active = false;
	/* behind everything the start queued: when it returns, all is done */
	status = gj_cuda_copy_from_device(ctx, &found, output, sizeof(found), err);
	if (pending->kept.cache != NULL)
		ReleaseKept(&pending->kept, status == GJ_OK);
	if (status != GJ_OK)
		return status;
	if (found.bad_attno > 0)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"heap deform: a TOAST pointer of an unknown tag in attribute %d.",
							found.bad_attno);
	nrows = pending->queued ? (size_t) pending->n : (size_t) found.rows;
	if (!pending->queued)
	{
		/*
		 * The rows the filter kept, their tuples, and of the NULL flags only
		 * those found set: queued together, waited for once
		 */
		start = gj_clock_ms();
		status = gj_cuda_copy_from_device_async(ctx, out->selected, output + pending->selected_off,
												sizeof(uint32_t) * nrows, err);
		if (status == GJ_OK && pending->nkeys > 0)
			status = gj_cuda_copy_from_device_async(ctx, out->keys, result->keys,
													sizeof(uint64_t) * nrows, err);
		if (status == GJ_OK && pending->nkeys > 0 && found.key_nulls > 0)
			status = gj_cuda_copy_from_device_async(ctx, out->keynulls, result->keynulls,
													nrows, err);
		for (int c = 0; status == GJ_OK && c < pending->ncolumns; c++)
		{
			status = gj_cuda_copy_from_device_async(ctx, out->values[c], result->values[c],
													(size_t) pending->widths[c] * nrows, err);
			if (status == GJ_OK && (found.null_columns & (1U << c)))
				status = gj_cuda_copy_from_device_async(ctx, out->nulls[c], result->nulls[c],
														nrows, err);
		}
		/* even after a failed copy: none queued may still write into out */
		rc = cudaStreamSynchronize(ctx->stream);
		if (rc != cudaSuccess && status == GJ_OK)
			status = gj_cuda_fail(err, rc, __FILE__, __LINE__);
		ctx->stats.transfer_ms += gj_clock_ms() - start;
		if (status != GJ_OK)
			return status;
	}
	out->null_columns = found.null_columns;
	out->key_nulls = (int64_t) found.key_nulls;
	out->host_numerics = (int64_t) found.host_numerics;
	out->nrows = (int64_t) nrows;
	return GJ_OK;
}

/* The context's pending deform, allocated at the first use */
static PendingDeform *
Pending(GjCudaContext *ctx, GjError *err)
{
	if (ctx->deform_state == NULL)
		ctx->deform_state = calloc(1, sizeof(PendingDeform));
	if (ctx->deform_state == NULL)
		gj_error_set(err, GJ_ERROR_HOST_MEMORY, "heap deform: out of memory.");
	return (PendingDeform *) ctx->deform_state;
}

/*
 * A deform started and not finished is dropped (its start failed, or the
 * context goes): once the stream has done what it queued, the slots it
 * held are let go, the ones it was filling freed
 */
void
gj_cuda_heap_deform_forget(GjCudaContext *ctx)
{
	PendingDeform *pending = (PendingDeform *) ctx->deform_state;

	if (pending == NULL || pending->kept.cache == NULL)
		return;
	(void) cudaStreamSynchronize(ctx->stream);
	(void) cudaGetLastError();
	ReleaseKept(&pending->kept, false);
}

GjStatus
gj_cuda_heap_deform_start(GjContext *gctx, const GjPageBatch *pages, const GjDeformSpec *spec,
						  int64_t first, int64_t n, GjDeformOut *out, GjError *err)
{
	GjCudaContext *ctx = gj_cuda_context_get(gctx, err);
	PendingDeform *pending;
	GjDeformPlan plan;
	GjDeformAttr *attrs;
	GjStatus	status;

	if (ctx == NULL || (pending = Pending(ctx, err)) == NULL)
		return err->status;
	if (pending->active)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"heap deform: started before the last one finished.");
	GJ_TRY(gj_heap_deform_prepare(pages, spec, first, n, &plan, &attrs, err));
	out->null_columns = 0;
	out->key_nulls = 0;
	out->nrows = 0;
	out->bytes_shipped = 0;
	out->host_numerics = 0;
	out->pages_cached = 0;
	/* the plan and attributes are copied before this returns (pageable) */
	status = n > 0 ? DeformStart(ctx, pages, &plan, attrs, first, n, out, pending, err) : GJ_OK;
	free(attrs);
	if (status != GJ_OK)
		gj_cuda_heap_deform_forget(ctx);
	return status;
}

GjStatus
gj_cuda_heap_deform_finish(GjContext *gctx, GjError *err)
{
	GjCudaContext *ctx = gj_cuda_context_get(gctx, err);
	PendingDeform *pending;

	if (ctx == NULL || (pending = Pending(ctx, err)) == NULL)
		return err->status;
	return pending->active ? DeformFinish(ctx, pending, err) : GJ_OK;
}

/* The deform in one call: its start and its finish */
GjStatus
gj_cuda_heap_deform(GjContext *gctx, const GjPageBatch *pages, const GjDeformSpec *spec,
					int64_t first, int64_t n, GjDeformOut *out, GjError *err)
{
	GJ_TRY(gj_cuda_heap_deform_start(gctx, pages, spec, first, n, out, err));
	return gj_cuda_heap_deform_finish(gctx, err);
}
