/*-------------------------------------------------------------------------
 *
 * spread.c
 *	  One join spread over several devices: a kernel table over a context
 *	  of the base table per device (gpujoin_kernels.h, SEVERAL DEVICES)
 *
 * A spread context holds one context of the base kernels (the CPU twin or
 * CUDA) per device, each created for the join's spec with one device, and
 * hands each its share.  BROADCAST gives every device the whole inner side
 * and a slice of each chunk.  PARTITION exchanges the rows among the
 * devices (as MG-Join does: Paul et al. 2021, section 3): each device takes
 * a slice of the side, partitions it into one run per device by
 * gj_spread_device of the keys, and each gathers its runs from all of them
 * (the base's exchange_send and exchange_receive: peer copies between
 * GPUs).  The devices build and count at once, each in a thread of its own
 * (this thread takes device 0).
 *
 * A round comes from one device, its values where that device's context
 * put them (so a round's arrays move from one device's to the next's).
 * BROADCAST numbers the matches device by device, so that the order of a
 * variant over the outer rows holds; its row numbers are turned back into
 * the whole chunk's here.  PARTITION numbers them round by round: round j
 * of each device in turn, then round j + 1, so that the devices copy a
 * round each at once (RetrieveAhead), each over its own link; its parts
 * carry each row's number in the whole side, which the base reports.

 * Nothing here knows whether the base runs on a GPU: the same code spreads
 * the CPU twin over logical devices, which is how the spreading is tested
 * without several GPUs, and how a spread join falls back to the CPU with
 * its matches numbered alike.
 *
 * The threads never call PostgreSQL (nothing here does), and they start
 * with every signal blocked, so that a backend's signal handlers run in
 * the backend's own thread only.
 *
 * IDENTIFICATION
 *	  cuda/device/spread.c
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "gpujoin_kernels.h"
#include "group_agg.h"

#define GJ_SPREAD_MAGIC		0x53505244	/* "SPRD" */

/* Threads at most (devices) */
#define SPREAD_MAX_THREADS	GJ_MAX_DEVICES

typedef struct SpreadContext
{
	uint32_t	magic;
	const GjKernels *base;
	GjJoinSpec	spec;
	int			n;				/* devices */
	GjContext  *sub[GJ_MAX_DEVICES];
	const struct SpreadContext *build_of;	/* whose build (shared) */

	bool		has_build;
	bool		fault_taken;	/* spec.fault_device's count has failed */

	/* PARTITION: what each device sent, and the part each received */
	GjExchange	sent[GJ_MAX_DEVICES];
	GjExchange	part[GJ_MAX_DEVICES];

	/* the counted chunk: BROADCAST's slices, each device's matches, and
	 * the length of the runs of a device's matches that rounds number in
	 * turn (PARTITION: max_matches; BROADCAST: all of them) */
	bool		counted;
	int64_t		slice[GJ_MAX_DEVICES + 1];
	int64_t		matches[GJ_MAX_DEVICES];
	int64_t		total;
	int64_t		block;

	/* rounds fetched ahead (RetrieveAhead): ahead[d] is the block of device
	 * d's matches that ahead_round[d] holds, or -1 */
	int64_t		ahead[GJ_MAX_DEVICES];
	GjMatchRound ahead_round[GJ_MAX_DEVICES];

	/* BROADCAST: the round's row numbers turned back into the whole sides' */
	GjRowId    *round_rows[2];

	/* the groups of every device, a key once (SpreadAggResult) */
	int32_t		nkeys;
	int32_t		naggs;
	GjAgg		aggs[GJ_AGG_MAX_AGGS];
	GjAggSpec	order;			/* the aggregation's spec, for its sort keys */
	int64_t    *group_slots;	/* open addressing: a group's number, or -1 */
	int64_t		slots_capacity;
	GjAggGroups groups;			/* the devices' groups, combined */

	int64_t		device_rows[GJ_MAX_DEVICES];
	int64_t		device_matches[GJ_MAX_DEVICES];
	int64_t		bytes_exchanged;
} SpreadContext;

/* ----------------------------------------------------------------
 *		The devices at work at once
 * ----------------------------------------------------------------
 */

typedef enum SpreadOp
{
	SPREAD_SEND,				/* exchange_send a slice of batch */
	SPREAD_BUILD,				/* build on batch, or on the part received */
	SPREAD_COUNT,				/* count batch, or the part received */
	SPREAD_RETRIEVE				/* retrieve from first into round */
} SpreadOp;

typedef struct SpreadTask
{
	SpreadContext *sc;
	int			device;
	SpreadOp	op;
	bool		skip;			/* nothing for this device to do */
	bool		receive;		/* BUILD, COUNT: take the exchanged part */
	const GjBatch *side;		/* SEND: the whole side */
	bool		inner;			/* SEND: it is the inner side */
	int64_t		first;			/* SEND: the slice; RETRIEVE: the match */
	int64_t		end;
	GjBatch		batch;			/* BUILD, COUNT without receive */
	GjColumn	columns[GJ_MAX_COLUMNS];
	GjMatchRound *round;		/* RETRIEVE */
	int64_t		nmatches;		/* COUNT */
	int64_t		nrows;			/* BUILD, COUNT: the rows it took */
	GjStatus	status;
	GjError		err;
} SpreadTask;

/*
 * Whether this count on device d is the one the spec's fault_device makes
 * fail (its first; only d's thread reads and sets fault_taken)
 */
static bool
TakeFault(SpreadContext *sc, int d, GjStatus *status, GjError *err)
{
	if (sc->spec.fault_device != d + 1 || sc->fault_taken)
		return false;
	sc->fault_taken = true;
	*status = gj_error_set(err, (GjStatus) sc->spec.fault_status,
						   "A failure injected into this device's count (a test).");
	return true;
}

