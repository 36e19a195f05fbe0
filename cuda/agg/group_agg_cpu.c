/*-------------------------------------------------------------------------
 *
 * group_agg_cpu.c
 *	  The grouped aggregation's CPU twin, and the check of a spec both
 *	  implementations make
 *
 * Each round of matches is retrieved as the join hands it out (host
 * arrays, gj_cpu_retrieve) and folded match after match: the groups lie
 * densely, group g's words at [g] of each array, found through an
 * open-addressing table of (hash, group) slots that doubles at half full.
 * This is the specification the device's atomics are tested against
 * (test/kernels/): the same groups, the same integer words, float sums
 * within rounding.
 *
 * IDENTIFICATION
 *	  cuda/agg/group_agg_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "group_agg.h"

/*
 * The groups (dense, groups.n of them in arrays of groups.capacity) and
 * slots: nslots (a power of two, twice the capacity) hashes, and their
 * groups (-1: empty).  max_groups: the most the table may hold under the
 * context's memory_limit (0: no limit); past it, the groups are spilled.
 */
typedef struct CpuAggState
{
	GjAggSpec	spec;
	GjAggGroups groups;
	int64_t		nslots;
	uint64_t   *hashes;
	int64_t    *groups_of;
	int64_t		max_groups;
	GjAggGroups spilled;
	int64_t		spills;
	GjAggGroups result;			/* agg_result's, after a spill */
} CpuAggState;

void
gj_cpu_agg_destroy(void *state)
{
	CpuAggState *agg = state;

	if (agg == NULL)
		return;
	gj_agg_groups_free(&agg->groups);
	gj_agg_groups_free(&agg->spilled);
	gj_agg_groups_free(&agg->result);
	free(agg->hashes);
	free(agg->groups_of);
	free(agg);
}

/*
 * Check a spec against the join's: every index in range, every program
 * sound, the kinds and types the words are defined for
 */
GjStatus
gj_agg_check(const GjAggSpec *spec, const GjJoinSpec *join, GjError *err)
{
	if (spec == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, "No aggregation was given.");
	if (spec->ninputs < 0 || spec->ninputs > GJ_AGG_MAX_INPUTS ||
		spec->nkeys < 0 || spec->nkeys > GJ_AGG_MAX_KEYS ||
		spec->naggs < 1 || spec->naggs > GJ_AGG_MAX_AGGS)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"An aggregation has %d inputs, %d keys and %d aggregates.",
							(int) spec->ninputs, (int) spec->nkeys, (int) spec->naggs);
	for (int i = 0; i < spec->ninputs; i++)
	{
		const GjAggInput *in = &spec->inputs[i];
		int			ncolumns;

		if (in->side != GJ_SIDE_OUTER && in->side != GJ_SIDE_INNER)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"Aggregation input %d reads side %d.", i, (int) in->side);
		ncolumns = gj_side_ncolumns(join, (GjSide) in->side);
		if (in->column < 0 || in->column >= ncolumns || in->kind > GJ_KEY_FLOAT8 ||
			in->type > GJ_EXPR_FLOAT8)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"Aggregation input %d reads column %d of %d.",
								i, (int) in->column, ncolumns);
	}
	for (int k = 0; k < spec->nkeys + spec->naggs * 2; k++)
	{
		const GjAggExpr *expr;
		GjStatus	status;

		if (k < spec->nkeys)
			expr = &spec->keys[k];
		else if (((k - spec->nkeys) & 1) == 0)
		{
			if (!spec->aggs[(k - spec->nkeys) / 2].has_arg)
				continue;
			expr = &spec->aggs[(k - spec->nkeys) / 2].arg;
		}
		else
		{
			if (!spec->aggs[(k - spec->nkeys) / 2].has_filter)
				continue;
			expr = &spec->aggs[(k - spec->nkeys) / 2].filter;
		}
		status = gj_expr_check(&expr->program, k >= spec->nkeys && ((k - spec->nkeys) & 1), err);
		if (status != GJ_OK)
			return status;
		for (int i = 0; i < expr->program.ninputs; i++)
			if (expr->inputs[i] < 0 || expr->inputs[i] >= spec->ninputs ||
				spec->inputs[expr->inputs[i]].type != expr->program.input_types[i])
				return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
									"An aggregation program reads input %d, which is not one of its %d, or of another type.",
									(int) expr->inputs[i], (int) spec->ninputs);
	}
	if (spec->variant >= GJ_AGG_NUM_VARIANTS)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"An aggregation asks for group-by variant %d.", (int) spec->variant);
	if (spec->nsort < 0 || spec->nsort > spec->nkeys)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"An aggregation with %d keys is sorted by %d.",
							(int) spec->nkeys, (int) spec->nsort);
	for (int i = 0; i < spec->nsort; i++)
		if (spec->sort_keys[i] < 0 || spec->sort_keys[i] >= spec->nkeys)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"An aggregation is sorted by key %d of %d.",
								(int) spec->sort_keys[i], (int) spec->nkeys);
	for (int a = 0; a < spec->naggs; a++)
	{
		const GjAgg *agg = &spec->aggs[a];

		if (agg->kind > GJ_AGG_MAX || agg->type > GJ_EXPR_FLOAT8 ||
			(!agg->has_arg && agg->kind != GJ_AGG_COUNT))
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"Aggregate %d is of kind %d over type %d.",
								a, (int) agg->kind, (int) agg->type);
	}
	return GJ_OK;
}

