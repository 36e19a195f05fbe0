/*-------------------------------------------------------------------------
 *
 * service.c
 *	  The gpujoin service: a background worker that owns the device and
 *	  runs the kernels for every backend and parallel worker
 *
 * With shared_preload_libraries = 'gpujoin' and gpujoin.service = on, the
 * postmaster starts one background worker, "gpujoin service", which waits
 * on its latch for requests (service.h).  Its main thread checks each
 * request and resolves the client's arrays in the client's DSM segments;
 * gpujoin.service_workers threads run the calls, each a kernel call (the
 * CPU twin, or CUDA, whose context only the service creates) on a context
 * the service keeps for the client, and copy what comes back into the
 * client's result segment; the main thread then answers the client.
 * Nothing of PostgreSQL runs in the worker threads.  A kernel's error is
 * the request's answer, never the service's: the client raises it.
 *
 * A client that goes away leaves its slot CLOSING: the service destroys
 * its contexts and unmaps its segments, and frees the slot.  Should the
 * service exit (terminated, or an ERROR of its own), the postmaster starts
 * it again a second later (bgw_restart_time), with a new generation: the
 * clients waiting on it notice within a second (service_client.c) and
 * fail their query; their next query opens new contexts.
 *
 * IDENTIFICATION
 *	  src/service.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "access/twophase.h"
#include "gpujoin.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "service.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

GjServiceShared *gj_service = NULL;

/*
 * A build that contexts of other clients probe (GJ_OP_SHARE): the context
 * that built it, kept until its last user goes, its owner included.  refs
 * counts the owner (while its ServedContext holds ctx) and each context
 * that shares it.  Made by the main thread, released by whichever thread
 * destroys a context; malloc'ed, since worker threads free it.
 */
typedef struct LentBuild
{
	GjContext  *ctx;
	const GjKernels *kernels;
	int			refs;			/* under lend_mutex */
} LentBuild;

/* A context the service keeps for a client */
typedef struct ServedContext
{
	GjContext  *ctx;			/* NULL: this number is free */
	const GjKernels *kernels;
	LentBuild  *lent;			/* the build it lends (lent->ctx == ctx) or
								 * shares, or NULL; under lend_mutex, as ctx
								 * is while lent is set */
	GjJoinSpec	spec;
	GjMatchRound round;			/* the last retrieve's, for a fetch */
	GjAggResult groups;			/* the last agg_result's, for a fetch */
	int32		naggs;
	int32		nkeys;
} ServedContext;

/* A segment of a client's that the service has mapped */
typedef struct MappedSegment
{
	dsm_handle	handle;
	dsm_segment *seg;
	char	   *base;			/* where it is mapped, and its length */
	Size		bytes;
	bool		registered;		/* page-locked for the device's copies */
	bool		to_register;	/* to be page-locked, by the client's next worker */
} MappedSegment;

/* the kept segments (KEPT SEGMENTS, below), as the service has them mapped */
static MappedSegment kept[GJ_SERVICE_KEPT_SEGMENTS];
static uint64 kept_used[GJ_SERVICE_KEPT_SEGMENTS];	/* when last kept or given back */
static uint64 kept_clock = 0;

/*
 * A client's segment of at least this size is page-locked while it is
 * mapped, when the service has a GPU: the batches, deformed columns and
 * rounds in it then cross the bus by DMA instead of through the driver's
 * bounce buffers (3 to 6 times slower on the H200 host).  A client keeps its
 * staging and result segments from join to join, so each is registered once.
 * The main thread maps a segment; the worker thread that runs the client's
 * call page-locks it (RegisterNewSegments), for locking touches every page
 * of the mapping: about 150 ms for 300 MB not yet touched on the H200 host,
 * which in the main thread held up every other client's requests (the
 * parallel workers of one join, each with segments of its own, were served
 * one after another).  A client has one call at a time, so its segments are
 * changed by the main thread or by the worker running its call, never both.
 */
#define REGISTER_MIN_BYTES (256 * 1024)

/* What the service knows of the client of a slot */
typedef struct Client
{
	int			pid;
	dsm_handle	request_handle;
	dsm_segment *request_seg;
	ServedContext *contexts;
	int			ncontexts;		/* allocated */
	MappedSegment *segments;
	int			nsegments;
	int			maxsegments;
	int			lent;			/* calls in flight that read its segments (a
								 * build in parts): its requests, and its
								 * going away, wait until they are done */
} Client;

static Client *clients = NULL;
static MemoryContext service_cxt = NULL;

/* the background worker's entry point, looked up by name: exported (18
 * builds extensions with -fvisibility=hidden) */
PGDLLEXPORT void GpuJoinServiceMain(Datum main_arg);