static void *
TaskMain(void *arg)
{
	SpreadTask *t = (SpreadTask *) arg;
	SpreadContext *sc = t->sc;
	const GjKernels *k = sc->base;
	GjContext  *ctx = sc->sub[t->device];
	const GjBatch *batch = &t->batch;

	memset(&t->err, 0, sizeof(t->err));
	t->nmatches = 0;
	t->status = GJ_OK;
	if (t->skip)
		return NULL;
	switch (t->op)
	{
		case SPREAD_SEND:
			t->status = k->exchange_send(ctx, t->side, t->inner, t->first, t->end, sc->n,
										 &sc->sent[t->device], &t->err);
			return NULL;
		case SPREAD_RETRIEVE:
			t->status = k->retrieve(ctx, t->first, t->round, &t->err);
			return NULL;
		case SPREAD_BUILD:
		case SPREAD_COUNT:
			break;
	}
	if (t->receive)
	{
		t->status = k->exchange_receive(ctx, sc->sent, sc->n, t->device,
										&sc->part[t->device], &t->err);
		if (t->status != GJ_OK)
		{
			k->exchange_free(&sc->part[t->device]);
			return NULL;
		}
		batch = &sc->part[t->device].batch;
	}
	t->nrows = batch->nrows;
	if (t->op == SPREAD_BUILD)
		t->status = k->build(ctx, batch, &t->err);
	else if (!TakeFault(sc, t->device, &t->status, &t->err))
		t->status = k->count(ctx, batch, &t->nmatches, &t->err);
	if (t->receive)
		k->exchange_free(&sc->part[t->device]);
	return NULL;
}

/*
 * Run fn on n arguments (args, stride bytes apart) at once: 1 .. n-1 in
 * threads that start with every signal blocked, 0 here; one whose thread
 * cannot start runs here after it
 */
static void
RunThreads(void *(*fn) (void *), void *args, size_t stride, int n)
{
	pthread_t	threads[SPREAD_MAX_THREADS];
	bool		started[SPREAD_MAX_THREADS];
	sigset_t	all;
	sigset_t	saved;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	for (int i = 1; i < n; i++)
		started[i] = pthread_create(&threads[i], NULL, fn, (char *) args + i * stride) == 0;
	pthread_sigmask(SIG_SETMASK, &saved, NULL);

	fn(args);
	for (int i = 1; i < n; i++)
	{
		if (started[i])
			pthread_join(threads[i], NULL);
		else
			fn((char *) args + i * stride);
	}
}

/* A failed task's error as the spread's, saying which device it was */
static GjStatus
TaskError(const SpreadContext *sc, const SpreadTask *t, GjError *err)
{
	if (err != NULL)
	{
		int			len;
		size_t		rest;

		*err = t->err;
		len = snprintf(err->message, sizeof(err->message), "Device %d of %d (ordinal %d): ",
					   t->device, sc->n, sc->spec.devices[t->device]);
		if (len > 0 && (size_t) len < sizeof(err->message))
		{
			rest = strlen(t->err.message);
			if (rest > sizeof(err->message) - 1 - (size_t) len)
				rest = sizeof(err->message) - 1 - (size_t) len;
			memcpy(err->message + len, t->err.message, rest);
			err->message[len + rest] = '\0';
		}
	}
	return t->status;
}

/* Run the tasks, one per device, at once; the first failure (by device) is
 * the answer */
static GjStatus
RunTasks(SpreadContext *sc, SpreadTask *tasks, GjError *err)
{
	RunThreads(TaskMain, tasks, sizeof(SpreadTask), sc->n);
	for (int d = 0; d < sc->n; d++)
		if (tasks[d].status != GJ_OK)
			return TaskError(sc, &tasks[d], err);
	return GJ_OK;
}

/* ----------------------------------------------------------------
 *		The shares of a side
 * ----------------------------------------------------------------
 */

/* Bytes of one row of a side the devices get: key(s), values, NULL flags */
static int64_t
RowBytes(const GjJoinSpec *spec, GjSide side, const GjBatch *batch)
{
	int			ncolumns = gj_side_ncolumns(spec, side);
	const int32_t *widths = gj_side_widths(spec, side);
	int64_t		bytes = spec->variant == GJ_VARIANT_NLJ ?
		(int64_t) sizeof(uint64_t) * spec->nterms :
		spec->variant == GJ_VARIANT_SCAN ? 0 : (int64_t) sizeof(uint64_t);

	if (batch->keys_hi != NULL)
		bytes += sizeof(uint64_t);
	for (int c = 0; c < ncolumns; c++)
		bytes += widths[c] + (batch->columns[c].nulls != NULL ? 1 : 0);
	return bytes;
}

/* Rows start .. end - 1 of a batch, in place (BROADCAST's slice) */
static void
SliceBatch(const GjJoinSpec *spec, GjSide side, const GjBatch *batch,
		   int64_t start, int64_t end, GjBatch *out, GjColumn *columns)
{
	int			ncolumns = gj_side_ncolumns(spec, side);
	const int32_t *widths = gj_side_widths(spec, side);

	memset(out, 0, sizeof(*out));
	out->nrows = end - start;
	out->keys = batch->keys != NULL ? batch->keys + start : NULL;
	out->nulls = batch->nulls != NULL ? batch->nulls + start : NULL;
	out->keys_hi = batch->keys_hi != NULL ? batch->keys_hi + start : NULL;
	for (int t = 0; t < GJ_MAX_TERMS; t++)
	{
		out->terms[t] = batch->terms[t] != NULL ? batch->terms[t] + start : NULL;
		out->term_nulls[t] = batch->term_nulls[t] != NULL ? batch->term_nulls[t] + start : NULL;
	}
	for (int c = 0; c < ncolumns; c++)
	{
		columns[c].values = (const char *) batch->columns[c].values + start * widths[c];
		columns[c].nulls = batch->columns[c].nulls != NULL ?
			batch->columns[c].nulls + start : NULL;
	}
	out->columns = columns;
}

