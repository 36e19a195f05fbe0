/*-------------------------------------------------------------------------
 *
 * bench_groupby.c
 *	  The group-by grid: device time of the grouped aggregation of a join's
 *	  matches with each group-by variant (HASH, SHARED, SORT, SORT_TR), over
 *	  rows, groups, aggregates and key skew (make -C cuda bench-groupby)
 *
 * One join per size: an inner side of N rows (N = 10^5 .. 10^L, --max-log10
 * L, 8 by default; --min-log10 starts past 10^5) with unique keys 0 .. N - 1
 * and the payload columns u (int8, uniform random), z (int8, log-uniform
 * over 1 .. N, a Zipf-like law of exponent 1) and four int4 values; an
 * outer side of the
 * same keys, so N matches.  For each number of groups G (1, 10, .. up to
 * N) and each skew, the group key is "u % G" or "z % G" (a device
 * expression); 1, 2 or 4 aggregates sum the int4 values.  Per case and
 * variant: a warm-up, then the median of --runs (3) runs of agg_begin and
 * every round's aggregate (the round's gather included, the same for every
 * variant), as wall time on the host (each aggregate call waits for the
 * device).  Every variant must find the same number of groups, or the
 * program says MISMATCH and exits 1.
 *
 * --variant hash, shared, sort or sort_tr runs that one alone.
 *
 * Output: CSV on stdout, one line per case and variant:
 *	rows,groups,aggs,skew,variant,ms
 * The cost model's constants are fitted to it (bench/groupby_fit.py).
 *
 * IDENTIFICATION
 *	  bench/kernels/bench_groupby.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "gpujoin_kernels.h"
#include "bench_util.h"

#define MAX_RUNS 15

static void *
Alloc(size_t bytes)
{
	void	   *p = malloc(bytes > 0 ? bytes : 1);

	if (p == NULL)
	{
		fprintf(stderr, "bench_groupby: out of memory (%zu bytes)\n", bytes);
		exit(1);
	}
	return p;
}

/* The spec: key = input "keycol" % groups; sums of naggs int4 values */
static void
MakeSpec(GjAggSpec *spec, int keycol, int64_t groups, int naggs, GjAggVariant variant)
{
	memset(spec, 0, sizeof(*spec));
	spec->ninputs = 2 + 4;
	for (int i = 0; i < 6; i++)
	{
		spec->inputs[i].side = GJ_SIDE_INNER;
		spec->inputs[i].column = (int8_t) i;
		spec->inputs[i].kind = GJ_KEY_SIGNED;
		spec->inputs[i].type = i < 2 ? GJ_EXPR_INT8 : GJ_EXPR_INT4;
	}
	spec->nkeys = 1;
	gj_agg_expr_mod(&spec->keys[0], keycol, GJ_EXPR_INT8, groups);
	spec->naggs = naggs;
	for (int a = 0; a < naggs; a++)
	{
		spec->aggs[a].kind = GJ_AGG_SUM;
		spec->aggs[a].type = GJ_EXPR_INT4;
		spec->aggs[a].has_arg = true;
		gj_agg_expr_input(&spec->aggs[a].arg, 2 + a, GJ_EXPR_INT4);
	}
	spec->groups_hint = groups;
	spec->variant = (uint8_t) variant;
}

/* One run: the milliseconds of agg_begin and every round; *ngroups found */
static double
RunOnce(const GjKernels *k, GjContext *ctx, const GjAggSpec *spec, int64_t nmatches,
		int64_t round, int64_t *ngroups)
{
	GjError		err;
	GjAggResult r;
	double		start;
	double		ms;

	memset(&err, 0, sizeof(err));
	start = gj_clock_ms();
	BenchCheck("bench_groupby", k->agg_begin(ctx, spec, &err), &err, "agg_begin");
	for (int64_t first = 0; first < nmatches; first += round)
	{
		int64_t		n = 0;
		int64_t		undecided = 0;

		BenchCheck("bench_groupby", k->aggregate(ctx, first, &n, &undecided, &err), &err, "aggregate");
	}
	ms = gj_clock_ms() - start;
	BenchCheck("bench_groupby", k->agg_result(ctx, &r, &err), &err, "agg_result");
	*ngroups = r.ngroups;
	return ms;
}

