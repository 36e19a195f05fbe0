/*-------------------------------------------------------------------------
 *
 * test_agg.c
 *	  Kernel tests of the grouped aggregation (cuda/agg/): the CPU twin
 *	  against sums, counts and extremes worked out here match by match, and
 *	  the CUDA kernels against the CPU twin
 *
 * A generated join (an inner side with duplicate keys and NULLs in its
 * payload, an outer side whose keys hit some inner rows, several or none)
 * is counted once and aggregated in rounds smaller than its matches.  The
 * reference walks every (outer, inner) pair with equal keys itself and
 * keeps 128-bit integer sums, so it shares no code with the twin beyond
 * the programs' interpreter.  Cases: one group (every aggregate kind, a
 * FILTER, NULL arguments, an argument that overflows int4 in some rows,
 * which must be counted undecided); groups by a key with NULLs; groups by
 * two keys, more of them than the device table's first size, so that it
 * grows in the middle of a round; the same under memory limits too small
 * for the groups, which must spill and still add up; and the SHARED
 * variant (per-block words in shared memory) over few groups and over
 * more than its shared memory holds; and the SORT variant (runs of sorted
 * matches) over the same keys, growing and spilling.
 *
 * IDENTIFICATION
 *	  test/kernels/test_agg.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "gpujoin_kernels.h"
#include "expr.h"
#include "group_agg.h"
#include "test_kernels.h"

/* The join: inner (key, v int4, w int8, f float8), outer (key, x int4, g int2) */
typedef struct AggJoin
{
	int64_t		ninner;
	int64_t		nouter;
	uint64_t   *ikeys;
	int32_t    *v;
	uint8_t    *vnull;
	int64_t    *w;
	double	   *f;
	uint64_t   *okeys;
	int32_t    *x;
	int16_t    *g;
	uint8_t    *gnull;
} AggJoin;

/* A program reading input "input" of type "type" as it is */
static void
InputProgram(GjAggExpr *e, int input, GjExprType type)
{
	gj_agg_expr_input(e, input, type);
}

/* input a OP input b (arithmetic of type, or a comparison giving a bool) */
static void
BinaryProgram(GjAggExpr *e, int a, int b, GjExprType type, GjExprOp op, GjExprType result)
{
	memset(e, 0, sizeof(*e));
	e->program.nsteps = 3;
	e->program.ninputs = 2;
	e->program.input_types[0] = e->program.input_types[1] = (uint8_t) type;
	e->program.steps[0].op = GJ_EXPR_INPUT;
	e->program.steps[0].type = (uint8_t) type;
	e->program.steps[0].arg = 0;
	e->program.steps[1].op = GJ_EXPR_INPUT;
	e->program.steps[1].type = (uint8_t) type;
	e->program.steps[1].arg = 1;
	e->program.steps[2].op = (uint8_t) op;
	e->program.steps[2].type = (uint8_t) (op >= GJ_EXPR_EQ ? type : result);
	e->inputs[0] = (int16_t) a;
	e->inputs[1] = (int16_t) b;
}

static AggJoin
MakeJoin(int64_t ninner, int64_t nouter, uint64_t seed)
{
	AggJoin		j;
	uint64_t	s = seed;

#define NEXT() (s = s * 6364136223846793005ULL + 1442695040888963407ULL, s >> 17)
	j.ninner = ninner;
	j.nouter = nouter;
	j.ikeys = TestAlloc(ninner * sizeof(uint64_t));
	j.v = TestAlloc(ninner * sizeof(int32_t));
	j.vnull = TestAlloc(ninner);
	j.w = TestAlloc(ninner * sizeof(int64_t));
	j.f = TestAlloc(ninner * sizeof(double));
	j.okeys = TestAlloc(nouter * sizeof(uint64_t));
	j.x = TestAlloc(nouter * sizeof(int32_t));
	j.g = TestAlloc(nouter * sizeof(int16_t));
	j.gnull = TestAlloc(nouter);
	for (int64_t i = 0; i < ninner; i++)
	{
		j.ikeys[i] = NEXT() % (uint64_t) (ninner * 3 / 4 + 1);	/* duplicates */
		j.v[i] = (int32_t) (NEXT() % 2000001) - 1000000;
		j.vnull[i] = NEXT() % 10 == 0;
		/* large enough that a group's sum leaves 64 bits */
		j.w[i] = (int64_t) (NEXT() % UINT64_C(1000000000000));
		if (NEXT() & 1)
			j.w[i] = -j.w[i];
		if (i % 3 == 0)
			j.w[i] += INT64_C(9000000000000000000);	/* sums leave 64 bits */
		j.f[i] = ((double) (NEXT() % 1000001) - 500000.0) / 8.0;	/* exact sums */
	}
	j.f[0] = -0.0;
	j.f[1] = 0.0;				/* one group with -0 where f is a key */
	for (int64_t i = 0; i < nouter; i++)
	{
		j.okeys[i] = NEXT() % (uint64_t) (ninner + 1);
		j.x[i] = (int32_t) (NEXT() % 2001) - 1000;
		j.g[i] = (int16_t) (NEXT() % 50);
		j.gnull[i] = NEXT() % 17 == 0;
	}
	j.x[nouter / 2] = INT32_MAX;	/* x + v overflows where v > 0 */
#undef NEXT
	return j;
}