/* Forget what the devices sent */
static void
FreeSent(SpreadContext *sc)
{
	for (int d = 0; d < sc->n; d++)
		sc->base->exchange_free(&sc->sent[d]);
}

/*
 * PARTITION, the first half of an exchange: each device sends its slice of
 * a side, partitioned into one run per device.  The rows that will move from
 * one device to another count as exchanged.
 */
static GjStatus
SendSide(SpreadContext *sc, const GjBatch *batch, bool inner, GjError *err)
{
	SpreadTask	tasks[GJ_MAX_DEVICES];
	int64_t		moved = 0;
	GjStatus	status;

	memset(tasks, 0, sizeof(tasks));
	for (int d = 0; d < sc->n; d++)
	{
		tasks[d].sc = sc;
		tasks[d].device = d;
		tasks[d].op = SPREAD_SEND;
		tasks[d].side = batch;
		tasks[d].inner = inner;
		tasks[d].first = batch->nrows * d / sc->n;
		tasks[d].end = batch->nrows * (d + 1) / sc->n;
	}
	status = RunTasks(sc, tasks, err);
	if (status != GJ_OK)
	{
		FreeSent(sc);
		return status;
	}
	for (int from = 0; from < sc->n; from++)
		for (int to = 0; to < sc->n; to++)
			if (to != from)
				moved += sc->sent[from].rows[to];
	sc->bytes_exchanged += moved *
		RowBytes(&sc->spec, inner ? GJ_SIDE_INNER : GJ_SIDE_OUTER, batch);
	return GJ_OK;
}

/* ----------------------------------------------------------------
 *		Contexts
 * ----------------------------------------------------------------
 */

static SpreadContext *
SpreadGet(GjContext *ctx, GjError *err)
{
	SpreadContext *sc = (SpreadContext *) ctx;

	if (sc == NULL || sc->magic != GJ_SPREAD_MAGIC)
	{
		gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
					 "The join context was not created by a spread kernel table.");
		return NULL;
	}
	return sc;
}

static void
SpreadDestroy(GjContext *ctx)
{
	SpreadContext *sc = (SpreadContext *) ctx;

	if (sc == NULL || sc->magic != GJ_SPREAD_MAGIC)
		return;
	for (int d = 0; d < sc->n; d++)
	{
		sc->base->exchange_free(&sc->sent[d]);
		sc->base->exchange_free(&sc->part[d]);
	}
	for (int d = 0; d < sc->n; d++)
		sc->base->context_destroy(sc->sub[d]);
	for (int s = 0; s < 2; s++)
		free(sc->round_rows[s]);
	gj_agg_groups_free(&sc->groups);
	free(sc->group_slots);
	sc->magic = 0;
	free(sc);
}

/* Check what a spread spec adds to one device's */
static GjStatus
CheckSpread(const GjJoinSpec *spec, GjError *err)
{
	if (spec == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, "No join spec was given.");
	if (spec->ndevices < 2 || spec->ndevices > GJ_MAX_DEVICES)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A join is spread over 2 to %d devices, not %d.",
							GJ_MAX_DEVICES, (int) spec->ndevices);
	for (int d = 0; d < spec->ndevices; d++)
	{
		if (spec->devices[d] < 0)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"The ordinal of device %d is negative (%d).",
								d, (int) spec->devices[d]);
	}
	if (spec->spread != GJ_SPREAD_BROADCAST && spec->spread != GJ_SPREAD_PARTITION)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The spread %d is not one of BROADCAST and PARTITION.",
							(int) spec->spread);
	if (spec->spread == GJ_SPREAD_PARTITION &&
		(spec->variant == GJ_VARIANT_BAND || spec->variant == GJ_VARIANT_NLJ))
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A theta join cannot be partitioned by key over devices; it is broadcast.");
	if (spec->spread == GJ_SPREAD_PARTITION && spec->variant == GJ_VARIANT_SCAN)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A SCAN has no key to partition by over devices; it is broadcast.");
	if (spec->outer_match != GJ_OUTER_ALL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A semi, anti or left join's outer match (a chain's level) runs on one device.");
	return GJ_OK;
}

/* The spread context itself, its round arrays, no device's context yet */
static GjStatus
SpreadAlloc(SpreadContext **out, const GjKernels *base, const GjJoinSpec *spec,
			GjError *err)
{
	SpreadContext *sc;
	size_t		n = (size_t) (spec->max_matches > 0 ? spec->max_matches : 1);

	*out = NULL;
	sc = calloc(1, sizeof(SpreadContext));
	if (sc == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate %zu bytes of host memory for a join context.",
							sizeof(SpreadContext));
	sc->magic = GJ_SPREAD_MAGIC;
	sc->base = base;
	sc->spec = *spec;
	sc->n = spec->ndevices;
	for (int d = 0; d < GJ_MAX_DEVICES; d++)
		sc->ahead[d] = -1;
	for (int s = 0; s < 2 && spec->row_ids && spec->spread == GJ_SPREAD_BROADCAST; s++)
	{
		if ((sc->round_rows[s] = malloc(n * sizeof(GjRowId))) == NULL)
			goto oom;
	}
	*out = sc;
	return GJ_OK;

oom:
	SpreadDestroy((GjContext *) sc);
	return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
						"Could not allocate host memory for rounds of %lld matches.",
						(long long) spec->max_matches);
}

/* Device d's spec: the join's, on one device, with its share of the limit */
static GjJoinSpec
DeviceSpec(const GjJoinSpec *spec, int d)
{
	GjJoinSpec	one = *spec;

	one.ndevices = 0;
	memset(one.devices, 0, sizeof(one.devices));
	one.device = spec->devices[d];
	if (spec->memory_limit > 0)
		one.memory_limit = (spec->memory_limit + spec->ndevices - 1) / spec->ndevices;
	return one;
}

