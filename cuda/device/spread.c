/*-------------------------------------------------------------------------
 *
 * spread.c
 *	  One join spread over several devices: a kernel table over a context
 *	  of the base table per device (gpujoin_kernels.h, SEVERAL DEVICES)
 *
 * A spread context holds one context of the base kernels (the CPU twin or
 * CUDA) per device, each created for the join's spec with one device, and
 * hands each its share: BROADCAST gives every device the whole inner side
 * and a slice of each chunk; PARTITION gathers the rows of both sides on
 * the host into one side per device, by gj_spread_device of their keys,
 * with threads over ranges of rows (as many as the cores, up to 16)
 * (the host is the exchange: a device-to-device exchange over peer links,
 * as MG-Join does (Paul et al. 2021, section 3), is not built yet).  The
 * devices build and count at once, each in a thread of its own (this
 * thread takes device 0); a round comes from one device at a time, its
 * values where that device's context put them (so a round's arrays move
 * from one device's to the next's), its row numbers turned back into the
 * whole sides' in arrays of the spread context.
 *
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

#define GJ_SPREAD_MAGIC		0x53505244	/* "SPRD" */

/* Threads that gather a side's partitions, and the rows one takes at least */
#define SPREAD_MAX_THREADS	16
#define SPREAD_THREAD_ROWS	65536

/* One device's rows of one side, gathered from the whole side (PARTITION) */
typedef struct SpreadPart
{
	int64_t		nrows;
	int64_t		capacity;
	uint64_t   *keys;
	GjRowId    *rows;			/* per row, its row in the whole side */
	void	   *values[GJ_MAX_COLUMNS];
	uint8_t    *nulls[GJ_MAX_COLUMNS];	/* allocated for every column; given
										 * to the device only where the side
										 * had NULL flags */
	GjColumn	columns[GJ_MAX_COLUMNS];
} SpreadPart;

typedef struct SpreadContext
{
	uint32_t	magic;
	const GjKernels *base;
	GjJoinSpec	spec;
	int			n;				/* devices */
	GjContext  *sub[GJ_MAX_DEVICES];
	const struct SpreadContext *build_of;	/* whose inner parts (shared) */

	bool		has_build;
	SpreadPart	inner[GJ_MAX_DEVICES];	/* PARTITION */
	SpreadPart	outer[GJ_MAX_DEVICES];

	/* the counted chunk: BROADCAST's slices, and each device's matches
	 * numbered from first[d] */
	bool		counted;
	int64_t		slice[GJ_MAX_DEVICES + 1];
	int64_t		first[GJ_MAX_DEVICES + 1];

	/* the round handed out: the device's own, its row numbers turned back
	 * into the whole sides' here */
	GjRowId    *round_rows[2];

	/* every device's groups, one after another */
	int32_t		nkeys;
	int32_t		naggs;
	int64_t		groups_capacity;
	int64_t    *group_keys[GJ_AGG_MAX_KEYS];
	uint8_t    *group_key_nulls[GJ_AGG_MAX_KEYS];
	int64_t    *group_words[3][GJ_AGG_MAX_AGGS];

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
	SPREAD_BUILD,
	SPREAD_COUNT
} SpreadOp;

typedef struct SpreadTask
{
	SpreadContext *sc;
	int			device;
	SpreadOp	op;
	GjBatch		batch;
	GjColumn	columns[GJ_MAX_COLUMNS];
	int64_t		nmatches;
	GjStatus	status;
	GjError		err;
} SpreadTask;