static void
FreeJoin(AggJoin *j)
{
	free(j->ikeys);
	free(j->v);
	free(j->vnull);
	free(j->w);
	free(j->f);
	free(j->okeys);
	free(j->x);
	free(j->g);
	free(j->gnull);
}

/*
 * The spec's inputs: 0 v (inner int4), 1 w (inner int8), 2 f (inner
 * float8), 3 x (outer int4), 4 g (outer int2)
 */
static void
SetInputs(GjAggSpec *spec)
{
	static const GjAggInput inputs[] = {
		{GJ_SIDE_INNER, 0, GJ_KEY_SIGNED, GJ_EXPR_INT4},
		{GJ_SIDE_INNER, 1, GJ_KEY_SIGNED, GJ_EXPR_INT8},
		{GJ_SIDE_INNER, 2, GJ_KEY_FLOAT8, GJ_EXPR_FLOAT8},
		{GJ_SIDE_OUTER, 0, GJ_KEY_SIGNED, GJ_EXPR_INT4},
		{GJ_SIDE_OUTER, 1, GJ_KEY_SIGNED, GJ_EXPR_INT2},
	};

	spec->ninputs = 5;
	memcpy(spec->inputs, inputs, sizeof(inputs));
}

static void
AddAgg(GjAggSpec *spec, GjAggKind kind, int input, GjExprType type)
{
	GjAgg	   *agg = &spec->aggs[spec->naggs++];

	memset(agg, 0, sizeof(*agg));
	agg->kind = (uint8_t) kind;
	agg->type = (uint8_t) type;
	if (input >= 0)
	{
		agg->has_arg = true;
		InputProgram(&agg->arg, input, type);
	}
}

/* The reference's words of one group: n, a 128-bit sum or extreme, inf count */
typedef struct RefWords
{
	int64_t		n;
	__int128	sum;
	double		fsum;
	int64_t		ext;
	int64_t		nonfinite;
} RefWords;

typedef struct RefGroup
{
	int64_t		keys[2];
	uint32_t	nulls;
	RefWords	w[GJ_AGG_MAX_AGGS];
} RefGroup;

/* The value of the aggregate's argument for pair (o, i): NULL -> false */
static bool
RefValue(const AggJoin *j, const GjAgg *agg, int a, int64_t o, int64_t i, GjExprDatum *d)
{
	GjExprDatum in[5];

	in[0].isnull = j->vnull[i];
	in[0].v.i = j->v[i];
	in[1].isnull = false;
	in[1].v.i = j->w[i];
	in[2].isnull = false;
	in[2].v.f = j->f[i];
	in[3].isnull = false;
	in[3].v.i = j->x[o];
	in[4].isnull = j->gnull[o];
	in[4].v.i = j->g[o];
	(void) a;
	if (agg->has_filter)
	{
		/* the filters here: x > 0 */
		if (!(j->x[o] > 0))
			return false;
	}
	if (!agg->has_arg)
	{
		d->isnull = false;
		return true;
	}
	if (agg->arg.program.nsteps == 3)
	{
		/* x + v, int4: the test only asks for it on decided pairs */
		d->isnull = in[0].isnull;
		d->v.i = (int64_t) j->x[o] + j->v[i];
	}
	else
		*d = in[agg->arg.inputs[0]];
	return !d->isnull;
}

/*
 * The reference: every pair, its group by spec's keys (which the test
 * builds from g, and g with x % 1000 encoded as "x" directly), folded
 * with 128-bit sums; a pair where x + v overflows int4 counts undecided
 */