static GjStatus
SpreadCreate(const GjKernels *base, GjContext **ctx, const GjJoinSpec *spec,
			 GjError *err)
{
	SpreadContext *sc;

	if (ctx == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No place to return the context was given.");
	*ctx = NULL;
	if (spec != NULL && spec->ndevices <= 1)
		return base->context_create(ctx, spec, err);	/* one device */
	GJ_TRY(CheckSpread(spec, err));
	if (spec->spread == GJ_SPREAD_PARTITION && base->exchange_send == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The \"%s\" kernels cannot exchange rows between devices.",
							base->name);
	GJ_TRY(SpreadAlloc(&sc, base, spec, err));
	for (int d = 0; d < sc->n; d++)
	{
		GjJoinSpec	one = DeviceSpec(spec, d);
		GjStatus	status = base->context_create(&sc->sub[d], &one, err);

		if (status != GJ_OK)
		{
			SpreadDestroy((GjContext *) sc);
			return status;
		}
	}
	*ctx = (GjContext *) sc;
	return GJ_OK;
}

/*
 * A spread context on one device's kernels: the base's own context when
 * the spec names one device (then every other entry below is the base's:
 * see IsSpread)
 */
static bool
IsSpread(const GjContext *ctx)
{
	return ctx != NULL && ((const SpreadContext *) ctx)->magic == GJ_SPREAD_MAGIC;
}

/*
 * The sums of the devices' counters: bytes and the peak add up, times are
 * the slowest device's (they work at once), the detail is device 0's
 */
static void
SpreadStats(const SpreadContext *sc, GjStats *stats)
{
	memset(stats, 0, sizeof(*stats));
	for (int d = 0; d < sc->n; d++)
	{
		GjStats		one;

		sc->base->context_stats(sc->sub[d], &one);
		stats->bytes_to_device += one.bytes_to_device;
		stats->bytes_from_device += one.bytes_from_device;
		stats->device_memory_peak += one.device_memory_peak;
#define SLOWEST(field) if (one.field > stats->field) stats->field = one.field
		SLOWEST(transfer_ms);
		SLOWEST(build_ms);
		SLOWEST(probe_ms);
		SLOWEST(materialize_ms);
		SLOWEST(exchange_ms);
		SLOWEST(exchange_copy_ms);
#undef SLOWEST
		stats->bytes_received += one.bytes_received;
		if (d == 0)
			memcpy(stats->detail, one.detail, sizeof(stats->detail));
	}
	stats->ndevices = sc->n;
	memcpy(stats->device_rows, sc->device_rows, sizeof(sc->device_rows));
	memcpy(stats->device_matches, sc->device_matches, sizeof(sc->device_matches));
	stats->bytes_exchanged = sc->bytes_exchanged;
}

/* Forget the rounds fetched ahead: a call on a device's context overwrites
 * its round */
static void
ForgetAhead(SpreadContext *sc)
{
	for (int d = 0; d < GJ_MAX_DEVICES; d++)
		sc->ahead[d] = -1;
}

static GjStatus
SpreadBuild(SpreadContext *sc, const GjBatch *inner, GjError *err)
{
	SpreadTask	tasks[GJ_MAX_DEVICES];
	bool		partition = sc->spec.spread == GJ_SPREAD_PARTITION;
	GjStatus	status;

	if (sc->build_of != NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A context that shares a build cannot build.");
	if (inner == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, "No inner side was given.");
	sc->has_build = false;
	sc->counted = false;
	ForgetAhead(sc);
	if (partition)
		GJ_TRY(SendSide(sc, inner, true, err));
	else
		sc->bytes_exchanged += (sc->n - 1) * inner->nrows *
			RowBytes(&sc->spec, GJ_SIDE_INNER, inner);

	memset(tasks, 0, sizeof(tasks));
	for (int d = 0; d < sc->n; d++)
	{
		tasks[d].sc = sc;
		tasks[d].device = d;
		tasks[d].op = SPREAD_BUILD;
		tasks[d].receive = partition;
		if (!partition)
			tasks[d].batch = *inner;
	}
	status = RunTasks(sc, tasks, err);
	if (partition)
		FreeSent(sc);
	for (int d = 0; d < sc->n; d++)
		sc->device_rows[d] += tasks[d].nrows;
	if (status == GJ_OK)
		sc->has_build = true;
	return status;
}

/* build_parts of a spread: the parts gathered in host memory, then built */
static GjStatus
SpreadBuildWhole(void *arg, const GjBatch *whole, GjError *err)
{
	return SpreadBuild((SpreadContext *) arg, whole, err);
}

static GjStatus
SpreadBuildParts(SpreadContext *sc, const GjBatch *parts, int nparts, GjError *err)
{
	return gj_build_parts_on_host(SpreadBuildWhole, sc, &sc->spec, parts, nparts, err);
}

static GjStatus
SpreadCount(SpreadContext *sc, const GjBatch *outer, int64_t *nmatches,
			GjError *err)
{
	SpreadTask	tasks[GJ_MAX_DEVICES];
	bool		partition = sc->spec.spread == GJ_SPREAD_PARTITION;
	GjStatus	status;

	sc->counted = false;
	ForgetAhead(sc);
	if (outer == NULL || nmatches == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No outer chunk or no place for its count was given.");
	if (!sc->has_build)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"count was called before a build.");
	if (partition)
		GJ_TRY(SendSide(sc, outer, false, err));

	memset(tasks, 0, sizeof(tasks));
	for (int d = 0; d < sc->n; d++)
	{
		tasks[d].sc = sc;
		tasks[d].device = d;
		tasks[d].op = SPREAD_COUNT;
		tasks[d].receive = partition;
		sc->slice[d] = outer->nrows * d / sc->n;
		sc->slice[d + 1] = outer->nrows * (d + 1) / sc->n;
		if (!partition)
			SliceBatch(&sc->spec, GJ_SIDE_OUTER, outer, sc->slice[d], sc->slice[d + 1],
					   &tasks[d].batch, tasks[d].columns);
	}
	status = RunTasks(sc, tasks, err);
	if (partition)
		FreeSent(sc);
	for (int d = 0; d < sc->n; d++)
		sc->device_rows[d] += tasks[d].nrows;
	if (status != GJ_OK)
		return status;
	sc->total = 0;
	for (int d = 0; d < sc->n; d++)
	{
		sc->matches[d] = tasks[d].nmatches;
		sc->total += tasks[d].nmatches;
		sc->device_matches[d] += tasks[d].nmatches;
	}
	sc->block = partition ? sc->spec.max_matches : INT64_MAX;
	sc->counted = true;
	*nmatches = sc->total;
	return GJ_OK;
}

/* ----------------------------------------------------------------
 *		Numbering: blocks of each device's matches in turn
 * ----------------------------------------------------------------
 *
 * Block j of device d is its matches j * block .. (j + 1) * block - 1 (as
 * many of them as it has); the chunk's matches are block 0 of each device
 * in turn, then block 1 of each, and so on.  PARTITION's block is a round
 * (max_matches), BROADCAST's every match of a device (one block each: the
 * matches go device by device).
 */

/* The matches of device d in block j */
static int64_t
BlockLength(const SpreadContext *sc, int d, int64_t j)
{
	int64_t		start = j == 0 ? 0 : j * sc->block;	/* no overflow for
														 * BROADCAST's one */

	if (sc->matches[d] <= start)
		return 0;
	return sc->matches[d] - start < sc->block ? sc->matches[d] - start : sc->block;
}

/* The matches numbered before block j: each device's first j blocks */
static int64_t
BlocksBefore(const SpreadContext *sc, int64_t j)
{
	int64_t		n = 0;

	for (int d = 0; d < sc->n; d++)
	{
		if (j == 0)
			break;
		n += sc->matches[d] < j * sc->block ? sc->matches[d] : j * sc->block;
	}
	return n;
}

/*
 * Where match "first" (< the total) lies: device *d, its match *local, and
 * the block *j, which the round from there may not leave; *left is what is
 * left of the block from there
 */
static void
LocateMatch(const SpreadContext *sc, int64_t first, int *d, int64_t *local,
			int64_t *j, int64_t *left)
{
	int64_t		most = 0;
	int64_t		lo = 0;
	int64_t		hi;
	int64_t		pos;

	for (int k = 0; k < sc->n; k++)
		if (sc->matches[k] > most)
			most = sc->matches[k];
	/* the last block j with BlocksBefore(j) <= first */
	hi = sc->block == INT64_MAX ? 0 : (most - 1) / sc->block;
	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo + 1) / 2;

		if (BlocksBefore(sc, mid) <= first)
			lo = mid;
		else
			hi = mid - 1;
	}
	*j = lo;
	pos = first - BlocksBefore(sc, lo);
	for (int k = 0; k < sc->n; k++)
	{
		int64_t		len = BlockLength(sc, k, lo);

		if (pos < len)
		{
			*d = k;
			*local = (lo == 0 ? 0 : lo * sc->block) + pos;
			*left = len - pos;
			return;
		}
		pos -= len;
	}
	/* not reached for first < the total */
	*d = sc->n - 1;
	*local = sc->matches[sc->n - 1];
	*left = 0;
}

