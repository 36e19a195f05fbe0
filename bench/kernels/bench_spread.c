/*-------------------------------------------------------------------------
 *
 * bench_spread.c
 *	  One large equi-join on one device against the same join spread over
 *	  several (gj_spread_kernels): broadcast and partitioned by key
 *
 * The join of the multi-GPU papers (Rui 2020, ch. 5; Paul et al. 2021):
 * 2^R inner rows with unique 64-bit keys and an int32 payload, 2^R outer
 * rows each matching one inner row (a foreign key) with an int32 payload,
 * every match retrieved with both payloads.  For each number of devices
 * given, the join runs on that many GPUs (round the physical ones; with
 * --cpu, logical devices of the CPU twin), one device as it is, more
 * broadcast and partitioned; each way the build, the counts and the
 * retrieval of the outer chunks are timed apart, the best of --reps runs.
 * Both sides lie in page-locked host memory, as the executor's batches do.
 *
 *   bench_spread [--log2-rows R] [--chunk-log2 C] [--devices 1,2,4]
 *                [--variant nphj|phj] [--reps N] [--cpu] [--csv FILE]
 *
 * IDENTIFICATION
 *	  bench/kernels/bench_spread.c
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "common.h"

#define PROGRAM "bench_spread"
#define GEN_THREADS 16

typedef struct Data
{
	int64_t		rows;
	uint64_t   *inner_keys;
	int32_t    *inner_values;
	uint64_t   *outer_keys;
	int32_t    *outer_values;
} Data;

typedef struct GenPart
{
	Data	   *data;
	int64_t		start;
	int64_t		end;
} GenPart;

/* rows start .. end - 1 of both sides */
static void *
GenMain(void *arg)
{
	GenPart    *g = (GenPart *) arg;
	Data	   *d = g->data;

	for (int64_t i = g->start; i < g->end; i++)
	{
		/* BenchMix is a bijection: unique inner keys */
		d->inner_keys[i] = BenchMix((uint64_t) i);
		d->inner_values[i] = (int32_t) i;
		d->outer_keys[i] = BenchMix(BenchMix((uint64_t) i ^ 0x5bd1e995) % (uint64_t) d->rows);
		d->outer_values[i] = (int32_t) (i * 7);
	}
	return NULL;
}

/* Host memory for the data: the base's staging memory (page-locked on a
 * GPU, as the executor's batches are), else malloc's */
static void *
HostAlloc(const GjKernels *base, size_t bytes)
{
	void	   *p = base->stage_alloc(bytes);

	return p != NULL ? p : malloc(bytes);
}

static void
Generate(const GjKernels *base, Data *d, int64_t rows)
{
	pthread_t	threads[GEN_THREADS];
	GenPart		parts[GEN_THREADS];

	d->rows = rows;
	d->inner_keys = HostAlloc(base, rows * sizeof(uint64_t));
	d->inner_values = HostAlloc(base, rows * sizeof(int32_t));
	d->outer_keys = HostAlloc(base, rows * sizeof(uint64_t));
	d->outer_values = HostAlloc(base, rows * sizeof(int32_t));
	if (!d->inner_keys || !d->inner_values || !d->outer_keys || !d->outer_values)
	{
		fprintf(stderr, "%s: out of host memory for %lld rows\n", PROGRAM, (long long) rows);
		exit(1);
	}
	for (int t = 0; t < GEN_THREADS; t++)
	{
		parts[t].data = d;
		parts[t].start = rows * t / GEN_THREADS;
		parts[t].end = rows * (t + 1) / GEN_THREADS;
		pthread_create(&threads[t], NULL, GenMain, &parts[t]);
	}
	for (int t = 0; t < GEN_THREADS; t++)
		pthread_join(threads[t], NULL);
}

typedef struct Result
{
	double		build_ms;
	double		count_ms;
	double		retrieve_ms;
	int64_t		matches;
	int64_t		exchanged;
	int64_t		checksum;
	GjStats		stats;			/* the context's (the slowest device's times) */
} Result;