static RefGroup *
Reference(const AggJoin *j, const GjAggSpec *spec, int64_t *ngroups, int64_t *undecided)
{
	int64_t		cap = 1024;
	RefGroup   *groups = TestAlloc(cap * sizeof(RefGroup));

	*ngroups = 0;
	*undecided = 0;
	if (spec->nkeys == 0)
	{
		memset(&groups[0], 0, sizeof(RefGroup));
		*ngroups = 1;
	}
	for (int64_t o = 0; o < j->nouter; o++)
		for (int64_t i = 0; i < j->ninner; i++)
		{
			RefGroup   *grp = NULL;
			int64_t		keys[2] = {0, 0};
			uint32_t	nulls = 0;
			bool		overflow = false;

			if (j->okeys[o] != j->ikeys[i])
				continue;
			for (int a = 0; a < spec->naggs; a++)
				if (spec->aggs[a].has_arg && spec->aggs[a].arg.program.nsteps == 3 &&
					!j->vnull[i])
				{
					int64_t		sum = (int64_t) j->x[o] + j->v[i];

					overflow |= sum > INT32_MAX || sum < INT32_MIN;
				}
			if (overflow)
			{
				(*undecided)++;
				continue;
			}
			if (spec->nkeys >= 1)
			{
				keys[0] = j->gnull[o] ? 0 : j->g[o];
				nulls |= j->gnull[o] ? 1 : 0;
			}
			/* the second key x, or f where the spec says it is a float */
			if (spec->nkeys >= 2 && spec->key_types[1] == GJ_EXPR_FLOAT8)
				keys[1] = gj_agg_float_order(j->f[i] == 0.0 ? 0.0 : j->f[i]);	/* -0 is 0 */
			else if (spec->nkeys >= 2)
				keys[1] = j->x[o];
			for (int64_t k = 0; k < *ngroups && grp == NULL; k++)
				if (spec->nkeys == 0 ||
					(groups[k].nulls == nulls && groups[k].keys[0] == keys[0] &&
					 groups[k].keys[1] == keys[1]))
					grp = &groups[k];
			if (grp == NULL)
			{
				if (*ngroups == cap)
				{
					cap *= 2;
					groups = realloc(groups, cap * sizeof(RefGroup));
				}
				grp = &groups[(*ngroups)++];
				memset(grp, 0, sizeof(*grp));
				grp->keys[0] = keys[0];
				grp->keys[1] = keys[1];
				grp->nulls = nulls;
				for (int a = 0; a < spec->naggs; a++)
					grp->w[a].ext = spec->aggs[a].kind == GJ_AGG_MIN ? INT64_MAX : INT64_MIN;
			}
			for (int a = 0; a < spec->naggs; a++)
			{
				const GjAgg *agg = &spec->aggs[a];
				RefWords   *w = &grp->w[a];
				GjExprDatum d = {{0}, true};
				int64_t		ord;

				if (!RefValue(j, agg, a, o, i, &d))
					continue;
				w->n++;
				if (gj_expr_is_float(agg->type))
				{
					w->fsum += d.v.f;
					w->nonfinite += !isfinite(d.v.f);
					ord = gj_agg_float_order(d.v.f);
				}
				else
				{
					w->sum += d.v.i;
					ord = d.v.i;
				}
				if (agg->kind == GJ_AGG_MIN && ord < w->ext)
					w->ext = ord;
				if (agg->kind == GJ_AGG_MAX && ord > w->ext)
					w->ext = ord;
			}
		}
	return groups;
}

/*
 * The context's memory_limit (0: none); with quiet_oom, running out of
 * device memory is not a failure (RunAgg returns false, ran_out_of_memory)
 */
static int64_t agg_memory_limit = 0;
static bool quiet_oom = false;
static bool ran_out_of_memory = false;

