/*-------------------------------------------------------------------------
 *
 * test_chain.c
 *	  Kernel tests of chains of joins (cuda/device/chain.c): the CPU twin
 *	  against every combination of rows worked out here by nested loops,
 *	  and the CUDA kernels, with the rounds left on the device, against the
 *	  CPU twin and against the same chain with the rounds through the host
 *
 * A chunk of outer rows carries a key for each level (some NULL, some with
 * no inner row) and a 4-byte value; each level's inner side has keys
 * (unique, as a dimension's primary key, or repeated, so that a row
 * matches several), a 2-byte value with NULLs, and an 8-byte column that
 * a snowflake level below probes with.  The reference lists every
 * combination (chunk row, row of level 0, ..., row of the last level)
 * whose keys are equal at every level; the chain's matches, taken from
 * the last level's rounds with the row-number columns the levels carried
 * down, must be exactly those (sorted, since a level's variant orders its
 * round), and each carried value must be its row's.  Cases: a star of
 * three NPHJ levels; a star of four with repeated keys, every variant and
 * both materializations, rounds much smaller than the matches, and chunk
 * row numbers of its own; a snowflake (a level probing with the level
 * above's column); an empty level; a chain of one level; two cases again
 * with the keys of the levels above the lowest packed by the kernels
 * (GjKeyPack: the chunk carries those keys as 4-byte integers, a
 * snowflake's column is an 8-byte one, each level's inner keys packed
 * alike); and the arguments gj_chain_init must refuse.  Each case also folds the last
 * level's matches into groups (agg_begin, aggregate, agg_result on the last
 * level's context, as a GpuPreAgg on top of a chain does): count(*),
 * sum(chunk value) and min(level 0's value) by the last level's value,
 * against the reference's combinations, and on CUDA against the twin.
 *
 * IDENTIFICATION
 *	  test/kernels/test_chain.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "gpujoin_kernels.h"
#include "test_kernels.h"

#define MAX_LEVELS		5

/* One level's inner side: key, a 2-byte value (NULLs), an 8-byte key for below */
typedef struct ChainInner
{
	int64_t		nrows;
	uint64_t   *keys;
	uint8_t    *key_nulls;
	int16_t    *value;
	uint8_t    *value_nulls;
	uint64_t   *down;
	uint64_t   *packed;			/* keys packed as a packed case's level
								 * packs its probes (PackOf), or NULL */
	GjColumn	columns[2];
} ChainInner;

/* A case: the chunk, the levels and how each is joined */
typedef struct ChainCase
{
	char		name[96];
	int			nlevels;
	int64_t		nrows;			/* the chunk's */
	int64_t		inner_rows[MAX_LEVELS];
	bool		repeated[MAX_LEVELS];	/* keys repeat in the inner side */
	int			from_above[MAX_LEVELS];	/* level k probes with level k-1's
										 * down column (snowflake), else the
										 * chunk's key column */
	GjVariant	variants[MAX_LEVELS];
	GjMaterialize materialize[MAX_LEVELS];
	uint8_t		match[MAX_LEVELS];	/* GjOuterMatch: a semi, anti or left
									 * level (NPHJ; semi and anti without
									 * inner columns; never the last: the
									 * test's groups read it) */
	int64_t		max_matches;
	bool		numbered;		/* the chunk brings row numbers */
	bool		packed;			/* the keys of levels 1.. packed by the
								 * kernels (GjKeyPack) from 4-byte chunk
								 * columns and 8-byte down columns */
} ChainCase;

/* What a semi level's row number becomes in a combination: any match */
#define SEMI_ROW		((uint32_t) 0xFFFFFFFE)

/* A level's inner columns: its value and down key, none at a semi or anti level */
static int32_t
InnerColumns(const ChainCase *cc, int k)
{
	return cc->match[k] == GJ_OUTER_FIRST || cc->match[k] == GJ_OUTER_NONE ? 0 : 2;
}

typedef struct ChainData
{
	/* chunk: keys of level 0, then payload: a key per level 1.., a value */
	int64_t		nrows;
	uint64_t   *keys[MAX_LEVELS];
	uint8_t    *key_nulls[MAX_LEVELS];
	int32_t    *value;
	int32_t    *key32[MAX_LEVELS];	/* a packed case's chunk keys of levels 1.. */
	GjRowId    *numbers;
	GjColumn	columns[MAX_LEVELS + 1];
	ChainInner	inner[MAX_LEVELS];
} ChainData;

/* A combination: chunk row, then each level's inner row */
typedef struct Combo
{
	uint32_t	rows[MAX_LEVELS + 1];
} Combo;

typedef struct ComboList
{
	int64_t		n;
	int64_t		cap;
	Combo	   *items;
	int			width;			/* levels + 1 */
	bool		values_ok;		/* every carried value was its row's */
	char		why[160];
} ComboList;

static void
ComboAdd(ComboList *list, const Combo *c)
{
	if (list->n == list->cap)
	{
		Combo	   *grown;

		list->cap = list->cap > 0 ? 2 * list->cap : 1024;
		grown = TestAlloc((size_t) list->cap * sizeof(Combo));
		if (list->n > 0)
			memcpy(grown, list->items, (size_t) list->n * sizeof(Combo));
		free(list->items);
		list->items = grown;
	}
	list->items[list->n++] = *c;
}

static int	combo_width;

static int
CompareCombo(const void *a, const void *b)
{
	const Combo *x = a;
	const Combo *y = b;

	for (int i = 0; i < combo_width; i++)
	{
		if (x->rows[i] != y->rows[i])
			return x->rows[i] < y->rows[i] ? -1 : 1;
	}
	return 0;
}

static void
SortCombos(ComboList *list)
{
	combo_width = list->width;
	if (list->n > 1)
		qsort(list->items, (size_t) list->n, sizeof(Combo), CompareCombo);
}