/* One run: build, then each outer chunk counted and retrieved */
static Result
RunOnce(const GjKernels *k, const GjJoinSpec *spec, const Data *d, int64_t chunk_rows)
{
	GjContext  *ctx = NULL;
	GjError		err;
	GjColumn	inner_col = {d->inner_values, NULL};
	GjBatch		inner;
	Result		r;
	GjStats		stats;
	double		t0;

	memset(&r, 0, sizeof(r));
	memset(&err, 0, sizeof(err));
	memset(&inner, 0, sizeof(inner));
	inner.keys = d->inner_keys;
	inner.nrows = d->rows;
	inner.columns = &inner_col;
	BenchCheck(PROGRAM, k->context_create(&ctx, spec, &err), &err, "context_create");
	t0 = gj_clock_ms();
	BenchCheck(PROGRAM, k->build(ctx, &inner, &err), &err, "build");
	r.build_ms = gj_clock_ms() - t0;
	for (int64_t start = 0; start < d->rows; start += chunk_rows)
	{
		int64_t		n = d->rows - start < chunk_rows ? d->rows - start : chunk_rows;
		GjColumn	outer_col = {d->outer_values + start, NULL};
		GjBatch		outer;
		int64_t		nmatches = 0;

		memset(&outer, 0, sizeof(outer));
		outer.keys = d->outer_keys + start;
		outer.nrows = n;
		outer.columns = &outer_col;
		t0 = gj_clock_ms();
		BenchCheck(PROGRAM, k->count(ctx, &outer, &nmatches, &err), &err, "count");
		r.count_ms += gj_clock_ms() - t0;
		t0 = gj_clock_ms();
		for (int64_t first = 0; first < nmatches;)
		{
			GjMatchRound round;

			BenchCheck(PROGRAM, k->retrieve(ctx, first, &round, &err), &err, "retrieve");
			/* touch the round as a caller would: one value per match */
			for (int64_t m = 0; m < round.nmatches; m += 4096)
				r.checksum += ((const int32_t *) round.inner_values[0])[m] +
					((const int32_t *) round.outer_values[0])[m];
			first += round.nmatches;
		}
		r.retrieve_ms += gj_clock_ms() - t0;
		r.matches += nmatches;
	}
	k->context_stats(ctx, &stats);
	r.exchanged = stats.bytes_exchanged;
	r.stats = stats;
	k->context_destroy(ctx);
	return r;
}

int
main(int argc, char **argv)
{
	int			log2_rows = 27;
	int			chunk_log2 = 26;
	int			reps = 3;
	bool		cpu = false;
	const char *devices_arg = "1,2";
	const char *csv_path = NULL;
	GjVariant	variant = GJ_VARIANT_PHJ;
	int			physical = 1;
	const GjKernels *base = &gj_cpu_kernels;
	FILE	   *csv = NULL;
	Data		d;
	int64_t		rows;
	double		single_total = 0.0;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--log2-rows") == 0 && i + 1 < argc)
			log2_rows = atoi(argv[++i]);
		else if (strcmp(argv[i], "--chunk-log2") == 0 && i + 1 < argc)
			chunk_log2 = atoi(argv[++i]);
		else if (strcmp(argv[i], "--devices") == 0 && i + 1 < argc)
			devices_arg = argv[++i];
		else if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc)
		{
			i++;
			variant = strcmp(argv[i], "nphj") == 0 ? GJ_VARIANT_NPHJ : GJ_VARIANT_PHJ;
		}
		else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--cpu") == 0)
			cpu = true;
		else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
			csv_path = argv[++i];
		else
		{
			fprintf(stderr, "usage: %s [--log2-rows R] [--chunk-log2 C] [--devices 1,2,4] [--variant nphj|phj] [--reps N] [--cpu] [--csv FILE]\n", PROGRAM);
			return 2;
		}
	}
	rows = (int64_t) 1 << log2_rows;
#ifdef GPUJOIN_WITH_CUDA
	if (!cpu)
	{
		GjError		err;

		memset(&err, 0, sizeof(err));
		physical = gj_cuda_device_count(&err);
		if (physical <= 0)
		{
			fprintf(stderr, "%s: no CUDA device (%s); --cpu runs the CPU twin\n", PROGRAM, err.message);
			return 1;
		}
		base = &gj_cuda_kernels;
		/* keep freed device memory in the pools between runs, as the
		 * gpujoin service does: the best of the runs is then a warm one */
		gj_cuda_pool_keep((size_t) 1 << 40, (size_t) 1 << 32);
	}
#else
	cpu = true;
#endif
	printf("%s: 2^%d inner x 2^%d outer rows, chunks of 2^%d, %s, on %s (%d physical device%s)\n",
		   PROGRAM, log2_rows, log2_rows, chunk_log2, variant == GJ_VARIANT_PHJ ? "PHJ" : "NPHJ",
		   cpu ? "the CPU twin" : "CUDA", physical, physical == 1 ? "" : "s");
