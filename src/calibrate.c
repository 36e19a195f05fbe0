/*-------------------------------------------------------------------------
 *
 * calibrate.c
 *	  gpujoin_calibrate(): measure the cost model's constants on this device
 *
 * The planner prices a GPU join with a model (planner_cost.c, ModelDeviceMs)
 * whose constants are rates of this particular device: nanoseconds per row
 * of each variant's passes, per payload column carried through them
 * (GFTR), per match and per payload column gathered, the NLJ comparison
 * rate, and the bus bandwidth.  This runs the kernels themselves, through
 * the same GjKernels table and device contexts a join uses, on synthetic
 * joins, and derives each constant from the phase times the contexts
 * report (GjStats):
 *
 *	- the PK-FK join of `rows` (16M by default) distinct inner keys (random 64-bit values,
 *	  as hashed keys are; NPHJ gets no dense-key shortcut) and as many outer
 *	  rows, each matching one inner row, with no payload column (GFUR), two
 *	  int4 columns a side by row number (GFUR) and two carried through the
 *	  passes (GFTR), for NPHJ, PHJ and SMJ:
 *		<variant>_row_ns	(build + count) / (inner + outer rows)
 *		match_ns			retrieve without columns / matches
 *		gather_ns			(GFUR retrieve with 4 columns - without) /
 *							(matches * 4)
 *		gftr_column_ns		(GFTR build + count - GFUR's) / columns moved
 *							(the inner side's 2 for NPHJ, both sides' 4
 *							otherwise), PHJ and SMJ
 *		gftr_gather_ns		(GFTR retrieve - retrieve without columns) /
 *							(matches * 4), PHJ and SMJ
 *	- a band join of the same keys (each outer row's range holds about one
 *	  inner key): band_row_ns;
 *	- an NLJ of min(rows, 65536)^2 pairs on one comparison (count phase):
 *	  nlj_compare_ns;
 *	- the grouped aggregation of the PK-FK join's matches by "outer column
 *	  % G" (RunGroupBy, the aggregate step's materialize time), HASH, SORT
 *	  and SORT_TR over 1 .. 65536 groups and SHARED over 1 .. 512, one and
 *	  two sums, at rows and rows / 64: preagg_row_ns,
 *	  preagg_contention_groups, preagg_shared_row_ns, preagg_flush_ns,
 *	  preagg_sort_row_ns, preagg_sort_run_ns and preagg_sort_word_ns fitted
 *	  by least squares (MeasureGroupBy);
 *	- every copy of all of the above: transfer_gbps = bytes / copy time.
 *
 * And the host's part:
 *	- gpujoin.cost_per_ms, the planner's units per millisecond on this host:
 *	  PostgreSQL's own serial hash join of two generated tables, its
 *	  estimated total cost over its execution time (EXPLAIN ANALYZE with
 *	  TIMING OFF, the best of three runs after a warm-up);
 *	- gpujoin.extract_cost, the planner's charge per value copied into a
 *	  column batch: a GPU join of two generated tables that match nothing,
 *	  less the Seq Scans of the two and its device work (the join's own
 *	  timers, in the same run), per value the
 *	  planner charges (rows x (columns + keys)), in planner units at the
 *	  cost_per_ms just measured;
 *	- gpujoin.emit_cost, per joined row formed: a join that forms 8 rows
 *	  per input row, less the one matching nothing and its extra device
 *	  work, per row formed, in planner units likewise;
 *	- gpujoin.scan_cost_scale: cost_per_ms over a Seq Scan's estimated cost
 *	  per ms of its time (MeasureHostCosts);
 *	- gpujoin.heap_page_cost and gpujoin.heap_tuple_cost, a side read as
 *	  heap pages: per page, from two tables of the same rows and different
 *	  widths, and per tuple, the rest (MeasureHeapCosts);
 *	- gpujoin.setup_cost, the fixed cost of a GPU join (mostly host work
 *	  around the device: contexts, batches, launches; some 3.6 ms on the
 *	  H200 host, where the device part of a 1024-row join takes 0.8 ms):
 *	  the setup_cost at which a GPU join of 4096 rows a side is priced
 *	  at what it takes, in the units per ms of PostgreSQL's own hash join
 *	  of the same tables (MeasureSetupCost).  Only small joins feel it, and
 *	  they run at more planner units per ms than large ones (the hash
 *	  table stays in cache: about 230 on the H200 host at 10^3 and 10^4
 *	  rows a side, 94 at 10^7), so cost_per_ms would put the crossover an
 *	  order of magnitude too low.
 *
 * Each device figure is the median of three runs after a warm-up, each host
 * figure the best of three (above).  Constants of a
 * variant are averaged where several measure one (match_ns, gather_ns over
 * the three variants).  The result is a row per setting with the value
 * measured, so that an administrator can ALTER SYSTEM SET it; nothing is
 * changed here.  With gpujoin.device = cpu it measures the CPU twin.
 *
 * Superuser only: it takes the device for a while, and its numbers are
 * meant for server-wide settings.
 *
 * IDENTIFICATION
 *	  src/calibrate.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "gpujoin.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/guc.h"

PG_FUNCTION_INFO_V1(gpujoin_calibrate);

#define CALIBRATE_RUNS		3
#define CALIBRATE_COLUMNS	2	/* int4 payload columns a side */
#define CALIBRATE_NLJ_ROWS	65536

/* The synthetic data: keys and two int4 columns a side */
typedef struct CalibrateData
{
	int64		rows;
	uint64	   *inner_keys;
	uint64	   *outer_keys;
	uint64	   *outer_hi;		/* BAND: upper bound of each outer range */
	int32	   *inner_cols[CALIBRATE_COLUMNS];
	int32	   *outer_cols[CALIBRATE_COLUMNS];
} CalibrateData;

/* One measured run: GjStats of a context over build, count, retrieve */
typedef struct CalibrateRun
{
	double		build_ms;
	double		probe_ms;
	double		materialize_ms;
	double		transfer_ms;
	double		bytes;
	int64		matches;
} CalibrateRun;