bool
gj_agg_groups_reserve(GjAggGroups *groups, const GjAggSpec *spec, int64_t capacity)
{
	if (capacity <= groups->capacity)
		return true;
	for (int k = 0; k < spec->nkeys; k++)
	{
		int64_t    *keys = realloc(groups->keys[k], capacity * sizeof(int64_t));
		uint8_t    *nulls;

		if (keys == NULL)
			return false;
		groups->keys[k] = keys;
		if ((nulls = realloc(groups->key_nulls[k], capacity)) == NULL)
			return false;
		groups->key_nulls[k] = nulls;
	}
	for (int w = 0; w < 3 * spec->naggs; w++)
	{
		int64_t    *words = realloc(groups->words[w], capacity * sizeof(int64_t));

		if (words == NULL)
			return false;
		groups->words[w] = words;
	}
	groups->capacity = capacity;
	return true;
}

bool
gj_agg_groups_append(GjAggGroups *to, const GjAggSpec *spec, const GjAggGroups *from,
					 const uint8_t *live)
{
	int64_t		need = to->n + from->n;

	if (need > to->capacity)
	{
		int64_t		capacity = to->capacity > 0 ? to->capacity : 1024;

		while (capacity < need)
			capacity *= 2;
		if (!gj_agg_groups_reserve(to, spec, capacity))
			return false;
	}
	for (int64_t g = 0; g < from->n; g++)
	{
		if (live != NULL && !live[g])
			continue;
		for (int k = 0; k < spec->nkeys; k++)
		{
			to->keys[k][to->n] = from->keys[k][g];
			to->key_nulls[k][to->n] = from->key_nulls[k][g];
		}
		for (int w = 0; w < 3 * spec->naggs; w++)
			to->words[w][to->n] = from->words[w][g];
		to->n++;
	}
	return true;
}

void
gj_agg_groups_free(GjAggGroups *groups)
{
	for (int k = 0; k < GJ_AGG_MAX_KEYS; k++)
	{
		free(groups->keys[k]);
		free(groups->key_nulls[k]);
	}
	for (int w = 0; w < 3 * GJ_AGG_MAX_AGGS; w++)
		free(groups->words[w]);
	memset(groups, 0, sizeof(*groups));
}

void
gj_agg_groups_result(const GjAggGroups *groups, const GjAggSpec *spec, int64_t spills,
					 GjAggResult *out)
{
	memset(out, 0, sizeof(*out));
	out->ngroups = groups->n;
	out->spills = spills;
	for (int k = 0; k < spec->nkeys; k++)
	{
		out->keys[k] = groups->keys[k];
		out->key_nulls[k] = groups->key_nulls[k];
	}
	for (int a = 0; a < spec->naggs; a++)
	{
		out->n[a] = groups->words[3 * a];
		out->a[a] = groups->words[3 * a + 1];
		out->b[a] = groups->words[3 * a + 2];
	}
}

/*
 * One stable pass of a radix sort of perm by words[perm[i]], byte by byte
 * from the lowest, skipping the bytes all words share; tmp has room for n
 */
static void
SortByWords(const uint64_t *words, int64_t *perm, int64_t *tmp, int64_t n, int bits)
{
	for (int shift = 0; shift < bits; shift += 8)
	{
		int64_t		count[257];
		bool		one_bucket = false;

		memset(count, 0, sizeof(count));
		for (int64_t i = 0; i < n; i++)
			count[((words[perm[i]] >> shift) & 0xFF) + 1]++;
		for (int d = 0; d < 256; d++)
		{
			if (count[d + 1] == n)
				one_bucket = true;
			count[d + 1] += count[d];
		}
		if (one_bucket)
			continue;
		for (int64_t i = 0; i < n; i++)
			tmp[count[(words[perm[i]] >> shift) & 0xFF]++] = perm[i];
		memcpy(perm, tmp, n * sizeof(int64_t));
	}
}

