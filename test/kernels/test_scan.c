/*-------------------------------------------------------------------------
 *
 * test_scan.c
 *	  SCAN, the join that is none (every outer row one match, of no inner
 *	  row): what a GpuPreAgg over a single relation runs through
 *
 * Checked against the data itself, in each implementation: a chunk's
 * rounds hand out every row once, in order, with its values and NULL
 * flags; an empty chunk has no match; the arguments SCAN refuses (an inner
 * payload column, a partitioned spread).  Then the grouped aggregation of
 * a relation in several chunks and rounds, by every group-by variant, on
 * one device and broadcast over logical devices, against groups summed on
 * the host: count(*), count(x), sum(x), min(x), max(y), sum(y), grouped by
 * a key with NULLs.
 *
 * IDENTIFICATION
 *	  test/kernels/test_scan.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_kernels.h"

#define SCAN_ROWS		10007
#define SCAN_CHUNK		4000
#define SCAN_ROUND		777
#define SCAN_GROUPS		97		/* g in -48 .. 48, and NULL */

/* A relation: x int4 (NULLs), y int8, g int2 (NULLs) */
typedef struct ScanData
{
	int64_t		n;
	int32_t    *x;
	uint8_t    *xnull;
	int64_t    *y;
	int16_t    *g;
	uint8_t    *gnull;
} ScanData;

static ScanData
MakeScanData(int64_t n, uint64_t seed)
{
	ScanData	d;

	d.n = n;
	d.x = TestAlloc(n * sizeof(int32_t));
	d.xnull = TestAlloc(n);
	d.y = TestAlloc(n * sizeof(int64_t));
	d.g = TestAlloc(n * sizeof(int16_t));
	d.gnull = TestAlloc(n);
	for (int64_t i = 0; i < n; i++)
	{
		uint64_t	r = TestRandom(&seed);

		d.x[i] = (int32_t) (r >> 32);	/* the whole int4 range */
		d.xnull[i] = (r & 15) == 0;
		d.y[i] = (int64_t) TestRandom(&seed) >> 8;
		d.g[i] = (int16_t) ((int) ((r >> 8) % SCAN_GROUPS) - SCAN_GROUPS / 2);
		d.gnull[i] = ((r >> 4) & 31) == 0;
	}
	return d;
}

static void
FreeScanData(ScanData *d)
{
	free(d->x);
	free(d->xnull);
	free(d->y);
	free(d->g);
	free(d->gnull);
}

/* A SCAN's spec: no inner side, the outer side's x, y and g */
static void
ScanSpec(GjJoinSpec *js, bool row_ids)
{
	memset(js, 0, sizeof(*js));
	js->variant = GJ_VARIANT_SCAN;
	js->materialize = GJ_MATERIALIZE_GFUR;
	js->outer_ncolumns = 3;
	js->outer_widths[0] = 4;
	js->outer_widths[1] = 8;
	js->outer_widths[2] = 2;
	js->max_matches = SCAN_ROUND;
	js->row_ids = row_ids;
}

/* Rows start .. start + n - 1 as a chunk (no keys) */
static GjBatch
ScanChunk(const ScanData *d, int64_t start, int64_t n, GjColumn cols[3])
{
	GjBatch		b;

	memset(&b, 0, sizeof(b));
	cols[0].values = d->x + start;
	cols[0].nulls = d->xnull + start;
	cols[1].values = d->y + start;
	cols[1].nulls = NULL;
	cols[2].values = d->g + start;
	cols[2].nulls = d->gnull + start;
	b.nrows = n;
	b.columns = cols;
	return b;
}