static void
MakeData(CalibrateData *data, int64 rows)
{
	uint64		spacing = PG_UINT64_MAX / (uint64) rows;

	data->rows = rows;
	data->inner_keys = palloc_extended(rows * sizeof(uint64), MCXT_ALLOC_HUGE);
	data->outer_keys = palloc_extended(rows * sizeof(uint64), MCXT_ALLOC_HUGE);
	data->outer_hi = palloc_extended(rows * sizeof(uint64), MCXT_ALLOC_HUGE);
	for (int c = 0; c < CALIBRATE_COLUMNS; c++)
	{
		data->inner_cols[c] = palloc_extended(rows * sizeof(int32), MCXT_ALLOC_HUGE);
		data->outer_cols[c] = palloc_extended(rows * sizeof(int32), MCXT_ALLOC_HUGE);
	}
	for (int64 i = 0; i < rows; i++)
	{
		/* distinct (gj_hash64 is a bijection), spread over the whole range */
		uint64		key = gj_hash64((uint64) i);
		uint64		hit = gj_hash64((uint64) (gj_hash64((uint64) i + rows) % (uint64) rows));

		data->inner_keys[i] = key;
		data->outer_keys[i] = hit;	/* some inner row's key: one match */
		/* BAND: about one inner key in [hit, hit + spacing) */
		data->outer_hi[i] = (hit > PG_UINT64_MAX - spacing) ? PG_UINT64_MAX : hit + spacing - 1;
		for (int c = 0; c < CALIBRATE_COLUMNS; c++)
		{
			data->inner_cols[c][i] = (int32) (i + c);
			data->outer_cols[c][i] = (int32) (i - c);
		}
	}
}

/* A side of the synthetic join as a batch, with ncols of its columns */
static GjBatch
DataBatch(const CalibrateData *data, bool outer, int64 rows, int ncols,
		  GjColumn *columns, bool band)
{
	GjBatch		batch;

	memset(&batch, 0, sizeof(batch));
	batch.nrows = rows;
	batch.keys = outer ? data->outer_keys : data->inner_keys;
	batch.keys_hi = (outer && band) ? data->outer_hi : NULL;
	for (int c = 0; c < ncols; c++)
	{
		columns[c].values = outer ? data->outer_cols[c] : data->inner_cols[c];
		columns[c].nulls = NULL;
	}
	batch.columns = columns;
	return batch;
}

/* A device context of the join spec describes, built and counted: the matches */
static int64
OpenJoin(GpuJoinDeviceContext *dev, const GjKernels *kernels, const GjJoinSpec *spec,
		 const GjBatch *inner, const GjBatch *outer)
{
	GjError		err;
	int64_t		nmatches = 0;

	memset(&err, 0, sizeof(err));
	GpuJoinDeviceInit(dev, CurrentMemoryContext);
	GpuJoinDeviceOpen(dev, kernels, spec);
	GpuJoinCheckStatus(kernels->build(dev->ctx, inner, &err), &err,
					   "gpujoin_calibrate: build failed");
	GpuJoinCheckStatus(kernels->count(dev->ctx, outer, &nmatches, &err), &err,
					   "gpujoin_calibrate: count failed");
	return nmatches;
}

/*
 * Run one join on the device: build, count, retrieve every match; the phase
 * times of the median run (by build + count + retrieve) of CALIBRATE_RUNS
 * after a warm-up
 */
static CalibrateRun
RunJoin(const GjKernels *kernels, const CalibrateData *data, GjVariant variant,
		GjMaterialize materialize, int ncols, int64 rows)
{
	CalibrateRun runs[CALIBRATE_RUNS];
	GjJoinSpec	spec;
	GjColumn	inner_columns[GJ_MAX_COLUMNS];
	GjColumn	outer_columns[GJ_MAX_COLUMNS];
	GjBatch		inner;
	GjBatch		outer;
	bool		band = (variant == GJ_VARIANT_BAND);

	memset(&spec, 0, sizeof(spec));
	spec.variant = variant;
	spec.materialize = materialize;
	spec.outer_ncolumns = spec.inner_ncolumns = ncols;
	for (int c = 0; c < ncols; c++)
		spec.outer_widths[c] = spec.inner_widths[c] = sizeof(int32);
	spec.row_ids = (ncols == 0);	/* something to write per match */
	spec.max_matches = rows;	/* every match in one round */
	inner = DataBatch(data, false, rows, ncols, inner_columns, band);
	outer = DataBatch(data, true, rows, ncols, outer_columns, band);
	if (variant == GJ_VARIANT_NLJ)
	{
		/* one term, inner < outer; the caller sets the outer values */
		spec.nterms = 1;
		spec.ops[0] = GJ_THETA_LT;
		inner.terms[0] = data->inner_keys;
		outer.terms[0] = data->outer_hi;
	}

	for (int r = -1; r < CALIBRATE_RUNS; r++)
	{
		/* in memory: its reset callback stays linked until the call ends */
		GpuJoinDeviceContext *dev = palloc0(sizeof(GpuJoinDeviceContext));
		GjStats		stats;
		GjError		err;
		int64_t		nmatches = 0;

		CHECK_FOR_INTERRUPTS();
		memset(&err, 0, sizeof(err));
		nmatches = OpenJoin(dev, kernels, &spec, &inner, &outer);
		for (int64 first = 0; first < nmatches;)
		{
			GjMatchRound round;

			GpuJoinCheckStatus(kernels->retrieve(dev->ctx, first, &round, &err), &err,
							   "gpujoin_calibrate: retrieve failed");
			if (round.nmatches <= 0)
				elog(ERROR, "gpujoin_calibrate: an empty round at match " INT64_FORMAT, first);
			first += round.nmatches;
		}
		GpuJoinDeviceStats(dev, &stats);
		GpuJoinDeviceClose(dev);
		if (r >= 0)
		{
			runs[r].build_ms = stats.build_ms;
			runs[r].probe_ms = stats.probe_ms;
			runs[r].materialize_ms = stats.materialize_ms;
			runs[r].transfer_ms = stats.transfer_ms;
			runs[r].bytes = (double) (stats.bytes_to_device + stats.bytes_from_device);
			runs[r].matches = nmatches;
		}
	}

	/* the median by device time (three runs: sort them by hand) */
	for (int i = 0; i < CALIBRATE_RUNS; i++)
		for (int j = i + 1; j < CALIBRATE_RUNS; j++)
			if (runs[j].build_ms + runs[j].probe_ms + runs[j].materialize_ms <
				runs[i].build_ms + runs[i].probe_ms + runs[i].materialize_ms)
			{
				CalibrateRun tmp = runs[i];

				runs[i] = runs[j];
				runs[j] = tmp;
			}
	return runs[CALIBRATE_RUNS / 2];
}

/*
 * The grouped aggregation's device time (GjStats.materialize_ms: the
 * round's gather and the folding) of the synthetic join's matches, grouped
 * by "outer column 0 % groups" (the outer rows' numbers: each matches one
 * inner row) with naggs sums of outer column 1, by
 * group-by variant: the median of CALIBRATE_RUNS after a warm-up, on one
 * context (built and counted once)
 */