/*
 * The first round of block j of device d and of every later device with
 * matches in that block, fetched at once (each device copies its round
 * over its own link); the later ones wait in ahead_round
 */
static GjStatus
RetrieveAhead(SpreadContext *sc, int d, int64_t j, GjError *err)
{
	SpreadTask	tasks[GJ_MAX_DEVICES];
	int			n = sc->n - d;
	GjStatus	status = GJ_OK;

	memset(tasks, 0, sizeof(tasks));
	for (int i = 0; i < n; i++)
	{
		int			k = d + i;

		tasks[i].sc = sc;
		tasks[i].device = k;
		tasks[i].op = SPREAD_RETRIEVE;
		tasks[i].first = j == 0 ? 0 : j * sc->block;
		tasks[i].round = &sc->ahead_round[k];
		tasks[i].skip = BlockLength(sc, k, j) == 0 || (i > 0 && sc->ahead[k] == j);
		if (!tasks[i].skip)
			sc->ahead[k] = -1;
	}
	RunThreads(TaskMain, tasks, sizeof(SpreadTask), n);
	for (int i = n - 1; i >= 0; i--)
	{
		if (tasks[i].skip)
			continue;
		if (tasks[i].status != GJ_OK)
			status = TaskError(sc, &tasks[i], err);
		else
			sc->ahead[d + i] = j;
	}
	return status;
}

/*
 * Matches first .. of the counted chunk, from the one device and block
 * they lie in: the round ends where that block does
 */