/* Run the join and the aggregation on kernels k; false (reported) on an error */
static bool
RunAgg(const GjKernels *k, const AggJoin *j, const GjAggSpec *spec, GjVariant variant,
	   int64_t round, GjAggResult *out, int64_t *undecided, GjContext **ctxp)
{
	GjJoinSpec	js;
	GjContext  *ctx = NULL;
	GjError		err;
	GjColumn	icols[3];
	GjColumn	ocols[2];
	GjBatch		inner;
	GjBatch		outer;
	int64_t		nmatches = 0;

	memset(&js, 0, sizeof(js));
	memset(&err, 0, sizeof(err));
	js.variant = variant;
	js.materialize = GJ_MATERIALIZE_GFUR;
	js.inner_ncolumns = 3;
	js.inner_widths[0] = 4;
	js.inner_widths[1] = 8;
	js.inner_widths[2] = 8;
	js.outer_ncolumns = 2;
	js.outer_widths[0] = 4;
	js.outer_widths[1] = 2;
	js.max_matches = round;
	js.memory_limit = agg_memory_limit;
	icols[0].values = j->v;
	icols[0].nulls = j->vnull;
	icols[1].values = j->w;
	icols[1].nulls = NULL;
	icols[2].values = j->f;
	icols[2].nulls = NULL;
	ocols[0].values = j->x;
	ocols[0].nulls = NULL;
	ocols[1].values = j->g;
	ocols[1].nulls = j->gnull;
	memset(&inner, 0, sizeof(inner));
	inner.keys = j->ikeys;
	inner.nrows = j->ninner;
	inner.columns = icols;
	memset(&outer, 0, sizeof(outer));
	outer.keys = j->okeys;
	outer.nrows = j->nouter;
	outer.columns = ocols;
	*undecided = 0;
	*ctxp = NULL;
	if (k->context_create(&ctx, &js, &err) != GJ_OK ||
		k->build(ctx, &inner, &err) != GJ_OK ||
		k->agg_begin(ctx, spec, &err) != GJ_OK ||
		k->count(ctx, &outer, &nmatches, &err) != GJ_OK)
	{
		if (quiet_oom && err.status == GJ_ERROR_DEVICE_MEMORY)
		{
			ran_out_of_memory = true;
			k->context_destroy(ctx);
			return false;
		}
		Failf("%s", err.message);
		k->context_destroy(ctx);
		return false;
	}
	for (int64_t first = 0; first < nmatches; first += round)
	{
		int64_t		n = 0;
		int64_t		u = 0;

		if (k->aggregate(ctx, first, &n, &u, &err) != GJ_OK)
		{
			if (quiet_oom && err.status == GJ_ERROR_DEVICE_MEMORY)
			{
				ran_out_of_memory = true;
				k->context_destroy(ctx);
				return false;
			}
			Failf("aggregate: %s", err.message);
			k->context_destroy(ctx);
			return false;
		}
		*undecided += u;
	}
	if (k->agg_result(ctx, out, &err) != GJ_OK)
	{
		Failf("agg_result: %s", err.message);
		k->context_destroy(ctx);
		return false;
	}
	*ctxp = ctx;
	return true;
}

/* Index of the result group with these keys, or -1 */
static int64_t
FindResult(const GjAggResult *r, int nkeys, const int64_t *keys, uint32_t nulls)
{
	for (int64_t g = 0; g < r->ngroups; g++)
	{
		bool		same = true;

		for (int k = 0; k < nkeys && same; k++)
		{
			bool		isnull = r->key_nulls[k][g] != 0;

			same = isnull == (((nulls >> k) & 1) != 0) && (isnull || r->keys[k][g] == keys[k]);
		}
		if (same)
			return g;
	}
	return -1;
}

/* Compare a result with the reference's groups; floats within tol */
static void
CompareWithReference(const char *impl, const char *name, const GjAggSpec *spec,
					 const GjAggResult *r, const RefGroup *ref, int64_t nref,
					 int64_t undecided, int64_t ref_undecided, double tol)
{
	if (r->ngroups != nref)
		Failf("%lld groups, the reference has %lld", (long long) r->ngroups, (long long) nref);
	if (undecided != ref_undecided)
		Failf("%lld undecided matches, the reference has %lld",
			  (long long) undecided, (long long) ref_undecided);
	for (int64_t k = 0; k < nref; k++)
	{
		int64_t		g = FindResult(r, spec->nkeys, ref[k].keys, ref[k].nulls);

		if (g < 0)
		{
			Failf("group %lld (keys %lld, %lld, nulls %u) is missing", (long long) k,
				  (long long) ref[k].keys[0], (long long) ref[k].keys[1], ref[k].nulls);
			break;
		}
		for (int a = 0; a < spec->naggs; a++)
		{
			const GjAgg *agg = &spec->aggs[a];
			const RefWords *w = &ref[k].w[a];

			if (r->n[a][g] != w->n)
				Failf("aggregate %d of group %lld counts %lld, the reference %lld", a,
					  (long long) k, (long long) r->n[a][g], (long long) w->n);
			if (agg->kind == GJ_AGG_SUM && !gj_expr_is_float(agg->type))
			{
				__int128	sum = (__int128) r->b[a][g] * ((__int128) 1 << 32) +
					(__int128) (uint64_t) r->a[a][g];

				if (sum != w->sum)
					Failf("aggregate %d of group %lld: the integer sum differs", a, (long long) k);
			}
			else if (agg->kind == GJ_AGG_SUM)
			{
				double		got = gj_agg_word_double(r->a[a][g]);

				if (fabs(got - w->fsum) > tol * fmax(1.0, fabs(w->fsum)) ||
					r->b[a][g] != w->nonfinite)
					Failf("aggregate %d of group %lld sums %.17g, the reference %.17g", a,
						  (long long) k, got, w->fsum);
			}
			else if ((agg->kind == GJ_AGG_MIN || agg->kind == GJ_AGG_MAX) && w->n > 0 &&
					 r->a[a][g] != w->ext)
				Failf("aggregate %d of group %lld: extreme %lld, the reference %lld", a,
					  (long long) k, (long long) r->a[a][g], (long long) w->ext);
		}
	}
	TestReport(impl, name);
}