/* The key level "level" probes with for chunk row r and the rows above */
static bool
ProbeKey(const ChainCase *cc, const ChainData *d, int level, int64_t r,
		 const Combo *above, uint64_t *key)
{
	if (level > 0 && cc->from_above[level])
	{
		if (above->rows[level] == GJ_NO_ROW)
			return false;		/* a left level's row with no match: NULL */
		*key = d->inner[level - 1].down[above->rows[level]];
		return true;			/* down is never NULL */
	}
	if (d->key_nulls[level] != NULL && d->key_nulls[level][r])
		return false;
	*key = d->keys[level][r];
	return true;
}

/* The combination goes on from level "level", whose row is row */
static void
ReferenceNext(const ChainCase *cc, const ChainData *d, int level, uint32_t row, Combo *c,
			  ComboList *out);

/*
 * Every combination, level by level, by nested loops: an inner level's
 * every match; a semi level's row once where it has any (SEMI_ROW); an
 * anti level's once where it has none, a NULL key included (GJ_NO_ROW); a
 * left level's every match, or GJ_NO_ROW where it has none
 */
static void
Reference(const ChainCase *cc, const ChainData *d, int level, Combo *c,
		  ComboList *out)
{
	const ChainInner *in = &d->inner[level];
	uint64_t	key;
	bool		any = false;

	if (!ProbeKey(cc, d, level, c->rows[0], c, &key))
	{
		if (cc->match[level] == GJ_OUTER_NONE || cc->match[level] == GJ_OUTER_LEFT)
			ReferenceNext(cc, d, level, GJ_NO_ROW, c, out);
		return;
	}
	if (cc->match[level] == GJ_OUTER_FIRST || cc->match[level] == GJ_OUTER_NONE)
	{
		for (int64_t i = 0; i < in->nrows && !any; i++)
			any = !in->key_nulls[i] && in->keys[i] == key;
		if (any == (cc->match[level] == GJ_OUTER_FIRST))
			ReferenceNext(cc, d, level, any ? SEMI_ROW : GJ_NO_ROW, c, out);
		return;
	}
	for (int64_t i = 0; i < in->nrows; i++)
	{
		if (in->key_nulls[i] || in->keys[i] != key)
			continue;
		any = true;
		ReferenceNext(cc, d, level, (uint32_t) i, c, out);
	}
	if (!any && cc->match[level] == GJ_OUTER_LEFT)
		ReferenceNext(cc, d, level, GJ_NO_ROW, c, out);
}

static void
ReferenceNext(const ChainCase *cc, const ChainData *d, int level, uint32_t row, Combo *c,
			  ComboList *out)
{
	c->rows[level + 1] = row;
	if (level + 1 == cc->nlevels)
		ComboAdd(out, c);
	else
		Reference(cc, d, level + 1, c, out);
}

/*
 * How a packed case's level k (>= 1) packs its key: a snowflake's from
 * the 8-byte down column above, a star's from the chunk's 4-byte column;
 * width 0 for the lowest level and cases not packed
 */
static GjKeyPack
PackOf(const ChainCase *cc, int k)
{
	GjKeyPack	pack = {0, 0, false};

	if (cc->packed && k > 0)
	{
		pack.width = cc->from_above[k] ? 8 : 4;
		pack.bits = cc->from_above[k] ? 64 : 32;
		pack.exact = true;
	}
	return pack;
}

static void
MakeData(const ChainCase *cc, ChainData *d)
{
	uint64_t	state = 0x5eed0000 + (uint64_t) cc->nrows * 31 + (uint64_t) cc->nlevels;

	memset(d, 0, sizeof(*d));
	d->nrows = cc->nrows;
	for (int k = 0; k < cc->nlevels; k++)
	{
		ChainInner *in = &d->inner[k];
		int64_t		m = cc->inner_rows[k];
		int64_t		domain = cc->repeated[k] ? (m / 3 + 1) : (m + 1);

		in->nrows = m;
		in->keys = TestAlloc((size_t) m * sizeof(uint64_t));
		in->key_nulls = TestAlloc((size_t) m);
		in->value = TestAlloc((size_t) m * sizeof(int16_t));
		in->value_nulls = TestAlloc((size_t) m);
		in->down = TestAlloc((size_t) m * sizeof(uint64_t));
		for (int64_t i = 0; i < m; i++)
		{
			/* unique keys: a permutation of 0 .. m-1 (i * odd mod m when
			 * coprime is enough here: m is not a multiple of 7919) */
			in->keys[i] = cc->repeated[k] ? TestRandom(&state) % (uint64_t) domain
				: (uint64_t) ((i * 7919) % m);
			in->key_nulls[i] = TestRandom(&state) % 50 == 0;
			in->value[i] = (int16_t) (TestRandom(&state) % 30000);
			in->value_nulls[i] = TestRandom(&state) % 10 == 0;
			in->down[i] = k + 1 < cc->nlevels ?
				TestRandom(&state) % (uint64_t) (cc->inner_rows[k + 1] + cc->inner_rows[k + 1] / 5 + 1) : 0;
		}
		in->columns[0].values = in->value;
		in->columns[0].nulls = in->value_nulls;
		in->columns[1].values = in->down;
		in->columns[1].nulls = NULL;
		if (PackOf(cc, k).width != 0)
		{
			GjKeyPack	pack = PackOf(cc, k);

			/* the inner keys as the level packs its probes' values */
			in->packed = TestAlloc((size_t) (m > 0 ? m : 1) * sizeof(uint64_t));
			for (int64_t i = 0; i < m; i++)
			{
				int64_t		v = (int64_t) in->keys[i];

				in->packed[i] = gj_pack_keys(&v, &pack.bits, 1, pack.exact);
			}
		}

		d->keys[k] = TestAlloc((size_t) cc->nrows * sizeof(uint64_t));
		d->key_nulls[k] = TestAlloc((size_t) cc->nrows);
		for (int64_t r = 0; r < cc->nrows; r++)
		{
			/* some keys miss: a fifth past the inner side's domain */
			d->keys[k][r] = TestRandom(&state) % (uint64_t) (domain + domain / 5 + 1);
			d->key_nulls[k][r] = TestRandom(&state) % 20 == 0;
		}
	}
	d->value = TestAlloc((size_t) cc->nrows * sizeof(int32_t));
	for (int64_t r = 0; r < cc->nrows; r++)
		d->value[r] = (int32_t) (TestRandom(&state) % 1000000);
	if (cc->numbered)
	{
		d->numbers = TestAlloc((size_t) cc->nrows * sizeof(GjRowId));
		for (int64_t r = 0; r < cc->nrows; r++)
			d->numbers[r] = (GjRowId) (cc->nrows - 1 - r);
	}
	/* payload of the chunk: the keys of levels 1.., then the value */
	for (int k = 1; k < cc->nlevels; k++)
	{
		d->columns[k - 1].values = d->keys[k];
		d->columns[k - 1].nulls = d->key_nulls[k];
		if (cc->packed)
		{
			/* the values themselves, for the level to pack */
			d->key32[k] = TestAlloc((size_t) (cc->nrows > 0 ? cc->nrows : 1) * sizeof(int32_t));
			for (int64_t r = 0; r < cc->nrows; r++)
				d->key32[k][r] = (int32_t) d->keys[k][r];
			d->columns[k - 1].values = d->key32[k];
		}
	}
	d->columns[cc->nlevels - 1].values = d->value;
	d->columns[cc->nlevels - 1].nulls = NULL;
}