static GjStatus
SpreadRetrieve(SpreadContext *sc, int64_t first, GjMatchRound *round, GjError *err)
{
	const GjJoinSpec *spec = &sc->spec;
	GjMatchRound one;
	int			d;
	int64_t		local;
	int64_t		j;
	int64_t		left;

	if (round == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, "No round was given.");
	if (!sc->counted)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"retrieve was called before a count.");
	if (first < 0 || first > sc->total)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The first match %lld is outside the chunk's %lld.",
							(long long) first, (long long) sc->total);
	memset(&one, 0, sizeof(one));
	if (first == sc->total)
	{
		/* past the end: the last device says so, with its arrays */
		ForgetAhead(sc);
		GJ_TRY(sc->base->retrieve(sc->sub[sc->n - 1], sc->matches[sc->n - 1], &one, err));
		d = sc->n - 1;
		left = 0;
	}
	else
	{
		LocateMatch(sc, first, &d, &local, &j, &left);
		if (local == (j == 0 ? 0 : j * sc->block))
		{
			/* a block's first round: fetched ahead, or fetch it with the
			 * later devices' */
			if (sc->ahead[d] != j)
				GJ_TRY(RetrieveAhead(sc, d, j, err));
			one = sc->ahead_round[d];
			sc->ahead[d] = -1;
		}
		else
		{
			sc->ahead[d] = -1;
			GJ_TRY(sc->base->retrieve(sc->sub[d], local, &one, err));
		}
	}

	memset(round, 0, sizeof(*round));
	round->nmatches = one.nmatches < left ? one.nmatches : left;
	if (spec->row_ids && spec->spread == GJ_SPREAD_BROADCAST)
	{
		/* the slice's row numbers turned back into the whole chunk's */
		GjRowId    *outer_rows = sc->round_rows[0];
		GjRowId    *inner_rows = sc->round_rows[1];
		GjRowId		offset = (GjRowId) sc->slice[d];

		for (int64_t m = 0; m < round->nmatches; m++)
			outer_rows[m] = one.outer_rows[m] + offset;
		round->outer_rows = outer_rows;
		if (one.inner_rows != NULL)		/* SCAN's matches have none */
		{
			memcpy(inner_rows, one.inner_rows, (size_t) round->nmatches * sizeof(GjRowId));
			round->inner_rows = inner_rows;
		}
	}
	else
	{
		/* PARTITION: the parts' row numbers are the whole sides' already */
		round->outer_rows = one.outer_rows;
		round->inner_rows = one.inner_rows;
	}
	/* the values and NULL flags are the device's round's, as they are */
	memcpy(round->outer_values, one.outer_values, sizeof(round->outer_values));
	memcpy(round->outer_nulls, one.outer_nulls, sizeof(round->outer_nulls));
	memcpy(round->inner_values, one.inner_values, sizeof(round->inner_values));
	memcpy(round->inner_nulls, one.inner_nulls, sizeof(round->inner_nulls));
	return GJ_OK;
}

/* ----------------------------------------------------------------
 *		Aggregation: each device folds its own matches
 * ----------------------------------------------------------------
 */

static GjStatus
SpreadAggBegin(SpreadContext *sc, const GjAggSpec *spec, GjError *err)
{
	if (spec == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, "No aggregation spec was given.");
	ForgetAhead(sc);
	/* the devices' groups unsorted: the combined ones are sorted here */
	sc->order = *spec;
	sc->order.nsort = 0;
	gj_agg_groups_free(&sc->groups);	/* arrays for this spec's keys and aggregates */
	for (int d = 0; d < sc->n; d++)
		GJ_TRY(sc->base->agg_begin(sc->sub[d], &sc->order, err));
	sc->order.nsort = spec->nsort;
	sc->nkeys = spec->nkeys;
	sc->naggs = spec->naggs;
	memcpy(sc->aggs, spec->aggs, sizeof(sc->aggs));
	return GJ_OK;
}

/*
 * Fold the round from first into its device's groups: first is where a
 * round starts (the device folds a whole round from there, so its block
 * must not end sooner)
 */
static GjStatus
SpreadAggregate(SpreadContext *sc, int64_t first, int64_t *nmatches,
				int64_t *undecided, GjError *err)
{
	int			d;
	int64_t		local;
	int64_t		j;
	int64_t		left;

	if (!sc->counted)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"aggregate was called before a count.");
	if (first < 0 || first > sc->total)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The first match %lld is outside the chunk's %lld.",
							(long long) first, (long long) sc->total);
	ForgetAhead(sc);
	if (first == sc->total)		/* past the end: that device says so */
		return sc->base->aggregate(sc->sub[sc->n - 1], sc->matches[sc->n - 1],
								   nmatches, undecided, err);
	LocateMatch(sc, first, &d, &local, &j, &left);
	if (left < sc->spec.max_matches && local + left < sc->matches[d])
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"aggregate was asked to start at match %lld, inside a round of a device.",
							(long long) first);
	return sc->base->aggregate(sc->sub[d], local, nmatches, undecided, err);
}

/* Group g of device result r's key, hashed */
static uint64_t
GroupHash(const SpreadContext *sc, const GjAggResult *r, int64_t g)
{
	uint64_t	h = 0;

	for (int k = 0; k < sc->nkeys; k++)
	{
		bool		null = r->key_nulls[k] != NULL && r->key_nulls[k][g];

		h = gj_hash64(h ^ (null ? UINT64_C(0x9E3779B97F4A7C15) : (uint64_t) r->keys[k][g]) ^
					  (uint64_t) k);
	}
	return h;
}

/* Is group g of device result r's key that of gathered group i? */
static bool
SameGroup(const SpreadContext *sc, const GjAggResult *r, int64_t g, int64_t i)
{
	for (int k = 0; k < sc->nkeys; k++)
	{
		bool		null = r->key_nulls[k] != NULL && r->key_nulls[k][g];

		if (null != (sc->groups.key_nulls[k][i] != 0))
			return false;
		if (!null && r->keys[k][g] != sc->groups.keys[k][i])
			return false;
	}
	return true;
}

/*
 * Every device's groups, a key once: a key that several devices have
 * (each folded the matches it found; PARTITION spreads by the join key,
 * not the group's) comes back with their words combined, as a device
 * combines its own (gj_agg_combine); so are the groups of one key that a
 * device's spills (GjAggResult) handed out more than once.
 */