/* Every row of a chunk once, in order, with its values */
static void
CheckRounds(const GjKernels *k, const char *impl, const ScanData *d)
{
	const char *name = "SCAN: every row of a chunk one match, in order, with its values";
	GjJoinSpec	js;
	GjContext  *ctx = NULL;
	GjError		err;
	GjBatch		inner;
	GjColumn	cols[3];
	GjBatch		outer = ScanChunk(d, 0, d->n, cols);
	int64_t		nmatches = -1;

	memset(&err, 0, sizeof(err));
	memset(&inner, 0, sizeof(inner));	/* no rows, no keys, no columns */
	ScanSpec(&js, true);
	if (k->context_create(&ctx, &js, &err) != GJ_OK || k->build(ctx, &inner, &err) != GJ_OK ||
		k->count(ctx, &outer, &nmatches, &err) != GJ_OK)
		Failf("%s", err.message);
	else if (nmatches != d->n)
		Failf("count found %lld matches in %lld rows", (long long) nmatches, (long long) d->n);
	else
	{
		for (int64_t first = 0; first < nmatches; first += SCAN_ROUND)
		{
			GjMatchRound round;
			int64_t		want = nmatches - first < SCAN_ROUND ? nmatches - first : SCAN_ROUND;

			if (k->retrieve(ctx, first, &round, &err) != GJ_OK)
			{
				Failf("retrieve(%lld): %s", (long long) first, err.message);
				break;
			}
			if (round.nmatches != want)
			{
				Failf("retrieve(%lld) gave %lld matches, not %lld", (long long) first,
					  (long long) round.nmatches, (long long) want);
				break;
			}
			for (int64_t m = 0; m < round.nmatches; m++)
			{
				int64_t		r = first + m;
				const int32_t *x = (const int32_t *) round.outer_values[0];
				const int64_t *y = (const int64_t *) round.outer_values[1];
				const int16_t *g = (const int16_t *) round.outer_values[2];

				if ((int64_t) round.outer_rows[m] != r ||
					round.outer_nulls[0] == NULL || round.outer_nulls[0][m] != d->xnull[r] ||
					(!d->xnull[r] && x[m] != d->x[r]) || y[m] != d->y[r] ||
					round.outer_nulls[2] == NULL || round.outer_nulls[2][m] != d->gnull[r] ||
					(!d->gnull[r] && g[m] != d->g[r]))
				{
					Failf("match %lld is not row %lld as it came", (long long) r, (long long) r);
					first = nmatches;
					break;
				}
			}
		}
		/* an empty chunk: no match, and a round of none */
		outer = ScanChunk(d, 0, 0, cols);
		if (k->count(ctx, &outer, &nmatches, &err) != GJ_OK)
			Failf("count of an empty chunk: %s", err.message);
		else if (nmatches != 0)
			Failf("an empty chunk has %lld matches", (long long) nmatches);
	}
	if (ctx != NULL)
		k->context_destroy(ctx);
	TestReport(impl, name);
}

/* What SCAN refuses: an inner payload column; a spread partitioned by key */
static void
CheckRefused(const GjKernels *k, const char *impl)
{
	const char *name = "SCAN: an inner payload column or a partitioned spread is refused";
	GjJoinSpec	js;
	GjContext  *ctx = NULL;
	GjError		err;

	memset(&err, 0, sizeof(err));
	ScanSpec(&js, false);
	js.inner_ncolumns = 1;
	js.inner_widths[0] = 4;
	if (k->context_create(&ctx, &js, &err) != GJ_ERROR_INVALID_ARGUMENT)
		Failf("a SCAN with an inner payload column was not refused");
	if (ctx != NULL)
		k->context_destroy(ctx);
	ctx = NULL;
	ScanSpec(&js, false);
	js.ndevices = 2;
	js.spread = GJ_SPREAD_PARTITION;
	if (gj_spread_kernels(k)->context_create(&ctx, &js, &err) != GJ_ERROR_INVALID_ARGUMENT)
		Failf("a SCAN partitioned over devices was not refused");
	if (ctx != NULL)
		gj_spread_kernels(k)->context_destroy(ctx);
	TestReport(impl, name);
}

/* One group's words, summed on the host */
typedef struct ScanGroup
{
	int64_t		rows;
	int64_t		nx;
	__int128	sumx;
	int64_t		minx;
	int64_t		maxy;
	__int128	sumy;
} ScanGroup;

#define NAGGS	6

