/*-------------------------------------------------------------------------
 *
 * bench_chain.c
 *	  A star join at the kernels' level: one fact table probed against 1 to
 *	  4 dimension tables, each level's matches handed to the next on the
 *	  device (a chain of joins, cuda/device/chain.c) against the same
 *	  chain with the rounds through the host, as joins stacked one on
 *	  another hand them (each level's matches copied out, the next level's
 *	  rows copied in)
 *
 *   bench_chain [--cpu] [--fact-rows N] [--chunk-rows N] [--dim-rows N]
 *               [--hit P] [--levels 1,2,3,4] [--reps R]
 *
 * The fact table has a key per dimension (uniform over the dimension's
 * keys / P, so that a share P of the probes finds its row) and a 4-byte
 * value; each dimension has unique keys (a primary key) and a 4-byte
 * value.  Fact rows go in chunks of --chunk-rows from page-locked memory
 * (the kernels' stage_alloc, as the executor stages them); every level
 * is NPHJ, GFUR, with rounds as large as a chunk; the last level's
 * matches are copied to the host (retrieve), as the join's output would
 * be.  Times: the dimension builds once, then the median over --reps of
 * all chunks through the chain; bytes: what crossed the bus (each
 * level's context_stats).  CSV on stdout:
 *	levels,mode,fact_rows,dim_rows,hit,matches,build_ms,chain_ms,
 *	bytes_to_device,bytes_from_device
 *
 * IDENTIFICATION
 *	  bench/kernels/bench_chain.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "common.h"
#include "gpujoin_kernels.h"

#define PROGRAM "bench_chain"
#define MAX_DIMS 4

typedef struct Star
{
	int64_t		fact_rows;
	int64_t		dim_rows;
	double		hit;
	uint64_t   *fact_keys[MAX_DIMS];	/* staging memory */
	int32_t    *fact_value;
	uint64_t   *dim_keys[MAX_DIMS];
	int32_t    *dim_value[MAX_DIMS];
} Star;

static void *
Stage(const GjKernels *k, size_t bytes)
{
	void	   *p = k->stage_alloc(bytes);

	if (p == NULL)
		p = malloc(bytes);
	if (p == NULL)
	{
		fprintf(stderr, PROGRAM ": out of memory (%zu bytes)\n", bytes);
		exit(1);
	}
	return p;
}

static void
MakeStar(const GjKernels *k, Star *s)
{
	uint64_t	domain = (uint64_t) ((double) s->dim_rows / s->hit);

	for (int d = 0; d < MAX_DIMS; d++)
	{
		s->fact_keys[d] = Stage(k, (size_t) s->fact_rows * sizeof(uint64_t));
		for (int64_t r = 0; r < s->fact_rows; r++)
			s->fact_keys[d][r] = BenchMix((uint64_t) r * MAX_DIMS + (uint64_t) d) % domain;
		s->dim_keys[d] = Stage(k, (size_t) s->dim_rows * sizeof(uint64_t));
		s->dim_value[d] = Stage(k, (size_t) s->dim_rows * sizeof(int32_t));
		for (int64_t i = 0; i < s->dim_rows; i++)
		{
			/* a permutation of 0 .. dim_rows-1: unique keys */
			s->dim_keys[d][i] = (uint64_t) (((unsigned __int128) i * 1000003) % (uint64_t) s->dim_rows);
			s->dim_value[d][i] = (int32_t) (i & 0x7fffffff);
		}
	}
	s->fact_value = Stage(k, (size_t) s->fact_rows * sizeof(int32_t));
	for (int64_t r = 0; r < s->fact_rows; r++)
		s->fact_value[r] = (int32_t) (r % 1000);
}

/*
 * One run of a chain of L levels over the whole fact table, on_host or
 * not; fills the matches, and adds the levels' copies to *to and *from
 */