/*
 * Groups g and h of a result by the spec's sort keys, as PostgreSQL orders
 * them: negative, 0 or positive (written here, not with the library's
 * sort words, so that a wrong word fails)
 */
static int
CompareGroups(const GjAggSpec *spec, const GjAggResult *r, int64_t g, int64_t h)
{
	for (int i = 0; i < spec->nsort; i++)
	{
		int			k = spec->sort_keys[i];
		bool		ng = r->key_nulls[k][g] != 0;
		bool		nh = r->key_nulls[k][h] != 0;
		int64_t		vg = r->keys[k][g];
		int64_t		vh = r->keys[k][h];

		if (ng || nh)
		{
			if (ng && nh)
				continue;
			return (ng == spec->sort_nulls_first[i]) ? -1 : 1;
		}
		if (vg != vh)
			return ((vg < vh) != spec->sort_desc[i]) ? -1 : 1;
	}
	return 0;
}

/* With sort keys: the groups in their order (strictly, each key once) */
static void
CheckOrder(const char *impl, const char *name, const GjAggSpec *spec, const GjAggResult *r,
		   bool strict)
{
	char		what[200];

	if (spec->nsort == 0)
		return;
	for (int64_t g = 1; g < r->ngroups; g++)
	{
		int			c = CompareGroups(spec, r, g - 1, g);

		if (c > 0 || (strict && c == 0 && spec->nsort == spec->nkeys))
		{
			Failf("groups %lld and %lld are out of order", (long long) g - 1, (long long) g);
			break;
		}
	}
	snprintf(what, sizeof(what), "%s: in key order", name);
	TestReport(impl, what);
}

static void
RunCase(const char *name, const AggJoin *j, const GjAggSpec *spec, GjVariant variant,
		int64_t round, bool with_reference)
{
	RefGroup   *ref = NULL;
	int64_t		nref = 0;
	int64_t		ref_undecided = 0;
	GjAggResult cpu;
	GjContext  *cpu_ctx = NULL;
	int64_t		cpu_undecided = 0;

	if (with_reference)
		ref = Reference(j, spec, &nref, &ref_undecided);
	if (RunAgg(&gj_cpu_kernels, j, spec, variant, round, &cpu, &cpu_undecided, &cpu_ctx))
	{
		CheckOrder("cpu", name, spec, &cpu, true);
		if (with_reference)
			CompareWithReference("cpu", name, spec, &cpu, ref, nref, cpu_undecided,
								 ref_undecided, 0.0);
		else
			TestReport("cpu", name);
	}
	else
		TestReport("cpu", name);
#ifdef GPUJOIN_WITH_CUDA
	if (have_cuda && cpu_ctx != NULL)
	{
		GjAggResult cuda;
		GjContext  *cuda_ctx = NULL;
		int64_t		cuda_undecided = 0;

		if (RunAgg(&gj_cuda_kernels, j, spec, variant, round, &cuda, &cuda_undecided, &cuda_ctx))
		{
			CheckOrder("cuda", name, spec, &cuda, true);
			/* the CPU twin's groups as the reference of the device's */
			RefGroup   *twin = TestAlloc((cpu.ngroups + 1) * sizeof(RefGroup));

			for (int64_t g = 0; g < cpu.ngroups; g++)
			{
				memset(&twin[g], 0, sizeof(RefGroup));
				for (int k = 0; k < spec->nkeys; k++)
				{
					twin[g].keys[k] = cpu.keys[k][g];
					twin[g].nulls |= cpu.key_nulls[k][g] ? (1u << k) : 0;
				}
				for (int a = 0; a < spec->naggs; a++)
				{
					twin[g].w[a].n = cpu.n[a][g];
					twin[g].w[a].sum = (__int128) cpu.b[a][g] * ((__int128) 1 << 32) +
						(__int128) (uint64_t) cpu.a[a][g];
					twin[g].w[a].fsum = gj_agg_word_double(cpu.a[a][g]);
					twin[g].w[a].nonfinite = cpu.b[a][g];
					twin[g].w[a].ext = cpu.a[a][g];
				}
			}
			CompareWithReference("cuda", name, spec, &cuda, twin, cpu.ngroups,
								 cuda_undecided, cpu_undecided, 1e-12);
			free(twin);
		}
		else
			TestReport("cuda", name);
		gj_cuda_kernels.context_destroy(cuda_ctx);
	}
#endif
	gj_cpu_kernels.context_destroy(cpu_ctx);
	free(ref);
}