bool
gj_agg_sort_order(const GjAggSpec *spec, int64_t n, int64_t *const *keys,
				  uint8_t *const *key_nulls, int64_t *perm)
{
	uint64_t   *words;
	int64_t    *tmp;

	for (int64_t i = 0; i < n; i++)
		perm[i] = i;
	if (spec->nsort == 0 || n < 2)
		return true;
	words = malloc(n * sizeof(uint64_t));
	tmp = malloc(n * sizeof(int64_t));
	if (words == NULL || tmp == NULL)
	{
		free(words);
		free(tmp);
		return false;
	}
	/* least significant first: the last key's values, then its NULLs ... */
	for (int i = spec->nsort - 1; i >= 0; i--)
	{
		int			k = spec->sort_keys[i];

		for (int64_t g = 0; g < n; g++)
			words[g] = gj_agg_sort_word(spec, i, keys[k][g]);
		SortByWords(words, perm, tmp, n, 64);
		for (int64_t g = 0; g < n; g++)
			words[g] = gj_agg_sort_null_bit(spec, i, key_nulls[k][g] != 0);
		SortByWords(words, perm, tmp, n, 8);
	}
	free(words);
	free(tmp);
	return true;
}

bool
gj_agg_permute(void *array, int width, const int64_t *perm, int64_t n)
{
	char	   *copy = malloc(n > 0 ? n * width : 1);

	if (copy == NULL)
		return false;
	memcpy(copy, array, n * width);
	if (width == 8)
		for (int64_t i = 0; i < n; i++)
			((int64_t *) array)[i] = ((const int64_t *) copy)[perm[i]];
	else
		for (int64_t i = 0; i < n; i++)
			((uint8_t *) array)[i] = ((const uint8_t *) copy)[perm[i]];
	free(copy);
	return true;
}

bool
gj_agg_groups_sort(GjAggGroups *groups, const GjAggSpec *spec)
{
	int64_t    *perm;
	bool		ok;

	if (spec->nsort == 0 || groups->n < 2)
		return true;
	if ((perm = malloc(groups->n * sizeof(int64_t))) == NULL)
		return false;
	ok = gj_agg_sort_order(spec, groups->n, groups->keys, groups->key_nulls, perm);
	for (int k = 0; ok && k < spec->nkeys; k++)
		ok = gj_agg_permute(groups->keys[k], 8, perm, groups->n) &&
			gj_agg_permute(groups->key_nulls[k], 1, perm, groups->n);
	for (int w = 0; ok && w < 3 * spec->naggs; w++)
		ok = gj_agg_permute(groups->words[w], 8, perm, groups->n);
	free(perm);
	return ok;
}

/* Put group g, of hash h, into the slots */
static void
PlaceGroup(CpuAggState *agg, uint64_t h, int64_t g)
{
	int64_t		mask = agg->nslots - 1;
	int64_t		s = (int64_t) (h & (uint64_t) mask);

	while (agg->groups_of[s] >= 0)
		s = (s + 1) & mask;
	agg->hashes[s] = h;
	agg->groups_of[s] = g;
}

/* Double the slots and the groups' arrays; false when out of host memory */
static bool
Grow(CpuAggState *agg)
{
	int64_t		nslots = agg->nslots * 2;
	uint64_t   *hashes = malloc(nslots * sizeof(uint64_t));
	int64_t    *groups_of = malloc(nslots * sizeof(int64_t));
	int64_t		old = agg->nslots;
	uint64_t   *old_hashes = agg->hashes;
	int64_t    *old_groups = agg->groups_of;

	if (hashes == NULL || groups_of == NULL || !gj_agg_groups_reserve(&agg->groups, &agg->spec, nslots / 2))
	{
		free(hashes);
		free(groups_of);
		return false;
	}
	for (int64_t s = 0; s < nslots; s++)
		groups_of[s] = -1;
	agg->nslots = nslots;
	agg->hashes = hashes;
	agg->groups_of = groups_of;
	for (int64_t s = 0; s < old; s++)
		if (old_groups[s] >= 0)
			PlaceGroup(agg, old_hashes[s], old_groups[s]);
	free(old_hashes);
	free(old_groups);
	return true;
}

