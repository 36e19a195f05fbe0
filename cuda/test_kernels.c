/*-------------------------------------------------------------------------
 *
 * test_kernels.c
 *	  Kernel tests outside PostgreSQL (make -C cuda check)
 *
 * Each case is an inner key column and one or more outer chunks, generated
 * from a fixed seed.  Three answers are computed for it:
 *
 *	  reference		sort the inner (key, row) pairs, then binary-search each
 *					outer key: the exact match list in the contract's order
 *					(outer row ascending, then inner row ascending), by a
 *					method that shares nothing with the kernels; on small
 *					cases a nested loop checks the reference itself
 *	  cpu			the CPU twin, through gj_cpu_kernels, which must equal
 *					the reference
 *	  cuda			the CUDA kernels, which must equal the CPU twin element
 *					by element, when built with CUDA and a device answers
 *
 * Matches are taken out in rounds of max_matches, with the round arrays
 * poisoned before every retrieve; one extra round at a random window
 * checks that rounds do not depend on the ones before them.  Further
 * cases check the invalid-argument paths and, on a GPU, the device memory
 * limit.
 *
 * Without a GPU the CUDA comparisons are skipped, with one line saying so;
 * GJ_REQUIRE_GPU=1 makes that a failure (for the GPU host).
 * GJ_TEST_VERBOSE=1 prints every case, its size and what each run cost;
 * GJ_TEST_LARGE_ROWS=N sets the inner rows of the two large cases
 * (2000000 by default).  The last line is
 * "N passed, N failed"; the exit status is non-zero on any failure.
 *
 * IDENTIFICATION
 *	  cuda/test_kernels.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "gpujoin_kernels.h"

#define MAX_CHUNKS		8
#define POISON_BYTE		0xA5

static int	tests_passed = 0;
static int	tests_failed = 0;
static bool verbose = false;
static bool have_cuda = false;

/* ----------------------------------------------------------------
 *		Reporting
 * ----------------------------------------------------------------
 */

/* Why the current check failed; the first reason wins */
static char failure[512];

static void Failf(const char *fmt,...) GJ_PRINTF_LIKE(1, 2);

static void
Failf(const char *fmt,...)
{
	va_list		args;

	if (failure[0] != '\0')
		return;
	va_start(args, fmt);
	vsnprintf(failure, sizeof(failure), fmt, args);
	va_end(args);
}

/* Count one check of case "name" on implementation "impl", print failures */
static void
Report(const char *impl, const char *name)
{
	if (failure[0] == '\0')
	{
		tests_passed++;
		if (verbose)
			printf("ok    %-5s %s\n", impl, name);
	}
	else
	{
		tests_failed++;
		printf("FAIL  %-5s %s: %s\n", impl, name, failure);
	}
	fflush(stdout);
	failure[0] = '\0';
}

/* Out of host memory in the test itself: no point going on */
static void *
Alloc(size_t bytes)
{
	void	   *ptr = malloc(bytes > 0 ? bytes : 1);

	if (ptr == NULL)
	{
		fprintf(stderr, "test_kernels: out of memory (%zu bytes)\n", bytes);
		exit(2);
	}
	return ptr;
}

/* ----------------------------------------------------------------
 *		Data generation
 * ----------------------------------------------------------------
 */