typedef struct GroupByCase
{
	GjAggVariant variant;
	int64		groups;
	int			naggs;
	double		ms;				/* measured */
} GroupByCase;

static void
GroupBySpec(GjAggSpec *spec, const GroupByCase *c)
{
	memset(spec, 0, sizeof(*spec));
	spec->ninputs = 2;
	for (int i = 0; i < 2; i++)
	{
		spec->inputs[i].side = 0;	/* the outer side (GjAggInput) */
		spec->inputs[i].column = (int8) i;
		spec->inputs[i].kind = GJ_KEY_SIGNED;
		spec->inputs[i].type = GJ_EXPR_INT4;
	}
	spec->nkeys = 1;
	gj_agg_expr_mod(&spec->keys[0], 0, GJ_EXPR_INT4, c->groups);
	spec->naggs = c->naggs;
	for (int a = 0; a < c->naggs; a++)
	{
		spec->aggs[a].kind = GJ_AGG_SUM;
		spec->aggs[a].type = GJ_EXPR_INT4;
		spec->aggs[a].has_arg = true;
		gj_agg_expr_input(&spec->aggs[a].arg, 1, GJ_EXPR_INT4);
	}
	spec->groups_hint = c->groups;
	spec->variant = (uint8) c->variant;
}

/* The median of CALIBRATE_RUNS times */
static int
CompareMs(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

static void
RunGroupBy(const GjKernels *kernels, const CalibrateData *data, int64 rows,
		   GroupByCase *cases, int ncases)
{
	GpuJoinDeviceContext *dev = palloc0(sizeof(GpuJoinDeviceContext));
	GjJoinSpec	spec;
	GjColumn	inner_columns[GJ_MAX_COLUMNS];
	GjColumn	outer_columns[GJ_MAX_COLUMNS];
	GjBatch		inner = DataBatch(data, false, rows, 0, inner_columns, false);
	GjBatch		outer = DataBatch(data, true, rows, CALIBRATE_COLUMNS, outer_columns, false);
	GjError		err;
	int64_t		nmatches = 0;

	memset(&spec, 0, sizeof(spec));
	spec.variant = GJ_VARIANT_NPHJ;
	spec.materialize = GJ_MATERIALIZE_GFUR;
	spec.outer_ncolumns = CALIBRATE_COLUMNS;
	for (int c = 0; c < CALIBRATE_COLUMNS; c++)
		spec.outer_widths[c] = sizeof(int32);
	spec.max_matches = rows;	/* every match in one round */
	memset(&err, 0, sizeof(err));
	nmatches = OpenJoin(dev, kernels, &spec, &inner, &outer);
	for (int i = 0; i < ncases; i++)
	{
		GjAggSpec  *aspec = palloc(sizeof(GjAggSpec));
		double		ms[CALIBRATE_RUNS];

		GroupBySpec(aspec, &cases[i]);
		for (int r = -1; r < CALIBRATE_RUNS; r++)
		{
			GjStats		before;
			GjStats		after;

			CHECK_FOR_INTERRUPTS();
			GpuJoinCheckStatus(kernels->agg_begin(dev->ctx, aspec, &err), &err,
							   "gpujoin_calibrate: agg_begin failed");
			kernels->context_stats(dev->ctx, &before);
			for (int64 first = 0; first < nmatches; first += rows)
			{
				int64_t		n = 0;
				int64_t		undecided = 0;

				GpuJoinCheckStatus(kernels->aggregate(dev->ctx, first, &n, &undecided, &err),
								   &err, "gpujoin_calibrate: aggregate failed");
			}
			kernels->context_stats(dev->ctx, &after);
			if (r >= 0)
				ms[r] = after.materialize_ms - before.materialize_ms;
		}
		{
			GjAggResult result;
			int64		want = Min(cases[i].groups, rows);

			GpuJoinCheckStatus(kernels->agg_result(dev->ctx, &result, &err), &err,
							   "gpujoin_calibrate: agg_result failed");
			if (result.ngroups != want)
				elog(ERROR, "gpujoin_calibrate: a group-by found " INT64_FORMAT " groups, not " INT64_FORMAT,
					 result.ngroups, want);
		}
		qsort(ms, CALIBRATE_RUNS, sizeof(double), CompareMs);
		cases[i].ms = ms[CALIBRATE_RUNS / 2];
	}
	GpuJoinDeviceClose(dev);
}

/* The group-by constants, fitted */
typedef struct GroupByFit
{
	double		row_ns;
	double		contention_groups;
	double		shared_row_ns;
	double		flush_ns;
	double		sort_row_ns;
	double		sort_run_ns;
	double		sort_word_ns;
} GroupByFit;

/*
 * The model's terms of a case, in ns, per unknown: a per-match time both
 * variants share (the gather, the key), HASH's per match and sum, its
 * contention (per match and sum over the groups), SHARED's per match and
 * sum, its adding up per group and sum, SORT's per match, the runs' adding
 * up per run and sum (SORT's and SORT_TR's), and SORT_TR's per match and
 * word (the match's number, its key, a sum's argument)
 */
#define GROUPBY_UNKNOWNS	8

static void
GroupByTerms(const GroupByCase *c, int64 rows, double *x)
{
	double		groups = (double) Min(c->groups, rows);

	memset(x, 0, GROUPBY_UNKNOWNS * sizeof(double));
	x[0] = rows;
	if (c->variant == GJ_AGG_HASH)
	{
		x[1] = (double) rows * c->naggs;
		x[2] = (double) rows * c->naggs / groups;
	}
	else if (c->variant == GJ_AGG_SHARED)
	{
		x[3] = (double) rows * c->naggs;
		x[4] = Min(groups, GJ_AGG_SHARED_GROUPS(c->naggs)) * c->naggs;
	}
	else
	{
		if (c->variant == GJ_AGG_SORT)
			x[5] = rows;
		else
			x[7] = (double) rows * (2 + c->naggs);
		x[6] = gj_agg_sort_runs((double) rows, groups) * c->naggs;
	}
}

/*
 * The group-by constants: HASH, SORT and SORT_TR over 1 .. 65536 groups
 * and SHARED over 1 .. 512 (within its bound), one and two sums, on the
 * synthetic join's matches at rows and at rows / 64 (where the blocks'
 * adding up shows), by
 * least squares on relative error (the normal equations, solved by
 * elimination), as bench/groupby_fit.py fits the group-by grid.  Terms a
 * device cannot tell apart (the CPU twin: both variants are one) come out
 * 0 rather than negative.
 */
static GroupByFit
MeasureGroupBy(const GjKernels *kernels, const CalibrateData *data, int64 rows)
{
	static const int64 hash_groups[] = {1, 32, 512, 65536};
	static const int64 shared_groups[] = {1, 32, 512};
	int64		sizes[2] = {rows, Max(rows / 64, Min(rows, 1024))};
	double		ata[GROUPBY_UNKNOWNS][GROUPBY_UNKNOWNS + 1];
	double		sol[GROUPBY_UNKNOWNS];
	GroupByFit	fit;

	memset(ata, 0, sizeof(ata));
	for (int z = 0; z < 2; z++)
	{
		GroupByCase cases[2 * (3 * lengthof(hash_groups) + lengthof(shared_groups))];
		int			n = 0;

		for (int naggs = 1; naggs <= 2; naggs++)
		{
			for (int i = 0; i < lengthof(hash_groups); i++)
			{
				cases[n++] = (GroupByCase) {GJ_AGG_HASH, hash_groups[i], naggs, 0.0};
				cases[n++] = (GroupByCase) {GJ_AGG_SORT, hash_groups[i], naggs, 0.0};
				cases[n++] = (GroupByCase) {GJ_AGG_SORT_TR, hash_groups[i], naggs, 0.0};
			}
			for (int i = 0; i < lengthof(shared_groups); i++)
				cases[n++] = (GroupByCase) {GJ_AGG_SHARED, shared_groups[i], naggs, 0.0};
		}
		if (z == 0)
			RunGroupBy(kernels, data, sizes[z], cases, n);
		else
		{
			/* a join of its own size: every outer row matches one inner */
			CalibrateData small;

			MakeData(&small, sizes[z]);
			RunGroupBy(kernels, &small, sizes[z], cases, n);
		}
		for (int i = 0; i < n; i++)
		{
			double		x[GROUPBY_UNKNOWNS];
			double		y = cases[i].ms * 1e6;
			double		w2;

			if (y <= 0.0)
				continue;
			w2 = 1.0 / (y * y);
			GroupByTerms(&cases[i], sizes[z], x);
			for (int a = 0; a < GROUPBY_UNKNOWNS; a++)
			{
				for (int b = 0; b < GROUPBY_UNKNOWNS; b++)
					ata[a][b] += x[a] * x[b] * w2;
				ata[a][GROUPBY_UNKNOWNS] += x[a] * y * w2;
			}
		}
	}

	/* Gaussian elimination with partial pivoting; a zero pivot: that term 0 */
	for (int c = 0; c < GROUPBY_UNKNOWNS; c++)
	{
		int			p = c;

		for (int r = c + 1; r < GROUPBY_UNKNOWNS; r++)
			if (fabs(ata[r][c]) > fabs(ata[p][c]))
				p = r;
		for (int k = 0; k <= GROUPBY_UNKNOWNS; k++)
		{
			double		t = ata[c][k];

			ata[c][k] = ata[p][k];
			ata[p][k] = t;
		}
		if (fabs(ata[c][c]) < 1e-300)
			continue;
		for (int r = 0; r < GROUPBY_UNKNOWNS; r++)
		{
			double		f;

			if (r == c)
				continue;
			f = ata[r][c] / ata[c][c];
			for (int k = c; k <= GROUPBY_UNKNOWNS; k++)
				ata[r][k] -= f * ata[c][k];
		}
	}
	for (int c = 0; c < GROUPBY_UNKNOWNS; c++)
		sol[c] = fabs(ata[c][c]) < 1e-300 ? 0.0 : Max(ata[c][GROUPBY_UNKNOWNS] / ata[c][c], 0.0);
	elog(DEBUG1, "gpujoin_calibrate: group-by fit %g %g %g %g %g %g %g %g",
		 sol[0], sol[1], sol[2], sol[3], sol[4], sol[5], sol[6], sol[7]);
	fit.row_ns = sol[1];
	fit.contention_groups = sol[1] > 0.0 ? sol[2] / sol[1] : 0.0;
	fit.shared_row_ns = sol[3];
	fit.flush_ns = sol[4];
	fit.sort_row_ns = sol[5];
	fit.sort_run_ns = sol[6];
	fit.sort_word_ns = sol[7];
	return fit;
}

/* nanoseconds per unit, never negative (a difference of noisy times) */
static double
NsPer(double ms, double units)
{
	return (units > 0.0 && ms > 0.0) ? ms * 1e6 / units : 0.0;
}

/* Set name = value until the caller's AtEOXact_GUC */
static void
SetUntilNestEnd(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * The settings a measuring query runs under, until the caller's
 * AtEOXact_GUC: no merge or nested-loop join, no workers, no JIT, and the
 * one more setting given, if any (the join method it must not use)
 */
static void
SetForMeasurement(const char *name, const char *value)
{
	static const char *const common[][2] = {
		{"enable_mergejoin", "off"}, {"enable_nestloop", "off"},
		{"max_parallel_workers_per_gather", "0"}, {"jit", "off"},
	};

	for (int i = 0; i < lengthof(common); i++)
		SetUntilNestEnd(common[i][0], common[i][1]);
	if (name != NULL)
		SetUntilNestEnd(name, value);
}

/*
 * One EXPLAIN (ANALYZE, <options> FORMAT JSON) of a query, inside SPI: the
 * plan, as text for a query over it
 */
static Datum
ExplainJson(const char *options, const char *query)
{
	if (SPI_execute(psprintf("EXPLAIN (ANALYZE, %s FORMAT JSON) %s", options, query),
					false, 0) != SPI_OK_UTILITY || SPI_processed != 1)
		elog(ERROR, "gpujoin_calibrate: could not run a measuring query");
	return CStringGetTextDatum(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
}

/*
 * One EXPLAIN (ANALYZE, TIMING OFF) of a query, inside SPI: its execution
 * time (ms) and, in *cost, its estimated total cost
 */
static double
ExplainTimingOff(const char *query, double *cost)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1];
	bool		isnull1;
	bool		isnull2;
	double		ms;

	args[0] = ExplainJson("TIMING OFF,", query);
	if (SPI_execute_with_args("SELECT (p->'Plan'->>'Total Cost')::float8, "
							  "(p->>'Execution Time')::float8 "
							  "FROM (SELECT $1::jsonb->0 AS p) s",
							  1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "gpujoin_calibrate: could not read a measuring query's plan");
	*cost = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
										 1, &isnull1));
	ms = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull2));
	return isnull2 ? -1.0 : ms;
}

