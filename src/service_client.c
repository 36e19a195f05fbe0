/*-------------------------------------------------------------------------
 *
 * service_client.c
 *	  The kernels of a backend that uses the gpujoin service: each call a
 *	  request to the service (service.c), the arrays by reference
 *
 * GpuJoinServiceKernels() gives a kernel table (GjKernels) whose calls the
 * service runs on the CPU twin or the GPU.  Its stage_alloc carves blocks
 * out of DSM segments (the arenas, below), so that the batches a join builds
 * in staging memory (GpuJoinSideAlloc, pinned.c) reach the service without
 * a copy; an array
 * that lies elsewhere is copied into a scratch segment for the request.
 * What comes back (a round's matches, the groups) is copied by the service
 * into a result segment and read from there, valid until the next call,
 * as the kernels' contract says.  The heap pages' deform runs in the
 * service too, on pages in place in shared buffers (mapped at the same
 * address in every process of the server) or staged in staging blocks.
 *
 * A request waits on the backend's latch, waking every second to see that
 * the service still runs the generation the context was made in: if it
 * exited, the query fails (SQLSTATE 58000) instead of hanging.  A cancel
 * while the service works is honoured at once; the slot stays busy until
 * the service answers, and the next request waits for that.  Cleanup
 * calls (destroy, stats, freeing a segment) never raise an ERROR.
 *
 * IDENTIFICATION
 *	  src/service_client.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/mman.h>
#include <sys/statvfs.h>

#include "access/xact.h"
#include "gpujoin.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "service.h"
#include "storage/bufmgr.h"
#include "storage/dsm_impl.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

/* A context in the service, as the client knows it */
/* A DSM segment of this backend's: a staging block, scratch or result */
typedef struct Segment
{
	dsm_segment *seg;
	char	   *base;
	Size		size;
} Segment;

/*
 * A context in the service, as the client knows it; what comes back from
 * it lies in its own result segment, valid until its next call
 */
typedef struct ClientContext
{
	int32		id;
	uint32		generation;
	GjJoinSpec	spec;
	int32		nkeys;			/* of the aggregation begun */
	int32		naggs;
	Segment		result;
} ClientContext;

/*
 * STAGING ARENAS.  The staging blocks a join asks for (the heap reader's
 * stages, the side arrays of its batches: GpuJoinPinnedAlloc) are carved
 * out of a few large DSM segments of the backend's, the arenas, so that
 * the service reads and writes them in place, mapped (and page-locked)
 * once per arena.  PostgreSQL's dsm.c has slots for 64 segments and 5 a
 * backend, all backends' together (a full table fails a DSA's next
 * segment with an ERROR, ours with NULL); the request, scratch and result
 * segments take 3: so at most MAX_ARENAS, and one more only for a block
 * no arena has room for while none is empty: a side's arrays that grow
 * (by doubling) while the heap reader's stages hold one arena and the
 * arrays the other; with only two, the arrays of a parallel join's larger
 * shares of the inner side (12 million rows a process at 10^8, H200 host)
 * ended up in ordinary memory, deformed through scratch and outside what
 * the service can build from (exec_parallel.c).  The leader of a parallel
 * plan with GPU nodes above its Gather holds their arrays and its share's
 * at once: with two arenas (and the one more) the leader of TPC-H Q9 at
 * SF 1 copied 274 MB through scratch (CPU twin, 2026-11-30), with three
 * 68 MB, with four 0.8 MB, and at SF 10 its share of the parallel inner
 * side lay outside its arenas, which the builder then read again (4.5 s
 * more in one process, H200 host).  (With a segment per block, the heap
 * reader's two stages took both, and every side array of a large join
 * went through scratch, copied in and out for each request: a 10M x 10M
 * GpuPreAgg took 2.7-3.9 times as long through the service as in the
 * session.)
 *
 * A block is first fit among an arena's free ranges (sorted by offset,
 * merged with their neighbours when a block comes back), with a header
 * that holds its size.  When no arena has room, a new one is made, of at
 * least ARENA_MIN_BYTES, twice the largest one so far, and four times the
 * block (a power of two: a batch's arrays come in sets); or, where the
 * caller said what set of blocks is coming (pinned.c: GpuJoinPinnedExpect,
 * for the arrays of a side read as heap pages, whose size is known before
 * they are made), of the rest of that set, rounded up to an eighth of its
 * power of two.  Past MAX_ARENAS an empty arena is replaced by a
 * larger one, else the block is ordinary memory (stage_alloc's NULL) and
 * its arrays are copied through scratch.  pinned.c keeps blocks between
 * joins; an arena that ends up empty is kept too, unless the arenas
 * together pass gpujoin.pinned_cache.  A new arena is made only when the
 * file system behind POSIX shared memory has room for it, as dsm_create
 * raises an ERROR where it has none.
 *
 * Sized by their set, the arrays of the shares of a parallel join's inner
 * side take about 1.5 times the whole side's in all (exec_heap.c: the room
 * a share makes), at any number of processes, which
 * gpujoin.service_kept_staging keeps for the next query's
 * processes; sized at four times their largest array, to a power of two,
 * they took 0.6 to 2.4 GB a process with 2 or 4 workers at 10^8 rows, more
 * than the service keeps by default, and each query page-locked new
 * segments (2.2 s on the H200 host).
 */
#define MAX_ARENAS			4
#define ARENA_MIN_BYTES		((Size) 32 * 1024 * 1024)
#define ARENA_ALIGN			256 /* a block's header, and its alignment */

typedef struct ArenaRange
{
	Size		offset;
	Size		size;
} ArenaRange;

typedef struct Arena
{
	Segment		seg;
	Size		used;			/* bytes in blocks given out, headers too */
	int			nfree;
	int			maxfree;
	ArenaRange *free;			/* sorted by offset, none adjacent */
} Arena;

static Arena arenas[MAX_ARENAS + 1];
static int	narenas = 0;

static int	my_slot = -1;
static dsm_segment *request_seg = NULL;
static GjServiceRequest *req = NULL;
static Segment scratch = {0};
static Size scratch_used = 0;
static uint64 scratch_copied = 0;	/* bytes copied into scratch, ever */
static int	leased_kept = 0;	/* arenas taken from the service's kept segments, ever */
static bool composing = false;	/* a request is being written into req */

/*
 * Result segments of destroyed contexts, kept for the next ones: making a
 * segment (and the service mapping it) costs more than a small join's
 * whole round trip
 */
#define MAX_SPARE_RESULTS	2
static Segment spare_results[MAX_SPARE_RESULTS];
static int	nspare_results = 0;

/* Wake the service (its latch read under the mutex, set outside it) */
static void
WakeService(void)
{
	Latch	   *latch;

	SpinLockAcquire(&gj_service->mutex);
	latch = gj_service->latch;
	SpinLockRelease(&gj_service->mutex);
	if (latch != NULL)
		SetLatch(latch);
}

/* Is the service still the generation gen (0: any), taking requests? */
static bool
ServiceAlive(uint32 gen)
{
	bool		alive;

	SpinLockAcquire(&gj_service->mutex);
	alive = gj_service->state == GJ_SERVICE_READY &&
		(gen == 0 || gj_service->generation == gen);
	SpinLockRelease(&gj_service->mutex);
	return alive;
}

/* Is the service there to take requests? */
bool
GpuJoinServiceReady(void)
{
	return gj_service != NULL && ServiceAlive(0);
}

/*
 * Wait, at most timeout_ms, for the service to take requests: the postmaster
 * starts it again a second after it exits (and the new one opens its devices
 * before it is ready).  Cancel and termination are honoured while waiting.
 */
bool
GpuJoinServiceWaitReady(int timeout_ms)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);

	while (!GpuJoinServiceReady())
	{
		if (gj_service == NULL || GetCurrentTimestamp() >= deadline)
			return false;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return true;
}

bool
GpuJoinServiceInUse(void)
{
	return gpujoin_service && gj_service != NULL;
}

