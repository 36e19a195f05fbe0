/*-------------------------------------------------------------------------
 *
 * group_agg.h
 *	  What the grouped aggregation does per match, the same on the device
 *	  and in the CPU twin: read the inputs, evaluate the key and argument
 *	  programs, and what each aggregate's words start as and become
 *
 * The contract is gpujoin_kernels.h's GROUPED AGGREGATION.  Both
 * implementations evaluate a match with gj_agg_eval_match and place its
 * group by gj_agg_hash; the CPU twin folds with gj_agg_fold, the device
 * with atomics that give the same words (group_agg.cu).
 *
 * IDENTIFICATION
 *	  cuda/agg/group_agg.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_GROUP_AGG_H
#define GPUJOIN_GROUP_AGG_H

#include <string.h>

#include "expr.h"
#include "gpujoin_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A match's values: per key, per aggregate (NULL: the aggregate skips it) */
typedef struct GjAggMatch
{
	int64_t		keys[GJ_AGG_MAX_KEYS];
	uint32_t	key_nulls;		/* bit k: key k is NULL */
	GjExprDatum values[GJ_AGG_MAX_AGGS];
} GjAggMatch;

/* Input i of a match: row "row" of the column the spec names */
static inline GJ_HOST_DEVICE GjExprDatum
gj_agg_input(const GjAggInput *in, const void *values, const uint8_t *nulls,
			 int width, int64_t row)
{
	GjExprDatum d;
	uint64_t	bytes = 0;

	if (nulls != NULL && nulls[row])
	{
		d.v.i = 0;
		d.isnull = true;
		return d;
	}
	memcpy(&bytes, (const char *) values + row * width, width);
	return gj_expr_input_of(bytes, width, (GjKeyKind) in->kind);
}

/* Run one program of the spec over the match's inputs */
static inline GJ_HOST_DEVICE GjExprOutcome
gj_agg_eval(const GjAggExpr *expr, const GjExprDatum *inputs, GjExprDatum *result)
{
	GjExprDatum mine[GJ_EXPR_MAX_INPUTS];

	for (int i = 0; i < expr->program.ninputs; i++)
		mine[i] = inputs[expr->inputs[i]];
	return gj_expr_eval(&expr->program, mine, result);
}

/*
 * The match's keys and aggregate values from its inputs; false when a
 * program is undecided (the match is then folded into nothing)
 */
static inline GJ_HOST_DEVICE bool
gj_agg_eval_match(const GjAggSpec *spec, const GjExprDatum *inputs, GjAggMatch *m)
{
	m->key_nulls = 0;
	for (int k = 0; k < spec->nkeys; k++)
	{
		GjExprDatum d;

		if (gj_agg_eval(&spec->keys[k], inputs, &d) != GJ_EXPR_DONE)
			return false;
		if (d.isnull)
			m->keys[k] = 0;
		else if (gj_expr_is_float(spec->key_types[k]))
			m->keys[k] = gj_float_key(d.v.f);
		else
			m->keys[k] = d.v.i;
		if (d.isnull)
			m->key_nulls |= UINT32_C(1) << k;
	}
	for (int a = 0; a < spec->naggs; a++)
	{
		const GjAgg *agg = &spec->aggs[a];
		GjExprDatum *v = &m->values[a];

		v->v.i = 0;
		v->isnull = false;
		if (agg->has_filter)
		{
			GjExprDatum f;

			if (gj_agg_eval(&agg->filter, inputs, &f) != GJ_EXPR_DONE)
				return false;
			if (f.isnull || f.v.i == 0)
			{
				v->isnull = true;
				continue;
			}
		}
		if (agg->has_arg && gj_agg_eval(&agg->arg, inputs, v) != GJ_EXPR_DONE)
			return false;
		/* MIN/MAX of floats compare as integers */
		if (!v->isnull && (agg->kind == GJ_AGG_MIN || agg->kind == GJ_AGG_MAX) &&
			gj_expr_is_float(agg->type))
			v->v.i = gj_agg_float_order(v->v.f);
	}
	return true;
}

/* The hash of a match's group: never 0 (an empty slot's tag) */
static inline GJ_HOST_DEVICE uint64_t
gj_agg_hash(const GjAggMatch *m, int nkeys)
{
	uint64_t	h = gj_hash64((uint64_t) m->key_nulls + UINT64_C(0x9e3779b97f4a7c15));

	for (int k = 0; k < nkeys; k++)
		h = gj_hash64(h ^ (uint64_t) m->keys[k]) + UINT64_C(0x9e3779b97f4a7c15);
	return h | 1;
}

/* An aggregate's words in a group no row has reached */
static inline GJ_HOST_DEVICE void
gj_agg_init_words(const GjAgg *agg, int64_t *n, int64_t *a, int64_t *b)
{
	*n = 0;
	*b = 0;
	switch (agg->kind)
	{
		case GJ_AGG_MIN:
			*a = INT64_MAX;
			break;
		case GJ_AGG_MAX:
			*a = INT64_MIN;
			break;
		default:
			*a = 0;
			break;
	}
}

/* A float's bits as the word a, and back */
static inline GJ_HOST_DEVICE int64_t
gj_agg_double_word(double d)
{
	union
	{
		double		d;
		int64_t		i;
	}			u;

	u.d = d;
	return u.i;
}

static inline GJ_HOST_DEVICE double
gj_agg_word_double(int64_t i)
{
	union
	{
		double		d;
		int64_t		i;
	}			u;

	u.i = i;
	return u.d;
}

