/*-------------------------------------------------------------------------
 *
 * test_kernels.c
 *	  Kernel tests outside PostgreSQL (make -C cuda check)
 *
 * Each case is an inner side and one or more outer chunks, generated from
 * a fixed seed: keys (unique, duplicated, Zipf-skewed, over the whole
 * 64-bit range or packed into a dense range, with NULLs) and 0 to 8
 * fixed-width payload columns a side, of widths 1, 2, 4 and 8, with and
 * without NULL flags, holding random values.  Three answers are computed
 * for it:
 *
 *	  reference		sort the inner (key, row) pairs, then binary-search each
 *					outer key: the exact match list in the NPHJ contract's
 *					order (outer row ascending, then inner row ascending), by
 *					a method that shares nothing with the kernels; on small
 *					cases a nested loop checks the reference itself.  For
 *					SMJ the same matches sorted by (key, outer row, inner
 *					row), that contract's order; for PHJ the same matches
 *					stably reordered by their key's partition (the top
 *					gj_phj_radix_bits(inner rows) bits of gj_hash64): within
 *					a partition, PHJ keeps NPHJ's order.  The expected
 *					payload values of match m are the input columns' values
 *					at its two rows.
 *	  cpu			the CPU twin, through gj_cpu_kernels, which must equal
 *					the reference: row numbers, every value, every NULL flag
 *	  cuda			the CUDA kernels, which must equal the CPU twin array by
 *					array, element by element, when built with CUDA and a
 *					device answers
 *
 * Every case runs in the configurations {NPHJ, PHJ, SMJ} x {GFUR, GFTR} x {row
 * numbers on, off}: the materialization must not change a single output
 * byte.  Matches are taken out in rounds of max_matches, with every round
 * array poisoned before every retrieve; one extra round at a random window
 * checks that rounds do not depend on the ones before them.  Further cases
 * check the dense-key (perfect hash) layout and its edges, the invalid-
 * argument paths, PHJ partitions crowded past one shared-memory table
 * (sub-tables, many work units), and, on a GPU, the device memory limit.
 *
 * The theta cases (TestThetaHandWritten, TestThetaGenerated) run likewise
 * in {BAND, NLJ} x {GFUR, GFTR} x {row numbers on, off}, against
 * brute-force references: for BAND, each outer row's range checked
 * against every inner key, a row's matches in (key, row) order; for NLJ,
 * every pair in (outer row, inner row) order.  Their data: ranges bounded,
 * one-sided (0 or UINT64_MAX for the unbounded side), empty, points, at
 * the extremes and covering everything (a near-cross product, taken out
 * in many small rounds), skewed (one range covering everything, the
 * others tiny), NULL flags on keys and terms with values that would
 * match, 1 to 8 terms with every comparison and many equal values at the
 * boundaries.  Further: counts past 2^32 read through windows (10^10 BAND
 * matches; on a GPU 4.5 x 10^10 NLJ matches, counted in several
 * launches), the invalid theta specs and batches, and on a GPU the
 * device memory limit of both.
 *
 * Without a GPU the CUDA comparisons are skipped, with one line saying so;
 * GJ_REQUIRE_GPU=1 makes that a failure (for the GPU host).
 * GJ_TEST_VERBOSE=1 prints every case, its size and what each run cost;
 * GJ_TEST_CONFIGS=TEXT runs only the configurations whose name holds TEXT
 * (say "PHJ", for a sanitizer run on one variant's kernels; a comma-
 * separated list such as "BAND,NLJ" runs the configurations that match
 * any; the cases of no selected configuration are skipped, and the
 * special cases of a variant run when its name is selected);
 * GJ_TEST_LARGE_ROWS=N sets the inner rows of the two large cases
 * (2000000 by default); GJ_TEST_ONLY=heap_deform (or a comma-separated
 * list of joins, heap_deform, expr, agg, scan, chain) runs only those
 * groups of tests.  The last line is "N passed, N failed"; the exit
 * status is non-zero on any failure.
 *
 * IDENTIFICATION
 *	  test/kernels/test_kernels.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GPUJOIN_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#include "common.h"
#include "gpujoin_kernels.h"
#include "test_kernels.h"

#define MAX_CHUNKS		8
#define POISON_BYTE		0xA5

static int	tests_passed = 0;
static int	tests_failed = 0;
static bool verbose = false;
bool		have_cuda = false;

/* CUDA devices: a spread join's logical devices go round them */
static int	physical_devices = 1;
static const char *config_filter = NULL;	/* GJ_TEST_CONFIGS */
static const char *group_filter = NULL; /* GJ_TEST_ONLY */

/* ----------------------------------------------------------------
 *		Reporting
 * ----------------------------------------------------------------
 */

/* Why the current check failed; the first reason wins */
static char failure[512];

void
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

/* Report and Alloc for the other test files (test_kernels.h) */
void
TestReport(const char *impl, const char *name)
{
	Report(impl, name);
}

void *
TestAlloc(size_t bytes)
{
	return Alloc(bytes);
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

/* NextRandom for the other test files (test_kernels.h) */
uint64_t
TestRandom(uint64_t *state)
{
	return NextRandom(state);
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

/*
 * How a key index becomes a 64-bit key.  Indexes 0 .. domain-1 are the
 * inner side's keys; outer misses come from MissKey.
 */
typedef enum KeyMap
{
	KEYS_DENSE,					/* the index itself, like int4 keys 0, 1, ... */
	KEYS_BIASED,				/* 2^63 - domain/2 + index: normalized int keys
								 * from -domain/2 up, across the sign flip */
	KEYS_TOP,					/* the domain's last index is UINT64_MAX */
	KEYS_STRIDE,				/* index * stride: a range of stride x n
								 * values (dense up to 2n, hashed beyond) */
	KEYS_EDGE,					/* 0, 2, 4, ..., then the last index at
								 * 2n - 2 + edge_extra: a range of exactly
								 * 2n + edge_extra - 1 values */
	KEYS_WIDE,					/* 0, UINT64_MAX, 2^63, 2^63-1, then spread
								 * over the whole 64-bit range */
	KEYS_COLLIDE,				/* distinct keys crowded into three buckets */
	KEYS_CROWD					/* PHJ: three keys in four in partition 0,
								 * the hottest near the end of its buckets */
} KeyMap;

/* How a theta case draws the outer side's BAND ranges (MakeThetaOuter) */
typedef enum RangeShape
{
	RANGES_MIXED,				/* bounded, one-sided, empty, points, whole,
								 * at the extremes */
	RANGES_ALL,					/* every range [0, UINT64_MAX] */
	RANGES_SKEW					/* one row in 500 [0, UINT64_MAX], the rest
								 * points, narrow or empty */
} RangeShape;

/* How a theta case draws its NLJ terms */
typedef enum TermShape
{
	TERMS_RANDOM,				/* values from [0, term_domain) of the key map */
	TERMS_MIRROR_BAND			/* two terms, inner key GE lo and inner key LE
								 * hi: the BAND condition, as NLJ terms */
} TermShape;

/* What the inner keys must make the NPHJ build choose */
typedef enum ExpectLayout
{
	EXPECT_ANY,
	EXPECT_DENSE,
	EXPECT_HASHED,
	EXPECT_NO_KEYS
} ExpectLayout;

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
								 * domain; the rest are misses */
	KeyMap		keymap;
	int			stride;			/* KEYS_STRIDE */
	int			edge_extra;		/* KEYS_EDGE */
	double		inner_null_share;	/* share of NULL keys */
	double		outer_null_share;
	bool		inner_null_array;	/* pass a nulls array even without NULLs */
	bool		outer_null_array;
	bool		null_keys_extreme;	/* the key slots of NULL rows hold 0 and
									 * UINT64_MAX (inner), or a key that would
									 * match (outer) */
	bool		outer_unique;	/* no outer key twice in a chunk (PK-PK with
								 * a unique inner side; KEYS_DENSE and
								 * KEYS_WIDE only) */
	int			outer_ncolumns; /* payload columns of each side */
	int			inner_ncolumns;
	int32_t		outer_widths[GJ_MAX_COLUMNS];
	int32_t		inner_widths[GJ_MAX_COLUMNS];
	int64_t		max_matches;
	int64_t		memory_limit;	/* for the CUDA context; 0 = none */
	bool		rebuild;		/* build on other keys first, then rebuild */
	KeyMap		decoy_keymap;	/* ... with these keys */
	ExpectLayout expect;
	uint64_t	seed;

	/* Theta cases only (MakeThetaCase) */
	RangeShape	ranges;			/* the outer BAND ranges */
	int64_t		range_width;	/* widest bounded range, in key indexes */
	TermShape	term_shape;		/* the NLJ terms */
	int			nterms;
	GjThetaOp	ops[GJ_MAX_TERMS];
	int64_t		term_domain;	/* TERMS_RANDOM: values drawn from it */
} CaseSpec;

/* One side's batch and the arrays behind it (never copied: batch.columns points into it) */
typedef struct SideData
{
	GjBatch		batch;
	GjColumn	columns[GJ_MAX_COLUMNS];
	int			ncolumns;
	const int32_t *widths;
} SideData;

/* A case's data */
typedef struct CaseData
{
	SideData	inner;
	SideData	decoy;			/* built first when spec->rebuild */
	SideData	outer[MAX_CHUNKS];
	int			nchunks;
} CaseData;

/* Keys that share three buckets at the inner table's bucket_bits */
static uint64_t *collide_pool = NULL;
static int64_t collide_pool_size = 0;

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
	collide_pool_size = size;
	while (found < size)
	{
		uint64_t	key = NextRandom(&state);
		uint32_t	bucket = gj_bucket(key, bits);

		if (bucket == targets[found % 3])
			collide_pool[found++] = key;
	}
}

/*
 * KEYS_CROWD's pool: three keys in four in PHJ partition 0 at the inner
 * side's radix bits, so that it outgrows a shared-memory table (several
 * sub-tables) and its outer rows fill several work units; the rest
 * anywhere.  Index 0, the hottest under Zipf skew, lies in partition 0
 * with a bucket near the end (1700 .. 1899 of GJ_PHJ_BUCKETS), so that
 * the run of its rows starts late in the partition, across a sub-table
 * boundary when the partition is large.
 */
static void
MakeCrowdPool(int64_t size, int64_t inner_rows, uint64_t seed)
{
	int			bits = gj_phj_radix_bits(inner_rows);
	uint64_t	state = seed;

	collide_pool = (uint64_t *) Alloc((size_t) size * sizeof(uint64_t));
	collide_pool_size = size;
	for (int64_t i = 0; i < size; i++)
	{
		uint64_t	key;

		do
			key = NextRandom(&state);
		while ((i % 4 != 3 && gj_phj_partition(key, bits) != 0) ||
			   (i == 0 && (gj_phj_bucket(key, bits) < 1700 ||
						   gj_phj_bucket(key, bits) >= 1900)));
		collide_pool[i] = key;
	}
}

/* The key of index (0 .. domain-1 for the inner side) */
static uint64_t
KeyOf(const CaseSpec *spec, KeyMap keymap, int64_t domain, int64_t index)
{
	static const uint64_t special[] = {
		0, UINT64_MAX, UINT64_C(1) << 63, (UINT64_C(1) << 63) - 1
	};
	uint64_t	state;

	switch (keymap)
	{
		case KEYS_DENSE:
			return (uint64_t) index;
		case KEYS_BIASED:
			return (UINT64_C(1) << 63) - (uint64_t) (domain / 2) + (uint64_t) index;
		case KEYS_TOP:
			return UINT64_MAX - (uint64_t) (domain - 1) + (uint64_t) index;
		case KEYS_STRIDE:
			return (uint64_t) index * (uint64_t) spec->stride;
		case KEYS_EDGE:
			if (index < domain - 1)
				return (uint64_t) index * 2;
			return (uint64_t) index * 2 + (uint64_t) spec->edge_extra;
		case KEYS_WIDE:
			if (index >= 0 && index < 4)
				return special[index];
			state = (uint64_t) index * UINT64_C(0x2545F4914F6CDD1D);
			return NextRandom(&state);
		case KEYS_COLLIDE:
		case KEYS_CROWD:
			return collide_pool[index % collide_pool_size];
	}
	return 0;
}

/*
 * A key that (almost certainly) matches nothing: beyond the domain on
 * either side where the key map has sides, so that dense tables see outer
 * keys below their minimum and above their maximum (and, for KEYS_DENSE
 * and KEYS_TOP, keys that wrap around 2^64), or in the gaps of a strided
 * range
 */