/* on_shmem_exit: the slot is the service's to clean up */
static void
LeaveSlot(int code, Datum arg)
{
	GjServiceSlot *slot;

	if (my_slot < 0)
		return;
	slot = &gj_service->slots[my_slot];
	pg_atomic_write_u32(&slot->state, GJ_SLOT_CLOSING);
	WakeService();
	my_slot = -1;
}

/*
 * Take this backend's slot, and make its request segment, once; false
 * (quietly) when the slot is not free within a few seconds (the service
 * has not yet cleaned up after the PGPROC's last owner)
 */
static bool
TakeSlot(void)
{
	GjServiceSlot *slot;
	int			tries = 0;

	if (my_slot >= 0)
		return true;
	slot = &gj_service->slots[GpuJoinProcNumber(MyProc)];
	while (pg_atomic_read_u32(&slot->state) != GJ_SLOT_FREE)
	{
		if (++tries > 50)
			return false;
		pg_usleep(100 * 1000L);
	}
	if (request_seg == NULL)
	{
		request_seg = dsm_create(sizeof(GjServiceRequest), 0);
		dsm_pin_mapping(request_seg);
		req = dsm_segment_address(request_seg);
	}
	slot->pid = MyProcPid;
	slot->client_latch = MyLatch;
	slot->request = dsm_segment_handle(request_seg);
	pg_write_barrier();
	pg_atomic_write_u32(&slot->state, GJ_SLOT_IDLE);
	my_slot = GpuJoinProcNumber(MyProc);
	on_shmem_exit(LeaveSlot, (Datum) 0);
	return true;
}

static void
ServiceGone(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_SYSTEM_ERROR),
			 errmsg("gpujoin: the gpujoin service exited while it ran this join"),
			 errhint("The service restarts by itself; run the query again.")));
}

/*
 * Wait until the slot's last request is answered; quiet: no ERROR, false
 * when the service is gone or does not answer within timeout_ms
 */
static bool
WaitAnswer(bool quiet, uint32 gen, long timeout_ms)
{
	GjServiceSlot *slot = &gj_service->slots[my_slot];
	long		waited = 0;

	for (;;)
	{
		uint32		state = pg_atomic_read_u32(&slot->state);

		if (state == GJ_SLOT_DONE || state == GJ_SLOT_IDLE)
		{
			pg_read_barrier();
			return true;
		}
		if (!ServiceAlive(gen))
		{
			/* a new service answers the old request with an error, or none will */
			if (quiet)
				return false;
			ServiceGone();
		}
		if (timeout_ms > 0 && waited >= timeout_ms)
			return false;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		waited += 1000;
		if (!quiet)
			CHECK_FOR_INTERRUPTS();
	}
}

/* Send the request being written in req (op set); Receive waits for it */
static void
Send(void)
{
	composing = false;
	pg_write_barrier();
	pg_atomic_write_u32(&gj_service->slots[my_slot].state, GJ_SLOT_REQUEST);
	WakeService();
}

/*
 * Wait for the answer of the request sent; quiet: false instead of an
 * ERROR.  gen: the context's generation (0: any).
 */
static bool
Receive(bool quiet, uint32 gen)
{
	if (!WaitAnswer(quiet, gen, quiet ? 10000 : 0))
		return false;
	pg_atomic_write_u32(&gj_service->slots[my_slot].state, GJ_SLOT_IDLE);
	return true;
}

/* Send the request being written in req and wait for the answer */
static bool
Call(bool quiet, uint32 gen)
{
	Send();
	return Receive(quiet, gen);
}

static bool DeformPending(void);
static void TakeDeform(bool keep);

/*
 * Start a request: the slot taken, the previous request answered, req
 * cleared; false when quiet and that cannot be
 */
static bool
Begin(GjServiceOp op, bool quiet)
{
	if (!GpuJoinServiceReady() || !TakeSlot())
	{
		if (quiet)
			return false;
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("gpujoin: the gpujoin service is not running")));
	}
	/*
	 * A deform still out (heap_deform_start): its answer now, its rows kept
	 * for heap_deform_finish; dropped outside a transaction (an abort's
	 * cleanup), whose output arrays may be gone
	 */
	if (DeformPending())
		TakeDeform(IsTransactionState());
	/* a request abandoned by a cancel: its answer first */
	if (!Receive(quiet, 0))
		return false;
	composing = true;
	memset(req, 0, offsetof(GjServiceRequest, spec));
	req->op = op;
	req->result.handle = DSM_HANDLE_INVALID;
	req->forget = DSM_HANDLE_INVALID;
	scratch_used = 0;
	return true;
}

/*
 * Linux 5.14's madvise that faults a range in, writable, in one call; older
 * kernels refuse it (EINVAL), which leaves the pages to their first use
 */
#if defined(__linux__) && !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23
#endif

/*
 * A segment of this backend's, kept for the session; populate: faulted in
 * here (a staging arena of the GPU service, which page-locks it before its
 * first use: locking faults in every page never touched, and the driver
 * does that slowly while the device works for others: 512 MB in 2.8 s on
 * the H200 host, where faulting in 1 GB here takes 0.25 s)
 */
static bool
NewSegment(Size size, bool populate, Segment *out)
{
	dsm_segment *seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);

	if (seg == NULL)
		return false;
	dsm_pin_mapping(seg);
	out->seg = seg;
	out->base = dsm_segment_address(seg);
	out->size = size;
#ifdef MADV_POPULATE_WRITE
	if (populate)
		(void) madvise(out->base, size, MADV_POPULATE_WRITE);
#endif
	return true;
}

/* Free a segment; the service is told to unmap it (quietly) */
static void
FreeSegment(Segment *s)
{
	if (s->seg == NULL)
		return;
	/*
	 * Telling the service is a request of its own: never while another is
	 * being written (the service then keeps its mapping until this backend
	 * exits)
	 */
	if (!composing && my_slot >= 0 && GpuJoinServiceReady() && Begin(GJ_OP_FORGET, true))
	{
		req->forget = dsm_segment_handle(s->seg);
		(void) Call(true, 0);
	}
	dsm_detach(s->seg);
	memset(s, 0, sizeof(*s));
}

/*
 * Is there room for a segment of size bytes?  Only the file system behind
 * POSIX shared memory (/dev/shm) is asked; other kinds make their own room
 * or fail with NULL.
 */
bool
GpuJoinShmHasRoom(Size size)
{
	struct statvfs fs;

	if (dynamic_shared_memory_type != DSM_IMPL_POSIX)
		return true;
	if (statvfs("/dev/shm", &fs) != 0)
		return true;
	/*
	 * and a margin for the rest of the server (parallel queries' segments):
	 * a quarter of the file system, or of the arena if that is more (a
	 * container's /dev/shm can be as small as 64 MB)
	 */
	return (double) fs.f_bavail * fs.f_frsize >=
		(double) size + Max((double) size / 4, (double) fs.f_blocks * fs.f_frsize / 4);
}

/*
 * A segment of size bytes or up to four times more that the service kept
 * from a client done with it (service.c: KEPT SEGMENTS), taken: it is
 * mapped and page-locked there already.  FreeSegment gives it back.
 */
static bool
LeaseKept(Size size, Segment *out)
{
	int			at = -1;
	dsm_handle	handle = DSM_HANDLE_INVALID;
	dsm_segment *seg;

	if (gj_service == NULL)
		return false;
	SpinLockAcquire(&gj_service->mutex);
	for (int i = 0; i < GJ_SERVICE_KEPT_SEGMENTS && gj_service->state == GJ_SERVICE_READY; i++)
	{
		GjKeptSegment *k = &gj_service->kept[i];

		if (k->handle != DSM_HANDLE_INVALID && k->lessee == 0 &&
			k->size >= size && k->size / 4 <= size &&
			(at < 0 || k->size < gj_service->kept[at].size))
			at = i;
	}
	if (at >= 0)
	{
		gj_service->kept[at].lessee = MyProcPid;
		handle = gj_service->kept[at].handle;
		gj_service->kept_taken++;
	}
	SpinLockRelease(&gj_service->mutex);
	if (at < 0)
		return false;

	seg = dsm_attach(handle);
	if (seg == NULL)
	{
		/* gone with the service that kept it */
		SpinLockAcquire(&gj_service->mutex);
		if (gj_service->kept[at].handle == handle && gj_service->kept[at].lessee == MyProcPid)
			gj_service->kept[at].lessee = 0;
		SpinLockRelease(&gj_service->mutex);
		return false;
	}
	dsm_pin_mapping(seg);
	out->seg = seg;
	out->base = dsm_segment_address(seg);
	out->size = dsm_segment_map_length(seg);
	leased_kept++;
	return true;
}