/* Whether a double is neither infinite nor NaN, without the C library */
static inline GJ_HOST_DEVICE bool
gj_agg_finite(double d)
{
	return d == d && d - d == 0.0;
}

/*
 * The words a and b of one non-NULL value (its n is 1): what folding it
 * into a group combines with the group's words
 */
static inline GJ_HOST_DEVICE void
gj_agg_value_words(const GjAgg *agg, const GjExprDatum *v, int64_t *a, int64_t *b)
{
	*b = 0;
	switch (agg->kind)
	{
		default:				/* GJ_AGG_COUNT */
			*a = 0;
			break;
		case GJ_AGG_SUM:
			if (gj_expr_is_float(agg->type))
			{
				*a = gj_agg_double_word(v->v.f);
				*b = gj_agg_finite(v->v.f) ? 0 : 1;
			}
			else
			{
				*a = (int64_t) (uint32_t) v->v.i;
				*b = v->v.i >> 32;
			}
			break;
		case GJ_AGG_MIN:
		case GJ_AGG_MAX:
			*a = v->v.i;
			break;
	}
}

/* Fold words (n2, a2, b2), folded from other matches, into (n, a, b) */
static inline GJ_HOST_DEVICE void
gj_agg_combine(const GjAgg *agg, int64_t *n, int64_t *a, int64_t *b,
			   int64_t n2, int64_t a2, int64_t b2)
{
	*n += n2;
	*b += b2;
	switch (agg->kind)
	{
		case GJ_AGG_COUNT:
			break;
		case GJ_AGG_SUM:
			if (gj_expr_is_float(agg->type))
				*a = gj_agg_double_word(gj_agg_word_double(*a) + gj_agg_word_double(a2));
			else
				*a = (int64_t) ((uint64_t) *a + (uint64_t) a2);
			break;
		case GJ_AGG_MIN:
			if (a2 < *a)
				*a = a2;
			break;
		case GJ_AGG_MAX:
			if (a2 > *a)
				*a = a2;
			break;
	}
}

/* Fold one value into an aggregate's words, one match after another */
static inline GJ_HOST_DEVICE void
gj_agg_fold(const GjAgg *agg, const GjExprDatum *v, int64_t *n, int64_t *a, int64_t *b)
{
	int64_t		a2;
	int64_t		b2;

	if (v->isnull)
		return;
	gj_agg_value_words(agg, v, &a2, &b2);
	gj_agg_combine(agg, n, a, b, 1, a2, b2);
}

/*
 * Groups kept in host memory, densely: n groups in arrays with room for
 * capacity.  The groups a table was emptied of when it could not grow
 * (a spill) wait here; agg_result returns them before the table's, so a
 * group may come back more than once (the contract's GjAggResult.spills).
 */
typedef struct GjAggGroups
{
	int64_t		n;
	int64_t		capacity;
	int64_t    *keys[GJ_AGG_MAX_KEYS];
	uint8_t    *key_nulls[GJ_AGG_MAX_KEYS];
	int64_t    *words[3 * GJ_AGG_MAX_AGGS];
} GjAggGroups;

/*
 * Append from's groups 0 .. from->n - 1 to "to", those where live[g] is
 * not 0 (live NULL: every one); false when the host has no memory
 */
extern bool gj_agg_groups_append(GjAggGroups *to, const GjAggSpec *spec,
								 const GjAggGroups *from, const uint8_t *live);
extern void gj_agg_groups_free(GjAggGroups *groups);

/* Make room for capacity groups; false when the host has no memory */
extern bool gj_agg_groups_reserve(GjAggGroups *groups, const GjAggSpec *spec,
								  int64_t capacity);

/*
 * The spec's order of groups 0 .. n - 1 (GjAggSpec.nsort), whose key k has
 * the values keys[k] and NULL flags key_nulls[k]: perm[i] is the group
 * that comes i-th.  A stable radix sort on the host, least significant key
 * first; false when the host has no memory.
 */
extern bool gj_agg_sort_order(const GjAggSpec *spec, int64_t n, int64_t *const *keys,
							  uint8_t *const *key_nulls, int64_t *perm);

/* Put n entries of width bytes (1 or 8) in the order perm; false: no memory */
extern bool gj_agg_permute(void *array, int width, const int64_t *perm, int64_t n);

/* groups in the spec's order (a no-op without sort keys); false: no memory */
extern bool gj_agg_groups_sort(GjAggGroups *groups, const GjAggSpec *spec);

/*
 * A key value as an unsigned word that orders as the spec's sort key i
 * does (the sign bit flipped; every bit too where descending)
 */
static inline GJ_HOST_DEVICE uint64_t
gj_agg_sort_word(const GjAggSpec *spec, int i, int64_t value)
{
	uint64_t	u = (uint64_t) value ^ (UINT64_C(1) << 63);

	return spec->sort_desc[i] ? ~u : u;
}

/* ... and a NULL flag as a bit that puts NULLs first or last */
static inline GJ_HOST_DEVICE uint64_t
gj_agg_sort_null_bit(const GjAggSpec *spec, int i, bool isnull)
{
	return (isnull != 0) != (spec->sort_nulls_first[i] != 0) ? 1 : 0;
}

/* A GjAggResult that shows groups' arrays */
extern void gj_agg_groups_result(const GjAggGroups *groups, const GjAggSpec *spec,
								 int64_t spills, GjAggResult *out);

#ifdef __cplusplus
}
#endif

#endif							/* GPUJOIN_GROUP_AGG_H */