static void
FreeData(const ChainCase *cc, ChainData *d)
{
	for (int k = 0; k < cc->nlevels; k++)
	{
		free(d->inner[k].keys);
		free(d->inner[k].key_nulls);
		free(d->inner[k].value);
		free(d->inner[k].value_nulls);
		free(d->inner[k].down);
		free(d->inner[k].packed);
		free(d->keys[k]);
		free(d->key_nulls[k]);
		free(d->key32[k]);
	}
	free(d->value);
	free(d->numbers);
}

/*
 * The specs of the levels: level 0's outer columns are the chunk's
 * payload (nlevels - 1 keys of 8 bytes, of 4 in a packed case, a value
 * of 4); each level's inner
 * columns its value (2) and its down key (8); a level's outer columns
 * what the one above hands down.  key_columns[k]: the chunk's key column
 * of level k (a star), or the down column of level k - 1 (a snowflake).
 */
static void
MakeSpecs(const ChainCase *cc, GjJoinSpec *specs, int32_t *key_columns)
{
	int32_t		inner_ncolumns[MAX_LEVELS];

	for (int k = 0; k < cc->nlevels; k++)
	{
		GjJoinSpec *s = &specs[k];

		memset(s, 0, sizeof(*s));
		s->variant = cc->variants[k];
		s->materialize = cc->materialize[k];
		s->row_ids = true;
		s->max_matches = cc->max_matches;
		s->outer_match = cc->match[k];
		s->inner_ncolumns = InnerColumns(cc, k);
		s->inner_widths[0] = 2;
		s->inner_widths[1] = 8;
		inner_ncolumns[k] = s->inner_ncolumns;
		if (k == 0)
		{
			s->outer_ncolumns = cc->nlevels;
			for (int c = 0; c < cc->nlevels - 1; c++)
				s->outer_widths[c] = cc->packed ? 4 : 8;
			s->outer_widths[cc->nlevels - 1] = 4;
			key_columns[0] = 0;
			continue;
		}
		s->outer_ncolumns = gj_chain_columns(cc->nlevels, inner_ncolumns, k);
		memcpy(s->outer_widths, specs[k - 1].outer_widths,
			   (size_t) specs[k - 1].outer_ncolumns * sizeof(int32_t));
		memcpy(s->outer_widths + specs[k - 1].outer_ncolumns, specs[k - 1].inner_widths,
			   (size_t) specs[k - 1].inner_ncolumns * sizeof(int32_t));
		s->outer_widths[s->outer_ncolumns - 1] = 4;
		key_columns[k] = cc->from_above[k] ?
			specs[k - 1].outer_ncolumns + 1 :
			k - 1;				/* the chunk's key of level k */
	}
}

/*
 * Check one match of the last level's round against its rows' values,
 * and add its combination
 */
static void
TakeMatch(const ChainCase *cc, const ChainData *d, const GjJoinSpec *last,
		  const GjMatchRound *round, int64_t i, ComboList *out)
{
	int32_t		inner_ncolumns[MAX_LEVELS];
	Combo		c;
	int			L = cc->nlevels;
	uint32_t	number = round->outer_rows[i];
	int64_t		r = cc->numbered ? (int64_t) (cc->nrows - 1 - number) : (int64_t) number;

	memset(&c, 0, sizeof(c));
	c.rows[0] = (uint32_t) r;
	for (int k = 0; k < L; k++)
		inner_ncolumns[k] = InnerColumns(cc, k);
	for (int k = 0; k + 1 < L; k++)
	{
		int			base = gj_chain_columns(L, inner_ncolumns, k);
		const int16_t *value = round->outer_values[base];
		const uint8_t *vnull = round->outer_nulls[base];
		const GjRowId *rows = round->outer_values[base + inner_ncolumns[k]];
		uint32_t	row = rows[i];
		const ChainInner *in = &d->inner[k];

		c.rows[k + 1] = row;
		if (cc->match[k] == GJ_OUTER_LEFT && row == GJ_NO_ROW)
		{
			/* a left level's row with no match: its columns NULL */
			const uint8_t *dnull = round->outer_nulls[base + 1];
			bool		good = vnull != NULL && vnull[i] == 1 && dnull != NULL && dnull[i] == 1;

			if (!good && out->values_ok)
				snprintf(out->why, sizeof(out->why),
						 "match %lld: left level %d's columns are not NULL where it had no match",
						 (long long) i, k);
			out->values_ok &= good;
			continue;
		}
		if (cc->match[k] == GJ_OUTER_FIRST || cc->match[k] == GJ_OUTER_NONE)
		{
			/* a semi level's row: a match (the star's key); an anti's: none */
			bool		good = cc->match[k] == GJ_OUTER_NONE ? row == GJ_NO_ROW :
				(row < in->nrows && !in->key_nulls[row] && !d->key_nulls[k][r] &&
				 in->keys[row] == d->keys[k][r]);

			if (!good && out->values_ok)
				snprintf(out->why, sizeof(out->why),
						 "match %lld carries row %u of semi or anti level %d", (long long) i, row, k);
			out->values_ok &= good;
			c.rows[k + 1] = cc->match[k] == GJ_OUTER_FIRST ? SEMI_ROW : row;
			continue;
		}
		if (row >= in->nrows ||
			(vnull != NULL ? vnull[i] : 0) != in->value_nulls[row] ||
			(!in->value_nulls[row] && value[i] != in->value[row]) ||
			(round->outer_nulls[base + 1] != NULL && round->outer_nulls[base + 1][i] != 0) ||
			((const uint64_t *) round->outer_values[base + 1])[i] != in->down[row])
		{
			if (out->values_ok)
				snprintf(out->why, sizeof(out->why),
						 "match %lld carries the wrong values of level %d's row %u",
						 (long long) i, k, row);
			out->values_ok = false;
		}
	}
	c.rows[L] = round->inner_rows[i];
	if (c.rows[L] >= d->inner[L - 1].nrows || r < 0 || r >= cc->nrows ||
		((const int32_t *) round->outer_values[L - 1])[i] != d->value[r] ||
		(round->inner_nulls[0] != NULL ? round->inner_nulls[0][i] : 0) !=
		d->inner[L - 1].value_nulls[c.rows[L]])
	{
		if (out->values_ok)
			snprintf(out->why, sizeof(out->why),
					 "match %lld carries the wrong chunk value or last level's flags", (long long) i);
		out->values_ok = false;
	}
	(void) last;
	ComboAdd(out, &c);
}