#ifdef GPUJOIN_WITH_CUDA
	/* the links' peak, for the exchange's bandwidth below: one copy at a time */
	for (int dev = 1; !cpu && dev < physical; dev++)
	{
		GjError		err;
		double		gbps = gj_cuda_peer_gbps(0, dev, (size_t) 1 << 30, &err);

		if (gbps > 0)
			printf("  one 1 GB copy from device 0 to device %d alone: %.1f GB/s\n", dev, gbps);
	}
#endif
	Generate(base, &d, rows);
	if (csv_path != NULL && (csv = fopen(csv_path, "w")) != NULL)
		fprintf(csv, "rows,devices,physical,spread,variant,build_ms,count_ms,retrieve_ms,total_ms,matches,exchanged_bytes,speedup\n");

	for (const char *p = devices_arg; *p != '\0';)
	{
		int			n = atoi(p);

		for (int s = 0; s < (n > 1 ? 2 : 1); s++)
		{
			GjJoinSpec	spec;
			const GjKernels *k = n > 1 ? gj_spread_kernels(base) : base;
			Result		best;
			const char *spread = n == 1 ? "one device" : s == 0 ? "broadcast" : "partition";
			double		total;

			memset(&spec, 0, sizeof(spec));
			spec.variant = variant;
			spec.materialize = GJ_MATERIALIZE_GFUR;
			spec.outer_ncolumns = 1;
			spec.outer_widths[0] = 4;
			spec.inner_ncolumns = 1;
			spec.inner_widths[0] = 4;
			spec.max_matches = (int64_t) 1 << 24;
			if (n > 1)
			{
				spec.ndevices = n;
				spec.spread = (uint8_t) (s == 0 ? GJ_SPREAD_BROADCAST : GJ_SPREAD_PARTITION);
				for (int dev = 0; dev < n; dev++)
					spec.devices[dev] = dev % physical;
			}
			memset(&best, 0, sizeof(best));
			for (int rep = 0; rep < reps; rep++)
			{
				Result		r = RunOnce(k, &spec, &d, (int64_t) 1 << chunk_log2);

				if (r.matches != rows)
				{
					fprintf(stderr, "%s: %lld matches, expected %lld\n", PROGRAM,
							(long long) r.matches, (long long) rows);
					return 1;
				}
				if (rep == 0 || r.build_ms + r.count_ms + r.retrieve_ms <
					best.build_ms + best.count_ms + best.retrieve_ms)
					best = r;
			}
			total = best.build_ms + best.count_ms + best.retrieve_ms;
			if (n == 1)
				single_total = total;
			printf("  %2d device%s %-10s build %9.1f ms  count %9.1f ms  retrieve %9.1f ms  total %9.1f ms  exchanged %7.2f GB  %5.2fx\n",
				   n, n == 1 ? " " : "s", spread, best.build_ms, best.count_ms, best.retrieve_ms,
				   total, best.exchanged / 1e9, single_total > 0 ? single_total / total : 0.0);
			printf("     (slowest device: copies %.1f ms, build %.1f ms, probe %.1f ms, materialize %.1f ms; %.2f GB to, %.2f GB from the devices)\n",
				   best.stats.transfer_ms, best.stats.build_ms, best.stats.probe_ms,
				   best.stats.materialize_ms, best.stats.bytes_to_device / 1e9,
				   best.stats.bytes_from_device / 1e9);
			if (best.stats.exchange_ms > 0)
				printf("     (exchange, slowest device: %.1f ms, of which copies between devices %.1f ms; %.2f GB received in all, %.1f GB/s over the devices at once)\n",
					   best.stats.exchange_ms, best.stats.exchange_copy_ms,
					   best.stats.bytes_received / 1e9,
					   best.stats.exchange_copy_ms > 0 ?
					   best.stats.bytes_received / 1e6 / best.stats.exchange_copy_ms : 0.0);
			if (csv != NULL)
				fprintf(csv, "%lld,%d,%d,%s,%s,%.1f,%.1f,%.1f,%.1f,%lld,%lld,%.2f\n",
						(long long) rows, n, n < physical ? n : physical, spread,
						variant == GJ_VARIANT_PHJ ? "PHJ" : "NPHJ",
						best.build_ms, best.count_ms, best.retrieve_ms, total,
						(long long) best.matches, (long long) best.exchanged,
						single_total > 0 ? single_total / total : 0.0);
		}
		while (*p != '\0' && *p != ',')
			p++;
		if (*p == ',')
			p++;
	}
	if (csv != NULL)
		fclose(csv);
	return 0;
}
