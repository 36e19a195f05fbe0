/*-------------------------------------------------------------------------
 *
 * bench_grid.c
 *	  The kernel benchmark grid: every variant and materialization over
 *	  shapes, payload columns, match ratios and FK skew, against the
 *	  memory-bandwidth bound (make -C cuda bench-grid)
 *
 * WHAT IS MEASURED
 *
 * Each of NPHJ, PHJ and SMJ, with GFTR and with GFUR ("PHJ-TR", "PHJ-UR",
 * ...: Wu et al. 2025, §5.1.3), on the CUDA kernels, over this grid (2^N
 * rows, N = --log2-rows, 27 by default):
 *
 *	  shape			"equal": |R| = |S| = 2^N; "pk-fk": |R| = 2^(N-1),
 *					|S| = 2^N, the paper's |S| = 2|R| (Wu et al. 2025,
 *					§5.1.5).  R is the inner side, built on; its keys
 *					are unique (the PK)
 *	  payloads		1, 2 or 4 int4 payload columns on each side
 *	  match ratio	10, 50 or 100 % of the outer rows find their one match
 *	  Zipf			the FK (outer keys that match) uniform over the inner
 *					keys (0) or Zipf-distributed over them (1)
 *
 * Keys are SQL int4 values, normalized as src/keys.c GpuJoinPackKeys does
 * for one exact 32-bit field (the sign bit flipped, 32 bits wide).  The
 * inner side holds the even values 0, 2, .., 2(|R| - 1) in a pseudo-random
 * order; an outer row that is to match draws an inner key (uniformly, or
 * from a Zipf CDF over the inner keys, hottest keys at random rows), one
 * that is not draws an odd value of the same range: absent keys sit
 * between present ones, so no variant can discard them by range alone
 * (SMJ leaves outer keys outside the inner [min, max] out of its sort, and
 * NPHJ's dense table rejects them without a look), and NPHJ still sees
 * the dense key range of a serial PK.  The outer rows that match at 10 %
 * also match at 50 % and 100 % (one uniform draw per row against the
 * ratio), so the match counts are known in advance and checked.
 *
 * HOW
 *
 * One context per (shape, payloads, variant, materialization), created
 * with memory_limit 0 (what the device has free) and max_matches = |S|
 * (every match of a PK-FK join in one round), then reused for each data
 * set of that block, as the extension reuses a context over chunks.  Per
 * data set: a warm-up run, then --runs timed runs (3 by default); a run
 * builds on the whole inner side as one batch, counts the whole outer side
 * as ONE chunk and retrieves every match.  The phases come from GjStats
 * (the differences over the run): build_ms, probe_ms (count),
 * materialize_ms (retrieve), each the wall clock of its calls less the
 * copies in them, and transfer_ms, the copies; device time is the sum of
 * the three phases, and the run with the median device time is reported.
 *
 * Against the bound: the fewest bytes a join must move in device memory
 * are each input read once (8 key bytes and 4 bytes a payload column, both
 * sides, every row) and each output value written once (the payload bytes
 * of both sides, per match); over the device-to-device copy bandwidth
 * measured here (one large cudaMemcpy, bytes read plus bytes written)
 * they give bound_ms, and bound_ms / device_ms is the "% of bound".  Join
 * throughput is (|R| + |S|) / device time, as the paper counts it
 * (Wu et al. 2025, §5.1.2).
 *
 * Checks: the match count of every run equals the count known from the
 * data, and the six variant x materialization runs of one data set return
 * the same multiset of (outer values, inner values) tuples: the checksum,
 * a sum of one hash per match, does not depend on their order, which does
 * differ between variants.  Any difference prints MISMATCH and the program
 * exits 1 (after writing its files).
 *
 * From the grid it derives the GFTR/GFUR crossover per variant and shape
 * (uniform FK): the lowest measured match ratio from which GFTR is
 * faster at every higher ratio, for each payload count, with the linear
 * interpolation of the break-even between grid points, and the fewest
 * payload columns at which GFTR wins at 100 %: the constants the cost
 * model will use.
 *
 * The host arrays are generated in parallel (pthreads, counter-based
 * random numbers, so the data does not depend on the thread count) and
 * page-locked with cudaHostRegister (unless --pageable), so that the
 * uploads, which are not device time, take as little of the run as they
 * can; transfer_ms is then the bus's best case.  --budget-s bounds the
 * run: the grid runs in order of importance and the joins that would not
 * fit are left out and listed as such.  A configuration that fails with
 * GJ_ERROR_DEVICE_MEMORY is recorded as such and the grid goes on.
 *
 * Without a GPU the program refuses to run, unless --cpu is given: a smoke
 * test of the program on the CPU twin (with host memcpy bandwidth as the
 * "copy bandwidth"), e.g. --cpu --log2-rows 16 --quick.
 *
 * IDENTIFICATION
 *	  bench/kernels/bench_grid.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "gpujoin_kernels.h"

#ifdef GPUJOIN_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

/*
 * THE GRID
 */

#define MAX_PAYLOADS	4
#define NUM_MATCH_RATIOS 3
#define NUM_ZIPFS		2
#define NUM_SHAPES		2
#define NUM_JOINS		6		/* variant x materialization */

static const double match_ratios[NUM_MATCH_RATIOS] = {0.10, 0.50, 1.00};
static const double zipfs[NUM_ZIPFS] = {0.0, 1.0};

typedef enum Shape
{
	SHAPE_EQUAL = 0,			/* |R| = |S| */
	SHAPE_PKFK					/* |S| = 2 |R| */
} Shape;

static const char *const shape_names[NUM_SHAPES] = {"equal", "pk-fk"};

/* The six joins, in the order they are run and shown */
typedef struct Join
{
	GjVariant	variant;
	GjMaterialize materialize;
	const char *name;			/* the paper's: "PHJ-TR" is PHJ with GFTR */
} Join;

static const Join joins[NUM_JOINS] = {
	{GJ_VARIANT_NPHJ, GJ_MATERIALIZE_GFTR, "NPHJ-TR"},
	{GJ_VARIANT_NPHJ, GJ_MATERIALIZE_GFUR, "NPHJ-UR"},
	{GJ_VARIANT_PHJ, GJ_MATERIALIZE_GFTR, "PHJ-TR"},
	{GJ_VARIANT_PHJ, GJ_MATERIALIZE_GFUR, "PHJ-UR"},
	{GJ_VARIANT_SMJ, GJ_MATERIALIZE_GFTR, "SMJ-TR"},
	{GJ_VARIANT_SMJ, GJ_MATERIALIZE_GFUR, "SMJ-UR"},
};

/*
 * A block of the grid: one shape and payload count (one context per join),
 * and the data sets run in it, as bit masks over zipfs[] and
 * match_ratios[]
 */
typedef struct Block
{
	Shape		shape;
	int			payloads;
	unsigned	zipf_mask;
	unsigned	ratio_mask;
} Block;

#define ALL_RATIOS	0x7u

/*
 * The full grid, most important first, so that a time budget cuts the
 * least important: the equal shape with uniform FK for every payload
 * count, Zipf 1 and the PK-FK shape at 2 payload columns, then the rest
 */
static const Block full_grid[] = {
	{SHAPE_EQUAL, 2, 0x3u, ALL_RATIOS},
	{SHAPE_EQUAL, 1, 0x1u, ALL_RATIOS},
	{SHAPE_EQUAL, 4, 0x1u, ALL_RATIOS},
	{SHAPE_PKFK, 2, 0x3u, ALL_RATIOS},
	{SHAPE_EQUAL, 1, 0x2u, ALL_RATIOS},
	{SHAPE_EQUAL, 4, 0x2u, ALL_RATIOS},
	{SHAPE_PKFK, 1, 0x3u, ALL_RATIOS},
	{SHAPE_PKFK, 4, 0x3u, ALL_RATIOS},
};

/* --quick: enough for every table, the crossover and the goal line */
static const Block quick_grid[] = {
	{SHAPE_EQUAL, 2, 0x3u, ALL_RATIOS},
	{SHAPE_EQUAL, 1, 0x1u, ALL_RATIOS},
	{SHAPE_PKFK, 2, 0x3u, 0x5u},
};

/* The issue's goal: PHJ-TR, equal shape at 2^27, 2 payloads, >= 40 % */
#define GOAL_LOG2_ROWS	27
#define GOAL_PAYLOADS	2
#define GOAL_PCT		40.0

/*
 * OPTIONS AND SHARED STATE
 */

typedef struct Options
{
	int			log2_rows;		/* --log2-rows: 2^N rows a side */
	int			runs;			/* --runs: timed runs per join */
	double		budget_s;		/* --budget-s: 0 = no limit */
	bool		quick;			/* --quick: the reduced grid */
	bool		cpu;			/* --cpu: the CPU twin, a smoke test */
	bool		pageable;		/* --pageable: no cudaHostRegister */
	const char *csv_path;
	const char *md_path;
} Options;