/* Make arena a, of size bytes or more; false when there is no segment for it */
static bool
NewArena(Arena *a, Size size, bool populate)
{
	memset(a, 0, sizeof(*a));
	if (!LeaseKept(size, &a->seg) &&
		(!GpuJoinShmHasRoom(size) || !NewSegment(size, populate, &a->seg)))
		return false;
	a->maxfree = 16;
	a->free = MemoryContextAlloc(TopMemoryContext, a->maxfree * sizeof(ArenaRange));
	a->free[0].offset = 0;
	a->free[0].size = a->seg.size;
	a->nfree = 1;
	return true;
}

static void
FreeArena(Arena *a)
{
	FreeSegment(&a->seg);
	if (a->free)
		pfree(a->free);
	memset(a, 0, sizeof(*a));
}

/* need bytes (a multiple of ARENA_ALIGN) from arena a, first fit; or NULL */
static char *
ArenaTake(Arena *a, Size need)
{
	for (int i = 0; i < a->nfree; i++)
	{
		ArenaRange *r = &a->free[i];
		char	   *block;

		if (r->size < need)
			continue;
		block = a->seg.base + r->offset;
		r->offset += need;
		r->size -= need;
		if (r->size == 0)
		{
			memmove(r, r + 1, (a->nfree - i - 1) * sizeof(ArenaRange));
			a->nfree--;
		}
		a->used += need;
		*(Size *) block = need;
		return block + ARENA_ALIGN;
	}
	return NULL;
}

/* Give the block at ptr (ArenaTake's) back to arena a */
static void
ArenaGive(Arena *a, char *ptr)
{
	char	   *block = ptr - ARENA_ALIGN;
	Size		offset = block - a->seg.base;
	Size		size = *(Size *) block;
	int			i = 0;

	a->used -= size;
	while (i < a->nfree && a->free[i].offset < offset)
		i++;
	/* merge with the range before, the range after, or both */
	if (i > 0 && a->free[i - 1].offset + a->free[i - 1].size == offset)
	{
		a->free[i - 1].size += size;
		if (i < a->nfree && offset + size == a->free[i].offset)
		{
			a->free[i - 1].size += a->free[i].size;
			memmove(&a->free[i], &a->free[i + 1], (a->nfree - i - 1) * sizeof(ArenaRange));
			a->nfree--;
		}
		return;
	}
	if (i < a->nfree && offset + size == a->free[i].offset)
	{
		a->free[i].offset = offset;
		a->free[i].size += size;
		return;
	}
	if (a->nfree == a->maxfree)
	{
		a->maxfree *= 2;
		a->free = repalloc(a->free, a->maxfree * sizeof(ArenaRange));
	}
	memmove(&a->free[i + 1], &a->free[i], (a->nfree - i) * sizeof(ArenaRange));
	a->free[i].offset = offset;
	a->free[i].size = size;
	a->nfree++;
}

/*
 * A staging block the service reads in place, or NULL; populate: new
 * arenas faulted in (NewSegment)
 */
static void *
StageAllocIn(size_t bytes, bool populate)
{
	Size		need = TYPEALIGN(ARENA_ALIGN, Max(bytes, 1)) + ARENA_ALIGN;
	Size		size = ARENA_MIN_BYTES;
	int			at = -1;
	char	   *ptr;
	int			nblocks;
	Size		expect = GpuJoinPinnedExpected(&nblocks);

	if (!GpuJoinServiceReady())
		return NULL;
	for (int i = 0; i < narenas; i++)
		if ((ptr = ArenaTake(&arenas[i], need)) != NULL)
			return ptr;

	/* a new arena, or a larger one in place of an empty one */
	for (int i = 0; i < narenas; i++)
	{
		size = Max(size, 2 * arenas[i].seg.size);
		if (arenas[i].used == 0)
			at = i;
	}
	/* (each block with its header and alignment) */
	expect += (Size) nblocks * 2 * ARENA_ALIGN;
	if (expect >= need)
	{
		/* the rest of the set the caller expects */
		size = ARENA_MIN_BYTES;
		while (size < expect)
			size *= 2;
		size = Max(ARENA_MIN_BYTES, TYPEALIGN(size / 8, expect));
	}
	else
	{
		/* room for a few more like it: a batch's arrays come in sets */
		while (size < 4 * need)
			size *= 2;
	}
	if (narenas < MAX_ARENAS || (at < 0 && narenas == MAX_ARENAS))
		at = narenas;
	else if (at < 0)
		return NULL;
	else
	{
		FreeArena(&arenas[at]);
		arenas[at] = arenas[--narenas];
		at = narenas;
	}
	/* where shared memory is short, a smaller one, down to the block's size */
	while (!NewArena(&arenas[at], size, populate))
	{
		if (size / 2 < need)
			return NULL;
		size /= 2;
	}
	narenas++;
	return ArenaTake(&arenas[at], need);
}

/* stage_alloc of the CPU twin's table */
static void *
StageAlloc(size_t bytes)
{
	return StageAllocIn(bytes, false);
}

#ifdef GPUJOIN_WITH_CUDA
/* stage_alloc of the GPU's table: its new arenas page-locked soon */
static void *
StageAllocLocked(size_t bytes)
{
	return StageAllocIn(bytes, true);
}
#endif

/* stage_free: the block back to its arena, and empty arenas past the cache */
static void
StageFree(void *ptr)
{
	Size		total = 0;

	for (int i = 0; i < narenas; i++)
	{
		Arena	   *a = &arenas[i];

		if ((char *) ptr > a->seg.base && (char *) ptr < a->seg.base + a->seg.size)
			ArenaGive(a, ptr);
		total += a->seg.size;
	}
	for (int i = narenas - 1; i >= 0 && total > (Size) gpujoin_pinned_cache * 1024; i--)
		if (arenas[i].used == 0)
		{
			total -= arenas[i].seg.size;
			FreeArena(&arenas[i]);
			arenas[i] = arenas[--narenas];
		}
}

/* Do bytes at ptr lie in segment s?  Then ref names them there. */
static bool
InSegment(const Segment *s, const void *ptr, uint64 bytes, GjServiceRef *ref)
{
	if (s->seg == NULL || (const char *) ptr < s->base ||
		(const char *) ptr + bytes > s->base + s->size)
		return false;
	ref->handle = dsm_segment_handle(s->seg);
	ref->offset = (const char *) ptr - s->base;
	ref->bytes = bytes;
	return true;
}

/* Where bytes at ptr lie among this backend's staging arenas */
static bool
InArenas(const void *ptr, uint64 bytes, GjServiceRef *ref)
{
	for (int i = 0; i < narenas; i++)
		if (InSegment(&arenas[i].seg, ptr, bytes, ref))
			return true;
	return false;
}

/* Where bytes at ptr lie among this backend's staging blocks and scratch */
static bool
FindRef(const void *ptr, uint64 bytes, GjServiceRef *ref)
{
	return InArenas(ptr, bytes, ref) || InSegment(&scratch, ptr, bytes, ref);
}

/* The scratch bytes an array needs: 0 when it lies in a segment */
static Size
ScratchNeed(const void *ptr, uint64 bytes)
{
	GjServiceRef ref;

	if (ptr == NULL || FindRef(ptr, bytes, &ref))
		return 0;
	return TYPEALIGN(8, Max(bytes, 1));
}