/*
 * A result whose group keys may repeat (spills) with each group's words
 * combined into one, as PostgreSQL's Finalize Aggregate would
 */
static void
Combine(const GjAggSpec *spec, const GjAggResult *r, GjAggGroups *out, GjAggResult *combined)
{
	memset(out, 0, sizeof(*out));
	for (int64_t g = 0; g < r->ngroups; g++)
	{
		int64_t		keys[GJ_AGG_MAX_KEYS];
		uint32_t	nulls = 0;
		GjAggResult view;
		int64_t		at;

		for (int k = 0; k < spec->nkeys; k++)
		{
			keys[k] = r->keys[k][g];
			nulls |= r->key_nulls[k][g] ? (1u << k) : 0;
		}
		gj_agg_groups_result(out, spec, 0, &view);
		at = FindResult(&view, spec->nkeys, keys, nulls);
		if (at < 0)
		{
			GjAggGroups one;

			memset(&one, 0, sizeof(one));
			one.n = 1;
			for (int k = 0; k < spec->nkeys; k++)
			{
				one.keys[k] = (int64_t *) &r->keys[k][g];
				one.key_nulls[k] = (uint8_t *) &r->key_nulls[k][g];
			}
			for (int a = 0; a < spec->naggs; a++)
			{
				one.words[3 * a] = (int64_t *) &r->n[a][g];
				one.words[3 * a + 1] = (int64_t *) &r->a[a][g];
				one.words[3 * a + 2] = (int64_t *) &r->b[a][g];
			}
			if (!gj_agg_groups_append(out, spec, &one, NULL))
				Failf("out of memory");
			continue;
		}
		for (int a = 0; a < spec->naggs; a++)
			gj_agg_combine(&spec->aggs[a], &out->words[3 * a][at], &out->words[3 * a + 1][at],
						   &out->words[3 * a + 2][at], r->n[a][g], r->a[a][g], r->b[a][g]);
	}
	gj_agg_groups_result(out, spec, r->spills, combined);
}

/*
 * Groups that outgrow memory_limit: under a range of limits, each
 * implementation's groups (spilled, then combined here) against the
 * reference; the limits too small for the join itself are skipped, and
 * at least one limit must have spilled
 */
static void
RunSpillCase(const char *name, const AggJoin *j, const GjAggSpec *spec, int64_t round)
{
	int64_t		nref = 0;
	int64_t		ref_undecided = 0;
	RefGroup   *ref = Reference(j, spec, &nref, &ref_undecided);
	const GjKernels *impls[2] = {&gj_cpu_kernels, NULL};
	const char *names[2] = {"cpu", "cuda"};

#ifdef GPUJOIN_WITH_CUDA
	if (have_cuda)
		impls[1] = &gj_cuda_kernels;
#endif
	for (int i = 0; i < 2; i++)
	{
		int			spilled = 0;
		char		what[200];

		if (impls[i] == NULL)
			continue;
		for (int64_t limit = 64 * 1024; limit <= 16 * 1024 * 1024; limit *= 2)
		{
			GjAggResult r;
			GjAggResult combined;
			GjAggGroups merged;
			GjContext  *ctx = NULL;
			int64_t		undecided = 0;

			agg_memory_limit = limit;
			quiet_oom = true;
			ran_out_of_memory = false;
			snprintf(what, sizeof(what), "%s, memory_limit %lld kB", name,
					 (long long) (limit / 1024));
			if (!RunAgg(impls[i], j, spec, GJ_VARIANT_NPHJ, round, &r, &undecided, &ctx))
			{
				if (!ran_out_of_memory)
					TestReport(names[i], what);
				continue;
			}
			if (r.spills > 0)
				spilled++;
			/* a key may come back more than once, each time in its place */
			CheckOrder(names[i], what, spec, &r, r.spills == 0);
			Combine(spec, &r, &merged, &combined);
			CompareWithReference(names[i], what, spec, &combined, ref, nref, undecided,
								 ref_undecided, 1e-12);
			gj_agg_groups_free(&merged);
			impls[i]->context_destroy(ctx);
		}
		if (spilled == 0)
			Failf("no memory_limit made the groups spill");
		snprintf(what, sizeof(what), "%s: some limit spills", name);
		TestReport(names[i], what);
	}
	agg_memory_limit = 0;
	quiet_oom = false;
	free(ref);
}