static Options opt = {27, 3, 0.0, false, false, false, NULL, NULL};
static int	nthreads = 1;
static double start_ms;			/* program start, for the budget */

static void *
Alloc(size_t bytes)
{
	void	   *ptr = malloc(bytes > 0 ? bytes : 1);

	if (ptr == NULL)
	{
		fprintf(stderr, "bench_grid: out of memory (%zu bytes)\n", bytes);
		exit(2);
	}
	return ptr;
}

static double
ElapsedSeconds(void)
{
	return (gj_clock_ms() - start_ms) / 1000.0;
}

/*
 * PARALLEL LOOPS
 *
 * A loop is cut into a fixed number of tasks, whatever the number of
 * threads, which take them from a shared counter: what a task computes
 * (a partial sum, say) then does not depend on the machine.
 */

#define NUM_TASKS	256

typedef void (*TaskFn) (int64_t task, void *arg);

typedef struct TaskPool
{
	TaskFn		fn;
	void	   *arg;
	int64_t		ntasks;
	int64_t		next;
} TaskPool;

static void *
TaskWorker(void *p)
{
	TaskPool   *pool = (TaskPool *) p;
	int64_t		task;

	while ((task = __atomic_fetch_add(&pool->next, 1, __ATOMIC_RELAXED)) < pool->ntasks)
		pool->fn(task, pool->arg);
	return NULL;
}

/* Run fn(0 .. ntasks-1, arg) on up to nthreads threads; returns when done */
static void
RunTasks(int64_t ntasks, TaskFn fn, void *arg)
{
	TaskPool	pool = {fn, arg, ntasks, 0};
	pthread_t	threads[64];
	int			nworkers = nthreads - 1;

	if (nworkers > ntasks - 1)
		nworkers = (int) (ntasks > 1 ? ntasks - 1 : 0);
	for (int t = 0; t < nworkers; t++)
	{
		if (pthread_create(&threads[t], NULL, TaskWorker, &pool) != 0)
		{
			nworkers = t;		/* run the rest with the threads we have */
			break;
		}
	}
	TaskWorker(&pool);
	for (int t = 0; t < nworkers; t++)
		pthread_join(threads[t], NULL);
}

/* Rows [*begin, *end) of task number task of NUM_TASKS over nrows rows */
static void
TaskRange(int64_t task, int64_t nrows, int64_t *begin, int64_t *end)
{
	*begin = task * nrows / NUM_TASKS;
	*end = (task + 1) * nrows / NUM_TASKS;
}

/*
 * RANDOM NUMBERS, PERMUTATIONS, KEYS
 */

#define GOLDEN		UINT64_C(0x9e3779b97f4a7c15)

/* The splitmix64 finalizer: a bijective 64-bit mix */
static inline uint64_t
Mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Number i of random stream "stream": counter-based, so any order works */
static inline uint64_t
RandomAt(uint64_t stream, uint64_t i)
{
	return Mix64(i * GOLDEN + Mix64(stream + 42));
}

/* Uniform in [0, n) */
static inline uint64_t
UniformBelow(uint64_t r, uint64_t n)
{
	return (uint64_t) (((unsigned __int128) r * n) >> 64);
}

/* Uniform in [0, 1), 53 bits */
static inline double
UnitInterval(uint64_t r)
{
	return (double) (r >> 11) * 0x1.0p-53;
}

/* The random streams */
enum
{
	STREAM_KEY_PERM = 1,		/* which inner row holds which key */
	STREAM_RANK_PERM,			/* which inner row the k-th hottest key is */
	STREAM_MATCH,				/* does an outer row match */
	STREAM_DRAW,				/* which inner key a matching row takes */
	STREAM_ABSENT,				/* which absent key one that does not */
	STREAM_VALUES				/* payload values: + 8 side + column */
};

/*
 * A pseudo-random permutation of [0, n): rounds of an odd multiply and an
 * xor-shift, each a bijection of b-bit values (n <= 2^b), and cycle walking
 * into [0, n) for an n that is not a power of two
 */
typedef struct Permutation
{
	uint64_t	n;
	uint64_t	mask;
	int			shift;
	uint64_t	mult[3];
	uint64_t	add[3];
} Permutation;

static void
PermutationInit(Permutation *p, uint64_t n, uint64_t stream)
{
	int			bits = 0;

	while (bits < 63 && (UINT64_C(1) << bits) < n)
		bits++;
	p->n = n;
	p->mask = (UINT64_C(1) << bits) - 1;
	p->shift = bits / 2 > 0 ? bits / 2 : 1;
	for (int r = 0; r < 3; r++)
	{
		p->mult[r] = RandomAt(stream, (uint64_t) (2 * r)) | 1;
		p->add[r] = RandomAt(stream, (uint64_t) (2 * r + 1));
	}
}

static inline uint64_t
PermutationAt(const Permutation *p, uint64_t i)
{
	uint64_t	x = i;

	do
	{
		for (int r = 0; r < 3; r++)
		{
			x = (x * p->mult[r] + p->add[r]) & p->mask;
			x ^= x >> p->shift;
		}
	} while (x >= p->n);
	return x;
}

/*
 * A single int4 join key, normalized as src/keys.c GpuJoinPackKeys does
 * for one exact field of 32 bits: the sign bit flipped (order-preserving),
 * 32 bits wide
 */
static inline uint64_t
PackInt4Key(int32_t value)
{
	return ((uint64_t) (int64_t) value ^ (UINT64_C(1) << 31)) & UINT64_C(0xFFFFFFFF);
}

/*
 * ZIPF
 *
 * P(rank k) ~ 1 / (k + 1)^s over n ranks: the CDF, computed once per
 * inner side, and a guide table of G = 2^g entries, guide[j] = the first
 * rank whose CDF exceeds j / G, so that a draw binary-searches only the
 * ranks between guide[j] and guide[j + 1] (Chen and Asau's method) and
 * not the whole CDF.
 */
typedef struct Zipf
{
	int64_t		n;
	double		s;
	double	   *cdf;
	int64_t		nguide;			/* a power of two: u * nguide is exact */
	int64_t    *guide;			/* nguide + 1 entries */
	double		task_sums[NUM_TASKS];
} Zipf;

static void
ZipfPartialSums(int64_t task, void *arg)
{
	Zipf	   *z = (Zipf *) arg;
	int64_t		begin,
				end;
	double		sum = 0.0;

	TaskRange(task, z->n, &begin, &end);
	for (int64_t k = begin; k < end; k++)
	{
		sum += z->s == 1.0 ? 1.0 / (double) (k + 1) : pow((double) (k + 1), -z->s);
		z->cdf[k] = sum;
	}
	z->task_sums[task] = sum;
}

static void
ZipfNormalize(int64_t task, void *arg)
{
	Zipf	   *z = (Zipf *) arg;
	int64_t		begin,
				end;
	double		offset = 0.0;
	double		total = 0.0;

	for (int t = 0; t < NUM_TASKS; t++)
	{
		if (t < task)
			offset += z->task_sums[t];
		total += z->task_sums[t];
	}
	TaskRange(task, z->n, &begin, &end);
	for (int64_t k = begin; k < end; k++)
		z->cdf[k] = (z->cdf[k] + offset) / total;
}