static uint64_t
MissKey(const CaseSpec *spec, KeyMap keymap, int64_t domain, uint64_t *state)
{
	int64_t		r = RandomBelow(state, domain);
	bool		below = RandomBelow(state, 2) == 0;

	switch (keymap)
	{
		case KEYS_DENSE:
		case KEYS_BIASED:
		case KEYS_TOP:
			return KeyOf(spec, keymap, domain, below ? -1 - r : domain + r);
		case KEYS_STRIDE:
			return (uint64_t) r * (uint64_t) spec->stride + 1;
		case KEYS_EDGE:
			return below ? (uint64_t) (r % (domain > 1 ? domain - 1 : 1)) * 2 + 1 :
				(uint64_t) (domain + r) * 2 + 7;
		case KEYS_WIDE:
			return KeyOf(spec, keymap, domain, domain + r);
		case KEYS_COLLIDE:
		case KEYS_CROWD:
			return collide_pool[domain + r % (collide_pool_size - domain)];
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

/*
 * Payload columns of a batch: random bytes (never all zeros, so a value
 * that was not copied shows), and per batch and column one of three: no
 * NULL flags, flags with about a quarter NULL, flags with none NULL
 */
static void
MakeColumns(SideData *side, int ncolumns, const int32_t *widths,
			uint64_t *state)
{
	int64_t		nrows = side->batch.nrows;

	side->ncolumns = ncolumns;
	side->widths = widths;
	side->batch.columns = ncolumns > 0 ? side->columns : NULL;
	for (int c = 0; c < ncolumns; c++)
	{
		size_t		bytes = (size_t) nrows * (size_t) widths[c];
		uint8_t    *values = (uint8_t *) Alloc(bytes);
		int			kind = (int) RandomBelow(state, 3);

		for (size_t i = 0; i < bytes; i += 8)
		{
			uint64_t	r = NextRandom(state) | 1;

			memcpy(values + i, &r, bytes - i < 8 ? bytes - i : 8);
		}
		side->columns[c].values = values;
		side->columns[c].nulls = kind == 0 ? NULL :
			MakeNulls(nrows, kind == 1 ? 0.25 : 0.0, true, state);
	}
}

/* The inner side (or the decoy): a permutation (unique keys) or draws from the domain */
static void
MakeInner(const CaseSpec *spec, KeyMap keymap, int64_t nrows, SideData *side,
		  uint64_t *state)
{
	uint64_t   *keys = (uint64_t *) Alloc((size_t) nrows * sizeof(uint64_t));
	int64_t		domain = spec->domain > 0 ? spec->domain : nrows;

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
			keys[i] = KeyOf(spec, keymap, domain, perm[i]);
		free(perm);
	}
	else
	{
		ZipfSampler z;

		ZipfInit(&z, spec->domain, spec->inner_skew);
		for (int64_t i = 0; i < nrows; i++)
			keys[i] = KeyOf(spec, keymap, domain, ZipfNext(&z, state));
		ZipfFree(&z);
	}
	memset(side, 0, sizeof(SideData));
	side->batch.keys = keys;
	side->batch.nrows = nrows;
	side->batch.nulls = MakeNulls(nrows, spec->inner_null_share,
								  spec->inner_null_array, state);
	for (int64_t row = 0; spec->null_keys_extreme && row < nrows; row++)
	{
		if (side->batch.nulls != NULL && side->batch.nulls[row])
			keys[row] = row % 2 ? UINT64_MAX : 0;
	}
	MakeColumns(side, spec->inner_ncolumns, spec->inner_widths, state);
}

/* An outer chunk: hits from the inner domain, misses from beyond it */
static void
MakeOuter(const CaseSpec *spec, SideData *side, uint64_t *state)
{
	int64_t		nrows = spec->outer_rows;
	int64_t		domain = spec->domain > 0 ? spec->domain : spec->inner_rows;
	uint64_t   *keys = (uint64_t *) Alloc((size_t) nrows * sizeof(uint64_t));
	ZipfSampler z;

	if (domain < 1)
		domain = 1;
	ZipfInit(&z, domain, spec->outer_skew);
	for (int64_t i = 0; i < nrows && !spec->outer_unique; i++)
	{
		if (RandomUnit(state) < spec->match_ratio)
			keys[i] = KeyOf(spec, spec->keymap, domain, ZipfNext(&z, state));
		else
			keys[i] = MissKey(spec, spec->keymap, domain, state);
	}
	ZipfFree(&z);
	if (spec->outer_unique)
	{
		/*
		 * Distinct keys: index perm[i] of a shuffled 0 .. nrows-1 is a hit
		 * (a key of the domain) below "hits", else a miss beyond the domain
		 */
		int64_t		hits = (int64_t) (spec->match_ratio * (double) (nrows < domain ? nrows : domain));
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
			keys[i] = KeyOf(spec, spec->keymap, domain,
							perm[i] < hits ? perm[i] : domain + perm[i]);
		free(perm);
	}
	memset(side, 0, sizeof(SideData));
	side->batch.keys = keys;
	side->batch.nrows = nrows;
	side->batch.nulls = MakeNulls(nrows, spec->outer_null_share,
								  spec->outer_null_array, state);
	for (int64_t row = 0; spec->null_keys_extreme && row < nrows; row++)
	{
		if (side->batch.nulls != NULL && side->batch.nulls[row])
			keys[row] = KeyOf(spec, spec->keymap, domain, 0);
	}
	MakeColumns(side, spec->outer_ncolumns, spec->outer_widths, state);
}

static void
MakeCase(const CaseSpec *spec, CaseData *data)
{
	uint64_t	state = spec->seed;
	int64_t		domain = spec->domain > 0 ? spec->domain : spec->inner_rows;

	memset(data, 0, sizeof(CaseData));
	if (spec->keymap == KEYS_COLLIDE || spec->decoy_keymap == KEYS_COLLIDE)
		MakeCollidePool(2 * (domain > 0 ? domain : 1) + 1, spec->inner_rows,
						spec->seed ^ 0x5eed);
	if (spec->keymap == KEYS_CROWD)
		MakeCrowdPool(2 * (domain > 0 ? domain : 1) + 1, spec->inner_rows,
					  spec->seed ^ 0x5eed);
	MakeInner(spec, spec->keymap, spec->inner_rows, &data->inner, &state);
	if (spec->rebuild)
		MakeInner(spec, spec->decoy_keymap, spec->inner_rows / 2 + 3,
				  &data->decoy, &state);
	data->nchunks = spec->nchunks;
	for (int c = 0; c < spec->nchunks; c++)
		MakeOuter(spec, &data->outer[c], &state);
}

static void
FreeSide(SideData *side)
{
	free((void *) side->batch.keys);
	free((void *) side->batch.nulls);
	free((void *) side->batch.keys_hi);
	for (int t = 0; t < GJ_MAX_TERMS; t++)
	{
		free((void *) side->batch.terms[t]);
		free((void *) side->batch.term_nulls[t]);
	}
	for (int c = 0; c < side->ncolumns; c++)
	{
		free((void *) side->columns[c].values);
		free((void *) side->columns[c].nulls);
	}
	memset(side, 0, sizeof(SideData));
}

static void
FreeCase(CaseData *data)
{
	FreeSide(&data->inner);
	FreeSide(&data->decoy);
	for (int c = 0; c < data->nchunks; c++)
		FreeSide(&data->outer[c]);
	free(collide_pool);
	collide_pool = NULL;
	collide_pool_size = 0;
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
IsNull(const GjBatch *batch, int64_t row)
{
	return batch->nulls != NULL && batch->nulls[row] != 0;
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
 * The expected matches of a chunk: sort the inner (key, row) pairs with
 * non-NULL keys by (key, row), then, for each outer row in order, the run
 * of equal keys gives its inner rows in ascending order.
 */
static void
ReferenceJoin(const GjBatch *inner, const GjBatch *outer, MatchList *out)
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
CheckReference(const GjBatch *inner, const GjBatch *outer,
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

/* A match with its key, for the SMJ order */
typedef struct KeyedMatch
{
	uint64_t	key;
	GjRowId		outer_row;
	GjRowId		inner_row;
} KeyedMatch;

static int
CompareKeyedMatch(const void *a, const void *b)
{
	const KeyedMatch *x = (const KeyedMatch *) a;
	const KeyedMatch *y = (const KeyedMatch *) b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->outer_row != y->outer_row)
		return x->outer_row < y->outer_row ? -1 : 1;
	if (x->inner_row != y->inner_row)
		return x->inner_row < y->inner_row ? -1 : 1;
	return 0;
}

/*
 * The expected matches in the SMJ contract's order: by key (unsigned),
 * then outer row, then inner row.  The same matches as the reference's,
 * sorted by that triple, which no two matches share (so qsort, unstable,
 * cannot reorder equals).
 */
static void
ReferenceSmjOrder(const GjBatch *outer, const MatchList *ref, MatchList *out)
{
	KeyedMatch *keyed = (KeyedMatch *) Alloc((size_t) ref->nmatches * sizeof(KeyedMatch));

	for (int64_t m = 0; m < ref->nmatches; m++)
	{
		keyed[m].key = outer->keys[ref->outer_rows[m]];
		keyed[m].outer_row = ref->outer_rows[m];
		keyed[m].inner_row = ref->inner_rows[m];
	}
	qsort(keyed, (size_t) ref->nmatches, sizeof(KeyedMatch), CompareKeyedMatch);
	out->nmatches = ref->nmatches;
	out->outer_rows = (GjRowId *) Alloc((size_t) ref->nmatches * sizeof(GjRowId));
	out->inner_rows = (GjRowId *) Alloc((size_t) ref->nmatches * sizeof(GjRowId));
	for (int64_t m = 0; m < ref->nmatches; m++)
	{
		out->outer_rows[m] = keyed[m].outer_row;
		out->inner_rows[m] = keyed[m].inner_row;
	}
	free(keyed);
}

/*
 * The expected matches in the PHJ contract's order: by partition, the top
 * gj_phj_radix_bits(inner rows) bits of the key's gj_hash64, then outer
 * row, then inner row.  Within a partition that is the reference's own
 * order, so a stable counting sort of its matches by partition gives it.
 */
static void
ReferencePhjOrder(const GjBatch *inner, const GjBatch *outer,
				  const MatchList *ref, MatchList *out)
{
	int			bits = gj_phj_radix_bits(inner->nrows);
	int64_t		npartitions = (int64_t) 1 << bits;
	int64_t    *next = (int64_t *) Alloc((size_t) (npartitions + 1) * sizeof(int64_t));
	uint32_t   *partition = (uint32_t *) Alloc((size_t) ref->nmatches * sizeof(uint32_t));

	memset(next, 0, (size_t) (npartitions + 1) * sizeof(int64_t));
	for (int64_t m = 0; m < ref->nmatches; m++)
	{
		uint64_t	hash = gj_hash64(outer->keys[ref->outer_rows[m]]);

		partition[m] = bits == 0 ? 0 : (uint32_t) (hash >> (64 - bits));
		next[partition[m] + 1]++;
	}
	for (int64_t p = 0; p < npartitions; p++)
		next[p + 1] += next[p];
	out->nmatches = ref->nmatches;
	out->outer_rows = (GjRowId *) Alloc((size_t) ref->nmatches * sizeof(GjRowId));
	out->inner_rows = (GjRowId *) Alloc((size_t) ref->nmatches * sizeof(GjRowId));
	for (int64_t m = 0; m < ref->nmatches; m++)
	{
		int64_t		k = next[partition[m]]++;

		out->outer_rows[k] = ref->outer_rows[m];
		out->inner_rows[k] = ref->inner_rows[m];
	}
	free(partition);
	free(next);
}

/*
 * What a PHJ build must say in GjStats.detail, worked out here from the
 * inner keys: its radix bits, and the partitions with more non-NULL keys
 * than one shared-memory table holds (the wording is checked by
 * TestPhjRules)
 */
static void
ExpectedPhjDetail(const GjBatch *inner, char *buf, size_t size)
{
	int			bits = gj_phj_radix_bits(inner->nrows);
	int64_t		npartitions = (int64_t) 1 << bits;
	int64_t    *sizes = (int64_t *) Alloc((size_t) npartitions * sizeof(int64_t));
	int64_t		nkeys = 0;
	int64_t		oversized = 0;

	memset(sizes, 0, (size_t) npartitions * sizeof(int64_t));
	for (int64_t row = 0; row < inner->nrows; row++)
	{
		if (IsNull(inner, row))
			continue;
		nkeys++;
		sizes[bits == 0 ? 0 : gj_hash64(inner->keys[row]) >> (64 - bits)]++;
	}
	for (int64_t p = 0; p < npartitions; p++)
		oversized += sizes[p] > GJ_PHJ_TABLE_ROWS;
	gj_phj_describe(bits, nkeys, oversized, buf, size);
	free(sizes);
}

/*
 * The layout the NPHJ contract implies for an inner side, worked out here
 * from the rule in gpujoin_kernels.h and common.h rather than by calling
 * it: dense when the non-NULL keys span at most 2 x rows (and 2^31) values
 */
static ExpectLayout
ExpectedLayout(const GjBatch *inner)
{
	uint64_t	lo = UINT64_MAX;
	uint64_t	hi = 0;
	bool		any = false;

	for (int64_t row = 0; row < inner->nrows; row++)
	{
		if (IsNull(inner, row))
			continue;
		any = true;
		lo = inner->keys[row] < lo ? inner->keys[row] : lo;
		hi = inner->keys[row] > hi ? inner->keys[row] : hi;
	}
	if (!any)
		return EXPECT_NO_KEYS;
	if (hi - lo + 1 != 0 &&
		hi - lo + 1 <= (uint64_t) (2 * inner->nrows) &&
		hi - lo + 1 <= (UINT64_C(1) << 31))
		return EXPECT_DENSE;
	return EXPECT_HASHED;
}

/* Does a GjStats.detail say what layout says? */
static bool
DetailSays(const char *detail, ExpectLayout layout)
{
	switch (layout)
	{
		case EXPECT_DENSE:
			return strncmp(detail, "dense keys", 10) == 0;
		case EXPECT_HASHED:
			return strncmp(detail, "hashed, 2^", 10) == 0;
		case EXPECT_NO_KEYS:
			return strcmp(detail, "no inner keys") == 0;
		case EXPECT_ANY:
			return detail[0] != '\0';
	}
	return false;
}

static int
CompareKeys(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/*
 * What an SMJ build must say in GjStats.detail, worked out here from the
 * inner keys: the bits below the highest one in which the smallest and
 * the largest key differ, and whether any key repeats (a BAND build sorts
 * alike, but never says unique: may_be_unique false)
 */
static void
ExpectedSmjDetail(const GjBatch *inner, bool may_be_unique, char *buf,
				  size_t size)
{
	uint64_t   *keys = (uint64_t *) Alloc((size_t) inner->nrows * sizeof(uint64_t));
	int64_t		n = 0;
	int			bits = 64;
	bool		unique = true;

	for (int64_t row = 0; row < inner->nrows; row++)
	{
		if (!IsNull(inner, row))
			keys[n++] = inner->keys[row];
	}
	qsort(keys, (size_t) n, sizeof(uint64_t), CompareKeys);
	for (int64_t i = 1; i < n; i++)
		unique = unique && keys[i] != keys[i - 1];
	unique = unique && may_be_unique;
	if (n > 0)
	{
		while (bits > 0 && ((keys[0] ^ keys[n - 1]) >> (bits - 1)) == 0)
			bits--;
	}
	if (n == 0)
		snprintf(buf, size, "no inner keys");
	else if (bits == 0)
		snprintf(buf, size, "one key value%s", unique ? ", unique inner" : "");
	else
		snprintf(buf, size, "sorted %d-bit keys%s", bits,
				 unique ? ", unique inner" : "");
	free(keys);
}

static const char *
LayoutName(ExpectLayout layout)
{
	switch (layout)
	{
		case EXPECT_DENSE:
			return "dense";
		case EXPECT_HASHED:
			return "hashed";
		case EXPECT_NO_KEYS:
			return "no keys";
		case EXPECT_ANY:
			break;
	}
	return "any";
}

/* ----------------------------------------------------------------
 *		What a run hands out
 * ----------------------------------------------------------------
 */

/*
 * The configurations every case runs in
 *
 * Each variant has its own match order (gpujoin_kernels.h gives the
 * five) and its own detail check in place of ExpectedLayout's NPHJ one:
 * ReferencePhjOrder and ExpectedPhjDetail, ReferenceSmjOrder and
 * ExpectedSmjDetail, ReferenceBand and ExpectedSmjDetail (never unique),
 * ReferenceNlj and ExpectedNljDetail.  The equi-join cases run in
 * "configs", the theta cases in "theta_configs".
 */
typedef struct Config
{
	GjVariant	variant;
	GjMaterialize materialize;
	bool		row_ids;
	const char *name;
	int			ndevices;		/* 0: one device (the lists below); 2 or
								 * more: spread (RunSpread) */
	GjSpread	spread;
} Config;

static const Config configs[] = {
	{GJ_VARIANT_NPHJ, GJ_MATERIALIZE_GFUR, true, "NPHJ-GFUR rows", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_NPHJ, GJ_MATERIALIZE_GFUR, false, "NPHJ-GFUR", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_NPHJ, GJ_MATERIALIZE_GFTR, true, "NPHJ-GFTR rows", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_NPHJ, GJ_MATERIALIZE_GFTR, false, "NPHJ-GFTR", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_PHJ, GJ_MATERIALIZE_GFUR, true, "PHJ-GFUR rows", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_PHJ, GJ_MATERIALIZE_GFUR, false, "PHJ-GFUR", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_PHJ, GJ_MATERIALIZE_GFTR, true, "PHJ-GFTR rows", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_PHJ, GJ_MATERIALIZE_GFTR, false, "PHJ-GFTR", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_SMJ, GJ_MATERIALIZE_GFUR, true, "SMJ-GFUR rows", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_SMJ, GJ_MATERIALIZE_GFUR, false, "SMJ-GFUR", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_SMJ, GJ_MATERIALIZE_GFTR, true, "SMJ-GFTR rows", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_SMJ, GJ_MATERIALIZE_GFTR, false, "SMJ-GFTR", 0, GJ_SPREAD_BROADCAST},
};

static const Config theta_configs[] = {
	{GJ_VARIANT_BAND, GJ_MATERIALIZE_GFUR, true, "BAND-GFUR rows", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_BAND, GJ_MATERIALIZE_GFUR, false, "BAND-GFUR", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_BAND, GJ_MATERIALIZE_GFTR, true, "BAND-GFTR rows", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_BAND, GJ_MATERIALIZE_GFTR, false, "BAND-GFTR", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_NLJ, GJ_MATERIALIZE_GFUR, true, "NLJ-GFUR rows", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_NLJ, GJ_MATERIALIZE_GFUR, false, "NLJ-GFUR", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_NLJ, GJ_MATERIALIZE_GFTR, true, "NLJ-GFTR rows", 0, GJ_SPREAD_BROADCAST},
	{GJ_VARIANT_NLJ, GJ_MATERIALIZE_GFTR, false, "NLJ-GFTR", 0, GJ_SPREAD_BROADCAST},
};

#define NUM_CONFIGS		((int) (sizeof(configs) / sizeof(configs[0])))
#define NUM_THETA_CONFIGS	((int) (sizeof(theta_configs) / sizeof(theta_configs[0])))

/* The spec of a case in one configuration */
static GjJoinSpec
MakeJoinSpec(const CaseSpec *spec, const Config *config)
{
	GjJoinSpec	js;

	memset(&js, 0, sizeof(js));
	js.variant = config->variant;
	js.materialize = config->materialize;
	js.outer_ncolumns = spec->outer_ncolumns;
	js.inner_ncolumns = spec->inner_ncolumns;
	memcpy(js.outer_widths, spec->outer_widths, sizeof(js.outer_widths));
	memcpy(js.inner_widths, spec->inner_widths, sizeof(js.inner_widths));
	js.row_ids = config->row_ids;
	js.max_matches = spec->max_matches;
	js.memory_limit = spec->memory_limit;
	js.nterms = spec->nterms;
	memcpy(js.ops, spec->ops, sizeof(js.ops));
	js.ndevices = config->ndevices;
	js.spread = (uint8_t) config->spread;
	for (int d = 0; d < config->ndevices; d++)
		js.devices[d] = d % physical_devices;
	return js;
}

/*
 * Every array of a round or of a run's output, in one order: the two row
 * arrays (when there), then per side and column its values and its NULL
 * flags (when there).  elem is an element's size.
 */
#define MAX_ARRAYS		(2 + 4 * GJ_MAX_COLUMNS)

typedef struct ArrayView
{
	int			n;
	uint8_t    *ptr[MAX_ARRAYS];
	size_t		elem[MAX_ARRAYS];
	char		what[MAX_ARRAYS][40];
} ArrayView;

static void
ViewAdd(ArrayView *view, const void *ptr, size_t elem, const char *fmt,...)
GJ_PRINTF_LIKE(4, 5);

static void
ViewAdd(ArrayView *view, const void *ptr, size_t elem, const char *fmt,...)
{
	va_list		args;

	if (ptr == NULL)
		return;
	view->ptr[view->n] = (uint8_t *) ptr;
	view->elem[view->n] = elem;
	va_start(args, fmt);
	vsnprintf(view->what[view->n], sizeof(view->what[0]), fmt, args);
	va_end(args);
	view->n++;
}

/* The arrays of a round (casting away const: the test knows they are writable) */
static void
ViewRound(const GjMatchRound *round, const GjJoinSpec *js, ArrayView *view)
{
	view->n = 0;
	ViewAdd(view, round->outer_rows, sizeof(GjRowId), "outer rows");
	ViewAdd(view, round->inner_rows, sizeof(GjRowId), "inner rows");
	for (int c = 0; c < js->outer_ncolumns; c++)
	{
		ViewAdd(view, round->outer_values[c], (size_t) js->outer_widths[c],
				"outer column %d", c);
		ViewAdd(view, round->outer_nulls[c], 1, "outer column %d NULLs", c);
	}
	for (int c = 0; c < js->inner_ncolumns; c++)
	{
		ViewAdd(view, round->inner_values[c], (size_t) js->inner_widths[c],
				"inner column %d", c);
		ViewAdd(view, round->inner_nulls[c], 1, "inner column %d NULLs", c);
	}
}

/* Everything a run handed out for one chunk, rounds put together */
typedef struct Output
{
	int64_t		nmatches;
	GjMatchRound shape;			/* where each array is: non-NULL pointers
								 * to the arrays below */
} Output;

/* Allocate the arrays of out in the shape of a round */
static void
OutputAlloc(Output *out, const GjMatchRound *round, const GjJoinSpec *js,
			int64_t nmatches)
{
	memset(out, 0, sizeof(Output));
	out->nmatches = nmatches;
	/* the same shape, own arrays: one allocation per array of the round */
#define OWN(field) \
	out->shape.field = round->field == NULL ? NULL : Alloc((size_t) nmatches * sizeof(*round->field))
	OWN(outer_rows);
	OWN(inner_rows);
#undef OWN
	for (int c = 0; c < js->outer_ncolumns; c++)
	{
		if (round->outer_values[c] != NULL)
			out->shape.outer_values[c] = Alloc((size_t) nmatches * (size_t) js->outer_widths[c]);
		if (round->outer_nulls[c] != NULL)
			out->shape.outer_nulls[c] = (uint8_t *) Alloc((size_t) nmatches);
	}
	for (int c = 0; c < js->inner_ncolumns; c++)
	{
		if (round->inner_values[c] != NULL)
			out->shape.inner_values[c] = Alloc((size_t) nmatches * (size_t) js->inner_widths[c]);
		if (round->inner_nulls[c] != NULL)
			out->shape.inner_nulls[c] = (uint8_t *) Alloc((size_t) nmatches);
	}
}

static void
OutputFree(Output *out, const GjJoinSpec *js)
{
	ArrayView	view;

	ViewRound(&out->shape, js, &view);
	for (int i = 0; i < view.n; i++)
		free(view.ptr[i]);
	memset(out, 0, sizeof(Output));
}

/*
 * Check a run's output of one chunk against the reference: the row
 * numbers, and each payload value and NULL flag against the input columns
 * at the match's rows
 */
static void
CheckAgainstReference(int chunk, const Output *got, const MatchList *ref,
					  const GjJoinSpec *js, const SideData *outer,
					  const SideData *inner)
{
	const GjMatchRound *g = &got->shape;

	if (got->nmatches != ref->nmatches)
	{
		Failf("chunk %d: %lld matches, the reference has %lld", chunk,
			  (long long) got->nmatches, (long long) ref->nmatches);
		return;
	}
	for (int64_t m = 0; m < got->nmatches && js->row_ids; m++)
	{
		if (g->outer_rows[m] != ref->outer_rows[m] ||
			g->inner_rows[m] != ref->inner_rows[m])
		{
			Failf("chunk %d, match %lld of %lld: (outer %u, inner %u), the reference has (outer %u, inner %u)",
				  chunk, (long long) m, (long long) got->nmatches,
				  g->outer_rows[m], g->inner_rows[m],
				  ref->outer_rows[m], ref->inner_rows[m]);
			return;
		}
	}
	for (int s = 0; s < 2; s++)
	{
		const SideData *side = s == 0 ? outer : inner;
		const GjRowId *rows = s == 0 ? ref->outer_rows : ref->inner_rows;
		const void *const *values = s == 0 ? g->outer_values : g->inner_values;
		const uint8_t *const *nulls = s == 0 ? g->outer_nulls : g->inner_nulls;
		const char *name = s == 0 ? "outer" : "inner";

		for (int c = 0; c < side->ncolumns; c++)
		{
			size_t		w = (size_t) side->widths[c];
			const uint8_t *in_values = (const uint8_t *) side->columns[c].values;
			const uint8_t *in_nulls = side->columns[c].nulls;

			for (int64_t m = 0; m < got->nmatches; m++)
			{
				GjRowId		row = rows[m];

				if (memcmp((const uint8_t *) values[c] + m * w, in_values + row * w, w) != 0)
				{
					Failf("chunk %d, match %lld: %s column %d (%zu bytes) is not the value of %s row %u",
						  chunk, (long long) m, name, c, w, name, row);
					return;
				}
				if (in_nulls != NULL && nulls[c][m] != in_nulls[row])
				{
					Failf("chunk %d, match %lld: %s column %d's NULL flag is %d, %s row %u has %d",
						  chunk, (long long) m, name, c, nulls[c][m], name, row,
						  in_nulls[row]);
					return;
				}
			}
		}
	}
}

#ifdef GPUJOIN_WITH_CUDA
/* Compare two runs' outputs of one chunk, array by array, element by element */
static void
CompareOutputs(int chunk, const Output *got, const Output *expected,
			   const GjJoinSpec *js, const char *what)
{
	ArrayView	g;
	ArrayView	e;

	if (got->nmatches != expected->nmatches)
	{
		Failf("chunk %d: %lld matches, %s has %lld", chunk,
			  (long long) got->nmatches, what, (long long) expected->nmatches);
		return;
	}
	ViewRound(&got->shape, js, &g);
	ViewRound(&expected->shape, js, &e);
	if (g.n != e.n)
	{
		Failf("chunk %d: %d output arrays, %s has %d", chunk, g.n, what, e.n);
		return;
	}
	for (int i = 0; i < g.n; i++)
	{
		if (strcmp(g.what[i], e.what[i]) != 0)
		{
			Failf("chunk %d: array %d is %s, in %s %s", chunk, i, g.what[i],
				  what, e.what[i]);
			return;
		}
		for (int64_t m = 0; m < got->nmatches; m++)
		{
			if (memcmp(g.ptr[i] + m * g.elem[i], e.ptr[i] + m * e.elem[i], g.elem[i]) != 0)
			{
				Failf("chunk %d, match %lld of %lld: %s differs from %s",
					  chunk, (long long) m, (long long) got->nmatches,
					  g.what[i], what);
				return;
			}
		}
	}
}
#endif

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

/*
 * Does a round have the shape the contract promises?  Row arrays exactly
 * when js->row_ids; a value array for each payload column and none beyond;
 * a NULL array exactly for the columns whose input had NULL flags.
 */
static bool
CheckShape(const GjMatchRound *round, const GjJoinSpec *js,
		   const SideData *outer, const SideData *inner)
{
	if ((round->outer_rows != NULL) != js->row_ids ||
		(round->inner_rows != NULL) != js->row_ids)
	{
		Failf("the round's row arrays are %s, %s with row_ids %s",
			  round->outer_rows ? "there" : "NULL",
			  round->inner_rows ? "there" : "NULL", js->row_ids ? "on" : "off");
		return false;
	}
	for (int s = 0; s < 2; s++)
	{
		const SideData *side = s == 0 ? outer : inner;
		const void *const *values = s == 0 ? round->outer_values : round->inner_values;
		const uint8_t *const *nulls = s == 0 ? round->outer_nulls : round->inner_nulls;

		for (int c = 0; c < GJ_MAX_COLUMNS; c++)
		{
			bool		want_values = c < side->ncolumns;
			bool		want_nulls = c < side->ncolumns && side->columns[c].nulls != NULL;

			if ((values[c] != NULL) != want_values || (nulls[c] != NULL) != want_nulls)
			{
				Failf("the round's %s column %d has %s values and %s NULL flags, expected %s and %s",
					  s == 0 ? "outer" : "inner", c,
					  values[c] ? "" : "no", nulls[c] ? "" : "no",
					  want_values ? "values" : "none", want_nulls ? "flags" : "none");
				return false;
			}
		}
	}
	return true;
}

/* Poison every array of a round, max_matches elements each */
static void
Poison(const GjMatchRound *round, const GjJoinSpec *js)
{
	ArrayView	view;

	ViewRound(round, js, &view);
	for (int i = 0; i < view.n; i++)
		memset(view.ptr[i], POISON_BYTE, (size_t) js->max_matches * view.elem[i]);
}

/* Did a retrieve write past its round, into the poisoned rest? */
static bool
PoisonIntact(const GjMatchRound *round, const GjJoinSpec *js)
{
	ArrayView	view;

	ViewRound(round, js, &view);
	for (int i = 0; i < view.n; i++)
	{
		for (size_t b = (size_t) round->nmatches * view.elem[i];
			 b < (size_t) js->max_matches * view.elem[i]; b++)
		{
			if (view.ptr[i][b] != POISON_BYTE)
			{
				Failf("a round of %lld matches wrote past its end, into %s",
					  (long long) round->nmatches, view.what[i]);
				return false;
			}
		}
	}
	return true;
}

/* Same arrays at the same addresses?  (The poisoning relies on it.) */
static bool
SameArrays(const GjMatchRound *a, const GjMatchRound *b)
{
	return a->outer_rows == b->outer_rows && a->inner_rows == b->inner_rows &&
		memcmp(a->outer_values, b->outer_values, sizeof(a->outer_values)) == 0 &&
		memcmp(a->outer_nulls, b->outer_nulls, sizeof(a->outer_nulls)) == 0 &&
		memcmp(a->inner_values, b->inner_values, sizeof(a->inner_values)) == 0 &&
		memcmp(a->inner_nulls, b->inner_nulls, sizeof(a->inner_nulls)) == 0;
}

/*
 * Take all matches of the counted chunk out in rounds, into *out
 *
 * The round arrays are poisoned before every retrieve, so that a match
 * the kernels forgot to write shows up; the first, empty, round (at the
 * total) shows where they are.
 */
static bool
RetrieveAll(const GjKernels *k, GjContext *ctx, int64_t nmatches,
			const GjJoinSpec *js, const SideData *outer, const SideData *inner,
			Output *out, uint64_t *state)
{
	GjMatchRound round;
	GjMatchRound previous;
	ArrayView	round_view;
	ArrayView	out_view;
	GjError		err;
	int64_t		first = 0;

	memset(&err, 0, sizeof(err));
	memset(&round, 0, sizeof(round));

	/* A round past the end is empty, and shows where the arrays are */
	if (!Expect(k->retrieve(ctx, nmatches, &round, &err), GJ_OK, &err,
				"retrieve(total)"))
		return false;
	if (round.nmatches != 0)
	{
		Failf("retrieve(total) gave %lld matches", (long long) round.nmatches);
		return false;
	}
	if (!CheckShape(&round, js, outer, inner))
		return false;
	OutputAlloc(out, &round, js, nmatches);
	ViewRound(&out->shape, js, &out_view);

	while (first < nmatches)
	{
		int64_t		expected = nmatches - first < js->max_matches ? nmatches - first : js->max_matches;

		Poison(&round, js);
		previous = round;
		if (!Expect(k->retrieve(ctx, first, &round, &err), GJ_OK, &err,
					"retrieve"))
			return false;
		/* spread over devices, a round ends at a device's last match */
		if (js->ndevices > 1 ? (round.nmatches < 1 || round.nmatches > expected) :
			round.nmatches != expected)
		{
			Failf("retrieve(%lld) gave %lld matches, expected %lld",
				  (long long) first, (long long) round.nmatches,
				  (long long) expected);
			return false;
		}
		/* a spread round's arrays are its device's: they move, unpoisoned */
		if (js->ndevices <= 1 && !SameArrays(&round, &previous))
		{
			Failf("retrieve(%lld) moved the round's arrays", (long long) first);
			return false;
		}
		if (js->ndevices <= 1 && !PoisonIntact(&round, js))
			return false;
		ViewRound(&round, js, &round_view);
		for (int i = 0; i < round_view.n; i++)
			memcpy(out_view.ptr[i] + (size_t) first * out_view.elem[i],
				   round_view.ptr[i], (size_t) round.nmatches * round_view.elem[i]);
		first += round.nmatches;
	}

	/* One more round at a random window must repeat what was handed out */
	if (nmatches > 0)
	{
		int64_t		window = RandomBelow(state, nmatches);

		Poison(&round, js);
		if (!Expect(k->retrieve(ctx, window, &round, &err), GJ_OK, &err,
					"retrieve(random window)"))
			return false;
		ViewRound(&round, js, &round_view);
		for (int i = 0; i < round_view.n; i++)
		{
			if (memcmp(round_view.ptr[i],
					   out_view.ptr[i] + (size_t) window * out_view.elem[i],
					   (size_t) round.nmatches * round_view.elem[i]) != 0)
			{
				Failf("retrieve(%lld) differs from the rounds before in %s",
					  (long long) window, round_view.what[i]);
				return false;
			}
		}
	}
	return true;
}

/*
 * Run one case through one kernel table in one configuration; out[c]
 * gets chunk c's output, *stats the context's statistics.  Returns false,
 * with the failure recorded, if any call fails.
 */
static bool
RunKernels(const GjKernels *k, const CaseSpec *spec, const Config *config,
		   const CaseData *data, Output *out, GjStats *stats)
{
	GjJoinSpec	js = MakeJoinSpec(spec, config);
	GjContext  *ctx = NULL;
	GjError		err;
	uint64_t	state = spec->seed ^ 0xC0FFEE;
	bool		ok = false;

	memset(&err, 0, sizeof(err));
	memset(stats, 0, sizeof(GjStats));
	if (!Expect(k->context_create(&ctx, &js, &err), GJ_OK, &err, "context_create"))
		return false;

	if (spec->rebuild)
	{
		int64_t		nmatches = 0;
		Output		ignored;
		bool		decoy_ok;

		memset(&ignored, 0, sizeof(ignored));
		decoy_ok = Expect(k->build(ctx, &data->decoy.batch, &err), GJ_OK, &err,
						  "build(decoy)") &&
			Expect(k->count(ctx, &data->outer[0].batch, &nmatches, &err),
				   GJ_OK, &err, "count(decoy)") &&
			RetrieveAll(k, ctx, nmatches, &js, &data->outer[0], &data->decoy,
						&ignored, &state);
		OutputFree(&ignored, &js);
		if (!decoy_ok)
			goto done;
	}

	if (!Expect(k->build(ctx, &data->inner.batch, &err), GJ_OK, &err, "build"))
		goto done;
	for (int c = 0; c < data->nchunks; c++)
	{
		int64_t		nmatches = -1;

		if (!Expect(k->count(ctx, &data->outer[c].batch, &nmatches, &err),
					GJ_OK, &err, "count"))
			goto done;
		if (nmatches < 0)
		{
			Failf("count gave %lld matches", (long long) nmatches);
			goto done;
		}
		if (!RetrieveAll(k, ctx, nmatches, &js, &data->outer[c], &data->inner,
						 &out[c], &state))
			goto done;
	}
	ok = true;

done:
	k->context_stats(ctx, stats);
	k->context_destroy(ctx);
	return ok;
}

/*
 * Rows start .. end - 1 of batch b as a batch of their own (columns: its
 * columns' arrays); unless the part is the last, without the NULL flags
 * of an array where none of these rows is NULL, so that parts with and
 * without flags meet (the last keeps them: a round has the flags of a
 * column that came with them)
 */
static GjBatch
Slice(const GjBatch *b, int ncolumns, const int32_t *widths, int64_t start, int64_t end,
	  GjColumn *columns)
{
	GjBatch		part = *b;
	int64_t		n = end - start;
	bool		last = end == b->nrows;

	part.nrows = n;
	part.keys = b->keys != NULL ? b->keys + start : NULL;
	part.nulls = b->nulls != NULL && (last || memchr(b->nulls + start, 1, n) != NULL) ?
		b->nulls + start : NULL;
	for (int c = 0; c < ncolumns; c++)
	{
		const GjColumn *col = &b->columns[c];

		columns[c].values = (const char *) col->values + start * widths[c];
		columns[c].nulls = col->nulls != NULL &&
			(last || memchr(col->nulls + start, 1, n) != NULL) ? col->nulls + start : NULL;
	}
	part.columns = columns;
	return part;
}

/*
 * build_parts: the inner side in three parts (the first 40 %, none, the
 * rest), as the processes of a parallel join read it
 */
static GjStatus
BuildInParts(const GjKernels *k, GjContext *ctx, const GjJoinSpec *js, const GjBatch *inner,
			 GjError *err)
{
	GjColumn	columns[3][GJ_MAX_COLUMNS];
	GjBatch		parts[3];
	int64_t		cut = inner->nrows * 2 / 5;

	parts[0] = Slice(inner, js->inner_ncolumns, js->inner_widths, 0, cut, columns[0]);
	parts[1] = Slice(inner, js->inner_ncolumns, js->inner_widths, cut, cut, columns[1]);
	parts[2] = Slice(inner, js->inner_ncolumns, js->inner_widths, cut, inner->nrows, columns[2]);
	return k->build_parts(ctx, parts, 3, err);
}

/*
 * SHARED BUILDS: one context builds (from the inner side in parts,
 * GjKernels.build_parts), two others probe its build
 * (GjKernels.context_share; the second shares through the first), each
 * in a thread of its own, while the builder counts and retrieves chunks
 * of its own: out[c] gets chunk c's output from whichever sharer took it
 * (sharer c % 2).  Each context's chunks must be its own, whatever the
 * others do meanwhile.
 */
typedef struct SharerRun
{
	const GjKernels *k;
	GjContext  *ctx;
	const GjJoinSpec *js;
	const CaseData *data;
	Output	   *out;
	int			first_chunk;
	uint64_t	state;
	bool		ok;
} SharerRun;

static bool
ProbeChunk(const GjKernels *k, GjContext *ctx, const GjJoinSpec *js,
		   const CaseData *data, int c, Output *out, uint64_t *state)
{
	GjError		err;
	int64_t		nmatches = -1;

	memset(&err, 0, sizeof(err));
	return Expect(k->count(ctx, &data->outer[c].batch, &nmatches, &err),
				  GJ_OK, &err, "count") &&
		RetrieveAll(k, ctx, nmatches, js, &data->outer[c], &data->inner,
					out, state);
}

static void *
SharerMain(void *arg)
{
	SharerRun  *run = (SharerRun *) arg;

	run->ok = true;
	for (int c = run->first_chunk; c < run->data->nchunks && run->ok; c += 2)
		run->ok = ProbeChunk(run->k, run->ctx, run->js, run->data, c,
							 &run->out[c], &run->state);
	return NULL;
}

static bool
RunShared(const GjKernels *k, const CaseSpec *spec, const Config *config,
		  const CaseData *data, Output *out)
{
	GjJoinSpec	js = MakeJoinSpec(spec, config);
	GjContext  *owner = NULL;
	SharerRun	runs[2];
	pthread_t	threads[2];
	bool		started[2] = {false, false};
	uint64_t	state = spec->seed ^ 0xBEEF;
	GjError		err;
	bool		ok = false;

	memset(&err, 0, sizeof(err));
	memset(runs, 0, sizeof(runs));
	if (!Expect(k->context_create(&owner, &js, &err), GJ_OK, &err, "context_create") ||
		!Expect(BuildInParts(k, owner, &js, &data->inner.batch, &err), GJ_OK, &err, "build_parts"))
		goto done;
	for (int t = 0; t < 2; t++)
	{
		runs[t].k = k;
		runs[t].js = &js;
		runs[t].data = data;
		runs[t].out = out;
		runs[t].first_chunk = t;
		runs[t].state = state + (uint64_t) t;
		if (!Expect(k->context_share(&runs[t].ctx, t == 0 ? owner : runs[0].ctx, &err),
					GJ_OK, &err, "context_share"))
			goto done;
	}
	/* a sharer cannot build */
	if (!Expect(k->build(runs[1].ctx, &data->inner.batch, &err),
				GJ_ERROR_INVALID_ARGUMENT, &err, "build on a sharing context"))
		goto done;
	for (int t = 0; t < 2; t++)
		started[t] = pthread_create(&threads[t], NULL, SharerMain, &runs[t]) == 0;
	ok = started[0] && started[1];
	if (!ok)
		Failf("could not start the sharers' threads");

	/* the builder meanwhile: every chunk, last to first */
	for (int c = data->nchunks - 1; c >= 0 && ok; c--)
	{
		Output		mine;

		memset(&mine, 0, sizeof(mine));
		ok = ProbeChunk(k, owner, &js, data, c, &mine, &state);
		OutputFree(&mine, &js);
	}
	for (int t = 0; t < 2; t++)
	{
		if (started[t])
			pthread_join(threads[t], NULL);
		ok = ok && runs[t].ok;
	}

done:
	for (int t = 1; t >= 0; t--)
		k->context_destroy(runs[t].ctx);
	k->context_destroy(owner);
	return ok;
}

/* Sanity of the statistics a run left */
static void
CheckStats(const char *impl, const GjStats *stats, const CaseData *data,
		   int64_t memory_limit, ExpectLayout layout)
{
	if (stats->build_ms < 0.0 || stats->probe_ms < 0.0 ||
		stats->materialize_ms < 0.0 || stats->transfer_ms < 0.0)
		Failf("negative times in the statistics");
	if (!DetailSays(stats->detail, layout))
		Failf("the build's detail is \"%s\", expected the %s layout",
			  stats->detail, LayoutName(layout));
	if (strcmp(impl, "cpu") == 0)
	{
		if (stats->bytes_to_device != 0 || stats->bytes_from_device != 0 ||
			stats->device_memory_peak != 0)
			Failf("the CPU twin reports device traffic");
		return;
	}
	if (data->inner.batch.nrows > 0 &&
		stats->bytes_to_device < data->inner.batch.nrows * (int64_t) sizeof(uint64_t))
		Failf("bytes_to_device is %lld, less than the inner keys",
			  (long long) stats->bytes_to_device);
	if (data->inner.batch.nrows > 0 && stats->device_memory_peak <= 0)
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
	printf("      %-5s %s: build %.2f ms, probe %.2f ms, materialize %.2f ms, transfer %.2f ms (%lld bytes to, %lld from the device), device memory peak %lld bytes\n",
		   impl, stats->detail, stats->build_ms, stats->probe_ms,
		   stats->materialize_ms, stats->transfer_ms,
		   (long long) stats->bytes_to_device,
		   (long long) stats->bytes_from_device,
		   (long long) stats->device_memory_peak);
}

/*
 * Does name match one of the comma-separated alternatives of list ("BAND,NLJ"):
 * hold it (within), or equal it?
 */
static bool
InList(const char *list, const char *name, bool within)
{
	char		buf[256];
	char	   *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *alt = strtok_r(buf, ",", &save); alt != NULL;
		 alt = strtok_r(NULL, ",", &save))
	{
		if (within ? strstr(name, alt) != NULL : strcmp(name, alt) == 0)
			return true;
	}
	return false;
}

/* Is a configuration (or a variant's special case) selected by GJ_TEST_CONFIGS? */
static bool
Selected(const char *name)
{
	return config_filter == NULL || InList(config_filter, name, true);
}

/*
 * What the runs of a case must hand out, by variant: the matches of each
 * chunk in the variant's order, and the detail of its build (NULL: only
 * the NPHJ layout check, or none)
 */
typedef struct Expected
{
	const MatchList *matches[GJ_NUM_VARIANTS];
	const char *detail[GJ_NUM_VARIANTS];
	ExpectLayout layout;		/* NPHJ's */
} Expected;

/*
 * Run a case in each configuration of a list: the CPU twin against the
 * expected answer, and CUDA against the CPU twin
 */
#ifdef GPUJOIN_WITH_CUDA
/*
 * A CUDA run's output (ran: its calls all succeeded, else the failure is
 * recorded) against the CPU twin's, chunk by chunk; true when compared
 */
static bool
CompareWithCpu(bool ran, bool cpu_ok, const Output *got, const Output *cpu,
			   int nchunks, const GjJoinSpec *js)
{
	if (!ran)
		return false;
	if (!cpu_ok)
	{
		Failf("the CPU twin failed, so there is nothing to compare with");
		return false;
	}
	for (int c = 0; c < nchunks; c++)
		CompareOutputs(c, &got[c], &cpu[c], js, "the CPU twin");
	return true;
}
#endif

/*
 * SEVERAL DEVICES: the matches a spread context must hand out, in its order
 * (gpujoin_kernels.h): the reference's in the variant's order, device by
 * device (BROADCAST), or in blocks of max_matches of each device in turn
 * (PARTITION).  A match's device is its outer row's slice (BROADCAST) or
 * its key's gj_spread_device (PARTITION).  Within a device the variant's
 * order over the device's rows is the whole side's order kept (the
 * exchange keeps it), but for PHJ partitioned: its radix bits follow the
 * device's own inner rows, so its order is made afresh from the plain
 * (NPHJ) order.
 */
static void
ReferenceSpreadOrder(const GjJoinSpec *js, const GjBatch *inner,
					 const GjBatch *outer, const MatchList *ordered,
					 const MatchList *plain, MatchList *out)
{
	bool		phj_parts = js->variant == GJ_VARIANT_PHJ &&
		js->spread == GJ_SPREAD_PARTITION;
	const MatchList *from = phj_parts ? plain : ordered;
	MatchList	per_device[GJ_MAX_DEVICES];
	int64_t		block = js->spread == GJ_SPREAD_PARTITION ? js->max_matches : INT64_MAX;
	int64_t		k = 0;

	out->nmatches = from->nmatches;
	out->outer_rows = (GjRowId *) Alloc((size_t) from->nmatches * sizeof(GjRowId) + 1);
	out->inner_rows = (GjRowId *) Alloc((size_t) from->nmatches * sizeof(GjRowId) + 1);
	for (int d = 0; d < js->ndevices; d++)
	{
		int64_t		start = outer->nrows * d / js->ndevices;
		int64_t		end = outer->nrows * (d + 1) / js->ndevices;
		MatchList	mine;

		memset(&mine, 0, sizeof(mine));
		mine.outer_rows = (GjRowId *) Alloc((size_t) from->nmatches * sizeof(GjRowId) + 1);
		mine.inner_rows = (GjRowId *) Alloc((size_t) from->nmatches * sizeof(GjRowId) + 1);
		for (int64_t m = 0; m < from->nmatches; m++)
		{
			GjRowId		o = from->outer_rows[m];
			bool		here = js->spread == GJ_SPREAD_BROADCAST ?
				(o >= start && o < end) :
				gj_spread_device(outer->keys[o], js->ndevices) == d;

			if (here)
			{
				mine.outer_rows[mine.nmatches] = o;
				mine.inner_rows[mine.nmatches] = from->inner_rows[m];
				mine.nmatches++;
			}
		}
		if (phj_parts)
		{
			GjBatch		device_inner = *inner;
			MatchList	sorted;

			device_inner.nrows = 0;
			for (int64_t r = 0; r < inner->nrows; r++)
				if (!IsNull(inner, r) && gj_spread_device(inner->keys[r], js->ndevices) == d)
					device_inner.nrows++;
			ReferencePhjOrder(&device_inner, outer, &mine, &sorted);
			FreeMatches(&mine);
			mine = sorted;
		}
		per_device[d] = mine;
	}
	/* block j of each device in turn */
	for (int64_t start = 0; k < from->nmatches; start += block)
	{
		for (int d = 0; d < js->ndevices; d++)
		{
			int64_t		n = per_device[d].nmatches - start;

			if (n <= 0)
				continue;
			if (n > block)
				n = block;
			memcpy(out->outer_rows + k, per_device[d].outer_rows + start, (size_t) n * sizeof(GjRowId));
			memcpy(out->inner_rows + k, per_device[d].inner_rows + start, (size_t) n * sizeof(GjRowId));
			k += n;
		}
		if (block == INT64_MAX)
			break;
	}
	for (int d = 0; d < js->ndevices; d++)
		FreeMatches(&per_device[d]);
	if (k != from->nmatches)
		Failf("the reference's matches fall on %lld device rows, not %lld",
			  (long long) k, (long long) from->nmatches);
}

/* What a spread run's statistics must say */
static void
CheckSpreadStats(const GjStats *stats, const GjJoinSpec *js, const CaseData *data,
				 const MatchList *want, bool rebuilt)
{
	int64_t		matches = 0;
	int64_t		found = 0;
	int64_t		rows = 0;
	int64_t		least = data->inner.batch.nrows * (js->spread == GJ_SPREAD_BROADCAST ? js->ndevices : 0);

	for (int c = 0; c < data->nchunks; c++)
		matches += want[c].nmatches;
	for (int d = 0; d < GJ_MAX_DEVICES; d++)
	{
		found += stats->device_matches[d];
		rows += stats->device_rows[d];
		if (d >= js->ndevices && (stats->device_matches[d] != 0 || stats->device_rows[d] != 0))
			Failf("device %d of %d took rows", d, js->ndevices);
	}
	if (stats->ndevices != js->ndevices)
		Failf("the statistics name %d devices, not %d", stats->ndevices, js->ndevices);
	/* a case that rebuilds counted a decoy chunk first */
	if (rebuilt ? found < matches : found != matches)
		Failf("the devices found %lld matches, the reference has %lld",
			  (long long) found, (long long) matches);
	if (rows < least)
		Failf("the devices took %lld rows, fewer than %lld", (long long) rows, (long long) least);
	if (js->ndevices > 1 && stats->bytes_exchanged < 0)
		Failf("a spread exchanged %lld bytes", (long long) stats->bytes_exchanged);
	/* PARTITION's receivers count what came from another device's runs */
	if (js->spread == GJ_SPREAD_PARTITION &&
		(stats->bytes_received > 0) != (stats->bytes_exchanged > 0))
		Failf("a partitioned spread exchanged %lld bytes, its devices received %lld",
			  (long long) stats->bytes_exchanged, (long long) stats->bytes_received);
	if (js->spread == GJ_SPREAD_PARTITION && stats->bytes_received > 0 &&
		stats->exchange_copy_ms <= 0.0)
		Failf("a partitioned spread received %lld bytes in no time",
			  (long long) stats->bytes_received);
	/* BROADCAST copies the inner side; PARTITION moves a row whose key's
	 * device is not the one whose slice it is in */
	for (int64_t r = 0; r < data->inner.batch.nrows && js->ndevices > 1; r++)
	{
		const GjBatch *inner = &data->inner.batch;
		int			slice = 0;

		while (r >= inner->nrows * (slice + 1) / js->ndevices)
			slice++;
		if (js->spread == GJ_SPREAD_BROADCAST ||
			(!IsNull(inner, r) && gj_spread_device(inner->keys[r], js->ndevices) != slice))
		{
			if (stats->bytes_exchanged <= 0)
				Failf("a spread over %d devices moved inner row %lld but exchanged %lld bytes",
					  js->ndevices, (long long) r, (long long) stats->bytes_exchanged);
			break;
		}
	}
}

/* An NPHJ, GFUR, of one 8-byte column a side, rounds of max_matches */
static void
OneColumnSpec(GjJoinSpec *spec, int64_t max_matches)
{
	memset(spec, 0, sizeof(*spec));
	spec->variant = GJ_VARIANT_NPHJ;
	spec->materialize = GJ_MATERIALIZE_GFUR;
	spec->outer_ncolumns = 1;
	spec->outer_widths[0] = 8;
	spec->inner_ncolumns = 1;
	spec->inner_widths[0] = 8;
	spec->max_matches = max_matches;
}

/*
 * One device of a spread fails its count (the spec's fault_device): the
 * count returns that error, naming the device, after every device's
 * thread is done; the next count of the same context (the fault is taken
 * once) counts every match, so nothing was left half done
 */
static void
TestSpreadDeviceFault(const GjKernels *base, const char *impl, GjSpread spread, int ndevices)
{
	const int64_t nrows = 20000;
	char		name[160];
	char		device[40];
	uint64_t   *keys;
	int64_t    *values;
	GjColumn	column = {NULL, NULL};
	GjBatch		batch = {.nrows = nrows, .columns = &column};
	GjJoinSpec	spec;
	GjContext  *ctx = NULL;
	GjError		err;
	GjStatus	status;
	int64_t		nmatches = 0;

	snprintf(name, sizeof(name), "%s: device %d of %d fails its count, %s", impl,
			 ndevices - 1, ndevices, spread == GJ_SPREAD_PARTITION ? "partitioned" : "broadcast");
	if (!Selected(name))
		return;
	keys = (uint64_t *) Alloc((size_t) nrows * sizeof(uint64_t));
	values = (int64_t *) Alloc((size_t) nrows * sizeof(int64_t));
	for (int64_t i = 0; i < nrows; i++)
	{
		keys[i] = (uint64_t) (i * 7919 % nrows);
		values[i] = i;
	}
	batch.keys = keys;
	column.values = values;
	memset(&err, 0, sizeof(err));
	OneColumnSpec(&spec, 4096);
	spec.ndevices = ndevices;
	spec.spread = (uint8_t) spread;
	for (int d = 0; d < ndevices; d++)
		spec.devices[d] = d % physical_devices;
	spec.fault_device = (uint8_t) ndevices;	/* the last */
	spec.fault_status = (int8_t) GJ_ERROR_KERNEL;
	snprintf(device, sizeof(device), "Device %d of %d", ndevices - 1, ndevices);
	if (Expect(gj_spread_kernels(base)->context_create(&ctx, &spec, &err), GJ_OK, &err,
			   "context_create") &&
		Expect(gj_spread_kernels(base)->build(ctx, &batch, &err), GJ_OK, &err, "build"))
	{
		status = gj_spread_kernels(base)->count(ctx, &batch, &nmatches, &err);
		if (status != GJ_ERROR_KERNEL)
			Failf("the count returned %d, not the failing device's GJ_ERROR_KERNEL", (int) status);
		else if (strstr(err.message, device) == NULL)
			Failf("the failing device's error said \"%s\", not which device", err.message);
		else if (Expect(gj_spread_kernels(base)->count(ctx, &batch, &nmatches, &err), GJ_OK, &err,
						"the count after the failure") && nmatches != nrows)
			Failf("the count after the failure found %lld matches, not %lld",
				  (long long) nmatches, (long long) nrows);
	}
	if (ctx != NULL)
		gj_spread_kernels(base)->context_destroy(ctx);
	free(keys);
	free(values);
	Report(impl, name);
}

/* The spreads every configuration runs in: odd and even, both kinds */
static const struct
{
	int			ndevices;
	GjSpread	spread;
	const char *name;
}			spreads[] = {
	{2, GJ_SPREAD_BROADCAST, "broadcast over 2 devices"},
	{3, GJ_SPREAD_PARTITION, "partitioned over 3 devices"},
};

/*
 * A configuration spread over logical devices (gj_spread_kernels): the CPU
 * twin's spread against the reference in the spread's order, with a shared
 * build where the variant shares, and CUDA's spread against the CPU twin's
 */
static void
RunSpread(const CaseSpec *spec, CaseData *data, const Config *one,
		  const Expected *expected, const char *name)
{
	for (int i = 0; i < (int) (sizeof(spreads) / sizeof(spreads[0])); i++)
	{
		Config		config = *one;
		GjJoinSpec	js;
		MatchList	want[MAX_CHUNKS];
		Output		cpu[MAX_CHUNKS];
		GjStats		stats;
		char		spread_name[240];
		bool		cpu_ok;

		if (spreads[i].spread == GJ_SPREAD_PARTITION &&
			(one->variant == GJ_VARIANT_BAND || one->variant == GJ_VARIANT_NLJ))
			continue;
		config.ndevices = spreads[i].ndevices;
		config.spread = spreads[i].spread;
		js = MakeJoinSpec(spec, &config);
		snprintf(spread_name, sizeof(spread_name), "%s, %s", name, spreads[i].name);
		memset(want, 0, sizeof(want));
		memset(cpu, 0, sizeof(cpu));
		for (int c = 0; c < data->nchunks; c++)
			ReferenceSpreadOrder(&js, &data->inner.batch, &data->outer[c].batch,
								 &expected->matches[one->variant][c],
								 expected->matches[GJ_VARIANT_NPHJ] != NULL ?
								 &expected->matches[GJ_VARIANT_NPHJ][c] : NULL,
								 &want[c]);
		cpu_ok = RunKernels(gj_spread_kernels(&gj_cpu_kernels), spec, &config, data, cpu, &stats);
		if (cpu_ok)
		{
			for (int c = 0; c < data->nchunks; c++)
				CheckAgainstReference(c, &cpu[c], &want[c], &js,
									  &data->outer[c], &data->inner);
			CheckSpreadStats(&stats, &js, data, want, spec->rebuild);
		}
		Report("cpu", spread_name);

		if (gj_variant_shares_build(config.variant))
		{
			Output		shared[MAX_CHUNKS];
			char		shared_name[260];

			memset(shared, 0, sizeof(shared));
			snprintf(shared_name, sizeof(shared_name), "%s, shared build", spread_name);
			if (RunShared(gj_spread_kernels(&gj_cpu_kernels), spec, &config, data, shared))
			{
				for (int c = 0; c < data->nchunks; c++)
					CheckAgainstReference(c, &shared[c], &want[c], &js,
										  &data->outer[c], &data->inner);
			}
			Report("cpu", shared_name);
			for (int c = 0; c < MAX_CHUNKS; c++)
				OutputFree(&shared[c], &js);
		}

#ifdef GPUJOIN_WITH_CUDA
		if (have_cuda)
		{
			Output		gpu[MAX_CHUNKS];

			memset(gpu, 0, sizeof(gpu));
			if (CompareWithCpu(RunKernels(gj_spread_kernels(&gj_cuda_kernels), spec, &config,
										  data, gpu, &stats),
							   cpu_ok, gpu, cpu, data->nchunks, &js))
				CheckSpreadStats(&stats, &js, data, want, spec->rebuild);
			Report("cuda", spread_name);
			for (int c = 0; c < MAX_CHUNKS; c++)
				OutputFree(&gpu[c], &js);
		}
#endif
		for (int c = 0; c < MAX_CHUNKS; c++)
		{
			OutputFree(&cpu[c], &js);
			FreeMatches(&want[c]);
		}
	}
}

/* Rows 0 .. n - 1 numbered n - 1 .. 0 (GjBatch.row_numbers) */
static GjRowId *
ReversedNumbers(int64_t n)
{
	GjRowId    *numbers = (GjRowId *) Alloc((size_t) n * sizeof(GjRowId) + 1);

	for (int64_t r = 0; r < n; r++)
		numbers[r] = (GjRowId) (n - 1 - r);
	return numbers;
}

/* A part's array back in host memory: where CUDA's kernels left it, or the
 * CPU twin's host array */
static void
PartToHost(bool on_device, void *dst, const void *src, size_t bytes)
{
	if (bytes == 0)
		return;
#ifdef GPUJOIN_WITH_CUDA
	if (on_device)
	{
		cudaError_t rc = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);

		if (rc != cudaSuccess)
			Failf("copying a part back failed: %s", cudaGetErrorString(rc));
		return;
	}
#endif
	memcpy(dst, src, bytes);
}

/*
 * PARTITION's exchange alone: ndevices contexts each send their slice of
 * one side (exchange_send) and receive their part (exchange_receive).  Part
 * d must hold exactly the side's rows whose key goes to device d
 * (gj_spread_device), in the side's order, with each row's key, number
 * (its position, or the side's row_numbers), payload values of every width
 * and NULL flags where a column has them; a row with a NULL key is in no
 * part.  Many rows make every slice several of CUDA's partition tiles, the
 * last one short; few leave some slices empty.
 */
static void
TestExchange(const GjKernels *base, const char *impl, bool on_device, int ndevices,
			 int64_t nrows, bool numbered, bool null_keys)
{
	static const int32_t widths[4] = {8, 4, 2, 1};
	GjJoinSpec	spec;
	GjContext  *ctx[GJ_MAX_DEVICES];
	GjExchange	sent[GJ_MAX_DEVICES];
	GjExchange	part[GJ_MAX_DEVICES];
	GjBatch		batch;
	GjColumn	columns[4];
	uint64_t   *keys;
	uint8_t    *key_nulls = NULL;
	GjRowId    *numbers = NULL;
	uint8_t    *values[4];
	uint8_t    *nulls[4] = {NULL, NULL, NULL, NULL};
	GjError		err;
	char		name[160];
	bool		ok = true;

	snprintf(name, sizeof(name), "exchange of %lld rows over %d devices%s%s",
			 (long long) nrows, ndevices, numbered ? ", numbered" : "",
			 null_keys ? ", NULL keys" : "");
	if (!Selected(name))
		return;
	memset(ctx, 0, sizeof(ctx));
	memset(sent, 0, sizeof(sent));
	memset(part, 0, sizeof(part));
	memset(&batch, 0, sizeof(batch));
	memset(columns, 0, sizeof(columns));
	memset(&err, 0, sizeof(err));
	keys = (uint64_t *) Alloc((size_t) nrows * sizeof(uint64_t));
	for (int64_t r = 0; r < nrows; r++)
		keys[r] = (uint64_t) (r % (nrows / 3 + 1)) * UINT64_C(2654435761);
	if (null_keys)
	{
		key_nulls = (uint8_t *) Alloc((size_t) nrows);
		for (int64_t r = 0; r < nrows; r++)
			key_nulls[r] = (r % 7 == 3);
	}
	if (numbered)
		numbers = ReversedNumbers(nrows);
	for (int c = 0; c < 4; c++)
	{
		values[c] = (uint8_t *) Alloc((size_t) nrows * (size_t) widths[c]);
		for (int64_t i = 0; i < nrows * widths[c]; i++)
			values[c][i] = (uint8_t) (i * 131 + c * 17 + i / 251);
		if (c % 2 == 1)
		{
			nulls[c] = (uint8_t *) Alloc((size_t) nrows);
			for (int64_t r = 0; r < nrows; r++)
				nulls[c][r] = (r % 5 == c);
		}
		columns[c].values = values[c];
		columns[c].nulls = nulls[c];
	}
	batch.keys = keys;
	batch.nulls = key_nulls;
	batch.nrows = nrows;
	batch.columns = columns;
	batch.row_numbers = numbers;

	OneColumnSpec(&spec, 4096);
	spec.inner_ncolumns = 4;
	memcpy(spec.inner_widths, widths, sizeof(widths));
	for (int d = 0; d < ndevices && ok; d++)
	{
		GjJoinSpec	one = spec;

		one.device = d % physical_devices;
		ok = Expect(base->context_create(&ctx[d], &one, &err), GJ_OK, &err, "context_create") &&
			Expect(base->exchange_send(ctx[d], &batch, true, nrows * d / ndevices,
									   nrows * (d + 1) / ndevices, ndevices, &sent[d], &err),
				   GJ_OK, &err, "exchange_send");
	}
	for (int d = 0; d < ndevices && ok; d++)
		ok = Expect(base->exchange_receive(ctx[d], sent, ndevices, d, &part[d], &err),
					GJ_OK, &err, "exchange_receive");

	/* each part against the rows of its device, in the side's order */
	for (int d = 0; d < ndevices && ok; d++)
	{
		const GjBatch *got = &part[d].batch;
		int64_t		want = 0;
		int64_t		at = 0;
		uint64_t   *got_keys;
		GjRowId    *got_numbers;
		uint8_t    *got_values[4];
		uint8_t    *got_nulls[4];

		for (int64_t r = 0; r < nrows; r++)
			want += (key_nulls == NULL || !key_nulls[r]) &&
				gj_spread_device(keys[r], ndevices) == d;
		if (got->nrows != want)
		{
			Failf("device %d received %lld rows, not %lld", d, (long long) got->nrows,
				  (long long) want);
			break;
		}
		got_keys = (uint64_t *) Alloc((size_t) want * sizeof(uint64_t));
		got_numbers = (GjRowId *) Alloc((size_t) want * sizeof(GjRowId));
		PartToHost(on_device, got_keys, got->keys, (size_t) want * sizeof(uint64_t));
		PartToHost(on_device, got_numbers, got->row_numbers, (size_t) want * sizeof(GjRowId));
		for (int c = 0; c < 4; c++)
		{
			got_values[c] = (uint8_t *) Alloc((size_t) want * (size_t) widths[c]);
			got_nulls[c] = (uint8_t *) Alloc((size_t) want);
			PartToHost(on_device, got_values[c], got->columns[c].values,
					   (size_t) want * (size_t) widths[c]);
			if ((got->columns[c].nulls != NULL) != (nulls[c] != NULL))
				Failf("device %d's column %d %s NULL flags", d, c,
					  nulls[c] != NULL ? "lost its" : "gained");
			else if (nulls[c] != NULL)
				PartToHost(on_device, got_nulls[c], got->columns[c].nulls, (size_t) want);
		}
		for (int64_t r = 0; r < nrows && at < want; r++)
		{
			GjRowId		number = numbers != NULL ? numbers[r] : (GjRowId) r;

			if ((key_nulls != NULL && key_nulls[r]) || gj_spread_device(keys[r], ndevices) != d)
				continue;
			if (got_keys[at] != keys[r] || got_numbers[at] != number)
			{
				Failf("device %d's row %lld is key %llu number %u, not row %lld's %llu, %u",
					  d, (long long) at, (unsigned long long) got_keys[at],
					  (unsigned) got_numbers[at], (long long) r,
					  (unsigned long long) keys[r], (unsigned) number);
				break;
			}
			for (int c = 0; c < 4; c++)
				if (memcmp(got_values[c] + at * widths[c], values[c] + r * widths[c],
						   (size_t) widths[c]) != 0 ||
					(nulls[c] != NULL && got_nulls[c][at] != nulls[c][r]))
					Failf("device %d's row %lld (row %lld) has another column %d", d,
						  (long long) at, (long long) r, c);
			at++;
		}
		free(got_keys);
		free(got_numbers);
		for (int c = 0; c < 4; c++)
		{
			free(got_values[c]);
			free(got_nulls[c]);
		}
	}
	for (int d = 0; d < ndevices; d++)
	{
		base->exchange_free(&part[d]);
		base->exchange_free(&sent[d]);
		if (ctx[d] != NULL)
			base->context_destroy(ctx[d]);
	}
	free(keys);
	free(key_nulls);
	free(numbers);
	for (int c = 0; c < 4; c++)
	{
		free(values[c]);
		free(nulls[c]);
	}
	Report(impl, name);
}

/* The exchange alone, on the CPU twin and CUDA: odd, even and the most
 * devices; several tiles a slice and empty slices */
static void
TestExchanges(void)
{
	static const struct
	{
		int			ndevices;
		int64_t		nrows;
		bool		numbered;
		bool		null_keys;
	}			cases[] = {
		{2, 100003, false, false},
		{3, 100003, true, true},
		{GJ_MAX_DEVICES, 300007, false, true},
		{GJ_MAX_DEVICES, 10, true, false},
		{5, 4096 * 3, false, true},
	};

	for (int i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++)
	{
		TestExchange(&gj_cpu_kernels, "cpu", false, cases[i].ndevices, cases[i].nrows,
					 cases[i].numbered, cases[i].null_keys);
#ifdef GPUJOIN_WITH_CUDA
		if (have_cuda)
			TestExchange(&gj_cuda_kernels, "cuda", true, cases[i].ndevices, cases[i].nrows,
						 cases[i].numbered, cases[i].null_keys);
#endif
	}
}

/* A numbered run's rows turned back into positions: the same reversal */
static void
Unnumber(Output *out, int64_t outer_rows, int64_t inner_rows)
{
	for (int64_t m = 0; m < out->nmatches; m++)
	{
		GjRowId    *o = (GjRowId *) out->shape.outer_rows;
		GjRowId    *i = (GjRowId *) out->shape.inner_rows;

		o[m] = (GjRowId) (outer_rows - 1 - o[m]);
		i[m] = (GjRowId) (inner_rows - 1 - i[m]);
	}
}

/*
 * A configuration whose rounds carry row numbers, run again with every
 * batch numbering its rows backwards (GjBatch.row_numbers): the rounds
 * must report those numbers, so turned back they are the reference's
 * rows (CPU twin), and CUDA's must be the CPU twin's
 */
static void
RunNumbered(const CaseSpec *spec, CaseData *data, const Config *config,
			const MatchList *matches, const GjJoinSpec *js, const char *name)
{
	CaseData	numbered = *data;
	GjRowId    *numbers[MAX_CHUNKS + 1];
	Output		cpu[MAX_CHUNKS];
	GjStats		stats;
	char		numbered_name[200];
	bool		cpu_ok;

	snprintf(numbered_name, sizeof(numbered_name), "%s, rows numbered backwards", name);
	numbers[MAX_CHUNKS] = ReversedNumbers(data->inner.batch.nrows);
	numbered.inner.batch.row_numbers = numbers[MAX_CHUNKS];
	for (int c = 0; c < data->nchunks; c++)
	{
		numbers[c] = ReversedNumbers(data->outer[c].batch.nrows);
		numbered.outer[c].batch.row_numbers = numbers[c];
	}
	memset(cpu, 0, sizeof(cpu));
	cpu_ok = RunKernels(&gj_cpu_kernels, spec, config, &numbered, cpu, &stats);
#ifdef GPUJOIN_WITH_CUDA
	if (have_cuda)
	{
		Output		gpu[MAX_CHUNKS];

		memset(gpu, 0, sizeof(gpu));
		(void) CompareWithCpu(RunKernels(&gj_cuda_kernels, spec, config, &numbered, gpu, &stats),
							  cpu_ok, gpu, cpu, data->nchunks, js);
		Report("cuda", numbered_name);
		for (int c = 0; c < MAX_CHUNKS; c++)
			OutputFree(&gpu[c], js);
	}
#endif
	if (cpu_ok)
	{
		/* CheckAgainstReference reads positions: the numbers turned back */
		for (int c = 0; c < data->nchunks; c++)
		{
			Unnumber(&cpu[c], data->outer[c].batch.nrows, data->inner.batch.nrows);
			CheckAgainstReference(c, &cpu[c], &matches[c], js, &data->outer[c], &data->inner);
		}
	}
	Report("cpu", numbered_name);
	for (int c = 0; c < MAX_CHUNKS; c++)
		OutputFree(&cpu[c], js);
	for (int c = 0; c < data->nchunks; c++)
		free(numbers[c]);
	free(numbers[MAX_CHUNKS]);
}

static void
RunConfigs(const CaseSpec *spec, CaseData *data, const Config *list,
		   int nconfigs, const Expected *expected)
{
	char		name[160];

	for (int k = 0; k < nconfigs; k++)
	{
		const Config *config = &list[k];
		GjJoinSpec	js = MakeJoinSpec(spec, config);
		const MatchList *matches = expected->matches[config->variant];
		const char *detail = expected->detail[config->variant];
		ExpectLayout config_layout = config->variant == GJ_VARIANT_NPHJ ?
			expected->layout : EXPECT_ANY;
		Output		cpu[MAX_CHUNKS];
		GjStats		stats;
		bool		cpu_ok;

		if (!Selected(config->name))
			continue;
		memset(cpu, 0, sizeof(cpu));
		snprintf(name, sizeof(name), "%s [%s]", spec->name, config->name);
		cpu_ok = RunKernels(&gj_cpu_kernels, spec, config, data, cpu, &stats);
		if (cpu_ok)
		{
			for (int c = 0; c < data->nchunks; c++)
				CheckAgainstReference(c, &cpu[c], &matches[c], &js,
									  &data->outer[c], &data->inner);
			CheckStats("cpu", &stats, data, 0, config_layout);
			if (detail != NULL && strcmp(stats.detail, detail) != 0)
				Failf("the build's detail is \"%s\", expected \"%s\"",
					  stats.detail, detail);
			PrintStats("cpu", &stats);
		}
		Report("cpu", name);

		if (gj_variant_shares_build(config->variant))
		{
			Output		shared[MAX_CHUNKS];
			char		shared_name[200];

			memset(shared, 0, sizeof(shared));
			snprintf(shared_name, sizeof(shared_name), "%s, shared build", name);
			if (RunShared(&gj_cpu_kernels, spec, config, data, shared))
			{
				for (int c = 0; c < data->nchunks; c++)
					CheckAgainstReference(c, &shared[c], &matches[c], &js,
										  &data->outer[c], &data->inner);
			}
			Report("cpu", shared_name);
#ifdef GPUJOIN_WITH_CUDA
			if (have_cuda)
			{
				for (int c = 0; c < MAX_CHUNKS; c++)
					OutputFree(&shared[c], &js);
				(void) CompareWithCpu(RunShared(&gj_cuda_kernels, spec, config, data, shared),
									  cpu_ok, shared, cpu, data->nchunks, &js);
				Report("cuda", shared_name);
			}
#endif
			for (int c = 0; c < MAX_CHUNKS; c++)
				OutputFree(&shared[c], &js);
		}

		/* the numbers are mapped where every variant's rounds are made
		 * (materialize): two variants, a hash and a theta join, keep CI's
		 * time in bounds */
		if (js.row_ids && (config->variant == GJ_VARIANT_NPHJ ||
						   config->variant == GJ_VARIANT_BAND))
			RunNumbered(spec, data, config, matches, &js, name);

#ifdef GPUJOIN_WITH_CUDA
		if (have_cuda)
		{
			Output		gpu[MAX_CHUNKS];
			char		cpu_detail[sizeof(stats.detail)];

			memcpy(cpu_detail, stats.detail, sizeof(cpu_detail));
			memset(gpu, 0, sizeof(gpu));
			if (CompareWithCpu(RunKernels(&gj_cuda_kernels, spec, config, data, gpu, &stats),
							   cpu_ok, gpu, cpu, data->nchunks, &js))
			{
				if (strcmp(stats.detail, cpu_detail) != 0)
					Failf("the build's detail is \"%s\", the CPU twin's \"%s\"",
						  stats.detail, cpu_detail);
				CheckStats("cuda", &stats, data, spec->memory_limit, config_layout);
				PrintStats("cuda", &stats);
			}
			Report("cuda", name);
			for (int c = 0; c < MAX_CHUNKS; c++)
				OutputFree(&gpu[c], &js);
		}
#endif
		for (int c = 0; c < MAX_CHUNKS; c++)
			OutputFree(&cpu[c], &js);

		/* a case with a memory limit is about one device's memory */
		if (spec->memory_limit == 0)
			RunSpread(spec, data, config, expected, name);
	}
}

/* Is any configuration of a list selected?  (Else its cases are skipped) */
static bool
AnySelected(const Config *list, int nconfigs)
{
	for (int k = 0; k < nconfigs; k++)
	{
		if (Selected(list[k].name))
			return true;
	}
	return false;
}

/* With GJ_TEST_VERBOSE=1: what a case holds */
static void
PrintCase(const CaseSpec *spec, const CaseData *data, const MatchList *ref,
		  const char *layout)
{
	int64_t		total = 0;

	if (!verbose)
		return;
	for (int c = 0; c < data->nchunks; c++)
		total += ref[c].nmatches;
	printf("      %s: %lld inner rows, %d chunk(s) of %lld rows, %lld matches, %d + %d payload columns, %s\n",
		   spec->name, (long long) data->inner.batch.nrows, data->nchunks,
		   (long long) (data->nchunks > 0 ? data->outer[0].batch.nrows : 0),
		   (long long) total, spec->outer_ncolumns, spec->inner_ncolumns,
		   layout);
}

/*
 * Run an equi-join case: the reference; then in each configuration the
 * CPU twin against it and CUDA against the CPU twin
 */
static void
RunCase(const CaseSpec *spec, CaseData *data)
{
	MatchList	ref[MAX_CHUNKS];
	MatchList	smj_ref[MAX_CHUNKS];
	MatchList	phj_ref[MAX_CHUNKS];
	char		smj_detail[sizeof(((GjStats *) NULL)->detail)];
	char		phj_detail[sizeof(((GjStats *) NULL)->detail)];
	char		layout_name[32];
	Expected	expected;

	if (!AnySelected(configs, NUM_CONFIGS))
		return;
	memset(ref, 0, sizeof(ref));
	memset(smj_ref, 0, sizeof(smj_ref));
	memset(phj_ref, 0, sizeof(phj_ref));
	memset(&expected, 0, sizeof(expected));
	for (int c = 0; c < data->nchunks; c++)
	{
		ReferenceJoin(&data->inner.batch, &data->outer[c].batch, &ref[c]);
		CheckReference(&data->inner.batch, &data->outer[c].batch, &ref[c]);
		ReferenceSmjOrder(&data->outer[c].batch, &ref[c], &smj_ref[c]);
		ReferencePhjOrder(&data->inner.batch, &data->outer[c].batch, &ref[c],
						  &phj_ref[c]);
	}
	ExpectedSmjDetail(&data->inner.batch, true, smj_detail, sizeof(smj_detail));
	ExpectedPhjDetail(&data->inner.batch, phj_detail, sizeof(phj_detail));
	expected.layout = ExpectedLayout(&data->inner.batch);
	expected.matches[GJ_VARIANT_NPHJ] = ref;
	expected.matches[GJ_VARIANT_PHJ] = phj_ref;
	expected.matches[GJ_VARIANT_SMJ] = smj_ref;
	expected.detail[GJ_VARIANT_PHJ] = phj_detail;
	expected.detail[GJ_VARIANT_SMJ] = smj_detail;
	if (spec->expect != EXPECT_ANY && expected.layout != spec->expect)
		Failf("the inner keys call for the %s layout, the case is meant for the %s one",
			  LayoutName(expected.layout), LayoutName(spec->expect));
	Report("ref", spec->name);
	snprintf(layout_name, sizeof(layout_name), "layout %s",
			 LayoutName(expected.layout));
	PrintCase(spec, data, ref, layout_name);

	RunConfigs(spec, data, configs, NUM_CONFIGS, &expected);

	for (int c = 0; c < MAX_CHUNKS; c++)
	{
		FreeMatches(&ref[c]);
		FreeMatches(&smj_ref[c]);
		FreeMatches(&phj_ref[c]);
	}
}

static void
RunGenerated(const CaseSpec *spec)
{
	CaseData   *data = (CaseData *) Alloc(sizeof(CaseData));

	MakeCase(spec, data);
	RunCase(spec, data);
	FreeCase(data);
	free(data);
}

/* ----------------------------------------------------------------
 *		The cases
 * ----------------------------------------------------------------
 */

/*
 * Payload columns of the generated cases, (outer, inner), taken in turn
 * by Spec(): 0 to 8 a side, widths drawn from 1, 2, 4 and 8
 */
static const int column_plan[][2] = {
	{2, 3}, {0, 0}, {1, 0}, {0, 1}, {8, 8}, {3, 5}, {5, 2}, {4, 4},
	{1, 1}, {6, 0}, {0, 7}, {2, 2}
};
static int	next_column_plan = 0;

/* Give a spec ncolumns a side, of random widths (seeded by the spec) */
static void
SetColumns(CaseSpec *spec, int outer_ncolumns, int inner_ncolumns)
{
	static const int32_t widths[] = {1, 2, 4, 8};
	uint64_t	state = spec->seed ^ UINT64_C(0x77696474);

	spec->outer_ncolumns = outer_ncolumns;
	spec->inner_ncolumns = inner_ncolumns;
	memset(spec->outer_widths, 0, sizeof(spec->outer_widths));
	memset(spec->inner_widths, 0, sizeof(spec->inner_widths));
	for (int c = 0; c < outer_ncolumns; c++)
		spec->outer_widths[c] = widths[RandomBelow(&state, 4)];
	for (int c = 0; c < inner_ncolumns; c++)
		spec->inner_widths[c] = widths[RandomBelow(&state, 4)];
}

/* A spec with the defaults every case starts from */
static CaseSpec
Spec(const char *name, int64_t inner_rows, int64_t outer_rows)
{
	CaseSpec	spec;
	const int  *plan = column_plan[next_column_plan++ % (sizeof(column_plan) / sizeof(column_plan[0]))];

	memset(&spec, 0, sizeof(spec));
	spec.name = name;
	spec.inner_rows = inner_rows;
	spec.outer_rows = outer_rows;
	spec.nchunks = 1;
	spec.match_ratio = 1.0;
	spec.keymap = KEYS_DENSE;
	spec.decoy_keymap = KEYS_DENSE;
	spec.stride = 1;
	spec.max_matches = 1000;
	spec.expect = EXPECT_ANY;
	spec.seed = UINT64_C(0x6770756a6f696e) ^ (uint64_t) inner_rows * 31 ^ (uint64_t) outer_rows;
	for (const char *p = name; *p != '\0'; p++)
		spec.seed = spec.seed * 131 + (uint64_t) (unsigned char) *p;
	SetColumns(&spec, plan[0], plan[1]);
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
	static const int32_t inner_values[] = {10, 11, 12, 13, 14, 15, 16};
	static const uint8_t inner_value_nulls[] = {0, 0, 1, 0, 0, 0, 0};
	static const uint64_t outer_keys[] = {5, 5, 0, 8, UINT64_MAX, 7, 5};
	static const uint8_t outer_nulls[] = {0, 1, 0, 0, 0, 0, 0};
	static const int16_t outer_values[] = {100, 101, 102, 103, 104, 105, 106};
	static const GjRowId expected_outer[] = {0, 0, 0, 2, 4, 5, 6, 6, 6};
	static const GjRowId expected_inner[] = {0, 2, 6, 4, 5, 1, 0, 2, 6};
	/* SMJ: keys 0, 5, 5, 5, 5, 5, 5, 7, UINT64_MAX (unsigned order) */
	static const GjRowId expected_smj_outer[] = {2, 0, 0, 0, 6, 6, 6, 5, 4};
	static const GjRowId expected_smj_inner[] = {4, 0, 2, 6, 0, 2, 6, 1, 5};
	CaseSpec	spec = Spec("hand-written 7 x 7", 7, 7);
	CaseData   *data = (CaseData *) Alloc(sizeof(CaseData));
	MatchList	expected;
	MatchList	ref;
	MatchList	smj_ref;

	memset(data, 0, sizeof(CaseData));
	spec.outer_ncolumns = 1;
	spec.outer_widths[0] = 2;
	spec.inner_ncolumns = 1;
	spec.inner_widths[0] = 4;
	spec.max_matches = 2;

	data->inner.batch.keys = inner_keys;
	data->inner.batch.nulls = inner_nulls;
	data->inner.batch.nrows = 7;
	data->inner.batch.columns = data->inner.columns;
	data->inner.columns[0].values = inner_values;
	data->inner.columns[0].nulls = inner_value_nulls;
	data->inner.ncolumns = 1;
	data->inner.widths = spec.inner_widths;
	data->outer[0].batch.keys = outer_keys;
	data->outer[0].batch.nulls = outer_nulls;
	data->outer[0].batch.nrows = 7;
	data->outer[0].batch.columns = data->outer[0].columns;
	data->outer[0].columns[0].values = outer_values;
	data->outer[0].ncolumns = 1;
	data->outer[0].widths = spec.outer_widths;
	data->nchunks = 1;

	/* The reference must agree with the answer written here */
	expected.nmatches = 9;
	expected.outer_rows = (GjRowId *) expected_outer;
	expected.inner_rows = (GjRowId *) expected_inner;
	ReferenceJoin(&data->inner.batch, &data->outer[0].batch, &ref);
	if (ref.nmatches != expected.nmatches ||
		memcmp(ref.outer_rows, expected_outer, sizeof(expected_outer)) != 0 ||
		memcmp(ref.inner_rows, expected_inner, sizeof(expected_inner)) != 0)
		Failf("the reference disagrees with the hand-written answer");
	ReferenceSmjOrder(&data->outer[0].batch, &ref, &smj_ref);
	if (smj_ref.nmatches != expected.nmatches ||
		memcmp(smj_ref.outer_rows, expected_smj_outer, sizeof(expected_smj_outer)) != 0 ||
		memcmp(smj_ref.inner_rows, expected_smj_inner, sizeof(expected_smj_inner)) != 0)
		Failf("the SMJ reference disagrees with the hand-written answer");
	FreeMatches(&ref);
	FreeMatches(&smj_ref);
	Report("ref", "hand-written answer");

	spec.expect = EXPECT_HASHED;
	RunCase(&spec, data);
	free(data);
}

/*
 * PHJ's radix bits (common.h), which its match order depends on, and how
 * a build describes them, against numbers written out here: at most 2048
 * inner rows an average partition (half a shared-memory table), at most
 * 16 bits, passes of at most 8 bits
 */
static void
TestPhjRules(void)
{
	static const struct
	{
		int64_t		rows;
		int			bits;
	}			rules[] = {
		{0, 0}, {1, 0}, {2048, 0}, {2049, 1}, {4096, 1}, {4097, 2},
		{2000000, 10}, {10000000, 13}, {(int64_t) 2048 << 15, 15},
		{((int64_t) 2048 << 15) + 1, 16}, {GJ_MAX_ROWS, 16}
	};
	static const struct
	{
		int			bits;
		int64_t		oversized;
		const char *text;
	}			words[] = {
		{0, 0, "one partition"}, {5, 0, "radix bits 1x5"},
		{8, 1, "radix bits 1x8, 1 oversized partition"},
		{10, 0, "radix bits 2x5"}, {13, 0, "radix bits 7+6"},
		{15, 2, "radix bits 8+7, 2 oversized partitions"},
		{16, 0, "radix bits 2x8"}
	};
	char		buf[sizeof(((GjStats *) NULL)->detail)];

	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
	{
		if (gj_phj_radix_bits(rules[i].rows) != rules[i].bits)
			Failf("gj_phj_radix_bits(%lld) is %d, expected %d",
				  (long long) rules[i].rows, gj_phj_radix_bits(rules[i].rows),
				  rules[i].bits);
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
	{
		gj_phj_describe(words[i].bits, 100, words[i].oversized, buf, sizeof(buf));
		if (strcmp(buf, words[i].text) != 0)
			Failf("radix bits %d are described as \"%s\", expected \"%s\"",
				  words[i].bits, buf, words[i].text);
	}
	gj_phj_describe(7, 0, 0, buf, sizeof(buf));
	if (strcmp(buf, "no inner keys") != 0)
		Failf("a build without keys is described as \"%s\"", buf);
	Report("ref", "PHJ radix bits and their description");
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
		Failf("%s returned %d, expected GJ_ERROR_INVALID_ARGUMENT (%s)",
			  call, (int) status, status == GJ_OK ? "" : err->message);
		return;
	}
	if (err->status != status)
		Failf("%s left err->status %d", call, (int) err->status);
	else if (err->message[0] == '\0' ||
			 err->message[strlen(err->message) - 1] != '.')
		Failf("%s left the message \"%s\"", call, err->message);
}

/* context_create(bad) must fail as invalid, and return no context */
static void
ExpectBadSpec(const GjKernels *k, const GjJoinSpec *spec, const char *what,
			  const char *message_part)
{
	GjContext  *ctx = (GjContext *) &ctx;	/* not NULL: must be reset */
	GjError		err;
	char		call[128];

	memset(&err, 0, sizeof(err));
	snprintf(call, sizeof(call), "context_create(%s)", what);
	ExpectInvalid(k->context_create(&ctx, spec, &err), &err, call);
	if (ctx != NULL)
	{
		Failf("%s returned a context", call);
		if (ctx != (GjContext *) &ctx)
			k->context_destroy(ctx);
	}
	if (message_part != NULL && strstr(err.message, message_part) == NULL)
		Failf("%s said \"%s\", not \"%s\"", call, err.message, message_part);
}

static void
TestInvalidArguments(const GjKernels *k, const GjKernels *other)
{
	static const uint64_t keys[] = {1, 2, 3, 2};
	static const int32_t inner_values[] = {10, 20, 30, 40};
	static const int64_t outer_values[] = {-1, -2, -3, -4};
	GjColumn	inner_column = {inner_values, NULL};
	GjColumn	outer_column = {outer_values, NULL};
	GjColumn	no_values = {NULL, NULL};
	GjBatch		inner = {.keys = keys, .nrows = 4, .columns = &inner_column};
	GjBatch		outer = {.keys = keys, .nrows = 4, .columns = &outer_column};
	GjBatch		too_long = {.keys = keys, .nrows = GJ_MAX_ROWS + 1, .columns = &inner_column};
	GjBatch		negative = {.keys = keys, .nrows = -1, .columns = &inner_column};
	GjBatch		no_keys = {.keys = NULL, .nrows = 4, .columns = &inner_column};
	GjBatch		no_columns = {.keys = keys, .nrows = 4, .columns = NULL};
	GjBatch		no_column_values = {.keys = keys, .nrows = 4, .columns = &no_values};
	GjJoinSpec	spec;
	GjJoinSpec	bad;
	GjContext  *ctx = NULL;
	GjContext  *other_ctx = NULL;
	GjMatchRound round;
	GjError		err;
	GjStats		stats;
	int64_t		nmatches = 0;

	memset(&err, 0, sizeof(err));
	memset(&spec, 0, sizeof(spec));
	spec.variant = GJ_VARIANT_NPHJ;
	spec.materialize = GJ_MATERIALIZE_GFTR;
	spec.outer_ncolumns = 1;
	spec.outer_widths[0] = 8;
	spec.inner_ncolumns = 1;
	spec.inner_widths[0] = 4;
	spec.row_ids = true;
	spec.max_matches = 3;

	ExpectInvalid(k->context_create(NULL, &spec, &err), &err, "context_create(NULL)");
	ExpectBadSpec(k, NULL, "no spec", NULL);
	bad = spec;
	bad.max_matches = 0;
	ExpectBadSpec(k, &bad, "max_matches 0", "max_matches");
	bad = spec;
	bad.memory_limit = -1;
	ExpectBadSpec(k, &bad, "limit -1", "limit");
	bad = spec;
	bad.variant = (GjVariant) 7;
	ExpectBadSpec(k, &bad, "variant 7", "variant");
	bad = spec;
	bad.materialize = (GjMaterialize) 5;
	ExpectBadSpec(k, &bad, "materialize 5", "materialization");
	bad = spec;
	bad.outer_ncolumns = GJ_MAX_COLUMNS + 1;
	ExpectBadSpec(k, &bad, "33 outer columns", "33 payload columns");
	bad = spec;
	bad.inner_ncolumns = -1;
	ExpectBadSpec(k, &bad, "-1 inner columns", "-1 payload columns");
	bad = spec;
	bad.inner_widths[0] = 3;
	ExpectBadSpec(k, &bad, "width 3", "3 bytes wide");
	bad = spec;
	bad.outer_widths[0] = 16;
	ExpectBadSpec(k, &bad, "width 16", "16 bytes wide");
	bad = spec;
	bad.outer_ncolumns = 2;		/* outer_widths[1] is 0 */
	ExpectBadSpec(k, &bad, "width 0", "0 bytes wide");
	bad = spec;
	bad.variant = GJ_VARIANT_PHJ;
	if (Expect(k->context_create(&ctx, &bad, &err), GJ_OK, &err, "context_create(PHJ)"))
	{
		/* a PHJ build cannot be shared */
		if (Expect(k->build(ctx, &inner, &err), GJ_OK, &err, "build(PHJ)"))
			ExpectInvalid(k->context_share(&other_ctx, ctx, &err), &err,
						  "context_share(a PHJ context)");
		k->context_destroy(ctx);
	}
	ctx = NULL;
	other_ctx = NULL;
	bad = spec;
	bad.variant = GJ_VARIANT_SMJ;
	bad.materialize = GJ_MATERIALIZE_GFUR;
	if (Expect(k->context_create(&ctx, &bad, &err), GJ_OK, &err, "context_create(SMJ)"))
		k->context_destroy(ctx);
	ctx = NULL;
	k->context_destroy(NULL);

	if (!Expect(k->context_create(&ctx, &spec, &err), GJ_OK, &err, "context_create"))
	{
		Report(k->name, "invalid arguments");
		return;
	}
	ExpectInvalid(k->context_share(&other_ctx, ctx, &err), &err, "context_share before build");
	if (other_ctx != NULL)
		Failf("context_share before build returned a context");
	ExpectInvalid(k->context_share(&other_ctx, NULL, &err), &err, "context_share(NULL)");
	ExpectInvalid(k->count(ctx, &outer, &nmatches, &err), &err, "count before build");
	ExpectInvalid(k->retrieve(ctx, 0, &round, &err), &err, "retrieve before build");
	ExpectInvalid(k->build(ctx, NULL, &err), &err, "build(NULL)");
	ExpectInvalid(k->build(ctx, &too_long, &err), &err, "build(GJ_MAX_ROWS + 1 rows)");
	ExpectInvalid(k->build(ctx, &negative, &err), &err, "build(-1 rows)");
	ExpectInvalid(k->build(ctx, &no_keys, &err), &err, "build(no keys)");
	ExpectInvalid(k->build(ctx, &no_columns, &err), &err, "build(no columns)");
	ExpectInvalid(k->build(ctx, &no_column_values, &err), &err, "build(a column without values)");
	ExpectInvalid(k->build(NULL, &inner, &err), &err, "build(NULL context)");
	ExpectInvalid(k->build_parts(ctx, &inner, 0, &err), &err, "build_parts(no parts)");
	ExpectInvalid(k->build_parts(ctx, NULL, 1, &err), &err, "build_parts(NULL)");
	{
		GjBatch		parts[2] = {inner, no_keys};

		ExpectInvalid(k->build_parts(ctx, parts, 2, &err), &err, "build_parts(a part without keys)");
		parts[1] = too_long;
		ExpectInvalid(k->build_parts(ctx, parts, 2, &err), &err, "build_parts(too many rows)");
	}

	/* After the failures, a real build and count work */
	Expect(k->build(ctx, &inner, &err), GJ_OK, &err, "build");
	k->context_stats(ctx, &stats);
	if (!DetailSays(stats.detail, EXPECT_DENSE))
		Failf("keys 1, 2, 3, 2 built \"%s\", not a dense table", stats.detail);
	ExpectInvalid(k->retrieve(ctx, 0, &round, &err), &err, "retrieve before count");
	ExpectInvalid(k->count(ctx, &too_long, &nmatches, &err), &err, "count(GJ_MAX_ROWS + 1 rows)");
	ExpectInvalid(k->count(ctx, &outer, NULL, &err), &err, "count(no nmatches)");
	ExpectInvalid(k->count(ctx, &no_columns, &nmatches, &err), &err, "count(no columns)");
	ExpectInvalid(k->retrieve(ctx, 0, &round, &err), &err, "retrieve after a failed count");

	Expect(k->count(ctx, &outer, &nmatches, &err), GJ_OK, &err, "count");
	if (nmatches != 6)
		Failf("count gave %lld matches, expected 6", (long long) nmatches);
	ExpectInvalid(k->retrieve(ctx, -1, &round, &err), &err, "retrieve(-1)");
	ExpectInvalid(k->retrieve(ctx, 0, NULL, &err), &err, "retrieve(no round)");

	/*
	 * The chunk survives invalid retrieves: matches 3..5 are (2,2), (3,1),
	 * (3,3), with outer values -3, -4, -4 and inner values 30, 20, 40
	 */
	if (Expect(k->retrieve(ctx, 3, &round, &err), GJ_OK, &err, "retrieve(3)"))
	{
		const int64_t *ov = (const int64_t *) round.outer_values[0];
		const int32_t *iv = (const int32_t *) round.inner_values[0];

		if (round.nmatches != 3 ||
			round.outer_rows[0] != 2 || round.inner_rows[0] != 2 ||
			round.outer_rows[1] != 3 || round.inner_rows[1] != 1 ||
			round.outer_rows[2] != 3 || round.inner_rows[2] != 3)
			Failf("retrieve(3) after invalid calls gave the wrong matches");
		else if (ov == NULL || iv == NULL ||
				 ov[0] != -3 || ov[1] != -4 || ov[2] != -4 ||
				 iv[0] != 30 || iv[1] != 20 || iv[2] != 40)
			Failf("retrieve(3) after invalid calls gave the wrong values");
		else if (round.outer_nulls[0] != NULL || round.inner_nulls[0] != NULL ||
				 round.outer_values[1] != NULL)
			Failf("retrieve(3) gave NULL flags for columns without them");
	}
	if (Expect(k->retrieve(ctx, INT64_MAX, &round, &err), GJ_OK, &err,
			   "retrieve(INT64_MAX)") && round.nmatches != 0)
		Failf("retrieve(INT64_MAX) gave %lld matches", (long long) round.nmatches);

	/* A rebuild forgets the counted chunk */
	Expect(k->build(ctx, &inner, &err), GJ_OK, &err, "build again");
	ExpectInvalid(k->retrieve(ctx, 0, &round, &err), &err, "retrieve after a rebuild");

	/* A context of the other table is refused, not misread */
	if (other != NULL &&
		Expect(other->context_create(&other_ctx, &spec, &err), GJ_OK, &err,
			   "context_create (other table)"))
	{
		ExpectInvalid(k->build(other_ctx, &inner, &err), &err,
					  "build on a context of the other table");
		other->context_destroy(other_ctx);
	}

	k->context_destroy(ctx);
	Report(k->name, "invalid arguments");
}

#ifdef GPUJOIN_WITH_CUDA
/*
 * A memory limit too small for the table must give GJ_ERROR_DEVICE_MEMORY
 * with the numbers, leave no table behind, and let the context be
 * destroyed; a limit that holds the table but not a large chunk must fail
 * that chunk's count alone, and take the next, smaller, chunk
 */
static void
TestDeviceMemoryLimit(GjVariant variant)
{
	const int64_t nrows = 100000;
	const int64_t big_rows = 2000000;
	uint64_t   *keys;
	int64_t    *values;
	GjColumn	column = {NULL, NULL};

	/*
	 * The same keys on both sides; BAND: ranges [k, k]; NLJ: one term,
	 * inner EQ outer: an equi-join all
	 */
	GjBatch		inner = {.nrows = nrows, .columns = &column};
	GjBatch		big = {.nrows = big_rows, .columns = &column};
	GjBatch		small = {.nrows = 1000, .columns = &column};
	GjJoinSpec	spec;
	GjContext  *ctx = NULL;
	GjMatchRound round;
	GjError		err;
	GjStats		stats;
	GjStatus	status;
	int64_t		nmatches = 0;
	char		name_build[64];
	char		name_count[64];

	snprintf(name_build, sizeof(name_build), "%s device memory limit: build",
			 gj_variant_name(variant));
	snprintf(name_count, sizeof(name_count), "%s device memory limit: count",
			 gj_variant_name(variant));
	if (!Selected(name_build))
		return;
	keys = (uint64_t *) Alloc((size_t) big_rows * sizeof(uint64_t));
	values = (int64_t *) Alloc((size_t) big_rows * sizeof(int64_t));
	column.values = values;
	inner.keys = inner.keys_hi = inner.terms[0] = keys;
	big.keys = big.keys_hi = big.terms[0] = keys;
	small.keys = small.keys_hi = small.terms[0] = keys;
	memset(&err, 0, sizeof(err));
	for (int64_t i = 0; i < big_rows; i++)
	{
		keys[i] = (uint64_t) i;
		values[i] = i * 7 + 1;
	}
	memset(&spec, 0, sizeof(spec));
	spec.variant = variant;
	spec.materialize = GJ_MATERIALIZE_GFUR;
	spec.outer_ncolumns = 1;
	spec.outer_widths[0] = 8;
	spec.inner_ncolumns = 1;
	spec.inner_widths[0] = 8;
	spec.max_matches = 1000;
	spec.nterms = 1;
	spec.ops[0] = GJ_THETA_EQ;

	/* 1. 4096 bytes: not even the keys fit */
	spec.memory_limit = 4096;
	if (Expect(gj_cuda_kernels.context_create(&ctx, &spec, &err), GJ_OK,
			   &err, "context_create(limit 4096)"))
	{
		status = gj_cuda_kernels.build(ctx, &inner, &err);
		if (status != GJ_ERROR_DEVICE_MEMORY)
			Failf("build over the limit returned %d, expected GJ_ERROR_DEVICE_MEMORY",
				  (int) status);
		else if (err.status != status || strstr(err.message, "limit of 4096 bytes") == NULL)
			Failf("build over the limit said \"%s\"", err.message);
		else if (verbose)
			printf("      (message: %s)\n", err.message);
		ExpectInvalid(gj_cuda_kernels.count(ctx, &inner, &nmatches, &err),
					  &err, "count after a failed build");
		gj_cuda_kernels.context_stats(ctx, &stats);
		if (stats.device_memory_peak > spec.memory_limit)
			Failf("device_memory_peak %lld is over the limit of %lld",
				  (long long) stats.device_memory_peak, (long long) spec.memory_limit);
		gj_cuda_kernels.context_destroy(ctx);
	}
	Report("cuda", name_build);

	/* 2. 16 MB: the table fits, a chunk of 2M rows (16 MB of keys) does not */
	spec.memory_limit = 16 << 20;
	ctx = NULL;
	if (Expect(gj_cuda_kernels.context_create(&ctx, &spec, &err), GJ_OK,
			   &err, "context_create(limit 16 MB)") &&
		Expect(gj_cuda_kernels.build(ctx, &inner, &err), GJ_OK, &err,
			   "build under 16 MB"))
	{
		status = gj_cuda_kernels.count(ctx, &big, &nmatches, &err);
		if (status != GJ_ERROR_DEVICE_MEMORY)
			Failf("count over the limit returned %d, expected GJ_ERROR_DEVICE_MEMORY",
				  (int) status);
		else if (verbose)
			printf("      (message: %s)\n", err.message);
		ExpectInvalid(gj_cuda_kernels.retrieve(ctx, 0, &round, &err), &err,
					  "retrieve after a failed count");
		if (Expect(gj_cuda_kernels.count(ctx, &small, &nmatches, &err), GJ_OK,
				   &err, "count of a small chunk after a failed one") &&
			nmatches != 1000)
			Failf("the small chunk counted %lld matches, expected 1000",
				  (long long) nmatches);
		if (Expect(gj_cuda_kernels.retrieve(ctx, 999, &round, &err), GJ_OK,
				   &err, "retrieve(999)") &&
			(round.nmatches != 1 ||
			 ((const int64_t *) round.outer_values[0])[0] !=
			 ((const int64_t *) round.inner_values[0])[0] ||
			 ((const int64_t *) round.outer_values[0])[0] % 7 != 1 ||
			 ((variant == GJ_VARIANT_NPHJ || variant == GJ_VARIANT_BAND ||
			   variant == GJ_VARIANT_NLJ) &&
			  ((const int64_t *) round.outer_values[0])[0] != 999 * 7 + 1)))
			Failf("retrieve(999) gave the wrong match");
		gj_cuda_kernels.context_stats(ctx, &stats);
		if (stats.device_memory_peak > spec.memory_limit)
			Failf("device_memory_peak %lld is over the limit of %lld",
				  (long long) stats.device_memory_peak, (long long) spec.memory_limit);
	}
	gj_cuda_kernels.context_destroy(ctx);
	free(keys);
	free(values);
	Report("cuda", name_count);
}

/*
 * The process's limit for all contexts together (gj_cuda_pool_limit, the
 * gpujoin service's pool): with one context holding a 100,000-row table, a
 * second context's 2,000,000-row build passes a 16 MB pool and gets
 * GJ_ERROR_DEVICE_MEMORY although neither context has a limit of its own;
 * the first context's build is untouched; every byte comes back to the
 * pool when the contexts go; with a larger pool the same build succeeds
 */
static void
TestPoolLimit(void)
{
	const int64_t nrows = 100000;
	const int64_t big_rows = 2000000;
	const char *name = "pool limit: all contexts together";
	uint64_t   *keys;
	int64_t    *values;
	GjColumn	column = {NULL, NULL};
	GjBatch		inner = {.nrows = nrows, .columns = &column};
	GjBatch		big = {.nrows = big_rows, .columns = &column};
	GjJoinSpec	spec;
	GjContext  *a = NULL;
	GjContext  *b = NULL;
	GjError		err;
	GjStatus	status;
	int64_t		nmatches = 0;
	size_t		held_a;

	if (!Selected(name))
		return;
	keys = (uint64_t *) Alloc((size_t) big_rows * sizeof(uint64_t));
	values = (int64_t *) Alloc((size_t) big_rows * sizeof(int64_t));
	column.values = values;
	inner.keys = keys;
	big.keys = keys;
	for (int64_t i = 0; i < big_rows; i++)
	{
		keys[i] = (uint64_t) i;
		values[i] = i;
	}
	memset(&err, 0, sizeof(err));
	OneColumnSpec(&spec, 1000);

	if (gj_cuda_pool_held() != 0)
		Failf("the pool holds %zu bytes before any context", gj_cuda_pool_held());
	gj_cuda_pool_limit(16 << 20);
	if (Expect(gj_cuda_kernels.context_create(&a, &spec, &err), GJ_OK, &err,
			   "context_create(a)") &&
		Expect(gj_cuda_kernels.build(a, &inner, &err), GJ_OK, &err,
			   "build of 100,000 rows in a 16 MB pool") &&
		Expect(gj_cuda_kernels.context_create(&b, &spec, &err), GJ_OK, &err,
			   "context_create(b)"))
	{
		held_a = gj_cuda_pool_held();
		if (held_a == 0 || held_a > (16 << 20))
			Failf("the pool holds %zu bytes with one 100,000-row table", held_a);
		status = gj_cuda_kernels.build(b, &big, &err);
		if (status != GJ_ERROR_DEVICE_MEMORY)
			Failf("a build past the pool returned %d, expected GJ_ERROR_DEVICE_MEMORY",
				  (int) status);
		else if (strstr(err.message, "for all joins together") == NULL)
			Failf("a build past the pool said \"%s\"", err.message);
		else if (verbose)
			printf("      (message: %s)\n", err.message);
		if (gj_cuda_pool_held() < held_a)
			Failf("the failed build left the pool at %zu bytes, below the first table's %zu",
				  gj_cuda_pool_held(), held_a);
		/* the first context still joins */
		if (Expect(gj_cuda_kernels.count(a, &inner, &nmatches, &err), GJ_OK,
				   &err, "count in the first context") && nmatches != nrows)
			Failf("the first context counted %lld matches, expected %lld",
				  (long long) nmatches, (long long) nrows);
	}
	gj_cuda_kernels.context_destroy(a);
	gj_cuda_kernels.context_destroy(b);
	if (gj_cuda_pool_held() != 0)
		Failf("the pool holds %zu bytes after every context went", gj_cuda_pool_held());

	/* a larger pool takes the same build */
	gj_cuda_pool_limit((size_t) 1 << 30);
	b = NULL;
	if (Expect(gj_cuda_kernels.context_create(&b, &spec, &err), GJ_OK, &err,
			   "context_create(b) in a 1 GB pool"))
		(void) Expect(gj_cuda_kernels.build(b, &big, &err), GJ_OK, &err,
					  "build of 2,000,000 rows in a 1 GB pool");
	gj_cuda_kernels.context_destroy(b);
	gj_cuda_pool_limit(0);
	if (gj_cuda_pool_held() != 0)
		Failf("the pool holds %zu bytes at the end", gj_cuda_pool_held());
	free(keys);
	free(values);
	Report("cuda", name);
}
#endif

/* ----------------------------------------------------------------
 *		Theta joins: BAND and NLJ
 * ----------------------------------------------------------------
 */

/* A malloc'ed copy of bytes bytes, or NULL for NULL */
static void *
Copy(const void *src, size_t bytes)
{
	void	   *dst;

	if (src == NULL)
		return NULL;
	dst = Alloc(bytes);
	memcpy(dst, src, bytes);
	return dst;
}

/*
 * The NLJ terms of a side
 *
 * TERMS_RANDOM: each term's values drawn from [0, term_domain) through the
 * case's key map, so that equal values on both sides, the boundaries of
 * the strict and non-strict comparisons, are frequent; every other term
 * has NULL flags, with the side's NULL share, and with null_keys_extreme
 * a NULL value is one that would match (0 inner, the domain's top outer).
 * TERMS_MIRROR_BAND: the BAND condition as two terms, inner key GE outer
 * lower bound and inner key LE outer upper bound, with the keys' NULL
 * flags on the first.
 */
static void
MakeTerms(const CaseSpec *spec, SideData *side, bool outer, uint64_t *state)
{
	int64_t		nrows = side->batch.nrows;
	size_t		bytes = (size_t) nrows * sizeof(uint64_t);
	double		share = outer ? spec->outer_null_share : spec->inner_null_share;

	if (spec->term_shape == TERMS_MIRROR_BAND)
	{
		side->batch.terms[0] = (const uint64_t *) Copy(side->batch.keys, bytes);
		side->batch.terms[1] = (const uint64_t *) Copy(outer ? side->batch.keys_hi :
													   side->batch.keys, bytes);
		side->batch.term_nulls[0] = (const uint8_t *) Copy(side->batch.nulls, (size_t) nrows);
		return;
	}
	for (int t = 0; t < spec->nterms; t++)
	{
		uint64_t   *values = (uint64_t *) Alloc(bytes);
		uint8_t    *nulls = t % 2 == 0 ? MakeNulls(nrows, share, false, state) : NULL;

		for (int64_t row = 0; row < nrows; row++)
		{
			values[row] = KeyOf(spec, spec->keymap, spec->term_domain,
								RandomBelow(state, spec->term_domain));
			if (nulls != NULL && nulls[row] && spec->null_keys_extreme)
				values[row] = KeyOf(spec, spec->keymap, spec->term_domain,
									outer ? spec->term_domain - 1 : 0);
		}
		side->batch.terms[t] = values;
		side->batch.term_nulls[t] = nulls;
	}
}

/*
 * One outer row's BAND range [*lo, *hi], drawn in key indexes 0 ..
 * domain - 1 and mapped through the key map (monotonic for the maps the
 * theta cases use, KEYS_WIDE aside, whose ranges are then arbitrary)
 */
static void
MakeRange(const CaseSpec *spec, int64_t domain, int64_t row, uint64_t *state,
		  uint64_t *lo, uint64_t *hi)
{
	static const uint64_t extremes[][2] = {
		{0, 0}, {UINT64_MAX, UINT64_MAX}, {UINT64_MAX - 1, UINT64_MAX},
		{0, 1}, {1, UINT64_MAX - 1}
	};
	int64_t		a = RandomBelow(state, domain);
	int64_t		b = a + RandomBelow(state, spec->range_width + 1);
	int64_t		r = RandomBelow(state, 100);
	uint64_t	ka;

	if (b >= domain)
		b = domain - 1;
	ka = KeyOf(spec, spec->keymap, domain, a);
	if (spec->ranges == RANGES_ALL || (spec->ranges == RANGES_SKEW && row % 500 == 7))
		r = 75;					/* the whole range */
	else if (spec->ranges == RANGES_SKEW)
		r = r < 40 ? 70 : r < 80 ? 95 : 60;	/* point, narrow or empty */

	if (r < 35)
	{
		*lo = ka;				/* bounded */
		*hi = KeyOf(spec, spec->keymap, domain, b);
	}
	else if (r < 45)
	{
		*lo = 0;				/* no lower bound */
		*hi = ka;
	}
	else if (r < 55)
	{
		*lo = ka;				/* no upper bound */
		*hi = UINT64_MAX;
	}
	else if (r < 65)
	{
		*hi = ka;				/* empty: lo > hi */
		*lo = ka == UINT64_MAX ? UINT64_MAX : ka + 1 + (uint64_t) RandomBelow(state, 3);
		if (ka == UINT64_MAX)
			*hi = UINT64_MAX - 1;
	}
	else if (r < 73)
	{
		*lo = ka;				/* a point */
		*hi = ka;
	}
	else if (r < 78)
	{
		*lo = 0;				/* everything */
		*hi = UINT64_MAX;
	}
	else if (r < 88)
	{
		int			e = (int) RandomBelow(state, 5);

		*lo = extremes[e][0];
		*hi = extremes[e][1];
	}
	else
	{
		/* narrow, between keys: matches only where the map leaves no gaps */
		*lo = ka + 1;
		*hi = KeyOf(spec, spec->keymap, domain, b) + 1;
		if (*lo == 0 || *hi == 0)
		{
			*lo = ka;
			*hi = ka;
		}
	}
}

/* An outer chunk of a theta case: ranges, payload columns, terms */
static void
MakeThetaOuter(const CaseSpec *spec, SideData *side, uint64_t *state)
{
	int64_t		nrows = spec->outer_rows;
	int64_t		domain = spec->domain > 0 ? spec->domain : spec->inner_rows;
	uint64_t   *lo = (uint64_t *) Alloc((size_t) nrows * sizeof(uint64_t));
	uint64_t   *hi = (uint64_t *) Alloc((size_t) nrows * sizeof(uint64_t));

	if (domain < 1)
		domain = 1;
	for (int64_t row = 0; row < nrows; row++)
		MakeRange(spec, domain, row, state, &lo[row], &hi[row]);
	memset(side, 0, sizeof(SideData));
	side->batch.keys = lo;
	side->batch.keys_hi = hi;
	side->batch.nrows = nrows;
	side->batch.nulls = MakeNulls(nrows, spec->outer_null_share,
								  spec->outer_null_array, state);
	for (int64_t row = 0; spec->null_keys_extreme && row < nrows; row++)
	{
		if (side->batch.nulls != NULL && side->batch.nulls[row])
		{
			lo[row] = 0;		/* would match everything */
			hi[row] = UINT64_MAX;
		}
	}
	MakeColumns(side, spec->outer_ncolumns, spec->outer_widths, state);
	MakeTerms(spec, side, true, state);
}

static void
MakeThetaCase(const CaseSpec *spec, CaseData *data)
{
	uint64_t	state = spec->seed;

	memset(data, 0, sizeof(CaseData));
	MakeInner(spec, spec->keymap, spec->inner_rows, &data->inner, &state);
	MakeTerms(spec, &data->inner, false, &state);
	if (spec->rebuild)
	{
		MakeInner(spec, spec->decoy_keymap, spec->inner_rows / 2 + 3,
				  &data->decoy, &state);
		MakeTerms(spec, &data->decoy, false, &state);
	}
	data->nchunks = spec->nchunks;
	for (int c = 0; c < spec->nchunks; c++)
		MakeThetaOuter(spec, &data->outer[c], &state);
}

/* Allocate a match list of n matches */
static void
MatchesAlloc(MatchList *list, int64_t n)
{
	list->nmatches = n;
	list->outer_rows = (GjRowId *) Alloc((size_t) n * sizeof(GjRowId));
	list->inner_rows = (GjRowId *) Alloc((size_t) n * sizeof(GjRowId));
}

/*
 * The expected BAND matches of a chunk, by brute force: the non-NULL inner
 * (key, row) pairs sorted by qsort, then for each outer row with a range,
 * in row order, every pair checked against the range
 */
static void
ReferenceBand(const GjBatch *inner, const GjBatch *outer, MatchList *out)
{
	KeyRow	   *sorted = (KeyRow *) Alloc((size_t) inner->nrows * sizeof(KeyRow));
	int64_t		n = 0;

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
		int64_t		m = 0;

		for (int64_t row = 0; row < outer->nrows; row++)
		{
			uint64_t	lo = outer->keys[row];
			uint64_t	hi = outer->keys_hi[row];

			if (IsNull(outer, row))
				continue;
			for (int64_t i = 0; i < n; i++)
			{
				if (sorted[i].key < lo || sorted[i].key > hi)
					continue;
				if (pass == 1)
				{
					out->outer_rows[m] = (GjRowId) row;
					out->inner_rows[m] = sorted[i].row;
				}
				m++;
			}
		}
		if (pass == 0)
			MatchesAlloc(out, m);
	}
	free(sorted);
}

/* Does "inner op outer" hold?  (The test's own reading of GjThetaOp) */
static bool
ReferenceHolds(GjThetaOp op, uint64_t inner, uint64_t outer)
{
	switch (op)
	{
		case GJ_THETA_LT:
			return inner < outer;
		case GJ_THETA_LE:
			return inner < outer || inner == outer;
		case GJ_THETA_GT:
			return outer < inner;
		case GJ_THETA_GE:
			return !(inner < outer);
		case GJ_THETA_EQ:
			return inner == outer;
		case GJ_THETA_NE:
			return !(inner == outer);
	}
	return false;
}

/* Is any term of a row NULL? */
static bool
TermsNull(const GjBatch *batch, int nterms, int64_t row)
{
	for (int t = 0; t < nterms; t++)
	{
		if (batch->term_nulls[t] != NULL && batch->term_nulls[t][row])
			return true;
	}
	return false;
}

/* The expected NLJ matches of a chunk: every pair, outer loop outside */
static void
ReferenceNlj(const CaseSpec *spec, const GjBatch *inner,
			 const GjBatch *outer, MatchList *out)
{
	for (int pass = 0; pass < 2; pass++)
	{
		int64_t		m = 0;

		for (int64_t i = 0; i < outer->nrows; i++)
		{
			if (TermsNull(outer, spec->nterms, i))
				continue;
			for (int64_t j = 0; j < inner->nrows; j++)
			{
				bool		match = !TermsNull(inner, spec->nterms, j);

				for (int t = 0; t < spec->nterms && match; t++)
					match = ReferenceHolds(spec->ops[t], inner->terms[t][j],
										   outer->terms[t][i]);
				if (!match)
					continue;
				if (pass == 1)
				{
					out->outer_rows[m] = (GjRowId) i;
					out->inner_rows[m] = (GjRowId) j;
				}
				m++;
			}
		}
		if (pass == 0)
			MatchesAlloc(out, m);
	}
}

/*
 * With TERMS_MIRROR_BAND the two references hold the same matches in
 * other orders: the same number for every outer row
 */
static void
CheckMirror(const MatchList *band, const MatchList *nlj, int64_t outer_rows)
{
	int64_t    *counts = (int64_t *) Alloc((size_t) (outer_rows + 1) * sizeof(int64_t));

	memset(counts, 0, (size_t) (outer_rows + 1) * sizeof(int64_t));
	for (int64_t m = 0; m < band->nmatches; m++)
		counts[band->outer_rows[m]]++;
	for (int64_t m = 0; m < nlj->nmatches; m++)
		counts[nlj->outer_rows[m]]--;
	for (int64_t row = 0; row < outer_rows; row++)
	{
		if (counts[row] != 0)
		{
			Failf("the BAND and NLJ references disagree on outer row %lld",
				  (long long) row);
			break;
		}
	}
	free(counts);
}

/*
 * What an NLJ build must say in GjStats.detail: the terms, and the tile of
 * common.h's rule (48 KiB of 8-byte values and a flag a row, in multiples
 * of 256, at most 1024), written out here
 */
static void
ExpectedNljDetail(int nterms, char *buf, size_t size)
{
	static const int tile_rows[GJ_MAX_TERMS + 1] = {
		0, 1024, 1024, 1024, 1024, 1024, 768, 768, 512
	};

	snprintf(buf, size, "%d term%s, tiles of %d rows", nterms,
			 nterms == 1 ? "" : "s", tile_rows[nterms]);
}

/*
 * Run a theta case: the references; then in each theta configuration the
 * CPU twin against them and CUDA against the CPU twin
 */
static void
RunThetaCase(const CaseSpec *spec, CaseData *data)
{
	MatchList	band_ref[MAX_CHUNKS];
	MatchList	nlj_ref[MAX_CHUNKS];
	char		band_detail[sizeof(((GjStats *) NULL)->detail)];
	char		nlj_detail[sizeof(((GjStats *) NULL)->detail)];
	Expected	expected;

	if (!AnySelected(theta_configs, NUM_THETA_CONFIGS))
		return;
	memset(band_ref, 0, sizeof(band_ref));
	memset(nlj_ref, 0, sizeof(nlj_ref));
	memset(&expected, 0, sizeof(expected));
	for (int c = 0; c < data->nchunks; c++)
	{
		ReferenceBand(&data->inner.batch, &data->outer[c].batch, &band_ref[c]);
		ReferenceNlj(spec, &data->inner.batch, &data->outer[c].batch, &nlj_ref[c]);
		if (spec->term_shape == TERMS_MIRROR_BAND)
			CheckMirror(&band_ref[c], &nlj_ref[c], data->outer[c].batch.nrows);
	}
	ExpectedSmjDetail(&data->inner.batch, false, band_detail, sizeof(band_detail));
	ExpectedNljDetail(spec->nterms, nlj_detail, sizeof(nlj_detail));
	expected.matches[GJ_VARIANT_BAND] = band_ref;
	expected.matches[GJ_VARIANT_NLJ] = nlj_ref;
	expected.detail[GJ_VARIANT_BAND] = band_detail;
	expected.detail[GJ_VARIANT_NLJ] = nlj_detail;
	Report("ref", spec->name);
	PrintCase(spec, data, band_ref, "BAND matches");
	PrintCase(spec, data, nlj_ref, "NLJ matches");

	RunConfigs(spec, data, theta_configs, NUM_THETA_CONFIGS, &expected);

	for (int c = 0; c < MAX_CHUNKS; c++)
	{
		FreeMatches(&band_ref[c]);
		FreeMatches(&nlj_ref[c]);
	}
}

static void
RunThetaGenerated(const CaseSpec *spec)
{
	CaseData   *data = (CaseData *) Alloc(sizeof(CaseData));

	MakeThetaCase(spec, data);
	RunThetaCase(spec, data);
	FreeCase(data);
	free(data);
}

/* A theta spec with the defaults every theta case starts from */
static CaseSpec
ThetaSpec(const char *name, int64_t inner_rows, int64_t outer_rows)
{
	CaseSpec	spec = Spec(name, inner_rows, outer_rows);

	spec.ranges = RANGES_MIXED;
	spec.range_width = 20;
	spec.term_shape = TERMS_RANDOM;
	spec.nterms = 2;
	spec.ops[0] = GJ_THETA_GE;
	spec.ops[1] = GJ_THETA_LT;
	spec.term_domain = 50;
	return spec;
}

/*
 * Hand-written cases with their answers: BAND ranges over duplicates, 0,
 * UINT64_MAX and a NULL key that would match; NLJ with one term of each
 * comparison at the boundaries (equal values, 0, UINT64_MAX) and NULL
 * values that would match
 */
static void
TestThetaHandWritten(void)
{
	static const uint64_t inner_keys[] = {5, 7, 5, 0, 0, UINT64_MAX, 5, 3};
	static const uint8_t inner_nulls[] = {0, 0, 0, 1, 0, 0, 0, 0};
	static const int32_t inner_values[] = {10, 11, 12, 13, 14, 15, 16, 17};
	static const uint8_t inner_value_nulls[] = {0, 0, 1, 0, 0, 0, 0, 0};
	static const uint64_t outer_lo[] = {4, 0, 0, 8, UINT64_MAX, 0, 6, 3, 1};
	static const uint64_t outer_hi[] = {6, UINT64_MAX, 0, 2, UINT64_MAX,
	UINT64_MAX, 6, 7, UINT64_MAX - 1};
	static const uint8_t outer_nulls[] = {0, 1, 0, 0, 0, 0, 0, 0, 0};
	static const int16_t outer_values[] = {100, 101, 102, 103, 104, 105, 106, 107, 108};
	/* by outer row, then key (0, 3, 5, 5, 5, 7, max), then inner row */
	static const GjRowId band_outer[] = {0, 0, 0, 2, 4, 5, 5, 5, 5, 5, 5, 5,
	7, 7, 7, 7, 7, 8, 8, 8, 8, 8};
	static const GjRowId band_inner[] = {0, 2, 6, 4, 5, 4, 7, 0, 2, 6, 1, 5,
	7, 0, 2, 6, 1, 7, 0, 2, 6, 1};
	/* the same as NLJ terms (key GE lo, key LE hi): by outer row, inner row */
	static const GjRowId mirror_inner[] = {0, 2, 6, 4, 5, 0, 1, 2, 4, 5, 6, 7,
	0, 1, 2, 6, 7, 0, 1, 2, 6, 7};

	/* NLJ, one term: inner values 0, 1, 2, 2, 3, max, 2 (NULL) */
	static const uint64_t term_inner[] = {0, 1, 2, 2, 3, UINT64_MAX, 2};
	static const uint8_t term_inner_nulls[] = {0, 0, 0, 0, 0, 0, 1};
	/* ... against outer values 2, 0, max, 2 (NULL) */
	static const uint64_t term_outer[] = {2, 0, UINT64_MAX, 2};
	static const uint8_t term_outer_nulls[] = {0, 0, 0, 1};
	/* the inner rows each outer row matches, as bit masks, by comparison */
	static const uint8_t op_masks[6][3] = {
		{0x03, 0x00, 0x1F},		/* LT: inner < 2, < 0, < max */
		{0x0F, 0x01, 0x3F},		/* LE */
		{0x30, 0x3E, 0x00},		/* GT */
		{0x3C, 0x3F, 0x20},		/* GE */
		{0x0C, 0x01, 0x20},		/* EQ */
		{0x33, 0x3E, 0x1F}		/* NE */
	};
	CaseSpec	spec = ThetaSpec("theta hand-written: BAND ranges, and as NLJ terms", 8, 9);
	CaseData   *data = (CaseData *) Alloc(sizeof(CaseData));
	MatchList	ref;

	/* 1. BAND, and the same ranges as two NLJ terms */
	memset(data, 0, sizeof(CaseData));
	spec.outer_ncolumns = 1;
	spec.outer_widths[0] = 2;
	spec.inner_ncolumns = 1;
	spec.inner_widths[0] = 4;
	spec.term_shape = TERMS_MIRROR_BAND;
	spec.ops[0] = GJ_THETA_GE;
	spec.ops[1] = GJ_THETA_LE;
	spec.max_matches = 4;
	data->inner.batch.keys = inner_keys;
	data->inner.batch.nulls = inner_nulls;
	data->inner.batch.nrows = 8;
	data->inner.batch.columns = data->inner.columns;
	data->inner.batch.terms[0] = inner_keys;
	data->inner.batch.terms[1] = inner_keys;
	data->inner.batch.term_nulls[0] = inner_nulls;
	data->inner.columns[0].values = inner_values;
	data->inner.columns[0].nulls = inner_value_nulls;
	data->inner.ncolumns = 1;
	data->inner.widths = spec.inner_widths;
	data->outer[0].batch.keys = outer_lo;
	data->outer[0].batch.keys_hi = outer_hi;
	data->outer[0].batch.nulls = outer_nulls;
	data->outer[0].batch.nrows = 9;
	data->outer[0].batch.columns = data->outer[0].columns;
	data->outer[0].batch.terms[0] = outer_lo;
	data->outer[0].batch.terms[1] = outer_hi;
	data->outer[0].batch.term_nulls[0] = outer_nulls;
	data->outer[0].columns[0].values = outer_values;
	data->outer[0].ncolumns = 1;
	data->outer[0].widths = spec.outer_widths;
	data->nchunks = 1;

	ReferenceBand(&data->inner.batch, &data->outer[0].batch, &ref);
	if (ref.nmatches != 22 ||
		memcmp(ref.outer_rows, band_outer, sizeof(band_outer)) != 0 ||
		memcmp(ref.inner_rows, band_inner, sizeof(band_inner)) != 0)
		Failf("the BAND reference disagrees with the hand-written answer");
	FreeMatches(&ref);
	ReferenceNlj(&spec, &data->inner.batch, &data->outer[0].batch, &ref);
	if (ref.nmatches != 22 ||
		memcmp(ref.outer_rows, band_outer, sizeof(band_outer)) != 0 ||
		memcmp(ref.inner_rows, mirror_inner, sizeof(mirror_inner)) != 0)
		Failf("the NLJ reference disagrees with the hand-written answer");
	FreeMatches(&ref);
	Report("ref", "theta hand-written answers: BAND");
	RunThetaCase(&spec, data);

	/* 2. NLJ, one term of each comparison (BAND: the values as points) */
	for (int op = GJ_THETA_LT; op <= GJ_THETA_NE; op++)
	{
		char		name[96];
		GjRowId		outer_rows[32];
		GjRowId		inner_rows[32];
		int			n = 0;

		snprintf(name, sizeof(name), "theta hand-written: NLJ inner %s outer, at the boundaries",
				 gj_theta_op_name((GjThetaOp) op));
		spec = ThetaSpec(name, 7, 4);
		SetColumns(&spec, 1, 1);
		spec.outer_widths[0] = 2;
		spec.inner_widths[0] = 4;
		spec.nterms = 1;
		spec.ops[0] = (GjThetaOp) op;
		spec.max_matches = 3;
		memset(data, 0, sizeof(CaseData));
		data->inner.batch.keys = term_inner;
		data->inner.batch.nulls = term_inner_nulls;
		data->inner.batch.nrows = 7;
		data->inner.batch.terms[0] = term_inner;
		data->inner.batch.term_nulls[0] = term_inner_nulls;
		data->inner.batch.columns = data->inner.columns;
		data->inner.columns[0].values = inner_values;
		data->inner.ncolumns = 1;
		data->inner.widths = spec.inner_widths;
		data->outer[0].batch.keys = term_outer;
		data->outer[0].batch.keys_hi = term_outer;
		data->outer[0].batch.nulls = term_outer_nulls;
		data->outer[0].batch.nrows = 4;
		data->outer[0].batch.terms[0] = term_outer;
		data->outer[0].batch.term_nulls[0] = term_outer_nulls;
		data->outer[0].batch.columns = data->outer[0].columns;
		data->outer[0].columns[0].values = outer_values;
		data->outer[0].ncolumns = 1;
		data->outer[0].widths = spec.outer_widths;
		data->nchunks = 1;

		for (int o = 0; o < 3; o++)
		{
			for (int i = 0; i < 7; i++)
			{
				if (op_masks[op][o] & (1 << i))
				{
					outer_rows[n] = (GjRowId) o;
					inner_rows[n] = (GjRowId) i;
					n++;
				}
			}
		}
		ReferenceNlj(&spec, &data->inner.batch, &data->outer[0].batch, &ref);
		if (ref.nmatches != n ||
			memcmp(ref.outer_rows, outer_rows, (size_t) n * sizeof(GjRowId)) != 0 ||
			memcmp(ref.inner_rows, inner_rows, (size_t) n * sizeof(GjRowId)) != 0)
			Failf("the NLJ reference disagrees with the hand-written answer for %s",
				  gj_theta_op_name((GjThetaOp) op));
		FreeMatches(&ref);
		Report("ref", name);
		RunThetaCase(&spec, data);
	}
	free(data);
}

/*
 * The NLJ tile (common.h) and how builds describe it, against numbers
 * written out here
 */
static void
TestThetaRules(void)
{
	static const int tile_rows[GJ_MAX_TERMS + 1] = {
		0, 1024, 1024, 1024, 1024, 1024, 768, 768, 512
	};
	char		buf[sizeof(((GjStats *) NULL)->detail)];

	for (int nterms = 1; nterms <= GJ_MAX_TERMS; nterms++)
	{
		if (gj_nlj_tile_rows(nterms) != tile_rows[nterms])
			Failf("gj_nlj_tile_rows(%d) is %d, expected %d", nterms,
				  gj_nlj_tile_rows(nterms), tile_rows[nterms]);
		if ((size_t) gj_nlj_tile_rows(nterms) * (nterms * sizeof(uint64_t) + 1) > 48 * 1024)
			Failf("a tile of %d terms takes more than 48 KiB", nterms);
	}
	gj_nlj_describe(1, buf, sizeof(buf));
	if (strcmp(buf, "1 term, tiles of 1024 rows") != 0)
		Failf("one term is described as \"%s\"", buf);
	gj_nlj_describe(8, buf, sizeof(buf));
	if (strcmp(buf, "8 terms, tiles of 512 rows") != 0)
		Failf("eight terms are described as \"%s\"", buf);
	Report("ref", "NLJ tiles and their description");
}

/*
 * Theta specs and batches the contract rejects: GJ_ERROR_INVALID_ARGUMENT
 * with a message, and no harm to the context
 */
static void
TestThetaInvalid(const GjKernels *k)
{
	static const uint64_t keys[] = {1, 2, 3, 2};
	static const uint64_t hi[] = {2, 2, 9, 1};
	GjBatch		inner;
	GjBatch		outer;
	GjBatch		bad;
	GjJoinSpec	spec;
	GjJoinSpec	bad_spec;
	GjContext  *ctx = NULL;
	GjMatchRound round;
	GjError		err;
	int64_t		nmatches = 0;

	memset(&err, 0, sizeof(err));
	memset(&inner, 0, sizeof(inner));
	inner.keys = keys;
	inner.nrows = 4;
	inner.terms[0] = keys;
	inner.terms[1] = hi;
	outer = inner;
	outer.keys_hi = hi;

	memset(&spec, 0, sizeof(spec));
	spec.variant = GJ_VARIANT_NLJ;
	spec.materialize = GJ_MATERIALIZE_GFTR;
	spec.row_ids = true;
	spec.max_matches = 5;
	spec.nterms = 2;
	spec.ops[0] = GJ_THETA_LE;
	spec.ops[1] = GJ_THETA_NE;

	bad_spec = spec;
	bad_spec.nterms = 0;
	ExpectBadSpec(k, &bad_spec, "NLJ with 0 terms", "nterms is 0");
	bad_spec.nterms = GJ_MAX_TERMS + 1;
	ExpectBadSpec(k, &bad_spec, "NLJ with 9 terms", "nterms is 9");
	bad_spec.nterms = -1;
	ExpectBadSpec(k, &bad_spec, "NLJ with -1 terms", "1 to 8 comparison terms");
	bad_spec = spec;
	bad_spec.ops[1] = (GjThetaOp) 6;
	ExpectBadSpec(k, &bad_spec, "NLJ with comparison 6", "comparison 6 of NLJ term 1");
	bad_spec.ops[1] = (GjThetaOp) -1;
	ExpectBadSpec(k, &bad_spec, "NLJ with comparison -1", "comparison -1");
	/* the other variants ignore nterms and ops */
	bad_spec = spec;
	bad_spec.variant = GJ_VARIANT_BAND;
	bad_spec.nterms = 99;
	bad_spec.ops[0] = (GjThetaOp) 42;
	if (Expect(k->context_create(&ctx, &bad_spec, &err), GJ_OK, &err,
			   "context_create(BAND, nterms 99)"))
		k->context_destroy(ctx);
	ctx = NULL;

	/* NLJ: every term's values, no keys needed */
	if (Expect(k->context_create(&ctx, &spec, &err), GJ_OK, &err, "context_create(NLJ)"))
	{
		bad = inner;
		bad.terms[1] = NULL;
		ExpectInvalid(k->build(ctx, &bad, &err), &err, "NLJ build(no values of term 1)");
		if (strstr(err.message, "term 1") == NULL)
			Failf("NLJ build(no values of term 1) said \"%s\"", err.message);
		bad.terms[0] = NULL;
		bad.terms[1] = hi;
		ExpectInvalid(k->build(ctx, &bad, &err), &err, "NLJ build(no values of term 0)");
		bad = inner;
		bad.keys = NULL;
		bad.terms[2] = NULL;	/* beyond nterms: not looked at */
		if (Expect(k->build(ctx, &bad, &err), GJ_OK, &err, "NLJ build(no keys)"))
		{
			bad = outer;
			bad.terms[0] = NULL;
			ExpectInvalid(k->count(ctx, &bad, &nmatches, &err), &err,
						  "NLJ count(no values of term 0)");
			ExpectInvalid(k->retrieve(ctx, 0, &round, &err), &err,
						  "retrieve after a failed NLJ count");
			bad.nrows = 0;
			if (Expect(k->count(ctx, &bad, &nmatches, &err), GJ_OK, &err,
					   "NLJ count(no rows, no values)") && nmatches != 0)
				Failf("an empty NLJ chunk counted %lld matches", (long long) nmatches);
			bad = outer;
			bad.keys = NULL;
			/*
			 * inner key LE outer key and inner hi NE outer hi: outer row 1
			 * matches inner 3; row 2 inner 0, 1, 3; row 3 inner 0, 1
			 */
			if (Expect(k->count(ctx, &bad, &nmatches, &err), GJ_OK, &err,
					   "NLJ count(no keys)") && nmatches != 6)
				Failf("the NLJ chunk counted %lld matches, expected 6",
					  (long long) nmatches);
		}
		k->context_destroy(ctx);
	}
	ctx = NULL;

	/* BAND: the outer side's upper bounds; the inner side needs none */
	spec.variant = GJ_VARIANT_BAND;
	if (Expect(k->context_create(&ctx, &spec, &err), GJ_OK, &err, "context_create(BAND)"))
	{
		bad = inner;
		bad.keys = NULL;
		ExpectInvalid(k->build(ctx, &bad, &err), &err, "BAND build(no keys)");
		if (Expect(k->build(ctx, &inner, &err), GJ_OK, &err, "BAND build(no upper bounds)"))
		{
			bad = outer;
			bad.keys_hi = NULL;
			ExpectInvalid(k->count(ctx, &bad, &nmatches, &err), &err,
						  "BAND count(no upper bounds)");
			if (strstr(err.message, "keys_hi") == NULL)
				Failf("BAND count(no upper bounds) said \"%s\"", err.message);
			bad.nrows = 0;
			Expect(k->count(ctx, &bad, &nmatches, &err), GJ_OK, &err,
				   "BAND count(no rows, no upper bounds)");
			/* [1, 2]: 1 2 2; [2, 2]: 2 2; [3, 9]: 3; [2, 1]: none */
			if (Expect(k->count(ctx, &outer, &nmatches, &err), GJ_OK, &err,
					   "BAND count") && nmatches != 6)
				Failf("the BAND chunk counted %lld matches, expected 6",
					  (long long) nmatches);
		}
		k->context_destroy(ctx);
	}
	Report(k->name, "theta invalid arguments");
}

/*
 * Every outer range (or NLJ term) covering every inner row: n x m
 * matches, past 2^32, in rounds of 1000 read at a few windows only
 *
 * Inner keys descend (n - 1 - row), so that BAND's order by key differs
 * from NLJ's by row: match m is outer row m / n and inner row n - 1 -
 * m % n (BAND) or m % n (NLJ).  The payload columns carry their row
 * numbers, so the values check the materialization too.
 */
static void
TestHugeCount(const GjKernels *k, GjVariant variant, int64_t inner_rows,
			  int64_t outer_rows)
{
	uint64_t   *keys = (uint64_t *) Alloc((size_t) inner_rows * sizeof(uint64_t));
	int64_t    *inner_values = (int64_t *) Alloc((size_t) inner_rows * sizeof(int64_t));
	uint64_t   *lo = (uint64_t *) Alloc((size_t) outer_rows * sizeof(uint64_t));
	uint64_t   *hi = (uint64_t *) Alloc((size_t) outer_rows * sizeof(uint64_t));
	int32_t    *outer_values = (int32_t *) Alloc((size_t) outer_rows * sizeof(int32_t));
	GjColumn	inner_column = {inner_values, NULL};
	GjColumn	outer_column = {outer_values, NULL};
	GjBatch		inner;
	GjBatch		outer;
	GjJoinSpec	spec;
	GjContext  *ctx = NULL;
	GjMatchRound round;
	GjError		err;
	int64_t		nmatches = 0;
	int64_t		total = inner_rows * outer_rows;
	int64_t		windows[4];
	char		name[128];

	snprintf(name, sizeof(name), "%s near-cross product: %lld x %lld = %lld matches, read by windows",
			 gj_variant_name(variant), (long long) outer_rows,
			 (long long) inner_rows, (long long) total);
	if (!Selected(name))
		goto done;
	for (int64_t row = 0; row < inner_rows; row++)
	{
		keys[row] = (uint64_t) (inner_rows - 1 - row);
		inner_values[row] = row;
	}
	for (int64_t row = 0; row < outer_rows; row++)
	{
		lo[row] = 0;
		hi[row] = UINT64_MAX;
		outer_values[row] = (int32_t) row;
	}
	memset(&inner, 0, sizeof(inner));
	inner.keys = keys;
	inner.nrows = inner_rows;
	inner.columns = &inner_column;
	inner.terms[0] = keys;
	memset(&outer, 0, sizeof(outer));
	outer.keys = lo;
	outer.keys_hi = hi;
	outer.nrows = outer_rows;
	outer.columns = &outer_column;
	outer.terms[0] = lo;		/* inner key GE 0: always */

	memset(&spec, 0, sizeof(spec));
	spec.variant = variant;
	spec.materialize = GJ_MATERIALIZE_GFTR;
	spec.row_ids = true;
	spec.outer_ncolumns = 1;
	spec.outer_widths[0] = 4;
	spec.inner_ncolumns = 1;
	spec.inner_widths[0] = 8;
	spec.nterms = 1;
	spec.ops[0] = GJ_THETA_GE;
	spec.max_matches = 1000;
	memset(&err, 0, sizeof(err));

	windows[0] = 0;
	windows[1] = ((int64_t) 1 << 32) - 500;	/* across 2^32 */
	windows[2] = total / 2 + 12345;
	windows[3] = total - 700;	/* the last round, short */
	if (!Expect(k->context_create(&ctx, &spec, &err), GJ_OK, &err, "context_create") ||
		!Expect(k->build(ctx, &inner, &err), GJ_OK, &err, "build") ||
		!Expect(k->count(ctx, &outer, &nmatches, &err), GJ_OK, &err, "count"))
		goto done;
	if (nmatches != total)
	{
		Failf("count gave %lld matches, expected %lld", (long long) nmatches,
			  (long long) total);
		goto done;
	}
	for (int w = 0; w < 4; w++)
	{
		int64_t		first = windows[w];
		int64_t		expected = total - first < 1000 ? total - first : 1000;

		if (first < 0 || first >= total)
			continue;
		if (!Expect(k->retrieve(ctx, first, &round, &err), GJ_OK, &err, "retrieve"))
			break;
		if (round.nmatches != expected)
		{
			Failf("retrieve(%lld) gave %lld matches, expected %lld",
				  (long long) first, (long long) round.nmatches, (long long) expected);
			break;
		}
		for (int64_t i = 0; i < round.nmatches; i++)
		{
			int64_t		m = first + i;
			GjRowId		o = (GjRowId) (m / inner_rows);
			GjRowId		r = (GjRowId) (variant == GJ_VARIANT_BAND ?
									   inner_rows - 1 - m % inner_rows : m % inner_rows);

			if (round.outer_rows[i] != o || round.inner_rows[i] != r ||
				((const int32_t *) round.outer_values[0])[i] != (int32_t) o ||
				((const int64_t *) round.inner_values[0])[i] != (int64_t) r)
			{
				Failf("match %lld is (outer %u, inner %u), expected (%u, %u)",
					  (long long) m, round.outer_rows[i], round.inner_rows[i], o, r);
				break;
			}
		}
	}

done:
	k->context_destroy(ctx);
	free(keys);
	free(inner_values);
	free(lo);
	free(hi);
	free(outer_values);
	if (Selected(name))
		Report(k->name, name);
}

static void
TestThetaGenerated(int64_t large_rows)
{
	static const KeyMap keymaps[] = {KEYS_DENSE, KEYS_TOP, KEYS_WIDE, KEYS_BIASED};
	static const char *const keymap_names[] = {"dense", "top (UINT64_MAX)", "64-bit", "across the sign flip"};
	char		names[64][112];
	int			n = 0;
	CaseSpec	spec;

	/* Mixed ranges over duplicates, each key map; NLJ: 2 terms GE, LT */
	for (int i = 0; i < 4; i++)
	{
		snprintf(names[n], sizeof(names[n]), "theta: mixed ranges, %s keys, duplicates, NULLs",
				 keymap_names[i]);
		spec = ThetaSpec(names[n++], 1200 + 300 * i, 1500);
		spec.keymap = keymaps[i];
		spec.domain = i == 2 ? 0 : 700;
		spec.inner_skew = i == 3 ? 1.0 : 0.0;
		spec.inner_null_share = 0.1;
		spec.outer_null_share = 0.1;
		spec.null_keys_extreme = i % 2 == 0;
		spec.nchunks = 2;
		spec.max_matches = 5000;
		RunThetaGenerated(&spec);
	}

	/* The near-cross product, in many small rounds */
	spec = ThetaSpec("theta: near-cross product, every range covers everything, 2000 x 2000", 2000, 2000);
	SetColumns(&spec, 1, 1);
	spec.ranges = RANGES_ALL;
	spec.term_shape = TERMS_MIRROR_BAND;
	spec.ops[0] = GJ_THETA_GE;
	spec.ops[1] = GJ_THETA_LE;
	spec.domain = 300;
	spec.max_matches = 4099;
	RunThetaGenerated(&spec);

	/* Skew: one range in 500 covers everything, the others tiny */
	spec = ThetaSpec("theta: skew, one range in 500 covers everything, the rest points", 3000, 2600);
	spec.ranges = RANGES_SKEW;
	spec.term_shape = TERMS_MIRROR_BAND;
	spec.ops[0] = GJ_THETA_GE;
	spec.ops[1] = GJ_THETA_LE;
	spec.domain = 1000;
	spec.max_matches = 777;
	spec.nchunks = 2;
	RunThetaGenerated(&spec);

	/* NLJ: 1 to 4 terms, every comparison, many equal values */
	for (int nterms = 1; nterms <= 4; nterms++)
	{
		for (int shift = 0; shift < 6; shift += 2)
		{
			snprintf(names[n], sizeof(names[n]), "theta: %d term%s, comparisons from %s on, equal values",
					 nterms, nterms == 1 ? "" : "s", gj_theta_op_name((GjThetaOp) shift));
			spec = ThetaSpec(names[n++], 1100 + 150 * nterms, 900 + shift * 50);
			spec.nterms = nterms;
			for (int t = 0; t < nterms; t++)
				spec.ops[t] = (GjThetaOp) ((shift + t * 3 + nterms) % 6);
			if (nterms == 1)
				spec.ops[0] = (GjThetaOp) (shift + (nterms + shift / 2) % 2);
			spec.keymap = shift == 2 ? KEYS_WIDE : shift == 4 ? KEYS_TOP : KEYS_DENSE;
			spec.term_domain = shift == 2 ? 6 : 4 + nterms;
			spec.inner_null_share = 0.05;
			spec.outer_null_share = 0.05;
			spec.null_keys_extreme = shift == 0;
			spec.max_matches = 1 + 997 * (nterms + shift);
			RunThetaGenerated(&spec);
		}
	}

	/* NLJ: 5 to 8 terms, whose tiles hold 1024, 768 and 512 rows */
	for (int nterms = 5; nterms <= GJ_MAX_TERMS; nterms++)
	{
		snprintf(names[n], sizeof(names[n]), "theta: %d terms, inner side over several tiles", nterms);
		spec = ThetaSpec(names[n++], 2100, 700);
		spec.nterms = nterms;
		for (int t = 0; t < nterms; t++)
			spec.ops[t] = t % 3 == 0 ? GJ_THETA_LE : t % 3 == 1 ? GJ_THETA_GE : GJ_THETA_NE;
		spec.term_domain = 3;
		spec.inner_null_share = 0.02;
		spec.max_matches = 3001;
		RunThetaGenerated(&spec);
	}

	/* NULLs: shares, all of a side, and NULL arrays without NULLs */
	spec = ThetaSpec("theta: inner all NULL", 1000, 1000);
	spec.inner_null_share = 1.0;
	spec.nterms = 1;
	RunThetaGenerated(&spec);

	spec = ThetaSpec("theta: outer all NULL", 1000, 1000);
	spec.outer_null_share = 1.0;
	spec.nterms = 3;
	spec.ops[2] = GJ_THETA_NE;
	RunThetaGenerated(&spec);

	spec = ThetaSpec("theta: NULL arrays without NULLs", 1500, 1500);
	spec.inner_null_array = true;
	spec.outer_null_array = true;
	spec.term_shape = TERMS_MIRROR_BAND;
	spec.ops[0] = GJ_THETA_GE;
	spec.ops[1] = GJ_THETA_LE;
	RunThetaGenerated(&spec);

	/* Empty sides */
	spec = ThetaSpec("theta: empty inner", 0, 1000);
	RunThetaGenerated(&spec);
	spec = ThetaSpec("theta: empty outer, 2 chunks", 1000, 0);
	spec.nchunks = 2;
	RunThetaGenerated(&spec);
	spec = ThetaSpec("theta: both empty", 0, 0);
	RunThetaGenerated(&spec);

	/* Payload columns: none (nothing to write but the count), the most */
	spec = ThetaSpec("theta: no payload columns", 1500, 1500);
	SetColumns(&spec, 0, 0);
	RunThetaGenerated(&spec);
	spec = ThetaSpec("theta: columns 8 outer + 8 inner, one key value", 800, 600);
	SetColumns(&spec, 8, 8);
	spec.domain = 1;
	spec.term_domain = 2;
	spec.max_matches = 100000;
	RunThetaGenerated(&spec);

	/* Rounds of 1; several chunks; rebuilds */
	spec = ThetaSpec("theta: rounds of 1", 300, 400);
	spec.ranges = RANGES_SKEW;
	spec.domain = 150;
	spec.max_matches = 1;
	spec.nterms = 1;
	spec.ops[0] = GJ_THETA_EQ;
	spec.term_domain = 150;
	RunThetaGenerated(&spec);

	spec = ThetaSpec("theta: 6 outer chunks", 1500, 600);
	spec.nchunks = 6;
	spec.domain = 2000;
	spec.range_width = 100;
	spec.outer_null_share = 0.05;
	RunThetaGenerated(&spec);

	spec = ThetaSpec("theta: rebuild on other keys, 3 chunks", 1500, 800);
	spec.rebuild = true;
	spec.decoy_keymap = KEYS_TOP;
	spec.domain = 900;
	spec.nchunks = 3;
	spec.inner_null_share = 0.1;
	RunThetaGenerated(&spec);

	/* 10^10 BAND matches; NLJ's past 2^32 on the GPU (tested by TestThetaGpu) */
	TestHugeCount(&gj_cpu_kernels, GJ_VARIANT_BAND, 100000, 100000);
	TestHugeCount(&gj_cpu_kernels, GJ_VARIANT_NLJ, 3000, large_rows / 1000 + 1);
}

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
	static const int column_sweep[][2] = {{8, 8}, {0, 8}, {8, 0}, {32, 32}};
	static const int64_t pkpk_sizes[][2] = {{1, 1}, {3, 5}, {1000, 700}, {50000, 60000}};
	char		names[64][96];
	int			n = 0;
	CaseSpec	spec;

	/* Unique keys, every size class; dense and 64-bit keys in turn */
	for (size_t i = 0; i < sizeof(unique_sizes) / sizeof(unique_sizes[0]); i++)
	{
		snprintf(names[n], sizeof(names[n]), "unique %lld x %lld, %s keys",
				 (long long) unique_sizes[i][0], (long long) unique_sizes[i][1],
				 i % 2 ? "64-bit" : "dense");
		spec = Spec(names[n++], unique_sizes[i][0], unique_sizes[i][1]);
		spec.keymap = i % 2 ? KEYS_WIDE : KEYS_DENSE;
		spec.max_matches = unique_sizes[i][0] < 100 ? 3 : 4096;
		RunGenerated(&spec);
	}

	/* Unique keys on both sides (PK-PK): at most one match a row either way */
	for (size_t i = 0; i < sizeof(pkpk_sizes) / sizeof(pkpk_sizes[0]); i++)
	{
		snprintf(names[n], sizeof(names[n]), "PK-PK %lld x %lld, %s keys",
				 (long long) pkpk_sizes[i][0], (long long) pkpk_sizes[i][1],
				 i % 2 ? "64-bit" : "dense");
		spec = Spec(names[n++], pkpk_sizes[i][0], pkpk_sizes[i][1]);
		spec.keymap = i % 2 ? KEYS_WIDE : KEYS_DENSE;
		spec.outer_unique = true;
		spec.match_ratio = i % 2 ? 0.6 : 1.0;
		spec.max_matches = pkpk_sizes[i][0] < 100 ? 2 : 4096;
		RunGenerated(&spec);
	}

	/* One hot key: 50000 inner duplicates, each matched by 20 outer rows */
	spec = Spec("skew: one key 50000 times inner, about 20 times outer", 50000, 40);
	SetColumns(&spec, 1, 1);
	spec.domain = 1;
	spec.match_ratio = 0.5;
	spec.inner_null_share = 0.01;
	spec.max_matches = 65536;
	RunGenerated(&spec);

	/*
	 * PHJ: partition 0 crowded to some 11000 of 14000 inner rows (three
	 * sub-tables) and 15000 of 20000 outer rows (eight work units); unique
	 * inner keys, then a hot key (Zipf 1.0, some 1500 rows) whose run
	 * crosses a sub-table boundary, matched by some 130 outer rows a chunk
	 */
	for (int i = 0; i < 2; i++)
	{
		snprintf(names[n], sizeof(names[n]), "crowded partition, %s",
				 i == 0 ? "unique inner" : "hot key on both sides, 2 chunks");
		spec = Spec(names[n++], 14000, 20000);
		spec.keymap = KEYS_CROWD;
		spec.domain = i == 0 ? 0 : 4000;
		spec.inner_skew = i == 0 ? 0.0 : 1.0;
		spec.outer_skew = i == 0 ? 0.0 : 0.5;
		spec.match_ratio = 0.8;
		spec.nchunks = i == 0 ? 1 : 2;
		spec.inner_null_share = i == 0 ? 0.0 : 0.05;
		spec.outer_null_share = 0.05;
		spec.max_matches = i == 0 ? 3000 : 7777;
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
		spec.expect = EXPECT_HASHED;
		spec.max_matches = 5000;
		RunGenerated(&spec);
	}

	/* Zipf skew: many-to-many with the same hot keys, dense and hashed */
	for (size_t i = 0; i < sizeof(skews) / sizeof(skews[0]); i++)
	{
		snprintf(names[n], sizeof(names[n]), "zipf %.1f both sides, dense keys", skews[i]);
		spec = Spec(names[n++], 4000, 4000);
		spec.domain = 4000;
		spec.inner_skew = skews[i];
		spec.outer_skew = skews[i];
		spec.match_ratio = 0.9;
		spec.expect = EXPECT_DENSE;
		spec.max_matches = 100000;
		RunGenerated(&spec);

		snprintf(names[n], sizeof(names[n]), "zipf %.1f inner, uniform outer, 64-bit keys", skews[i]);
		spec = Spec(names[n++], 50000, 20000);
		spec.domain = 10000;
		spec.inner_skew = skews[i];
		spec.keymap = KEYS_WIDE;
		spec.expect = EXPECT_HASHED;
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
	spec.expect = EXPECT_HASHED;
	spec.max_matches = 777;
	RunGenerated(&spec);

	spec = Spec("bucket collisions, unique", 512, 512);
	spec.keymap = KEYS_COLLIDE;
	spec.match_ratio = 0.5;
	spec.expect = EXPECT_HASHED;
	RunGenerated(&spec);

	/* Dense keys (perfect hashing) and the edges of the rule */
	spec = Spec("dense: negative-looking keys across the sign flip", 5000, 6000);
	spec.keymap = KEYS_BIASED;
	spec.match_ratio = 0.6;
	spec.expect = EXPECT_DENSE;
	RunGenerated(&spec);

	spec = Spec("dense: duplicates up to UINT64_MAX, misses wrap to 0", 6000, 5000);
	spec.domain = 3000;
	spec.keymap = KEYS_TOP;
	spec.inner_skew = 0.5;
	spec.match_ratio = 0.7;
	spec.expect = EXPECT_DENSE;
	spec.max_matches = 999;
	RunGenerated(&spec);

	spec = Spec("dense: range of exactly 2n", 3000, 4000);
	spec.keymap = KEYS_EDGE;
	spec.edge_extra = 1;
	spec.match_ratio = 0.5;
	spec.expect = EXPECT_DENSE;
	RunGenerated(&spec);

	spec = Spec("hashed: range of 2n + 1", 3000, 4000);
	spec.keymap = KEYS_EDGE;
	spec.edge_extra = 2;
	spec.match_ratio = 0.5;
	spec.expect = EXPECT_HASHED;
	RunGenerated(&spec);

	spec = Spec("dense: stride 2, misses in the gaps", 4000, 4000);
	spec.keymap = KEYS_STRIDE;
	spec.stride = 2;
	spec.match_ratio = 0.5;
	spec.expect = EXPECT_DENSE;
	RunGenerated(&spec);

	spec = Spec("hashed: sparse keys, stride 3", 4000, 4000);
	spec.keymap = KEYS_STRIDE;
	spec.stride = 3;
	spec.match_ratio = 0.5;
	spec.expect = EXPECT_HASHED;
	RunGenerated(&spec);

	spec = Spec("dense: one repeated key", 2000, 600);
	spec.domain = 1;
	spec.keymap = KEYS_BIASED;
	spec.match_ratio = 0.9;
	spec.expect = EXPECT_DENSE;
	spec.max_matches = 4099;
	RunGenerated(&spec);

	spec = Spec("dense: one repeated key, NULL keys hold extremes", 1500, 500);
	spec.domain = 1;
	spec.inner_null_share = 0.5;
	spec.outer_null_share = 0.3;
	spec.null_keys_extreme = true;
	spec.expect = EXPECT_DENSE;
	spec.max_matches = 3000;
	RunGenerated(&spec);

	spec = Spec("dense: zipf 1.5 duplicates, NULL keys hold extremes", 8000, 8000);
	spec.domain = 2000;
	spec.inner_skew = 1.5;
	spec.outer_skew = 1.0;
	spec.inner_null_share = 0.2;
	spec.outer_null_share = 0.2;
	spec.null_keys_extreme = true;
	spec.match_ratio = 0.8;
	spec.expect = EXPECT_DENSE;
	spec.max_matches = 30000;
	RunGenerated(&spec);

	/* Payload columns: none, the most, every width */
	for (size_t i = 0; i < sizeof(column_sweep) / sizeof(column_sweep[0]); i++)
	{
		snprintf(names[n], sizeof(names[n]), "columns: %d outer + %d inner",
				 column_sweep[i][0], column_sweep[i][1]);
		spec = Spec(names[n++], i == 3 ? 300 : 3000, i == 3 ? 200 : 2000);
		SetColumns(&spec, column_sweep[i][0], column_sweep[i][1]);
		spec.domain = i == 3 ? 100 : 1000;
		spec.keymap = i % 2 ? KEYS_WIDE : KEYS_DENSE;
		spec.match_ratio = 0.8;
		spec.max_matches = 1234;
		RunGenerated(&spec);
	}

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
	spec.expect = EXPECT_NO_KEYS;
	RunGenerated(&spec);

	spec = Spec("outer all NULL", 3000, 3000);
	spec.outer_null_share = 1.0;
	RunGenerated(&spec);

	/* Empty sides, no matches */
	spec = Spec("empty inner", 0, 1000);
	spec.expect = EXPECT_NO_KEYS;
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
		/* a round of 1 is a round trip per match: fewer matches there */
		spec = Spec(names[n++], i == 0 ? 300 : 2000, i == 0 ? 400 : 2500);
		spec.domain = i == 0 ? 250 : 1500;
		spec.keymap = i == 1 ? KEYS_WIDE : KEYS_DENSE;
		spec.inner_null_share = 0.1;
		spec.max_matches = round_sizes[i];
		RunGenerated(&spec);
	}

	/* Several chunks against one build, and rebuilds on one context */
	spec = Spec("8 outer chunks", 10000, 3000);
	spec.domain = 5000;
	spec.nchunks = 8;
	spec.outer_null_share = 0.05;
	RunGenerated(&spec);

	spec = Spec("rebuild: dense, then hashed", 10000, 4000);
	spec.domain = 8000;
	spec.nchunks = 3;
	spec.rebuild = true;
	spec.decoy_keymap = KEYS_DENSE;
	spec.keymap = KEYS_WIDE;
	spec.expect = EXPECT_HASHED;
	RunGenerated(&spec);

	spec = Spec("rebuild: hashed, then dense", 10000, 4000);
	spec.domain = 8000;
	spec.nchunks = 2;
	spec.rebuild = true;
	spec.decoy_keymap = KEYS_WIDE;
	spec.keymap = KEYS_BIASED;
	spec.inner_null_share = 0.1;
	spec.expect = EXPECT_DENSE;
	RunGenerated(&spec);

	/* Large: 2M rows by default, GJ_TEST_LARGE_ROWS on a GPU host */
	snprintf(names[n], sizeof(names[n]),
			 "large: %lld unique x 2 chunks of %lld, 64-bit keys",
			 (long long) large_rows, (long long) (large_rows / 2));
	spec = Spec(names[n++], large_rows, large_rows / 2);
	SetColumns(&spec, 2, 2);
	spec.nchunks = 2;
	spec.match_ratio = 0.5;
	spec.keymap = KEYS_WIDE;
	spec.max_matches = 1 << 20;
	RunGenerated(&spec);

	snprintf(names[n], sizeof(names[n]),
			 "large: %lld dense duplicates x %lld, under a limit of 96 bytes a row",
			 (long long) large_rows, (long long) (large_rows / 2));
	spec = Spec(names[n++], large_rows, large_rows / 2);
	SetColumns(&spec, 2, 2);
	spec.domain = large_rows / 2;
	spec.inner_null_share = 0.01;
	spec.max_matches = 300000;
	spec.memory_limit = 96 * large_rows;
	RunGenerated(&spec);
}