void
TestAgg(void)
{
	AggJoin		small = MakeJoin(3000, 5000, 42);
	AggJoin		large = MakeJoin(200000, 600000, 7);
	GjAggSpec  *spec = TestAlloc(sizeof(GjAggSpec));

	/* one group: every kind, a FILTER, NULL arguments */
	memset(spec, 0, sizeof(*spec));
	SetInputs(spec);
	AddAgg(spec, GJ_AGG_COUNT, -1, GJ_EXPR_INT8);
	AddAgg(spec, GJ_AGG_COUNT, 0, GJ_EXPR_INT4);
	AddAgg(spec, GJ_AGG_SUM, 0, GJ_EXPR_INT4);
	AddAgg(spec, GJ_AGG_SUM, 1, GJ_EXPR_INT8);
	AddAgg(spec, GJ_AGG_SUM, 2, GJ_EXPR_FLOAT8);
	AddAgg(spec, GJ_AGG_MIN, 0, GJ_EXPR_INT4);
	AddAgg(spec, GJ_AGG_MAX, 1, GJ_EXPR_INT8);
	AddAgg(spec, GJ_AGG_MIN, 2, GJ_EXPR_FLOAT8);
	AddAgg(spec, GJ_AGG_MAX, 2, GJ_EXPR_FLOAT8);
	AddAgg(spec, GJ_AGG_SUM, 0, GJ_EXPR_INT4);
	spec->aggs[spec->naggs - 1].has_filter = true;
	BinaryProgram(&spec->aggs[spec->naggs - 1].filter, 3, 3, GJ_EXPR_INT4, GJ_EXPR_GT,
				  GJ_EXPR_BOOL);
	/* the filter x > 0 as "x > x" would be false: compare with a constant */
	{
		GjExprProgram *p = &spec->aggs[spec->naggs - 1].filter.program;

		p->ninputs = 1;
		p->steps[1].op = GJ_EXPR_CONST;
		p->steps[1].arg = 0;
		p->nconsts = 1;
		p->consts[0].v.i = 0;
		p->consts[0].isnull = false;
	}
	RunCase("aggregate: one group, every kind", &small, spec, GJ_VARIANT_NPHJ, 777, true);
	RunCase("aggregate: one group, sort-merge matches", &small, spec, GJ_VARIANT_SMJ, 1 << 20, true);

	/* an argument that overflows int4 in some matches: undecided */
	AddAgg(spec, GJ_AGG_SUM, -1, GJ_EXPR_INT4);
	spec->aggs[spec->naggs - 1].has_arg = true;
	BinaryProgram(&spec->aggs[spec->naggs - 1].arg, 3, 0, GJ_EXPR_INT4, GJ_EXPR_ADD,
				  GJ_EXPR_INT4);
	RunCase("aggregate: overflowing argument is undecided", &small, spec, GJ_VARIANT_NPHJ, 1000, true);
	spec->naggs--;

	/* groups by g, NULL its own group */
	spec->nkeys = 1;
	InputProgram(&spec->keys[0], 4, GJ_EXPR_INT2);
	RunCase("aggregate: groups by a key with NULLs", &small, spec, GJ_VARIANT_NPHJ, 999, true);
	spec->variant = GJ_AGG_SHARED;
	RunCase("aggregate: groups by a key with NULLs, shared memory", &small, spec, GJ_VARIANT_NPHJ,
			999, true);
	spec->variant = GJ_AGG_HASH;

	/* groups by (g, x): thousands, more than the device table starts with */
	spec->nkeys = 2;
	InputProgram(&spec->keys[1], 3, GJ_EXPR_INT4);
	RunCase("aggregate: groups by two keys, the table grows", &small, spec, GJ_VARIANT_NPHJ, 1500, true);
	RunSpillCase("aggregate: groups outgrow memory_limit", &small, spec, 1500);
	RunCase("aggregate: large, two keys", &large, spec, GJ_VARIANT_NPHJ, 1 << 20, false);
	/* shared memory: the first groups there, the others in the table */
	spec->variant = GJ_AGG_SHARED;
	RunCase("aggregate: groups by two keys, shared memory and the table", &small, spec,
			GJ_VARIANT_NPHJ, 1500, true);
	RunSpillCase("aggregate: shared memory, groups outgrow memory_limit", &small, spec, 1500);
	RunCase("aggregate: large, two keys, shared memory", &large, spec, GJ_VARIANT_NPHJ, 1 << 20,
			false);
	spec->nkeys = 1;
	RunCase("aggregate: large, one key, shared memory", &large, spec, GJ_VARIANT_NPHJ, 1 << 20,
			false);
	/*
	 * sorted runs, the inputs read again and the values sorted along: a key
	 * with NULLs, two keys as the table grows, spills
	 */
	for (int v = GJ_AGG_SORT; v <= GJ_AGG_SORT_TR; v++)
	{
		const char *how = v == GJ_AGG_SORT ? "sorted" : "sorted, values along";
		char		what[100];

		spec->variant = (uint8_t) v;
		snprintf(what, sizeof(what), "aggregate: groups by a key with NULLs, %s", how);
		RunCase(what, &small, spec, GJ_VARIANT_NPHJ, 999, true);
		snprintf(what, sizeof(what), "aggregate: large, one key, %s", how);
		RunCase(what, &large, spec, GJ_VARIANT_NPHJ, 1 << 20, false);
		spec->nkeys = 2;
		snprintf(what, sizeof(what), "aggregate: groups by two keys, %s, the table grows", how);
		RunCase(what, &small, spec, GJ_VARIANT_NPHJ, 1500, true);
		snprintf(what, sizeof(what), "aggregate: %s, groups outgrow memory_limit", how);
		RunSpillCase(what, &small, spec, 1500);
		snprintf(what, sizeof(what), "aggregate: large, two keys, %s", how);
		RunCase(what, &large, spec, GJ_VARIANT_NPHJ, 1 << 20, false);
		spec->nkeys = 1;
	}
	spec->variant = GJ_AGG_HASH;
	RunCase("aggregate: large, one key", &large, spec, GJ_VARIANT_NPHJ, 1 << 20, false);

	/*
	 * In key order (agg_result sorts): the second key descending, NULLs
	 * first, then the first ascending, NULLs last; every variant, a spill,
	 * large (the device's sort against the twin's), one key of two
	 */
	spec->nkeys = 2;
	spec->nsort = 2;
	spec->sort_keys[0] = 1;
	spec->sort_desc[0] = true;
	spec->sort_nulls_first[0] = true;
	spec->sort_keys[1] = 0;
	spec->sort_desc[1] = false;
	spec->sort_nulls_first[1] = false;
	for (int v = GJ_AGG_HASH; v < GJ_AGG_NUM_VARIANTS; v++)
	{
		char		what[100];

		spec->variant = (uint8_t) v;
		snprintf(what, sizeof(what), "aggregate: two keys in key order, variant %d", v);
		RunCase(what, &small, spec, GJ_VARIANT_NPHJ, 1500, true);
	}
	spec->variant = GJ_AGG_HASH;
	RunSpillCase("aggregate: in key order, groups outgrow memory_limit", &small, spec, 1500);
	RunCase("aggregate: large, two keys in key order", &large, spec, GJ_VARIANT_NPHJ, 1 << 20,
			false);
	spec->nsort = 1;
	spec->sort_keys[0] = 0;
	spec->sort_desc[0] = false;
	spec->sort_nulls_first[0] = false;
	RunCase("aggregate: two keys in the first's order", &small, spec, GJ_VARIANT_NPHJ, 1500, true);
	spec->nkeys = 1;
	spec->sort_desc[0] = true;
	RunCase("aggregate: large, one key descending", &large, spec, GJ_VARIANT_NPHJ, 1 << 20, false);
	spec->nsort = 0;

	/*
	 * A float key (g, f): -0 and 0 one group, every variant, in key order
	 * (f descending)
	 */
	spec->nkeys = 2;
	InputProgram(&spec->keys[1], 2, GJ_EXPR_FLOAT8);
	spec->key_types[1] = GJ_EXPR_FLOAT8;
	for (int v = GJ_AGG_HASH; v < GJ_AGG_NUM_VARIANTS; v++)
	{
		char		what[100];

		spec->variant = (uint8_t) v;
		snprintf(what, sizeof(what), "aggregate: a float key, variant %d", v);
		RunCase(what, &small, spec, GJ_VARIANT_NPHJ, 1500, true);
	}
	spec->variant = GJ_AGG_HASH;
	spec->nsort = 1;
	spec->sort_keys[0] = 1;
	spec->sort_desc[0] = true;
	/* (not large: the comparison with the twin is quadratic in the groups,
	 * and (g, f) makes nearly one per match) */
	RunCase("aggregate: a float key in key order", &small, spec, GJ_VARIANT_NPHJ, 1500, true);
	spec->nsort = 0;
	spec->key_types[1] = 0;
	spec->nkeys = 0;
	RunCase("aggregate: large, one group", &large, spec, GJ_VARIANT_NPHJ, 1 << 20, false);

	free(spec);
	FreeJoin(&small);
	FreeJoin(&large);
}