/*
 * The best execution time (ms) of three runs of a query after a warm-up
 * (which also warms up the device for a GPU join); if cost is not NULL, the
 * query's estimated total cost.  host_part: each run's time less the
 * device work of the GPU joins it ended (GpuJoinEndedWork: their own
 * timers, which run with EXPLAIN's timing off), -1 if a run ended none.
 */
static double
BestExecutionMs(const char *query, double *cost, bool host_part)
{
	double		best_ms = -1.0;

	for (int run = 0; run < 4; run++)
	{
		double		c = -1.0;
		int64		joins_before;
		int64		joins_after;
		double		device_before;
		double		device_after;
		double		ms;

		GpuJoinEndedWork(&joins_before, &device_before);
		ms = ExplainTimingOff(query, &c);
		GpuJoinEndedWork(&joins_after, &device_after);
		if (host_part)
		{
			if (joins_after == joins_before)
				return -1.0;	/* no GPU join was planned */
			ms -= device_after - device_before;
		}
		if (run > 0 && ms > 0.0 && (best_ms < 0.0 || ms < best_ms))
		{
			best_ms = ms;
			if (cost != NULL)
				*cost = c;
		}
	}
	return best_ms;
}

/*
 * Start a measurement: SetForMeasurement's settings (and name = value, if
 * name is not NULL) in
 * a new GUC nest level, SPI, and the measurement's tables made by sql;
 * returns the nest level for EndMeasurement
 */
