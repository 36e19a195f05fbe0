/*-------------------------------------------------------------------------
 *
 * bench_kernels.c
 *	  Timing of one join per variant (NPHJ, PHJ, SMJ), GFUR against GFTR
 *	  (make -C cuda bench)
 *
 * Three workloads of N inner rows (10M by default, or the first argument),
 * each side with two payload columns (4 and 8 bytes, no NULLs):
 *
 *	  PK-FK, dense keys		inner keys a permutation of 0 .. N-1 (the dense
 *							layout), N outer rows drawn uniformly from them
 *	  PK-FK, 64-bit keys	the same keys spread over 64 bits (hashed)
 *	  M:N, 64-bit keys		N inner rows over N/10 keys, N/10 outer rows:
 *							10 matches an outer row, N in all
 *
 * Each is built, counted as one chunk and retrieved in rounds of 2^21
 * matches, three times per materialization, on the CUDA kernels when a
 * device answers (else on the CPU twin); the fastest run is shown, with
 * the phases from GjStats: build, probe (count), materialize (retrieve),
 * each without copies, and the copies.  A checksum over every value
 * handed out shows that both materializations of a variant returned the
 * same values (the variants hand them out in different orders).
 *
 * IDENTIFICATION
 *	  bench/kernels/bench_kernels.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "gpujoin_kernels.h"

#define ROUND_MATCHES	((int64_t) 1 << 21)
#define REPEATS			3

/* The variants timed, and their names */
static const GjVariant bench_variants[] = {GJ_VARIANT_NPHJ, GJ_VARIANT_PHJ, GJ_VARIANT_SMJ};
static const char *const bench_variant_names[] = {"NPHJ", "PHJ", "SMJ"};

#define NUM_BENCH_VARIANTS	((int) (sizeof(bench_variants) / sizeof(bench_variants[0])))

/* splitmix64 */
static uint64_t
NextRandom(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void *
Alloc(size_t bytes)
{
	void	   *ptr = malloc(bytes > 0 ? bytes : 1);

	if (ptr == NULL)
	{
		fprintf(stderr, "bench_kernels: out of memory (%zu bytes)\n", bytes);
		exit(2);
	}
	return ptr;
}

/* One side: keys and the two payload columns */
typedef struct Side
{
	GjBatch		batch;
	GjColumn	columns[2];
} Side;

static void
MakeSide(Side *side, int64_t nrows, uint64_t *state)
{
	int32_t    *c0 = (int32_t *) Alloc((size_t) nrows * sizeof(int32_t));
	int64_t    *c1 = (int64_t *) Alloc((size_t) nrows * sizeof(int64_t));

	for (int64_t i = 0; i < nrows; i++)
	{
		c0[i] = (int32_t) NextRandom(state);
		c1[i] = (int64_t) NextRandom(state);
	}
	memset(side, 0, sizeof(Side));
	side->batch.keys = (uint64_t *) Alloc((size_t) nrows * sizeof(uint64_t));
	side->batch.nrows = nrows;
	side->batch.columns = side->columns;
	side->columns[0].values = c0;
	side->columns[1].values = c1;
}

static void
FreeSide(Side *side)
{
	free((void *) side->batch.keys);
	free((void *) side->columns[0].values);
	free((void *) side->columns[1].values);
}

/* The key of key number i: itself (dense) or spread over 64 bits */
static uint64_t
Key(int64_t i, bool wide)
{
	uint64_t	state = (uint64_t) i;

	return wide ? NextRandom(&state) : (uint64_t) i;
}

/* One workload's data */
static void
MakeWorkload(int workload, int64_t n, Side *inner, Side *outer)
{
	uint64_t	state = 42 + (uint64_t) workload;
	int64_t		nkeys = workload == 2 ? n / 10 : n;
	int64_t		outer_rows = workload == 2 ? n / 10 : n;
	bool		wide = workload != 0;
	uint64_t   *ikeys;
	uint64_t   *okeys;

	MakeSide(inner, n, &state);
	MakeSide(outer, outer_rows, &state);
	ikeys = (uint64_t *) inner->batch.keys;
	okeys = (uint64_t *) outer->batch.keys;
	if (workload == 2)
	{
		/* key number i % nkeys, in a shuffled order */
		for (int64_t i = 0; i < n; i++)
			ikeys[i] = Key(i % nkeys, wide);
		for (int64_t i = n - 1; i > 0; i--)
		{
			int64_t		j = (int64_t) (NextRandom(&state) % (uint64_t) (i + 1));
			uint64_t	t = ikeys[i];

			ikeys[i] = ikeys[j];
			ikeys[j] = t;
		}
		for (int64_t i = 0; i < outer_rows; i++)
			okeys[i] = Key(i, wide);	/* each key once, in key order */
		for (int64_t i = outer_rows - 1; i > 0; i--)
		{
			int64_t		j = (int64_t) (NextRandom(&state) % (uint64_t) (i + 1));
			uint64_t	t = okeys[i];

			okeys[i] = okeys[j];
			okeys[j] = t;
		}
		return;
	}
	for (int64_t i = 0; i < n; i++)
		ikeys[i] = Key(i, wide);
	for (int64_t i = n - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) (NextRandom(&state) % (uint64_t) (i + 1));
		uint64_t	t = ikeys[i];

		ikeys[i] = ikeys[j];
		ikeys[j] = t;
	}
	for (int64_t i = 0; i < outer_rows; i++)
		okeys[i] = Key((int64_t) (NextRandom(&state) % (uint64_t) nkeys), wide);
}