static GjStatus
SpreadAggResult(SpreadContext *sc, GjAggResult *out, GjError *err)
{
	GjAggResult one[GJ_MAX_DEVICES];
	int64_t		total = 0;
	int64_t		ngroups = 0;
	int64_t		mask = 0;
	int64_t		spills;

	if (out == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, "No place for the groups was given.");
	/* the devices' arrays stay valid until their next call: none comes */
	for (int d = 0; d < sc->n; d++)
	{
		GJ_TRY(sc->base->agg_result(sc->sub[d], &one[d], err));
		total += one[d].ngroups;
	}
	if (!gj_agg_groups_reserve(&sc->groups, &sc->order, total > 0 ? total : 1))
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate host memory for %lld groups.", (long long) total);
	if (sc->nkeys > 0)
	{
		int64_t		slots = 16;

		while (slots < 2 * total)
			slots *= 2;
		if (slots > sc->slots_capacity)
		{
			int64_t    *grown = realloc(sc->group_slots, (size_t) slots * sizeof(int64_t));

			if (grown == NULL)
				return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
									"Could not allocate host memory for %lld groups.",
									(long long) total);
			sc->group_slots = grown;
			sc->slots_capacity = slots;
		}
		memset(sc->group_slots, 0xFF, (size_t) slots * sizeof(int64_t));	/* -1 */
		mask = slots - 1;
	}

	memset(out, 0, sizeof(*out));
	for (int d = 0; d < sc->n; d++)
	{
		const GjAggResult *r = &one[d];

		for (int64_t g = 0; g < r->ngroups; g++)
		{
			int64_t		i = -1;

			if (sc->nkeys == 0)
				i = ngroups > 0 ? 0 : -1;	/* one group, whatever the rows */
			else
			{
				int64_t		slot = (int64_t) (GroupHash(sc, r, g) & (uint64_t) mask);

				while (sc->group_slots[slot] >= 0 && !SameGroup(sc, r, g, sc->group_slots[slot]))
					slot = (slot + 1) & mask;
				i = sc->group_slots[slot];
				if (i < 0)
					sc->group_slots[slot] = ngroups;
			}
			if (i >= 0)
			{
				/* a group no row reached has the words of none
				 * (gj_agg_init_words): combining them changes nothing */
				for (int a = 0; a < sc->naggs; a++)
					gj_agg_combine(&sc->aggs[a], &sc->groups.words[3 * a][i],
								   &sc->groups.words[3 * a + 1][i], &sc->groups.words[3 * a + 2][i],
								   r->n[a][g], r->a[a][g], r->b[a][g]);
				continue;
			}
			/* a key not met yet */
			i = ngroups++;
			for (int k = 0; k < sc->nkeys; k++)
			{
				sc->groups.keys[k][i] = r->keys[k][g];
				sc->groups.key_nulls[k][i] = r->key_nulls[k] != NULL ? r->key_nulls[k][g] : 0;
			}
			for (int a = 0; a < sc->naggs; a++)
			{
				sc->groups.words[3 * a][i] = r->n[a][g];
				sc->groups.words[3 * a + 1][i] = r->a[a][g];
				sc->groups.words[3 * a + 2][i] = r->b[a][g];
			}
		}
		out->spills += r->spills;
	}
	/* in the spec's order, as one device returns them */
	sc->groups.n = ngroups;
	if (!gj_agg_groups_sort(&sc->groups, &sc->order))
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate host memory to sort %lld groups.",
							(long long) ngroups);
	spills = out->spills;
	gj_agg_groups_result(&sc->groups, &sc->order, spills, out);
	return GJ_OK;
}

/* ----------------------------------------------------------------
 *		Shared builds
 * ----------------------------------------------------------------
 */

static GjStatus
SpreadShare(GjContext **ctx, SpreadContext *built, GjError *err)
{
	SpreadContext *sc;

	if (!built->has_build)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The context to share has not built.");
	GJ_TRY(SpreadAlloc(&sc, built->base, &built->spec, err));
	for (int d = 0; d < sc->n; d++)
	{
		GjStatus	status = built->base->context_share(&sc->sub[d], built->sub[d], err);

		if (status != GJ_OK)
		{
			SpreadDestroy((GjContext *) sc);
			return status;
		}
	}
	sc->build_of = built->build_of != NULL ? built->build_of : built;
	sc->has_build = true;
	*ctx = (GjContext *) sc;
	return GJ_OK;
}

/* ----------------------------------------------------------------
 *		The tables: a spread context, or the base's own
 * ----------------------------------------------------------------
 */

#define SPREAD_OR_BASE(base, ctx, err, spread_call, base_call) \
	do { \
		if (IsSpread(ctx)) \
		{ \
			SpreadContext *sc_ = SpreadGet((GjContext *) (ctx), (err)); \
			return sc_ == NULL ? GJ_ERROR_INVALID_ARGUMENT : (spread_call); \
		} \
		return (base_call); \
	} while (0)