/* A reference to an array, copied into scratch when it lies elsewhere */
static GjServiceRef
Ref(const void *ptr, uint64 bytes)
{
	GjServiceRef ref;

	ref.handle = DSM_HANDLE_INVALID;
	ref.offset = 0;
	ref.bytes = 0;
	if (ptr == NULL || FindRef(ptr, bytes, &ref))
		return ref;
	Assert(scratch_used + bytes <= scratch.size);
	memcpy(scratch.base + scratch_used, ptr, bytes);
	scratch_copied += bytes;
	ref.handle = dsm_segment_handle(scratch.seg);
	ref.offset = scratch_used;
	ref.bytes = bytes;
	scratch_used += TYPEALIGN(8, Max(bytes, 1));
	return ref;
}

/* Scratch of at least bytes (an ERROR when there is none) */
static void
EnsureScratch(Size bytes)
{
	if (bytes == 0 || scratch.size >= bytes)
		return;
	FreeSegment(&scratch);
	if (!NewSegment(Max(bytes, 1024 * 1024), false, &scratch))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("gpujoin: no shared memory segment for a request to the gpujoin service")));
}

/* The scratch a batch's arrays need (before the request is begun) */
static Size
BatchScratch(const GjBatch *b, int ncolumns, const int32 *widths, int nterms)
{
	uint64		n = (uint64) b->nrows;
	Size		need = 0;

	need += ScratchNeed(b->keys, n * sizeof(uint64));
	need += ScratchNeed(b->nulls, n);
	need += ScratchNeed(b->keys_hi, n * sizeof(uint64));
	need += ScratchNeed(b->row_numbers, n * sizeof(GjRowId));
	for (int i = 0; i < ncolumns; i++)
	{
		need += ScratchNeed(b->columns[i].values, n * widths[i]);
		need += ScratchNeed(b->columns[i].nulls, n);
	}
	for (int t = 0; t < nterms; t++)
	{
		need += ScratchNeed(b->terms[t], n * sizeof(uint64));
		need += ScratchNeed(b->term_nulls[t], n);
	}
	return need;
}

/* How RefBatch names an array: true when it could */
typedef bool (*RefArray) (const void *ptr, uint64 bytes, GjServiceRef *ref);

/* In a segment, copied into scratch when it lies elsewhere */
static bool
RefOrScratch(const void *ptr, uint64 bytes, GjServiceRef *ref)
{
	*ref = Ref(ptr, bytes);
	return true;
}

/* In the staging arenas, or not at all */
static bool
RefInArenas(const void *ptr, uint64 bytes, GjServiceRef *ref)
{
	memset(ref, 0, sizeof(*ref));
	ref->handle = DSM_HANDLE_INVALID;
	return ptr == NULL || InArenas(ptr, bytes, ref);
}

/* A batch's arrays by reference: rows of the columns of widths */
static bool
RefBatch(const GjBatch *b, int ncolumns, const int32 *widths, int nterms, RefArray ref,
		 GjServiceBatch *out)
{
	uint64		n = (uint64) b->nrows;
	bool		ok = true;

	memset(out, 0, sizeof(*out));
	out->nrows = b->nrows;
	ok &= ref(b->keys, n * sizeof(uint64), &out->keys);
	ok &= ref(b->nulls, n, &out->nulls);
	ok &= ref(b->keys_hi, n * sizeof(uint64), &out->keys_hi);
	ok &= ref(b->row_numbers, n * sizeof(GjRowId), &out->row_numbers);
	for (int i = 0; i < GJ_MAX_COLUMNS; i++)
	{
		out->values[i].handle = DSM_HANDLE_INVALID;
		out->value_nulls[i].handle = DSM_HANDLE_INVALID;
	}
	for (int t = 0; t < GJ_MAX_TERMS; t++)
	{
		out->terms[t].handle = DSM_HANDLE_INVALID;
		out->term_nulls[t].handle = DSM_HANDLE_INVALID;
	}
	for (int i = 0; i < ncolumns; i++)
	{
		ok &= ref(b->columns[i].values, n * widths[i], &out->values[i]);
		ok &= ref(b->columns[i].nulls, n, &out->value_nulls[i]);
	}
	for (int t = 0; t < nterms; t++)
	{
		ok &= ref(b->terms[t], n * sizeof(uint64), &out->terms[t]);
		ok &= ref(b->term_nulls[t], n, &out->term_nulls[t]);
	}
	return ok;
}

/* The answer's status and error */
static GjStatus
Answer(GjError *err)
{
	if (req->status != GJ_OK)
		*err = req->err;
	return req->status;
}

/*
 * Ask for what comes back (a round, the groups) until the result segment
 * holds it: op again with fetch_only, into a larger segment
 */
static void
FetchResult(ClientContext *cc)
{
	while (req->status == GJ_OK && req->result_too_small)
	{
		GjServiceOp op = (GjServiceOp) req->op;
		int64		first = req->first;
		Size		want = req->result_bytes;

		FreeSegment(&cc->result);
		if (!NewSegment(Max(want, 1024 * 1024), false, &cc->result))
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("gpujoin: no shared memory segment for an answer of the gpujoin service")));
		(void) Begin(op, false);
		req->context = cc->id;
		req->generation = cc->generation;
		req->first = first;
		req->fetch_only = true;
		req->result.handle = dsm_segment_handle(cc->result.seg);
		req->result.offset = 0;
		req->result.bytes = cc->result.size;
		(void) Call(false, cc->generation);
	}
}

/* Start a request on a context */
static void
BeginOn(GjServiceOp op, ClientContext *cc)
{
	/* the service the context lives in is gone: so is the context */
	if (!ServiceAlive(cc->generation))
		ServiceGone();
	(void) Begin(op, false);
	req->context = cc->id;
	req->generation = cc->generation;
	if (cc->result.seg != NULL)
	{
		req->result.handle = dsm_segment_handle(cc->result.seg);
		req->result.offset = 0;
		req->result.bytes = cc->result.size;
	}
}

/* The client's side of the context the answer names, made by create or share */
static GjContext *
AnsweredContext(const GjJoinSpec *spec)
{
	ClientContext *cc = malloc(sizeof(ClientContext));

	if (cc == NULL)
	{
		/* the service's context goes with the slot, or the next destroy */
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	}
	cc->id = req->context;
	cc->generation = req->generation;
	cc->spec = *spec;
	cc->nkeys = cc->naggs = 0;
	memset(&cc->result, 0, sizeof(cc->result));
	if (nspare_results > 0)
		cc->result = spare_results[--nspare_results];
	return (GjContext *) cc;
}

static GjStatus
ContextCreate(int target, GjContext **ctx, const GjJoinSpec *spec, GjError *err)
{
	*ctx = NULL;
	(void) Begin(GJ_OP_CREATE, false);
	req->target = target;
	req->spec = *spec;
	(void) Call(false, 0);
	if (req->status != GJ_OK)
		return Answer(err);
	*ctx = AnsweredContext(spec);
	return GJ_OK;
}

/* A new context of this client that probes the build a process names */
static GjStatus
ShareBuild(const GpuJoinSharedBuild *build, GjContext **ctx, GjError *err)
{
	GjJoinSpec	spec;

	*ctx = NULL;
	if (!ServiceAlive(build->generation))
		ServiceGone();
	(void) Begin(GJ_OP_SHARE, false);
	req->share_slot = build->slot;
	req->share_pid = build->pid;
	req->context = build->context;
	req->generation = build->generation;
	(void) Call(false, build->generation);
	if (req->status != GJ_OK)
		return Answer(err);
	spec = req->spec;
	*ctx = AnsweredContext(&spec);
	return GJ_OK;
}

/* GjKernels.context_share, on a context of this client */
static GjStatus
ContextShare(GjContext **ctx, GjContext *built, GjError *err)
{
	GpuJoinSharedBuild build;

	if (!GpuJoinServiceBuildOf(NULL, built, &build))
	{
		*ctx = NULL;
		return GjServiceError(err, GJ_ERROR_INVALID_ARGUMENT,
							  "The context to share is not the gpujoin service's.");
	}
	return ShareBuild(&build, ctx, err);
}