/*
 * Create and build every level on kernels k with the specs MakeSpecs makes
 * (into specs[], for the caller), chain them (agg: an aggregation begun on
 * the last level), and count the chunk; false when a call failed (the
 * reason in the test's failure; levels[] made so far are the caller's to
 * destroy)
 */
static bool
StartChain(const GjKernels *k, const ChainCase *cc, const ChainData *d, bool on_host,
		   const GjAggSpec *agg, GjJoinSpec *specs, GjContext **levels, GjChain *chain)
{
	int32_t		key_columns[MAX_LEVELS];
	GjKeyPack	packs[MAX_LEVELS];
	GjError		err;
	GjBatch		chunk;
	int			L = cc->nlevels;

	memset(&err, 0, sizeof(err));
	MakeSpecs(cc, specs, key_columns);
	for (int l = 0; l < L; l++)
	{
		GjBatch		inner;

		memset(&inner, 0, sizeof(inner));
		inner.keys = d->inner[l].packed != NULL ? d->inner[l].packed : d->inner[l].keys;
		inner.nulls = d->inner[l].key_nulls;
		inner.nrows = d->inner[l].nrows;
		inner.columns = d->inner[l].columns;
		if (k->context_create(&levels[l], &specs[l], &err) != GJ_OK ||
			k->build(levels[l], &inner, &err) != GJ_OK)
		{
			Failf("level %d: %s", l, err.message);
			return false;
		}
	}
	for (int l = 0; l < L; l++)
		packs[l] = PackOf(cc, l);
	if (gj_chain_init(chain, k, L, levels, specs, key_columns, packs, &err) != GJ_OK)
	{
		Failf("gj_chain_init: %s", err.message);
		return false;
	}
	chain->on_host = on_host;
	if (agg != NULL && k->agg_begin(levels[L - 1], agg, &err) != GJ_OK)
	{
		Failf("agg_begin: %s", err.message);
		return false;
	}

	memset(&chunk, 0, sizeof(chunk));
	chunk.keys = d->keys[0];
	chunk.nulls = d->key_nulls[0];
	chunk.nrows = d->nrows;
	chunk.columns = d->columns;
	chunk.row_numbers = d->numbers;
	if (gj_chain_count(chain, &chunk, &err) != GJ_OK)
	{
		Failf("gj_chain_count: %s", err.message);
		return false;
	}
	return true;
}

/* gj_chain_next: the last level's next counted chunk; false on a failure */
static bool
NextChunk(GjChain *chain, int64_t *nmatches)
{
	GjError		err;

	memset(&err, 0, sizeof(err));
	if (gj_chain_next(chain, nmatches, &err) != GJ_OK)
	{
		Failf("gj_chain_next: %s", err.message);
		return false;
	}
	return true;
}

/*
 * Run the chain on kernels k: create and build every level, count the
 * chunk, and take every match of every chunk of the last level; false when
 * a call failed (the reason in the test's failure)
 */
static bool
RunChain(const GjKernels *k, const ChainCase *cc, const ChainData *d, bool on_host,
		 ComboList *out, int64_t *rows_out)
{
	GjJoinSpec	specs[MAX_LEVELS];
	GjContext  *levels[MAX_LEVELS] = {0};
	GjChain		chain;
	GjError		err;
	bool		ok = false;
	int			L = cc->nlevels;

	memset(&err, 0, sizeof(err));
	memset(out, 0, sizeof(*out));
	out->width = L + 1;
	out->values_ok = true;
	if (!StartChain(k, cc, d, on_host, NULL, specs, levels, &chain))
		goto done;
	for (;;)
	{
		int64_t		nmatches;

		if (!NextChunk(&chain, &nmatches))
			goto done;
		if (nmatches == 0)
			break;
		for (int64_t first = 0; first < nmatches;)
		{
			GjMatchRound round;

			if (k->retrieve(levels[L - 1], first, &round, &err) != GJ_OK)
			{
				Failf("retrieve: %s", err.message);
				goto done;
			}
			if (round.nmatches <= 0)
			{
				Failf("retrieve gave no matches at %lld of %lld",
					  (long long) first, (long long) nmatches);
				goto done;
			}
			for (int64_t i = 0; i < round.nmatches; i++)
				TakeMatch(cc, d, &specs[L - 1], &round, i, out);
			first += round.nmatches;
		}
	}
	/* a second gj_chain_next after the end stays at the end */
	{
		int64_t		more = -1;

		if (gj_chain_next(&chain, &more, &err) != GJ_OK || more != 0)
		{
			Failf("gj_chain_next after the end gave %lld matches", (long long) more);
			goto done;
		}
	}
	if (rows_out != NULL)
		memcpy(rows_out, chain.rows_out, sizeof(chain.rows_out[0]) * (size_t) L);
	if (chain.rows_out[L - 1] != out->n)
	{
		Failf("the last level counted %lld matches, %lld were retrieved",
			  (long long) chain.rows_out[L - 1], (long long) out->n);
		goto done;
	}
	ok = true;
done:
	for (int l = 0; l < L; l++)
		k->context_destroy(levels[l]);
	return ok;
}