#ifdef GPUJOIN_WITH_CUDA
/*
 * The process's cache of page-locked blocks (gj_cuda_pool_keep): a freed
 * block comes back for a request of at least half its size, not for a
 * smaller one nor past the cache's limit; a block is usable end to end
 */
static void
TestPinnedPool(void)
{
	char	   *a;
	char	   *b;
	char	   *c;

	gj_cuda_pool_keep(64 << 20, 1 << 20);
	a = gj_cuda_pinned_alloc(100000);
	if (a == NULL)
		Failf("no page-locked block of 100000 bytes");
	else
	{
		memset(a, 0x5a, 100000);
		gj_cuda_pinned_free(a);
		b = gj_cuda_pinned_alloc(60000);
		if (b != a)
			Failf("a request of 60000 bytes did not reuse the freed block of 100000");
		c = gj_cuda_pinned_alloc(40000);
		if (c == NULL || c == a)
			Failf("a request of 40000 bytes was given the block of 100000 (or none)");
		gj_cuda_pinned_free(b);
		gj_cuda_pinned_free(c);
	}
	Report("cuda", "pinned pool: reuse at half the size or more");

	/* 140000 bytes kept; a block past the cache's 1 MB is not */
	if (gj_cuda_pinned_cached() != 140000)
		Failf("%zu bytes cached, not 140000", gj_cuda_pinned_cached());
	a = gj_cuda_pinned_alloc(2 << 20);
	if (a == NULL)
		Failf("no page-locked block of 2 MB");
	else
		memset(a, 0x5a, 2 << 20);
	gj_cuda_pinned_free(a);
	if (gj_cuda_pinned_cached() != 140000)
		Failf("%zu bytes cached after a 2 MB block was freed, not 140000",
			  gj_cuda_pinned_cached());
	Report("cuda", "pinned pool: limits");

	/* a full cache keeps the block freed last, in place of the oldest */
	gj_cuda_pool_keep(64 << 20, 0);
	gj_cuda_pool_keep(64 << 20, 1 << 20);
	a = gj_cuda_pinned_alloc(400000);
	b = gj_cuda_pinned_alloc(400000);
	c = gj_cuda_pinned_alloc(300000);
	if (a == NULL || b == NULL || c == NULL)
		Failf("no page-locked blocks of 400000, 400000 and 300000 bytes");
	else
	{
		gj_cuda_pinned_free(a);
		gj_cuda_pinned_free(b);
		if (gj_cuda_pinned_cached() != 800000)
			Failf("%zu bytes cached, not 800000", gj_cuda_pinned_cached());
		gj_cuda_pinned_free(c);
		if (gj_cuda_pinned_cached() != 700000)
			Failf("%zu bytes cached after a third block, not 700000 (the oldest gone)",
				  gj_cuda_pinned_cached());
		a = gj_cuda_pinned_alloc(390000);
		if (a != b)
			Failf("a request of 390000 bytes did not get the block of 400000 freed second");
		if (gj_cuda_pinned_cached() != 300000)
			Failf("%zu bytes cached, not 300000", gj_cuda_pinned_cached());
		gj_cuda_pinned_free(a);
	}
	Report("cuda", "pinned pool: the blocks freed last stay");

	gj_cuda_pool_keep(0, 0);	/* empties the cache */
	if (gj_cuda_pinned_cached() != 0)
		Failf("%zu bytes cached with nothing to keep", gj_cuda_pinned_cached());
	a = gj_cuda_pinned_alloc(500000);
	if (a == NULL)
		Failf("no page-locked block of 500000 bytes after the cache was emptied");
	gj_cuda_pinned_free(a);
	if (gj_cuda_pinned_cached() != 0)
		Failf("%zu bytes cached with nothing to keep", gj_cuda_pinned_cached());
	Report("cuda", "pinned pool: emptied");
}
#endif