static int
BeginMeasurement(const char *name, const char *value, const char *sql,
				 const char *what)
{
	int			nestlevel = NewGUCNestLevel();

	SetForMeasurement(name, value);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "gpujoin_calibrate: SPI_connect failed");
	if (SPI_execute(sql, false, 0) < 0)
		elog(ERROR, "gpujoin_calibrate: could not create the tables of %s", what);
	return nestlevel;
}

/* End a measurement: drop its tables (drop_sql), leave SPI, undo the settings */
static void
EndMeasurement(const char *drop_sql, int nestlevel)
{
	(void) SPI_execute(drop_sql, false, 0);
	SPI_finish();
	AtEOXact_GUC(true, nestlevel);
}

/* The smaller of two times, either of which may be unknown (negative) */
static double
MinPositive(double a, double b)
{
	if (a < 0.0)
		return b;
	if (b < 0.0)
		return a;
	return Min(a, b);
}

/* What MeasureHostCosts finds; -1 where it could not be measured */
typedef struct HostCosts
{
	double		extract_ns;		/* per value copied into a batch */
	double		emit_ns;		/* per joined row formed */
	double		scan_units_per_ms;	/* a Seq Scan's estimated cost per ms */
} HostCosts;

/*
 * The host's part of a GPU join, from three tables of n rows (a key and a
 * payload column each): a and c with the same n/8 keys, each 8 times, b
 * with keys of its own.
 *
 * - extract_ns: the join of a and b (nothing matches, nothing is emitted)
 *   less its device work (transfers, build, probe: the node's own timers,
 *   in the same run), less the Seq Scans of a and b alone, over the values
 *   the planner charges for (GpuJoinCostPath: rows x (columns + keys), 3 a
 *   row and side here);
 * - emit_ns: the join of a and c (every row meets 8 rows of the other side:
 *   8n rows formed, enough to stand clear of the noise of the rest) less
 *   its device work, less the join of a and b less its device work, per
 *   row formed;
 * - scan_units_per_ms: the Seq Scan of a, its estimated cost over its time.
 *
 * The joins are planned with PostgreSQL's join methods off and no workers,
 * and return their rows to EXPLAIN ANALYZE (no aggregate above them).  The
 * times are EXPLAIN ANALYZE's with TIMING OFF, the best of three after a
 * warm-up: per-node timing reads the clock twice per row of each child,
 * about as costly as the extraction itself (taken as the join's load time
 * less its children's with timing on, the extraction came out 1.6 times
 * what it is here).  The join's fixed costs (its device context) count as
 * extraction; at the 2M rows gpujoin_calibrate uses they are a few percent.
 */
static HostCosts
MeasureHostCosts(int64 n)
{
	int			save_nestlevel;
	const char *none = "SELECT a.p, b.q FROM gpujoin_calibrate_ea a JOIN gpujoin_calibrate_eb b ON a.x = b.y";
	const char *all = "SELECT a.p, c.q FROM gpujoin_calibrate_ea a JOIN gpujoin_calibrate_ec c ON a.x = c.y";
	HostCosts	result = {-1.0, -1.0, -1.0};
	double		none_ms = -1.0;
	double		all_ms = -1.0;
	double		scan_a_ms = -1.0;
	double		scan_b_ms = -1.0;
	double		scan_cost = -1.0;

	save_nestlevel = BeginMeasurement("enable_hashjoin", "off",
									  psprintf("CREATE TEMP TABLE gpujoin_calibrate_ea AS "
										  "SELECT g %% " INT64_FORMAT " AS x, g %% 100 AS p FROM generate_series(1, " INT64_FORMAT ") g; "
										  "CREATE TEMP TABLE gpujoin_calibrate_eb AS "
										  "SELECT -g AS y, g %% 100 AS q FROM generate_series(1, " INT64_FORMAT ") g; "
										  "CREATE TEMP TABLE gpujoin_calibrate_ec AS "
										  "SELECT g %% " INT64_FORMAT " AS y, g %% 100 AS q FROM generate_series(1, " INT64_FORMAT ") g; "
										  "ANALYZE gpujoin_calibrate_ea, gpujoin_calibrate_eb, gpujoin_calibrate_ec",
										  n / 8, n, n, n / 8, n),
									  "the host measurements");
	/* the Seq Scan children's extraction, not the heap pages' */
	SetUntilNestEnd("gpujoin.enable_heapscan", "off");

	/*
	 * Each figure the best of its runs; when the differences still come out
	 * at zero or below (a busy host), up to seven more rounds, keeping each
	 * figure's best over all of them (with two more, test/011's small
	 * calibration still found no extraction cost once in a CI run on a
	 * 2-core machine)
	 */
	for (int round = 0; round < 8; round++)
	{
		none_ms = MinPositive(none_ms, BestExecutionMs(none, NULL, true));
		all_ms = MinPositive(all_ms, BestExecutionMs(all, NULL, true));
		scan_a_ms = MinPositive(scan_a_ms, BestExecutionMs("SELECT x, p FROM gpujoin_calibrate_ea",
														   &scan_cost, false));
		scan_b_ms = MinPositive(scan_b_ms, BestExecutionMs("SELECT y, q FROM gpujoin_calibrate_eb",
														   NULL, false));

		if (none_ms > 0.0 && scan_a_ms > 0.0 && scan_b_ms > 0.0)
			result.extract_ns = NsPer(none_ms - scan_a_ms - scan_b_ms, 2.0 * n * 3.0);
		if (all_ms > 0.0 && none_ms > 0.0)
			result.emit_ns = NsPer(all_ms - none_ms, 8.0 * n);
		if (result.extract_ns > 0.0 && result.emit_ns > 0.0)
			break;
	}
	if (scan_a_ms > 0.0 && scan_cost > 0.0)
		result.scan_units_per_ms = scan_cost / scan_a_ms;

	EndMeasurement("DROP TABLE gpujoin_calibrate_ea, gpujoin_calibrate_eb, gpujoin_calibrate_ec",
				   save_nestlevel);
	return result;
}

