/*-------------------------------------------------------------------------
 *
 * bench_theta.c
 *	  The NLJ tile sweep: count time of the tiled nested-loop theta join for
 *	  each tile size and number of terms (make -C cuda bench-theta)
 *
 * The inner tile held in shared memory is tuned per device (Bellas and
 * Gounaris 2017, §5.2, §5.4).  This measures it on ours: for 1, 2 and 4
 * terms (term t is "inner_t < outer_t"; about 1 % of the pairs hold for
 * one term), every tile size from GJ_NLJ_TILE_ALIGN rows up to
 * what fits GJ_NLJ_TILE_BYTES, an outer and an inner side of 2^N rows each
 * (N = --log2-rows, 17 by default): the median over --runs runs (5) of the
 * count phase (GjStats.probe_ms, copies excluded), as comparisons per
 * second.  Every run of one term count must find the same number of
 * matches, or the program says MISMATCH and exits 1.  The tile size the
 * extension uses (gj_nlj_tile_rows) is marked.
 *
 * Output: one Markdown table on stdout.
 *
 * IDENTIFICATION
 *	  bench/kernels/bench_theta.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "gpujoin_kernels.h"
#include "bench_util.h"

#define MAX_RUNS 15

int
main(int argc, char **argv)
{
#ifdef GPUJOIN_WITH_CUDA
	const GjKernels *kernels = &gj_cuda_kernels;
	int			log2_rows = 17;
	int			runs = 5;
	int64_t		n;
	uint64_t   *outer_terms[GJ_MAX_TERMS];
	uint64_t   *inner_terms[GJ_MAX_TERMS];
	static const int term_counts[] = {1, 2, 4};
	int			failed = 0;
	GjError		err;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--log2-rows") == 0 && i + 1 < argc)
			log2_rows = atoi(argv[++i]);
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else
		{
			fprintf(stderr, "usage: bench_theta [--log2-rows N] [--runs R]\n");
			return 2;
		}
	}
	if (log2_rows < 10 || log2_rows > 24 || runs < 1 || runs > MAX_RUNS)
	{
		fprintf(stderr, "bench_theta: --log2-rows 10..24, --runs 1..%d\n", MAX_RUNS);
		return 2;
	}
	if (gj_cuda_device_count(&err) < 1)
	{
		fprintf(stderr, "bench_theta: no CUDA device: %s\n", err.message);
		return 1;
	}
	n = INT64_C(1) << log2_rows;

	/*
	 * Inner values uniform over [0, 2^32), outer values near the bottom, so
	 * that inner < outer holds for about 1 % of the pairs per term
	 */
	for (int t = 0; t < GJ_MAX_TERMS; t++)
	{
		outer_terms[t] = malloc(n * sizeof(uint64_t));
		inner_terms[t] = malloc(n * sizeof(uint64_t));
		if (outer_terms[t] == NULL || inner_terms[t] == NULL)
		{
			fprintf(stderr, "bench_theta: out of memory\n");
			return 1;
		}
		for (int64_t i = 0; i < n; i++)
		{
			inner_terms[t][i] = BenchMix((uint64_t) t << 40 | (uint64_t) i) >> 32;
			outer_terms[t][i] = BenchMix((uint64_t) (t + 8) << 40 | (uint64_t) i) % (UINT64_C(1) << 32) / 50;
		}
	}

	printf("NLJ count phase, %lld x %lld rows, median of %d runs (count only, copies excluded)\n\n",
		   (long long) n, (long long) n, runs);
	printf("| terms | tile rows | shared memory | count ms | comparisons/s | matches |\n");
	printf("|---:|---:|---:|---:|---:|---:|\n");

	for (size_t c = 0; c < sizeof(term_counts) / sizeof(term_counts[0]); c++)
	{
		int			nterms = term_counts[c];
		int64_t		expected = -1;

		for (int tile = GJ_NLJ_TILE_ALIGN;
			 (size_t) tile * (nterms * sizeof(uint64_t) + 1) <= GJ_NLJ_TILE_BYTES;
			 tile += GJ_NLJ_TILE_ALIGN)
		{
			GjJoinSpec	spec;
			GjContext  *ctx = NULL;
			GjBatch		outer;
			GjBatch		inner;
			double		ms[MAX_RUNS];
			int64_t		matches = 0;

			memset(&spec, 0, sizeof(spec));
			spec.variant = GJ_VARIANT_NLJ;
			spec.materialize = GJ_MATERIALIZE_GFUR;
			spec.row_ids = true;
			spec.nterms = nterms;
			for (int t = 0; t < nterms; t++)
				spec.ops[t] = GJ_THETA_LT;
			spec.max_matches = n;
			memset(&outer, 0, sizeof(outer));
			memset(&inner, 0, sizeof(inner));
			outer.nrows = inner.nrows = n;
			for (int t = 0; t < nterms; t++)
			{
				outer.terms[t] = outer_terms[t];
				inner.terms[t] = inner_terms[t];
			}

			gj_nlj_tile_rows_override = tile;
			BenchCheck("bench_theta", kernels->context_create(&ctx, &spec, &err), &err, "context_create");
			BenchCheck("bench_theta", kernels->build(ctx, &inner, &err), &err, "build");
			for (int r = -1; r < runs; r++)
			{
				GjStats		before;
				GjStats		after;

				kernels->context_stats(ctx, &before);
				BenchCheck("bench_theta", kernels->count(ctx, &outer, &matches, &err), &err, "count");
				kernels->context_stats(ctx, &after);
				if (r >= 0)
					ms[r] = after.probe_ms - before.probe_ms;	/* r = -1 warms up */
			}
			kernels->context_destroy(ctx);
			qsort(ms, runs, sizeof(double), BenchCompareDouble);
			if (expected < 0)
				expected = matches;
			else if (matches != expected)
			{
				printf("MISMATCH: %d terms, tile %d: %lld matches, %lld with the first tile\n",
					   nterms, tile, (long long) matches, (long long) expected);
				failed = 1;
			}
			printf("| %d | %d%s | %zu B | %.3f | %.3g | %lld |\n", nterms, tile,
				   tile == gj_nlj_tile_rows(nterms) ? " (default)" : "",
				   (size_t) tile * (nterms * sizeof(uint64_t) + 1), ms[runs / 2],
				   (double) n * n * nterms / (ms[runs / 2] / 1000.0), (long long) matches);
		}
	}
	gj_nlj_tile_rows_override = 0;
	return failed;
#else
	(void) argc;
	(void) argv;
	fprintf(stderr, "bench_theta: built without CUDA (WITH_CUDA=0)\n");
	return 1;
#endif
}