/* The table's groups into the spilled ones, the table empty again */
static bool
Spill(CpuAggState *agg)
{
	if (!gj_agg_groups_append(&agg->spilled, &agg->spec, &agg->groups, NULL))
		return false;
	agg->groups.n = 0;
	for (int64_t s = 0; s < agg->nslots; s++)
		agg->groups_of[s] = -1;
	agg->spills++;
	return true;
}

/* The group of a match, created if new; -1 when out of host memory */
static int64_t
FindGroup(CpuAggState *agg, const GjAggMatch *m)
{
	GjAggGroups *groups = &agg->groups;
	uint64_t	h;
	int64_t		mask;
	int64_t		s;
	int64_t		g;

	if (agg->spec.nkeys == 0)
		return 0;
	h = gj_agg_hash(m, agg->spec.nkeys);
	mask = agg->nslots - 1;
	for (s = (int64_t) (h & (uint64_t) mask); agg->groups_of[s] >= 0; s = (s + 1) & mask)
	{
		bool		same = (agg->hashes[s] == h);

		g = agg->groups_of[s];
		for (int k = 0; same && k < agg->spec.nkeys; k++)
			same = (groups->key_nulls[k][g] != 0) == ((m->key_nulls >> k) & 1) &&
				((m->key_nulls >> k) & 1 || groups->keys[k][g] == m->keys[k]);
		if (same)
			return g;
	}
	if (2 * (groups->n + 1) > agg->nslots)
	{
		/* double the table, or, past the memory allowed, empty it */
		if (agg->max_groups > 0 && agg->nslots > agg->max_groups)
		{
			if (!Spill(agg))
				return -1;
		}
		else if (!Grow(agg))
			return -1;
		return FindGroup(agg, m);
	}
	g = groups->n++;
	agg->hashes[s] = h;
	agg->groups_of[s] = g;
	for (int k = 0; k < agg->spec.nkeys; k++)
	{
		groups->keys[k][g] = m->keys[k];
		groups->key_nulls[k][g] = (m->key_nulls >> k) & 1;
	}
	for (int a = 0; a < agg->spec.naggs; a++)
		gj_agg_init_words(&agg->spec.aggs[a], &groups->words[3 * a][g],
						  &groups->words[3 * a + 1][g], &groups->words[3 * a + 2][g]);
	return g;
}

/* A match's inputs from a retrieved round, as both implementations read them */
static void
RoundInputs(const GjAggSpec *spec, const GjJoinSpec *join, const GjMatchRound *round,
			int64_t r, GjExprDatum *inputs)
{
	for (int i = 0; i < spec->ninputs; i++)
	{
		const GjAggInput *in = &spec->inputs[i];
		GjSide		side = (GjSide) in->side;

		inputs[i] = gj_agg_input(in,
								 side == GJ_SIDE_OUTER ? round->outer_values[in->column] :
								 round->inner_values[in->column],
								 side == GJ_SIDE_OUTER ? round->outer_nulls[in->column] :
								 round->inner_nulls[in->column],
								 gj_side_widths(join, side)[in->column], r);
	}
}

static GjStatus
OutOfMemory(GjError *err)
{
	return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
						"Could not allocate host memory for the groups of an aggregation.");
}