/* What MeasureHeapCosts finds; -1 where it could not be measured */
typedef struct HeapCosts
{
	double		page_ns;		/* per page of a side read as heap pages */
	double		tuple_ns;		/* per tuple, its snapshot check left out */
} HeapCosts;

/* The size of a calibration table in pages */
static double
TablePages(const char *table)
{
	bool		isnull;
	Datum		pages;

	if (SPI_execute(psprintf("SELECT pg_relation_size('%s') / %d", table, BLCKSZ),
					true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "gpujoin_calibrate: could not read the size of a measuring table");
	pages = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? -1.0 : (double) DatumGetInt64(pages);
}

/*
 * The host's part of a side read as heap pages (exec_heap.c), from three
 * UNLOGGED tables, made in the search path's first schema and dropped
 * again within this transaction, so that their pages lie in the shared
 * buffers as a user's tables do (a temporary table's pages are copied,
 * not read in place): a and w with the same n rows, w with a 200-byte
 * column that the join does not read, which gives it about seven times
 * a's pages, and b of n rows with keys of its own (nothing matches, so
 * nothing is formed).  n is at most the rows that keep w within an eighth
 * of shared_buffers, so that no scan of them goes through a ring of
 * buffers and every run finds them in the shared buffers.
 *
 * - page_ns: the join of w and b less the join of a and b, less the
 *   difference of their device work, over the difference of their pages;
 * - tuple_ns: the join of a and b less its device work and its pages at
 *   page_ns, per tuple of the two sides, less the check of each against
 *   the snapshot, which the planner prices on its own (cpu_operator_cost,
 *   at the Seq Scan's units per ms, scan_units_per_ms): no page of these
 *   tables, loaded in this transaction, is all-visible, so every tuple was
 *   checked.
 *
 * The joins read both sides as heap pages (gpujoin.enable_heapscan), in
 * place where the server would read them so (gpujoin.heap_in_place).
 */
static HeapCosts
MeasureHeapCosts(int64 n, double scan_units_per_ms)
{
	int			save_nestlevel;
	const char *narrow = "SELECT a.p, b.q FROM gpujoin_calibrate_ha a JOIN gpujoin_calibrate_hb b ON a.x = b.y";
	const char *wide = "SELECT w.p, b.q FROM gpujoin_calibrate_hw w JOIN gpujoin_calibrate_hb b ON w.x = b.y";
	HeapCosts	result = {-1.0, -1.0};
	double		narrow_ms = -1.0;
	double		wide_ms = -1.0;
	double		pages_a;
	double		pages_w;
	double		pages_b;

	n = Max(Min(n, (int64) NBuffers * 4), 1024);
	save_nestlevel = BeginMeasurement("enable_hashjoin", "off",
									  psprintf("CREATE UNLOGGED TABLE gpujoin_calibrate_ha AS "
											   "SELECT g AS x, g %% 100 AS p FROM generate_series(1, " INT64_FORMAT ") g; "
											   "CREATE UNLOGGED TABLE gpujoin_calibrate_hw AS "
											   "SELECT g AS x, g %% 100 AS p, repeat('x', 200) AS pad FROM generate_series(1, " INT64_FORMAT ") g; "
											   "CREATE UNLOGGED TABLE gpujoin_calibrate_hb AS "
											   "SELECT -g AS y, g %% 100 AS q FROM generate_series(1, " INT64_FORMAT ") g; "
											   "ANALYZE gpujoin_calibrate_ha, gpujoin_calibrate_hw, gpujoin_calibrate_hb",
											   n, n, n),
									  "the heap page measurements");
	SetUntilNestEnd("gpujoin.enable_heapscan", "on");
	pages_a = TablePages("gpujoin_calibrate_ha");
	pages_w = TablePages("gpujoin_calibrate_hw");
	pages_b = TablePages("gpujoin_calibrate_hb");

	/* as MeasureHostCosts: up to three rounds, each figure its best */
	for (int round = 0; round < 3; round++)
	{
		narrow_ms = MinPositive(narrow_ms, BestExecutionMs(narrow, NULL, true));
		wide_ms = MinPositive(wide_ms, BestExecutionMs(wide, NULL, true));

		if (narrow_ms > 0.0 && wide_ms > 0.0 && pages_w > pages_a)
			result.page_ns = NsPer(wide_ms - narrow_ms, pages_w - pages_a);
		if (result.page_ns > 0.0)
		{
			double		check_ns = scan_units_per_ms > 0.0 ?
				cpu_operator_cost / scan_units_per_ms * 1e6 : 0.0;

			result.tuple_ns = NsPer(narrow_ms - result.page_ns * (pages_a + pages_b) * 1e-6,
									2.0 * n) - check_ns;
			if (result.tuple_ns > 0.0)
				break;
		}
	}

	EndMeasurement("DROP TABLE gpujoin_calibrate_ha, gpujoin_calibrate_hw, gpujoin_calibrate_hb",
				   save_nestlevel);
	return result;
}

/* The join of the cost_per_ms and setup_cost measurements */
#define CALIBRATE_JOIN	"SELECT sum(a.p + b.q) FROM gpujoin_calibrate_a a " \
	"JOIN gpujoin_calibrate_b b ON a.x = b.y"

/*
 * BeginMeasurement with CALIBRATE_JOIN's tables: n rows each, the keys of
 * b a permutation of a's (every row of each matching one of the other)
 */
static int
BeginJoinMeasurement(const char *name, const char *value, int64 n)
{
	return BeginMeasurement(name, value,
							psprintf("CREATE TEMP TABLE gpujoin_calibrate_a AS "
									 "SELECT g AS x, g %% 100 AS p FROM generate_series(1, " INT64_FORMAT ") g; "
									 "CREATE TEMP TABLE gpujoin_calibrate_b AS "
									 "SELECT g AS y, g %% 100 AS q FROM generate_series(1, " INT64_FORMAT ") g ORDER BY random(); "
									 "ANALYZE gpujoin_calibrate_a, gpujoin_calibrate_b",
									 n, n),
							"the hash join");
}

/*
 * The planner's units per millisecond: PostgreSQL's serial hash join of two
 * generated tables of n rows (gpujoin off), its estimated total cost over
 * the best execution time of three runs after a warm-up (EXPLAIN ANALYZE,
 * TIMING OFF: no per-node clock reads).  -1 when it could not be measured.
 */
static double
MeasureCostPerMs(int64 n)
{
	int			save_nestlevel = BeginJoinMeasurement("gpujoin.enabled", "off", n);
	double		cost = -1.0;
	double		best_ms = BestExecutionMs(CALIBRATE_JOIN, &cost, false);

	EndMeasurement("DROP TABLE gpujoin_calibrate_a, gpujoin_calibrate_b", save_nestlevel);
	return (best_ms > 0.0 && cost > 0.0) ? cost / best_ms : -1.0;
}

/*
 * gpujoin.setup_cost as measured: the value that makes the GPU join of two
 * generated n-row tables (CALIBRATE_JOIN) cost what it takes, at the
 * planner units per ms of PostgreSQL's serial hash join of the same
 * tables: its time in those units less its cost priced with setup_cost 0
 * (so whatever setup_cost is in force, and also for the CPU twin, whose
 * paths are not charged it); -1 when either could not be timed.
 */
static double
MeasureSetupCost(int64 n)
{
	int			save_nestlevel = BeginJoinMeasurement(NULL, NULL, n);
	int			nestlevel;
	double		pg_ms;
	double		pg_cost = -1.0;
	double		gpu_ms;
	double		gpu_cost = -1.0;

	/* PostgreSQL's hash join, then the GPU join */
	nestlevel = NewGUCNestLevel();
	SetUntilNestEnd("gpujoin.enabled", "off");
	pg_ms = BestExecutionMs(CALIBRATE_JOIN, &pg_cost, false);
	AtEOXact_GUC(true, nestlevel);
	nestlevel = NewGUCNestLevel();
	SetUntilNestEnd("enable_hashjoin", "off");
	SetUntilNestEnd("gpujoin.setup_cost", "0");
	gpu_ms = BestExecutionMs(CALIBRATE_JOIN, &gpu_cost, false);
	AtEOXact_GUC(true, nestlevel);

	EndMeasurement("DROP TABLE gpujoin_calibrate_a, gpujoin_calibrate_b", save_nestlevel);
	if (pg_ms > 0.0 && pg_cost > 0.0 && gpu_ms > 0.0 && gpu_cost > 0.0)
		return Max(gpu_ms * (pg_cost / pg_ms) - gpu_cost, 0.0);
	return -1.0;
}

/*
 * The copy bandwidth between the first two GPUs gpujoin.devices names (a
 * join partitioned over them exchanges rows at it), or -1: one GPU, the
 * CPU twin, or the gpujoin service in use (a backend then makes no CUDA
 * context of its own; measure in a session without it)
 */
static double
MeasurePeerGbps(const GjKernels *kernels)
{
#ifdef GPUJOIN_WITH_CUDA
	int32		devices[GJ_MAX_DEVICES];
	int			n;
	GjError		err;
	double		gbps;

	if (GpuJoinIsCpuTwin(kernels) || GpuJoinServiceInUse())
		return -1.0;
	n = GpuJoinSpreadDevices(devices);
	for (int d = 1; d < n; d++)
	{
		if (devices[d] == devices[0])
			continue;
		memset(&err, 0, sizeof(err));
		gbps = gj_cuda_peer_gbps(devices[0], devices[d], (size_t) 256 << 20, &err);
		if (gbps <= 0.0)
			ereport(NOTICE,
					(errmsg("gpujoin_calibrate: the bandwidth from GPU %d to GPU %d could not be measured",
							devices[0], devices[d]),
					 errdetail_internal("%s", err.message)));
		return gbps;
	}
#endif
	return -1.0;
}

/*
 * gpujoin_calibrate(rows int) RETURNS TABLE (setting text, value float8,
 * unit text, measured_on text)
 */
Datum
gpujoin_calibrate(PG_FUNCTION_ARGS)
{
	int64		rows = PG_GETARG_INT32(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const GjKernels *kernels;
	const char *device;
	CalibrateData data;
	double		row_ns[GJ_NUM_VARIANTS] = {0};
	double		match_ns = 0.0;
	double		gather_ns = 0.0;
	double		gftr_column_ns = 0.0;
	double		gftr_gather_ns = 0.0;
	double		nlj_compare_ns;
	double		bytes = 0.0;
	double		transfer_ms = 0.0;
	int64		nlj_rows;
	HostCosts	host;
	HeapCosts	heap;
	double		cost_per_ms;
	double		units_per_ms;
	double		setup_cost;
	double		preagg_row_ns;
	double		preagg_contention;
	double		preagg_shared_row_ns;
	double		preagg_flush_ns;
	double		preagg_sort_row_ns;
	double		preagg_sort_run_ns;
	double		preagg_sort_word_ns;
	double		peer_gbps;
	CalibrateRun run;

	if (!superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be superuser to run gpujoin_calibrate()")));
	if (rows < 1024 || rows > GJ_MAX_ROWS / 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gpujoin_calibrate: rows must be between 1024 and %lld",
						(long long) (GJ_MAX_ROWS / 2))));

	kernels = GpuJoinChooseKernels();
	device = GpuJoinDescribeDevice(kernels);
	MakeData(&data, rows);

	for (int v = GJ_VARIANT_NPHJ; v <= GJ_VARIANT_SMJ; v++)
	{
		CalibrateRun none = RunJoin(kernels, &data, (GjVariant) v, GJ_MATERIALIZE_GFUR, 0, rows);
		CalibrateRun gfur = RunJoin(kernels, &data, (GjVariant) v, GJ_MATERIALIZE_GFUR,
									CALIBRATE_COLUMNS, rows);
		CalibrateRun gftr = RunJoin(kernels, &data, (GjVariant) v, GJ_MATERIALIZE_GFTR,
									CALIBRATE_COLUMNS, rows);
		double		columns = 2.0 * CALIBRATE_COLUMNS;

		if (none.matches != rows || gfur.matches != rows || gftr.matches != rows)
			elog(ERROR, "gpujoin_calibrate: %s found " INT64_FORMAT " matches, not " INT64_FORMAT,
				 GpuJoinVariantName((GjVariant) v, GJ_MATERIALIZE_GFUR), none.matches, rows);
		row_ns[v] = NsPer(none.build_ms + none.probe_ms, 2.0 * rows);
		match_ns += NsPer(none.materialize_ms, rows) / 3.0;
		gather_ns += NsPer(gfur.materialize_ms - none.materialize_ms, rows * columns) / 3.0;
		if (v != GJ_VARIANT_NPHJ)
		{
			gftr_column_ns += NsPer(gftr.build_ms + gftr.probe_ms - gfur.build_ms - gfur.probe_ms,
									rows * columns) / 2.0;
			gftr_gather_ns += NsPer(gftr.materialize_ms - none.materialize_ms,
									rows * columns) / 2.0;
		}
		bytes += none.bytes + gfur.bytes + gftr.bytes;
		transfer_ms += none.transfer_ms + gfur.transfer_ms + gftr.transfer_ms;
	}

	run = RunJoin(kernels, &data, GJ_VARIANT_BAND, GJ_MATERIALIZE_GFUR, 0, rows);
	row_ns[GJ_VARIANT_BAND] = NsPer(run.build_ms + run.probe_ms, 2.0 * rows);
	bytes += run.bytes;
	transfer_ms += run.transfer_ms;

	/*
	 * NLJ: the outer values are the outer keys shifted right by 17 bits, so
	 * that inner < outer holds for about 2^-18 of the pairs: the count
	 * phase, which compares every pair, is what is timed, and the few
	 * matches fit one round
	 */
	nlj_rows = Min(rows, CALIBRATE_NLJ_ROWS);
	for (int64 i = 0; i < nlj_rows; i++)
		data.outer_hi[i] = data.outer_keys[i] >> 17;
	run = RunJoin(kernels, &data, GJ_VARIANT_NLJ, GJ_MATERIALIZE_GFUR, 0, nlj_rows);
	nlj_compare_ns = NsPer(run.probe_ms, (double) nlj_rows * nlj_rows);
	bytes += run.bytes;
	transfer_ms += run.transfer_ms;

	/*
	 * Group-by (planner_agg.c's GroupByMs), fitted to cases of two sizes
	 * (FitGroupBy)
	 */
	{
		GroupByFit	fit = MeasureGroupBy(kernels, &data, rows);

		preagg_row_ns = fit.row_ns;
		preagg_contention = fit.contention_groups;
		preagg_shared_row_ns = fit.shared_row_ns;
		preagg_flush_ns = fit.flush_ns;
		preagg_sort_row_ns = fit.sort_row_ns;
		preagg_sort_run_ns = fit.sort_run_ns;
		preagg_sort_word_ns = fit.sort_word_ns;
	}

	cost_per_ms = MeasureCostPerMs(Min(rows, 2 * 1024 * 1024));
	/*
	 * host times are not the device's: at least 256k rows, so that forming
	 * them (some 30 ns each) stands clear of a busy host's noise
	 */
	host = MeasureHostCosts(Max(Min(rows, 2 * 1024 * 1024), 262144));
	heap = MeasureHeapCosts(Max(Min(rows, 2 * 1024 * 1024), 262144), host.scan_units_per_ms);
	units_per_ms = cost_per_ms > 0.0 ? cost_per_ms : gpujoin_model.cost_per_ms;
	setup_cost = MeasureSetupCost(4096);
	peer_gbps = MeasurePeerGbps(kernels);

	InitMaterializedSRF(fcinfo, 0);
	{
		struct
		{
			const char *setting;
			double		value;
			const char *unit;
		}			results[] = {
			{"gpujoin.transfer_gbps", transfer_ms > 0.0 ? bytes / (transfer_ms * 1e6) : 0.0, "GB/s"},
			{"gpujoin.nphj_row_ns", row_ns[GJ_VARIANT_NPHJ], "ns"},
			{"gpujoin.phj_row_ns", row_ns[GJ_VARIANT_PHJ], "ns"},
			{"gpujoin.smj_row_ns", row_ns[GJ_VARIANT_SMJ], "ns"},
			{"gpujoin.band_row_ns", row_ns[GJ_VARIANT_BAND], "ns"},
			{"gpujoin.nlj_compare_ns", nlj_compare_ns, "ns"},
			{"gpujoin.gftr_column_ns", gftr_column_ns, "ns"},
			{"gpujoin.match_ns", match_ns, "ns"},
			{"gpujoin.gather_ns", gather_ns, "ns"},
			{"gpujoin.gftr_gather_ns", gftr_gather_ns, "ns"},
			{"gpujoin.preagg_row_ns", preagg_row_ns, "ns"},
			{"gpujoin.preagg_contention_groups", preagg_contention, "groups"},
			{"gpujoin.preagg_shared_row_ns", preagg_shared_row_ns, "ns"},
			{"gpujoin.preagg_flush_ns", preagg_flush_ns, "ns"},
			{"gpujoin.preagg_sort_row_ns", preagg_sort_row_ns, "ns"},
			{"gpujoin.preagg_sort_run_ns", preagg_sort_run_ns, "ns"},
			{"gpujoin.preagg_sort_word_ns", preagg_sort_word_ns, "ns"},
			{"gpujoin.cost_per_ms", cost_per_ms, "units/ms"},
			{"gpujoin.extract_cost", host.extract_ns * units_per_ms / 1e6, "cost units"},
			{"gpujoin.heap_page_cost", heap.page_ns * units_per_ms / 1e6, "cost units"},
			{"gpujoin.heap_tuple_cost", heap.tuple_ns * units_per_ms / 1e6, "cost units"},
			{"gpujoin.emit_cost", host.emit_ns * units_per_ms / 1e6, "cost units"},
			{"gpujoin.scan_cost_scale", host.scan_units_per_ms > 0.0 ?
			 units_per_ms / host.scan_units_per_ms : -1.0, "ratio"},
			{"gpujoin.setup_cost", setup_cost, "cost units"},
			{"gpujoin.peer_gbps", peer_gbps, "GB/s"},
		};

		for (int i = 0; i < lengthof(results); i++)
		{
			Datum		values[4];
			bool		nulls[4] = {false, false, false, false};

			/*
			 * the CPU twin copies nothing: no bandwidth; no GPU join: no
			 * extraction, emission nor setup; a hash join too quick to time: no
			 * cost_per_ms; a scan too quick to time: no scan_cost_scale
			 */
			nulls[1] = (results[i].value <= 0.0 &&
						(strcmp(results[i].unit, "GB/s") == 0 ||
						 strcmp(results[i].unit, "cost units") == 0 ||
						 strcmp(results[i].unit, "units/ms") == 0 ||
						 strcmp(results[i].unit, "ratio") == 0));
			values[0] = CStringGetTextDatum(results[i].setting);
			values[1] = Float8GetDatum(results[i].value);
			values[2] = CStringGetTextDatum(results[i].unit);
			values[3] = CStringGetTextDatum(device);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	return (Datum) 0;
}