/* Slots: one per PGPROC a client can have */
static int
ServiceSlots(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

Size
GpuJoinServiceShmemSize(void)
{
	return add_size(offsetof(GjServiceShared, slots),
					mul_size(ServiceSlots(), sizeof(GjServiceSlot)));
}

void
GpuJoinServiceShmemInit(void)
{
	bool		found;

	gj_service = ShmemInitStruct("gpujoin service", GpuJoinServiceShmemSize(), &found);
	if (!found)
	{
		memset(gj_service, 0, GpuJoinServiceShmemSize());
		SpinLockInit(&gj_service->mutex);
		gj_service->state = GJ_SERVICE_STOPPED;
		gj_service->nslots = ServiceSlots();
		for (int i = 0; i < gj_service->nslots; i++)
			pg_atomic_init_u32(&gj_service->slots[i].state, GJ_SLOT_FREE);
	}
}

/* _PG_init, preloaded with gpujoin.service on: the postmaster starts it */
void
GpuJoinServiceRegister(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	/* a connection to no database: in pg_stat_activity, as "gpujoin service" */
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 1;
	strlcpy(worker.bgw_library_name, "gpujoin", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, "GpuJoinServiceMain", BGW_MAXLEN);
	strlcpy(worker.bgw_name, "gpujoin service", BGW_MAXLEN);
	strlcpy(worker.bgw_type, "gpujoin service", BGW_MAXLEN);
	RegisterBackgroundWorker(&worker);
}

/* on_shmem_exit: no longer taking requests */
static void
ServiceExit(int code, Datum arg)
{
	SpinLockAcquire(&gj_service->mutex);
	gj_service->state = GJ_SERVICE_STOPPED;
	gj_service->pid = 0;
	gj_service->latch = NULL;
	gj_service->contexts = 0;
	/* (the segments go with this process: no client may take one now) */
	memset(gj_service->kept, 0, sizeof(gj_service->kept));
	SpinLockRelease(&gj_service->mutex);
}

#ifdef GPUJOIN_WITH_CUDA
/* Does the service have a GPU to register segments for?  Asked once. */
static bool
ServiceHasGpu(void)
{
	static int	has_gpu = -1;

	if (has_gpu < 0)
	{
		GjError		err;

		memset(&err, 0, sizeof(err));
		has_gpu = gj_cuda_device_count(&err) > 0;
	}
	return has_gpu > 0;
}
#endif

static double NowMs(void);

/* A mapped segment no longer page-locked */
static void
UnregisterSegment(MappedSegment *m)
{
#ifdef GPUJOIN_WITH_CUDA
	if (m->registered)
		gj_cuda_host_unregister(m->base);
#endif
	m->registered = false;
}

/* Unmap a mapped segment, unregistered first */
static void
UnmapSegment(MappedSegment *m)
{
	UnregisterSegment(m);
	dsm_detach(m->seg);
}

/*
 * before_shmem_exit: every client segment unregistered (the segments are
 * unmapped right after, by PostgreSQL)
 */
static void
UnregisterSegments(int code, Datum arg)
{
	for (int s = 0; clients != NULL && s < gj_service->nslots; s++)
		for (int i = 0; i < clients[s].nsegments; i++)
			UnregisterSegment(&clients[s].segments[i]);
	for (int i = 0; i < GJ_SERVICE_KEPT_SEGMENTS; i++)
		if (kept[i].seg != NULL)
			UnregisterSegment(&kept[i]);
}

/*
 * KEPT SEGMENTS.  A segment of 32 MB or more that a client is done with
 * (it forgot it, or went away) stays mapped and page-locked here while
 * gpujoin.service_kept_staging has room for it, and is listed in shared
 * memory (GjServiceShared.kept); a client that needs a staging arena takes
 * a free one there (service_client.c: LeaseKept), attaches it, and gives it
 * back the way it frees its own segments (GJ_OP_FORGET), or by going away.
 * So the parallel workers of each query, new processes that would each map
 * and page-lock new arenas, take the last query's: page-locking touches
 * every page, which costs more than the copies it speeds up when done per
 * query (and stalls the device's other work meanwhile; see
 * RegisterNewSegments).  kept[] is the service's side of the list, which
 * only the main thread reads and changes (the list in shared memory is
 * under a spinlock, which worker threads must not take).  Past the limit,
 * the free segments given back longest ago are dropped first (they were
 * dropped in slot order): the workers of a query run again find the
 * segments they gave back last time, whatever other queries ran between.
 */
#define KEEP_MIN_BYTES ((Size) 32 * 1024 * 1024)

/* The kept segment handle lent to client c: its index, or -1 */
static int
KeptLentTo(Client *c, dsm_handle handle)
{
	int			found = -1;

	SpinLockAcquire(&gj_service->mutex);
	for (int i = 0; i < GJ_SERVICE_KEPT_SEGMENTS; i++)
		if (gj_service->kept[i].handle == handle && handle != DSM_HANDLE_INVALID &&
			gj_service->kept[i].lessee == c->pid)
			found = i;
	SpinLockRelease(&gj_service->mutex);
	return found;
}

/* Client c is done with kept segment i (or with every one, i < 0) */
static void
ReturnKept(Client *c, int i)
{
	SpinLockAcquire(&gj_service->mutex);
	for (int k = 0; k < GJ_SERVICE_KEPT_SEGMENTS; k++)
		if ((i < 0 || k == i) && gj_service->kept[k].lessee == c->pid)
		{
			gj_service->kept[k].lessee = 0;
			kept_used[k] = ++kept_clock;
		}
	SpinLockRelease(&gj_service->mutex);
}

/*
 * Keep a segment a client is done with, if it is large enough and
 * gpujoin.service_kept_staging has room (free kept segments are dropped to
 * make it) and the file system behind POSIX shared memory has a quarter
 * free; false: the caller unmaps it
 */
static bool
KeepSegment(MappedSegment *m)
{
	Size		limit = (Size) gpujoin_service_kept_staging * 1024 * 1024;
	Size		total = m->bytes;
	int			at = -1;
	bool		keep;

	/*
	 * (nor one still to be page-locked: kept segments are locked, so that
	 * the worker threads never look at the list, which takes a spinlock;
	 * nor where POSIX shared memory has less than a quarter free)
	 */
	if (m->bytes < KEEP_MIN_BYTES || m->bytes > limit || m->to_register ||
		!GpuJoinShmHasRoom(0))
		return false;
	for (int i = 0; i < GJ_SERVICE_KEPT_SEGMENTS; i++)
	{
		if (kept[i].seg != NULL)
			total += kept[i].bytes;
		else if (at < 0)
			at = i;
	}
	SpinLockAcquire(&gj_service->mutex);
	while (total > limit || at < 0)
	{
		int			oldest = -1;

		for (int i = 0; i < GJ_SERVICE_KEPT_SEGMENTS; i++)
			if (kept[i].seg != NULL && kept[i].handle != DSM_HANDLE_INVALID &&
				gj_service->kept[i].lessee == 0 &&
				(oldest < 0 || kept_used[i] < kept_used[oldest]))
				oldest = i;
		if (oldest < 0)
			break;
		/* dropped: no client can take it from now on */
		gj_service->kept[oldest].handle = DSM_HANDLE_INVALID;
		kept[oldest].handle = DSM_HANDLE_INVALID;
		total -= kept[oldest].bytes;
		if (at < 0)
			at = oldest;
	}
	SpinLockRelease(&gj_service->mutex);
	/* what was dropped unmapped, outside the spinlock */
	for (int i = 0; i < GJ_SERVICE_KEPT_SEGMENTS; i++)
		if (kept[i].seg != NULL && kept[i].handle == DSM_HANDLE_INVALID)
		{
			UnmapSegment(&kept[i]);
			memset(&kept[i], 0, sizeof(kept[i]));
		}
	keep = at >= 0 && total <= limit;
	if (keep)
	{
		/* listed for the clients only once it is here */
		kept[at] = *m;
		kept_used[at] = ++kept_clock;
		SpinLockAcquire(&gj_service->mutex);
		gj_service->kept[at].handle = m->handle;
		gj_service->kept[at].size = m->bytes;
		gj_service->kept[at].lessee = 0;
		SpinLockRelease(&gj_service->mutex);
	}
	return keep;
}

/* A segment a client is done with: kept for others, or unmapped */
static void
ReleaseSegment(MappedSegment *m)
{
	if (!KeepSegment(m))
		UnmapSegment(m);
}

/* A client's segment, mapped on first use; NULL when it is gone */
static dsm_segment *
MapSegment(Client *c, dsm_handle handle)
{
	dsm_segment *seg;
	int			k;

	for (int i = 0; i < c->nsegments; i++)
		if (c->segments[i].handle == handle)
			return c->segments[i].seg;
	/* (asked only after the client's own: it takes the service's spinlock) */
	if ((k = KeptLentTo(c, handle)) >= 0)
		return kept[k].seg;
	seg = dsm_attach(handle);
	if (seg == NULL)
		return NULL;
	if (c->nsegments == c->maxsegments)
	{
		c->maxsegments = Max(16, 2 * c->maxsegments);
		c->segments = c->segments == NULL ?
			MemoryContextAlloc(service_cxt, c->maxsegments * sizeof(MappedSegment)) :
			repalloc(c->segments, c->maxsegments * sizeof(MappedSegment));
	}
	c->segments[c->nsegments].handle = handle;
	c->segments[c->nsegments].seg = seg;
	c->segments[c->nsegments].base = dsm_segment_address(seg);
	c->segments[c->nsegments].bytes = dsm_segment_map_length(seg);
	c->segments[c->nsegments].registered = false;
	c->segments[c->nsegments].to_register = false;
#ifdef GPUJOIN_WITH_CUDA
	if (dsm_segment_map_length(seg) >= REGISTER_MIN_BYTES && ServiceHasGpu())
		c->segments[c->nsegments].to_register = true;
#endif
	c->nsegments++;
	return seg;
}

/* Worker thread: page-lock m if it waits for it; the milliseconds it took */
static double
LockPending(MappedSegment *m)
{
	double		start = NowMs();

	if (!m->to_register)
		return 0;
#ifdef GPUJOIN_WITH_CUDA
	m->registered = gj_cuda_host_register(m->base, m->bytes);
#endif
	m->to_register = false;
	return NowMs() - start;
}

/*
 * Worker thread, before a client's call: page-lock the segments the main
 * thread mapped for it since its last call (kept ones are locked already:
 * KeepSegment); the milliseconds it took
 */
static double
RegisterNewSegments(Client *c)
{
	double		ms = 0;

	for (int i = 0; i < c->nsegments; i++)
		ms += LockPending(&c->segments[i]);
	return ms;
}

/* A segment the client freed: a kept one back to the list, else released */
static void
ForgetSegment(Client *c, dsm_handle handle)
{
	int			i = KeptLentTo(c, handle);

	if (i >= 0)
	{
		ReturnKept(c, i);
		return;
	}
	for (i = 0; i < c->nsegments; i++)
		if (c->segments[i].handle == handle)
		{
			ReleaseSegment(&c->segments[i]);
			c->segments[i] = c->segments[--c->nsegments];
			return;
		}
}

/*
 * The address of a client's array, checked to lie within its segment;
 * NULL for a NULL reference.  false (err set) when it does not.
 */
static bool
Resolve(Client *c, const GjServiceRef *ref, uint64 bytes, void **out, GjError *err)
{
	dsm_segment *seg;

	*out = NULL;
	if (ref->handle == DSM_HANDLE_INVALID)
		return true;
	seg = MapSegment(c, ref->handle);
	if (seg == NULL)
	{
		GjServiceError(err, GJ_ERROR_INVALID_ARGUMENT,
					 "The gpujoin service could not map a segment of its client.");
		return false;
	}
	if (ref->offset > dsm_segment_map_length(seg) ||
		bytes > dsm_segment_map_length(seg) - ref->offset || bytes > ref->bytes)
	{
		GjServiceError(err, GJ_ERROR_INVALID_ARGUMENT,
					 "An array of a gpujoin service request lies outside its segment.");
		return false;
	}
	*out = (char *) dsm_segment_address(seg) + ref->offset;
	return true;
}

/* Context number of a request of generation, or NULL (err set) */
static ServedContext *
ContextNumbered(Client *c, const GjServiceRequest *req, int number, GjError *err)
{
	if (req->generation != gj_service->generation || number < 0 ||
		number >= c->ncontexts || c->contexts[number].ctx == NULL)
	{
		GjServiceError(err, GJ_ERROR_INVALID_ARGUMENT,
					 "The gpujoin service has no such context (it may have restarted).");
		return NULL;
	}
	return &c->contexts[number];
}

/* The context a request names, or NULL (err set) */
static ServedContext *
ContextOf(Client *c, const GjServiceRequest *req, GjError *err)
{
	return ContextNumbered(c, req, req->context, err);
}

/* A batch from its references: nrows rows of the columns of widths */
static bool
ResolveBatch(Client *c, const GjServiceBatch *in, int ncolumns, const int32 *widths,
			 int nterms, GjBatch *batch, GjColumn *columns, GjError *err)
{
	uint64		n = (uint64) in->nrows;
	void	   *p;

	memset(batch, 0, sizeof(*batch));
	batch->nrows = in->nrows;
	if (in->nrows < 0 || in->nrows > GJ_MAX_ROWS)
	{
		GjServiceError(err, GJ_ERROR_INVALID_ARGUMENT, "A batch of a gpujoin service request has a bad row count.");
		return false;
	}
	if (!Resolve(c, &in->keys, n * sizeof(uint64), &p, err))
		return false;
	batch->keys = p;
	if (!Resolve(c, &in->nulls, n, &p, err))
		return false;
	batch->nulls = p;
	if (!Resolve(c, &in->keys_hi, n * sizeof(uint64), &p, err))
		return false;
	batch->keys_hi = p;
	if (!Resolve(c, &in->row_numbers, n * sizeof(GjRowId), &p, err))
		return false;
	batch->row_numbers = p;
	for (int i = 0; i < ncolumns; i++)
	{
		if (!Resolve(c, &in->values[i], n * widths[i], &p, err))
			return false;
		columns[i].values = p;
		if (!Resolve(c, &in->value_nulls[i], n, &p, err))
			return false;
		columns[i].nulls = p;
	}
	batch->columns = columns;
	for (int t = 0; t < nterms; t++)
	{
		if (!Resolve(c, &in->terms[t], n * sizeof(uint64), &p, err))
			return false;
		batch->terms[t] = p;
		if (!Resolve(c, &in->term_nulls[t], n, &p, err))
			return false;
		batch->term_nulls[t] = p;
	}
	return true;
}

/*
 * A call in progress, one per slot (a client has one request at a time):
 * what the main thread resolved for it (Prepare), what a worker thread
 * needs to run it (Execute), and what the main thread does when it is done
 * (Complete).  Workers touch nothing of PostgreSQL: they run the kernels on
 * these pointers and copy into the result area resolved for them.
 */
typedef struct Call
{
	Client	   *client;
	GjServiceRequest *req;
	ServedContext *sc;
	ServedContext *sc_to;		/* GJ_OP_HAND_DOWN: the level below */
	const uint32 *kept_blocks;	/* GJ_OP_PAGES_KEPT, or with GJ_OP_DEFORM */
	const uint64 *kept_lsns;
	int16	   *kept_counts;
	const GjKernels *create_kernels;	/* GJ_OP_CREATE, GJ_OP_SHARE */
	int			create_id;
	LentBuild  *share;			/* GJ_OP_SHARE: the build, one ref taken */
	int			contexts_delta; /* +1 created, -1 destroyed */
	GjBatch		batch;
	GjColumn	columns[GJ_MAX_COLUMNS];
	int			nparts;			/* GJ_OP_BUILD in parts: each part's batch */
	GjBatch    *parts;
	GjColumn   *part_columns;
	Client	   *lenders[GJ_SERVICE_MAX_PARTS];	/* whose segments they lie in */
	int			nlenders;
	GjDeformSpec dspec;
	GjPageBatch dpages;
	GjDeformOut dout;
	char	   *dvalues[GJ_MAX_COLUMNS];
	uint8	   *dnulls[GJ_MAX_COLUMNS];
	char	   *result;			/* the client's result area, or NULL */
	uint64		result_len;
	bool		busy;			/* queued or running */
	/* when the main thread took it, a worker started and ended it (DEBUG1) */
	double		taken_ms;
	double		started_ms;
	double		ended_ms;
	double		register_ms;	/* of those in it, page-locking segments */
} Call;

/* A monotonic clock in milliseconds, which worker threads may read too */
static double
NowMs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* The requests' names, by GjServiceOp, for the log */
static const char *const op_names[] = {
	"?", "create", "destroy", "stats", "build", "count", "retrieve",
	"agg_begin", "aggregate", "agg_result", "forget", "probe", "deform",
	"share", "hand_down", "pages_kept"
};

static Call *calls = NULL;

/* The worker threads, their queue of slots, and the slots they finished */
static pthread_t *workers = NULL;
static int	nworkers = 0;
static pthread_mutex_t queue_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static int *queued = NULL;		/* a ring of nslots */
static int	queue_head = 0;
static int	queue_count = 0;
static int *finished = NULL;	/* nslots */
static int	nfinished = 0;
static bool stopping = false;
static int	wake_pipe[2] = {-1, -1};	/* a worker writes a byte when done */

/* LentBuild.refs and ServedContext.lent */
static pthread_mutex_t lend_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Places in the result segment, 8-byte aligned */
typedef struct ResultLayout
{
	uint64		used;
} ResultLayout;

static uint64
Place(ResultLayout *l, const void *ptr, uint64 bytes)
{
	uint64		at;

	if (ptr == NULL)
		return GJ_SERVICE_NO_OFFSET;
	at = l->used;
	l->used += TYPEALIGN(8, bytes);
	return at;
}

/*
 * The result area for the used bytes placed; NULL when there is nothing to
 * copy, or (result_too_small) the client's area is smaller
 */
static char *
ResultArea(Call *call, uint64 used)
{
	call->req->result_bytes = used;
	if (used == 0)
		return NULL;
	if (call->result == NULL || used > call->result_len)
	{
		call->req->result_too_small = true;
		return NULL;
	}
	return call->result;
}

/* Copy src to offset at of the result (a placed array) */
static void
Put(char *result, uint64 at, const void *src, uint64 bytes)
{
	if (at != GJ_SERVICE_NO_OFFSET && bytes > 0)
		memcpy(result + at, src, bytes);
}

/* A retrieve's round into the result segment */
static void
AnswerRound(Call *call)
{
	GjServiceRequest *req = call->req;
	ServedContext *sc = call->sc;
	const GjMatchRound *r = &sc->round;
	uint64		n = (uint64) r->nmatches;
	ResultLayout l = {0};
	char	   *result;

	req->nmatches = r->nmatches;
	req->outer_rows = Place(&l, r->outer_rows, n * sizeof(GjRowId));
	req->inner_rows = Place(&l, r->inner_rows, n * sizeof(GjRowId));
	for (int i = 0; i < GJ_MAX_COLUMNS; i++)
	{
		bool		outer = i < sc->spec.outer_ncolumns;
		bool		inner = i < sc->spec.inner_ncolumns;

		req->outer_values[i] = outer ? Place(&l, r->outer_values[i], n * sc->spec.outer_widths[i]) : GJ_SERVICE_NO_OFFSET;
		req->outer_nulls[i] = outer ? Place(&l, r->outer_nulls[i], n) : GJ_SERVICE_NO_OFFSET;
		req->inner_values[i] = inner ? Place(&l, r->inner_values[i], n * sc->spec.inner_widths[i]) : GJ_SERVICE_NO_OFFSET;
		req->inner_nulls[i] = inner ? Place(&l, r->inner_nulls[i], n) : GJ_SERVICE_NO_OFFSET;
	}
	if ((result = ResultArea(call, l.used)) == NULL)
		return;
	Put(result, req->outer_rows, r->outer_rows, n * sizeof(GjRowId));
	Put(result, req->inner_rows, r->inner_rows, n * sizeof(GjRowId));
	for (int i = 0; i < sc->spec.outer_ncolumns; i++)
	{
		Put(result, req->outer_values[i], r->outer_values[i], n * sc->spec.outer_widths[i]);
		Put(result, req->outer_nulls[i], r->outer_nulls[i], n);
	}
	for (int i = 0; i < sc->spec.inner_ncolumns; i++)
	{
		Put(result, req->inner_values[i], r->inner_values[i], n * sc->spec.inner_widths[i]);
		Put(result, req->inner_nulls[i], r->inner_nulls[i], n);
	}
}

/* The groups into the result segment */
static void
AnswerGroups(Call *call)
{
	GjServiceRequest *req = call->req;
	ServedContext *sc = call->sc;
	const GjAggResult *g = &sc->groups;
	uint64		n = (uint64) g->ngroups;
	ResultLayout l = {0};
	char	   *result;

	req->ngroups = g->ngroups;
	req->spills = g->spills;
	for (int k = 0; k < sc->nkeys; k++)
	{
		req->keys[k] = Place(&l, g->keys[k], n * sizeof(int64));
		req->key_nulls[k] = Place(&l, g->key_nulls[k], n);
	}
	for (int a = 0; a < sc->naggs; a++)
	{
		req->words[0][a] = Place(&l, g->n[a], n * sizeof(int64));
		req->words[1][a] = Place(&l, g->a[a], n * sizeof(int64));
		req->words[2][a] = Place(&l, g->b[a], n * sizeof(int64));
	}
	if ((result = ResultArea(call, l.used)) == NULL)
		return;
	for (int k = 0; k < sc->nkeys; k++)
	{
		Put(result, req->keys[k], g->keys[k], n * sizeof(int64));
		Put(result, req->key_nulls[k], g->key_nulls[k], n);
	}
	for (int a = 0; a < sc->naggs; a++)
	{
		Put(result, req->words[0][a], g->n[a], n * sizeof(int64));
		Put(result, req->words[1][a], g->a[a], n * sizeof(int64));
		Put(result, req->words[2][a], g->b[a], n * sizeof(int64));
	}
}

/* The kernels of a target */
static const GjKernels *
TargetKernels(int target)
{
#ifdef GPUJOIN_WITH_CUDA
	if (target == GJ_TARGET_CUDA)
		return &gj_cuda_kernels;
#endif
	return target == GJ_TARGET_CPU ? &gj_cpu_kernels : NULL;
}

/* A free number for a new context of the call's client */
static void
NewContextNumber(Call *call)
{
	Client	   *c = call->client;
	int			id;

	for (id = 0; id < c->ncontexts; id++)
		if (c->contexts[id].ctx == NULL)
			break;
	if (id == c->ncontexts)
	{
		int			more = Max(8, 2 * c->ncontexts);

		c->contexts = c->contexts == NULL ?
			MemoryContextAllocZero(service_cxt, more * sizeof(ServedContext)) :
			repalloc(c->contexts, more * sizeof(ServedContext));
		memset(&c->contexts[c->ncontexts], 0, (more - c->ncontexts) * sizeof(ServedContext));
		c->ncontexts = more;
	}
	memset(&c->contexts[id], 0, sizeof(ServedContext));
	call->create_id = id;
}

/* GJ_OP_CREATE, main thread: the kernels and a number (err set if none) */
static bool
PrepareCreate(Call *call)
{
	call->create_kernels = TargetKernels(call->req->target);
	if (call->create_kernels == NULL)
	{
		GjServiceError(&call->req->err, GJ_ERROR_NO_DEVICE, "The gpujoin service has no such device.");
		return false;
	}
	/* a join spread over several devices: each device's context is ours */
	if (call->req->spec.ndevices > 1)
		call->create_kernels = gj_spread_kernels(call->create_kernels);
	NewContextNumber(call);
	return true;
}

/* Let go of a lent build (NULL: none); the last to go destroys it */
static void
DropLent(LentBuild *lent)
{
	bool		last;

	if (lent == NULL)
		return;
	pthread_mutex_lock(&lend_mutex);
	last = --lent->refs == 0;
	pthread_mutex_unlock(&lend_mutex);
	if (last)
	{
		lent->kernels->context_destroy(lent->ctx);
		free(lent);
	}
}

/*
 * GJ_OP_SHARE, main thread: the context to share, of any client (the
 * slot, the pid and the context's number and generation name it), lent
 * from now on, and a number for the new one.  The lender's context may
 * itself share a build: the new one then shares that build.
 */
static bool
PrepareShare(Call *call)
{
	GjServiceRequest *req = call->req;
	Client	   *lender;
	ServedContext *l;
	LentBuild  *lent = NULL;

	call->share = NULL;
	if (req->share_slot < 0 || req->share_slot >= gj_service->nslots ||
		clients[req->share_slot].pid != req->share_pid ||
		clients[req->share_slot].request_seg == NULL)
	{
		GjServiceError(&req->err, GJ_ERROR_INVALID_ARGUMENT,
					 "The client whose build is to be shared is gone from the gpujoin service.");
		return false;
	}
	/*
	 * a build under way is not to be shared (the executor never asks so);
	 * the lender may be building another context meanwhile (a chain's
	 * builder goes on to its next level as soon as it publishes one)
	 */
	if (calls[req->share_slot].busy && calls[req->share_slot].req->op == GJ_OP_BUILD &&
		calls[req->share_slot].req->context == req->context)
	{
		GjServiceError(&req->err, GJ_ERROR_INVALID_ARGUMENT,
					 "The build to be shared is not finished.");
		return false;
	}
	/* a number first: it may move the contexts of the client, the lender's too */
	NewContextNumber(call);
	lender = &clients[req->share_slot];
	if (ContextOf(lender, req, &req->err) == NULL)
		return false;
	l = &lender->contexts[req->context];
	if (!gj_variant_shares_build(l->spec.variant))
	{
		GjServiceError(&req->err, GJ_ERROR_INVALID_ARGUMENT, "This join's build cannot be shared.");
		return false;
	}
	pthread_mutex_lock(&lend_mutex);
	if (l->ctx != NULL && l->lent == NULL)
	{
		lent = malloc(sizeof(LentBuild));
		if (lent != NULL)
		{
			lent->ctx = l->ctx;
			lent->kernels = l->kernels;
			lent->refs = 1;
			l->lent = lent;
		}
	}
	else if (l->ctx != NULL)
		lent = l->lent;
	if (lent != NULL)
		lent->refs++;
	pthread_mutex_unlock(&lend_mutex);
	if (lent == NULL)
	{
		GjServiceError(&req->err, GJ_ERROR_HOST_MEMORY, "The gpujoin service is out of memory.");
		return false;
	}
	call->share = lent;
	req->spec = l->spec;
	return true;
}

/* GJ_OP_SHARE, worker */
static void
ExecuteShare(Call *call)
{
	GjServiceRequest *req = call->req;
	ServedContext *sc = &call->client->contexts[call->create_id];
	LentBuild  *lent = call->share;

	call->share = NULL;
	req->status = lent->kernels->context_share(&sc->ctx, lent->ctx, &req->err);
	if (req->status != GJ_OK)
	{
		sc->ctx = NULL;
		DropLent(lent);
		return;
	}
	sc->kernels = lent->kernels;
	sc->spec = req->spec;
	pthread_mutex_lock(&lend_mutex);
	sc->lent = lent;
	pthread_mutex_unlock(&lend_mutex);
	req->context = call->create_id;
	req->generation = gj_service->generation;
	call->contexts_delta = 1;
}

/*
 * GJ_OP_BUILD on a context whose build is lent: the contexts that share it
 * keep it, and the owner builds in a new context of the same spec (or in
 * its own again, when none shares it any more).  A context that shares a
 * build, asked to build (the executor never does), becomes one of its own
 * likewise.  false (err set) when no new context can be had.
 */
static bool
TakeBackBuild(ServedContext *sc, GjError *err)
{
	LentBuild  *lent;
	bool		owner;
	bool		alone;
	GjContext  *fresh = NULL;
	GjContext  *old;
	GjStatus	status;

	pthread_mutex_lock(&lend_mutex);
	lent = sc->lent;
	owner = lent != NULL && lent->ctx == sc->ctx;
	alone = owner && lent->refs == 1;
	if (alone)
		sc->lent = NULL;
	pthread_mutex_unlock(&lend_mutex);
	if (lent == NULL)
		return true;
	if (alone)
	{
		free(lent);
		return true;
	}
	status = sc->kernels->context_create(&fresh, &sc->spec, err);
	if (status != GJ_OK)
		return false;
	pthread_mutex_lock(&lend_mutex);
	old = sc->ctx;
	sc->ctx = fresh;
	sc->lent = NULL;
	pthread_mutex_unlock(&lend_mutex);
	if (!owner)
		sc->kernels->context_destroy(old);	/* one that shared: its own */
	DropLent(lent);
	return true;
}

/* GJ_OP_CREATE, worker */
static void
ExecuteCreate(Call *call)
{
	GjServiceRequest *req = call->req;
	ServedContext *sc = &call->client->contexts[call->create_id];

	req->status = call->create_kernels->context_create(&sc->ctx, &req->spec, &req->err);
	if (req->status != GJ_OK)
	{
		if (sc->ctx != NULL)
			call->create_kernels->context_destroy(sc->ctx);
		sc->ctx = NULL;
		return;
	}
	sc->kernels = call->create_kernels;
	sc->spec = req->spec;
	req->context = call->create_id;
	req->generation = gj_service->generation;
	call->contexts_delta = 1;
}

/*
 * Destroy a context the service keeps; true if there was one.  A build it
 * lends stays for the contexts that share it; one that shares a build
 * lets go of it after it is gone itself.
 */
static bool
DestroyContext(ServedContext *sc)
{
	GjContext  *ctx;
	LentBuild  *lent;

	if (sc->ctx == NULL)
		return false;
	pthread_mutex_lock(&lend_mutex);
	ctx = sc->ctx;
	lent = sc->lent;
	if (lent != NULL && lent->ctx == ctx)
		ctx = NULL;				/* the lent build's: DropLent decides */
	sc->ctx = NULL;
	sc->lent = NULL;
	pthread_mutex_unlock(&lend_mutex);
	if (ctx != NULL)
		sc->kernels->context_destroy(ctx);
	DropLent(lent);
	return true;
}

static void
CountContexts(int delta)
{
	if (delta == 0)
		return;
	SpinLockAcquire(&gj_service->mutex);
	gj_service->contexts += delta;
	SpinLockRelease(&gj_service->mutex);
}

/*
 * Whether a deform's page starts (npages + 1 of them) list its ntuples
 * tuples: from 0 to ntuples, never going down
 */
static bool
StartsListTuples(const int64 *starts, int64 npages, int64 ntuples)
{
	if (starts[0] != 0 || starts[npages] != ntuples)
		return false;
	for (int64 i = 1; i <= npages; i++)
		if (starts[i] < starts[i - 1])
			return false;
	return true;
}

/* Resolve a deform array into out; false (err set) if it is not there */
#define RESOLVE_AS(ref, bytes, out) \
	(Resolve(c, (ref), (bytes), &p, err) && ((out) = p, true))

static bool PrepareKept(Call *call);
static GjStatus LookKept(Call *call, GjError *err);

/* GJ_OP_DEFORM, main thread: the spec, pages and arrays of the whole deform */
static bool
PrepareDeform(Call *call)
{
	Client	   *c = call->client;
	GjServiceDeform *d = &call->req->deform;
	GjError    *err = &call->req->err;
	GjDeformSpec *spec = &call->dspec;
	GjPageBatch *batch = &call->dpages;
	GjDeformOut *out = &call->dout;
	uint64		n = (uint64) d->n;
	int64		npages;
	void	   *p;

	memset(spec, 0, sizeof(*spec));
	memset(batch, 0, sizeof(*batch));
	memset(out, 0, sizeof(*out));
	if (d->natts < 0 || d->natts > GJ_MAX_HEAP_ATTS || d->ncolumns < 0 ||
		d->ncolumns > GJ_MAX_COLUMNS || d->nkeys < 0 || d->nkeys > GJ_MAX_KEYS ||
		d->n < 0 || d->first < 0 || d->ntuples < 0 || d->first + d->n > d->ntuples ||
		d->page_size <= 0 || d->bytes < 0 ||
		(d->has_filter && (d->filter.ninputs < 0 || d->filter.ninputs > GJ_EXPR_MAX_INPUTS)))
	{
		GjServiceError(err, GJ_ERROR_INVALID_ARGUMENT, "A heap deform request of the gpujoin service is malformed.");
		return false;
	}
	spec->layout = d->layout;
	spec->natts = d->natts;
	spec->ncolumns = d->ncolumns;
	spec->column_scales = d->has_scales ? d->column_scales : NULL;
	spec->nkeys = d->nkeys;
	spec->keys_exact = d->keys_exact;
	if (!RESOLVE_AS(&d->attrs, d->natts * sizeof(GjHeapAttr), spec->attrs) ||
		!RESOLVE_AS(&d->column_attnos, d->ncolumns * sizeof(int16), spec->column_attnos) ||
		!RESOLVE_AS(&d->key_attnos, d->nkeys * sizeof(int16), spec->key_attnos) ||
		!RESOLVE_AS(&d->key_kinds, d->nkeys * sizeof(uint8), spec->key_kinds) ||
		!RESOLVE_AS(&d->key_bits, d->nkeys * sizeof(int32), spec->key_bits))
		return false;
	if (d->has_filter)
	{
		spec->filter = &d->filter;
		if (!RESOLVE_AS(&d->input_attnos, d->filter.ninputs * sizeof(int16), spec->input_attnos) ||
			!RESOLVE_AS(&d->input_kinds, d->filter.ninputs * sizeof(uint8), spec->input_kinds))
			return false;
		spec->input_scales = d->has_input_scales ? d->input_scales : NULL;
		if (d->has_texts)
		{
			spec->input_texts = d->input_texts;
			spec->text_offsets = d->text_offsets;
			spec->text_pool = d->text_pool;
		}
	}

	/* the pages: copied ones in a segment, or in place in shared buffers */
	batch->bytes = d->bytes;
	batch->ntuples = d->ntuples;
	batch->page_size = d->page_size;
	npages = d->bytes / d->page_size;
	if (!RESOLVE_AS(&d->pages, d->bytes, batch->pages) ||
		!RESOLVE_AS(&d->tuples, d->ntuples * sizeof(uint32), batch->tuples))
		return false;
	if (batch->pages == NULL)
	{
		if (d->region_bytes != (int64) NBuffers * BLCKSZ || d->page_size != BLCKSZ)
		{
			GjServiceError(err, GJ_ERROR_INVALID_ARGUMENT, "A heap deform request's pages are not in shared buffers.");
			return false;
		}
		if (!RESOLVE_AS(&d->page_index, npages * sizeof(uint32), batch->page_index))
			return false;
		batch->region = BufferBlocks;
		batch->region_bytes = d->region_bytes;
		if (d->cache_bytes > 0)
		{
			if (!RESOLVE_AS(&d->page_lsn, npages * sizeof(uint64), batch->page_lsn) ||
				!RESOLVE_AS(&d->page_block, npages * sizeof(uint32), batch->page_block) ||
				!RESOLVE_AS(&d->page_starts, (npages + 1) * sizeof(int64), batch->page_starts))
				return false;
			/* the kernels index the tuples by them: they must list them all, in order */
			if (batch->page_starts != NULL &&
				!StartsListTuples(batch->page_starts, npages, d->ntuples))
			{
				GjServiceError(err, GJ_ERROR_INVALID_ARGUMENT, "A heap deform request's pages' starts do not list its tuples.");
				return false;
			}
			batch->cache_bytes = d->cache_bytes;
			memcpy(batch->relation, d->relation, sizeof(batch->relation));
		}
		for (int64 i = 0; i < npages; i++)
			if (batch->page_index[i] >= (uint32) NBuffers &&
				!(batch->page_index[i] == GJ_PAGE_KEPT_ONLY && batch->page_lsn != NULL))
			{
				GjServiceError(err, GJ_ERROR_INVALID_ARGUMENT, "A heap deform request names a page outside shared buffers.");
				return false;
			}
	}

	/* the arrays written: each column as wide as its attribute, or a numeric's 8 */
	for (int col = 0; col < d->ncolumns; col++)
	{
		int			attno = spec->column_attnos[col];

		if (attno < 1 || attno > d->natts ||
			(spec->attrs[attno - 1].len <= 0 || spec->attrs[attno - 1].len > 8) !=
			gj_deform_column_converted(spec, col))
		{
			GjServiceError(err, GJ_ERROR_INVALID_ARGUMENT, "A heap deform request's column is neither fixed-width nor a numeric or text word.");
			return false;
		}
		if (!RESOLVE_AS(&d->values[col], n * gj_deform_column_width(spec, col), call->dvalues[col]) ||
			!RESOLVE_AS(&d->nulls[col], n, call->dnulls[col]))
			return false;
	}
	out->values = call->dvalues;
	out->nulls = call->dnulls;
	return RESOLVE_AS(&d->keys, n * sizeof(uint64), out->keys) &&
		RESOLVE_AS(&d->keynulls, n, out->keynulls) &&
		RESOLVE_AS(&d->selected, n * sizeof(uint32), out->selected) &&
		(call->req->kept_n <= 0 || PrepareKept(call));
}

/*
 * The question of kept pages that came with a deform, answered: every
 * count -1 where the kernels keep none or the look fails (the client then
 * reads those pages itself)
 */
static void
AnswerKept(Call *call)
{
	GjServiceRequest *req = call->req;
	GjError		err;

	memset(&err, 0, sizeof(err));
	if (LookKept(call, &err) != GJ_OK)
		for (int64 i = 0; i < req->kept_n; i++)
			call->kept_counts[i] = -1;
	req->deform.kept_answered = true;
}

/*
 * GJ_OP_DEFORM, worker.  A question of kept pages that comes with it (the
 * client's next stage) is answered while the device deforms, in place of a
 * request of its own after it: one round trip a stage, not two.
 */
static void
ExecuteDeform(Call *call)
{
	GjServiceDeform *d = &call->req->deform;
	const GjKernels *kernels = call->sc->kernels;
	GjStatus	status;

	/* (the kernels guard their tables of registered host memory themselves) */
	if (call->req->kept_n > 0 && kernels->heap_deform_start != NULL &&
		kernels->heap_deform_finish != NULL)
	{
		status = kernels->heap_deform_start(call->sc->ctx, &call->dpages, &call->dspec,
											d->first, d->n, &call->dout, &call->req->err);
		AnswerKept(call);
		if (status == GJ_OK)
			status = kernels->heap_deform_finish(call->sc->ctx, &call->req->err);
	}
	else
	{
		status = kernels->heap_deform(call->sc->ctx, &call->dpages, &call->dspec,
									  d->first, d->n, &call->dout, &call->req->err);
		if (call->req->kept_n > 0)
			AnswerKept(call);
	}
	call->req->status = status;
	d->null_columns = call->dout.null_columns;
	d->key_nulls = call->dout.key_nulls;
	d->nrows = call->dout.nrows;
	d->bytes_shipped = call->dout.bytes_shipped;
	d->host_numerics = call->dout.host_numerics;
	d->pages_cached = call->dout.pages_cached;
}

/*
 * The arrays of a question of kept pages (GJ_OP_PAGES_KEPT, or one that
 * comes with a deform); false, with the error set, where they are not the
 * client's
 */
static bool
PrepareKept(Call *call)
{
	Client	   *c = call->client;
	GjServiceRequest *req = call->req;
	uint64		n = (uint64) Max(req->kept_n, 0);
	void	   *p;
	GjError    *err = &req->err;

	if (!RESOLVE_AS(&req->kept_blocks, n * sizeof(uint32), call->kept_blocks) ||
		!RESOLVE_AS(&req->kept_lsns, n * sizeof(uint64), call->kept_lsns) ||
		!RESOLVE_AS(&req->kept_counts, n * sizeof(int16), call->kept_counts))
		return false;
	if (n > 0 && (call->kept_blocks == NULL || call->kept_lsns == NULL ||
				  call->kept_counts == NULL))
	{
		GjServiceError(err, GJ_ERROR_INVALID_ARGUMENT,
					   "A gpujoin service request for kept pages has no arrays.");
		return false;
	}
	return true;
}

/*
 * The look at the page cache a question of kept pages asks for (a table in
 * host memory: no device work); every count -1 where the kernels keep no
 * pages
 */
static GjStatus
LookKept(Call *call, GjError *err)
{
	GjServiceRequest *req = call->req;
	ServedContext *sc = call->sc;

	if (sc->kernels->pages_kept == NULL)
	{
		for (int64 i = 0; i < req->kept_n; i++)
			call->kept_counts[i] = -1;
		return GJ_OK;
	}
	return sc->kernels->pages_kept(sc->ctx, req->kept_relation, call->kept_blocks,
								   call->kept_lsns, req->kept_n, req->kept_page_size,
								   call->kept_counts, err);
}

/*
 * GJ_OP_PAGES_KEPT, answered on the main thread (LookKept), so that a
 * question that did not go with a deform (a scan's first stage, say)
 * waits for no worker
 */
static void
ServePagesKept(Call *call)
{
	call->req->status = LookKept(call, &call->req->err);
}

/* GJ_OP_PROBE: the devices the service sees, device 0's properties */
static void
ServeProbe(GjServiceRequest *req)
{
	memset(&req->info, 0, sizeof(req->info));
	req->info.device = -1;
	req->ndevices = 0;
#ifdef GPUJOIN_WITH_CUDA
	req->ndevices = gj_cuda_device_count(&req->err);
	if (req->ndevices > 0)
	{
		memset(&req->err, 0, sizeof(req->err));
		req->status = gj_cuda_device_info(0, &req->info, &req->err);
		if (req->status != GJ_OK)
			req->ndevices = 0;
		else if (gpujoin_service_memory_limit > 0)
		{
			/* what the joins may still take is the pool's rest, at most */
			int64		limit = (int64) gpujoin_service_memory_limit * 1024 * 1024;
			int64		rest = Max(limit - (int64) gj_cuda_pool_held(), 0);

			req->info.free_memory = Min(req->info.free_memory, rest);
		}
	}
	else
		req->ndevices = 0;
#else
	GjServiceError(&req->err, GJ_ERROR_NO_DEVICE, "gpujoin was built without CUDA.");
#endif
	req->status = GJ_OK;
}


/*
 * GJ_OP_BUILD of an inner side in parts, main thread: each part's batch,
 * in the segments of the client that lends it (the processes of a
 * parallel join, each with its share), which waits with its requests and
 * its going away until the build is done (Complete), so that the worker
 * reads segments still mapped
 */
static bool
PrepareBuildParts(Call *call)
{
	GjServiceRequest *req = call->req;
	ServedContext *sc = call->sc;
	int			n = req->nparts;
	void	   *p;

	if (n < 1 || n > GJ_SERVICE_MAX_PARTS)
	{
		GjServiceError(&req->err, GJ_ERROR_INVALID_ARGUMENT,
					 "A build of the gpujoin service names no parts, or too many.");
		return false;
	}
	if (!Resolve(call->client, &req->parts, sizeof(GjServicePart) * n, &p, &req->err))
		return false;
	call->parts = MemoryContextAlloc(service_cxt, sizeof(GjBatch) * n);
	call->part_columns = MemoryContextAlloc(service_cxt, sizeof(GjColumn) * GJ_MAX_COLUMNS * n);
	for (int i = 0; i < n; i++)
	{
		GjServicePart part = ((GjServicePart *) p)[i];
		Client	   *lender;

		if (part.slot < 0 || part.slot >= gj_service->nslots ||
			clients[part.slot].pid != part.pid || clients[part.slot].request_seg == NULL)
		{
			GjServiceError(&req->err, GJ_ERROR_INVALID_ARGUMENT,
						 "A part of an inner side to build lies with a client gone from the gpujoin service.");
			return false;
		}
		lender = &clients[part.slot];
		if (!ResolveBatch(lender, &part.batch, sc->spec.inner_ncolumns, sc->spec.inner_widths,
						  0, &call->parts[i], call->part_columns + GJ_MAX_COLUMNS * i, &req->err))
			return false;
		lender->lent++;
		call->lenders[call->nlenders++] = lender;
	}
	call->nparts = n;
	return true;
}

/* Main thread, as a call completes: the clients that lent it parts let go */
static void
ReleaseParts(Call *call)
{
	for (int i = 0; i < call->nlenders; i++)
		call->lenders[i]->lent--;
	call->nlenders = 0;
	call->nparts = 0;
	if (call->parts != NULL)
		pfree(call->parts);
	if (call->part_columns != NULL)
		pfree(call->part_columns);
	call->parts = NULL;
	call->part_columns = NULL;
}

/*
 * Main thread: check and resolve a request; true when a worker is to run
 * it, false when it is answered already (an error, or a call that needs no
 * kernel: forget a segment, probe the devices)
 */
static bool
Prepare(Call *call)
{
	Client	   *c = call->client;
	GjServiceRequest *req = call->req;
	ServedContext *sc = NULL;

	req->status = GJ_OK;
	memset(&req->err, 0, sizeof(req->err));
	req->result_too_small = false;
	call->sc = NULL;
	call->sc_to = NULL;
	call->contexts_delta = 0;
	call->result = NULL;
	call->result_len = 0;
	switch ((GjServiceOp) req->op)
	{
		case GJ_OP_FORGET:
			ForgetSegment(c, req->forget);
			return false;
		case GJ_OP_PROBE:
			ServeProbe(req);
			return false;
		case GJ_OP_CREATE:
			return PrepareCreate(call);
		case GJ_OP_SHARE:
			return PrepareShare(call);
		default:
			break;
	}
	if ((sc = ContextOf(c, req, &req->err)) == NULL)
		return false;
	call->sc = sc;
	switch ((GjServiceOp) req->op)
	{
		case GJ_OP_DESTROY:
		case GJ_OP_STATS:
		case GJ_OP_AGG_BEGIN:
		case GJ_OP_AGG:
			return true;
		case GJ_OP_BUILD:
			if (req->nparts != 0)
				return PrepareBuildParts(call);
			return ResolveBatch(c, &req->batch, sc->spec.inner_ncolumns, sc->spec.inner_widths,
								sc->spec.nterms, &call->batch, call->columns, &req->err);
		case GJ_OP_COUNT:
			return ResolveBatch(c, &req->batch, sc->spec.outer_ncolumns, sc->spec.outer_widths,
								sc->spec.nterms, &call->batch, call->columns, &req->err);
		case GJ_OP_RETRIEVE:
		case GJ_OP_AGG_RESULT:
			{
				/* the result area: mapped here, filled by the worker */
				void	   *area;
				dsm_segment *seg;

				if (req->result.handle == DSM_HANDLE_INVALID)
					return true;
				seg = MapSegment(c, req->result.handle);
				if (seg == NULL || req->result.offset > dsm_segment_map_length(seg))
					return true;	/* too small, as if there were none */
				area = (char *) dsm_segment_address(seg) + req->result.offset;
				call->result = area;
				call->result_len = Min(req->result.bytes,
									   dsm_segment_map_length(seg) - req->result.offset);
				return true;
			}
		case GJ_OP_DEFORM:
			return PrepareDeform(call);
		case GJ_OP_PAGES_KEPT:
			if (PrepareKept(call))
				ServePagesKept(call);
			return false;
		case GJ_OP_HAND_DOWN:
			/* two levels of one chain: contexts of one table, the lower
			 * one's outer columns what the upper hands down, the key one
			 * of them, 8 bytes wide or as wide as its pack says */
			if ((call->sc_to = ContextNumbered(c, req, req->context_to, &req->err)) == NULL)
				return false;
			if (call->sc_to == sc || call->sc_to->kernels != sc->kernels ||
				call->sc_to->spec.outer_ncolumns !=
				sc->spec.outer_ncolumns + sc->spec.inner_ncolumns + 1 ||
				req->key_column < 0 || req->key_column >= call->sc_to->spec.outer_ncolumns ||
				call->sc_to->spec.outer_widths[req->key_column] !=
				(req->key_pack.width != 0 ? req->key_pack.width : (int32) sizeof(uint64)))
			{
				GjServiceError(&req->err, GJ_ERROR_INVALID_ARGUMENT,
							   "A gpujoin service hand-down names levels that are not one chain's.");
				return false;
			}
			return true;
		default:
			GjServiceError(&req->err, GJ_ERROR_INVALID_ARGUMENT, "Unknown gpujoin service request.");
			return false;
	}
}

/* Worker: run a prepared call */
static void
Execute(Call *call)
{
	GjServiceRequest *req = call->req;
	ServedContext *sc = call->sc;

	switch ((GjServiceOp) req->op)
	{
		case GJ_OP_CREATE:
			ExecuteCreate(call);
			break;
		case GJ_OP_SHARE:
			ExecuteShare(call);
			break;
		case GJ_OP_DESTROY:
			if (DestroyContext(sc))
				call->contexts_delta = -1;
			break;
		case GJ_OP_STATS:
			sc->kernels->context_stats(sc->ctx, &req->stats);
			break;
		case GJ_OP_BUILD:
			if (!TakeBackBuild(sc, &req->err))
				req->status = req->err.status;
			else if (call->nparts == 0)
				req->status = sc->kernels->build(sc->ctx, &call->batch, &req->err);
			else if (sc->kernels->build_parts == NULL)
				req->status = GjServiceError(&req->err, GJ_ERROR_INVALID_ARGUMENT,
											 "This join cannot be built from parts.");
			else
				req->status = sc->kernels->build_parts(sc->ctx, call->parts, call->nparts,
													   &req->err);
			break;
		case GJ_OP_COUNT:
			req->status = sc->kernels->count(sc->ctx, &call->batch, &req->nmatches, &req->err);
			break;
		case GJ_OP_RETRIEVE:
			if (!req->fetch_only)
				req->status = sc->kernels->retrieve(sc->ctx, req->first, &sc->round, &req->err);
			if (req->status == GJ_OK)
				AnswerRound(call);
			break;
		case GJ_OP_AGG_BEGIN:
			req->status = sc->kernels->agg_begin(sc->ctx, &req->agg_spec, &req->err);
			sc->nkeys = req->agg_spec.nkeys;
			sc->naggs = req->agg_spec.naggs;
			break;
		case GJ_OP_AGG:
			req->status = sc->kernels->aggregate(sc->ctx, req->first, &req->nmatches,
												 &req->undecided, &req->err);
			break;
		case GJ_OP_AGG_RESULT:
			if (!req->fetch_only)
				req->status = sc->kernels->agg_result(sc->ctx, &sc->groups, &req->err);
			if (req->status == GJ_OK)
				AnswerGroups(call);
			break;
		case GJ_OP_DEFORM:
			ExecuteDeform(call);
			break;
		case GJ_OP_HAND_DOWN:
			req->status = gj_chain_hand_down(sc->kernels, sc->ctx, req->first,
											 sc->spec.outer_ncolumns, sc->spec.inner_ncolumns,
											 false, call->sc_to->ctx, req->key_column,
											 &req->key_pack, call->columns, &req->handed,
											 &req->nmatches, &req->err);
			break;
		default:
			break;
	}
}

/* A slot's client went away: its contexts and segments go (not while busy) */
static void
CloseClient(Client *c)
{
	int			destroyed = 0;

	for (int i = 0; i < c->ncontexts; i++)
		if (DestroyContext(&c->contexts[i]))
			destroyed++;
	CountContexts(-destroyed);
	ReturnKept(c, -1);
	for (int i = 0; i < c->nsegments; i++)
		ReleaseSegment(&c->segments[i]);
	if (c->request_seg != NULL)
		dsm_detach(c->request_seg);
	if (c->contexts)
		pfree(c->contexts);
	if (c->segments)
		pfree(c->segments);
	memset(c, 0, sizeof(*c));
}

/* Main thread: the answer of slot i is there; tell its client */
static void
Complete(int i)
{
	GjServiceSlot *slot = &gj_service->slots[i];
	Call	   *call = &calls[i];
	GjServiceRequest *req = call->req;
	uint32		expected;

	if (req->status == GJ_OK && req->err.status != GJ_OK)
		req->status = req->err.status;
	/* where a request's time goes, when the log asks for it */
	if (message_level_is_interesting(DEBUG1))
	{
		double		now = NowMs();
		bool		ran = call->started_ms > 0;

		elog(DEBUG1, "gpujoin service: %s of pid %d: %.3f ms to a worker, %.3f ms in it (%.3f page-locking), %.3f ms to answer",
			 req->op >= 0 && req->op < (int) lengthof(op_names) ? op_names[req->op] : "?",
			 call->client->pid,
			 ran ? call->started_ms - call->taken_ms : 0.0,
			 ran ? call->ended_ms - call->started_ms : 0.0,
			 ran ? call->register_ms : 0.0,
			 now - (ran ? call->ended_ms : call->taken_ms));
	}
	CountContexts(call->contexts_delta);
	ReleaseParts(call);
	call->busy = false;
	pg_write_barrier();
	/* unless the client went away meanwhile (CLOSING stays, for the loop) */
	expected = GJ_SLOT_REQUEST;
	if (pg_atomic_compare_exchange_u32(&slot->state, &expected, GJ_SLOT_DONE))
		SetLatch(slot->client_latch);
	SpinLockAcquire(&gj_service->mutex);
	gj_service->requests++;
	SpinLockRelease(&gj_service->mutex);
}

/* Main thread: take the request of slot i, to a worker or answered here */
static void
TakeRequest(int i)
{
	GjServiceSlot *slot = &gj_service->slots[i];
	Client	   *c = &clients[i];
	Call	   *call = &calls[i];

	pg_read_barrier();
	if (c->pid != slot->pid || c->request_handle != slot->request)
		CloseClient(c);			/* a new client in the slot */
	if (c->request_seg == NULL)
	{
		c->pid = slot->pid;
		c->request_handle = slot->request;
		c->request_seg = dsm_attach(slot->request);
	}
	if (c->request_seg == NULL)
		return;					/* the client is gone: its exit frees the slot */
	call->client = c;
	call->req = dsm_segment_address(c->request_seg);
	call->busy = true;
	call->taken_ms = NowMs();
	call->started_ms = call->ended_ms = call->register_ms = 0;
	if (!Prepare(call))
	{
		Complete(i);
		return;
	}
	pthread_mutex_lock(&queue_mutex);
	queued[(queue_head + queue_count) % gj_service->nslots] = i;
	queue_count++;
	pthread_cond_signal(&queue_cond);
	pthread_mutex_unlock(&queue_mutex);
}

/* A worker thread: run queued calls until the service stops */
static void *
Worker(void *arg)
{
	for (;;)
	{
		int			i;
		char		byte = 1;

		pthread_mutex_lock(&queue_mutex);
		while (queue_count == 0 && !stopping)
			pthread_cond_wait(&queue_cond, &queue_mutex);
		if (stopping)
		{
			pthread_mutex_unlock(&queue_mutex);
			return NULL;
		}
		i = queued[queue_head];
		queue_head = (queue_head + 1) % gj_service->nslots;
		queue_count--;
		pthread_mutex_unlock(&queue_mutex);

		calls[i].started_ms = NowMs();
		calls[i].register_ms = RegisterNewSegments(calls[i].client);
		Execute(&calls[i]);
		calls[i].ended_ms = NowMs();

		pthread_mutex_lock(&queue_mutex);
		finished[nfinished++] = i;
		pthread_mutex_unlock(&queue_mutex);
		if (write(wake_pipe[1], &byte, 1) < 0)
		{
			/* the pipe is full of wake-ups already: the main thread will look */
		}
	}
}

/* Main thread: the calls the workers finished */
static void
CompleteFinished(void)
{
	int			done[64];
	int			n;
	char		buf[64];

	while (read(wake_pipe[0], buf, sizeof(buf)) > 0)
		;
	do
	{
		pthread_mutex_lock(&queue_mutex);
		n = Min(nfinished, (int) lengthof(done));
		memcpy(done, &finished[nfinished - n], n * sizeof(int));
		nfinished -= n;
		pthread_mutex_unlock(&queue_mutex);
		for (int k = 0; k < n; k++)
			Complete(done[k]);
	} while (n > 0);
}

/*
 * on_shmem_exit: the workers finish the calls they run and stop, before
 * the process exits (a thread left running into exit() could crash it,
 * and a crashed background worker restarts the whole server)
 */
static void
StopWorkers(int code, Datum arg)
{
	pthread_mutex_lock(&queue_mutex);
	stopping = true;
	pthread_cond_broadcast(&queue_cond);
	pthread_mutex_unlock(&queue_mutex);
	for (int w = 0; w < nworkers; w++)
		pthread_join(workers[w], NULL);
	nworkers = 0;
}

/* Start the workers, every signal blocked in them: PostgreSQL's handlers run here */
static void
StartWorkers(int n)
{
	sigset_t	all;
	sigset_t	old;

	if (pipe(wake_pipe) != 0 ||
		fcntl(wake_pipe[0], F_SETFL, O_NONBLOCK) != 0 ||
		fcntl(wake_pipe[1], F_SETFL, O_NONBLOCK) != 0)
		ereport(FATAL, (errmsg("gpujoin service: could not create a pipe: %m")));
	workers = MemoryContextAllocZero(service_cxt, n * sizeof(pthread_t));
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int w = 0; w < n; w++)
	{
		if (pthread_create(&workers[w], NULL, Worker, NULL) != 0)
			break;
		nworkers++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (nworkers == 0)
		ereport(FATAL, (errmsg("gpujoin service: could not start a worker thread")));
}

/*
 * What the device side keeps between joins (gpujoin.service_cached_memory)
 * and the most all joins may hold (gpujoin.service_memory_limit)
 */
static void
ApplyMemorySettings(void)
{
#ifdef GPUJOIN_WITH_CUDA
	size_t		bytes = (size_t) gpujoin_service_cached_memory * 1024 * 1024;

	gj_cuda_pool_keep(bytes, bytes / 4);
	gj_cuda_pool_limit((size_t) gpujoin_service_memory_limit * 1024 * 1024);
#endif
}

void
GpuJoinServiceMain(Datum main_arg)
{
	WaitEventSet *events;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("gpujoin service");

	service_cxt = AllocSetContextCreate(TopMemoryContext, "gpujoin service",
										ALLOCSET_DEFAULT_SIZES);
	clients = MemoryContextAllocZero(service_cxt, gj_service->nslots * sizeof(Client));
	calls = MemoryContextAllocZero(service_cxt, gj_service->nslots * sizeof(Call));
	queued = MemoryContextAllocZero(service_cxt, gj_service->nslots * sizeof(int));
	finished = MemoryContextAllocZero(service_cxt, gj_service->nslots * sizeof(int));
	/* a segment mapped without a resource owner stays until detached */
	CurrentResourceOwner = NULL;

	on_shmem_exit(ServiceExit, (Datum) 0);
	ApplyMemorySettings();
	/* at exit, after the workers stopped: the segments page-locked no more */
	before_shmem_exit(UnregisterSegments, (Datum) 0);
	StartWorkers(gpujoin_service_workers);
	/* before the segments are unmapped at exit, which the workers copy into */
	before_shmem_exit(StopWorkers, (Datum) 0);
	events = GpuJoinCreateWaitEventSet(service_cxt, 3);
	AddWaitEventToSet(events, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(events, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	AddWaitEventToSet(events, WL_SOCKET_READABLE, wake_pipe[0], NULL, NULL);

	SpinLockAcquire(&gj_service->mutex);
	gj_service->generation++;
	gj_service->pid = MyProcPid;
	gj_service->latch = MyLatch;
	gj_service->contexts = 0;
	memset(gj_service->kept, 0, sizeof(gj_service->kept));
	gj_service->state = GJ_SERVICE_READY;
	SpinLockRelease(&gj_service->mutex);

	for (;;)
	{
		WaitEvent	event;

		(void) WaitEventSetWait(events, 1000, &event, 1, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			ApplyMemorySettings();
		}
		CompleteFinished();
		for (int i = 0; i < gj_service->nslots; i++)
		{
			GjServiceSlot *slot = &gj_service->slots[i];
			uint32		state = pg_atomic_read_u32(&slot->state);

			if (calls[i].busy || clients[i].lent > 0)
				continue;		/* a worker has its call or reads its segments: not now */
			if (state == GJ_SLOT_REQUEST)
				TakeRequest(i);
			else if (state == GJ_SLOT_CLOSING)
			{
				CloseClient(&clients[i]);
				pg_atomic_write_u32(&slot->state, GJ_SLOT_FREE);
			}
		}
		CHECK_FOR_INTERRUPTS();
	}
}