static double
RunChain(const GjKernels *k, const Star *s, int L, int64_t chunk_rows, bool on_host,
		 int64_t *matches, double *build_ms, int64_t *to, int64_t *from)
{
	GjJoinSpec	specs[MAX_DIMS];
	int32_t		key_columns[MAX_DIMS];
	int32_t		inner_ncolumns[MAX_DIMS] = {1, 1, 1, 1};
	GjContext  *levels[MAX_DIMS];
	GjColumn	chunk_columns[MAX_DIMS];
	GjColumn	dim_columns[MAX_DIMS];
	GjChain		chain;
	GjError		err;
	double		t0;
	double		elapsed;

	memset(&err, 0, sizeof(err));
	*matches = 0;
	for (int l = 0; l < L; l++)
	{
		GjJoinSpec *sp = &specs[l];

		memset(sp, 0, sizeof(*sp));
		sp->variant = GJ_VARIANT_NPHJ;
		sp->materialize = GJ_MATERIALIZE_GFUR;
		sp->row_ids = true;
		sp->max_matches = chunk_rows;
		sp->inner_ncolumns = 1;
		sp->inner_widths[0] = 4;
		if (l == 0)
		{
			/* the keys of the other levels, then the value */
			sp->outer_ncolumns = L;
			for (int c = 0; c < L - 1; c++)
				sp->outer_widths[c] = 8;
			sp->outer_widths[L - 1] = 4;
			key_columns[0] = 0;
		}
		else
		{
			sp->outer_ncolumns = gj_chain_columns(L, inner_ncolumns, l);
			memcpy(sp->outer_widths, specs[l - 1].outer_widths,
				   (size_t) specs[l - 1].outer_ncolumns * sizeof(int32_t));
			sp->outer_widths[specs[l - 1].outer_ncolumns] = 4;
			sp->outer_widths[specs[l - 1].outer_ncolumns + 1] = 4;
			key_columns[l] = l - 1;
		}
		BenchCheck(PROGRAM, k->context_create(&levels[l], sp, &err), &err, "context_create");
	}

	t0 = gj_clock_ms();
	for (int l = 0; l < L; l++)
	{
		GjBatch		inner;

		memset(&inner, 0, sizeof(inner));
		dim_columns[l].values = s->dim_value[l];
		dim_columns[l].nulls = NULL;
		inner.keys = s->dim_keys[l];
		inner.nrows = s->dim_rows;
		inner.columns = &dim_columns[l];
		BenchCheck(PROGRAM, k->build(levels[l], &inner, &err), &err, "build");
	}
	*build_ms = gj_clock_ms() - t0;
	BenchCheck(PROGRAM, gj_chain_init(&chain, k, L, levels, specs, key_columns, NULL, &err),
			   &err, "gj_chain_init");
	chain.on_host = on_host;

	t0 = gj_clock_ms();
	for (int64_t start = 0; start < s->fact_rows; start += chunk_rows)
	{
		int64_t		n = s->fact_rows - start < chunk_rows ? s->fact_rows - start : chunk_rows;
		GjBatch		chunk;

		for (int c = 0; c < L - 1; c++)
		{
			chunk_columns[c].values = s->fact_keys[c + 1] + start;
			chunk_columns[c].nulls = NULL;
		}
		chunk_columns[L - 1].values = s->fact_value + start;
		chunk_columns[L - 1].nulls = NULL;
		memset(&chunk, 0, sizeof(chunk));
		chunk.keys = s->fact_keys[0] + start;
		chunk.nrows = n;
		chunk.columns = chunk_columns;
		BenchCheck(PROGRAM, gj_chain_count(&chain, &chunk, &err), &err, "gj_chain_count");
		for (;;)
		{
			int64_t		nmatches;

			BenchCheck(PROGRAM, gj_chain_next(&chain, &nmatches, &err), &err, "gj_chain_next");
			if (nmatches == 0)
				break;
			for (int64_t first = 0; first < nmatches;)
			{
				GjMatchRound round;

				BenchCheck(PROGRAM, k->retrieve(levels[L - 1], first, &round, &err),
						   &err, "retrieve");
				first += round.nmatches;
				*matches += round.nmatches;
			}
		}
	}
	elapsed = gj_clock_ms() - t0;

	for (int l = 0; l < L; l++)
	{
		GjStats		stats;

		k->context_stats(levels[l], &stats);
		*to += stats.bytes_to_device;
		*from += stats.bytes_from_device;
		k->context_destroy(levels[l]);
	}
	return elapsed;
}

