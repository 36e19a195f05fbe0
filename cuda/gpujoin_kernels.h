/*-------------------------------------------------------------------------
 *
 * gpujoin_kernels.h
 *	  The interface between the PostgreSQL side (src/) and the kernels (cuda/)
 *
 * Plain C99 on purpose: it is included by PostgreSQL C files, by the CPU
 * twins and by nvcc.  Nothing declared here may throw, exit, longjmp or call
 * PostgreSQL; every function reports through its return value and the
 * caller's GjError.
 *
 * Each kernel file exists twice: cuda/DIR/X.cu (GPU) and, beside it,
 * cuda/DIR/X_cpu.c (CPU twin, the executable specification; cuda/README.md
 * lists the folders).  Both are reached through a GjKernels table, chosen
 * in src/device.c.
 *
 * THE CONTRACT
 *
 * A context is created for one join with a GjJoinSpec: the variant (the
 * join algorithm), the materialization (GFTR or GFUR), and the fixed-width
 * payload columns of each side.  build takes the whole inner side (keys and
 * payload columns), count one outer chunk, and retrieve hands out that
 * chunk's matches in rounds of at most max_matches: for each match, the
 * values of every payload column of both sides, materialized on the device,
 * and, when asked for, the row numbers of both rows (for the columns that
 * stay on the host).  A NULL key on either side never matches.
 *
 * Keys are one uint64 per row, normalized by the caller (src/keys.c) so
 * that equal SQL values have equal keys and, for exact keys, unsigned order
 * is SQL order.
 *
 * The matches of a chunk are numbered 0 .. nmatches-1 in one fixed order
 * that depends on the variant alone:
 *
 *	NPHJ	by outer row, then by inner row
 *	PHJ		by partition (the top bits of gj_hash64(key); how many bits
 *			is decided from the inner side's row count by one function in
 *			cuda/device/common.h that both implementations call), then by
 *			outer row, then by inner row
 *	SMJ		by key (unsigned), then by outer row, then by inner row
 *	BAND	by outer row, then by inner key (unsigned), then by inner row
 *	NLJ		by outer row, then by inner row
 *
 * The theta variants match on ranges and comparisons instead of equality
 * (Bellas and Gounaris 2017).  BAND: an outer
 * row matches the inner rows whose key lies in [keys[i], keys_hi[i]]
 * (inclusive, unsigned; the caller turns strict bounds into inclusive
 * ones), found by sorting the inner keys and searching both bounds.  NLJ:
 * an outer row matches the inner rows for which every term t holds:
 * inner.terms[t] OP[t] outer.terms[t] (unsigned comparison of normalized
 * values), evaluated for every pair by a tiled nested loop.  A NULL key,
 * bound or term on either side never matches.
 *
 * retrieve(first) returns the matches numbered first, first+1, ...  The
 * materialization changes how the values are gathered, never which values
 * come out: both implementations of a variant, with either
 * materialization, produce the very same arrays, so the kernel tests
 * compare them element by element, and a join may switch from the GPU to
 * the CPU twin between two calls and continue where it stood.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_KERNELS_H
#define GPUJOIN_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum GjStatus
{
	GJ_OK = 0,
	GJ_ERROR_NO_DEVICE,			/* no usable device: use the CPU twin */
	GJ_ERROR_DEVICE_MEMORY,		/* device allocation failed or over the
								 * limit: switch to the CPU twin */
	GJ_ERROR_HOST_MEMORY,		/* host allocation failed */
	GJ_ERROR_INVALID_ARGUMENT,	/* caller bug */
	GJ_ERROR_KERNEL,			/* launch, copy or execution failure */
	GJ_ERROR_PAGES_GONE			/* a deform's page that only a kept copy
								 * stood for is no longer kept: read it and
								 * call again (GjPageBatch) */
} GjStatus;

/* Filled by the callee when it returns anything but GJ_OK */
typedef struct GjError
{
	GjStatus	status;
	char		cuda_error[64];	/* e.g. "cudaErrorIllegalAddress", or "" */
	char		message[256];	/* becomes errdetail: a sentence ending in a
								 * period */
} GjError;

/*
 * Row numbers within one side.  The inner relation and each outer chunk hold
 * at most GJ_MAX_ROWS rows, so 32 bits are enough and matches cost 8 bytes
 * each on the bus.
 */
typedef uint32_t GjRowId;

/* The inner row number of a row with no match (GJ_OUTER_NONE, GJ_OUTER_LEFT): none */
#define GJ_NO_ROW		((GjRowId) 0xFFFFFFFF)

#define GJ_MAX_ROWS		((int64_t) 0x7FFFFFFF)

/* Functions of this header that the kernels also call on the device */
#ifdef __CUDACC__
#define GJ_HOST_DEVICE __host__ __device__
#else
#define GJ_HOST_DEVICE
#endif

/*
 * Hash a normalized 64-bit key
 *
 * The one hash of the interface: the kernels place keys by it, and src/
 * mixes the keys of several hashed clauses into one with it (keys.c).
 *
 * The 64-bit finalizer of MurmurHash3 (fmix64): two multiply-xorshift
 * rounds.  It is a bijection on 64-bit words, so distinct keys never share
 * a hash value, and every input bit affects every output bit with
 * probability close to one half, so dense integer keys (1, 2, 3, ...) and
 * keys that differ only in their high bits spread evenly over the buckets.
 */