/* splitmix64: a fixed-seed generator, so every run sees the same data */
static uint64_t
NextRandom(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Uniform in [0, 1) */
static double
RandomUnit(uint64_t *state)
{
	return (double) (NextRandom(state) >> 11) / 9007199254740992.0;
}

/* Uniform in [0, n), n > 0 */
static int64_t
RandomBelow(uint64_t *state, int64_t n)
{
	return (int64_t) (NextRandom(state) % (uint64_t) n);
}

/* How a key index 0, 1, 2, ... becomes a 64-bit key */
typedef enum KeyMap
{
	KEYS_DENSE,					/* the index itself, like int4 keys */
	KEYS_WIDE,					/* 0, UINT64_MAX, 2^63, 2^63-1, then spread
								 * over the whole 64-bit range */
	KEYS_COLLIDE				/* distinct keys crowded into three buckets */
} KeyMap;

/*
 * Draws key indexes from [0, domain) with probability proportional to
 * 1 / (i + 1)^s: Zipf-like skew, uniform for s = 0
 */
typedef struct ZipfSampler
{
	int64_t		domain;
	double		exponent;
	double	   *cdf;			/* NULL when uniform */
} ZipfSampler;

static void
ZipfInit(ZipfSampler *z, int64_t domain, double exponent)
{
	double		sum = 0.0;

	z->domain = domain;
	z->exponent = exponent;
	z->cdf = NULL;
	if (exponent == 0.0 || domain <= 1)
		return;
	z->cdf = (double *) Alloc((size_t) domain * sizeof(double));
	for (int64_t i = 0; i < domain; i++)
	{
		sum += 1.0 / pow((double) (i + 1), exponent);
		z->cdf[i] = sum;
	}
	for (int64_t i = 0; i < domain; i++)
		z->cdf[i] /= sum;
}

static int64_t
ZipfNext(const ZipfSampler *z, uint64_t *state)
{
	double		u;
	int64_t		lo = 0;
	int64_t		hi;

	if (z->cdf == NULL)
		return RandomBelow(state, z->domain);
	u = RandomUnit(state);
	hi = z->domain - 1;
	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (z->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
ZipfFree(ZipfSampler *z)
{
	free(z->cdf);
	z->cdf = NULL;
}

/* What a generated case looks like */
typedef struct CaseSpec
{
	const char *name;
	int64_t		inner_rows;
	int64_t		outer_rows;		/* per chunk */
	int			nchunks;		/* 1 .. MAX_CHUNKS */
	int64_t		domain;			/* inner key indexes are drawn from [0, domain);
								 * 0 means a permutation of 0 .. inner_rows-1
								 * (unique keys) */
	double		inner_skew;		/* Zipf exponent of the inner side */
	double		outer_skew;		/* ... and of the outer side's hits */
	double		match_ratio;	/* share of outer keys drawn from the inner
								 * domain; the rest are from outside it */
	KeyMap		keymap;
	double		inner_null_share;	/* share of NULL keys */
	double		outer_null_share;
	bool		inner_null_array;	/* pass a nulls array even without NULLs */
	bool		outer_null_array;
	int64_t		max_matches;
	int64_t		memory_limit;	/* for the CUDA context; 0 = none */
	bool		rebuild;		/* build on other keys first, then rebuild */
	uint64_t	seed;
} CaseSpec;

/* A case's data */
typedef struct CaseData
{
	GjKeyColumn inner;
	GjKeyColumn decoy;			/* built first when spec->rebuild */
	GjKeyColumn outer[MAX_CHUNKS];
	int			nchunks;
} CaseData;

/* Keys that share three buckets at the inner table's bucket_bits */
static uint64_t *collide_pool = NULL;

static void
MakeCollidePool(int64_t size, int64_t inner_rows, uint64_t seed)
{
	int			bits = gj_bucket_bits(inner_rows);
	uint32_t	targets[3];
	uint64_t	state = seed;
	int64_t		found = 0;

	targets[0] = 0;
	targets[1] = 1;
	targets[2] = (uint32_t) (gj_bucket_count(bits) - 1);
	collide_pool = (uint64_t *) Alloc((size_t) size * sizeof(uint64_t));
	while (found < size)
	{
		uint64_t	key = NextRandom(&state);
		uint32_t	bucket = gj_bucket(key, bits);

		if (bucket == targets[found % 3])
			collide_pool[found++] = key;
	}
}

static uint64_t
KeyOf(KeyMap keymap, int64_t index)
{
	static const uint64_t special[] = {
		0, UINT64_MAX, UINT64_C(1) << 63, (UINT64_C(1) << 63) - 1
	};
	uint64_t	state;

	switch (keymap)
	{
		case KEYS_DENSE:
			return (uint64_t) index;
		case KEYS_WIDE:
			if (index < 4)
				return special[index];
			state = (uint64_t) index * UINT64_C(0x2545F4914F6CDD1D);
			return NextRandom(&state);
		case KEYS_COLLIDE:
			return collide_pool[index];
	}
	return 0;
}

static uint8_t *
MakeNulls(int64_t nrows, double share, bool always, uint64_t *state)
{
	uint8_t    *nulls;

	if (share <= 0.0 && !always)
		return NULL;
	nulls = (uint8_t *) Alloc((size_t) nrows);
	for (int64_t row = 0; row < nrows; row++)
		nulls[row] = (share > 0.0 && RandomUnit(state) < share) ? 1 : 0;
	return nulls;
}

/* The inner side: a permutation (unique keys) or draws from the domain */
static GjKeyColumn
MakeInner(const CaseSpec *spec, int64_t nrows, uint64_t *state)
{
	GjKeyColumn col;
	uint64_t   *keys = (uint64_t *) Alloc((size_t) nrows * sizeof(uint64_t));

	if (spec->domain == 0)
	{
		int64_t    *perm = (int64_t *) Alloc((size_t) nrows * sizeof(int64_t));

		for (int64_t i = 0; i < nrows; i++)
			perm[i] = i;
		for (int64_t i = nrows - 1; i > 0; i--)
		{
			int64_t		j = RandomBelow(state, i + 1);
			int64_t		t = perm[i];

			perm[i] = perm[j];
			perm[j] = t;
		}
		for (int64_t i = 0; i < nrows; i++)
			keys[i] = KeyOf(spec->keymap, perm[i]);
		free(perm);
	}
	else
	{
		ZipfSampler z;

		ZipfInit(&z, spec->domain, spec->inner_skew);
		for (int64_t i = 0; i < nrows; i++)
			keys[i] = KeyOf(spec->keymap, ZipfNext(&z, state));
		ZipfFree(&z);
	}
	col.keys = keys;
	col.nrows = nrows;
	col.nulls = MakeNulls(nrows, spec->inner_null_share,
						  spec->inner_null_array, state);
	return col;
}

/* An outer chunk: hits from the inner domain, misses from beyond it */
static GjKeyColumn
MakeOuter(const CaseSpec *spec, uint64_t *state)
{
	GjKeyColumn col;
	int64_t		nrows = spec->outer_rows;
	int64_t		domain = spec->domain > 0 ? spec->domain : spec->inner_rows;
	uint64_t   *keys = (uint64_t *) Alloc((size_t) nrows * sizeof(uint64_t));
	ZipfSampler z;

	ZipfInit(&z, domain > 0 ? domain : 1, spec->outer_skew);
	for (int64_t i = 0; i < nrows; i++)
	{
		int64_t		index;

		if (domain > 0 && RandomUnit(state) < spec->match_ratio)
			index = ZipfNext(&z, state);
		else
			index = (domain > 0 ? domain : 1) + RandomBelow(state, domain > 0 ? domain : 1);
		keys[i] = KeyOf(spec->keymap, index);
	}
	ZipfFree(&z);
	col.keys = keys;
	col.nrows = nrows;
	col.nulls = MakeNulls(nrows, spec->outer_null_share,
						  spec->outer_null_array, state);
	return col;
}

static void
MakeCase(const CaseSpec *spec, CaseData *data)
{
	uint64_t	state = spec->seed;
	int64_t		domain = spec->domain > 0 ? spec->domain : spec->inner_rows;

	memset(data, 0, sizeof(CaseData));
	if (spec->keymap == KEYS_COLLIDE)
		MakeCollidePool(2 * (domain > 0 ? domain : 1), spec->inner_rows,
						spec->seed ^ 0x5eed);
	data->inner = MakeInner(spec, spec->inner_rows, &state);
	if (spec->rebuild)
		data->decoy = MakeInner(spec, spec->inner_rows / 2 + 3, &state);
	data->nchunks = spec->nchunks;
	for (int c = 0; c < spec->nchunks; c++)
		data->outer[c] = MakeOuter(spec, &state);
}

static void
FreeColumn(GjKeyColumn *col)
{
	free((void *) col->keys);
	free((void *) col->nulls);
	col->keys = NULL;
	col->nulls = NULL;
}

static void
FreeCase(CaseData *data)
{
	FreeColumn(&data->inner);
	FreeColumn(&data->decoy);
	for (int c = 0; c < data->nchunks; c++)
		FreeColumn(&data->outer[c]);
	free(collide_pool);
	collide_pool = NULL;
}

/* ----------------------------------------------------------------
 *		The reference answer
 * ----------------------------------------------------------------
 */

/* The matches of one chunk, in the contract's order */
typedef struct MatchList
{
	int64_t		nmatches;
	GjRowId    *outer_rows;
	GjRowId    *inner_rows;
} MatchList;

typedef struct KeyRow
{
	uint64_t	key;
	GjRowId		row;
} KeyRow;

static int
CompareKeyRow(const void *a, const void *b)
{
	const KeyRow *x = (const KeyRow *) a;
	const KeyRow *y = (const KeyRow *) b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	return 0;
}

static bool
IsNull(const GjKeyColumn *col, int64_t row)
{
	return col->nulls != NULL && col->nulls[row] != 0;
}

/* First index of sorted[0..n) with key >= key */
static int64_t
LowerBound(const KeyRow *sorted, int64_t n, uint64_t key)
{
	int64_t		lo = 0;
	int64_t		hi = n;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (sorted[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The expected matches of every chunk: sort the inner (key, row) pairs
 * with non-NULL keys by (key, row), then, for each outer row in order, the
 * run of equal keys gives its inner rows in ascending order.
 */
static void
ReferenceJoin(const GjKeyColumn *inner, const GjKeyColumn *outer,
			  MatchList *out)
{
	KeyRow	   *sorted = (KeyRow *) Alloc((size_t) inner->nrows * sizeof(KeyRow));
	int64_t		n = 0;
	int64_t		total = 0;
	int64_t		m = 0;

	for (int64_t row = 0; row < inner->nrows; row++)
	{
		if (IsNull(inner, row))
			continue;
		sorted[n].key = inner->keys[row];
		sorted[n].row = (GjRowId) row;
		n++;
	}
	qsort(sorted, (size_t) n, sizeof(KeyRow), CompareKeyRow);

	for (int pass = 0; pass < 2; pass++)
	{
		for (int64_t row = 0; row < outer->nrows; row++)
		{
			uint64_t	key = outer->keys[row];

			if (IsNull(outer, row))
				continue;
			for (int64_t i = LowerBound(sorted, n, key);
				 i < n && sorted[i].key == key; i++)
			{
				if (pass == 0)
					total++;
				else
				{
					out->outer_rows[m] = (GjRowId) row;
					out->inner_rows[m] = sorted[i].row;
					m++;
				}
			}
		}
		if (pass == 0)
		{
			out->nmatches = total;
			out->outer_rows = (GjRowId *) Alloc((size_t) total * sizeof(GjRowId));
			out->inner_rows = (GjRowId *) Alloc((size_t) total * sizeof(GjRowId));
		}
	}
	free(sorted);
}

/* On small cases, check the reference against a nested loop */
static void
CheckReference(const GjKeyColumn *inner, const GjKeyColumn *outer,
			   const MatchList *ref)
{
	int64_t		m = 0;

	if (inner->nrows * outer->nrows > 4000000)
		return;
	for (int64_t o = 0; o < outer->nrows; o++)
	{
		if (IsNull(outer, o))
			continue;
		for (int64_t i = 0; i < inner->nrows; i++)
		{
			if (IsNull(inner, i) || inner->keys[i] != outer->keys[o])
				continue;
			if (m >= ref->nmatches ||
				ref->outer_rows[m] != (GjRowId) o ||
				ref->inner_rows[m] != (GjRowId) i)
			{
				Failf("the reference itself is wrong at match %lld",
					  (long long) m);
				return;
			}
			m++;
		}
	}
	if (m != ref->nmatches)
		Failf("the reference has %lld matches, the nested loop %lld",
			  (long long) ref->nmatches, (long long) m);
}

static void
FreeMatches(MatchList *list)
{
	free(list->outer_rows);
	free(list->inner_rows);
	memset(list, 0, sizeof(MatchList));
}

/* Compare two match lists element by element */
static void
CompareMatches(const char *what, int chunk, const MatchList *got,
			   const MatchList *expected)
{
	if (got->nmatches != expected->nmatches)
	{
		Failf("chunk %d: %lld matches, %s has %lld", chunk,
			  (long long) got->nmatches, what, (long long) expected->nmatches);
		return;
	}
	for (int64_t m = 0; m < got->nmatches; m++)
	{
		if (got->outer_rows[m] != expected->outer_rows[m] ||
			got->inner_rows[m] != expected->inner_rows[m])
		{
			Failf("chunk %d, match %lld of %lld: (outer %u, inner %u), %s has (outer %u, inner %u)",
				  chunk, (long long) m, (long long) got->nmatches,
				  got->outer_rows[m], got->inner_rows[m], what,
				  expected->outer_rows[m], expected->inner_rows[m]);
			return;
		}
	}
}

/* ----------------------------------------------------------------
 *		Running a kernel table
 * ----------------------------------------------------------------
 */

/* Check a status; on failure record the error and return false */
static bool
Expect(GjStatus status, GjStatus expected, const GjError *err,
	   const char *call)
{
	if (status == expected)
		return true;
	Failf("%s returned %d, expected %d (%s%s%s)", call, (int) status,
		  (int) expected, err->cuda_error, err->cuda_error[0] ? ": " : "",
		  err->message);
	return false;
}

static void
Poison(const GjMatchRound *round, int64_t capacity)
{
	if (round->outer_rows != NULL)
		memset((void *) round->outer_rows, POISON_BYTE,
			   (size_t) capacity * sizeof(GjRowId));
	if (round->inner_rows != NULL)
		memset((void *) round->inner_rows, POISON_BYTE,
			   (size_t) capacity * sizeof(GjRowId));
}

/* Did a retrieve write past its round, into the poisoned rest? */
static bool
PoisonIntact(const GjMatchRound *round, int64_t capacity)
{
	const uint8_t *outer = (const uint8_t *) (round->outer_rows + round->nmatches);
	const uint8_t *inner = (const uint8_t *) (round->inner_rows + round->nmatches);
	size_t		rest = (size_t) (capacity - round->nmatches) * sizeof(GjRowId);

	for (size_t i = 0; i < rest; i++)
	{
		if (outer[i] != POISON_BYTE || inner[i] != POISON_BYTE)
			return false;
	}
	return true;
}

/*
 * Take all matches of the counted chunk out in rounds, into *out
 *
 * The round arrays belong to the context; they are poisoned before every
 * retrieve (casting away their const: the test knows they are writable),
 * so that a match the kernels forgot to write shows up.
 */
static bool
RetrieveAll(const GjKernels *k, GjContext *ctx, int64_t nmatches,
			int64_t max_matches, MatchList *out, uint64_t *state)
{
	GjMatchRound round;
	GjError		err;
	int64_t		first = 0;

	memset(&err, 0, sizeof(err));
	memset(&round, 0, sizeof(round));
	out->nmatches = nmatches;
	out->outer_rows = (GjRowId *) Alloc((size_t) nmatches * sizeof(GjRowId));
	out->inner_rows = (GjRowId *) Alloc((size_t) nmatches * sizeof(GjRowId));

	/* A round past the end is empty, and shows where the arrays are */
	if (!Expect(k->hash_retrieve(ctx, nmatches, &round, &err), GJ_OK, &err,
				"hash_retrieve(total)"))
		return false;
	if (round.nmatches != 0 || round.outer_rows == NULL || round.inner_rows == NULL)
	{
		Failf("hash_retrieve(total) gave %lld matches", (long long) round.nmatches);
		return false;
	}

	while (first < nmatches)
	{
		int64_t		expected = nmatches - first < max_matches ? nmatches - first : max_matches;

		Poison(&round, max_matches);
		if (!Expect(k->hash_retrieve(ctx, first, &round, &err), GJ_OK, &err,
					"hash_retrieve"))
			return false;
		if (round.nmatches != expected)
		{
			Failf("hash_retrieve(%lld) gave %lld matches, expected %lld",
				  (long long) first, (long long) round.nmatches,
				  (long long) expected);
			return false;
		}
		if (!PoisonIntact(&round, max_matches))
		{
			Failf("hash_retrieve(%lld) wrote past its %lld matches",
				  (long long) first, (long long) round.nmatches);
			return false;
		}
		memcpy(out->outer_rows + first, round.outer_rows,
			   (size_t) round.nmatches * sizeof(GjRowId));
		memcpy(out->inner_rows + first, round.inner_rows,
			   (size_t) round.nmatches * sizeof(GjRowId));
		first += round.nmatches;
	}

	/* One more round at a random window must repeat what was handed out */
	if (nmatches > 0)
	{
		int64_t		window = RandomBelow(state, nmatches);

		Poison(&round, max_matches);
		if (!Expect(k->hash_retrieve(ctx, window, &round, &err), GJ_OK, &err,
					"hash_retrieve(random window)"))
			return false;
		for (int64_t m = 0; m < round.nmatches; m++)
		{
			if (round.outer_rows[m] != out->outer_rows[window + m] ||
				round.inner_rows[m] != out->inner_rows[window + m])
			{
				Failf("hash_retrieve(%lld) differs from the rounds before at match %lld",
					  (long long) window, (long long) (window + m));
				return false;
			}
		}
	}
	return true;
}

/*
 * Run one case through one kernel table; out[c] gets chunk c's matches.
 * Returns false, with the failure recorded, if any call fails.
 */
static bool
RunKernels(const GjKernels *k, const CaseSpec *spec, const CaseData *data,
		   MatchList *out, GjStats *stats)
{
	GjContext  *ctx = NULL;
	GjError		err;
	uint64_t	state = spec->seed ^ 0xC0FFEE;
	bool		ok = false;

	memset(&err, 0, sizeof(err));
	if (!Expect(k->context_create(&ctx, spec->memory_limit, spec->max_matches, &err),
				GJ_OK, &err, "context_create"))
		return false;

	if (spec->rebuild)
	{
		int64_t		nmatches = 0;
		MatchList	ignored;

		memset(&ignored, 0, sizeof(ignored));
		if (!Expect(k->hash_build(ctx, &data->decoy, &err), GJ_OK, &err,
					"hash_build(decoy)") ||
			!Expect(k->hash_count(ctx, &data->outer[0], &nmatches, &err),
					GJ_OK, &err, "hash_count(decoy)") ||
			!RetrieveAll(k, ctx, nmatches, spec->max_matches, &ignored, &state))
		{
			FreeMatches(&ignored);
			goto done;
		}
		FreeMatches(&ignored);
	}

	if (!Expect(k->hash_build(ctx, &data->inner, &err), GJ_OK, &err, "hash_build"))
		goto done;
	for (int c = 0; c < data->nchunks; c++)
	{
		int64_t		nmatches = -1;

		if (!Expect(k->hash_count(ctx, &data->outer[c], &nmatches, &err),
					GJ_OK, &err, "hash_count"))
			goto done;
		if (nmatches < 0)
		{
			Failf("hash_count gave %lld matches", (long long) nmatches);
			goto done;
		}
		if (!RetrieveAll(k, ctx, nmatches, spec->max_matches, &out[c], &state))
			goto done;
	}
	ok = true;

done:
	k->context_stats(ctx, stats);
	k->context_destroy(ctx);
	return ok;
}

/* Sanity of the statistics a run left */
static void
CheckStats(const char *impl, const GjStats *stats, const CaseData *data,
		   int64_t memory_limit)
{
	if (stats->build_ms < 0.0 || stats->probe_ms < 0.0 || stats->transfer_ms < 0.0)
		Failf("negative times in the statistics");
	if (strcmp(impl, "cpu") == 0)
	{
		if (stats->bytes_to_device != 0 || stats->bytes_from_device != 0 ||
			stats->device_memory_peak != 0)
			Failf("the CPU twin reports device traffic");
		return;
	}
	if (data->inner.nrows > 0 &&
		stats->bytes_to_device < data->inner.nrows * (int64_t) sizeof(uint64_t))
		Failf("bytes_to_device is %lld, less than the inner keys",
			  (long long) stats->bytes_to_device);
	if (data->inner.nrows > 0 && stats->device_memory_peak <= 0)
		Failf("device_memory_peak is %lld", (long long) stats->device_memory_peak);
	if (memory_limit > 0 && stats->device_memory_peak > memory_limit)
		Failf("device_memory_peak %lld is over the limit of %lld",
			  (long long) stats->device_memory_peak, (long long) memory_limit);
}

/* With GJ_TEST_VERBOSE=1: what a run cost */
static void
PrintStats(const char *impl, const GjStats *stats)
{
	if (!verbose)
		return;
	printf("      %-5s build %.2f ms, probe %.2f ms, transfer %.2f ms (%lld bytes to, %lld from the device), device memory peak %lld bytes\n",
		   impl, stats->build_ms, stats->probe_ms, stats->transfer_ms,
		   (long long) stats->bytes_to_device,
		   (long long) stats->bytes_from_device,
		   (long long) stats->device_memory_peak);
}

/*
 * Run a case: reference, CPU twin against it, CUDA against the CPU twin
 */
static void
RunCase(const CaseSpec *spec, CaseData *data)
{
	MatchList	ref[MAX_CHUNKS];
	MatchList	cpu[MAX_CHUNKS];
	GjStats		stats;

	memset(ref, 0, sizeof(ref));
	memset(cpu, 0, sizeof(cpu));

	for (int c = 0; c < data->nchunks; c++)
	{
		ReferenceJoin(&data->inner, &data->outer[c], &ref[c]);
		CheckReference(&data->inner, &data->outer[c], &ref[c]);
	}
	if (verbose)
	{
		int64_t		total = 0;

		for (int c = 0; c < data->nchunks; c++)
			total += ref[c].nmatches;
		printf("      %s: %lld inner rows, %d chunk(s) of %lld rows, %lld matches\n",
			   spec->name, (long long) data->inner.nrows, data->nchunks,
			   (long long) (data->nchunks > 0 ? data->outer[0].nrows : 0),
			   (long long) total);
	}
	if (failure[0] == '\0' && RunKernels(&gj_cpu_kernels, spec, data, cpu, &stats))
	{
		for (int c = 0; c < data->nchunks; c++)
			CompareMatches("the reference", c, &cpu[c], &ref[c]);
		CheckStats("cpu", &stats, data, 0);
		PrintStats("cpu", &stats);
	}
	Report("cpu", spec->name);

#ifdef GPUJOIN_WITH_CUDA
	if (have_cuda)
	{
		MatchList	gpu[MAX_CHUNKS];

		memset(gpu, 0, sizeof(gpu));
		if (RunKernels(&gj_cuda_kernels, spec, data, gpu, &stats))
		{
			for (int c = 0; c < data->nchunks; c++)
				CompareMatches("the CPU twin", c, &gpu[c], &cpu[c]);
			CheckStats("cuda", &stats, data, spec->memory_limit);
			PrintStats("cuda", &stats);
		}
		Report("cuda", spec->name);
		for (int c = 0; c < MAX_CHUNKS; c++)
			FreeMatches(&gpu[c]);
	}
#endif

	for (int c = 0; c < MAX_CHUNKS; c++)
	{
		FreeMatches(&ref[c]);
		FreeMatches(&cpu[c]);
	}
}

static void
RunGenerated(const CaseSpec *spec)
{
	CaseData	data;

	MakeCase(spec, &data);
	RunCase(spec, &data);
	FreeCase(&data);
}

/* ----------------------------------------------------------------
 *		The cases
 * ----------------------------------------------------------------
 */

/* A spec with the defaults every case starts from */
static CaseSpec
Spec(const char *name, int64_t inner_rows, int64_t outer_rows)
{
	CaseSpec	spec;

	memset(&spec, 0, sizeof(spec));
	spec.name = name;
	spec.inner_rows = inner_rows;
	spec.outer_rows = outer_rows;
	spec.nchunks = 1;
	spec.match_ratio = 1.0;
	spec.keymap = KEYS_DENSE;
	spec.max_matches = 1000;
	spec.seed = UINT64_C(0x6770756a6f696e) ^ (uint64_t) inner_rows * 31 ^ (uint64_t) outer_rows;
	return spec;
}

/*
 * A case written out by hand, with its answer: duplicates, 0 and
 * UINT64_MAX, and NULL rows whose key slot holds a value that would match
 */
static void
TestHandWritten(void)
{
	static const uint64_t inner_keys[] = {5, 7, 5, 0, 0, UINT64_MAX, 5};
	static const uint8_t inner_nulls[] = {0, 0, 0, 1, 0, 0, 0};
	static const uint64_t outer_keys[] = {5, 5, 0, 8, UINT64_MAX, 7, 5};
	static const uint8_t outer_nulls[] = {0, 1, 0, 0, 0, 0, 0};
	static const GjRowId expected_outer[] = {0, 0, 0, 2, 4, 5, 6, 6, 6};
	static const GjRowId expected_inner[] = {0, 2, 6, 4, 5, 1, 0, 2, 6};
	CaseSpec	spec = Spec("hand-written 7 x 7", 7, 7);
	CaseData	data;
	MatchList	expected;

	memset(&data, 0, sizeof(data));
	data.inner.keys = inner_keys;
	data.inner.nulls = inner_nulls;
	data.inner.nrows = 7;
	data.outer[0].keys = outer_keys;
	data.outer[0].nulls = outer_nulls;
	data.outer[0].nrows = 7;
	data.nchunks = 1;
	spec.max_matches = 2;

	/* The reference must agree with the answer written here */
	expected.nmatches = 9;
	expected.outer_rows = (GjRowId *) expected_outer;
	expected.inner_rows = (GjRowId *) expected_inner;
	{
		MatchList	ref;

		ReferenceJoin(&data.inner, &data.outer[0], &ref);
		CompareMatches("the hand-written answer", 0, &ref, &expected);
		FreeMatches(&ref);
	}
	Report("ref", spec.name);
	RunCase(&spec, &data);
}

/*
 * Calls the contract rejects must return GJ_ERROR_INVALID_ARGUMENT with a
 * message, leave the context usable, and not crash
 */
static void
ExpectInvalid(GjStatus status, const GjError *err, const char *call)
{
	if (status != GJ_ERROR_INVALID_ARGUMENT)
	{
		Failf("%s returned %d, expected GJ_ERROR_INVALID_ARGUMENT",
			  call, (int) status);
		return;
	}
	if (err->status != status)
		Failf("%s left err->status %d", call, (int) err->status);
	else if (err->message[0] == '\0' ||
			 err->message[strlen(err->message) - 1] != '.')
		Failf("%s left the message \"%s\"", call, err->message);
}

static void
TestInvalidArguments(const GjKernels *k, const GjKernels *other)
{
	static const uint64_t keys[] = {1, 2, 3, 2};
	GjKeyColumn good = {keys, NULL, 4};
	GjKeyColumn too_long = {keys, NULL, GJ_MAX_ROWS + 1};
	GjKeyColumn negative = {keys, NULL, -1};
	GjKeyColumn no_keys = {NULL, NULL, 4};
	GjContext  *ctx = NULL;
	GjContext  *other_ctx = NULL;
	GjMatchRound round;
	GjError		err;
	int64_t		nmatches = 0;

	memset(&err, 0, sizeof(err));
	ExpectInvalid(k->context_create(NULL, 0, 10, &err), &err, "context_create(NULL)");
	ExpectInvalid(k->context_create(&ctx, 0, 0, &err), &err, "context_create(max_matches 0)");
	ExpectInvalid(k->context_create(&ctx, -1, 10, &err), &err, "context_create(limit -1)");
	if (ctx != NULL)
		Failf("a failed context_create returned a context");
	k->context_destroy(NULL);

	if (!Expect(k->context_create(&ctx, 0, 3, &err), GJ_OK, &err, "context_create"))
	{
		Report(k->name, "invalid arguments");
		return;
	}
	ExpectInvalid(k->hash_count(ctx, &good, &nmatches, &err), &err, "hash_count before hash_build");
	ExpectInvalid(k->hash_retrieve(ctx, 0, &round, &err), &err, "hash_retrieve before hash_build");
	ExpectInvalid(k->hash_build(ctx, NULL, &err), &err, "hash_build(NULL)");
	ExpectInvalid(k->hash_build(ctx, &too_long, &err), &err, "hash_build(GJ_MAX_ROWS + 1 rows)");
	ExpectInvalid(k->hash_build(ctx, &negative, &err), &err, "hash_build(-1 rows)");
	ExpectInvalid(k->hash_build(ctx, &no_keys, &err), &err, "hash_build(no keys)");
	ExpectInvalid(k->hash_build(NULL, &good, &err), &err, "hash_build(NULL context)");

	/* After the failures, a real build and count work */
	Expect(k->hash_build(ctx, &good, &err), GJ_OK, &err, "hash_build");
	ExpectInvalid(k->hash_retrieve(ctx, 0, &round, &err), &err, "hash_retrieve before hash_count");
	ExpectInvalid(k->hash_count(ctx, &too_long, &nmatches, &err), &err, "hash_count(GJ_MAX_ROWS + 1 rows)");
	ExpectInvalid(k->hash_count(ctx, &good, NULL, &err), &err, "hash_count(no nmatches)");
	ExpectInvalid(k->hash_retrieve(ctx, 0, &round, &err), &err, "hash_retrieve after a failed hash_count");

	Expect(k->hash_count(ctx, &good, &nmatches, &err), GJ_OK, &err, "hash_count");
	if (nmatches != 6)
		Failf("hash_count gave %lld matches, expected 6", (long long) nmatches);
	ExpectInvalid(k->hash_retrieve(ctx, -1, &round, &err), &err, "hash_retrieve(-1)");
	ExpectInvalid(k->hash_retrieve(ctx, 0, NULL, &err), &err, "hash_retrieve(no round)");

	/* The chunk survives invalid retrieves: matches 3..5 are (2,2),(3,1),(3,3) */
	if (Expect(k->hash_retrieve(ctx, 3, &round, &err), GJ_OK, &err, "hash_retrieve(3)"))
	{
		if (round.nmatches != 3 ||
			round.outer_rows[0] != 2 || round.inner_rows[0] != 2 ||
			round.outer_rows[1] != 3 || round.inner_rows[1] != 1 ||
			round.outer_rows[2] != 3 || round.inner_rows[2] != 3)
			Failf("hash_retrieve(3) after invalid calls gave the wrong matches");
	}
	if (Expect(k->hash_retrieve(ctx, INT64_MAX, &round, &err), GJ_OK, &err,
			   "hash_retrieve(INT64_MAX)") && round.nmatches != 0)
		Failf("hash_retrieve(INT64_MAX) gave %lld matches", (long long) round.nmatches);

	/* A rebuild forgets the counted chunk */
	Expect(k->hash_build(ctx, &good, &err), GJ_OK, &err, "hash_build again");
	ExpectInvalid(k->hash_retrieve(ctx, 0, &round, &err), &err, "hash_retrieve after a rebuild");

	/* A context of the other table is refused, not misread */
	if (other != NULL &&
		Expect(other->context_create(&other_ctx, 0, 3, &err), GJ_OK, &err,
			   "context_create (other table)"))
	{
		ExpectInvalid(k->hash_build(other_ctx, &good, &err), &err,
					  "hash_build on a context of the other table");
		other->context_destroy(other_ctx);
	}

	k->context_destroy(ctx);
	Report(k->name, "invalid arguments");
}

#ifdef GPUJOIN_WITH_CUDA
/*
 * A memory limit too small for the table must give GJ_ERROR_DEVICE_MEMORY,
 * leave no table behind, and let the context be destroyed
 */
static void
TestDeviceMemoryLimit(void)
{
	const int64_t limit = 4096;
	const int64_t nrows = 100000;
	uint64_t   *keys = (uint64_t *) Alloc((size_t) nrows * sizeof(uint64_t));
	GjKeyColumn inner = {keys, NULL, nrows};
	GjContext  *ctx = NULL;
	GjError		err;
	GjStats		stats;
	GjStatus	status;
	int64_t		nmatches;

	memset(&err, 0, sizeof(err));
	for (int64_t i = 0; i < nrows; i++)
		keys[i] = (uint64_t) i;

	if (Expect(gj_cuda_kernels.context_create(&ctx, limit, 1000, &err), GJ_OK,
			   &err, "context_create(limit 4096)"))
	{
		status = gj_cuda_kernels.hash_build(ctx, &inner, &err);
		if (status != GJ_ERROR_DEVICE_MEMORY)
			Failf("hash_build over the limit returned %d, expected GJ_ERROR_DEVICE_MEMORY",
				  (int) status);
		else if (err.status != status || err.message[0] == '\0')
			Failf("hash_build over the limit left no message");
		else if (verbose)
			printf("      (message: %s)\n", err.message);
		ExpectInvalid(gj_cuda_kernels.hash_count(ctx, &inner, &nmatches, &err),
					  &err, "hash_count after a failed hash_build");
		gj_cuda_kernels.context_stats(ctx, &stats);
		if (stats.device_memory_peak > limit)
			Failf("device_memory_peak %lld is over the limit of %lld",
				  (long long) stats.device_memory_peak, (long long) limit);
		gj_cuda_kernels.context_destroy(ctx);
	}
	free(keys);
	Report("cuda", "device memory limit");
}
#endif

static void
TestGenerated(int64_t large_rows)
{
	static const int64_t unique_sizes[][2] = {
		{1, 1}, {1, 5}, {2, 3}, {3, 2}, {10, 10}, {100, 1000}, {1000, 100},
		{4096, 4096}, {4097, 5000}, {65536, 100000}
	};
	static const double match_ratios[] = {0.01, 0.1, 0.25, 0.5, 1.0};
	static const double skews[] = {0.0, 0.5, 1.0, 1.5};
	static const int64_t round_sizes[] = {1, 7, 1000};
	char		names[64][96];
	int			n = 0;
	CaseSpec	spec;

	/* Unique keys, every size class, one outer row per inner row or so */
	for (size_t i = 0; i < sizeof(unique_sizes) / sizeof(unique_sizes[0]); i++)
	{
		snprintf(names[n], sizeof(names[n]), "unique %lld x %lld",
				 (long long) unique_sizes[i][0], (long long) unique_sizes[i][1]);
		spec = Spec(names[n++], unique_sizes[i][0], unique_sizes[i][1]);
		spec.max_matches = unique_sizes[i][0] < 100 ? 3 : 4096;
		RunGenerated(&spec);
	}

	/* Match ratio 1% to 100%, keys over the whole 64-bit range */
	for (size_t i = 0; i < sizeof(match_ratios) / sizeof(match_ratios[0]); i++)
	{
		snprintf(names[n], sizeof(names[n]), "match ratio %g%%, 64-bit keys",
				 match_ratios[i] * 100.0);
		spec = Spec(names[n++], 20000, 30000);
		spec.match_ratio = match_ratios[i];
		spec.keymap = KEYS_WIDE;
		spec.max_matches = 5000;
		RunGenerated(&spec);
	}

	/* Zipf skew on both sides: many-to-many, the hot keys are the same */
	for (size_t i = 0; i < sizeof(skews) / sizeof(skews[0]); i++)
	{
		snprintf(names[n], sizeof(names[n]), "zipf %.1f both sides", skews[i]);
		spec = Spec(names[n++], 4000, 4000);
		spec.domain = 4000;
		spec.inner_skew = skews[i];
		spec.outer_skew = skews[i];
		spec.match_ratio = 0.9;
		spec.max_matches = 100000;
		RunGenerated(&spec);

		snprintf(names[n], sizeof(names[n]), "zipf %.1f inner, uniform outer", skews[i]);
		spec = Spec(names[n++], 50000, 20000);
		spec.domain = 10000;
		spec.inner_skew = skews[i];
		spec.keymap = KEYS_WIDE;
		spec.max_matches = 65536;
		RunGenerated(&spec);
	}

	spec = Spec("many-to-many duplicates, 2 chunks", 20000, 20000);
	spec.domain = 2000;
	spec.nchunks = 2;
	spec.max_matches = 50000;
	RunGenerated(&spec);

	/* Distinct keys crowded into three buckets, misses in the same buckets */
	spec = Spec("bucket collisions", 600, 2000);
	spec.domain = 300;
	spec.keymap = KEYS_COLLIDE;
	spec.match_ratio = 0.5;
	spec.max_matches = 777;
	RunGenerated(&spec);

	spec = Spec("bucket collisions, unique", 512, 512);
	spec.keymap = KEYS_COLLIDE;
	spec.match_ratio = 0.5;
	RunGenerated(&spec);

	/* NULL keys */
	spec = Spec("NULLs on both sides", 10000, 10000);
	spec.domain = 3000;
	spec.keymap = KEYS_WIDE;
	spec.inner_null_share = 0.3;
	spec.outer_null_share = 0.3;
	RunGenerated(&spec);

	spec = Spec("NULL arrays without NULLs", 5000, 5000);
	spec.inner_null_array = true;
	spec.outer_null_array = true;
	RunGenerated(&spec);

	spec = Spec("inner all NULL", 3000, 3000);
	spec.inner_null_share = 1.0;
	RunGenerated(&spec);

	spec = Spec("outer all NULL", 3000, 3000);
	spec.outer_null_share = 1.0;
	RunGenerated(&spec);

	/* Empty sides, no matches */
	spec = Spec("empty inner", 0, 1000);
	RunGenerated(&spec);

	spec = Spec("empty outer", 1000, 0);
	spec.nchunks = 2;
	RunGenerated(&spec);

	spec = Spec("both empty", 0, 0);
	RunGenerated(&spec);

	spec = Spec("no matches", 10000, 10000);
	spec.match_ratio = 0.0;
	spec.keymap = KEYS_WIDE;
	RunGenerated(&spec);

	/* Small rounds: many retrieve calls per chunk */
	for (size_t i = 0; i < sizeof(round_sizes) / sizeof(round_sizes[0]); i++)
	{
		snprintf(names[n], sizeof(names[n]), "rounds of %lld",
				 (long long) round_sizes[i]);
		spec = Spec(names[n++], 2000, 2500);
		spec.domain = 1500;
		spec.inner_null_share = 0.1;
		spec.max_matches = round_sizes[i];
		RunGenerated(&spec);
	}

	/* Several chunks against one build, and a rebuild on one context */
	spec = Spec("8 outer chunks", 10000, 3000);
	spec.domain = 5000;
	spec.nchunks = 8;
	spec.outer_null_share = 0.05;
	RunGenerated(&spec);

	spec = Spec("rebuild on one context", 10000, 4000);
	spec.domain = 8000;
	spec.nchunks = 3;
	spec.rebuild = true;
	spec.keymap = KEYS_WIDE;
	RunGenerated(&spec);

	/* Large: 2M rows by default, GJ_TEST_LARGE_ROWS on a GPU host */
	snprintf(names[n], sizeof(names[n]),
			 "large: %lld unique x 2 chunks of %lld, 64-bit keys",
			 (long long) large_rows, (long long) (large_rows / 2));
	spec = Spec(names[n++], large_rows, large_rows / 2);
	spec.nchunks = 2;
	spec.match_ratio = 0.5;
	spec.keymap = KEYS_WIDE;
	spec.max_matches = 1 << 20;
	RunGenerated(&spec);

	snprintf(names[n], sizeof(names[n]),
			 "large: %lld duplicates x %lld, under a limit of 64 bytes a row",
			 (long long) large_rows, (long long) (large_rows / 2));
	spec = Spec(names[n++], large_rows, large_rows / 2);
	spec.domain = large_rows / 2;
	spec.inner_null_share = 0.01;
	spec.max_matches = 300000;
	spec.memory_limit = 64 * large_rows;
	RunGenerated(&spec);
}

int
main(void)
{
	const char *require = getenv("GJ_REQUIRE_GPU");
	const char *verbose_env = getenv("GJ_TEST_VERBOSE");
	const char *large_env = getenv("GJ_TEST_LARGE_ROWS");
	int64_t		large_rows = 2000000;
	bool		require_gpu = require != NULL && strcmp(require, "1") == 0;
	double		start = gj_clock_ms();

	verbose = verbose_env != NULL && strcmp(verbose_env, "1") == 0;
	if (large_env != NULL && atoll(large_env) >= 2)
		large_rows = atoll(large_env);

#ifdef GPUJOIN_WITH_CUDA
	{
		GjError		err;
		GjDeviceInfo info;

		memset(&err, 0, sizeof(err));
		if (gj_cuda_device_count(&err) > 0 &&
			gj_cuda_device_info(0, &info, &err) == GJ_OK)
		{
			have_cuda = true;
			printf("CUDA device 0: %s, compute capability %d.%d, %d multiprocessors, %lld MB free, driver %d, runtime %d\n",
				   info.name, info.cc_major, info.cc_minor, info.multiprocessors,
				   (long long) (info.free_memory >> 20), info.driver_version,
				   info.runtime_version);
		}
		else
			printf("no CUDA device (%s): skipping the CUDA comparisons\n", err.message);
	}
#else
	printf("built without CUDA: skipping the CUDA comparisons\n");
#endif
	if (require_gpu && !have_cuda)
	{
		Failf("GJ_REQUIRE_GPU=1, but no CUDA device is usable");
		Report("cuda", "device present");
	}

	TestHandWritten();
	TestInvalidArguments(&gj_cpu_kernels, NULL);
#ifdef GPUJOIN_WITH_CUDA
	if (have_cuda)
	{
		TestInvalidArguments(&gj_cuda_kernels, &gj_cpu_kernels);
		TestDeviceMemoryLimit();
	}
#endif
	TestGenerated(large_rows);

	if (verbose)
		printf("%.1f s\n", (gj_clock_ms() - start) / 1000.0);
	printf("%d passed, %d failed\n", tests_passed, tests_failed);
	return tests_failed > 0 ? 1 : 0;
}