static GjStatus
ContextCreateCpu(GjContext **ctx, const GjJoinSpec *spec, GjError *err)
{
	return ContextCreate(GJ_TARGET_CPU, ctx, spec, err);
}

#ifdef GPUJOIN_WITH_CUDA
static GjStatus
ContextCreateCuda(GjContext **ctx, const GjJoinSpec *spec, GjError *err)
{
	return ContextCreate(GJ_TARGET_CUDA, ctx, spec, err);
}
#endif

static void
ContextDestroy(GjContext *ctx)
{
	ClientContext *cc = (ClientContext *) ctx;
	Size		arena_bytes = 0;

	if (cc == NULL)
		return;
	for (int i = 0; i < narenas; i++)
		arena_bytes += arenas[i].seg.size;
	elog(DEBUG1, "gpujoin: service client: " UINT64_FORMAT " bytes copied through scratch so far; "
		 "%d staging arenas of %zu bytes; %d taken from the service's kept segments so far",
		 scratch_copied, narenas, arena_bytes, leased_kept);
	if (my_slot >= 0 && ServiceAlive(cc->generation) && Begin(GJ_OP_DESTROY, true))
	{
		req->context = cc->id;
		req->generation = cc->generation;
		(void) Call(true, cc->generation);
	}
	if (cc->result.seg != NULL && nspare_results < MAX_SPARE_RESULTS)
		spare_results[nspare_results++] = cc->result;
	else
		FreeSegment(&cc->result);
	free(cc);
}

static void
ContextStats(const GjContext *ctx, GjStats *stats)
{
	ClientContext *cc = (ClientContext *) ctx;

	memset(stats, 0, sizeof(*stats));
	if (my_slot >= 0 && ServiceAlive(cc->generation) && Begin(GJ_OP_STATS, true))
	{
		req->context = cc->id;
		req->generation = cc->generation;
		if (Call(true, cc->generation) && req->status == GJ_OK)
			*stats = req->stats;
	}
}

static GjStatus
Build(GjContext *ctx, const GjBatch *inner, GjError *err)
{
	ClientContext *cc = (ClientContext *) ctx;

	EnsureScratch(BatchScratch(inner, cc->spec.inner_ncolumns, cc->spec.inner_widths, cc->spec.nterms));
	BeginOn(GJ_OP_BUILD, cc);
	(void) RefBatch(inner, cc->spec.inner_ncolumns, cc->spec.inner_widths, cc->spec.nterms,
					RefOrScratch, &req->batch);
	(void) Call(false, cc->generation);
	return Answer(err);
}

/*
 * A batch of this backend's staging arenas as a part of an inner side
 * that another backend builds (GpuJoinServiceBuildParts): the service
 * reads it where it lies.  false when an array lies elsewhere (a block the
 * arenas had no room for) or the service does not know this backend.
 */
bool
GpuJoinServicePartOf(const GjKernels *kernels, const GjBatch *b, int ncolumns,
					 const int32 *widths, GjServicePart *part)
{
	bool		gpu;

	memset(part, 0, sizeof(*part));
	part->slot = -1;
	if (my_slot < 0 || !GpuJoinIsServiceKernels(kernels, &gpu) ||
		!RefBatch(b, ncolumns, widths, 0, RefInArenas, &part->batch))
		return false;
	part->slot = my_slot;
	part->pid = MyProcPid;
	return true;
}

/*
 * Build on an inner side in parts, each in the arenas of the backend that
 * read it (GpuJoinServicePartOf), without copying them together here: the
 * service gathers them (GjKernels.build_parts).  The parts must stay as
 * they are until this returns.
 */
GjStatus
GpuJoinServiceBuildParts(GjContext *ctx, const GjServicePart *parts, int nparts, GjError *err)
{
	ClientContext *cc = (ClientContext *) ctx;
	Size		bytes = sizeof(GjServicePart) * nparts;

	if (nparts < 1 || nparts > GJ_SERVICE_MAX_PARTS)
		return GjServiceError(err, GJ_ERROR_INVALID_ARGUMENT,
							  "The gpujoin service was given no parts, or too many, of an inner side to build.");
	EnsureScratch(TYPEALIGN(8, bytes));
	BeginOn(GJ_OP_BUILD, cc);
	req->nparts = nparts;
	req->parts = Ref(parts, bytes);
	(void) Call(false, cc->generation);
	return Answer(err);
}

static GjStatus
Count(GjContext *ctx, const GjBatch *outer, int64_t *nmatches, GjError *err)
{
	ClientContext *cc = (ClientContext *) ctx;

	EnsureScratch(BatchScratch(outer, cc->spec.outer_ncolumns, cc->spec.outer_widths, cc->spec.nterms));
	BeginOn(GJ_OP_COUNT, cc);
	(void) RefBatch(outer, cc->spec.outer_ncolumns, cc->spec.outer_widths, cc->spec.nterms,
					RefOrScratch, &req->batch);
	(void) Call(false, cc->generation);
	*nmatches = req->nmatches;
	return Answer(err);
}

/* An array of a context's result segment at offset at, or NULL */
static const void *
InResult(const ClientContext *cc, uint64 at)
{
	return at == GJ_SERVICE_NO_OFFSET ? NULL : cc->result.base + at;
}

static GjStatus
Retrieve(GjContext *ctx, int64_t first, GjMatchRound *round, GjError *err)
{
	ClientContext *cc = (ClientContext *) ctx;

	BeginOn(GJ_OP_RETRIEVE, cc);
	req->first = first;
	(void) Call(false, cc->generation);
	FetchResult(cc);
	if (req->status != GJ_OK)
		return Answer(err);
	memset(round, 0, sizeof(*round));
	round->nmatches = req->nmatches;
	round->outer_rows = InResult(cc, req->outer_rows);
	round->inner_rows = InResult(cc, req->inner_rows);
	for (int i = 0; i < GJ_MAX_COLUMNS; i++)
	{
		round->outer_values[i] = InResult(cc, req->outer_values[i]);
		round->outer_nulls[i] = InResult(cc, req->outer_nulls[i]);
		round->inner_values[i] = InResult(cc, req->inner_values[i]);
		round->inner_nulls[i] = InResult(cc, req->inner_nulls[i]);
	}
	return GJ_OK;
}

/*
 * A chain's round handed from one level to the next in the service, on
 * the device, instead of through this process (GjKernels.hand_down)
 */
static GjStatus
HandDown(GjContext *from, int64_t first, GjContext *to, int key, const GjKeyPack *pack,
		 int64_t *handed, int64_t *nmatches, GjError *err)
{
	ClientContext *cc = (ClientContext *) from;
	ClientContext *below = (ClientContext *) to;

	*handed = *nmatches = 0;
	if (below->generation != cc->generation)
		return GjServiceError(err, GJ_ERROR_INVALID_ARGUMENT,
							  "The levels of a chain of joins live in different runs of the gpujoin service.");
	BeginOn(GJ_OP_HAND_DOWN, cc);
	req->context_to = below->id;
	req->key_column = key;
	memset(&req->key_pack, 0, sizeof(req->key_pack));
	if (pack != NULL)
		req->key_pack = *pack;
	req->first = first;
	(void) Call(false, cc->generation);
	*handed = req->handed;
	*nmatches = req->nmatches;
	return Answer(err);
}

/* An output array copied into scratch: copied back after the call */
typedef struct CopyBack
{
	void	   *to;
	uint64		offset;
	uint64		bytes;
} CopyBack;

/* A reference to an array the service writes; copied back when in scratch */
static GjServiceRef
RefOut(void *ptr, uint64 bytes, CopyBack *backs, int *nbacks)
{
	Size		before = scratch_used;
	GjServiceRef ref = Ref(ptr, bytes);

	if (ptr != NULL && scratch.seg != NULL && ref.handle == dsm_segment_handle(scratch.seg) &&
		scratch_used != before)
	{
		backs[*nbacks].to = ptr;
		backs[*nbacks].offset = ref.offset;
		backs[*nbacks].bytes = bytes;
		(*nbacks)++;
	}
	return ref;
}