#define SPREAD_TABLE(prefix, basetable, tablename) \
static GjStatus \
prefix##_create(GjContext **ctx, const GjJoinSpec *spec, GjError *err) \
{ \
	return SpreadCreate(&basetable, ctx, spec, err); \
} \
static void \
prefix##_destroy(GjContext *ctx) \
{ \
	if (IsSpread(ctx)) \
		SpreadDestroy(ctx); \
	else \
		basetable.context_destroy(ctx); \
} \
static void \
prefix##_stats(const GjContext *ctx, GjStats *stats) \
{ \
	if (IsSpread(ctx)) \
		SpreadStats((const SpreadContext *) ctx, stats); \
	else \
		basetable.context_stats(ctx, stats); \
} \
static GjStatus \
prefix##_build(GjContext *ctx, const GjBatch *inner, GjError *err) \
{ \
	SPREAD_OR_BASE(basetable, ctx, err, SpreadBuild(sc_, inner, err), \
				   basetable.build(ctx, inner, err)); \
} \
static GjStatus \
prefix##_build_parts(GjContext *ctx, const GjBatch *parts, int nparts, GjError *err) \
{ \
	SPREAD_OR_BASE(basetable, ctx, err, SpreadBuildParts(sc_, parts, nparts, err), \
				   basetable.build_parts(ctx, parts, nparts, err)); \
} \
static GjStatus \
prefix##_count(GjContext *ctx, const GjBatch *outer, int64_t *nmatches, GjError *err) \
{ \
	SPREAD_OR_BASE(basetable, ctx, err, SpreadCount(sc_, outer, nmatches, err), \
				   basetable.count(ctx, outer, nmatches, err)); \
} \
static GjStatus \
prefix##_retrieve(GjContext *ctx, int64_t first, GjMatchRound *round, GjError *err) \
{ \
	SPREAD_OR_BASE(basetable, ctx, err, SpreadRetrieve(sc_, first, round, err), \
				   basetable.retrieve(ctx, first, round, err)); \
} \
static GjStatus \
prefix##_heap_deform(GjContext *ctx, const struct GjPageBatch *pages, \
					 const struct GjDeformSpec *spec, int64_t first, int64_t n, \
					 struct GjDeformOut *out, GjError *err) \
{ \
	SPREAD_OR_BASE(basetable, ctx, err, \
				   basetable.heap_deform(sc_->sub[0], pages, spec, first, n, out, err), \
				   basetable.heap_deform(ctx, pages, spec, first, n, out, err)); \
} \
static GjStatus \
prefix##_heap_deform_start(GjContext *ctx, const struct GjPageBatch *pages, \
						   const struct GjDeformSpec *spec, int64_t first, int64_t n, \
						   struct GjDeformOut *out, GjError *err) \
{ \
	SPREAD_OR_BASE(basetable, ctx, err, \
				   basetable.heap_deform_start(sc_->sub[0], pages, spec, first, n, out, err), \
				   basetable.heap_deform_start(ctx, pages, spec, first, n, out, err)); \
} \
static GjStatus \
prefix##_heap_deform_finish(GjContext *ctx, GjError *err) \
{ \
	SPREAD_OR_BASE(basetable, ctx, err, basetable.heap_deform_finish(sc_->sub[0], err), \
				   basetable.heap_deform_finish(ctx, err)); \
} \
static void * \
prefix##_stage_alloc(size_t bytes) \
{ \
	return basetable.stage_alloc(bytes); \
} \
static void \
prefix##_stage_free(void *ptr) \
{ \
	basetable.stage_free(ptr); \
} \
static GjStatus \
prefix##_agg_begin(GjContext *ctx, const GjAggSpec *spec, GjError *err) \
{ \
	SPREAD_OR_BASE(basetable, ctx, err, SpreadAggBegin(sc_, spec, err), \
				   basetable.agg_begin(ctx, spec, err)); \
} \
static GjStatus \
prefix##_aggregate(GjContext *ctx, int64_t first, int64_t *nmatches, \
				   int64_t *undecided, GjError *err) \
{ \
	SPREAD_OR_BASE(basetable, ctx, err, \
				   SpreadAggregate(sc_, first, nmatches, undecided, err), \
				   basetable.aggregate(ctx, first, nmatches, undecided, err)); \
} \
static GjStatus \
prefix##_agg_result(GjContext *ctx, GjAggResult *out, GjError *err) \
{ \
	SPREAD_OR_BASE(basetable, ctx, err, SpreadAggResult(sc_, out, err), \
				   basetable.agg_result(ctx, out, err)); \
} \
static GjStatus \
prefix##_share(GjContext **ctx, GjContext *built, GjError *err) \
{ \
	if (ctx != NULL) \
		*ctx = NULL; \
	if (ctx == NULL) \
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, \
							"No place to return the context was given."); \
	SPREAD_OR_BASE(basetable, built, err, SpreadShare(ctx, sc_, err), \
				   basetable.context_share(ctx, built, err)); \
} \
static GjStatus \
prefix##_exchange_send(GjContext *ctx, const GjBatch *side, bool inner, int64_t start, \
					   int64_t end, int ndevices, GjExchange *sent, GjError *err) \
{ \
	if (IsSpread(ctx)) \
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, \
							"A join spread over devices does not exchange rows itself."); \
	return basetable.exchange_send(ctx, side, inner, start, end, ndevices, sent, err); \
} \
static GjStatus \
prefix##_exchange_receive(GjContext *ctx, const GjExchange *sent, int nsent, int self, \
						  GjExchange *part, GjError *err) \
{ \
	if (IsSpread(ctx)) \
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, \
							"A join spread over devices does not exchange rows itself."); \
	return basetable.exchange_receive(ctx, sent, nsent, self, part, err); \
} \
static void \
prefix##_exchange_free(GjExchange *x) \
{ \
	basetable.exchange_free(x); \
} \
static const GjKernels tablename = { \
	"spread " #prefix, \
	prefix##_create, \
	prefix##_destroy, \
	prefix##_stats, \
	prefix##_build, \
	prefix##_count, \
	prefix##_retrieve, \
	prefix##_heap_deform, \
	prefix##_heap_deform_start, \
	prefix##_heap_deform_finish, \
	prefix##_stage_alloc, \
	prefix##_stage_free, \
	prefix##_agg_begin, \
	prefix##_aggregate, \
	prefix##_agg_result, \
	prefix##_share, \
	prefix##_exchange_send, \
	prefix##_exchange_receive, \
	prefix##_exchange_free, \
	prefix##_retrieve,			/* rounds in the host: retrieve_device */ \
	prefix##_build_parts, \
	NULL,						/* hand_down: the chain's own */ \
	NULL,						/* pack_keys: no chain over a spread */ \
	NULL,						/* pages_kept: its deform reads every page */ \
}

SPREAD_TABLE(cpu, gj_cpu_kernels, spread_cpu_kernels);
#ifdef GPUJOIN_WITH_CUDA
SPREAD_TABLE(cuda, gj_cuda_kernels, spread_cuda_kernels);
#endif

const GjKernels *
gj_spread_kernels(const GjKernels *base)
{
	if (base == &gj_cpu_kernels)
		return &spread_cpu_kernels;
#ifdef GPUJOIN_WITH_CUDA
	if (base == &gj_cuda_kernels)
		return &spread_cuda_kernels;
#endif
	return NULL;
}
