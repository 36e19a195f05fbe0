/*-------------------------------------------------------------------------
 *
 * service.h
 *	  The gpujoin service: one background worker that runs the kernels for
 *	  every backend and parallel worker; what its clients and it share
 *
 * Each backend (or parallel worker) that uses the service has a slot in
 * shared memory, numbered by its PGPROC, and a request segment (DSM) of its
 * own, where it writes one request at a time (GjServiceRequest) and the
 * service writes the answer.  Arrays travel as references into the
 * client's DSM segments (GjServiceRef): its staging blocks, which the
 * client allocates as DSM from the start (the kernels' stage_alloc), a
 * scratch segment for arrays that are elsewhere, and a result segment
 * where the service copies what a retrieve or agg_result returns.  The
 * service maps each segment once, the first time a request names it, and
 * unmaps it when the client says it is freed or goes away.
 *
 * IDENTIFICATION
 *	  src/service.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_SERVICE_H
#define GPUJOIN_SERVICE_H

#include "gpujoin_kernels.h"
#include "port/atomics.h"
#include "storage/dsm.h"
#include "storage/latch.h"
#include "storage/spin.h"

/* What a slot is doing (GjServiceSlot.state) */
typedef enum GjSlotState
{
	GJ_SLOT_FREE = 0,			/* no client */
	GJ_SLOT_IDLE,				/* a client, no request pending */
	GJ_SLOT_REQUEST,			/* a request for the service */
	GJ_SLOT_DONE,				/* answered; the client reads it */
	GJ_SLOT_CLOSING				/* the client went away: the service frees
								 * its contexts and segments */
} GjSlotState;

typedef struct GjServiceSlot
{
	pg_atomic_uint32 state;		/* GjSlotState */
	int			pid;			/* the client's */
	Latch	   *client_latch;	/* set when the answer is there */
	dsm_handle	request;		/* the client's request segment */
} GjServiceSlot;

/* The service's state (GjServiceShared.state) */
typedef enum GjServiceState
{
	GJ_SERVICE_STOPPED = 0,		/* not running (or not started yet) */
	GJ_SERVICE_READY			/* running, taking requests */
} GjServiceState;

/*
 * A segment a client of the service is done with, which the service keeps
 * mapped and page-locked for another client's staging area
 * (gpujoin.service_kept_staging): free, or lent to the client lessee
 */
#define GJ_SERVICE_KEPT_SEGMENTS 32

typedef struct GjKeptSegment
{
	dsm_handle	handle;			/* DSM_HANDLE_INVALID: no segment here */
	Size		size;
	int			lessee;			/* the pid of the client that has it, or 0 */
} GjKeptSegment;

typedef struct GjServiceShared
{
	slock_t		mutex;
	int			state;			/* GjServiceState */
	int			pid;			/* the service's, while it runs */
	Latch	   *latch;			/* the service's, to wake it */
	uint32		generation;		/* counts the service's starts */
	int64		requests;		/* served since the server started */
	int64		contexts;		/* open now, of every client */
	GjKeptSegment kept[GJ_SERVICE_KEPT_SEGMENTS];	/* under mutex */
	int64		kept_taken;		/* kept segments clients took, ever */
	int			nslots;
	GjServiceSlot slots[FLEXIBLE_ARRAY_MEMBER];
} GjServiceShared;

/* An array of a client: offset bytes into its segment handle, or NULL */
typedef struct GjServiceRef
{
	dsm_handle	handle;			/* DSM_HANDLE_INVALID: a NULL pointer */
	uint64		offset;
	uint64		bytes;
} GjServiceRef;

/* Requests (GjServiceRequest.op) */
typedef enum GjServiceOp
{
	GJ_OP_CREATE = 1,
	GJ_OP_DESTROY,
	GJ_OP_STATS,
	GJ_OP_BUILD,
	GJ_OP_COUNT,
	GJ_OP_RETRIEVE,
	GJ_OP_AGG_BEGIN,
	GJ_OP_AGG,
	GJ_OP_AGG_RESULT,
	GJ_OP_FORGET,				/* a segment the client freed */
	GJ_OP_PROBE,				/* the GPU the service sees */
	GJ_OP_DEFORM,				/* heap_deform, whole */
	GJ_OP_SHARE,				/* context_share: a new context that probes
								 * the build of a context of any client */
	GJ_OP_HAND_DOWN,			/* hand_down: a chain's round from context
								 * to context_to, on the device */
	GJ_OP_PAGES_KEPT			/* pages_kept: the heap pages the service's
								 * device keeps */
} GjServiceOp;