/*
 * The heap pages the service's device keeps (GjKernels.pages_kept), asked
 * of the service; a deform still out is answered first (its scratch may
 * be needed again)
 */
static GjStatus
PagesKept(GjContext *ctx, const uint32_t relation[3], const uint32_t *blocks,
		  const uint64_t *lsns, int64_t n, int32_t page_size, int16_t *counts, GjError *err)
{
	ClientContext *cc = (ClientContext *) ctx;
	CopyBack	backs[1];
	int			nbacks = 0;

	if (cc == NULL)
		return gj_cpu_pages_kept(NULL, relation, blocks, lsns, n, page_size, counts, err);
	if (DeformPending())
		TakeDeform(true);
	EnsureScratch(ScratchNeed(blocks, n * sizeof(uint32)) +
				  ScratchNeed(lsns, n * sizeof(uint64)) +
				  ScratchNeed(counts, n * sizeof(int16)));
	BeginOn(GJ_OP_PAGES_KEPT, cc);
	req->kept_n = n;
	req->kept_page_size = page_size;
	memcpy(req->kept_relation, relation, sizeof(req->kept_relation));
	req->kept_blocks = Ref(blocks, n * sizeof(uint32));
	req->kept_lsns = Ref(lsns, n * sizeof(uint64));
	req->kept_counts = RefOut(counts, n * sizeof(int16), backs, &nbacks);
	(void) Call(false, cc->generation);
	for (int i = 0; i < nbacks; i++)
		memcpy(backs[i].to, scratch.base + backs[i].offset, backs[i].bytes);
	return Answer(err);
}

/*
 * A deform sent and not yet answered: heap_deform_start sends it and
 * returns, so that the backend reads the next pages while the service
 * deforms these (as the session's own device does); heap_deform_finish
 * takes the answer.  Another request in between takes it first (Begin).
 * Its output arrays that lie outside the staging blocks come back from
 * scratch with the answer.
 */
typedef struct PendingDeform
{
	bool		sent;			/* its answer not yet taken */
	bool		taken;			/* taken, for heap_deform_finish to report */
	uint32		generation;		/* the service its context lives in */
	/* the call's arguments, valid until heap_deform_finish (its contract) */
	const GjPageBatch *pages;
	const GjDeformSpec *spec;
	int64		first;
	int64		n;
	GjDeformOut *out;
	CopyBack	backs[2 * GJ_MAX_COLUMNS + 4];
	int			nbacks;
	int16	   *ask_counts;		/* the question that went with it, or NULL */
	int64		ask_n;
	GjStatus	status;
	GjError		err;
} PendingDeform;

static PendingDeform deform;

/*
 * A question of pages_kept to go with the next deform sent
 * (GpuJoinServiceAskAhead): its arrays, the caller's until that deform is
 * answered
 */
typedef struct AheadAsk
{
	bool		set;
	uint32		relation[3];
	const uint32 *blocks;
	const uint64 *lsns;
	int64		n;
	int32		page_size;
	int16	   *counts;
} AheadAsk;

static AheadAsk ahead;

static bool
DeformPending(void)
{
	return deform.sent;
}

/*
 * An abort drops the deform that is out: its output arrays go with the
 * aborted query (the slot's request is still waited for, by Begin)
 */
static void
DropDeform(void)
{
	deform.sent = false;
	deform.taken = false;
	deform.ask_counts = NULL;
	ahead.set = false;
}

static void
DeformXactCallback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		DropDeform();
}

static void
DeformSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
		DropDeform();
}

/*
 * Take the answer of the deform that is out: keep, its rows into the
 * call's output arrays and its status for heap_deform_finish; else
 * dropped (quietly: cleanup paths raise no ERROR)
 */
static void
TakeDeform(bool keep)
{
	GjServiceDeform *d = &req->deform;
	int16	   *ask_counts = deform.ask_counts;
	bool		received;
	bool		answered;

	/* first: an ERROR while waiting leaves no deform out */
	deform.sent = false;
	deform.taken = false;
	deform.ask_counts = NULL;
	received = Receive(!keep, deform.generation);
	if (!keep)
		return;
	/* the question that went with it, unanswered: none of its pages kept */
	answered = received && d->kept_answered;
	for (int64 i = 0; ask_counts != NULL && !answered && i < deform.ask_n; i++)
		ask_counts[i] = -1;
	if (!received)
		return;					/* quiet: Begin waits for it once more */
	for (int i = 0; i < deform.nbacks; i++)
		if (answered || deform.backs[i].to != (void *) ask_counts)
			memcpy(deform.backs[i].to, scratch.base + deform.backs[i].offset,
				   deform.backs[i].bytes);
	deform.out->null_columns = d->null_columns;
	deform.out->key_nulls = d->key_nulls;
	deform.out->nrows = d->nrows;
	deform.out->bytes_shipped = d->bytes_shipped;
	deform.out->host_numerics = d->host_numerics;
	deform.out->pages_cached = d->pages_cached;
	deform.status = req->status;
	if (req->status != GJ_OK)
		deform.err = req->err;
	deform.taken = true;
}

/*
 * heap_deform_start: the deform sent to the service, its pages in shared
 * buffers (in place) or in a staging block; on a region other than shared
 * buffers, done here on the CPU twin at once
 */