/*
 * Whether a group of tests runs: all of them, or those GJ_TEST_ONLY names
 * (a comma-separated list of joins, heap_deform, expr, agg, scan, chain)
 */
static bool
Wanted(const char *group)
{
	return group_filter == NULL || group_filter[0] == '\0' ||
		InList(group_filter, group, false);
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
	config_filter = getenv("GJ_TEST_CONFIGS");
	group_filter = getenv("GJ_TEST_ONLY");
	if (large_env != NULL && atoll(large_env) >= 2)
		large_rows = atoll(large_env);

#ifdef GPUJOIN_WITH_CUDA
	{
		GjError		err;
		GjDeviceInfo info;
		int			count;

		memset(&err, 0, sizeof(err));
		if ((count = gj_cuda_device_count(&err)) > 0 &&
			gj_cuda_device_info(0, &info, &err) == GJ_OK)
		{
			have_cuda = true;
			physical_devices = count;
			printf("CUDA devices: %d (spread joins go round them)\n", physical_devices);
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

	if (Wanted("joins"))
	{
		TestHandWritten();
		TestPhjRules();
		TestThetaRules();
		TestInvalidArguments(&gj_cpu_kernels, NULL);
		TestThetaInvalid(&gj_cpu_kernels);
	}
#ifdef GPUJOIN_WITH_CUDA
	if (have_cuda && Wanted("joins"))
	{
		TestInvalidArguments(&gj_cuda_kernels, &gj_cpu_kernels);
		TestThetaInvalid(&gj_cuda_kernels);
		for (int v = 0; v <= GJ_VARIANT_NLJ; v++)
			TestDeviceMemoryLimit((GjVariant) v);
		/*
		 * NLJ: 4.5 * 10^10 matches by default (150000 x 300000), whose
		 * count and retrieve take several launches over outer and inner
		 * slices on an H100 or H200; scaled down with GJ_TEST_LARGE_ROWS
		 */
		TestHugeCount(&gj_cuda_kernels, GJ_VARIANT_NLJ, large_rows * 3 / 40,
					  large_rows * 3 / 20);
		TestHugeCount(&gj_cuda_kernels, GJ_VARIANT_BAND, 100000, 100000);
		TestPinnedPool();
		TestPoolLimit();
	}
	if (have_cuda)
	{
		/*
		 * The rest as the gpujoin service runs them: what one context
		 * frees, device memory and page-locked rounds, is the next one's
		 */
		gj_cuda_pool_keep((size_t) 1 << 30, (size_t) 256 << 20);
	}
#endif
	if (Wanted("joins"))
	{
		TestSpreadDeviceFault(&gj_cpu_kernels, "cpu", GJ_SPREAD_PARTITION, 3);
		TestSpreadDeviceFault(&gj_cpu_kernels, "cpu", GJ_SPREAD_BROADCAST, 2);
		TestExchanges();
#ifdef GPUJOIN_WITH_CUDA
		if (have_cuda)
		{
			TestSpreadDeviceFault(&gj_cuda_kernels, "cuda", GJ_SPREAD_PARTITION, 3);
			TestSpreadDeviceFault(&gj_cuda_kernels, "cuda", GJ_SPREAD_BROADCAST, 2);
		}
#endif
		TestGenerated(large_rows);
		TestThetaHandWritten();
		TestThetaGenerated(large_rows);
	}
	if (Wanted("heap_deform"))
		TestHeapDeform();
	if (Wanted("expr"))
		TestExpr();
	if (Wanted("agg"))
		TestAgg();
	if (Wanted("scan"))
		TestScan();
	if (Wanted("chain"))
		TestChain();

	if (verbose)
		printf("%.1f s\n", (gj_clock_ms() - start) / 1000.0);
	printf("%d passed, %d failed\n", tests_passed, tests_failed);
	return tests_failed > 0 ? 1 : 0;
}