/* Where the kernels run in the service (GjServiceRequest.target) */
#define GJ_TARGET_CPU	0
#define GJ_TARGET_CUDA	1

/* A batch (GjBatch) by reference */
typedef struct GjServiceBatch
{
	int64		nrows;
	GjServiceRef keys;
	GjServiceRef nulls;
	GjServiceRef keys_hi;
	GjServiceRef row_numbers;	/* GjBatch.row_numbers (a chain's levels) */
	GjServiceRef values[GJ_MAX_COLUMNS];
	GjServiceRef value_nulls[GJ_MAX_COLUMNS];
	GjServiceRef terms[GJ_MAX_TERMS];
	GjServiceRef term_nulls[GJ_MAX_TERMS];
} GjServiceBatch;

/*
 * A part of an inner side built in parts (GJ_OP_BUILD with nparts,
 * GjKernels.build_parts): a batch in the segments of the client of slot,
 * whose pid it names; the shares of a parallel join's inner side, each in
 * the staging arenas of the process that read it
 */
#define GJ_SERVICE_MAX_PARTS 64

typedef struct GjServicePart
{
	int32		slot;
	int32		pid;
	GjServiceBatch batch;
} GjServicePart;

/*
 * A heap deform (GjDeformSpec, GjPageBatch, GjDeformOut) by reference.
 * Pages in place lie in shared buffers, which every process of the server
 * maps at the same address: the service reads them at region, and the
 * client checks that its region is BufferBlocks.
 */
typedef struct GjServiceDeform
{
	/* the spec */
	GjHeapLayout layout;
	int32		natts;
	GjServiceRef attrs;
	int32		ncolumns;
	GjServiceRef column_attnos;
	bool		has_scales;		/* column_scales holds the spec's */
	int8		column_scales[GJ_MAX_COLUMNS];
	int32		nkeys;
	GjServiceRef key_attnos;
	GjServiceRef key_kinds;
	GjServiceRef key_bits;
	bool		keys_exact;
	bool		has_filter;
	GjExprProgram filter;
	GjServiceRef input_attnos;
	GjServiceRef input_kinds;
	bool		has_input_scales;	/* input_scales holds the spec's */
	int8		input_scales[GJ_EXPR_MAX_INPUTS];
	bool		has_texts;		/* input_texts, text_offsets, text_pool */
	int16		input_texts[GJ_EXPR_MAX_INPUTS];
	int32		text_offsets[GJ_DEFORM_MAX_TEXTS + 1];
	char		text_pool[GJ_DEFORM_MAX_TEXT_BYTES];
	/* the pages */
	GjServiceRef pages;			/* copied ones, or none (in place) */
	int64		bytes;
	int64		ntuples;
	GjServiceRef tuples;
	int32		page_size;
	int64		region_bytes;	/* in place: shared buffers' size */
	GjServiceRef page_index;
	int64		cache_bytes;	/* in place, pages kept: GjPageBatch's */
	GjServiceRef page_lsn;
	GjServiceRef page_block;
	GjServiceRef page_starts;	/* or none: GjPageBatch's */
	uint32		relation[3];
	int64		first;
	int64		n;
	/* where it writes, and what it says */
	GjServiceRef values[GJ_MAX_COLUMNS];
	GjServiceRef nulls[GJ_MAX_COLUMNS];
	GjServiceRef keys;
	GjServiceRef keynulls;
	GjServiceRef selected;
	uint32		null_columns;
	int64		key_nulls;
	int64		nrows;
	int64		bytes_shipped;
	int64		host_numerics;
	int64		pages_cached;
	bool		kept_answered;	/* the request's kept_counts written */
} GjServiceDeform;