static GjStatus
HeapDeformStart(GjContext *ctx, const GjPageBatch *pages, const GjDeformSpec *spec,
				int64_t first, int64_t n, GjDeformOut *out, GjError *err)
{
	ClientContext *cc = (ClientContext *) ctx;
	GjServiceDeform *d;
	AheadAsk	ask;
	uint64		rows = (uint64) Max(n, 0);
	int64		npages = pages->page_size > 0 ? pages->bytes / pages->page_size : 0;
	Size		need = 0;
	int			widths[GJ_MAX_COLUMNS];

	static bool callbacks = false;

	if (!callbacks)
	{
		RegisterXactCallback(DeformXactCallback, NULL);
		RegisterSubXactCallback(DeformSubXactCallback, NULL);
		callbacks = true;
	}
	/* one deform out at a time: an earlier one not finished is dropped */
	if (deform.sent)
		TakeDeform(false);
	deform.taken = false;
	/* the question to go with this one, taken (an ERROR below drops it) */
	ask = ahead;
	ahead.set = false;
	if (cc == NULL || pages->page_size <= 0 || spec->ncolumns > GJ_MAX_COLUMNS ||
		(pages->pages == NULL && (pages->region != BufferBlocks || pages->page_size != BLCKSZ)))
	{
		GjStatus	status = gj_cpu_heap_deform(NULL, pages, spec, first, n, out, err);
		GjError		ask_err;

		/* done here: the question on its own */
		memset(&ask_err, 0, sizeof(ask_err));
		if (ask.set && PagesKept(ctx, ask.relation, ask.blocks, ask.lsns, ask.n, ask.page_size,
								 ask.counts, &ask_err) != GJ_OK)
			for (int64 i = 0; i < ask.n; i++)
				ask.counts[i] = -1;
		return status;
	}
	for (int c = 0; c < spec->ncolumns; c++)
		widths[c] = gj_deform_column_width(spec, c);

	/* the scratch all the copies need, first: growing it is a request */
	need += ScratchNeed(spec->attrs, spec->natts * sizeof(GjHeapAttr));
	need += ScratchNeed(spec->column_attnos, spec->ncolumns * sizeof(int16));
	need += ScratchNeed(spec->key_attnos, spec->nkeys * sizeof(int16));
	need += ScratchNeed(spec->key_kinds, spec->nkeys * sizeof(uint8));
	need += ScratchNeed(spec->key_bits, spec->nkeys * sizeof(int32));
	if (spec->filter)
	{
		need += ScratchNeed(spec->input_attnos, spec->filter->ninputs * sizeof(int16));
		need += ScratchNeed(spec->input_kinds, spec->filter->ninputs * sizeof(uint8));
	}
	need += ScratchNeed(pages->pages, pages->bytes);
	need += ScratchNeed(pages->tuples, pages->ntuples * sizeof(uint32));
	if (pages->pages == NULL)
		need += ScratchNeed(pages->page_index, npages * sizeof(uint32));
	if (pages->pages == NULL && pages->cache_bytes > 0 && pages->page_lsn != NULL)
	{
		need += ScratchNeed(pages->page_lsn, npages * sizeof(uint64));
		need += ScratchNeed(pages->page_block, npages * sizeof(uint32));
		if (pages->page_starts != NULL)
			need += ScratchNeed(pages->page_starts, (npages + 1) * sizeof(int64));
	}
	for (int c = 0; c < spec->ncolumns; c++)
	{
		need += ScratchNeed(out->values[c], rows * widths[c]);
		need += ScratchNeed(out->nulls[c], rows);
	}
	need += ScratchNeed(out->keys, rows * sizeof(uint64));
	need += ScratchNeed(out->keynulls, rows);
	if (spec->filter)
		need += ScratchNeed(out->selected, rows * sizeof(uint32));
	if (ask.set)
	{
		need += ScratchNeed(ask.blocks, ask.n * sizeof(uint32));
		need += ScratchNeed(ask.lsns, ask.n * sizeof(uint64));
		need += ScratchNeed(ask.counts, ask.n * sizeof(int16));
	}
	EnsureScratch(need);

	BeginOn(GJ_OP_DEFORM, cc);
	d = &req->deform;
	memset(d, 0, sizeof(*d));

	d->layout = spec->layout;
	d->natts = spec->natts;
	d->attrs = Ref(spec->attrs, spec->natts * sizeof(GjHeapAttr));
	d->ncolumns = spec->ncolumns;
	d->column_attnos = Ref(spec->column_attnos, spec->ncolumns * sizeof(int16));
	d->has_scales = spec->column_scales != NULL;
	if (d->has_scales)
		memcpy(d->column_scales, spec->column_scales, spec->ncolumns * sizeof(int8));
	d->nkeys = spec->nkeys;
	d->key_attnos = Ref(spec->key_attnos, spec->nkeys * sizeof(int16));
	d->key_kinds = Ref(spec->key_kinds, spec->nkeys * sizeof(uint8));
	d->key_bits = Ref(spec->key_bits, spec->nkeys * sizeof(int32));
	d->keys_exact = spec->keys_exact;
	d->has_filter = spec->filter != NULL;
	d->input_attnos.handle = d->input_kinds.handle = DSM_HANDLE_INVALID;
	if (spec->filter)
	{
		d->filter = *spec->filter;
		d->input_attnos = Ref(spec->input_attnos, spec->filter->ninputs * sizeof(int16));
		d->input_kinds = Ref(spec->input_kinds, spec->filter->ninputs * sizeof(uint8));
		d->has_input_scales = spec->input_scales != NULL;
		if (d->has_input_scales)
			memcpy(d->input_scales, spec->input_scales, spec->filter->ninputs * sizeof(int8));
		d->has_texts = spec->input_texts != NULL;
		if (d->has_texts)
		{
			int			ntexts = 0;

			for (int i = 0; i < spec->filter->ninputs; i++)
				ntexts += Max(spec->input_texts[i], 0);
			if (ntexts > GJ_DEFORM_MAX_TEXTS ||
				spec->text_offsets[ntexts] > GJ_DEFORM_MAX_TEXT_BYTES)
				elog(ERROR, "gpujoin: %d text constants of %d bytes in a filter",
					 ntexts, (int) spec->text_offsets[ntexts]);
			memcpy(d->input_texts, spec->input_texts, spec->filter->ninputs * sizeof(int16));
			memcpy(d->text_offsets, spec->text_offsets, (ntexts + 1) * sizeof(int32));
			memcpy(d->text_pool, spec->text_pool, spec->text_offsets[ntexts]);
		}
	}
	d->pages = Ref(pages->pages, pages->bytes);
	d->bytes = pages->bytes;
	d->ntuples = pages->ntuples;
	d->tuples = Ref(pages->tuples, pages->ntuples * sizeof(uint32));
	d->page_size = pages->page_size;
	d->page_index.handle = DSM_HANDLE_INVALID;
	d->page_lsn.handle = d->page_block.handle = d->page_starts.handle = DSM_HANDLE_INVALID;
	if (pages->pages == NULL)
	{
		d->region_bytes = pages->region_bytes;
		d->page_index = Ref(pages->page_index, npages * sizeof(uint32));
		if (pages->cache_bytes > 0 && pages->page_lsn != NULL)
		{
			d->cache_bytes = pages->cache_bytes;
			d->page_lsn = Ref(pages->page_lsn, npages * sizeof(uint64));
			d->page_block = Ref(pages->page_block, npages * sizeof(uint32));
			if (pages->page_starts != NULL)
				d->page_starts = Ref(pages->page_starts, (npages + 1) * sizeof(int64));
			memcpy(d->relation, pages->relation, sizeof(d->relation));
		}
	}
	d->first = first;
	d->n = n;
	for (int c = 0; c < GJ_MAX_COLUMNS; c++)
		d->values[c].handle = d->nulls[c].handle = DSM_HANDLE_INVALID;
	deform.nbacks = 0;
	for (int c = 0; c < spec->ncolumns; c++)
	{
		d->values[c] = RefOut(out->values[c], rows * widths[c], deform.backs, &deform.nbacks);
		d->nulls[c] = RefOut(out->nulls[c], rows, deform.backs, &deform.nbacks);
	}
	d->keys = RefOut(out->keys, rows * sizeof(uint64), deform.backs, &deform.nbacks);
	d->keynulls = RefOut(out->keynulls, rows, deform.backs, &deform.nbacks);
	d->selected.handle = DSM_HANDLE_INVALID;
	if (spec->filter)
		d->selected = RefOut(out->selected, rows * sizeof(uint32), deform.backs, &deform.nbacks);

	/* the next stage's question, answered while the device deforms these */
	req->kept_n = 0;
	deform.ask_counts = NULL;
	if (ask.set)
	{
		req->kept_n = ask.n;
		req->kept_page_size = ask.page_size;
		memcpy(req->kept_relation, ask.relation, sizeof(req->kept_relation));
		req->kept_blocks = Ref(ask.blocks, ask.n * sizeof(uint32));
		req->kept_lsns = Ref(ask.lsns, ask.n * sizeof(uint64));
		req->kept_counts = RefOut(ask.counts, ask.n * sizeof(int16), deform.backs,
								  &deform.nbacks);
		deform.ask_counts = ask.counts;
		deform.ask_n = ask.n;
	}

	/* sent, not waited for: heap_deform_finish receives it */
	deform.generation = cc->generation;
	deform.pages = pages;
	deform.spec = spec;
	deform.first = first;
	deform.n = n;
	deform.out = out;
	deform.sent = true;
	deform.taken = false;
	out->bytes_shipped = 0;
	out->host_numerics = 0;
	out->pages_cached = 0;
	Send();
	return GJ_OK;
}

/*
 * heap_deform_finish: the deform's answer; a device out of memory leaves
 * the rows to the CPU twin here, as the executor does when the start fails
 */
static GjStatus
HeapDeformFinish(GjContext *ctx, GjError *err)
{
	GjStatus	status;

	if (deform.sent)
		TakeDeform(true);
	if (!deform.taken)
		return GJ_OK;			/* none out: done at the start, or dropped */
	deform.taken = false;
	status = deform.status;
	if (status == GJ_ERROR_DEVICE_MEMORY || status == GJ_ERROR_NO_DEVICE)
	{
		memset(err, 0, sizeof(*err));
		return gj_cpu_heap_deform(NULL, deform.pages, deform.spec, deform.first, deform.n,
								  deform.out, err);
	}
	if (status != GJ_OK)
		*err = deform.err;
	return status;
}

/* heap_deform: the two halves at once */
static GjStatus
HeapDeform(GjContext *ctx, const GjPageBatch *pages, const GjDeformSpec *spec,
		   int64_t first, int64_t n, GjDeformOut *out, GjError *err)
{
	GjStatus	status = HeapDeformStart(ctx, pages, spec, first, n, out, err);

	return status != GJ_OK ? status : HeapDeformFinish(ctx, err);
}