int
main(int argc, char **argv)
{
	const GjKernels *k = &gj_cpu_kernels;
	int			runs = 3;
	int			min_log10 = 5;
	int			max_log10 = 8;
	int			naggs_list[] = {1, 2, 4};
	int			only = -1;		/* --variant: that one alone */

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (strcmp(argv[i], "--max-log10") == 0 && i + 1 < argc)
			max_log10 = atoi(argv[++i]);
		else if (strcmp(argv[i], "--min-log10") == 0 && i + 1 < argc)
			min_log10 = atoi(argv[++i]);
		else if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc)
		{
			i++;
			only = strcmp(argv[i], "hash") == 0 ? GJ_AGG_HASH :
				strcmp(argv[i], "shared") == 0 ? GJ_AGG_SHARED :
				strcmp(argv[i], "sort") == 0 ? GJ_AGG_SORT :
				strcmp(argv[i], "sort_tr") == 0 ? GJ_AGG_SORT_TR : -2;
			if (only == -2)
			{
				fprintf(stderr, "bench_groupby: --variant is hash, shared, sort or sort_tr\n");
				return 2;
			}
		}
		else
		{
			fprintf(stderr, "usage: bench_groupby [--runs N] [--min-log10 L] [--max-log10 L] [--variant V]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > MAX_RUNS)
		runs = 3;
#ifdef GPUJOIN_WITH_CUDA
	{
		GjError		err;

		if (gj_cuda_device_count(&err) > 0)
			k = &gj_cuda_kernels;
		else
			fprintf(stderr, "bench_groupby: no GPU (%s): the CPU twin, every variant alike\n",
					err.message);
	}
#endif
	printf("rows,groups,aggs,skew,variant,ms\n");
	for (int l = min_log10; l <= max_log10; l++)
	{
		int64_t		n = 1;
		int64_t		round;
		uint64_t   *keys;
		int64_t    *u;
		int64_t    *z;
		int32_t    *v[4];
		GjColumn	icols[6];
		GjBatch		inner;
		GjBatch		outer;
		GjJoinSpec	js;
		GjContext  *ctx = NULL;
		GjError		err;
		int64_t		nmatches = 0;

		for (int i = 0; i < l; i++)
			n *= 10;
		round = n < (INT64_C(1) << 24) ? n : (INT64_C(1) << 24);
		keys = Alloc(n * sizeof(uint64_t));
		u = Alloc(n * sizeof(int64_t));
		z = Alloc(n * sizeof(int64_t));
		for (int a = 0; a < 4; a++)
			v[a] = Alloc(n * sizeof(int32_t));
		for (int64_t i = 0; i < n; i++)
		{
			uint64_t	h = BenchMix((uint64_t) i);
			double		x = (double) (BenchMix(h) >> 11) / 9007199254740992.0;

			keys[i] = (uint64_t) i;
			u[i] = (int64_t) (h >> 1);
			z[i] = (int64_t) floor(exp(x * log((double) n)));
			for (int a = 0; a < 4; a++)
				v[a][i] = (int32_t) (BenchMix(h + a + 1) % 2000001) - 1000000;
		}
		memset(icols, 0, sizeof(icols));
		icols[0].values = u;
		icols[1].values = z;
		for (int a = 0; a < 4; a++)
			icols[2 + a].values = v[a];
		memset(&inner, 0, sizeof(inner));
		inner.keys = keys;
		inner.nrows = n;
		inner.columns = icols;
		memset(&outer, 0, sizeof(outer));
		outer.keys = keys;
		outer.nrows = n;
		memset(&js, 0, sizeof(js));
		js.variant = GJ_VARIANT_NPHJ;
		js.materialize = GJ_MATERIALIZE_GFUR;
		js.inner_ncolumns = 6;
		js.inner_widths[0] = js.inner_widths[1] = 8;
		for (int a = 0; a < 4; a++)
			js.inner_widths[2 + a] = 4;
		js.outer_ncolumns = 0;
		js.max_matches = round;
		memset(&err, 0, sizeof(err));
		BenchCheck("bench_groupby", k->context_create(&ctx, &js, &err), &err, "context_create");
		BenchCheck("bench_groupby", k->build(ctx, &inner, &err), &err, "build");
		BenchCheck("bench_groupby", k->count(ctx, &outer, &nmatches, &err), &err, "count");

		for (int64_t groups = 1; groups <= n; groups *= 10)
			for (int skew = 0; skew < 2; skew++)
				for (int ai = 0; ai < 3; ai++)
				{
					int64_t		found[GJ_AGG_NUM_VARIANTS] = {0};
					static const char *const names[GJ_AGG_NUM_VARIANTS] = {
						"hash", "shared", "sort", "sort_tr"
					};
					int			first = -1;

					for (int variant = 0; variant < GJ_AGG_NUM_VARIANTS; variant++)
					{
						if (only >= 0 && variant != only)
						{
							found[variant] = -1;	/* not run */
							continue;
						}
						GjAggSpec	spec;
						double		ms[MAX_RUNS];

						MakeSpec(&spec, skew, groups, naggs_list[ai], (GjAggVariant) variant);
						(void) RunOnce(k, ctx, &spec, nmatches, round, &found[variant]);
						for (int r = 0; r < runs; r++)
							ms[r] = RunOnce(k, ctx, &spec, nmatches, round, &found[variant]);
						qsort(ms, runs, sizeof(double), BenchCompareDouble);
						printf("%lld,%lld,%d,%s,%s,%.3f\n", (long long) n, (long long) groups,
							   naggs_list[ai], skew ? "zipf" : "uniform",
							   names[variant], ms[runs / 2]);
						fflush(stdout);
					}
					/* every variant run finds the same number of groups */
					for (int variant = 0; variant < GJ_AGG_NUM_VARIANTS; variant++)
					{
						if (found[variant] < 0)
							continue;
						if (first >= 0 && found[variant] != found[first])
						{
							printf("MISMATCH: %lld groups by %s, %lld by %s\n",
								   (long long) found[first], names[first],
								   (long long) found[variant], names[variant]);
							return 1;
						}
						first = variant;
					}
				}
		k->context_destroy(ctx);
		free(keys);
		free(u);
		free(z);
		for (int a = 0; a < 4; a++)
			free(v[a]);
	}
	return 0;
}