/*
 * Groups of the last level's value (index 30000: NULL): count(*), the sum
 * of the chunk's value, min of level 0's value (non-NULL count, min)
 */
#define AGG_KEYS		30001

typedef struct ChainGroups
{
	int64_t		count[AGG_KEYS];
	__int128	sum[AGG_KEYS];
	int64_t		nmin[AGG_KEYS];
	int64_t		min[AGG_KEYS];
	int64_t		ngroups;
} ChainGroups;

/* The reference's groups, from its combinations */
static void
ReferenceGroups(const ChainCase *cc, const ChainData *d, const ComboList *want, ChainGroups *g)
{
	int			L = cc->nlevels;

	memset(g, 0, sizeof(*g));
	for (int64_t i = 0; i < want->n; i++)
	{
		const Combo *c = &want->items[i];
		const ChainInner *last = &d->inner[L - 1];
		int			key = last->value_nulls[c->rows[L]] ? 30000 : last->value[c->rows[L]];
		const ChainInner *first = &d->inner[0];

		if (g->count[key]++ == 0)
			g->ngroups++;
		g->sum[key] += d->value[c->rows[0]];
		if (L >= 2 && !first->value_nulls[c->rows[1]] &&
			(g->nmin[key]++ == 0 || first->value[c->rows[1]] < g->min[key]))
			g->min[key] = first->value[c->rows[1]];
	}
}

/*
 * Run the chain on kernels k and fold the last level's matches into
 * groups; false when a call failed
 */
static bool
RunChainAgg(const GjKernels *k, const ChainCase *cc, const ChainData *d, ChainGroups *g)
{
	int32_t		inner_ncolumns[MAX_LEVELS];
	GjJoinSpec	specs[MAX_LEVELS];
	GjContext  *levels[MAX_LEVELS] = {0};
	GjChain		chain;
	GjError		err;
	GjAggSpec	spec;
	GjAggResult r;
	bool		ok = false;
	int			L = cc->nlevels;

	memset(&err, 0, sizeof(err));
	memset(g, 0, sizeof(*g));
	memset(&spec, 0, sizeof(spec));
	for (int k = 0; k < L; k++)
		inner_ncolumns[k] = InnerColumns(cc, k);
	spec.inputs[0] = (GjAggInput) {GJ_SIDE_INNER, 0, GJ_KEY_SIGNED, GJ_EXPR_INT2};
	spec.inputs[1] = (GjAggInput) {GJ_SIDE_OUTER, (int8_t) (L - 1), GJ_KEY_SIGNED, GJ_EXPR_INT4};
	spec.ninputs = 2;
	if (L >= 2)
	{
		spec.inputs[2] = (GjAggInput) {GJ_SIDE_OUTER, (int8_t) gj_chain_columns(L, inner_ncolumns, 0),
			GJ_KEY_SIGNED, GJ_EXPR_INT2};
		spec.ninputs = 3;
	}
	spec.nkeys = 1;
	gj_agg_expr_input(&spec.keys[0], 0, GJ_EXPR_INT2);
	spec.key_types[0] = GJ_EXPR_INT2;
	spec.aggs[0].kind = GJ_AGG_COUNT;
	spec.aggs[1].kind = GJ_AGG_SUM;
	spec.aggs[1].type = GJ_EXPR_INT4;
	spec.aggs[1].has_arg = true;
	gj_agg_expr_input(&spec.aggs[1].arg, 1, GJ_EXPR_INT4);
	spec.naggs = 2;
	if (L >= 2)
	{
		spec.aggs[2].kind = GJ_AGG_MIN;
		spec.aggs[2].type = GJ_EXPR_INT2;
		spec.aggs[2].has_arg = true;
		gj_agg_expr_input(&spec.aggs[2].arg, 2, GJ_EXPR_INT2);
		spec.naggs = 3;
	}
	spec.groups_hint = 1024;
	spec.variant = GJ_AGG_HASH;

	if (!StartChain(k, cc, d, false, &spec, specs, levels, &chain))
		goto done;
	for (;;)
	{
		int64_t		nmatches;

		if (!NextChunk(&chain, &nmatches))
			goto done;
		if (nmatches == 0)
			break;
		for (int64_t first = 0; first < nmatches;)
		{
			int64_t		n = 0;
			int64_t		undecided = 0;

			if (k->aggregate(levels[L - 1], first, &n, &undecided, &err) != GJ_OK || n <= 0 ||
				undecided != 0)
			{
				Failf("aggregate at %lld of %lld: %lld folded, %lld undecided: %s",
					  (long long) first, (long long) nmatches, (long long) n,
					  (long long) undecided, err.message);
				goto done;
			}
			first += n;
		}
	}
	if (k->agg_result(levels[L - 1], &r, &err) != GJ_OK)
	{
		Failf("agg_result: %s", err.message);
		goto done;
	}
	g->ngroups = r.ngroups;
	for (int64_t i = 0; i < r.ngroups; i++)
	{
		int			key = r.key_nulls[0][i] ? 30000 : (int) r.keys[0][i];

		if (key < 0 || key >= AGG_KEYS || g->count[key] != 0)
		{
			Failf("group %lld: key %d out of range or twice", (long long) i, key);
			goto done;
		}
		g->count[key] = r.n[0][i];
		g->sum[key] = (__int128) r.b[1][i] * ((__int128) 1 << 32) + (__int128) (uint64_t) r.a[1][i];
		if (L >= 2)
		{
			g->nmin[key] = r.n[2][i];
			g->min[key] = r.n[2][i] > 0 ? r.a[2][i] : 0;
		}
	}
	ok = true;
done:
	for (int l = 0; l < L; l++)
		k->context_destroy(levels[l]);
	return ok;
}