static void *
TaskMain(void *arg)
{
	SpreadTask *t = (SpreadTask *) arg;
	const GjKernels *k = t->sc->base;
	GjContext  *ctx = t->sc->sub[t->device];

	memset(&t->err, 0, sizeof(t->err));
	t->nmatches = 0;
	if (t->op == SPREAD_BUILD)
		t->status = k->build(ctx, &t->batch, &t->err);
	else
		t->status = k->count(ctx, &t->batch, &t->nmatches, &t->err);
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

/* Run the tasks, one per device, at once; the first failure (by device) is
 * the answer */
static GjStatus
RunTasks(SpreadContext *sc, SpreadTask *tasks, GjError *err)
{
	RunThreads(TaskMain, tasks, sizeof(SpreadTask), sc->n);
	for (int d = 0; d < sc->n; d++)
	{
		if (tasks[d].status != GJ_OK)
		{
			if (err != NULL)
				*err = tasks[d].err;
			return tasks[d].status;
		}
	}
	return GJ_OK;
}

/* ----------------------------------------------------------------
 *		The shares of a side
 * ----------------------------------------------------------------
 */

static bool
RowHasNullKey(const GjBatch *batch, int64_t row)
{
	return batch->nulls != NULL && batch->nulls[row] != 0;
}

/* Bytes of one row of a side the devices get: key(s), values, NULL flags */
static int64_t
RowBytes(const GjJoinSpec *spec, GjSide side, const GjBatch *batch)
{
	int			ncolumns = gj_side_ncolumns(spec, side);
	const int32_t *widths = gj_side_widths(spec, side);
	int64_t		bytes = spec->variant == GJ_VARIANT_NLJ ?
		(int64_t) sizeof(uint64_t) * spec->nterms : (int64_t) sizeof(uint64_t);

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

static void
FreePart(SpreadPart *part)
{
	free(part->keys);
	free(part->rows);
	for (int c = 0; c < GJ_MAX_COLUMNS; c++)
	{
		free(part->values[c]);
		free(part->nulls[c]);
	}
	memset(part, 0, sizeof(*part));
}

/* Room for nrows rows in part, its arrays grow-only */
static GjStatus
ReservePart(SpreadPart *part, const GjJoinSpec *spec, GjSide side,
			int64_t nrows, GjError *err)
{
	int			ncolumns = gj_side_ncolumns(spec, side);
	const int32_t *widths = gj_side_widths(spec, side);
	size_t		n;

	if (nrows <= part->capacity && part->keys != NULL)
		return GJ_OK;
	n = (size_t) (nrows > 0 ? nrows : 1);
	FreePart(part);
	part->keys = malloc(n * sizeof(uint64_t));
	part->rows = malloc(n * sizeof(GjRowId));
	if (part->keys == NULL || part->rows == NULL)
		goto oom;
	for (int c = 0; c < ncolumns; c++)
	{
		part->values[c] = malloc(n * (size_t) widths[c]);
		part->nulls[c] = malloc(n);
		if (part->values[c] == NULL || part->nulls[c] == NULL)
			goto oom;
	}
	part->capacity = (int64_t) n;
	return GJ_OK;

oom:
	FreePart(part);
	return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
						"Could not allocate host memory for %lld %s rows of one device.",
						(long long) nrows, gj_side_name(side));
}

/* PARTITION: one thread's rows of a side, gathered into the devices' parts */
typedef struct GatherRange
{
	const SpreadContext *sc;
	GjSide		side;
	const GjBatch *batch;
	SpreadPart *parts;
	uint8_t    *device;			/* per row of the side: its device, or
								 * UINT8_MAX for a NULL key */
	int64_t		start;
	int64_t		end;
	bool		scatter;		/* the second pass */
	int64_t		next[GJ_MAX_DEVICES];	/* pass 1: the range's rows per
										 * device; pass 2: where its next
										 * row goes in each part */
} GatherRange;

/*
 * Pass 1: each row's device, and how many rows of the range go to each.
 * Pass 2: each row's key, row number and payload into its device's part,
 * at the range's place there (so each part keeps the side's order).
 */
static void *
GatherMain(void *arg)
{
	GatherRange *g = (GatherRange *) arg;
	const GjBatch *batch = g->batch;
	int			ncolumns = gj_side_ncolumns(&g->sc->spec, g->side);
	const int32_t *widths = gj_side_widths(&g->sc->spec, g->side);

	for (int64_t r = g->start; r < g->end; r++)
	{
		SpreadPart *p;
		int64_t		i;

		if (!g->scatter)
		{
			g->device[r] = RowHasNullKey(batch, r) ? UINT8_MAX :
				(uint8_t) gj_spread_device(batch->keys[r], g->sc->n);
			if (g->device[r] != UINT8_MAX)
				g->next[g->device[r]]++;
			continue;
		}
		if (g->device[r] == UINT8_MAX)
			continue;
		p = &g->parts[g->device[r]];
		i = g->next[g->device[r]]++;
		p->keys[i] = batch->keys[r];
		p->rows[i] = (GjRowId) r;
		for (int c = 0; c < ncolumns; c++)
		{
			switch (widths[c])
			{
				case 8:
					((uint64_t *) p->values[c])[i] = ((const uint64_t *) batch->columns[c].values)[r];
					break;
				case 4:
					((uint32_t *) p->values[c])[i] = ((const uint32_t *) batch->columns[c].values)[r];
					break;
				case 2:
					((uint16_t *) p->values[c])[i] = ((const uint16_t *) batch->columns[c].values)[r];
					break;
				default:
					((uint8_t *) p->values[c])[i] = ((const uint8_t *) batch->columns[c].values)[r];
					break;
			}
			if (batch->columns[c].nulls != NULL)
				p->nulls[c][i] = batch->columns[c].nulls[r];
		}
	}
	return NULL;
}

/*
 * PARTITION: gather a side's rows with a non-NULL key into one part per
 * device, in their order, by threads over ranges of rows (two passes:
 * count, then scatter), and make each part a batch
 */
static GjStatus
PartitionSide(SpreadContext *sc, GjSide side, const GjBatch *batch,
			  SpreadPart *parts, GjBatch *out, GjError *err)
{
	const GjJoinSpec *spec = &sc->spec;
	int			ncolumns = gj_side_ncolumns(spec, side);
	GatherRange ranges[SPREAD_MAX_THREADS];
	int64_t		totals[GJ_MAX_DEVICES];
	long		cores = sysconf(_SC_NPROCESSORS_ONLN);
	int			nthreads = (int) (batch->nrows / SPREAD_THREAD_ROWS);
	uint8_t    *device;
	int64_t		moved = 0;

	if (nthreads > cores)
		nthreads = (int) cores;
	if (nthreads > SPREAD_MAX_THREADS)
		nthreads = SPREAD_MAX_THREADS;
	if (nthreads < 1)
		nthreads = 1;
	device = malloc((size_t) (batch->nrows > 0 ? batch->nrows : 1));
	if (device == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate host memory to partition %lld %s rows.",
							(long long) batch->nrows, gj_side_name(side));
	memset(ranges, 0, sizeof(ranges));
	for (int t = 0; t < nthreads; t++)
	{
		ranges[t].sc = sc;
		ranges[t].side = side;
		ranges[t].batch = batch;
		ranges[t].parts = parts;
		ranges[t].device = device;
		ranges[t].start = batch->nrows * t / nthreads;
		ranges[t].end = batch->nrows * (t + 1) / nthreads;
	}
	RunThreads(GatherMain, ranges, sizeof(GatherRange), nthreads);

	/* each part's room, and each range's place in it */
	memset(totals, 0, sizeof(totals));
	for (int t = 0; t < nthreads; t++)
		for (int d = 0; d < sc->n; d++)
		{
			int64_t		n = ranges[t].next[d];

			ranges[t].next[d] = totals[d];
			totals[d] += n;
		}
	for (int d = 0; d < sc->n; d++)
	{
		GjStatus	status = ReservePart(&parts[d], spec, side, totals[d], err);

		if (status != GJ_OK)
		{
			free(device);
			return status;
		}
		parts[d].nrows = totals[d];
	}
	for (int t = 0; t < nthreads; t++)
		ranges[t].scatter = true;
	RunThreads(GatherMain, ranges, sizeof(GatherRange), nthreads);
	free(device);

	for (int d = 0; d < sc->n; d++)
	{
		SpreadPart *p = &parts[d];

		for (int c = 0; c < ncolumns; c++)
		{
			p->columns[c].values = p->values[c];
			p->columns[c].nulls = batch->columns[c].nulls != NULL ? p->nulls[c] : NULL;
		}
		memset(&out[d], 0, sizeof(GjBatch));
		out[d].keys = p->keys;
		out[d].nrows = p->nrows;
		out[d].columns = p->columns;
		moved += p->nrows;
	}
	sc->bytes_exchanged += moved * RowBytes(spec, side, batch);
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
		sc->base->context_destroy(sc->sub[d]);
		FreePart(&sc->inner[d]);
		FreePart(&sc->outer[d]);
	}
	for (int s = 0; s < 2; s++)
		free(sc->round_rows[s]);
	for (int k = 0; k < GJ_AGG_MAX_KEYS; k++)
	{
		free(sc->group_keys[k]);
		free(sc->group_key_nulls[k]);
	}
	for (int w = 0; w < 3; w++)
		for (int a = 0; a < GJ_AGG_MAX_AGGS; a++)
			free(sc->group_words[w][a]);
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
	for (int s = 0; s < 2 && spec->row_ids; s++)
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
#undef SLOWEST
		if (d == 0)
			memcpy(stats->detail, one.detail, sizeof(stats->detail));
	}
	stats->ndevices = sc->n;
	memcpy(stats->device_rows, sc->device_rows, sizeof(sc->device_rows));
	memcpy(stats->device_matches, sc->device_matches, sizeof(sc->device_matches));
	stats->bytes_exchanged = sc->bytes_exchanged;
}