/* count(*), count(x), sum(x), min(x), max(y), sum(y) by g */
static void
ScanAggSpec(GjAggSpec *spec, GjAggVariant variant)
{
	static const struct
	{
		GjAggKind	kind;
		int			input;
		GjExprType	type;
	}			aggs[NAGGS] = {
		{GJ_AGG_COUNT, -1, GJ_EXPR_INT8}, {GJ_AGG_COUNT, 0, GJ_EXPR_INT4},
		{GJ_AGG_SUM, 0, GJ_EXPR_INT4}, {GJ_AGG_MIN, 0, GJ_EXPR_INT4},
		{GJ_AGG_MAX, 1, GJ_EXPR_INT8}, {GJ_AGG_SUM, 1, GJ_EXPR_INT8},
	};
	static const GjExprType types[3] = {GJ_EXPR_INT4, GJ_EXPR_INT8, GJ_EXPR_INT2};

	memset(spec, 0, sizeof(*spec));
	spec->ninputs = 3;
	for (int i = 0; i < 3; i++)
	{
		spec->inputs[i].side = 0;
		spec->inputs[i].column = (int8_t) i;
		spec->inputs[i].kind = GJ_KEY_SIGNED;
		spec->inputs[i].type = (uint8_t) types[i];
	}
	spec->nkeys = 1;
	gj_agg_expr_input(&spec->keys[0], 2, GJ_EXPR_INT2);
	spec->naggs = NAGGS;
	for (int a = 0; a < NAGGS; a++)
	{
		spec->aggs[a].kind = (uint8_t) aggs[a].kind;
		spec->aggs[a].type = (uint8_t) aggs[a].type;
		spec->aggs[a].has_arg = aggs[a].input >= 0;
		if (spec->aggs[a].has_arg)
			gj_agg_expr_input(&spec->aggs[a].arg, aggs[a].input, aggs[a].type);
	}
	spec->groups_hint = 16;
	spec->variant = (uint8_t) variant;
}

/* A result's 128-bit sum: b * 2^32 + a (a: low halves, unsigned) */
static __int128
WordsSum(int64_t a, int64_t b)
{
	return (__int128) b * ((__int128) 1 << 32) + (__int128) (uint64_t) a;
}