/* got's groups are want's */
static void
CheckGroups(const ChainGroups *got, const ChainGroups *want, const char *what)
{
	if (got->ngroups != want->ngroups)
	{
		Failf("%s: %lld groups, the reference has %lld", what,
			  (long long) got->ngroups, (long long) want->ngroups);
		return;
	}
	for (int key = 0; key < AGG_KEYS; key++)
	{
		if (got->count[key] != want->count[key] || got->sum[key] != want->sum[key] ||
			got->nmin[key] != want->nmin[key] ||
			(want->nmin[key] > 0 && got->min[key] != want->min[key]))
		{
			Failf("%s: group %d: count %lld, min %lld against %lld, %lld", what, key,
				  (long long) got->count[key], (long long) got->min[key],
				  (long long) want->count[key], (long long) want->min[key]);
			return;
		}
	}
}

/* got holds exactly want's (sorted) combinations, in some order */
static void
CheckSame(const ComboList *got, const ComboList *want, const char *what)
{
	ComboList	sorted = *got;

	if (!got->values_ok)
	{
		Failf("%s: %s", what, got->why);
		return;
	}
	if (got->n != want->n)
	{
		Failf("%s: %lld matches, the reference has %lld",
			  what, (long long) got->n, (long long) want->n);
		return;
	}
	/* a sorted copy: got keeps the order the kernels gave */
	sorted.items = TestAlloc((size_t) (got->n > 0 ? got->n : 1) * sizeof(Combo));
	if (got->n > 0)
		memcpy(sorted.items, got->items, (size_t) got->n * sizeof(Combo));
	SortCombos(&sorted);
	for (int64_t i = 0; i < got->n; i++)
	{
		if (CompareCombo(&sorted.items[i], &want->items[i]) != 0)
		{
			Failf("%s: sorted match %lld differs from the reference", what, (long long) i);
			break;
		}
	}
	free(sorted.items);
}

#ifdef GPUJOIN_WITH_CUDA
/* a and b identical, in the same order (the CUDA comparisons) */
static void
CheckIdentical(const ComboList *a, const ComboList *b, const char *what)
{
	if (a->n != b->n)
	{
		Failf("%s: %lld matches against %lld", what, (long long) a->n, (long long) b->n);
		return;
	}
	if (a->n > 0 && memcmp(a->items, b->items, (size_t) a->n * sizeof(Combo)) != 0)
		Failf("%s: same matches, not in the same order", what);
}
#endif

static void
RunCase(const ChainCase *cc)
{
	ChainData	d;
	ComboList	want;
	ComboList	cpu;
	Combo		c;
	char		name[256];
	bool		cpu_ran;

	MakeData(cc, &d);
	memset(&want, 0, sizeof(want));
	want.width = cc->nlevels + 1;
	for (int64_t r = 0; r < cc->nrows; r++)
	{
		memset(&c, 0, sizeof(c));
		c.rows[0] = (uint32_t) r;
		Reference(cc, &d, 0, &c, &want);
	}
	SortCombos(&want);

	snprintf(name, sizeof(name), "chain %.96s (%lld combinations)", cc->name, (long long) want.n);
	cpu_ran = RunChain(&gj_cpu_kernels, cc, &d, false, &cpu, NULL);
	if (cpu_ran)
		CheckSame(&cpu, &want, "cpu");
	TestReport("cpu", name);

	/* the last level's matches folded into groups */
	{
		ChainGroups *ref = TestAlloc(sizeof(ChainGroups));
		ChainGroups *got = TestAlloc(sizeof(ChainGroups));

		ReferenceGroups(cc, &d, &want, ref);
		snprintf(name, sizeof(name), "chain %.96s, the last level into %lld groups",
				 cc->name, (long long) ref->ngroups);
		if (RunChainAgg(&gj_cpu_kernels, cc, &d, got))
			CheckGroups(got, ref, "cpu");
		TestReport("cpu", name);
#ifdef GPUJOIN_WITH_CUDA
		if (have_cuda)
		{
			if (RunChainAgg(&gj_cuda_kernels, cc, &d, got))
				CheckGroups(got, ref, "cuda");
			TestReport("cuda", name);
		}
#endif
		free(ref);
		free(got);
		snprintf(name, sizeof(name), "chain %.96s (%lld combinations)", cc->name, (long long) want.n);
	}

#ifdef GPUJOIN_WITH_CUDA
	if (have_cuda)
	{
		ComboList	dev;
		ComboList	host;
		int64_t		dev_rows[MAX_LEVELS];
		int64_t		host_rows[MAX_LEVELS];

		/* the device's rounds, in the twin's order (both number alike) */
		if (RunChain(&gj_cuda_kernels, cc, &d, false, &dev, dev_rows))
		{
			if (!dev.values_ok)
				Failf("cuda: %s", dev.why);
			else if (cpu_ran)
				CheckIdentical(&dev, &cpu, "cuda (rounds on the device) against cpu");
		}
		TestReport("cuda", name);
		/* and through the host, as stacked joins would hand them */
		if (RunChain(&gj_cuda_kernels, cc, &d, true, &host, host_rows))
		{
			CheckIdentical(&host, &dev, "cuda through the host against on the device");
			if (memcmp(dev_rows, host_rows, sizeof(int64_t) * (size_t) cc->nlevels) != 0)
				Failf("the levels' matches differ through the host");
		}
		TestReport("cuda", "chain through the host, same matches");
		free(dev.items);
		free(host.items);
	}
#endif
	free(cpu.items);
	free(want.items);
	FreeData(cc, &d);
}