static GjStatus
SpreadBuild(SpreadContext *sc, const GjBatch *inner, GjError *err)
{
	SpreadTask	tasks[GJ_MAX_DEVICES];
	GjBatch		parts[GJ_MAX_DEVICES];
	GjStatus	status;

	if (sc->build_of != NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A context that shares a build cannot build.");
	if (inner == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, "No inner side was given.");
	sc->has_build = false;
	sc->counted = false;
	if (sc->spec.spread == GJ_SPREAD_PARTITION)
		GJ_TRY(PartitionSide(sc, GJ_SIDE_INNER, inner, sc->inner, parts, err));
	else
		sc->bytes_exchanged += (sc->n - 1) * inner->nrows *
			RowBytes(&sc->spec, GJ_SIDE_INNER, inner);

	memset(tasks, 0, sizeof(tasks));
	for (int d = 0; d < sc->n; d++)
	{
		tasks[d].sc = sc;
		tasks[d].device = d;
		tasks[d].op = SPREAD_BUILD;
		tasks[d].batch = sc->spec.spread == GJ_SPREAD_PARTITION ? parts[d] : *inner;
		sc->device_rows[d] += tasks[d].batch.nrows;
	}
	status = RunTasks(sc, tasks, err);
	if (status == GJ_OK)
		sc->has_build = true;
	return status;
}

static GjStatus
SpreadCount(SpreadContext *sc, const GjBatch *outer, int64_t *nmatches,
			GjError *err)
{
	SpreadTask	tasks[GJ_MAX_DEVICES];
	GjBatch		parts[GJ_MAX_DEVICES];
	GjStatus	status;

	sc->counted = false;
	if (outer == NULL || nmatches == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No outer chunk or no place for its count was given.");
	if (!sc->has_build)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"count was called before a build.");
	if (sc->spec.spread == GJ_SPREAD_PARTITION)
		GJ_TRY(PartitionSide(sc, GJ_SIDE_OUTER, outer, sc->outer, parts, err));

	memset(tasks, 0, sizeof(tasks));
	for (int d = 0; d < sc->n; d++)
	{
		tasks[d].sc = sc;
		tasks[d].device = d;
		tasks[d].op = SPREAD_COUNT;
		sc->slice[d] = outer->nrows * d / sc->n;
		sc->slice[d + 1] = outer->nrows * (d + 1) / sc->n;
		if (sc->spec.spread == GJ_SPREAD_PARTITION)
			tasks[d].batch = parts[d];
		else
			SliceBatch(&sc->spec, GJ_SIDE_OUTER, outer, sc->slice[d], sc->slice[d + 1],
					   &tasks[d].batch, tasks[d].columns);
	}
	status = RunTasks(sc, tasks, err);
	if (status != GJ_OK)
		return status;
	sc->first[0] = 0;
	for (int d = 0; d < sc->n; d++)
	{
		sc->first[d + 1] = sc->first[d] + tasks[d].nmatches;
		sc->device_rows[d] += tasks[d].batch.nrows;
		sc->device_matches[d] += tasks[d].nmatches;
	}
	sc->counted = true;
	*nmatches = sc->first[sc->n];
	return GJ_OK;
}

/* The device whose matches match "first" is among, or n past the end */
static int
DeviceOfMatch(const SpreadContext *sc, int64_t first)
{
	for (int d = 0; d < sc->n; d++)
	{
		if (first < sc->first[d + 1])
			return d;
	}
	return sc->n;
}

/*
 * Matches first .. of the counted chunk, from the one device they lie on:
 * the round ends at that device's last match
 */
static GjStatus
SpreadRetrieve(SpreadContext *sc, int64_t first, GjMatchRound *round, GjError *err)
{
	const GjJoinSpec *spec = &sc->spec;
	GjMatchRound one;
	int			d;

	if (round == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, "No round was given.");
	if (!sc->counted)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"retrieve was called before a count.");
	if (first < 0 || first > sc->first[sc->n])
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The first match %lld is outside the chunk's %lld.",
							(long long) first, (long long) sc->first[sc->n]);
	d = DeviceOfMatch(sc, first);
	memset(&one, 0, sizeof(one));
	if (d < sc->n)
		GJ_TRY(sc->base->retrieve(sc->sub[d], first - sc->first[d], &one, err));
	else
		GJ_TRY(sc->base->retrieve(sc->sub[sc->n - 1],
								  sc->first[sc->n] - sc->first[sc->n - 1], &one, err));

	memset(round, 0, sizeof(*round));
	round->nmatches = d < sc->n ? one.nmatches : 0;
	if (spec->row_ids)
	{
		GjRowId    *outer_rows = sc->round_rows[0];
		GjRowId    *inner_rows = sc->round_rows[1];

		if (spec->spread == GJ_SPREAD_PARTITION)
		{
			const GjRowId *outer_map = sc->outer[d].rows;
			const GjRowId *inner_map = sc->build_of != NULL ?
				sc->build_of->inner[d].rows : sc->inner[d].rows;

			for (int64_t m = 0; m < round->nmatches; m++)
			{
				outer_rows[m] = outer_map[one.outer_rows[m]];
				inner_rows[m] = inner_map[one.inner_rows[m]];
			}
		}
		else
		{
			GjRowId		offset = d < sc->n ? (GjRowId) sc->slice[d] : 0;

			for (int64_t m = 0; m < round->nmatches; m++)
				outer_rows[m] = one.outer_rows[m] + offset;
			memcpy(inner_rows, one.inner_rows, (size_t) round->nmatches * sizeof(GjRowId));
		}
		round->outer_rows = outer_rows;
		round->inner_rows = inner_rows;
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
	for (int d = 0; d < sc->n; d++)
		GJ_TRY(sc->base->agg_begin(sc->sub[d], spec, err));
	sc->nkeys = spec->nkeys;
	sc->naggs = spec->naggs;
	return GJ_OK;
}