static GjStatus
AggBegin(GjContext *ctx, const GjAggSpec *spec, GjError *err)
{
	ClientContext *cc = (ClientContext *) ctx;

	BeginOn(GJ_OP_AGG_BEGIN, cc);
	req->agg_spec = *spec;
	(void) Call(false, cc->generation);
	cc->nkeys = spec->nkeys;
	cc->naggs = spec->naggs;
	return Answer(err);
}

static GjStatus
Aggregate(GjContext *ctx, int64_t first, int64_t *nmatches, int64_t *undecided, GjError *err)
{
	ClientContext *cc = (ClientContext *) ctx;

	BeginOn(GJ_OP_AGG, cc);
	req->first = first;
	(void) Call(false, cc->generation);
	*nmatches = req->nmatches;
	*undecided = req->undecided;
	return Answer(err);
}

static GjStatus
AggResult(GjContext *ctx, GjAggResult *out, GjError *err)
{
	ClientContext *cc = (ClientContext *) ctx;

	BeginOn(GJ_OP_AGG_RESULT, cc);
	(void) Call(false, cc->generation);
	FetchResult(cc);
	if (req->status != GJ_OK)
		return Answer(err);
	memset(out, 0, sizeof(*out));
	out->ngroups = req->ngroups;
	out->spills = req->spills;
	for (int k = 0; k < cc->nkeys; k++)
	{
		out->keys[k] = InResult(cc, req->keys[k]);
		out->key_nulls[k] = InResult(cc, req->key_nulls[k]);
	}
	for (int a = 0; a < cc->naggs; a++)
	{
		out->n[a] = InResult(cc, req->words[0][a]);
		out->a[a] = InResult(cc, req->words[1][a]);
		out->b[a] = InResult(cc, req->words[2][a]);
	}
	return GJ_OK;
}

/* A kernel table through the service: the same calls, one target */
#define SERVICE_KERNELS(kernels_name, create, alloc) \
	{ \
		.name = kernels_name, \
		.context_create = create, \
		.context_destroy = ContextDestroy, \
		.context_stats = ContextStats, \
		.build = Build, \
		.count = Count, \
		.retrieve = Retrieve, \
		.heap_deform = HeapDeform, \
		.heap_deform_start = HeapDeformStart, \
		.heap_deform_finish = HeapDeformFinish, \
		.stage_alloc = alloc, \
		.stage_free = StageFree, \
		.agg_begin = AggBegin, \
		.aggregate = Aggregate, \
		.agg_result = AggResult, \
		.context_share = ContextShare, \
		.retrieve_device = Retrieve, \
		.hand_down = HandDown, \
		.pages_kept = PagesKept, \
	}

static const GjKernels service_cpu_kernels = SERVICE_KERNELS("cpu", ContextCreateCpu, StageAlloc);
#ifdef GPUJOIN_WITH_CUDA
static const GjKernels service_cuda_kernels = SERVICE_KERNELS("cuda", ContextCreateCuda, StageAllocLocked);
#endif

/* The service's kernel table for the CPU twin (gpu false) or the GPU */
const GjKernels *
GpuJoinServiceKernels(bool gpu)
{
#ifdef GPUJOIN_WITH_CUDA
	if (gpu)
		return &service_cuda_kernels;
#endif
	return &service_cpu_kernels;
}

/*
 * How another process names ctx, a context of this client made with the
 * service's kernels (NULL: do not check them), to share its build; false
 * when it is not such a context
 */
bool
GpuJoinServiceBuildOf(const GjKernels *kernels, GjContext *ctx,
					  GpuJoinSharedBuild *build)
{
	ClientContext *cc = (ClientContext *) ctx;
	bool		gpu = false;

	if (cc == NULL || my_slot < 0 ||
		(kernels != NULL && !GpuJoinIsServiceKernels(kernels, &gpu)))
		return false;
	build->slot = my_slot;
	build->pid = MyProcPid;
	build->context = cc->id;
	build->generation = cc->generation;
	build->gpu = gpu;
	return true;
}

/*
 * A new context, on *kernels (the service's, of the build's device), that
 * probes the build another process named (GpuJoinServiceBuildOf)
 */
GjStatus
GpuJoinServiceShare(const GpuJoinSharedBuild *build, const GjKernels **kernels,
					GjContext **ctx, GjError *err)
{
	*kernels = GpuJoinServiceKernels(build->gpu);
	return ShareBuild(build, ctx, err);
}

/*
 * Ask pages_kept of kernels (a table of the service's, context ctx) along
 * with the next heap_deform_start, which the caller is about to call: the
 * counts are written by the time that deform is answered (its
 * heap_deform_finish, or the next request), -1 where the service did not
 * answer.  False where kernels are not the service's: ask on its own.  A
 * reader asks about its next stage so, and the service answers while the
 * device deforms the current one: without it each stage waited for its
 * deform, then for its question (a second round trip through the service's
 * main thread).
 */
bool
GpuJoinServiceAskAhead(const GjKernels *kernels, GjContext *ctx, const uint32 relation[3],
					   const uint32 *blocks, const uint64 *lsns, int64 n, int32 page_size,
					   int16 *counts)
{
	bool		gpu;

	if (ctx == NULL || n <= 0 || !GpuJoinIsServiceKernels(kernels, &gpu))
		return false;
	ahead.set = true;
	memcpy(ahead.relation, relation, sizeof(ahead.relation));
	ahead.blocks = blocks;
	ahead.lsns = lsns;
	ahead.n = n;
	ahead.page_size = page_size;
	ahead.counts = counts;
	return true;
}

/* Is this one of the service's tables, and on the GPU? */
bool
GpuJoinIsServiceKernels(const GjKernels *kernels, bool *gpu)
{
	*gpu = false;
#ifdef GPUJOIN_WITH_CUDA
	if (kernels == &service_cuda_kernels)
	{
		*gpu = true;
		return true;
	}
#endif
	return kernels == &service_cpu_kernels;
}

/*
 * The devices the service sees, and device 0's properties; why there is
 * none in message.  -1 when the service is not running.
 */
int
GpuJoinServiceProbe(GjDeviceInfo *info, char *message, Size message_size)
{
	if (!GpuJoinServiceReady() || !Begin(GJ_OP_PROBE, true))
	{
		strlcpy(message, "The gpujoin service is not running.", message_size);
		return -1;
	}
	if (!Call(true, 0))
	{
		strlcpy(message, "The gpujoin service did not answer.", message_size);
		return -1;
	}
	*info = req->info;
	strlcpy(message, req->err.message, message_size);
	return req->ndevices;
}

/* What gpujoin_device_info() says of the service */
void
GpuJoinServiceState(char **state, int64 *requests, int64 *contexts)
{
	int			pid;
	int			st;
	uint32		generation;
	int			nkept = 0;
	int			nlent = 0;
	Size		kept_bytes = 0;
	int64		taken;

	*requests = *contexts = 0;
	if (gj_service == NULL)
	{
		*state = pstrdup(gpujoin_service ? "off (gpujoin is not in shared_preload_libraries)" : "off");
		return;
	}
	SpinLockAcquire(&gj_service->mutex);
	st = gj_service->state;
	pid = gj_service->pid;
	generation = gj_service->generation;
	*requests = gj_service->requests;
	*contexts = gj_service->contexts;
	for (int i = 0; i < GJ_SERVICE_KEPT_SEGMENTS; i++)
		if (gj_service->kept[i].handle != DSM_HANDLE_INVALID)
		{
			nkept++;
			nlent += gj_service->kept[i].lessee != 0;
			kept_bytes += gj_service->kept[i].size;
		}
	taken = gj_service->kept_taken;
	SpinLockRelease(&gj_service->mutex);
	*state = st == GJ_SERVICE_READY ?
		psprintf("running (pid %d, start %u); staging kept: %d segments, %zu MB, %d lent now, " INT64_FORMAT " taken so far",
				 pid, generation, nkept, kept_bytes / (1024 * 1024), nlent, taken) :
		pstrdup("not running");
}