/* gj_chain_init must refuse what a chain cannot be */
static void
TestInvalid(void)
{
	ChainCase	cc;
	GjJoinSpec	specs[MAX_LEVELS];
	int32_t		key_columns[MAX_LEVELS];
	GjContext  *fake[MAX_LEVELS] = {(GjContext *) 1, (GjContext *) 1, (GjContext *) 1};
	GjChain		chain;
	GjError		err;
	struct
	{
		const char *what;
		int			level;
		int			field;		/* 0 variant, 1 row_ids, 2 width, 3 key, 4 columns */
	}			bad[] = {
		{"a BAND level", 1, 0},
		{"a level above the last without row_ids", 0, 1},
		{"an outer column of the wrong width", 2, 2},
		{"a key column of 4 bytes", 1, 3},
		{"one outer column too many", 2, 4},
	};

	memset(&cc, 0, sizeof(cc));
	cc.nlevels = 3;
	cc.max_matches = 100;
	MakeSpecs(&cc, specs, key_columns);
	if (gj_chain_init(&chain, &gj_cpu_kernels, 3, fake, specs, key_columns, NULL, &err) != GJ_OK)
		Failf("a good chain was refused: %s", err.message);
	TestReport("cpu", "chain: gj_chain_init takes a good chain");

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		char		name[128];
		GjStatus	status;

		MakeSpecs(&cc, specs, key_columns);
		switch (bad[i].field)
		{
			case 0:
				specs[bad[i].level].variant = GJ_VARIANT_BAND;
				break;
			case 1:
				specs[bad[i].level].row_ids = false;
				break;
			case 2:
				specs[bad[i].level].outer_widths[1] = 4;
				break;
			case 3:
				key_columns[bad[i].level] = specs[bad[i].level].outer_ncolumns - 1;
				break;
			case 4:
				specs[bad[i].level].outer_ncolumns++;
				break;
		}
		memset(&err, 0, sizeof(err));
		status = gj_chain_init(&chain, &gj_cpu_kernels, 3, fake, specs, key_columns, NULL, &err);
		if (status != GJ_ERROR_INVALID_ARGUMENT || err.message[0] == '\0')
			Failf("gj_chain_init took %s", bad[i].what);
		snprintf(name, sizeof(name), "chain: gj_chain_init refuses %s", bad[i].what);
		TestReport("cpu", name);
	}
	/* a semi or anti level is an NPHJ without inner columns, on one device */
	for (int i = 0; i < 4; i++)
	{
		GjContext  *ctx = NULL;
		const GjKernels *k = i == 3 ? gj_spread_kernels(&gj_cpu_kernels) : &gj_cpu_kernels;
		static const char *const what[] = {
			"a semi level with inner columns", "an anti level of PHJ", "an outer match of 4",
			"a left level spread over 2 devices"};

		MakeSpecs(&cc, specs, key_columns);
		specs[1].outer_match = i == 0 ? GJ_OUTER_FIRST : i == 1 ? GJ_OUTER_NONE :
			i == 2 ? 4 : GJ_OUTER_LEFT;
		if (i == 1 || i == 2)
			specs[1].inner_ncolumns = 0;
		if (i == 1)
			specs[1].variant = GJ_VARIANT_PHJ;
		if (i == 3)
		{
			specs[1].ndevices = 2;
			specs[1].spread = GJ_SPREAD_PARTITION;
		}
		memset(&err, 0, sizeof(err));
		if (k->context_create(&ctx, &specs[1], &err) != GJ_ERROR_INVALID_ARGUMENT ||
			err.message[0] == '\0')
			Failf("context_create took %s", what[i]);
		k->context_destroy(ctx);
		{
			char		name[128];

			snprintf(name, sizeof(name), "chain: context_create refuses %s", what[i]);
			TestReport("cpu", name);
		}
	}
	memset(&err, 0, sizeof(err));
	if (gj_chain_init(&chain, &gj_cpu_kernels, GJ_MAX_LEVELS + 1, fake, specs,
					  key_columns, NULL, &err) != GJ_ERROR_INVALID_ARGUMENT)
		Failf("gj_chain_init took %d levels", GJ_MAX_LEVELS + 1);
	TestReport("cpu", "chain: gj_chain_init refuses too many levels");

	/* a packed key: of the column's width, 4 or 8, 1 to 64 bits, kernels that pack */
	{
		static const struct
		{
			const char *what;
			GjKeyPack	pack;
			const GjKernels *kernels;
		}			packs[] = {
			{"a pack of 8 bytes from a 4-byte column", {8, 32, true}, NULL},
			{"a pack of 2 bytes", {2, 16, true}, NULL},
			{"a pack of 65 bits", {4, 65, true}, NULL},
			{"a pack by kernels that cannot pack", {4, 32, true}, NULL},
		};

		for (size_t i = 0; i < sizeof(packs) / sizeof(packs[0]); i++)
		{
			GjKeyPack	p[MAX_LEVELS];
			GjKernels	no_pack = gj_cpu_kernels;
			const GjKernels *k = &gj_cpu_kernels;
			char		name[128];

			cc.packed = true;
			MakeSpecs(&cc, specs, key_columns);
			for (int l = 0; l < 3; l++)
				p[l] = PackOf(&cc, l);
			if (gj_chain_init(&chain, k, 3, fake, specs, key_columns, p, &err) != GJ_OK)
				Failf("a packed key was refused: %s", err.message);
			p[1] = packs[i].pack;
			if (i == 3)
			{
				no_pack.pack_keys = NULL;
				k = &no_pack;
			}
			memset(&err, 0, sizeof(err));
			if (gj_chain_init(&chain, k, 3, fake, specs, key_columns, p, &err) !=
				GJ_ERROR_INVALID_ARGUMENT || err.message[0] == '\0')
				Failf("gj_chain_init took %s", packs[i].what);
			snprintf(name, sizeof(name), "chain: gj_chain_init refuses %s", packs[i].what);
			TestReport("cpu", name);
		}
		cc.packed = false;
	}
}