/*
 * One request and its answer, at the start of the client's request
 * segment.  Arrays that come back (a round, the groups) are copied into
 * the result segment at the offsets the answer gives; when it is too
 * small the answer is GJ_SERVICE_RESULT_BYTES more, and the client asks
 * again with a larger one (GJ_OP_RETRIEVE with fetch_only, or
 * GJ_OP_AGG_RESULT), the round or groups kept.
 */
typedef struct GjServiceRequest
{
	/* in */
	int32		op;				/* GjServiceOp */
	int32		target;			/* GJ_OP_CREATE: GJ_TARGET_* */
	int32		context;		/* the service's number of the context */
	int32		context_to;		/* hand_down: the level below, its key column */
	int32		key_column;		/* and how it is packed */
	GjKeyPack	key_pack;
	uint32		generation;		/* of the service the context lives in */
	int32		share_slot;		/* GJ_OP_SHARE: the slot and pid of the */
	int32		share_pid;		/* client whose context (above) is shared */
	int64		first;			/* retrieve, aggregate */
	/*
	 * pages_kept: n blocks and LSNs of a relation in, counts (int16) out;
	 * also with a heap deform, the question of the client's next stage
	 * (kept_n > 0, 0 for none), answered while the device deforms
	 */
	int64		kept_n;
	int32		kept_page_size;
	uint32		kept_relation[3];
	GjServiceRef kept_blocks;
	GjServiceRef kept_lsns;
	GjServiceRef kept_counts;
	bool		fetch_only;		/* retrieve: copy the kept round again */
	GjServiceRef result;		/* where arrays coming back go */
	dsm_handle	forget;			/* GJ_OP_FORGET */
	int32		nparts;			/* GJ_OP_BUILD: 0, batch; else the inner
								 * side in parts, GjServicePart[nparts] */
	GjServiceRef parts;
	GjJoinSpec	spec;			/* GJ_OP_CREATE; GJ_OP_SHARE answers the
								 * shared context's */
	GjServiceBatch batch;		/* build, count */
	GjAggSpec	agg_spec;		/* agg_begin */
	GjServiceDeform deform;		/* heap_deform, in and out */

	/* out */
	GjStatus	status;
	GjError		err;
	bool		result_too_small;
	uint64		result_bytes;	/* what the arrays need */
	int64		nmatches;		/* count, retrieve, aggregate, hand_down */
	int64		handed;			/* hand_down: the round's matches */
	int64		undecided;		/* aggregate */
	GjStats		stats;			/* GJ_OP_STATS */
	GjDeviceInfo info;			/* GJ_OP_PROBE: device < 0 when none */
	int			ndevices;		/* GJ_OP_PROBE */
	/* retrieve: offsets in the result segment (UINT64_MAX: NULL) */
	uint64		outer_rows;
	uint64		inner_rows;
	uint64		outer_values[GJ_MAX_COLUMNS];
	uint64		outer_nulls[GJ_MAX_COLUMNS];
	uint64		inner_values[GJ_MAX_COLUMNS];
	uint64		inner_nulls[GJ_MAX_COLUMNS];
	/* agg_result */
	int64		ngroups;
	int64		spills;
	uint64		keys[GJ_AGG_MAX_KEYS];
	uint64		key_nulls[GJ_AGG_MAX_KEYS];
	uint64		words[3][GJ_AGG_MAX_AGGS];	/* n, a, b */
} GjServiceRequest;

#define GJ_SERVICE_NO_OFFSET	UINT64_MAX

/* An error of the service's own (no CUDA error), for an answer or a client */
static inline GjStatus
GjServiceError(GjError *err, GjStatus status, const char *message)
{
	err->status = status;
	err->cuda_error[0] = '\0';
	strlcpy(err->message, message, sizeof(err->message));
	return status;
}

/* service.c */
extern GjServiceShared *gj_service;
extern Size GpuJoinServiceShmemSize(void);
extern void GpuJoinServiceShmemInit(void);
extern void GpuJoinServiceRegister(void);

#endif							/* GPUJOIN_SERVICE_H */