static bool
Check(GjStatus status, const GjError *err, const char *call)
{
	if (status == GJ_OK)
		return true;
	fprintf(stderr, "bench_kernels: %s failed: %s %s\n", call, err->cuda_error,
			err->message);
	return false;
}

/* One join; *wall_ms its wall clock, *checksum over every value handed out */
static bool
RunJoin(const GjKernels *k, GjVariant variant, GjMaterialize materialize,
		const Side *inner, const Side *outer, GjStats *stats, double *wall_ms,
		uint64_t *checksum, int64_t *nmatches)
{
	GjJoinSpec	spec;
	GjContext  *ctx = NULL;
	GjMatchRound round;
	GjError		err;
	double		start;
	bool		ok = false;

	memset(&spec, 0, sizeof(spec));
	spec.variant = variant;
	spec.materialize = materialize;
	spec.outer_ncolumns = 2;
	spec.outer_widths[0] = 4;
	spec.outer_widths[1] = 8;
	spec.inner_ncolumns = 2;
	spec.inner_widths[0] = 4;
	spec.inner_widths[1] = 8;
	spec.max_matches = ROUND_MATCHES;
	memset(&err, 0, sizeof(err));
	*checksum = 0;

	if (!Check(k->context_create(&ctx, &spec, &err), &err, "context_create"))
		return false;
	start = gj_clock_ms();
	if (!Check(k->build(ctx, &inner->batch, &err), &err, "build") ||
		!Check(k->count(ctx, &outer->batch, nmatches, &err), &err, "count"))
		goto done;
	for (int64_t first = 0; first < *nmatches; first += round.nmatches)
	{
		if (!Check(k->retrieve(ctx, first, &round, &err), &err, "retrieve"))
			goto done;
		/* a cheap look at the round, outside the timed calls' own clocks */
		for (int64_t m = 0; m < round.nmatches; m += 997)
			*checksum += ((const uint64_t *) round.outer_values[1])[m] ^
				((const uint64_t *) round.inner_values[1])[m] ^
				((const uint32_t *) round.inner_values[0])[m];
	}
	*wall_ms = gj_clock_ms() - start;
	ok = true;

done:
	k->context_stats(ctx, stats);
	k->context_destroy(ctx);
	return ok;
}

/*
 * Time variant number v on one workload, GFUR then GFTR, and print a line
 * for each; false when a call fails or the two hand out different values
 */
static bool
BenchVariant(const GjKernels *k, const char *workload, int v,
			 const Side *inner, const Side *outer)
{
	uint64_t	checksums[2] = {0, 0};

	for (int m = 0; m < 2; m++)
	{
		GjMaterialize materialize = m == 0 ? GJ_MATERIALIZE_GFUR : GJ_MATERIALIZE_GFTR;
		GjStats		best;
		double		best_ms = -1.0;
		int64_t		nmatches = 0;

		memset(&best, 0, sizeof(best));
		for (int r = 0; r < REPEATS; r++)
		{
			GjStats		stats;
			double		wall_ms = 0.0;

			if (!RunJoin(k, bench_variants[v], materialize, inner, outer,
						 &stats, &wall_ms, &checksums[m], &nmatches))
				return false;
			if (best_ms < 0.0 || wall_ms < best_ms)
			{
				best_ms = wall_ms;
				best = stats;
			}
		}
		printf("%-22s %-5s %-5s %10lld %9.1f %9.1f %9.1f %9.1f %9.1f  %s\n",
			   workload, bench_variant_names[v], m == 0 ? "GFUR" : "GFTR",
			   (long long) nmatches, best_ms, best.build_ms, best.probe_ms,
			   best.materialize_ms, best.transfer_ms, best.detail);
		fflush(stdout);
	}
	if (checksums[0] != checksums[1])
	{
		printf("%s: GFUR and GFTR handed out different values (checksums %llx, %llx)\n",
			   bench_variant_names[v], (unsigned long long) checksums[0],
			   (unsigned long long) checksums[1]);
		return false;
	}
	return true;
}

int
main(int argc, char **argv)
{
	static const char *const workloads[] = {
		"PK-FK, dense keys", "PK-FK, 64-bit keys", "M:N x10, 64-bit keys"
	};
	int64_t		n = argc > 1 ? atoll(argv[1]) : 10000000;
	const GjKernels *k = &gj_cpu_kernels;

#ifdef GPUJOIN_WITH_CUDA
	{
		GjError		err;
		GjDeviceInfo info;

		memset(&err, 0, sizeof(err));
		if (gj_cuda_device_count(&err) > 0 &&
			gj_cuda_device_info(0, &info, &err) == GJ_OK)
		{
			k = &gj_cuda_kernels;
			printf("CUDA device 0: %s, %d multiprocessors\n", info.name,
				   info.multiprocessors);
		}
	}
#endif
	printf("kernels \"%s\", %lld inner rows, 2 + 2 payload columns (4 and 8 bytes), rounds of %lld matches; fastest of %d runs\n",
		   k->name, (long long) n, (long long) ROUND_MATCHES, REPEATS);
	printf("%-22s %-5s %-5s %10s %9s %9s %9s %9s %9s  %s\n", "workload",
		   "var.", "mat.", "matches", "total ms", "build", "probe",
		   "material.", "copies", "build's choice");

	for (int w = 0; w < 3; w++)
	{
		Side		inner;
		Side		outer;

		MakeWorkload(w, n, &inner, &outer);
		for (int v = 0; v < NUM_BENCH_VARIANTS; v++)
		{
			if (!BenchVariant(k, workloads[w], v, &inner, &outer))
				return 1;
		}
		FreeSide(&inner);
		FreeSide(&outer);
	}
	return 0;
}