/* First rank in [lo, hi] whose CDF exceeds u; the CDF at hi does */
static inline int64_t
ZipfSearch(const double *cdf, int64_t lo, int64_t hi, double u)
{
	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (cdf[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static void
ZipfGuide(int64_t task, void *arg)
{
	Zipf	   *z = (Zipf *) arg;
	int64_t		begin,
				end;

	TaskRange(task, z->nguide + 1, &begin, &end);
	for (int64_t j = begin; j < end; j++)
	{
		double		u = (double) j / (double) z->nguide;

		z->guide[j] = j == z->nguide ? z->n - 1 : ZipfSearch(z->cdf, 0, z->n - 1, u);
	}
}

static void
ZipfInit(Zipf *z, int64_t n, double s)
{
	memset(z, 0, sizeof(Zipf));
	z->n = n;
	z->s = s;
	z->cdf = (double *) Alloc((size_t) n * sizeof(double));
	RunTasks(NUM_TASKS, ZipfPartialSums, z);
	RunTasks(NUM_TASKS, ZipfNormalize, z);
	z->cdf[n - 1] = 1.0;		/* exactly, whatever the rounding */
	z->nguide = 1;
	while (z->nguide * 128 <= n)
		z->nguide *= 2;
	z->guide = (int64_t *) Alloc((size_t) (z->nguide + 1) * sizeof(int64_t));
	RunTasks(NUM_TASKS, ZipfGuide, z);
}

/* The rank of uniform draw u in [0, 1) */
static inline int64_t
ZipfSample(const Zipf *z, double u)
{
	int64_t		j = (int64_t) (u * (double) z->nguide);

	return ZipfSearch(z->cdf, z->guide[j], z->guide[j + 1], u);
}

static void
ZipfFree(Zipf *z)
{
	free(z->cdf);
	free(z->guide);
}

/*
 * THE DATA
 *
 * Per shape: the inner keys and MAX_PAYLOADS payload columns per side,
 * generated when a block first needs the shape; per Zipf factor, the
 * outer keys of every match ratio, generated when a block first needs
 * them.  A block of P payloads uses the first P columns.
 */
typedef struct ShapeData
{
	bool		ready;
	int64_t		inner_rows;
	int64_t		outer_rows;
	uint64_t   *inner_keys;
	int32_t    *columns[2][MAX_PAYLOADS];	/* [0] outer, [1] inner */
	bool		outer_ready[NUM_ZIPFS];
	uint64_t   *outer_keys[NUM_ZIPFS][NUM_MATCH_RATIOS];
	int64_t		expected[NUM_ZIPFS][NUM_MATCH_RATIOS];	/* matches */
} ShapeData;

static ShapeData shapes[NUM_SHAPES];

/* Page-locked host ranges, to unlock before they are freed */
#define MAX_LOCKED	64
static void *locked[MAX_LOCKED];
static int	nlocked = 0;
static bool lock_failed = false;

/*
 * Page-lock a host array for faster uploads (cudaHostRegister); a failure
 * only costs speed, and is reported once
 */
static void
HostLock(void *ptr, size_t bytes)
{
#ifdef GPUJOIN_WITH_CUDA
	cudaError_t rc;

	if (opt.cpu || opt.pageable || lock_failed || nlocked == MAX_LOCKED)
		return;
	rc = cudaHostRegister(ptr, bytes, cudaHostRegisterDefault);
	if (rc != cudaSuccess)
	{
		(void) cudaGetLastError();
		lock_failed = true;
		printf("note: cudaHostRegister failed (%s): the inputs stay pageable\n",
			   cudaGetErrorName(rc));
		return;
	}
	locked[nlocked++] = ptr;
#endif
}

/* Free a host array, unlocking it first if it was locked */
static void
HostFree(void *ptr)
{
	if (ptr == NULL)
		return;
#ifdef GPUJOIN_WITH_CUDA
	for (int i = 0; i < nlocked; i++)
	{
		if (locked[i] == ptr)
		{
			(void) cudaHostUnregister(ptr);
			locked[i] = locked[--nlocked];
			break;
		}
	}
#endif
	free(ptr);
}

/* Arguments of the generation tasks */
typedef struct GenArgs
{
	ShapeData  *data;
	Permutation key_perm;		/* inner row -> key number */
	Permutation rank_perm;		/* Zipf rank -> inner row */
	const Zipf *zipf;			/* NULL: uniform FK */
	int			z;				/* index into zipfs[] */
	int64_t		task_matches[NUM_TASKS][NUM_MATCH_RATIOS];
} GenArgs;

/* Inner keys (the even values, in the key permutation's order) and columns */
static void
GenInnerTask(int64_t task, void *arg)
{
	GenArgs    *g = (GenArgs *) arg;
	ShapeData  *d = g->data;
	int64_t		begin,
				end;

	TaskRange(task, d->inner_rows, &begin, &end);
	for (int64_t i = begin; i < end; i++)
		d->inner_keys[i] = PackInt4Key((int32_t) (2 * PermutationAt(&g->key_perm, (uint64_t) i)));
	for (int side = 0; side < 2; side++)
	{
		int64_t		nrows = side == 0 ? d->outer_rows : d->inner_rows;

		TaskRange(task, nrows, &begin, &end);
		for (int c = 0; c < MAX_PAYLOADS; c++)
		{
			uint64_t	stream = STREAM_VALUES + 8 * (uint64_t) side + (uint64_t) c;

			for (int64_t i = begin; i < end; i++)
				d->columns[side][c][i] = (int32_t) RandomAt(stream, (uint64_t) i);
		}
	}
}

/*
 * Outer keys of every match ratio for one Zipf factor: a row matches at
 * ratio m when its STREAM_MATCH draw is below m (so the matching rows of
 * 10 % also match at 50 %), and then takes the key of a uniform inner row
 * or of the inner row of a Zipf rank; otherwise an odd (absent) value
 */
static void
GenOuterTask(int64_t task, void *arg)
{
	GenArgs    *g = (GenArgs *) arg;
	ShapeData  *d = g->data;
	int64_t		begin,
				end;

	TaskRange(task, d->outer_rows, &begin, &end);
	for (int m = 0; m < NUM_MATCH_RATIOS; m++)
		g->task_matches[task][m] = 0;
	for (int64_t j = begin; j < end; j++)
	{
		double		u = UnitInterval(RandomAt(STREAM_MATCH, (uint64_t) j));
		uint64_t	draw = RandomAt(STREAM_DRAW, (uint64_t) j);
		int64_t		row;
		uint64_t	hit;
		uint64_t	absent;

		if (g->zipf == NULL)
			row = (int64_t) UniformBelow(draw, (uint64_t) d->inner_rows);
		else
			row = (int64_t) PermutationAt(&g->rank_perm,
										  (uint64_t) ZipfSample(g->zipf, UnitInterval(draw)));
		hit = d->inner_keys[row];
		absent = PackInt4Key((int32_t) (2 * UniformBelow(RandomAt(STREAM_ABSENT, (uint64_t) j),
														 (uint64_t) d->inner_rows) + 1));
		for (int m = 0; m < NUM_MATCH_RATIOS; m++)
		{
			bool		matches = u < match_ratios[m];

			d->outer_keys[g->z][m][j] = matches ? hit : absent;
			g->task_matches[task][m] += matches;
		}
	}
}

/* Generate the inner side and the payload columns of a shape */
static void
EnsureShape(Shape shape)
{
	ShapeData  *d = &shapes[shape];
	GenArgs    *g;
	double		t0 = gj_clock_ms();

	if (d->ready)
		return;
	d->outer_rows = (int64_t) 1 << opt.log2_rows;
	d->inner_rows = shape == SHAPE_EQUAL ? d->outer_rows : d->outer_rows / 2;
	d->inner_keys = (uint64_t *) Alloc((size_t) d->inner_rows * sizeof(uint64_t));
	for (int side = 0; side < 2; side++)
		for (int c = 0; c < MAX_PAYLOADS; c++)
			d->columns[side][c] = (int32_t *) Alloc((size_t) (side == 0 ? d->outer_rows : d->inner_rows) * sizeof(int32_t));

	g = (GenArgs *) calloc(1, sizeof(GenArgs));
	if (g == NULL)
		exit(2);
	g->data = d;
	PermutationInit(&g->key_perm, (uint64_t) d->inner_rows, STREAM_KEY_PERM);
	RunTasks(NUM_TASKS, GenInnerTask, g);
	free(g);

	HostLock(d->inner_keys, (size_t) d->inner_rows * sizeof(uint64_t));
	for (int side = 0; side < 2; side++)
		for (int c = 0; c < MAX_PAYLOADS; c++)
			HostLock(d->columns[side][c],
					 (size_t) (side == 0 ? d->outer_rows : d->inner_rows) * sizeof(int32_t));
	d->ready = true;
	printf("data: %s shape, %lld inner x %lld outer rows, %d payload columns a side: %.1f s\n",
		   shape_names[shape], (long long) d->inner_rows, (long long) d->outer_rows,
		   MAX_PAYLOADS, (gj_clock_ms() - t0) / 1000.0);
	fflush(stdout);
}

/* Generate the outer keys of a shape for Zipf factor zipfs[z] */
static void
EnsureOuterKeys(Shape shape, int z)
{
	ShapeData  *d = &shapes[shape];
	GenArgs    *g;
	Zipf		zipf;
	double		t0 = gj_clock_ms();

	EnsureShape(shape);
	if (d->outer_ready[z])
		return;
	for (int m = 0; m < NUM_MATCH_RATIOS; m++)
		d->outer_keys[z][m] = (uint64_t *) Alloc((size_t) d->outer_rows * sizeof(uint64_t));

	g = (GenArgs *) calloc(1, sizeof(GenArgs));
	if (g == NULL)
		exit(2);
	g->data = d;
	g->z = z;
	PermutationInit(&g->rank_perm, (uint64_t) d->inner_rows, STREAM_RANK_PERM);
	if (zipfs[z] > 0.0)
	{
		ZipfInit(&zipf, d->inner_rows, zipfs[z]);
		g->zipf = &zipf;
	}
	RunTasks(NUM_TASKS, GenOuterTask, g);
	if (g->zipf != NULL)
		ZipfFree(&zipf);
	for (int m = 0; m < NUM_MATCH_RATIOS; m++)
	{
		d->expected[z][m] = 0;
		for (int t = 0; t < NUM_TASKS; t++)
			d->expected[z][m] += g->task_matches[t][m];
		HostLock(d->outer_keys[z][m], (size_t) d->outer_rows * sizeof(uint64_t));
	}
	free(g);
	d->outer_ready[z] = true;
	printf("data: %s shape, outer keys for Zipf %.0f: %.1f s\n",
		   shape_names[shape], zipfs[z], (gj_clock_ms() - t0) / 1000.0);
	fflush(stdout);
}

static void
FreeShapes(void)
{
	for (int s = 0; s < NUM_SHAPES; s++)
	{
		ShapeData  *d = &shapes[s];

		HostFree(d->inner_keys);
		for (int side = 0; side < 2; side++)
			for (int c = 0; c < MAX_PAYLOADS; c++)
				HostFree(d->columns[side][c]);
		for (int z = 0; z < NUM_ZIPFS; z++)
			for (int m = 0; m < NUM_MATCH_RATIOS; m++)
				HostFree(d->outer_keys[z][m]);
		memset(d, 0, sizeof(ShapeData));
	}
}

/*
 * THE DEVICE AND THE COPY BANDWIDTH
 */

typedef struct Device
{
	char		name[256];
	char		cuda_version[128];	/* "runtime 13.0, driver 13.0, ..." */
	char		copy_method[96];	/* how copy_bw was measured */
	double		copy_bw;		/* bytes read + written per second */
	int64_t		total_memory;
} Device;

static Device device;

#ifdef GPUJOIN_WITH_CUDA
static int
CompareDoubles(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return x < y ? -1 : x > y;
}

#define CUDA_CHECK(call) \
	do { \
		cudaError_t rc_ = (call); \
		if (rc_ != cudaSuccess) \
		{ \
			fprintf(stderr, "bench_grid: %s failed: %s\n", #call, cudaGetErrorName(rc_)); \
			exit(2); \
		} \
	} while (0)

/*
 * Device-to-device copy bandwidth: the median of 10 cudaMemcpy of a large
 * buffer (a quarter of free memory, at most 4 GiB), filled with random
 * bytes first, timed with events; bytes read plus bytes written
 */
static double
MeasureCopyBandwidth(size_t *bytes_out)
{
	size_t		free_bytes = 0,
				total_bytes = 0,
				bytes;
	size_t		chunk = (size_t) 64 << 20;
	uint64_t   *host;
	void	   *src,
			   *dst;
	cudaEvent_t ev0,
				ev1;
	double		ms[10];

	CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
	bytes = free_bytes / 4;
	if (bytes > ((size_t) 4 << 30))
		bytes = (size_t) 4 << 30;
	bytes -= bytes % chunk;
	if (bytes == 0)
		bytes = chunk;
	CUDA_CHECK(cudaMalloc(&src, bytes));
	CUDA_CHECK(cudaMalloc(&dst, bytes));
	host = (uint64_t *) Alloc(chunk);
	for (size_t i = 0; i < chunk / sizeof(uint64_t); i++)
		host[i] = RandomAt(99, i);
	for (size_t off = 0; off < bytes; off += chunk)
		CUDA_CHECK(cudaMemcpy((char *) src + off, host, chunk, cudaMemcpyHostToDevice));
	free(host);

	CUDA_CHECK(cudaEventCreate(&ev0));
	CUDA_CHECK(cudaEventCreate(&ev1));
	for (int r = 0; r < 2; r++)	/* warm-up */
		CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
	CUDA_CHECK(cudaDeviceSynchronize());
	for (int r = 0; r < 10; r++)
	{
		float		elapsed = 0.0f;

		CUDA_CHECK(cudaEventRecord(ev0, 0));
		CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0));
		CUDA_CHECK(cudaEventRecord(ev1, 0));
		CUDA_CHECK(cudaEventSynchronize(ev1));
		CUDA_CHECK(cudaEventElapsedTime(&elapsed, ev0, ev1));
		ms[r] = elapsed;
	}
	CUDA_CHECK(cudaEventDestroy(ev0));
	CUDA_CHECK(cudaEventDestroy(ev1));
	CUDA_CHECK(cudaFree(src));
	CUDA_CHECK(cudaFree(dst));
	qsort(ms, 10, sizeof(double), CompareDoubles);
	*bytes_out = bytes;
	return 2.0 * (double) bytes / ((ms[4] + ms[5]) / 2.0 / 1000.0);
}
#endif

/*
 * The CPU twin's stand-in for the copy bandwidth (--cpu): one thread's
 * memcpy of 256 MiB, best of 5, bytes read plus bytes written
 */
static double
MeasureHostCopyBandwidth(void)
{
	size_t		bytes = (size_t) 256 << 20;
	char	   *src = (char *) Alloc(bytes);
	char	   *dst = (char *) Alloc(bytes);
	double		best = 1e30;

	for (size_t i = 0; i < bytes; i += 4096)
		src[i] = (char) i;
	memset(dst, 1, bytes);
	for (int r = 0; r < 5; r++)
	{
		double		t0 = gj_clock_ms();

		memcpy(dst, src, bytes);
		t0 = gj_clock_ms() - t0;
		if (t0 < best)
			best = t0;
	}
	if (dst[4096] != src[4096])
		exit(2);				/* keeps the copy from being optimized out */
	free(src);
	free(dst);
	return 2.0 * (double) bytes / (best / 1000.0);
}

/* Choose the kernels and describe the device; exits if there is no GPU */
static const GjKernels *
SetUpDevice(void)
{
	if (opt.cpu)
	{
		snprintf(device.name, sizeof(device.name), "cpu (CPU twin; smoke test)");
		snprintf(device.cuda_version, sizeof(device.cuda_version), "none");
		device.copy_bw = MeasureHostCopyBandwidth();
		snprintf(device.copy_method, sizeof(device.copy_method),
				 "host memcpy of 256 MiB, one thread (stand-in)");
		return &gj_cpu_kernels;
	}
#ifdef GPUJOIN_WITH_CUDA
	{
		GjError		err;
		GjDeviceInfo info;
		size_t		bytes = 0;

		memset(&err, 0, sizeof(err));
		if (gj_cuda_device_count(&err) > 0 &&
			gj_cuda_device_info(0, &info, &err) == GJ_OK)
		{
			snprintf(device.name, sizeof(device.name), "%s", info.name);
			snprintf(device.cuda_version, sizeof(device.cuda_version),
					 "runtime %d.%d, driver %d.%d, compute capability %d.%d, %d SMs",
					 info.runtime_version / 1000, info.runtime_version % 1000 / 10,
					 info.driver_version / 1000, info.driver_version % 1000 / 10,
					 info.cc_major, info.cc_minor, info.multiprocessors);
			device.total_memory = info.total_memory;
			device.copy_bw = MeasureCopyBandwidth(&bytes);
			snprintf(device.copy_method, sizeof(device.copy_method),
					 "cudaMemcpy device to device of %.2f GiB, median of 10",
					 (double) bytes / (double) (1 << 30));
			return &gj_cuda_kernels;
		}
		fprintf(stderr, "bench_grid: no usable GPU (%s); --cpu runs the CPU twin as a smoke test\n",
				err.message);
	}
#else
	fprintf(stderr, "bench_grid: built without CUDA; --cpu runs the CPU twin as a smoke test\n");
#endif
	exit(2);
}

/*
 * ONE JOIN
 */

typedef enum Outcome
{
	OUTCOME_NONE = 0,			/* not in the grid */
	OUTCOME_OK,
	OUTCOME_FAILED,				/* a call failed: status says how */
	OUTCOME_SKIPPED				/* left out by the time budget */
} Outcome;

/* One join of the grid: its place, and what it measured */
typedef struct Result
{
	Outcome		outcome;
	GjStatus	status;
	char		error[400];
	int64_t		matches;
	uint64_t	checksum;
	GjStats		phases;			/* the median run's: differences over it */
	double		device_ms;		/* build + probe + materialize, median run */
	double		min_device_ms;	/* the spread of the timed runs */
	double		max_device_ms;
	double		bound_ms;
	int64_t		device_peak;
	char		detail[64];
} Result;

/* Every join of the grid: [shape][payloads][zipf][ratio][join] */
static Result results[NUM_SHAPES][MAX_PAYLOADS + 1][NUM_ZIPFS][NUM_MATCH_RATIOS][NUM_JOINS];

static const char *
StatusName(GjStatus status)
{
	switch (status)
	{
		case GJ_OK:
			return "ok";
		case GJ_ERROR_NO_DEVICE:
			return "GJ_ERROR_NO_DEVICE";
		case GJ_ERROR_DEVICE_MEMORY:
			return "GJ_ERROR_DEVICE_MEMORY";
		case GJ_ERROR_HOST_MEMORY:
			return "GJ_ERROR_HOST_MEMORY";
		case GJ_ERROR_INVALID_ARGUMENT:
			return "GJ_ERROR_INVALID_ARGUMENT";
		case GJ_ERROR_KERNEL:
			return "GJ_ERROR_KERNEL";
	}
	return "unknown";
}

/* A round's arrays, for the checksum tasks */
typedef struct RoundSum
{
	const GjMatchRound *round;
	int			payloads;
	uint64_t	task_sums[NUM_TASKS];
} RoundSum;

/*
 * One hash per match over its outer then inner values, summed: the same
 * for the same multiset of matches, in whatever order they come
 */
static void
RoundSumTask(int64_t task, void *arg)
{
	RoundSum   *rs = (RoundSum *) arg;
	int64_t		begin,
				end;
	uint64_t	sum = 0;

	TaskRange(task, rs->round->nmatches, &begin, &end);
	for (int64_t m = begin; m < end; m++)
	{
		uint64_t	h = UINT64_C(0x243f6a8885a308d3);

		for (int side = 0; side < 2; side++)
		{
			for (int c = 0; c < rs->payloads; c++)
			{
				const uint32_t *values = (const uint32_t *)
					(side == 0 ? rs->round->outer_values[c] : rs->round->inner_values[c]);
				uint64_t	tag = (uint64_t) (side * MAX_PAYLOADS + c + 1) << 32;

				h = Mix64(h ^ tag ^ values[m]);
			}
		}
		sum += h;
	}
	rs->task_sums[task] = sum;
}

static uint64_t
RoundChecksum(const GjMatchRound *round, int payloads)
{
	RoundSum   *rs = (RoundSum *) calloc(1, sizeof(RoundSum));
	uint64_t	sum = 0;

	if (rs == NULL)
		exit(2);
	rs->round = round;
	rs->payloads = payloads;
	RunTasks(NUM_TASKS, RoundSumTask, rs);
	for (int t = 0; t < NUM_TASKS; t++)
		sum += rs->task_sums[t];
	free(rs);
	return sum;
}

/* The two batches of a data set */
typedef struct Batches
{
	GjBatch		inner;
	GjBatch		outer;
	GjColumn	inner_columns[MAX_PAYLOADS];
	GjColumn	outer_columns[MAX_PAYLOADS];
} Batches;

static void
MakeBatches(Batches *b, const ShapeData *d, int payloads, int z, int m)
{
	memset(b, 0, sizeof(Batches));
	for (int c = 0; c < payloads; c++)
	{
		b->outer_columns[c].values = d->columns[0][c];
		b->inner_columns[c].values = d->columns[1][c];
	}
	b->inner.keys = d->inner_keys;
	b->inner.nrows = d->inner_rows;
	b->inner.columns = b->inner_columns;
	b->outer.keys = d->outer_keys[z][m];
	b->outer.nrows = d->outer_rows;
	b->outer.columns = b->outer_columns;
}

/*
 * One run on ctx: build, count the outer side as one chunk, retrieve
 * every match; *delta the statistics it added, *checksum (when asked for)
 * over every match
 */
static GjStatus
RunOnce(const GjKernels *k, GjContext *ctx, const Batches *b, int payloads,
		GjStats *delta, int64_t *nmatches, uint64_t *checksum, GjError *err)
{
	GjStats		before,
				after;
	GjMatchRound round;
	GjStatus	status;

	memset(&round, 0, sizeof(round));
	k->context_stats(ctx, &before);
	*nmatches = 0;
	status = k->build(ctx, &b->inner, err);
	if (status == GJ_OK)
		status = k->count(ctx, &b->outer, nmatches, err);
	for (int64_t first = 0; status == GJ_OK && first < *nmatches; first += round.nmatches)
	{
		status = k->retrieve(ctx, first, &round, err);
		if (status == GJ_OK && round.nmatches <= 0)
		{
			status = gj_error_set(err, GJ_ERROR_KERNEL,
								  "retrieve returned an empty round at match %lld of %lld.",
								  (long long) first, (long long) *nmatches);
		}
		if (status == GJ_OK && checksum != NULL)
			*checksum += RoundChecksum(&round, payloads);
	}
	k->context_stats(ctx, &after);
	memset(delta, 0, sizeof(GjStats));
	delta->build_ms = after.build_ms - before.build_ms;
	delta->probe_ms = after.probe_ms - before.probe_ms;
	delta->materialize_ms = after.materialize_ms - before.materialize_ms;
	delta->transfer_ms = after.transfer_ms - before.transfer_ms;
	delta->bytes_to_device = after.bytes_to_device - before.bytes_to_device;
	delta->bytes_from_device = after.bytes_from_device - before.bytes_from_device;
	delta->device_memory_peak = after.device_memory_peak;
	memcpy(delta->detail, after.detail, sizeof(delta->detail));
	return status;
}

static double
DeviceMs(const GjStats *s)
{
	return s->build_ms + s->probe_ms + s->materialize_ms;
}

/* Bytes a join must move at the least: inputs read once, output written once */
static double
BoundBytes(const ShapeData *d, int payloads, int64_t matches)
{
	return (double) (d->inner_rows + d->outer_rows) * (8.0 + 4.0 * payloads) +
		(double) matches * 2.0 * 4.0 * payloads;
}

/*
 * A warm-up run (which also takes the checksum), then opt.runs timed runs
 * on ctx; fills *r.  False when a call failed (r->status says how).
 */
static bool
MeasureJoin(const GjKernels *k, GjContext *ctx, const ShapeData *d,
			int payloads, int z, int m, Result *r)
{
	Batches		b;
	GjError		err;
	GjStats		runs[16];
	int			order[16];
	GjStats		warm;
	int64_t		nmatches = 0;

	MakeBatches(&b, d, payloads, z, m);
	memset(&err, 0, sizeof(err));
	r->checksum = 0;
	r->status = RunOnce(k, ctx, &b, payloads, &warm, &r->matches, &r->checksum, &err);
	for (int i = 0; r->status == GJ_OK && i < opt.runs; i++)
	{
		r->status = RunOnce(k, ctx, &b, payloads, &runs[i], &nmatches, NULL, &err);
		if (r->status == GJ_OK && nmatches != r->matches)
			r->status = gj_error_set(&err, GJ_ERROR_KERNEL,
									 "Run %d counted %lld matches, the warm-up run %lld.",
									 i + 1, (long long) nmatches, (long long) r->matches);
	}
	if (r->status != GJ_OK)
	{
		r->outcome = OUTCOME_FAILED;
		snprintf(r->error, sizeof(r->error), "%s%s%s", err.cuda_error,
				 err.cuda_error[0] ? ": " : "", err.message);
		return false;
	}

	/* the run with the median device time, by insertion sort */
	for (int i = 0; i < opt.runs; i++)
	{
		int			j = i;

		while (j > 0 && DeviceMs(&runs[order[j - 1]]) > DeviceMs(&runs[i]))
		{
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	r->outcome = OUTCOME_OK;
	r->phases = runs[order[opt.runs / 2]];
	r->device_ms = DeviceMs(&r->phases);
	r->min_device_ms = DeviceMs(&runs[order[0]]);
	r->max_device_ms = DeviceMs(&runs[order[opt.runs - 1]]);
	r->bound_ms = BoundBytes(d, payloads, r->matches) / device.copy_bw * 1000.0;
	r->device_peak = r->phases.device_memory_peak;
	memcpy(r->detail, r->phases.detail, sizeof(r->detail));
	return true;
}

/*
 * OUTPUT
 */

static FILE *csv;

static void
CsvHeader(void)
{
	fprintf(csv, "gpu,variant,materialize,shape,inner_rows,outer_rows,payloads,"
			"match_ratio,zipf,matches,build_ms,probe_ms,materialize_ms,device_ms,"
			"transfer_ms,tuples_per_s,bytes_per_s,bound_ms,pct_of_bound,checksum,"
			"status,device_peak_bytes\n");
	fflush(csv);
}

/* One line per join run or failed; written as it comes, so a cut-off run keeps its lines */
static void
CsvRow(Shape shape, int payloads, int z, int m, int j, const Result *r)
{
	const ShapeData *d = &shapes[shape];

	fprintf(csv, "\"%s\",%s,%s,%s,%lld,%lld,%d,%.2f,%.0f,",
			device.name, gj_variant_name(joins[j].variant),
			joins[j].materialize == GJ_MATERIALIZE_GFTR ? "GFTR" : "GFUR",
			shape_names[shape], (long long) d->inner_rows, (long long) d->outer_rows,
			payloads, match_ratios[m], zipfs[z]);
	if (r->outcome == OUTCOME_OK)
	{
		double		rows = (double) (d->inner_rows + d->outer_rows);
		double		bytes = BoundBytes(d, payloads, r->matches);

		fprintf(csv, "%lld,%.3f,%.3f,%.3f,%.3f,%.3f,%.4g,%.4g,%.3f,%.1f,%016llx,ok,%lld\n",
				(long long) r->matches, r->phases.build_ms, r->phases.probe_ms,
				r->phases.materialize_ms, r->device_ms, r->phases.transfer_ms,
				rows / (r->device_ms / 1000.0), bytes / (r->device_ms / 1000.0),
				r->bound_ms, 100.0 * r->bound_ms / r->device_ms,
				(unsigned long long) r->checksum, (long long) r->device_peak);
	}
	else
		fprintf(csv, ",,,,,,,,,,,%s,\n", StatusName(r->status));
	fflush(csv);
}

/* The log line of one join */
static void
PrintJoin(Shape shape, int payloads, int z, int m, int j, const Result *r)
{
	const ShapeData *d = &shapes[shape];

	printf("%-5s P=%d z=%.0f mr=%.2f %-7s ", shape_names[shape], payloads,
		   zipfs[z], match_ratios[m], joins[j].name);
	if (r->outcome == OUTCOME_OK)
		printf("matches %10lld  build %8.2f probe %8.2f mat %8.2f  device %8.2f [%.2f..%.2f]  copies %8.2f ms  %6.2f Gtuples/s  %5.1f %% of bound  peak %.1f GB  %s  %016llx\n",
			   (long long) r->matches, r->phases.build_ms, r->phases.probe_ms,
			   r->phases.materialize_ms, r->device_ms, r->min_device_ms,
			   r->max_device_ms, r->phases.transfer_ms,
			   (double) (d->inner_rows + d->outer_rows) / (r->device_ms / 1000.0) / 1e9,
			   100.0 * r->bound_ms / r->device_ms, (double) r->device_peak / 1e9,
			   r->detail, (unsigned long long) r->checksum);
	else
		printf("FAILED %s: %s\n", StatusName(r->status), r->error);
	fflush(stdout);
}

/*
 * THE GRID
 */

static bool mismatch = false;	/* a checksum or count differed */
static bool failed = false;		/* a call failed other than for memory */
static double slowest_join_s = 0.0; /* wall time of the slowest join */

/*
 * The six joins of each data set of a block must agree with each other
 * and with the match count the data was made with
 */
static void
CheckBlock(const Block *bl)
{
	const ShapeData *d = &shapes[bl->shape];

	for (int z = 0; z < NUM_ZIPFS; z++)
	{
		for (int m = 0; m < NUM_MATCH_RATIOS; m++)
		{
			const Result *first = NULL;

			if (!(bl->zipf_mask & (1u << z)) || !(bl->ratio_mask & (1u << m)))
				continue;
			for (int j = 0; j < NUM_JOINS; j++)
			{
				const Result *r = &results[bl->shape][bl->payloads][z][m][j];

				if (r->outcome != OUTCOME_OK)
					continue;
				if (r->matches != d->expected[z][m] ||
					(first != NULL && r->checksum != first->checksum))
				{
					printf("MISMATCH: %s shape, %d payloads, Zipf %.0f, match ratio %.2f: %s returned %lld matches (checksum %016llx), expected %lld%s%s\n",
						   shape_names[bl->shape], bl->payloads, zipfs[z], match_ratios[m],
						   joins[j].name, (long long) r->matches,
						   (unsigned long long) r->checksum,
						   (long long) d->expected[z][m],
						   first != NULL ? ", checksum of the first join " : "",
						   first != NULL ? joins[first - results[bl->shape][bl->payloads][z][m]].name : "");
					mismatch = true;
				}
				if (first == NULL)
					first = r;
			}
		}
	}
}

/* Would one more join overrun the budget? */
static bool
OverBudget(void)
{
	return opt.budget_s > 0.0 &&
		ElapsedSeconds() + 1.2 * slowest_join_s > opt.budget_s;
}

/* Run one block: for each join, one context over the block's data sets */
static void
RunBlock(const GjKernels *k, const Block *bl)
{
	ShapeData  *d = &shapes[bl->shape];

	for (int z = 0; z < NUM_ZIPFS; z++)
		if ((bl->zipf_mask & (1u << z)) && !OverBudget())
			EnsureOuterKeys(bl->shape, z);

	for (int j = 0; j < NUM_JOINS; j++)
	{
		GjContext  *ctx = NULL;
		GjJoinSpec	spec;

		memset(&spec, 0, sizeof(spec));
		spec.variant = joins[j].variant;
		spec.materialize = joins[j].materialize;
		spec.outer_ncolumns = bl->payloads;
		spec.inner_ncolumns = bl->payloads;
		for (int c = 0; c < bl->payloads; c++)
		{
			spec.outer_widths[c] = 4;
			spec.inner_widths[c] = 4;
		}
		spec.row_ids = false;
		spec.max_matches = d->outer_rows ? d->outer_rows : 1;
		spec.memory_limit = 0;

		for (int z = 0; z < NUM_ZIPFS; z++)
		{
			for (int m = 0; m < NUM_MATCH_RATIOS; m++)
			{
				Result	   *r = &results[bl->shape][bl->payloads][z][m][j];
				double		t0;

				if (!(bl->zipf_mask & (1u << z)) || !(bl->ratio_mask & (1u << m)))
					continue;
				memset(r, 0, sizeof(Result));
				if (!d->outer_ready[z] || OverBudget())
				{
					r->outcome = OUTCOME_SKIPPED;
					continue;
				}
				t0 = gj_clock_ms();
				if (ctx == NULL)
				{
					GjError		err;

					memset(&err, 0, sizeof(err));
					r->status = k->context_create(&ctx, &spec, &err);
					if (r->status != GJ_OK)
					{
						r->outcome = OUTCOME_FAILED;
						snprintf(r->error, sizeof(r->error), "context_create: %s %s",
								 err.cuda_error, err.message);
						ctx = NULL;
					}
				}
				if (ctx != NULL && !MeasureJoin(k, ctx, d, bl->payloads, z, m, r))
				{
					/* start the next data set on a fresh context */
					k->context_destroy(ctx);
					ctx = NULL;
				}
				if (r->outcome == OUTCOME_FAILED && r->status != GJ_ERROR_DEVICE_MEMORY)
					failed = true;
				if ((gj_clock_ms() - t0) / 1000.0 > slowest_join_s)
					slowest_join_s = (gj_clock_ms() - t0) / 1000.0;
				PrintJoin(bl->shape, bl->payloads, z, m, j, r);
				CsvRow(bl->shape, bl->payloads, z, m, j, r);
			}
		}
		k->context_destroy(ctx);
	}
	CheckBlock(bl);
}

/*
 * THE CROSSOVER
 *
 * For one shape, variant and payload count (uniform FK): the lowest
 * measured match ratio from which GFTR is faster than GFUR at every higher
 * measured ratio (-1: at none, -2: not measured), and the break-even by
 * linear interpolation of GFUR - GFTR between that point and the one
 * below it (0 when GFTR already wins at the lowest ratio).  *noisy: a
 * difference used is within the run-to-run spread of the two joins.
 */
static double
Crossover(Shape shape, GjVariant variant, int payloads, double *interpolated,
		  bool *noisy)
{
	double		diff[NUM_MATCH_RATIOS];
	int			lowest = -1;

	*interpolated = -1.0;
	*noisy = false;
	for (int m = 0; m < NUM_MATCH_RATIOS; m++)
	{
		const Result *tr = &results[shape][payloads][0][m][2 * (int) variant];
		const Result *ur = &results[shape][payloads][0][m][2 * (int) variant + 1];

		if (tr->outcome != OUTCOME_OK || ur->outcome != OUTCOME_OK)
			return -2.0;
		diff[m] = ur->device_ms - tr->device_ms;
		if (fabs(diff[m]) < (tr->max_device_ms - tr->min_device_ms) +
			(ur->max_device_ms - ur->min_device_ms))
			*noisy = true;
	}
	for (int m = NUM_MATCH_RATIOS - 1; m >= 0 && diff[m] > 0.0; m--)
		lowest = m;
	if (lowest < 0)
		return -1.0;
	if (lowest == 0)
		*interpolated = 0.0;
	else
	{
		double		x0 = match_ratios[lowest - 1],
					x1 = match_ratios[lowest];

		*interpolated = x0 + (x1 - x0) * (-diff[lowest - 1]) / (diff[lowest] - diff[lowest - 1]);
	}
	return match_ratios[lowest];
}

/*
 * The fewest payload columns from which GFTR wins at 100 % at every
 * larger measured count; 0 when at none, -1 when not measured
 */
static int
CrossoverPayloads(Shape shape, GjVariant variant)
{
	static const int counts[3] = {1, 2, 4};
	int			fewest = 0;

	for (int i = 2; i >= 0; i--)
	{
		const Result *tr = &results[shape][counts[i]][0][NUM_MATCH_RATIOS - 1][2 * (int) variant];
		const Result *ur = &results[shape][counts[i]][0][NUM_MATCH_RATIOS - 1][2 * (int) variant + 1];

		if (tr->outcome != OUTCOME_OK || ur->outcome != OUTCOME_OK)
			return -1;
		if (tr->device_ms >= ur->device_ms)
			break;
		fewest = counts[i];
	}
	return fewest;
}

/*
 * The crossover lines of each shape, to out (stdout and the Markdown
 * file): the equal shape is the paper's match-ratio experiment (Wu et al.
 * 2025, §5.1.6), the PK-FK shape, where each inner row is matched twice at
 * 100 %, that of its narrow and wide joins (Wu et al. 2025, §5.1.5)
 */
static void
PrintCrossover(FILE *out, bool markdown)
{
	static const int counts[3] = {1, 2, 4};

	if (markdown)
		fprintf(out, "```\n");
	for (int s = 0; s < NUM_SHAPES; s++)
	{
		bool		header = false;

		/* the equi-join variants, the ones the grid measures */
		for (int v = 0; v <= GJ_VARIANT_SMJ; v++)
		{
			const char *name = gj_variant_name((GjVariant) v);
			int			fewest = CrossoverPayloads((Shape) s, (GjVariant) v);

			for (int i = 0; i < 3; i++)
			{
				double		interpolated;
				bool		noisy;
				double		lowest = Crossover((Shape) s, (GjVariant) v, counts[i],
											  &interpolated, &noisy);

				if (lowest == -2.0)
					continue;
				if (!header)
				{
					fprintf(out, "%s shape (%s), Zipf 0:\n", shape_names[s],
							s == SHAPE_EQUAL ? "|R| = |S|" : "|S| = 2 |R|");
					header = true;
				}
				if (lowest < 0.0)
					fprintf(out, "%-4s GPUJOIN_GFTR_MIN_MATCH_RATIO = none at %d payload column%s (GFUR wins up to 1.00)%s\n",
							name, counts[i], counts[i] > 1 ? "s" : "",
							noisy ? "  [a difference within the run-to-run spread]" : "");
				else if (interpolated == 0.0)
					fprintf(out, "%-4s GPUJOIN_GFTR_MIN_MATCH_RATIO = %.2f at %d payload column%s (GFTR wins from the lowest ratio measured)%s\n",
							name, lowest, counts[i], counts[i] > 1 ? "s" : "",
							noisy ? "  [a difference within the run-to-run spread]" : "");
				else
					fprintf(out, "%-4s GPUJOIN_GFTR_MIN_MATCH_RATIO = %.2f at %d payload column%s (interpolated break-even %.2f)%s\n",
							name, lowest, counts[i], counts[i] > 1 ? "s" : "", interpolated,
							noisy ? "  [a difference within the run-to-run spread]" : "");
			}
			if (fewest > 0)
				fprintf(out, "%-4s GPUJOIN_GFTR_MIN_PAYLOADS = %d at match ratio 1.00\n", name, fewest);
			else if (fewest == 0)
				fprintf(out, "%-4s GPUJOIN_GFTR_MIN_PAYLOADS = none at match ratio 1.00 (GFUR wins at 1, 2 and 4)\n", name);
		}
	}
	if (markdown)
		fprintf(out, "```\n");
}

/* "2^27" */
static const char *
Pow2(int64_t n, char *buf, size_t size)
{
	int			bits = 0;

	while (((int64_t) 1 << bits) < n)
		bits++;
	if (((int64_t) 1 << bits) == n)
		snprintf(buf, size, "2^%d", bits);
	else
		snprintf(buf, size, "%lld", (long long) n);
	return buf;
}

/* The goal line's PHJ-TR result, or NULL when not measured */
static const Result *
GoalResult(void)
{
	const Result *r = &results[SHAPE_EQUAL][GOAL_PAYLOADS][0][NUM_MATCH_RATIOS - 1][2];

	return r->outcome == OUTCOME_OK ? r : NULL;
}

/*
 * The Markdown summary; rewritten after every block (blocks_done of
 * nblocks), so that a run cut off from outside still leaves one
 */
static void
WriteMarkdown(const GjKernels *k, int nblocks, const Block *grid,
			  int blocks_done)
{
	FILE	   *md = fopen(opt.md_path, "w");
	char		b1[32],
				b2[32];
	const Result *goal = GoalResult();
	int			nskipped = 0;

	if (md == NULL)
	{
		perror(opt.md_path);
		exit(2);
	}
	fprintf(md, "# gpujoin kernel benchmark grid\n\n");
	fprintf(md, "Written by `cuda/bench_grid` (bench/kernels/bench_grid.c; see bench/README.md).\n\n");
	fprintf(md, "- GPU: **%s** (%s)\n", device.name, device.cuda_version);
	if (device.total_memory > 0)
		fprintf(md, "- device memory: %.1f GB\n", (double) device.total_memory / 1e9);
	fprintf(md, "- copy bandwidth (bytes read + written): **%.1f GB/s**, %s\n",
			device.copy_bw / 1e9, device.copy_method);
	fprintf(md, "- kernels \"%s\", 2^%d rows a side (`--log2-rows %d`), %s grid, a warm-up then the median of %d timed runs%s\n",
			k->name, opt.log2_rows, opt.log2_rows, opt.quick ? "reduced (`--quick`)" : "full",
			opt.runs, opt.budget_s > 0 ? "" : ", no time budget");
	if (opt.budget_s > 0)
		fprintf(md, "- time budget %.0f s (`--budget-s`); the program took %.0f s\n",
				opt.budget_s, ElapsedSeconds());
	if (blocks_done < nblocks)
		fprintf(md, "- **partial**: written after block %d of %d of the grid, at %.0f s; the program did not finish\n",
				blocks_done, nblocks, ElapsedSeconds());
	fprintf(md, "- host inputs %s\n", opt.cpu ? "in host memory (CPU twin)" :
			(opt.pageable || lock_failed) ? "pageable" : "page-locked (cudaHostRegister): copies run at the bus's best");
	fprintf(md, "- keys: int4 values packed as src/keys.c does (sign bit flipped, 32 bits); inner keys the even values 0 .. 2(|R|-1), unique; absent outer keys odd values of the same range; payloads int4, random\n");
	fprintf(md, "- device time = build + probe + materialize from GjStats, copies excluded; transfer = the copies; bound = (|R|+|S|) x (8 + 4P) bytes read + matches x 8P bytes written, over the copy bandwidth; throughput = (|R|+|S|) / device time\n\n");

	for (int s = 0; s < NUM_SHAPES; s++)
	{
		const ShapeData *d = &shapes[s];
		bool		header = false;

		if (!d->ready)
			continue;
		for (int p = 1; p <= MAX_PAYLOADS; p++)
			for (int z = 0; z < NUM_ZIPFS; z++)
				for (int m = 0; m < NUM_MATCH_RATIOS; m++)
				{
					bool		any = false;

					for (int j = 0; j < NUM_JOINS; j++)
						any |= results[s][p][z][m][j].outcome == OUTCOME_OK ||
							results[s][p][z][m][j].outcome == OUTCOME_FAILED;
					if (!any)
						continue;
					if (!header)
					{
						fprintf(md, "## Shape \"%s\": |R| = %s inner (PK) x |S| = %s outer\n\n",
								shape_names[s], Pow2(d->inner_rows, b1, sizeof(b1)),
								Pow2(d->outer_rows, b2, sizeof(b2)));
						fprintf(md, "Device ms (%% of bound); the fastest of a row in bold.\n\n");
						fprintf(md, "| payloads | Zipf | match | matches |");
						for (int j = 0; j < NUM_JOINS; j++)
							fprintf(md, " %s |", joins[j].name);
						fprintf(md, "\n|---:|---:|---:|---:|");
						for (int j = 0; j < NUM_JOINS; j++)
							fprintf(md, "---:|");
						fprintf(md, "\n");
						header = true;
					}
					{
						int			best = -1;
						int64_t		matches = -1;

						for (int j = 0; j < NUM_JOINS; j++)
						{
							const Result *r = &results[s][p][z][m][j];

							if (r->outcome == OUTCOME_OK &&
								(best < 0 || r->device_ms < results[s][p][z][m][best].device_ms))
								best = j;
							if (r->outcome == OUTCOME_OK)
								matches = r->matches;
						}
						fprintf(md, "| %d | %.0f | %.0f %% | %lld |", p, zipfs[z],
								100.0 * match_ratios[m], (long long) matches);
						for (int j = 0; j < NUM_JOINS; j++)
						{
							const Result *r = &results[s][p][z][m][j];

							if (r->outcome == OUTCOME_OK)
								fprintf(md, j == best ? " **%.1f** (%.0f %%) |" : " %.1f (%.0f %%) |",
										r->device_ms, 100.0 * r->bound_ms / r->device_ms);
							else if (r->outcome == OUTCOME_FAILED)
								fprintf(md, " %s |", StatusName(r->status));
							else
								fprintf(md, " left out |");
						}
						fprintf(md, "\n");
					}
				}
		if (header)
			fprintf(md, "\n");
	}

	/* the phases of the headline configuration */
	fprintf(md, "## Phases at the headline configuration: equal shape, %d payloads, Zipf 0, match 100 %%\n\n",
			GOAL_PAYLOADS);
	fprintf(md, "| join | matches | build ms | probe ms | materialize ms | device ms | transfer ms | Gtuples/s | GB/s | bound ms | %% of bound | device peak GB | build's choice |\n");
	fprintf(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
	for (int j = 0; j < NUM_JOINS; j++)
	{
		const Result *r = &results[SHAPE_EQUAL][GOAL_PAYLOADS][0][NUM_MATCH_RATIOS - 1][j];
		const ShapeData *d = &shapes[SHAPE_EQUAL];

		if (r->outcome != OUTCOME_OK)
			continue;
		fprintf(md, "| %s | %lld | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f | %.2f | %.1f | %.1f | %s |\n",
				joins[j].name, (long long) r->matches, r->phases.build_ms,
				r->phases.probe_ms, r->phases.materialize_ms, r->device_ms,
				r->phases.transfer_ms,
				(double) (d->inner_rows + d->outer_rows) / (r->device_ms / 1000.0) / 1e9,
				BoundBytes(d, GOAL_PAYLOADS, r->matches) / (r->device_ms / 1000.0) / 1e9,
				r->bound_ms, 100.0 * r->bound_ms / r->device_ms,
				(double) r->device_peak / 1e9, r->detail);
	}

	fprintf(md, "\n## GFTR/GFUR crossover (Zipf 0)\n\n");
	fprintf(md, "The lowest measured match ratio (of 0.10, 0.50, 1.00) from which GFTR is faster than GFUR at every higher measured ratio, per payload count, with the break-even interpolated linearly between grid points; and the fewest payload columns from which GFTR wins at 100 %%.\n\n");
	PrintCrossover(md, true);

	fprintf(md, "\n## The issue's goal\n\n");
	fprintf(md, "PHJ-TR at 2^27 ⋈ 2^27 int32 keys with 2 payload columns per side at ≥ 40 %% of the bound (Zipf 0, match 100 %%): ");
	if (goal == NULL)
		fprintf(md, "**not measured**.\n");
	else
	{
		double		pct = 100.0 * goal->bound_ms / goal->device_ms;

		fprintf(md, "measured **%.1f %%** (device %.2f ms, bound %.2f ms) at 2^%d ⋈ 2^%d: **%s**%s.\n",
				pct, goal->device_ms, goal->bound_ms, opt.log2_rows, opt.log2_rows,
				pct >= GOAL_PCT ? "met" : "not met",
				opt.log2_rows == GOAL_LOG2_ROWS ? "" : " (not at the goal's 2^27: indicative only)");
	}

	fprintf(md, "\n## Left out\n\n");
	if (opt.quick)
		fprintf(md, "- `--quick`: the reduced grid only (equal shape 1 and 2 payloads, PK-FK 2 payloads at 10 and 100 %%).\n");
	for (int b = 0; b < nblocks; b++)
	{
		const Block *bl = &grid[b];

		for (int z = 0; z < NUM_ZIPFS; z++)
			for (int m = 0; m < NUM_MATCH_RATIOS; m++)
			{
				int			n = 0;

				if (!(bl->zipf_mask & (1u << z)) || !(bl->ratio_mask & (1u << m)))
					continue;
				for (int j = 0; j < NUM_JOINS; j++)
					n += results[bl->shape][bl->payloads][z][m][j].outcome == OUTCOME_SKIPPED;
				if (n == 0)
					continue;
				fprintf(md, "- time budget: %s shape, %d payload%s, Zipf %.0f, match %.0f %%: ",
						shape_names[bl->shape], bl->payloads, bl->payloads > 1 ? "s" : "",
						zipfs[z], 100.0 * match_ratios[m]);
				for (int j = 0, first = 1; j < NUM_JOINS; j++)
					if (results[bl->shape][bl->payloads][z][m][j].outcome == OUTCOME_SKIPPED)
					{
						fprintf(md, "%s%s", first ? "" : ", ", joins[j].name);
						first = 0;
					}
				fprintf(md, "\n");
				nskipped += n;
			}
	}
	if (nskipped == 0 && !opt.quick)
		fprintf(md, "- nothing: the whole grid ran.\n");
	if (mismatch)
		fprintf(md, "\n**MISMATCH**: the joins of a data set disagreed (see the log).\n");
	fclose(md);
}

static void
Usage(void)
{
	fprintf(stderr,
			"usage: bench_grid --csv FILE --md FILE [--log2-rows N] [--quick] [--runs N]\n"
			"                  [--budget-s S] [--pageable] [--cpu]\n"
			"  --log2-rows N  2^N rows a side (default 27; the PK-FK inner side has 2^(N-1))\n"
			"  --quick        a reduced grid, for smoke tests\n"
			"  --runs N       timed runs per join, after one warm-up (default 3)\n"
			"  --budget-s S   leave out the joins that would end after S seconds\n"
			"  --pageable     do not page-lock the host inputs\n"
			"  --cpu          run on the CPU twin (a smoke test); without it a GPU is required\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	const Block *grid;
	int			nblocks;
	const GjKernels *k;
	long		ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	start_ms = gj_clock_ms();
	for (int i = 1; i < argc; i++)
	{
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--csv") == 0 && v != NULL)
			opt.csv_path = argv[++i];
		else if (strcmp(a, "--md") == 0 && v != NULL)
			opt.md_path = argv[++i];
		else if (strcmp(a, "--log2-rows") == 0 && v != NULL)
			opt.log2_rows = atoi(argv[++i]);
		else if (strcmp(a, "--runs") == 0 && v != NULL)
			opt.runs = atoi(argv[++i]);
		else if (strcmp(a, "--budget-s") == 0 && v != NULL)
			opt.budget_s = atof(argv[++i]);
		else if (strcmp(a, "--quick") == 0)
			opt.quick = true;
		else if (strcmp(a, "--cpu") == 0)
			opt.cpu = true;
		else if (strcmp(a, "--pageable") == 0)
			opt.pageable = true;
		else
			Usage();
	}
	/* the largest value, 2 x 2^N - 1, must fit into an int4 */
	if (opt.csv_path == NULL || opt.md_path == NULL ||
		opt.log2_rows < 4 || opt.log2_rows > 29 || opt.runs < 1 || opt.runs > 16)
		Usage();
	nthreads = ncpu < 1 ? 1 : ncpu > 64 ? 64 : (int) ncpu;
	grid = opt.quick ? quick_grid : full_grid;
	nblocks = opt.quick ? (int) (sizeof(quick_grid) / sizeof(Block)) :
		(int) (sizeof(full_grid) / sizeof(Block));

	k = SetUpDevice();
	printf("bench_grid: kernels \"%s\" on %s (%s)\n", k->name, device.name, device.cuda_version);
	printf("copy bandwidth %.1f GB/s (%s)\n", device.copy_bw / 1e9, device.copy_method);
	printf("2^%d rows a side, %s grid, warm-up + median of %d runs, %d host threads%s\n",
		   opt.log2_rows, opt.quick ? "reduced" : "full", opt.runs, nthreads,
		   opt.budget_s > 0 ? ", time budget on" : "");
	fflush(stdout);

	csv = fopen(opt.csv_path, "w");
	if (csv == NULL)
	{
		perror(opt.csv_path);
		exit(2);
	}
	CsvHeader();
	for (int b = 0; b < nblocks; b++)
	{
		RunBlock(k, &grid[b]);
		WriteMarkdown(k, nblocks, grid, b + 1);
	}
	fclose(csv);

	printf("\nGFTR/GFUR crossover:\n");
	PrintCrossover(stdout, false);
	{
		const Result *goal = GoalResult();

		if (goal != NULL)
			printf("goal: PHJ-TR, equal shape 2^%d, 2 payloads, Zipf 0, 100 %%: %.1f %% of the bound (goal >= %.0f %% at 2^27): %s\n",
				   opt.log2_rows, 100.0 * goal->bound_ms / goal->device_ms, GOAL_PCT,
				   100.0 * goal->bound_ms / goal->device_ms >= GOAL_PCT ? "met" : "not met");
	}
	WriteMarkdown(k, nblocks, grid, nblocks);
	FreeShapes();
	printf("wrote %s and %s in %.0f s%s%s\n", opt.csv_path, opt.md_path, ElapsedSeconds(),
		   mismatch ? "; MISMATCH" : "", failed ? "; a join failed" : "");
	return mismatch || failed ? 1 : 0;
}