static GjStatus
SpreadAggregate(SpreadContext *sc, int64_t first, int64_t *nmatches,
				int64_t *undecided, GjError *err)
{
	int			d;

	if (!sc->counted)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"aggregate was called before a count.");
	d = DeviceOfMatch(sc, first);
	if (d >= sc->n)
		d = sc->n - 1;			/* past the end: that device says so */
	return sc->base->aggregate(sc->sub[d], first - sc->first[d], nmatches, undecided, err);
}

/* Room for ngroups groups in the result's arrays, grow-only */
static GjStatus
ReserveGroups(SpreadContext *sc, int64_t ngroups, GjError *err)
{
	size_t		n;

	if (ngroups <= sc->groups_capacity)
		return GJ_OK;
	n = (size_t) ngroups;
	for (int k = 0; k < sc->nkeys; k++)
	{
		int64_t    *keys = realloc(sc->group_keys[k], n * sizeof(int64_t));
		uint8_t    *nulls;

		if (keys == NULL)
			goto oom;
		sc->group_keys[k] = keys;
		if ((nulls = realloc(sc->group_key_nulls[k], n)) == NULL)
			goto oom;
		sc->group_key_nulls[k] = nulls;
	}
	for (int w = 0; w < 3; w++)
		for (int a = 0; a < sc->naggs; a++)
		{
			int64_t    *words = realloc(sc->group_words[w][a], n * sizeof(int64_t));

			if (words == NULL)
				goto oom;
			sc->group_words[w][a] = words;
		}
	sc->groups_capacity = ngroups;
	return GJ_OK;

oom:
	return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
						"Could not allocate host memory for %lld groups.",
						(long long) ngroups);
}