int
main(int argc, char **argv)
{
	const GjKernels *k = NULL;
	Star		s;
	int64_t		chunk_rows = (int64_t) 1 << 24;
	int			reps = 3;
	int			levels[MAX_DIMS] = {1, 2, 3, 4};
	int			nlevels = 4;
	bool		cpu = false;

	memset(&s, 0, sizeof(s));
	s.fact_rows = 100000000;
	s.dim_rows = 1000000;
	s.hit = 0.5;
	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--cpu") == 0)
			cpu = true;
		else if (strcmp(argv[i], "--fact-rows") == 0 && i + 1 < argc)
			s.fact_rows = atoll(argv[++i]);
		else if (strcmp(argv[i], "--chunk-rows") == 0 && i + 1 < argc)
			chunk_rows = atoll(argv[++i]);
		else if (strcmp(argv[i], "--dim-rows") == 0 && i + 1 < argc)
			s.dim_rows = atoll(argv[++i]);
		else if (strcmp(argv[i], "--hit") == 0 && i + 1 < argc)
			s.hit = atof(argv[++i]);
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--levels") == 0 && i + 1 < argc)
		{
			char	   *p = argv[++i];

			nlevels = 0;
			while (*p != '\0' && nlevels < MAX_DIMS)
			{
				levels[nlevels++] = (int) strtol(p, &p, 10);
				if (*p == ',')
					p++;
			}
		}
		else
		{
			fprintf(stderr, "usage: " PROGRAM " [--cpu] [--fact-rows N] [--chunk-rows N] [--dim-rows N] [--hit P] [--levels 1,2,3,4] [--reps R]\n");
			return 2;
		}
	}
	if (s.hit <= 0 || s.hit > 1 || reps < 1 || chunk_rows < 1 || s.dim_rows < 1)
	{
		fprintf(stderr, PROGRAM ": --hit in (0, 1], --reps, --chunk-rows and --dim-rows at least 1\n");
		return 2;
	}
#ifdef GPUJOIN_WITH_CUDA
	if (!cpu)
	{
		GjError		err;

		memset(&err, 0, sizeof(err));
		if (gj_cuda_device_count(&err) <= 0)
		{
			fprintf(stderr, PROGRAM ": no GPU (%s); --cpu runs the twin\n", err.message);
			return 1;
		}
		/* as the gpujoin service keeps them: pools warm between contexts */
		gj_cuda_pool_keep((size_t) 8 << 30, (size_t) 1 << 30);
		k = &gj_cuda_kernels;
	}
#endif
	if (k == NULL)
		k = &gj_cpu_kernels;
	fprintf(stderr, PROGRAM ": %s, %lld fact rows in chunks of %lld, dimensions of %lld rows, hit %.2f\n",
			k->name, (long long) s.fact_rows, (long long) chunk_rows, (long long) s.dim_rows, s.hit);
	MakeStar(k, &s);

	printf("levels,mode,fact_rows,dim_rows,hit,matches,build_ms,chain_ms,bytes_to_device,bytes_from_device\n");
	for (int i = 0; i < nlevels; i++)
	{
		int			L = levels[i];

		if (L < 1 || L > MAX_DIMS)
			continue;
		for (int mode = 0; mode < 2; mode++)
		{
			bool		on_host = mode == 1;
			double		times[16];
			double		build_ms = 0;
			int64_t		matches = 0;
			int64_t		to = 0;
			int64_t		from = 0;
			int			n = reps < 16 ? reps : 16;

			/* a warm-up, then the runs */
			(void) RunChain(k, &s, L, chunk_rows, on_host, &matches, &build_ms, &to, &from);
			for (int r = 0; r < n; r++)
			{
				to = from = 0;
				times[r] = RunChain(k, &s, L, chunk_rows, on_host, &matches, &build_ms, &to, &from);
			}
			qsort(times, (size_t) n, sizeof(double), BenchCompareDouble);
			printf("%d,%s,%lld,%lld,%.2f,%lld,%.1f,%.1f,%lld,%lld\n", L,
				   on_host ? "through_host" : "on_device", (long long) s.fact_rows,
				   (long long) s.dim_rows, s.hit, (long long) matches, build_ms,
				   times[n / 2], (long long) to, (long long) from);
			fflush(stdout);
		}
	}
	return 0;
}