void
TestChain(void)
{
	ChainCase	cases[12];
	int			n = 0;
	ChainCase  *c;

	memset(cases, 0, sizeof(cases));

	c = &cases[n++];
	snprintf(c->name, sizeof(c->name), "star of 3 NPHJ levels, unique keys");
	c->nlevels = 3;
	c->nrows = 20000;
	c->inner_rows[0] = 1000;
	c->inner_rows[1] = 3001;
	c->inner_rows[2] = 50;
	c->max_matches = 4096;

	c = &cases[n++];
	snprintf(c->name, sizeof(c->name), "star of 4, repeated keys, every variant, small rounds, numbered chunk");
	c->nlevels = 4;
	c->nrows = 5000;
	c->inner_rows[0] = 600;
	c->inner_rows[1] = 900;
	c->inner_rows[2] = 1200;
	c->inner_rows[3] = 300;
	c->repeated[0] = c->repeated[2] = c->repeated[3] = true;
	c->variants[0] = GJ_VARIANT_PHJ;
	c->variants[1] = GJ_VARIANT_SMJ;
	c->variants[2] = GJ_VARIANT_NPHJ;
	c->variants[3] = GJ_VARIANT_PHJ;
	c->materialize[1] = c->materialize[3] = GJ_MATERIALIZE_GFTR;
	c->max_matches = 333;
	c->numbered = true;

	c = &cases[n++];
	snprintf(c->name, sizeof(c->name), "snowflake: levels 1 and 2 probe with the level above's column");
	c->nlevels = 3;
	c->nrows = 8000;
	c->inner_rows[0] = 2000;
	c->inner_rows[1] = 700;
	c->inner_rows[2] = 90;
	c->repeated[2] = true;
	c->from_above[1] = c->from_above[2] = 1;
	c->variants[1] = GJ_VARIANT_SMJ;
	c->max_matches = 1000;

	c = &cases[n++];
	snprintf(c->name, sizeof(c->name), "an empty middle level");
	c->nlevels = 3;
	c->nrows = 3000;
	c->inner_rows[0] = 100;
	c->inner_rows[1] = 0;
	c->inner_rows[2] = 100;
	c->max_matches = 512;

	c = &cases[n++];
	snprintf(c->name, sizeof(c->name), "one level");
	c->nlevels = 1;
	c->nrows = 4000;
	c->inner_rows[0] = 500;
	c->repeated[0] = true;
	c->max_matches = 700;

	c = &cases[n++];
	snprintf(c->name, sizeof(c->name), "five levels, GFTR, rounds of 64");
	c->nlevels = 5;
	c->nrows = 2000;
	for (int k = 0; k < 5; k++)
	{
		c->inner_rows[k] = 40 + 37 * k;
		c->materialize[k] = GJ_MATERIALIZE_GFTR;
		c->variants[k] = (GjVariant) (k % 3);
	}
	c->repeated[1] = true;
	c->max_matches = 64;

	c = &cases[n++];
	snprintf(c->name, sizeof(c->name), "star of 5: a semi level and an anti level, repeated keys, small rounds");
	c->nlevels = 5;
	c->nrows = 6000;
	c->inner_rows[0] = 800;
	c->inner_rows[1] = 900;
	c->inner_rows[2] = 700;
	c->inner_rows[3] = 400;
	c->inner_rows[4] = 300;
	c->repeated[1] = c->repeated[2] = c->repeated[4] = true;
	c->match[1] = GJ_OUTER_FIRST;
	c->match[2] = GJ_OUTER_NONE;
	c->match[3] = GJ_OUTER_FIRST;
	c->materialize[4] = GJ_MATERIALIZE_GFTR;
	c->variants[4] = GJ_VARIANT_PHJ;
	c->max_matches = 251;
	c->numbered = true;

	c = &cases[n++];
	snprintf(c->name, sizeof(c->name), "an empty anti level (every row goes on), a semi level");
	c->nlevels = 4;
	c->nrows = 3000;
	c->inner_rows[0] = 300;
	c->inner_rows[1] = 0;
	c->inner_rows[2] = 450;
	c->inner_rows[3] = 200;
	c->repeated[2] = true;
	c->match[1] = GJ_OUTER_NONE;
	c->match[2] = GJ_OUTER_FIRST;
	c->max_matches = 512;

	c = &cases[n++];
	snprintf(c->name, sizeof(c->name), "left levels: repeated keys, GFTR, a snowflake through a left level");
	c->nlevels = 4;
	c->nrows = 5000;
	c->inner_rows[0] = 700;
	c->inner_rows[1] = 800;
	c->inner_rows[2] = 600;
	c->inner_rows[3] = 300;
	c->repeated[1] = c->repeated[3] = true;
	c->match[1] = GJ_OUTER_LEFT;
	c->match[2] = GJ_OUTER_LEFT;
	c->from_above[2] = 1;
	c->materialize[2] = GJ_MATERIALIZE_GFTR;
	c->max_matches = 301;
	c->numbered = true;

	c = &cases[n++];
	snprintf(c->name, sizeof(c->name), "an empty left level (every row NULL-extended)");
	c->nlevels = 3;
	c->nrows = 2500;
	c->inner_rows[0] = 400;
	c->inner_rows[1] = 0;
	c->inner_rows[2] = 250;
	c->match[1] = GJ_OUTER_LEFT;
	c->max_matches = 400;

	/* two of them again, the keys of levels 1.. packed by the kernels */
	cases[n] = cases[1];
	c = &cases[n++];
	snprintf(c->name, sizeof(c->name), "star of 4, every variant, keys packed by the kernels");
	c->packed = true;
	cases[n] = cases[8];
	c = &cases[n++];
	snprintf(c->name, sizeof(c->name), "left levels and a snowflake, keys packed by the kernels");
	c->packed = true;

	for (int i = 0; i < n; i++)
		RunCase(&cases[i]);
	TestInvalid();
}