static GjStatus
SpreadAggResult(SpreadContext *sc, GjAggResult *out, GjError *err)
{
	GjAggResult one[GJ_MAX_DEVICES];
	int64_t		total = 0;
	int64_t		g = 0;

	if (out == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, "No place for the groups was given.");
	/* the devices' arrays stay valid until their next call: none comes */
	for (int d = 0; d < sc->n; d++)
	{
		GJ_TRY(sc->base->agg_result(sc->sub[d], &one[d], err));
		total += one[d].ngroups;
	}
	GJ_TRY(ReserveGroups(sc, total > 0 ? total : 1, err));
	memset(out, 0, sizeof(*out));
	for (int d = 0; d < sc->n; d++)
	{
		int64_t		n = one[d].ngroups;

		for (int k = 0; k < sc->nkeys; k++)
		{
			memcpy(sc->group_keys[k] + g, one[d].keys[k], (size_t) n * sizeof(int64_t));
			if (one[d].key_nulls[k] != NULL)
				memcpy(sc->group_key_nulls[k] + g, one[d].key_nulls[k], (size_t) n);
			else
				memset(sc->group_key_nulls[k] + g, 0, (size_t) n);
		}
		for (int a = 0; a < sc->naggs; a++)
		{
			memcpy(sc->group_words[0][a] + g, one[d].n[a], (size_t) n * sizeof(int64_t));
			memcpy(sc->group_words[1][a] + g, one[d].a[a], (size_t) n * sizeof(int64_t));
			memcpy(sc->group_words[2][a] + g, one[d].b[a], (size_t) n * sizeof(int64_t));
		}
		g += n;
		out->spills += one[d].spills;
	}
	out->ngroups = total;
	for (int k = 0; k < sc->nkeys; k++)
	{
		out->keys[k] = sc->group_keys[k];
		out->key_nulls[k] = sc->group_key_nulls[k];
	}
	for (int a = 0; a < sc->naggs; a++)
	{
		out->n[a] = sc->group_words[0][a];
		out->a[a] = sc->group_words[1][a];
		out->b[a] = sc->group_words[2][a];
	}
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