/* The grouped aggregation of the whole relation, chunk by chunk */
static void
CheckAggregate(const GjKernels *k, const char *impl, const ScanData *d, GjAggVariant variant,
			   int ndevices)
{
	char		name[160];
	const GjKernels *kk = ndevices > 1 ? gj_spread_kernels(k) : k;
	ScanGroup	want[SCAN_GROUPS + 1];	/* [SCAN_GROUPS]: the NULL group */
	ScanGroup	got[SCAN_GROUPS + 1];
	bool		seen[SCAN_GROUPS + 1];
	GjJoinSpec	js;
	GjAggSpec	spec;
	GjContext  *ctx = NULL;
	GjError		err;
	GjBatch		inner;
	GjAggResult result;
	bool		ok = true;

	snprintf(name, sizeof(name), "SCAN: grouped aggregation in chunks and rounds, variant %d, %d device%s",
			 (int) variant, ndevices, ndevices > 1 ? "s, broadcast" : "");
	memset(want, 0, sizeof(want));
	memset(got, 0, sizeof(got));
	memset(seen, 0, sizeof(seen));
	for (int g = 0; g <= SCAN_GROUPS; g++)
	{
		want[g].minx = INT64_MAX;
		want[g].maxy = INT64_MIN;
	}
	for (int64_t r = 0; r < d->n; r++)
	{
		ScanGroup  *w = &want[d->gnull[r] ? SCAN_GROUPS : d->g[r] + SCAN_GROUPS / 2];

		w->rows++;
		if (!d->xnull[r])
		{
			w->nx++;
			w->sumx += d->x[r];
			if (d->x[r] < w->minx)
				w->minx = d->x[r];
		}
		if (d->y[r] > w->maxy)
			w->maxy = d->y[r];
		w->sumy += d->y[r];
	}

	memset(&err, 0, sizeof(err));
	memset(&inner, 0, sizeof(inner));
	ScanSpec(&js, false);
	js.ndevices = (uint8_t) (ndevices > 1 ? ndevices : 0);
	js.spread = GJ_SPREAD_BROADCAST;
	ScanAggSpec(&spec, variant);
	if (kk->context_create(&ctx, &js, &err) != GJ_OK || kk->build(ctx, &inner, &err) != GJ_OK ||
		kk->agg_begin(ctx, &spec, &err) != GJ_OK)
		ok = false;
	for (int64_t start = 0; ok && start < d->n; start += SCAN_CHUNK)
	{
		GjColumn	cols[3];
		GjBatch		outer = ScanChunk(d, start, d->n - start < SCAN_CHUNK ? d->n - start : SCAN_CHUNK,
									  cols);
		int64_t		nmatches = 0;

		ok = kk->count(ctx, &outer, &nmatches, &err) == GJ_OK;
		/* a round as retrieve hands it out: a spread's ends at a device's */
		for (int64_t first = 0, n = 0; ok && first < nmatches; first += n)
		{
			int64_t		undecided = 0;

			ok = kk->aggregate(ctx, first, &n, &undecided, &err) == GJ_OK;
			if (ok && (undecided != 0 || n <= 0))
			{
				Failf("a round from %lld folded %lld matches, %lld undecided (none can be)",
					  (long long) first, (long long) n, (long long) undecided);
				ok = false;
			}
		}
	}
	if (ok)
		ok = kk->agg_result(ctx, &result, &err) == GJ_OK;
	if (!ok)
		Failf("%s", err.message);
	for (int64_t i = 0; ok && i < result.ngroups; i++)
	{
		int			g = result.key_nulls[0][i] ? SCAN_GROUPS :
			(int) result.keys[0][i] + SCAN_GROUPS / 2;
		ScanGroup  *o;

		if (g < 0 || g > SCAN_GROUPS)
		{
			Failf("a group of key %lld, which no row has", (long long) result.keys[0][i]);
			break;
		}
		o = &got[g];
		if (!seen[g])
		{
			o->minx = INT64_MAX;
			o->maxy = INT64_MIN;
		}
		seen[g] = true;
		/* a spread's devices may each return a group: combine them */
		o->rows += result.n[0][i];
		o->nx += result.n[1][i];
		o->sumx += WordsSum(result.a[2][i], result.b[2][i]);
		if (result.n[3][i] > 0 && result.a[3][i] < o->minx)
			o->minx = result.a[3][i];
		if (result.n[4][i] > 0 && result.a[4][i] > o->maxy)
			o->maxy = result.a[4][i];
		o->sumy += WordsSum(result.a[5][i], result.b[5][i]);
	}
	for (int g = 0; ok && g <= SCAN_GROUPS; g++)
	{
		if (seen[g] != (want[g].rows > 0))
			Failf("group %d %s", g, seen[g] ? "has no row but came back" : "is missing");
		else if (seen[g] &&
				 (got[g].rows != want[g].rows || got[g].nx != want[g].nx ||
				  got[g].sumx != want[g].sumx || got[g].minx != want[g].minx ||
				  got[g].maxy != want[g].maxy || got[g].sumy != want[g].sumy))
			Failf("group %d: count %lld (want %lld), count(x) %lld (want %lld), or a sum, min or max differs",
				  g, (long long) got[g].rows, (long long) want[g].rows,
				  (long long) got[g].nx, (long long) want[g].nx);
		else
			continue;
		break;
	}
	if (ctx != NULL)
		kk->context_destroy(ctx);
	TestReport(impl, name);
}

static void
TestScanOn(const GjKernels *k, const char *impl, const ScanData *d)
{
	CheckRounds(k, impl, d);
	CheckRefused(k, impl);
	for (int v = 0; v < GJ_AGG_NUM_VARIANTS; v++)
		CheckAggregate(k, impl, d, (GjAggVariant) v, 1);
	CheckAggregate(k, impl, d, GJ_AGG_HASH, 3);
}

void
TestScan(void)
{
	ScanData	d = MakeScanData(SCAN_ROWS, 2026);

	TestScanOn(&gj_cpu_kernels, "cpu", &d);
#ifdef GPUJOIN_WITH_CUDA
	if (have_cuda)
		TestScanOn(&gj_cuda_kernels, "cuda", &d);
#endif
	FreeScanData(&d);
}