GjStatus
gj_cpu_agg_begin(GjContext *ctx, const GjAggSpec *spec, GjError *err)
{
	GjCpuContext *cpu = gj_cpu_context_get(ctx, err);
	CpuAggState *agg;
	GjStatus	status;

	if (cpu == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	status = gj_agg_check(spec, &cpu->spec, err);
	if (status != GJ_OK)
		return status;
	gj_cpu_agg_destroy(cpu->agg_state);
	cpu->agg_state = agg = calloc(1, sizeof(CpuAggState));
	if (agg == NULL)
		return OutOfMemory(err);
	agg->spec = *spec;
	agg->nslots = 16;
	if (cpu->spec.memory_limit > 0)
	{
		/* a group's bytes: two slots, its keys, its words */
		int64_t		bytes = 2 * 16 + 9 * spec->nkeys + 24 * spec->naggs;

		agg->max_groups = cpu->spec.memory_limit / bytes;
		if (agg->max_groups < 8)
			agg->max_groups = 8;
	}
	/* the planner's estimate, up to 2^17 slots: the table doubles when full */
	while (agg->nslots < 2 * spec->groups_hint && agg->nslots < (INT64_C(1) << 17) &&
		   (agg->max_groups == 0 || agg->nslots < agg->max_groups))
		agg->nslots *= 2;
	agg->hashes = malloc(agg->nslots * sizeof(uint64_t));
	agg->groups_of = malloc(agg->nslots * sizeof(int64_t));
	if (agg->hashes == NULL || agg->groups_of == NULL || !gj_agg_groups_reserve(&agg->groups, &agg->spec, agg->nslots / 2))
		return OutOfMemory(err);
	for (int64_t s = 0; s < agg->nslots; s++)
		agg->groups_of[s] = -1;
	if (spec->nkeys == 0)
	{
		/* the one group, there even when no row comes */
		agg->groups.n = 1;
		for (int a = 0; a < spec->naggs; a++)
			gj_agg_init_words(&spec->aggs[a], &agg->groups.words[3 * a][0],
							  &agg->groups.words[3 * a + 1][0],
							  &agg->groups.words[3 * a + 2][0]);
	}
	return GJ_OK;
}

GjStatus
gj_cpu_aggregate(GjContext *ctx, int64_t first, int64_t *nmatches, int64_t *undecided,
				 GjError *err)
{
	GjCpuContext *cpu = gj_cpu_context_get(ctx, err);
	CpuAggState *agg;
	GjMatchRound round;
	GjStatus	status;

	if (cpu == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	agg = cpu->agg_state;
	if (agg == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"aggregate was called before agg_begin.");
	status = gj_cpu_retrieve(ctx, first, &round, err);
	if (status != GJ_OK)
		return status;
	*nmatches = round.nmatches;
	*undecided = 0;
	for (int64_t r = 0; r < round.nmatches; r++)
	{
		GjExprDatum inputs[GJ_AGG_MAX_INPUTS];
		GjAggMatch	m;
		int64_t		g;

		RoundInputs(&agg->spec, &cpu->spec, &round, r, inputs);
		if (!gj_agg_eval_match(&agg->spec, inputs, &m))
		{
			(*undecided)++;
			continue;
		}
		g = FindGroup(agg, &m);
		if (g < 0)
			return OutOfMemory(err);
		for (int a = 0; a < agg->spec.naggs; a++)
			gj_agg_fold(&agg->spec.aggs[a], &m.values[a], &agg->groups.words[3 * a][g],
						&agg->groups.words[3 * a + 1][g], &agg->groups.words[3 * a + 2][g]);
	}
	return GJ_OK;
}

bool
gj_agg_match_folded(const GjAggSpec *spec, const GjJoinSpec *join, const GjMatchRound *round,
					int64_t r)
{
	GjExprDatum inputs[GJ_AGG_MAX_INPUTS];
	GjAggMatch	m;

	RoundInputs(spec, join, round, r, inputs);
	return gj_agg_eval_match(spec, inputs, &m);
}

void
gj_agg_value_words_of(const GjAgg *agg, const GjExprDatum *value, int64_t *n, int64_t *a,
					  int64_t *b)
{
	GjExprDatum v;

	gj_agg_init_words(agg, n, a, b);
	if (value == NULL)
	{
		v.v.i = 0;
		v.isnull = false;
	}
	else
		v = *value;
	/* MIN/MAX of floats compare as integers, as gj_agg_eval_match makes them */
	if (!v.isnull && (agg->kind == GJ_AGG_MIN || agg->kind == GJ_AGG_MAX) &&
		gj_expr_is_float(agg->type))
		v.v.i = gj_agg_float_order(v.v.f);
	gj_agg_fold(agg, &v, n, a, b);
}

GjStatus
gj_cpu_agg_result(GjContext *ctx, GjAggResult *out, GjError *err)
{
	GjCpuContext *cpu = gj_cpu_context_get(ctx, err);
	CpuAggState *agg;

	if (cpu == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	agg = cpu->agg_state;
	if (agg == NULL || out == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"agg_result was called before agg_begin.");
	if (agg->spills == 0 && agg->spec.nsort == 0)
	{
		gj_agg_groups_result(&agg->groups, &agg->spec, 0, out);
		return GJ_OK;
	}
	/* the spilled groups, then the table's (a copy: the table goes on), sorted */
	agg->result.n = 0;
	if (!gj_agg_groups_append(&agg->result, &agg->spec, &agg->spilled, NULL) ||
		!gj_agg_groups_append(&agg->result, &agg->spec, &agg->groups, NULL) ||
		!gj_agg_groups_sort(&agg->result, &agg->spec))
		return OutOfMemory(err);
	gj_agg_groups_result(&agg->result, &agg->spec, agg->spills, out);
	return GJ_OK;
}