static inline GJ_HOST_DEVICE uint64_t
gj_hash64(uint64_t key)
{
	uint64_t	h = key;

	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

/*
 * A float in PostgreSQL's float order as a signed 64-bit integer: -0 is 0,
 * NaN equals NaN and is above every other value (INT64_MAX); otherwise the
 * IEEE bits mapped the usual way (flip all bits of a negative number, the
 * sign bit of a positive one), which keeps -Infinity and Infinity at the
 * ends, and then shifted into the signed range.  src/keys.c codes float
 * join keys with it, and the heap deform (cuda/scan/) does on the device;
 * the grouped aggregation keys float groups by it (cuda/agg/, exec_agg.c),
 * whose words gj_agg_float_from_order turns back into floats (-0 as 0).
 */
static inline GJ_HOST_DEVICE int64_t
gj_float_key(double value)
{
	const uint64_t sign = UINT64_C(1) << 63;
	union
	{
		double		d;
		uint64_t	u;
	}			bits;

	if (value != value)			/* NaN */
		return INT64_MAX;
	if (value == 0.0)
		value = 0.0;			/* -0 is 0 */
	bits.d = value;
	bits.u = (bits.u & sign) ? ~bits.u : (bits.u | sign);
	/* the largest finite and infinite values stay below NaN's key */
	return (int64_t) (bits.u ^ sign);
}

/*
 * A float as an integer in PostgreSQL's order, -0 kept apart below 0 so
 * that it comes back as it went in (gj_agg_float_from_order): NaN (every
 * NaN) above everything.  The grouped aggregation's min and max compare
 * floats by it on the device (cuda/agg/), and src/ (exec_agg.c) turns the
 * extreme back into a float.
 */
static inline GJ_HOST_DEVICE int64_t
gj_agg_float_order(double value)
{
	const uint64_t sign = UINT64_C(1) << 63;
	union
	{
		double		d;
		uint64_t	u;
	}			bits;

	if (value != value)
		return INT64_MAX;
	bits.d = value;
	bits.u = (bits.u & sign) ? ~bits.u : (bits.u | sign);
	return (int64_t) (bits.u ^ sign);
}

static inline GJ_HOST_DEVICE double
gj_agg_float_from_order(int64_t order)
{
	const uint64_t sign = UINT64_C(1) << 63;
	union
	{
		double		d;
		uint64_t	u;
	}			bits;

	if (order == INT64_MAX)
	{
		bits.u = UINT64_C(0x7ff8000000000000);	/* the NaN PostgreSQL makes */
		return bits.d;
	}
	bits.u = (uint64_t) order ^ sign;
	bits.u = (bits.u & sign) ? (bits.u & ~sign) : ~bits.u;
	return bits.d;
}

/*
 * One row's non-NULL key values (each a signed 64-bit integer in SQL order)
 * packed into the uint64 the kernels compare: exact, the values' fields of
 * bits[i] bits each, their sign bits flipped so that unsigned order of the
 * packed key is SQL order of the values, first key most significant; not
 * exact, the values hashed together.  Both sides of a join must pack with
 * the same bits[] and exact, which the plan stores.
 */
static inline GJ_HOST_DEVICE uint64_t
gj_pack_keys(const int64_t *values, const int32_t *bits, int nkeys, bool exact)
{
	uint64_t	key = 0;

	if (exact)
	{
		for (int i = 0; i < nkeys; i++)
		{
			uint64_t	field = (uint64_t) values[i] ^ (UINT64_C(1) << (bits[i] - 1));

			if (bits[i] < 64)
			{
				field &= (UINT64_C(1) << bits[i]) - 1;
				key = (key << bits[i]) | field;
			}
			else
				key = field;	/* only possible with one key */
		}
	}
	else
	{
		for (int i = 0; i < nkeys; i++)
			key = gj_hash64(key ^ (uint64_t) values[i]) + UINT64_C(0x9e3779b97f4a7c15);
	}
	return key;
}

/*
 * Row row's integer of an array of signed integers of width 4 or 8 bytes,
 * packed as one key (a chain's key, GjKernels.pack_keys: the twin's loop
 * and CUDA's kernel)
 */
static inline GJ_HOST_DEVICE uint64_t
gj_pack_int_key(const void *values, int width, int64_t row, int32_t bits, bool exact)
{
	int64_t		v = width == 4 ? (int64_t) ((const int32_t *) values)[row] :
		((const int64_t *) values)[row];

	return gj_pack_keys(&v, &bits, 1, exact);
}

/* The join algorithms, one file each in cuda/join/ */
typedef enum GjVariant
{
	GJ_VARIANT_NPHJ = 0,		/* non-partitioned hash join: one global
								 * table; dense integer keys index it
								 * directly */
	GJ_VARIANT_PHJ,				/* radix-partitioned hash join */
	GJ_VARIANT_SMJ,				/* sort-merge join: matches in key order */
	GJ_VARIANT_BAND,			/* range join: sorted inner keys, both
								 * bounds searched per outer row */
	GJ_VARIANT_NLJ,				/* theta join: tiled nested loop over
								 * comparison terms */
	GJ_VARIANT_SCAN				/* no join: every outer row is one match,
								 * of no inner row (a GpuPreAgg over a
								 * scan); the inner side has no payload
								 * columns and is not read, no batch needs
								 * keys, and a round's inner maps are not
								 * written */
} GjVariant;

#define GJ_NUM_VARIANTS		6

/* Comparisons of an NLJ term: inner value OP outer value, unsigned */
typedef enum GjThetaOp
{
	GJ_THETA_LT = 0,
	GJ_THETA_LE,
	GJ_THETA_GT,
	GJ_THETA_GE,
	GJ_THETA_EQ,
	GJ_THETA_NE
} GjThetaOp;

/* Comparison terms an NLJ join may evaluate on the device */
#define GJ_MAX_TERMS		8

/* How payload columns are materialized (Wu et al. 2025, §4.1) */
typedef enum GjMaterialize
{
	GJ_MATERIALIZE_GFUR = 0,	/* transform (key, row id); gather the
								 * payloads by row id */
	GJ_MATERIALIZE_GFTR			/* transform every (key, payload) pair with
								 * the same stable transform; gather from
								 * the transformed columns */
} GjMaterialize;

/* Devices one join may be spread over (SEVERAL DEVICES, below) */
#define GJ_MAX_DEVICES		16

/* How a join is spread over several devices */
typedef enum GjSpread
{
	GJ_SPREAD_BROADCAST = 0,	/* every device builds the whole inner side
								 * and probes a slice of each chunk */
	GJ_SPREAD_PARTITION			/* the rows of both sides go to the device
								 * their key's hash names; each builds and
								 * probes its own (equi-joins only) */
} GjSpread;

/* Fixed-width payload columns a side may send to the device */
#define GJ_MAX_COLUMNS		32

/* One fixed-width payload column of a batch */
typedef struct GjColumn
{
	const void *values;			/* nrows values of width bytes, packed */
	const uint8_t *nulls;		/* 1 = NULL; the pointer itself is NULL
								 * when no value is NULL */
} GjColumn;

/* Rows of one side: the whole inner side, or one outer chunk */
typedef struct GjBatch
{
	const uint64_t *keys;		/* one normalized key per row */
	const uint8_t *nulls;		/* 1 = NULL key, never matches; the pointer
								 * itself is NULL when no key is NULL */
	int64_t		nrows;			/* 0 .. GJ_MAX_ROWS */
	const GjColumn *columns;	/* the spec's ncolumns of this side */
	const uint64_t *keys_hi;	/* BAND, outer side: the upper bound of each
								 * row's range (keys holds the lower bound);
								 * NULL otherwise */
	const uint64_t *terms[GJ_MAX_TERMS];	/* NLJ: the spec's nterms values
											 * per row; keys are unused */
	const uint8_t *term_nulls[GJ_MAX_TERMS];	/* 1 = NULL value, never
												 * matches; NULL pointer
												 * when none is */
	const GjRowId *row_numbers; /* per row, the number matches report for
								 * it (GjMatchRound's rows); NULL: its
								 * position in the batch (a PARTITION
								 * spread's parts have them) */
} GjBatch;

/*
 * Which outer rows a join's matches are (GjJoinSpec.outer_match): every
 * match of every row (inner, and the host's emission makes the other join
 * types of them); for a semi join, each row's first match only (the row
 * once, where it has any); for an anti join, each row with no match
 * (a NULL key included) once, its inner row GJ_NO_ROW; for a left join,
 * every match, and each row with none once, its inner row GJ_NO_ROW and
 * its inner columns NULL (the inner columns of such a context always have
 * NULL flags in its rounds, whether its inner batch gave any or not).
 * Semi and anti are for NPHJ with no inner payload columns (their rows
 * carry none), left for NPHJ: a chain's levels (CHAINS OF JOINS) drop,
 * keep or NULL-extend a row on the device.
 */
typedef enum GjOuterMatch
{
	GJ_OUTER_ALL = 0,
	GJ_OUTER_FIRST,
	GJ_OUTER_NONE,
	GJ_OUTER_LEFT
} GjOuterMatch;

/* Do rows with no match come out of a join of this outer match (anti, left)? */
static inline bool
gj_outer_match_unmatched(uint8_t outer_match)
{
	return outer_match == GJ_OUTER_NONE || outer_match == GJ_OUTER_LEFT;
}

/* What a context is created for */
typedef struct GjJoinSpec
{
	GjVariant	variant;
	GjMaterialize materialize;
	int32_t		outer_ncolumns; /* 0 .. GJ_MAX_COLUMNS */
	int32_t		outer_widths[GJ_MAX_COLUMNS];	/* 1, 2, 4 or 8 bytes */
	int32_t		inner_ncolumns;
	int32_t		inner_widths[GJ_MAX_COLUMNS];
	bool		row_ids;		/* also return the row numbers of each match */
	uint8_t		outer_match;	/* GjOuterMatch; 0 (GJ_OUTER_ALL) for all
								 * but a chain's semi, anti and left
								 * levels */
	int32_t		nterms;			/* NLJ: comparison terms, 1 .. GJ_MAX_TERMS */
	GjThetaOp	ops[GJ_MAX_TERMS];	/* NLJ: term t is inner OP outer */
	int64_t		max_matches;	/* capacity of one round, at least 1 */
	int64_t		memory_limit;	/* most device bytes the context may hold;
								 * 0: what the device has free (the CPU twin
								 * ignores it) */

	/*
	 * SEVERAL DEVICES (below): the CUDA ordinal a context of one device
	 * runs on (the CPU twin ignores it); or, with ndevices 2 or more, the
	 * join is spread over devices[0 .. ndevices - 1] (an ordinal may
	 * repeat: logical devices) as spread says, by a table of
	 * gj_spread_kernels.  0, 0: device 0, one device.
	 */
	int32_t		device;
	int32_t		ndevices;
	int32_t		devices[GJ_MAX_DEVICES];
	uint8_t		spread;			/* GjSpread */

	/*
	 * A test aid of a spread: 1 + the device whose first count fails with
	 * fault_status (GJ_ERROR_KERNEL or GJ_ERROR_DEVICE_MEMORY), once; 0 for
	 * none
	 */
	uint8_t		fault_device;
	int8_t		fault_status;
} GjJoinSpec;

/*
 * One round of matches.  The arrays belong to the context and stay valid
 * until the next call on it.
 */
typedef struct GjMatchRound
{
	int64_t		nmatches;		/* matches in this round */
	const GjRowId *outer_rows;	/* row within the outer chunk; NULL unless
								 * spec.row_ids */
	const GjRowId *inner_rows;	/* row within the inner side; likewise
								 * (and NULL for SCAN, whose matches have
								 * no inner row) */
	const void *outer_values[GJ_MAX_COLUMNS];	/* nmatches values of each
												 * outer payload column */
	const uint8_t *outer_nulls[GJ_MAX_COLUMNS]; /* and their NULL flags;
												 * NULL when the column came
												 * without NULL flags */
	const void *inner_values[GJ_MAX_COLUMNS];
	const uint8_t *inner_nulls[GJ_MAX_COLUMNS];
} GjMatchRound;

/* Counters a context keeps over its lifetime, for EXPLAIN ANALYZE */
typedef struct GjStats
{
	int64_t		bytes_to_device;	/* host to device copies */
	int64_t		bytes_from_device;	/* device to host copies */
	double		transfer_ms;	/* time in those copies */
	double		build_ms;		/* build, copies excluded */
	double		probe_ms;		/* count, copies excluded */
	double		materialize_ms; /* retrieve, copies excluded */
	int64_t		device_memory_peak; /* most bytes held at once (0 for CPU) */
	char		detail[64];		/* what the last build chose, for EXPLAIN,
								 * e.g. "dense keys" or "radix bits 2x8" */

	/* spread over several devices (0 otherwise): per device, the rows it
	 * took (inner rows built plus outer rows probed) and the matches it
	 * found; and the bytes of keys, payload values and NULL flags the
	 * spread moved to a device beyond one copy of each side (PARTITION:
	 * every row, gathered for its device; BROADCAST: the inner side's
	 * copies past the first) */
	int32_t		ndevices;
	int64_t		device_rows[GJ_MAX_DEVICES];
	int64_t		device_matches[GJ_MAX_DEVICES];
	int64_t		bytes_exchanged;

	/*
	 * PARTITION's exchange (a spread reports the slowest device's times and
	 * the sum of the bytes): exchange_ms is the time a device spent finding
	 * each row's device, sorting and gathering the runs it sends (after
	 * their copy from the host) and copying in the runs it receives;
	 * exchange_copy_ms those copies alone (also in transfer_ms), which
	 * brought bytes_received from the other devices' runs
	 */
	double		exchange_ms;
	double		exchange_copy_ms;
	int64_t		bytes_received;
} GjStats;

typedef struct GjContext GjContext;	/* opaque: buffers, streams, the table */

/*
 * PARTITION's exchange (SEVERAL DEVICES, below): what one device sent, or
 * the part one device received.  The caller holds the struct; the base
 * fills it and keeps its arrays behind impl until exchange_free.
 */
typedef struct GjExchange
{
	int32_t		ndevices;		/* sent: the devices the rows went to */
	int64_t		rows[GJ_MAX_DEVICES];	/* sent: the rows for each device */
	GjBatch		batch;			/* received: the part, on the receiver's
								 * device (build and count take it as
								 * they take a batch in host memory) */
	GjColumn	columns[GJ_MAX_COLUMNS];	/* batch.columns */
	void	   *impl;			/* the base's arrays; NULL once freed */
} GjExchange;

/* HEAP PAGES TO COLUMNS and GROUPED AGGREGATION, below */
struct GjPageBatch;
struct GjDeformSpec;
struct GjDeformOut;
struct GjAggSpec;
struct GjAggResult;
struct GjKeyPack;				/* CHAINS OF JOINS, below */

typedef struct GjKernels
{
	const char *name;			/* "cuda" or "cpu" */

	GjStatus	(*context_create) (GjContext **ctx, const GjJoinSpec *spec,
								   GjError *err);
	void		(*context_destroy) (GjContext *ctx);	/* accepts NULL, cannot
														 * fail */
	void		(*context_stats) (const GjContext *ctx, GjStats *stats);

	/* Build on the inner side; replaces any earlier build */
	GjStatus	(*build) (GjContext *ctx, const GjBatch *inner, GjError *err);
	/* Count the matches of one outer chunk; forgets the previous chunk */
	GjStatus	(*count) (GjContext *ctx, const GjBatch *outer,
						  int64_t *nmatches, GjError *err);
	/* Matches numbered first .. first+max_matches-1 of the counted chunk */
	GjStatus	(*retrieve) (GjContext *ctx, int64_t first,
							 GjMatchRound *round, GjError *err);

	/*
	 * Deform tuples first .. first + n - 1 of a page batch into a side's
	 * arrays (HEAP PAGES TO COLUMNS, below); independent of the build and
	 * the chunks, so any time after context_create
	 */
	GjStatus	(*heap_deform) (GjContext *ctx, const struct GjPageBatch *pages,
								const struct GjDeformSpec *spec, int64_t first,
								int64_t n, struct GjDeformOut *out, GjError *err);

	/*
	 * heap_deform in two halves, so that the caller can stage the next
	 * pages while the device deforms these: heap_deform_start ships the
	 * tuples and queues the work; heap_deform_finish waits for it and
	 * writes out (the pointer given to start).  Until finish returns, the
	 * pages and tuple offsets must stay as they are and no other call may
	 * use the context.  The CPU twin does the whole deform in start.
	 */
	GjStatus	(*heap_deform_start) (GjContext *ctx, const struct GjPageBatch *pages,
									  const struct GjDeformSpec *spec, int64_t first,
									  int64_t n, struct GjDeformOut *out, GjError *err);
	GjStatus	(*heap_deform_finish) (GjContext *ctx, GjError *err);

	/*
	 * Host memory to stage pages in, that copies to the device read at the
	 * bus's full speed: page-locked on the device, plain on the CPU twin.
	 * No context needed; NULL when there is none to be had (the caller
	 * stages in ordinary memory then).  stage_free takes what stage_alloc
	 * gave, or NULL.
	 */
	void	   *(*stage_alloc) (size_t bytes);
	void		(*stage_free) (void *ptr);

	/*
	 * GROUPED AGGREGATION (below): agg_begin sets the aggregates and starts
	 * with no group; aggregate folds the matches first .. first +
	 * max_matches - 1 of the counted chunk (a round, as retrieve hands it
	 * out) into the groups, without returning them; agg_result gives the
	 * groups.  A build or count in between keeps the groups.  aggregate
	 * fails with GJ_ERROR_DEVICE_MEMORY only before it has folded any of
	 * the round (groups that outgrow the room spill instead): the caller
	 * may then take the groups and fold the same round elsewhere.
	 */
	GjStatus	(*agg_begin) (GjContext *ctx, const struct GjAggSpec *spec, GjError *err);
	GjStatus	(*aggregate) (GjContext *ctx, int64_t first, int64_t *nmatches,
							  int64_t *undecided, GjError *err);
	GjStatus	(*agg_result) (GjContext *ctx, struct GjAggResult *out, GjError *err);

	/*
	 * SHARED BUILDS: make *ctx a new context that probes the build of
	 * built, a context of the same table that has built.  The new context
	 * has built's spec and its own chunks, rounds and groups; it reads
	 * built's table and inner payload columns in place, never changes
	 * them, and cannot build.  Several contexts may probe one build at
	 * once, from different threads, while built counts and retrieves
	 * chunks of its own; built must not build again nor be destroyed
	 * while a context shares it (the caller keeps that order).  Only the
	 * variants of gj_variant_shares_build (NPHJ) can share;
	 * GJ_ERROR_INVALID_ARGUMENT for the others and for a built that has
	 * no build.
	 */
	GjStatus	(*context_share) (GjContext **ctx, GjContext *built, GjError *err);

	/*
	 * PARTITION's exchange, the device work of a spread (SEVERAL DEVICES,
	 * below; gj_spread_kernels calls these on its devices' contexts):
	 * exchange_send takes rows start .. end - 1 of a side (inner: the
	 * build's; else a chunk's) onto ctx's device and partitions those with
	 * a non-NULL key into ndevices runs by gj_spread_device, each in the
	 * side's order; sent->rows[t] is the length of run t.  Once every
	 * device has sent, exchange_receive gathers run "self" of each of
	 * nsent sends, in their order, into part->batch on ctx's device: keys
	 * (none NULL), payload columns (with NULL flags where the side has
	 * them) and row_numbers, each row's number in the whole side.  The
	 * runs move between devices over their peer links where the devices
	 * have them, through the host where not.  exchange_free frees what
	 * either made (a freed or zeroed exchange is accepted).  Sends must
	 * stay until every receive is done, a part until the build or count
	 * that takes it.
	 */
	GjStatus	(*exchange_send) (GjContext *ctx, const GjBatch *side, bool inner,
								  int64_t start, int64_t end, int ndevices,
								  GjExchange *sent, GjError *err);
	GjStatus	(*exchange_receive) (GjContext *ctx, const GjExchange *sent,
									 int nsent, int self, GjExchange *part,
									 GjError *err);
	void		(*exchange_free) (GjExchange *x);

	/*
	 * retrieve, with the round's arrays left where the kernels keep them
	 * (CUDA: the context's device memory; the CPU twin: its host arrays),
	 * valid until the next call on ctx: not for the host to read, only to
	 * hand to build or count of a context of the same table, which copy
	 * them as they copy a batch in host memory.  A chain of joins (CHAINS
	 * OF JOINS, below) hands a level's matches to the next level so.
	 * Tables whose rounds come through the host (the gpujoin service's)
	 * give retrieve here.
	 */
	GjStatus	(*retrieve_device) (GjContext *ctx, int64_t first,
									GjMatchRound *round, GjError *err);

	/*
	 * build, on an inner side given as nparts parts, concatenated in their
	 * order: row r of part p is row r + the rows of parts 0 .. p - 1.  The
	 * parts carry keys and payload columns (NULL flags where a part has
	 * them), nothing else, and need not outlive the call.  The kernels
	 * gather them where they build (CUDA: into device memory, one copy
	 * per array of each part, counted against the context's memory
	 * limit), so that the shares of a parallel join's inner side, read by
	 * several processes, are never copied together on the host.  NULL in
	 * the tables of the gpujoin service's clients (the service calls its
	 * own).
	 */
	GjStatus	(*build_parts) (GjContext *ctx, const GjBatch *parts, int nparts,
								GjError *err);

	/*
	 * A chain's step from one level to the next in one call (CHAINS OF
	 * JOINS, gj_chain_hand_down): the round of from's counted chunk that
	 * starts at match first, counted by to, which probes with column key
	 * of it; *handed its matches, *nmatches to's.  For a table whose
	 * rounds would otherwise come through the host between two calls (the
	 * gpujoin service's clients: the service runs the step where the
	 * kernels keep the round).  NULL elsewhere: the chain calls
	 * retrieve_device and count itself.
	 */
	GjStatus	(*hand_down) (GjContext *from, int64_t first, GjContext *to, int key,
							  const struct GjKeyPack *pack, int64_t *handed,
							  int64_t *nmatches, GjError *err);

	/*
	 * A chain's key packed where the kernels keep it (CHAINS OF JOINS,
	 * GjKeyPack): n integers of width bytes (4 or 8, signed) at values,
	 * where retrieve_device leaves a round's column (or in host memory),
	 * each packed as gj_pack_keys packs one key of bits bits, exact or
	 * not; *keys points at the n keys, in ctx's memory (the device's for
	 * CUDA), valid until the next pack_keys on ctx, for a count on ctx.
	 * A NULL row's key is packed from whatever its value holds (the count
	 * reads its NULL flag).  NULL in the tables of the gpujoin service's
	 * clients (the service packs in its hand_down) and of spreads.
	 */
	GjStatus	(*pack_keys) (GjContext *ctx, const void *values, int width, int64_t n,
							  int32_t bits, bool exact, const uint64_t **keys,
							  GjError *err);

	/*
	 * Which of n blocks of a relation (its 3 words: GjPageBatch.relation)
	 * the pages the deform keeps (page_size bytes each) hold under LSN
	 * lsns[i] (not 0): counts[i] the tuples listed when the copy was made,
	 * -1 where none is; nothing is held (a deform that finds one gone says
	 * so).  The only call that may come while a deform of the context is
	 * started and not finished.  NULL: the kernels keep no pages.
	 */
	GjStatus	(*pages_kept) (GjContext *ctx, const uint32_t relation[3],
							   const uint32_t *blocks, const uint64_t *lsns, int64_t n,
							   int32_t page_size, int16_t *counts, GjError *err);
} GjKernels;

/*
 * SEVERAL DEVICES (cuda/device/spread.c)
 *
 * gj_spread_kernels(base) is a table that runs each join whose spec has
 * ndevices >= 2 on that many contexts of base (gj_cpu_kernels or
 * gj_cuda_kernels), one per device (spec.devices[i] as the i-th
 * context's spec.device), each in a thread of its own while they work at
 * once; NULL for another base.  Specs of one device go to base as they
 * are.  memory_limit is split evenly among the devices.
 *
 *	BROADCAST	every device builds the whole inner side; a chunk is cut
 *				into ndevices slices of consecutive rows, device i counts
 *				slice i
 *	PARTITION	a row with a non-NULL key goes to device
 *				gj_spread_device(key, ndevices) (rows with a NULL key
 *				match nothing and go nowhere): device i takes slice i of
 *				the side and partitions it into one run per device
 *				(exchange_send), then each device gathers its runs from
 *				all of them, device by device (exchange_receive: peer
 *				copies between GPUs), so each part keeps the side's order
 *				and carries each row's number in the whole side
 *				(GjBatch.row_numbers); NPHJ, PHJ and SMJ only
 *
 * Each device's matches come in its variant's order over its rows, with
 * the whole side's row numbers.  BROADCAST numbers the chunk's matches
 * device by device, so it keeps the order of NPHJ, BAND and NLJ (by outer
 * row first) and PHJ's within each slice; a round ends at its device's
 * last match.  PARTITION keeps no order across devices and numbers them
 * in blocks of max_matches: block 0 of each device in turn, then block 1,
 * and so on; a round holds one block (or what is left of it), and the
 * first round of a block is fetched at once with the same block of the
 * later devices, each device copying its own over its own link.  So a
 * round may be shorter than max_matches with matches left, and a spread
 * aggregate must start where a round does.  A round's arrays are its
 * device's context's (so they move from one device's to the next's; each
 * stays valid until the next call).  Both bases number alike, so a spread
 * join may move from the GPUs to the CPU twin between calls as one of a
 * single device does.  Aggregation folds each device's matches into its
 * own groups; agg_result combines the devices' groups on the host, so
 * that a group key comes back once (gj_agg_combine, the words a device
 * combines with; a float sum in another order than one device's).  Heap
 * pages are deformed on the first device; context_share shares each
 * device's build.  A device that fails: each call reports the first
 * failing device's error, its message saying which device it was, once
 * every device's thread has returned (nothing waits on a device that
 * failed); the tests make one fail with the spec's fault_device.
 */
extern const GjKernels *gj_spread_kernels(const GjKernels *base);

/* The device (0 .. ndevices - 1) a PARTITION spread sends a key to: the
 * low 32 bits of its hash, scaled, so that the top bits PHJ partitions
 * by stay spread on each device */
static inline GJ_HOST_DEVICE int
gj_spread_device(uint64_t key, int ndevices)
{
	return (int) (((gj_hash64(key) & UINT64_C(0xFFFFFFFF)) * (uint64_t) ndevices) >> 32);
}

/*
 * CHAINS OF JOINS (cuda/device/chain.c)
 *
 * A chain joins each outer chunk to the inner sides of several levels in
 * turn (a star or snowflake query's fact table to its dimensions, Shanbhag
 * et al. 2020), without a level's matches leaving the device: level 0
 * counts the chunk; each round of its matches, left where the kernels keep
 * them (retrieve_device), is a chunk that level 1 counts; and so on.  The
 * last level's counted chunks are the chain's: the caller retrieves or
 * aggregates them on that level's context as on any other.
 *
 * A level is a context of the one GjKernels table that has built on its
 * inner side (NPHJ, PHJ or SMJ, either materialization; its variant and
 * round size its own), made with row_ids (the last one: as the caller
 * wants).  The rows a level counts carry every column the levels above
 * them gave: level 0's outer columns are the chunk's payload columns;
 * level k + 1's are, in this order, level k's outer columns, level k's
 * inner columns, and level k's inner row numbers (a column of width 4,
 * never NULL), so level k + 1's spec gives its outer side
 * gj_chain_columns(k + 1) = outer_ncolumns(k) + inner_ncolumns(k) + 1
 * columns of those widths.  Level 0 probes with the chunk's keys; level
 * k + 1 with the column key_columns[k + 1] of its outer columns (its
 * NULL flags are the key's): a normalized key (width 8), or an integer
 * column packed into one for the rows handed down (packs[k + 1],
 * GjKeyPack); a column of the chunk (a star) or of an earlier level's
 * inner side (a snowflake).  A
 * level's outer row numbers are the chunk's (GjBatch.row_numbers carries
 * them down), so the last level's rounds give for each match the chunk's
 * row (outer_rows), the row of each earlier level (its row-number column)
 * and the last level's row (inner_rows).
 *
 * A row that finds no match at a level is dropped there, unless the
 * level's outer_match is GJ_OUTER_NONE (an anti join: only such rows go
 * on, with GJ_NO_ROW as that level's row number) or GJ_OUTER_LEFT (a left
 * join: such a row goes on once, GJ_NO_ROW and its inner columns NULL);
 * GJ_OUTER_FIRST (a semi join) hands a row on once however many inner
 * rows it matches.
 * Matches come level by level: the chain's matches are those of the last
 * level's chunks in turn, which follow level 0's rounds, then each round's
 * matches at level 1, and so on, each in its level's variant's order.
 *
 * The caller holds the GjChain (gj_chain_init fills it); its levels stay
 * the caller's.  gj_chain_count starts a chunk (level 0 counts it; the
 * chunk's arrays need not outlive the call), and each gj_chain_next leaves
 * the next chunk of the last level counted, with *nmatches > 0 matches, or
 * returns 0 matches when the chunk is done; the caller takes those matches
 * before calling gj_chain_next again.  on_host (a test and benchmark aid)
 * hands the rounds between levels through the host (retrieve), as
 * separate joins stacked one on another would.
 */
#define GJ_MAX_LEVELS		8

/*
 * How a level above the lowest gets its key from the column it probes
 * with: width 0, the column is the 8-byte normalized key (the caller
 * encoded it); width 4 or 8, the column holds the signed integers
 * themselves, packed as one key of bits bits (gj_pack_keys, exact or
 * not) by the kernels' pack_keys for the rows handed down to the level,
 * so that the caller encodes nothing and no key column is carried
 */
typedef struct GjKeyPack
{
	int32_t		width;
	int32_t		bits;
	bool		exact;
} GjKeyPack;

typedef struct GjChain
{
	const GjKernels *kernels;
	int32_t		nlevels;		/* 1 .. GJ_MAX_LEVELS */
	GjContext  *levels[GJ_MAX_LEVELS];
	int32_t		key_columns[GJ_MAX_LEVELS]; /* level 0's unused */
	GjKeyPack	packs[GJ_MAX_LEVELS];	/* level 0's unused */
	int32_t		ncolumns[GJ_MAX_LEVELS];	/* outer columns of each level */
	int32_t		inner_ncolumns[GJ_MAX_LEVELS];
	bool		on_host;

	/* per level, the chunks it counted, their rows and the matches it
	 * found, summed since gj_chain_init (EXPLAIN ANALYZE's) */
	int64_t		chunks[GJ_MAX_LEVELS];
	int64_t		rows_in[GJ_MAX_LEVELS];
	int64_t		rows_out[GJ_MAX_LEVELS];

	/* the walk over the levels' rounds (chain.c) */
	int64_t		nmatches[GJ_MAX_LEVELS];	/* of the chunk each level counted */
	int64_t		next[GJ_MAX_LEVELS];	/* its first match not handed down */
	int32_t		depth;			/* the deepest level with a counted chunk */
	bool		last_taken;		/* one level: its chunk was handed out */
	GjColumn	columns[GJ_MAX_COLUMNS];	/* the chunk handed down */
} GjChain;

/* Outer columns of level "level" of a chain whose levels have the given
 * inner columns, level 0 having chunk_ncolumns */
static inline int
gj_chain_columns(int chunk_ncolumns, const int32_t *inner_ncolumns, int level)
{
	int			n = chunk_ncolumns;

	for (int k = 0; k < level; k++)
		n += inner_ncolumns[k] + 1;
	return n;
}

extern GjStatus gj_chain_init(GjChain *chain, const GjKernels *kernels, int nlevels,
							  GjContext *const *levels, const GjJoinSpec *specs,
							  const int32_t *key_columns, const GjKeyPack *packs,
							  GjError *err);
extern GjStatus gj_chain_count(GjChain *chain, const GjBatch *chunk, GjError *err);
extern GjStatus gj_chain_next(GjChain *chain, int64_t *nmatches, GjError *err);

/*
 * One step of the walk, on contexts of kernels: the round of matches from
 * first of from's counted chunk (from's spec has nouter and ninner
 * columns), left where the kernels keep it (retrieve_device; retrieve
 * with on_host), counted by to, which probes with its outer column key;
 * columns (GJ_MAX_COLUMNS) describe the round to that count; the key
 * packed by to's pack_keys first where pack's width is not 0.  *handed is
 * the round's matches, *nmatches to's.  The chain's own walk calls it, or
 * GjKernels.hand_down where the table has one (whose service runs this).
 */
extern GjStatus gj_chain_hand_down(const GjKernels *kernels, GjContext *from, int64_t first,
								   int nouter, int ninner, bool on_host, GjContext *to,
								   int key, const GjKeyPack *pack, GjColumn *columns,
								   int64_t *handed, int64_t *nmatches, GjError *err);

/*
 * Can a join of this variant be partitioned by key over several devices?
 * Not a theta join (BAND, NLJ) nor a SCAN: no key to partition by; they
 * are broadcast (SEVERAL DEVICES)
 */
static inline bool
gj_variant_partitions(GjVariant variant)
{
	return variant != GJ_VARIANT_BAND && variant != GJ_VARIANT_NLJ && variant != GJ_VARIANT_SCAN;
}

/* Can contexts of this variant share one build (GjKernels.context_share)? */
static inline bool
gj_variant_shares_build(GjVariant variant)
{
	return variant == GJ_VARIANT_NPHJ;
}

/*
 * DEVICE EXPRESSIONS (cuda/expr/expr.h)
 *
 * A scalar expression that src/ (planner_expr.c) compiled from a
 * PostgreSQL expression tree, as a postfix program: each step pops its
 * operands from a small stack of values and pushes its result.  The same
 * interpreter (gj_expr_eval, expr.h) runs per row on the device and in the
 * CPU twin.  A value is a 64-bit integer (bool, int2/4/8, and the types
 * stored as integers: date, time, timestamp(tz), oid) or a double (float4,
 * float8; a float4's value is exact in a double), with a NULL flag.
 *
 * The evaluation is eager: every step runs on every row.  A step that
 * PostgreSQL would answer with an error (overflow, division by zero) makes
 * the row's outcome "undecided" instead; src/ then evaluates PostgreSQL's
 * own expression for that row, which raises the error or not exactly as
 * PostgreSQL's evaluation order decides (a qual "b <> 0 AND a / b > 1" does
 * not divide where b is 0).  Undecided is therefore always safe: a step may
 * claim it more often than PostgreSQL would fail, never less.
 */
typedef enum GjExprType
{
	GJ_EXPR_BOOL = 0,			/* integer 0 or 1 */
	GJ_EXPR_INT2,				/* integers: the width bounds arithmetic */
	GJ_EXPR_INT4,
	GJ_EXPR_INT8,				/* also date, time, timestamp(tz), oid */
	GJ_EXPR_FLOAT4,				/* doubles: float4 arithmetic rounds to float */
	GJ_EXPR_FLOAT8
} GjExprType;

typedef enum GjExprOp
{
	GJ_EXPR_INPUT = 0,			/* push inputs[arg] */
	GJ_EXPR_CONST,				/* push consts[arg] */
	/* pop b, pop a, push a op b; type: the result's (int2pl: INT2) */
	GJ_EXPR_ADD,
	GJ_EXPR_SUB,
	GJ_EXPR_MUL,
	GJ_EXPR_DIV,				/* integers truncate toward zero */
	GJ_EXPR_MOD,				/* integers only */
	GJ_EXPR_NEG,				/* pop a, push -a */
	/* pop b, pop a, push a cmp b (BOOL); type: the operands' domain, an
	 * integer type or a float type (floats in PostgreSQL's order: NaN
	 * equal to itself and above everything, -0 = 0) */
	GJ_EXPR_EQ,
	GJ_EXPR_NE,
	GJ_EXPR_LT,
	GJ_EXPR_LE,
	GJ_EXPR_GT,
	GJ_EXPR_GE,
	GJ_EXPR_AND,				/* pop arg values, push their AND (SQL's
								 * three-valued logic) */
	GJ_EXPR_OR,					/* likewise OR */
	GJ_EXPR_NOT,
	GJ_EXPR_IS_NULL,			/* pop a, push whether it is NULL (never NULL) */
	GJ_EXPR_IS_NOT_NULL,
	GJ_EXPR_IS_TRUE,			/* BooleanTest: never NULL */
	GJ_EXPR_IS_NOT_TRUE,
	GJ_EXPR_IS_FALSE,
	GJ_EXPR_IS_NOT_FALSE,
	GJ_EXPR_CAST,				/* pop a of type from, push it as type
								 * (int4 to int2 checks the range, int and
								 * float convert as PostgreSQL's casts do) */
	GJ_EXPR_ANY,				/* pop a, push a cmp ANY (consts[arg] ..
								 * consts[arg + count - 1]): IN (...) */
	GJ_EXPR_ALL,				/* likewise ALL: NOT IN, <> ALL */
	GJ_EXPR_DIGITS,				/* pop a (INT8), push it; undecided where
								 * |a| >= 10^18: a numeric's value times
								 * 10^scale outside the 18 digits the
								 * device computes with (a NaN read from a
								 * column, PG_INT64_MAX, is one) */
	GJ_EXPR_DATE_FIELD,			/* pop a (with count GJ_DATE_OF_DATE an
								 * INT4, a date's days; with
								 * GJ_DATE_OF_TIMESTAMP an INT8, a
								 * timestamp's microseconds; from
								 * 2000-01-01), push field arg
								 * (GjDateField) of its day in the
								 * proleptic Gregorian calendar, as
								 * EXTRACT gives it (INT8); undecided for
								 * an infinity */
	GJ_EXPR_ON_HOST				/* pop a (BOOL), push it; undecided where
								 * it is true: the rest of a scan's quals
								 * are the host's to evaluate (the last
								 * step of a qual program whose other
								 * quals the device does not evaluate) */
} GjExprOp;

/* GJ_EXPR_DATE_FIELD's fields: EXTRACT's units that depend on the day alone */
typedef enum GjDateField
{
	GJ_DATE_YEAR = 0,			/* no year 0: 1 BC is -1 */
	GJ_DATE_QUARTER,			/* 1-4 */
	GJ_DATE_MONTH,				/* 1-12 */
	GJ_DATE_DAY,				/* of the month, 1-31 */
	GJ_DATE_DOW,				/* Sunday 0 to Saturday 6 */
	GJ_DATE_ISODOW,				/* Monday 1 to Sunday 7 */
	GJ_DATE_DOY					/* 1-366 */
} GjDateField;

#define GJ_DATE_FIELDS			(GJ_DATE_DOY + 1)
#define GJ_DATE_OF_DATE			0	/* GJ_EXPR_DATE_FIELD's count: days */
#define GJ_DATE_OF_TIMESTAMP	1	/* microseconds */

/*
 * PostgreSQL's infinite dates and timestamps (DATEVAL_NOBEGIN/NOEND,
 * DT_NOBEGIN/NOEND of its datatype/timestamp.h; src/ asserts they are these)
 */
#define GJ_DATE_NOBEGIN			INT32_MIN
#define GJ_DATE_NOEND			INT32_MAX
#define GJ_TIMESTAMP_NOBEGIN	INT64_MIN
#define GJ_TIMESTAMP_NOEND		INT64_MAX
#define GJ_USECS_PER_DAY		INT64_C(86400000000)

/* GJ_EXPR_DIGITS's bound */
#define GJ_EXPR_DIGITS_BOUND	INT64_C(1000000000000000000)

typedef struct GjExprStep
{
	uint8_t		op;				/* GjExprOp */
	uint8_t		type;			/* GjExprType: see the op */
	uint8_t		from;			/* CAST: the source's GjExprType */
	uint8_t		cmp;			/* ANY, ALL: the comparison (GJ_EXPR_EQ ..
								 * GJ_EXPR_GE) */
	int16_t		arg;			/* INPUT, CONST: the index; AND, OR: the
								 * number of operands; ANY, ALL: the first
								 * constant; DATE_FIELD: the GjDateField */
	int16_t		count;			/* ANY, ALL: the number of constants;
								 * DATE_FIELD: GJ_DATE_OF_DATE or
								 * GJ_DATE_OF_TIMESTAMP */
} GjExprStep;

typedef struct GjExprDatum
{
	union
	{
		int64_t		i;
		double		f;
	}			v;
	bool		isnull;
} GjExprDatum;

#define GJ_EXPR_MAX_STEPS	128
#define GJ_EXPR_MAX_CONSTS	256
#define GJ_EXPR_MAX_INPUTS	16
#define GJ_EXPR_MAX_DEPTH	32

typedef struct GjExprProgram
{
	int32_t		nsteps;
	int32_t		nconsts;
	int32_t		ninputs;		/* values the caller supplies per row */
	uint8_t		input_types[GJ_EXPR_MAX_INPUTS];	/* GjExprType */
	GjExprStep	steps[GJ_EXPR_MAX_STEPS];
	GjExprDatum consts[GJ_EXPR_MAX_CONSTS];
} GjExprProgram;

/*
 * Check a program before it runs (cuda/expr/expr_cpu.c): every index in
 * range, the stack within GJ_EXPR_MAX_DEPTH and left with one value, each
 * step's operands of the types it takes; is_qual: that value a BOOL
 */
extern GjStatus gj_expr_check(const GjExprProgram *program, bool is_qual, GjError *err);

/*
 * HEAP PAGES TO COLUMNS (cuda/scan/heap_deform*)
 *
 * A side of a join that is a plain scan of a heap table is read by the join
 * itself, page at a time: src/ (exec_heap.c) decides which tuples of a page
 * are visible to the query's snapshot, copies the page, and lists the byte
 * offsets of its visible tuples; the deform turns those tuples into the
 * side's column arrays and keys (a GjBatch's), as the child's rows would
 * have been.  The tuple format is PostgreSQL's, described by GjHeapLayout
 * (src/ fills it with offsetof() and the header's masks), so that nothing
 * here includes PostgreSQL's headers.  Little-endian only.
 */
typedef struct GjHeapLayout
{
	int32_t		infomask2_offset;	/* of t_infomask2 (uint16) in the header */
	int32_t		infomask_offset;	/* of t_infomask (uint16) */
	int32_t		hoff_offset;		/* of t_hoff (uint8): where the data start */
	int32_t		bits_offset;		/* of t_bits, the null bitmap */
	uint16_t	natts_mask;			/* t_infomask2 & natts_mask: attributes in
									 * the tuple */
	uint16_t	hasnull_flag;		/* t_infomask & hasnull_flag: a null bitmap */
	int32_t		external_size;		/* bytes of an on-disk TOAST pointer,
									 * header included */
	uint8_t		external_tag;		/* its tag (the byte after the 0x01) */
} GjHeapLayout;

#define GJ_MAX_HEAP_ATTS	1600	/* MaxHeapAttributeNumber */
#define GJ_MAX_KEYS			64		/* key clauses packed into one key */

/* One attribute of the relation, as the walk over a tuple needs it */
typedef struct GjHeapAttr
{
	int16_t		len;			/* > 0: fixed; -1: varlena; -2: cstring */
	uint8_t		align;			/* 1, 2, 4 or 8 */
	bool		missing_isnull; /* a tuple with fewer attributes: the value
								 * ALTER TABLE ... ADD COLUMN gave the rest
								 * (NULL unless a DEFAULT) */
	uint64_t	missing_value;	/* its bytes, for a fixed-width by-value
								 * attribute that has a default */
} GjHeapAttr;

/* How a key attribute's value becomes the signed integer keys are packed from */
typedef enum GjKeyKind
{
	GJ_KEY_SIGNED = 0,			/* int2/4/8, date, time, timestamp(tz): the
								 * value, sign-extended */
	GJ_KEY_OID,					/* unsigned 32 bits, shifted into the signed
								 * range keeping order */
	GJ_KEY_BOOL,				/* 0 or 1 */
	GJ_KEY_FLOAT4,				/* gj_float_key */
	GJ_KEY_FLOAT8
} GjKeyKind;

/*
 * A stored numeric (numeric.c's on-disk form, stable since 9.1: after the
 * varlena header a header word, then base-10000 digits, int16, most
 * significant first; a "short" header, top bits 10, holds the sign, the
 * display scale and a 7-bit weight; a "long" one, 00 positive or 01
 * negative, is followed by an int16 weight; 11 marks NaN and the
 * infinities) as its value times 10^scale, exact within
 * GJ_NUMERIC_MAX_DIGITS decimal digits: data and len are the bytes after
 * the varlena header.  Both the deform (a numeric column of declared
 * scale) and the host (src/keys.c) read numerics so.
 */
#define GJ_NUMERIC_MAX_DIGITS	18

/* numeric.c's header words */
#define GJ_NUMERIC_SIGN_MASK		0xC000
#define GJ_NUMERIC_NEG				0x4000
#define GJ_NUMERIC_SHORT			0x8000
#define GJ_NUMERIC_SPECIAL			0xC000
#define GJ_NUMERIC_NAN				0xC000
#define GJ_NUMERIC_PINF				0xD000
#define GJ_NUMERIC_SHORT_SIGN		0x2000
#define GJ_NUMERIC_SHORT_WEIGHT_SIGN 0x0040
#define GJ_NUMERIC_SHORT_WEIGHT		0x003F

typedef enum GjScaledKind
{
	GJ_SCALED_VALUE,			/* *result holds it */
	GJ_SCALED_NAN,
	GJ_SCALED_PINF,
	GJ_SCALED_NINF,
	GJ_SCALED_INEXACT			/* more digits than the scale, or too large */
} GjScaledKind;

static inline GJ_HOST_DEVICE GjScaledKind
gj_numeric_scaled(const uint8_t *data, int len, int scale, int64_t *result)
{
	const uint64_t limit = UINT64_C(1000000000000000000);	/* 10^18 */
	uint16_t	header;
	int			weight;
	int			first;
	bool		negative;
	uint64_t	v = 0;

	if (len < 2)
		return GJ_SCALED_INEXACT;
	header = (uint16_t) (data[0] | (data[1] << 8));
	if ((header & GJ_NUMERIC_SIGN_MASK) == GJ_NUMERIC_SPECIAL)
		return header == GJ_NUMERIC_NAN ? GJ_SCALED_NAN :
			header == GJ_NUMERIC_PINF ? GJ_SCALED_PINF : GJ_SCALED_NINF;
	if ((header & GJ_NUMERIC_SIGN_MASK) == GJ_NUMERIC_SHORT)
	{
		weight = header & GJ_NUMERIC_SHORT_WEIGHT;
		if (header & GJ_NUMERIC_SHORT_WEIGHT_SIGN)
			weight |= ~GJ_NUMERIC_SHORT_WEIGHT;
		negative = (header & GJ_NUMERIC_SHORT_SIGN) != 0;
		first = 2;
	}
	else
	{
		if (len < 4)
			return GJ_SCALED_INEXACT;
		weight = (int16_t) (data[2] | (data[3] << 8));
		negative = (header & GJ_NUMERIC_SIGN_MASK) == GJ_NUMERIC_NEG;
		first = 4;
	}
	for (int i = 0; first + 2 * (i + 1) <= len; i++)
	{
		int			digit = (int16_t) (data[first + 2 * i] | (data[first + 2 * i + 1] << 8));
		int			exponent = 4 * (weight - i) + scale;	/* of the digit's 1 */
		uint64_t	power = 1;

		if (digit == 0)
			continue;
		if (digit < 0 || exponent > GJ_NUMERIC_MAX_DIGITS)
			return GJ_SCALED_INEXACT;
		if (exponent >= 0)
		{
			for (int e = 0; e < exponent; e++)
				power *= 10;
			/* every term adds: past the limit, the value is */
			if ((uint64_t) digit > (limit - 1 - v) / power)
				return GJ_SCALED_INEXACT;
			v += (uint64_t) digit * power;
		}
		else
		{
			for (int e = 0; e < -exponent && e < 4; e++)
				power *= 10;
			if (exponent <= -4 || digit % (int) power != 0)
				return GJ_SCALED_INEXACT;
			v += (uint64_t) (digit / (int) power);
			if (v >= limit)
				return GJ_SCALED_INEXACT;
		}
	}
	*result = negative ? -(int64_t) v : (int64_t) v;
	return GJ_SCALED_VALUE;
}

/* A numeric column's value the deform leaves for the host to convert (a
 * TOAST pointer or compressed value, an infinity, a value that is not
 * exact at the scale, a value ALTER TABLE ... ADD COLUMN gave): below any
 * value of 18 digits */
#define GJ_NUMERIC_ON_HOST		INT64_MIN

/*
 * What to take from each tuple: the attributes 1 .. natts (the highest one
 * needed) are walked; ncolumns of them become columns (each 1, 2, 4 or 8
 * bytes wide, by value; or a numeric of declared scale column_scales[c] >=
 * 0, as its value times 10^scale in 8 bytes: gj_numeric_scaled, NaN as
 * INT64_MAX, GJ_NUMERIC_ON_HOST where the deform cannot; or, with
 * column_scales[c] GJ_COLUMN_TEXT_WORD, a text, varchar or char(n) as its
 * gj_text_word in 8 bytes, GJ_TEXT_ON_HOST where the value is longer or
 * the deform cannot read it), nkeys of them the key, packed as
 * gj_pack_keys does
 */
typedef struct GjDeformSpec
{
	GjHeapLayout layout;
	int32_t		natts;
	const GjHeapAttr *attrs;	/* natts of them */
	int32_t		ncolumns;
	const int16_t *column_attnos;	/* 1-based */
	const int8_t *column_scales;	/* -1: the attribute's bytes; NULL: all */
	int32_t		nkeys;
	const int16_t *key_attnos;
	const uint8_t *key_kinds;	/* GjKeyKind */
	const int32_t *key_bits;
	bool		keys_exact;

	/*
	 * A qual the tuples must pass to become rows (DEVICE EXPRESSIONS), or
	 * NULL: its inputs are attributes input_attnos[0 .. ninputs - 1], each
	 * read as input_kinds[] says (GjKeyKind, but as a value: OID
	 * zero-extended, FLOAT4 and FLOAT8 as doubles), of the program's
	 * input_types; or, where input_scales[i] >= 0, a numeric attribute
	 * read as an INT8 of that scale as a column of that scale is
	 * (gj_heap_numeric: GJ_NUMERIC_ON_HOST where the device cannot, INT64_MAX
	 * for a NaN, both outside the 18 digits GJ_EXPR_DIGITS lets through,
	 * so that the program leaves such a row undecided).  input_scales NULL:
	 * no numeric input.
	 *
	 * Or, where input_texts[i] > 0, a text attribute (a varlena) compared
	 * byte for byte (gj_text_compare) with the input's own input_texts[i]
	 * constants, which are in that order, each above the one before, and
	 * read as an INT8, its place among them: 2k where it equals constant k
	 * (1-based), 2k - 1 where it lies below constant k and above any
	 * before it, 2n + 1 above all n of them; GJ_TEXT_ON_HOST where only
	 * the host can read it (compressed, a TOAST pointer, an ALTER TABLE
	 * default), outside GJ_EXPR_DIGITS' 18 digits.  Equal places are equal
	 * bytes, as a deterministic collation's equal texts are; their order
	 * is a C collation's.  The constants of the text inputs, in input
	 * order, are the strings text_pool[text_offsets[j] .. text_offsets[j +
	 * 1]), at most GJ_DEFORM_MAX_TEXTS of them and
	 * GJ_DEFORM_MAX_TEXT_BYTES bytes.  input_texts NULL: no text input.
	 */
	const GjExprProgram *filter;
	const int16_t *input_attnos;
	const uint8_t *input_kinds;
	const int8_t *input_scales;
	const int16_t *input_texts;
	const int32_t *text_offsets;
	const char *text_pool;
} GjDeformSpec;

#define GJ_DEFORM_MAX_TEXTS			64
#define GJ_DEFORM_MAX_TEXT_BYTES	2048
#define GJ_TEXT_ON_HOST				INT64_MIN

/*
 * Text a (alen bytes) against text b (blen bytes): below, at or above 0 as
 * their first differing byte (unsigned) says, or else the shorter first:
 * PostgreSQL's order of text under a C collation (varstr_cmp's memcmp),
 * 0 exactly when the bytes are the same
 */
static inline GJ_HOST_DEVICE int
gj_text_compare(const char *a, int64_t alen, const char *b, int64_t blen)
{
	int64_t		n = alen < blen ? alen : blen;

	for (int64_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return (uint8_t) a[i] < (uint8_t) b[i] ? -1 : 1;
	return alen < blen ? -1 : (alen > blen ? 1 : 0);
}

/*
 * A short string as one word: the bytes of a value of at most
 * GJ_TEXT_WORD_MAX_BYTES, byte i in bits 8i .. 8i + 7, its length + 1 in
 * bits 56 .. 59 and bit 63 set.  Two values have the same word exactly when
 * they are the same bytes; every word is negative and none is
 * GJ_TEXT_ON_HOST, so that words, the ON_HOST mark and src/'s codes of
 * longer values (0, 1, 2, ...) are all apart.  A deform column of
 * column_scales GJ_COLUMN_TEXT_WORD holds them (a GpuPreAgg's text group
 * key, whose short values need then no code from the host).
 */
#define GJ_COLUMN_TEXT_WORD		(-2)
#define GJ_TEXT_WORD_MAX_BYTES	7

static inline GJ_HOST_DEVICE int64_t
gj_text_word(const char *data, int64_t len)
{
	uint64_t	word;

	if (len < 0 || len > GJ_TEXT_WORD_MAX_BYTES)
		return GJ_TEXT_ON_HOST;
	word = (UINT64_C(1) << 63) | ((uint64_t) (len + 1) << 56);
	for (int64_t i = 0; i < len; i++)
		word |= (uint64_t) (uint8_t) data[i] << (8 * i);
	return (int64_t) word;
}

/* Whether word is a gj_text_word (not ON_HOST, not a code) */
static inline GJ_HOST_DEVICE bool
gj_is_text_word(int64_t word)
{
	return word < 0 && word != GJ_TEXT_ON_HOST;
}

/* A gj_text_word's bytes into data (room for GJ_TEXT_WORD_MAX_BYTES); its length */
static inline int
gj_text_word_bytes(int64_t word, char *data)
{
	int			len = (int) (((uint64_t) word >> 56) & 0x0f) - 1;

	for (int i = 0; i < len; i++)
		data[i] = (char) (((uint64_t) word >> (8 * i)) & 0xff);
	return len;
}

/* Whether a deform's column c is converted from a varlena (a numeric, a text word) */
static inline bool
gj_deform_column_converted(const GjDeformSpec *spec, int c)
{
	return spec->column_scales != NULL &&
		(spec->column_scales[c] >= 0 || spec->column_scales[c] == GJ_COLUMN_TEXT_WORD);
}

/* The width of a deform's column c: 8 for a numeric or a text word, else its attribute's */
static inline int
gj_deform_column_width(const GjDeformSpec *spec, int c)
{
	if (gj_deform_column_converted(spec, c))
		return 8;
	return spec->attrs[spec->column_attnos[c] - 1].len;
}

/*
 * Pages, and the visible tuples in them: copied one after another into
 * pages, or left in place (pages NULL) in a region of host memory the
 * caller keeps them in while the deform runs (PostgreSQL's shared
 * buffers, the pages pinned), page i of the batch at region +
 * page_index[i] * page_size.  A tuple's offset counts as if the pages
 * lay one after another either way: page i's tuples at i * page_size +
 * their offset in it.  A device reads pages in place straight from the
 * region: heap_deform.cu registers it with the driver, a part at a time,
 * the first time a batch has pages there, and keeps it registered while
 * the process lives; where it cannot, it copies them on the host first.
 */
typedef struct GjPageBatch
{
	const char *pages;			/* the pages, one after another, or NULL */
	int64_t		bytes;			/* their size (page_size x pages) */
	int64_t		ntuples;
	const uint32_t *tuples;		/* per visible tuple, its byte offset */
	int32_t		page_size;		/* > 0: the pages' size; a call then ships only
								 * the pages its tuples lie in (in page order);
								 * required in place */
	const char *region;			/* in place: the region and its size */
	int64_t		region_bytes;
	const uint32_t *page_index; /* in place: per page, its index in region,
								 * or GJ_PAGE_KEPT_ONLY */

	/*
	 * In place, pages to keep between calls (cuda/scan/page_cache.h): with
	 * cache_bytes > 0 (the memory to keep them in, taken by the process's
	 * first such call) and page_lsn not NULL, page i is block
	 * page_block[i] of the relation whose three words are relation, kept
	 * under LSN page_lsn[i] (0: not kept)
	 */
	int64_t		cache_bytes;
	const uint64_t *page_lsn;
	const uint32_t *page_block;
	uint32_t	relation[3];

	/*
	 * Or NULL: per page, the index in tuples of its first tuple (pages + 1
	 * entries, the last ntuples), which the caller listed them by; spares
	 * the kernels reading every offset on the host to find each page's
	 * tuples (the pages kept want them)
	 */
	const int64_t *page_starts;
} GjPageBatch;

/*
 * A page in place that is not in the region: pages_kept found a copy of
 * block page_block[i] kept under page_lsn[i] with count tuples, and the
 * host did not read it.  Its tuples' offsets are i x page_size + 0 .. count
 * - 1, their places in the list kept with the copy (the items listed when
 * it was made), and the call reads them from the copy.  A call that finds
 * one no longer kept so (another call took its slot) writes no row and
 * returns GJ_ERROR_PAGES_GONE: the caller reads those pages and calls again.
 */
#define GJ_PAGE_KEPT_ONLY		UINT32_MAX

/*
 * Where the deform writes: row i of the output is tuple first + i of the
 * page batch.  values[c] and nulls[c] per column, keys and keynulls (1
 * where a key attribute is NULL: the row matches nothing); nulls[c] and
 * keynulls are all zero on entry, and only the NULLs are set.
 */
typedef struct GjDeformOut
{
	char	  **values;
	uint8_t   **nulls;
	uint64_t   *keys;
	uint8_t    *keynulls;
	uint32_t	null_columns;	/* out: bit c set when column c had a NULL */
	int64_t		key_nulls;		/* out: rows with a NULL key */

	/*
	 * With a filter: the tuples whose qual is true or undecided become rows
	 * 0 .. nrows - 1, in tuple order; selected[r] (room for n) is row r's
	 * tuple, counted from first, with GJ_DEFORM_UNDECIDED set when the
	 * caller must evaluate the qual itself.  Without one, nrows = n and
	 * selected is not written.
	 */
	uint32_t   *selected;
	int64_t		nrows;			/* out */
	int64_t		bytes_shipped;	/* out: pages and offsets sent to a device */
	int64_t		pages_cached;	/* out: pages read from the ones kept */
	int64_t		host_numerics;	/* out: numeric values left GJ_NUMERIC_ON_HOST
								 * in the rows (none: no row to look at) */
} GjDeformOut;

#define GJ_DEFORM_UNDECIDED		(UINT32_C(1) << 31)

/*
 * The CPU twin's deform (cuda/scan/heap_deform_cpu.c), also gj_cpu_kernels'
 * heap_deform: tuples first .. first + n - 1; ctx is not used and may be
 * NULL
 */
extern GjStatus gj_cpu_heap_deform(GjContext *ctx, const GjPageBatch *pages,
								   const GjDeformSpec *spec, int64_t first, int64_t n,
								   GjDeformOut *out, GjError *err);

/* gj_cpu_kernels' pages_kept: the pages the twin's deform keeps (ctx not used) */
extern GjStatus gj_cpu_pages_kept(GjContext *ctx, const uint32_t relation[3],
								  const uint32_t *blocks, const uint64_t *lsns, int64_t n,
								  int32_t page_size, int16_t *counts, GjError *err);

/*
 * GROUPED AGGREGATION (cuda/agg/)
 *
 * The matches of a join can be folded into groups on the device instead of
 * coming back: each match's group key values and aggregate arguments are
 * DEVICE EXPRESSIONS over its payload columns (inputs[]: a column of one
 * side, read as a value the way GjDeformSpec reads them), and each group
 * keeps, per aggregate, three 64-bit words that src/ turns into the partial
 * state PostgreSQL's Finalize Aggregate combines (exec_agg.c):
 *
 *	COUNT	n: the rows, or the rows whose argument is not NULL
 *	SUM		n, and the sum of the non-NULL arguments: integers exactly, as
 *			a = the sum of their low 32 bits (unsigned) and b = the sum of
 *			their high 32 bits (signed), so value = b * 2^32 + a in 128
 *			bits, exact for up to 2^32 rows a group; floats as the double a
 *			(bits), b counting the non-finite arguments (an infinite sum
 *			from finite ones is PostgreSQL's overflow error)
 *	MIN/MAX	n, and a: the least/greatest argument; floats as
 *			gj_agg_float_order's integers (NaN above everything, -0 below 0)
 *
 * Rows with a NULL group key value group together (NULL is its own group
 * value); a float key groups by gj_float_key's word (-0 with 0, every NaN
 * together), which agg_result returns as the key.  A FILTER is a qual
 * program: the aggregate skips rows where it is not true.  A row where any program is undecided (an error PostgreSQL
 * may raise) is folded into nothing and counted in *undecided: the caller
 * evaluates PostgreSQL's expressions for that round, to raise the error.
 * Groups are found in a hash table of the keys' exact values; float sums
 * add in another order than PostgreSQL's, so their last bits may differ.
 */
#define GJ_AGG_MAX_AGGS		16
#define GJ_AGG_MAX_KEYS		8
#define GJ_AGG_MAX_INPUTS	32

typedef enum GjAggKind
{
	GJ_AGG_COUNT = 0,
	GJ_AGG_SUM,
	GJ_AGG_MIN,
	GJ_AGG_MAX
} GjAggKind;

/*
 * How the device folds matches into groups with keys (the CPU twin folds
 * one match after another whatever the variant; the groups are the same):
 *
 *	HASH	every match's words go to its group in the table in device
 *			memory by atomics: no limit on the groups, but matches of few
 *			groups contend for the same words
 *	SHARED	each block of threads also keeps the words of the groups
 *			numbered below a bound (as many as fit its shared memory) and
 *			folds its matches there, adding them to the table once per
 *			block at the end; groups past the bound go as in HASH (Wu et
 *			al. 2025, section 4.2's HGB)
 *	SORT	each round's matches are sorted by their group's hash first
 *			(a radix sort of (hash, match) pairs), so that the matches of a
 *			group lie together: a thread folds a run of them in registers
 *			and adds it to the table once, which spares the atomics on
 *			the groups that many matches reach (skew) and makes the
 *			table's accesses follow the hash order (the sort-based
 *			group-by of Wu et al. 2025, section 3.2.2, reading the
 *			payloads through the match numbers: their GFUR)
 *	SORT_TR	as SORT, but each match's keys and values are computed once,
 *			before the sort, and sorted along with the hashes (one radix
 *			sort of (hash, word) pairs per word, stable, so every word
 *			lands where its match does): the runs are then folded from
 *			words read in order, with no second read of the inputs (Wu et
 *			al. 2025, section 4.1.3's GFTR)
 */
typedef enum GjAggVariant
{
	GJ_AGG_HASH = 0,
	GJ_AGG_SHARED,
	GJ_AGG_SORT,
	GJ_AGG_SORT_TR
} GjAggVariant;

#define GJ_AGG_NUM_VARIANTS		(GJ_AGG_SORT_TR + 1)

/* SORT, SORT_TR: the consecutive sorted matches one thread folds into runs */
#define GJ_AGG_SORT_RUN_ITEMS	16

/*
 * SORT: about how many runs of one group's matches the threads add to the
 * table for rows matches in groups groups: each thread's
 * GJ_AGG_SORT_RUN_ITEMS matches end a run at their last one and at each
 * group boundary among them, and there are never more runs than matches
 * (the cost model and its calibration count by this)
 */
static inline double
gj_agg_sort_runs(double rows, double groups)
{
	double		runs = rows / GJ_AGG_SORT_RUN_ITEMS + groups;

	return runs < rows ? runs : rows;
}

/*
 * Shared memory a block of the SHARED variant keeps words in (3 words of
 * 8 bytes per group and aggregate): 48 kB, what a launch may ask for
 * without opting in, 4 blocks of a multiprocessor's 228 kB on sm_90
 */
#define GJ_AGG_SHARED_BYTES		(48 * 1024)
#define GJ_AGG_SHARED_GROUPS(naggs)	(GJ_AGG_SHARED_BYTES / (24 * (naggs)))

/* A value each match supplies: payload column "column" of side "side" */
typedef struct GjAggInput
{
	int8_t		side;			/* 0: outer, 1: inner */
	int8_t		column;			/* among that side's payload columns */
	uint8_t		kind;			/* GjKeyKind, read as a value */
	uint8_t		type;			/* GjExprType */
} GjAggInput;

/* A program, and per program input its GjAggInput */
typedef struct GjAggExpr
{
	GjExprProgram program;
	int16_t		inputs[GJ_EXPR_MAX_INPUTS];
} GjAggExpr;

/* The simplest programs (tests, benchmarks, calibration): input as it is */
static inline void
gj_agg_expr_input(GjAggExpr *e, int input, GjExprType type)
{
	memset(e, 0, sizeof(*e));
	e->program.nsteps = 1;
	e->program.ninputs = 1;
	e->program.input_types[0] = (uint8_t) type;
	e->program.steps[0].op = GJ_EXPR_INPUT;
	e->program.steps[0].type = (uint8_t) type;
	e->inputs[0] = (int16_t) input;
}

/* ... and input % divisor, an integer key of at most divisor groups */
static inline void
gj_agg_expr_mod(GjAggExpr *e, int input, GjExprType type, int64_t divisor)
{
	gj_agg_expr_input(e, input, type);
	e->program.nsteps = 3;
	e->program.steps[1].op = GJ_EXPR_CONST;
	e->program.steps[1].type = (uint8_t) type;
	e->program.steps[2].op = GJ_EXPR_MOD;
	e->program.steps[2].type = (uint8_t) type;
	e->program.nconsts = 1;
	e->program.consts[0].v.i = divisor;
	e->program.consts[0].isnull = false;
}

typedef struct GjAgg
{
	uint8_t		kind;			/* GjAggKind */
	uint8_t		type;			/* GjExprType of the argument */
	bool		has_arg;		/* count(*) has none */
	bool		has_filter;
	GjAggExpr	arg;
	GjAggExpr	filter;
} GjAgg;

typedef struct GjAggSpec
{
	int32_t		ninputs;
	GjAggInput	inputs[GJ_AGG_MAX_INPUTS];
	int32_t		nkeys;			/* 0: one group, whatever the rows */
	GjAggExpr	keys[GJ_AGG_MAX_KEYS];

	/*
	 * Per key, the GjExprType of its program's value: integer-valued ones
	 * (0, GJ_EXPR_BOOL, for any of them) group by the value, floats by
	 * gj_float_key's word
	 */
	uint8_t		key_types[GJ_AGG_MAX_KEYS];
	int32_t		naggs;			/* 1 .. GJ_AGG_MAX_AGGS */
	GjAgg		aggs[GJ_AGG_MAX_AGGS];
	int64_t		groups_hint;	/* groups expected: the table's first size */
	uint8_t		variant;		/* GjAggVariant, with keys */

	/*
	 * The order agg_result returns the groups in: by key sort_keys[0]'s
	 * value, then sort_keys[1]'s ... (signed 64-bit words; sort_desc:
	 * greatest first; a NULL before every value where sort_nulls_first,
	 * else after, in either direction); nsort 0: no particular order
	 */
	int32_t		nsort;			/* 0 .. nkeys */
	int8_t		sort_keys[GJ_AGG_MAX_KEYS];
	bool		sort_desc[GJ_AGG_MAX_KEYS];
	bool		sort_nulls_first[GJ_AGG_MAX_KEYS];
} GjAggSpec;

/*
 * The groups, in the spec's order (nsort), else in no particular order
 * (the device sorts them there: CUB radix sorts of the table's live
 * groups, one per sort key and its NULL flags, least significant first;
 * the CPU twin, and the device after a spill, the same on the host); the
 * arrays are the context's and stay valid until its next call.  With no key there is one group, its
 * words zero (and MIN/MAX's n zero) when no row came.
 *
 * The groups may outgrow the room they have (the device's memory, or
 * memory_limit; the CPU twin keeps its table within memory_limit too, as
 * if the groups were alone on a device, so that this is tested without
 * one): the table is then emptied into host memory (a spill) and filling
 * goes on, so the same group keys can come back more than once, each time
 * with the words of the matches folded in between.  A caller combines them
 * (PostgreSQL's Finalize Aggregate does); spills counts the emptyings.
 */
typedef struct GjAggResult
{
	int64_t		ngroups;
	int64_t		spills;
	const int64_t *keys[GJ_AGG_MAX_KEYS];	/* per key, a value per group */
	const uint8_t *key_nulls[GJ_AGG_MAX_KEYS];	/* 1 where it is NULL */
	const int64_t *n[GJ_AGG_MAX_AGGS];
	const int64_t *a[GJ_AGG_MAX_AGGS];
	const int64_t *b[GJ_AGG_MAX_AGGS];
} GjAggResult;

/* Check a spec (cuda/agg/group_agg_cpu.c), as both implementations do */
extern GjStatus gj_agg_check(const GjAggSpec *spec, const GjJoinSpec *join, GjError *err);

/*
 * For the matches aggregate left undecided (cuda/agg/group_agg_cpu.c), which
 * the caller folds itself from PostgreSQL's own evaluation:
 *
 * gj_agg_match_folded: whether aggregate folded match r of round, the
 * round retrieve returns for the same first match under join (false: some
 * program of spec was undecided for it, and it was folded into nothing)
 *
 * gj_agg_value_words: the words of one group that a single match with
 * argument value reached (value NULL for count(*); value->isnull where the
 * argument is NULL or the FILTER not true), what the kernels' folding gives
 */
extern bool gj_agg_match_folded(const GjAggSpec *spec, const GjJoinSpec *join,
								const GjMatchRound *round, int64_t r);
extern void gj_agg_value_words_of(const GjAgg *agg, const GjExprDatum *value,
								  int64_t *n, int64_t *a, int64_t *b);

/* What gpujoin_device_info() shows */
typedef struct GjDeviceInfo
{
	int			device;			/* CUDA ordinal */
	char		name[256];
	int64_t		total_memory;	/* bytes */
	int64_t		free_memory;	/* bytes, as seen by this process now */
	int			cc_major;		/* compute capability */
	int			cc_minor;
	int			multiprocessors;
	int			driver_version; /* e.g. 13000 for CUDA 13.0 */
	int			runtime_version;
} GjDeviceInfo;

extern const GjKernels gj_cpu_kernels;

#ifdef GPUJOIN_WITH_CUDA
extern const GjKernels gj_cuda_kernels;

/*
 * Number of usable CUDA devices; initializes the CUDA runtime in the calling
 * process.  Returns 0 when there is none, with the reason in err.
 */
extern int	gj_cuda_device_count(GjError *err);

/*
 * What this process keeps for the next contexts once a context frees it:
 * up to device_bytes of device memory in the device's memory pool, and up
 * to host_bytes of page-locked host memory (a round's arrays).  0 and 0, the
 * default, give everything back at once (as a backend does; the gpujoin
 * service keeps some).  Takes effect at the next context.
 */
extern void gj_cuda_pool_keep(size_t device_bytes, size_t host_bytes);

/*
 * Copy bandwidth from device "from" to device "to" in GB/s (the best of a
 * few copies of bytes, peer to peer where the two can reach each other,
 * else as the driver stages it), for gpujoin_calibrate(); -1 with err
 * filled when it cannot be measured.  Makes both devices' contexts in the
 * calling process.
 */
extern double gj_cuda_peer_gbps(int from, int to, size_t bytes, GjError *err);

/*
 * The most device bytes the contexts of this process may hold together
 * (0: no limit, the default); a context that would pass it gets
 * GJ_ERROR_DEVICE_MEMORY, as at its own spec.memory_limit.  The gpujoin
 * service sets it, so that the joins of all its clients share one pool.
 * gj_cuda_pool_held: the device bytes every context of this process holds
 * now.  Both thread-safe.
 */
extern void gj_cuda_pool_limit(size_t bytes);
extern size_t gj_cuda_pool_held(void);

/*
 * Page-locked host memory from this process's cache (gj_cuda_pool_keep),
 * or new; NULL when there is none.  Thread-safe, for the gpujoin service.
 */
extern void *gj_cuda_pinned_alloc(size_t bytes);
extern void gj_cuda_pinned_free(void *ptr);
/* the page-locked bytes the cache holds now */
extern size_t gj_cuda_pinned_cached(void);

/*
 * Page-lock host memory this process maps (a shared memory segment) so that
 * copies to and from it go by DMA; false when it cannot be.  Unregister it
 * before it is unmapped.
 */
extern bool gj_cuda_host_register(void *ptr, size_t bytes);
extern void gj_cuda_host_unregister(void *ptr);

/*
 * Benchmarks only (bench_theta.c): inner rows per NLJ tile, a multiple of
 * GJ_NLJ_TILE_ALIGN that fits the tile's shared memory; 0 = the default
 */
extern int	gj_nlj_tile_rows_override;
extern GjStatus gj_cuda_device_info(int device, GjDeviceInfo *info,
									GjError *err);
#endif

#ifdef __cplusplus
}
#endif

#endif							/* GPUJOIN_KERNELS_H */
