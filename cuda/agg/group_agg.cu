/*-------------------------------------------------------------------------
 *
 * group_agg.cu
 *	  The grouped aggregation on the device: a round of matches is gathered
 *	  on the device, as retrieve would, and folded into the groups there;
 *	  only the groups come back
 *
 * The contract is gpujoin_kernels.h's GROUPED AGGREGATION; the CPU twin,
 * group_agg_cpu.c, is its specification.  Per round:
 *
 *	  the variant's retrieve writes the round's maps, and
 *	  gj_cuda_round_gather gathers the payload columns into the ROUND sets
 *	  (as for retrieve, without the copies back);
 *	  no key:  agg_one_group_kernel: each thread folds its matches into
 *			   words of its own (gj_agg_fold), a warp combines its threads'
 *			   (gj_agg_combine), and one atomic per word and warp adds
 *			   them to the group's;
 *	  keys:	   agg_groups_kernel: one thread per match finds its group in
 *			   the table and folds into the group's words with atomics
 *			   (HASH, and SHARED, whose blocks fold their first groups in
 *			   shared memory first);
 *	  SORT:	   agg_sort_hash_kernel writes 32 bits of each match's group
 *			   hash, CUB's radix sort orders (hash, match) pairs, and
 *			   agg_sorted_kernel gives each thread GJ_AGG_SORT_RUN_ITEMS
 *			   consecutive sorted matches: it folds a run of one group in
 *			   registers and adds it to the table once, so the table sees
 *			   a group once per run, not once per match.  The matches'
 *			   inputs are read again through their numbers (GFUR, Wu et
 *			   al. 2025, sections 3.2.2 and 4.1.3: the payloads are not
 *			   sorted along).
 *	  SORT_TR: agg_sort_hash_kernel also writes each match's keys and
 *			   values, computed once, as words in match order; one radix
 *			   sort per word orders (hash, word) pairs, each sort stable
 *			   on the same hashes, so that every word lands where its
 *			   match does (GFTR: the payloads sorted along), and
 *			   agg_sorted_kernel folds the runs from the sorted words,
 *			   read in order, with no second read of the inputs.
 *
 * THE TABLE.  Groups lie densely, group g's words at [g] of each array;
 * slots (twice the groups' capacity, a power of two) hold a hash, claimed
 * by atomicCAS from 0, and the group of the slot, -1 until the claimer has
 * written the group's keys (others with the same hash wait for it, then
 * compare the keys).  A thread reserves its group number before it claims
 * a slot, so that claims never exceed the capacity and a free slot always
 * remains; a reservation whose claim is lost leaves a hole (live[g] 0)
 * that the results skip.  A match whose reservation finds the groups full
 * is listed instead (lists[]); the table then grows (GrowTable: every
 * live group into twice the room, placed again) and only the listed
 * matches are folded once more.
 *
 * IDENTIFICATION
 *	  cuda/agg/group_agg.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include <cub/cub.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "common.cuh"
#include "group_agg.h"

/* The most groups a table starts with, whatever the planner expects */
#define GJ_AGG_FIRST_GROUPS		(INT64_C(1) << 16)

/*
 * SORT_TR: the words a match carries through the sort: first its number
 * with its NULL flags (bits 32 .. 39 the keys', 40 .. 55 the values'),
 * then its keys, then the values of the aggregates that have an argument
 */
#define AGG_SORT_WORDS			(1 + GJ_AGG_MAX_KEYS + GJ_AGG_MAX_AGGS)
#define AGG_SORT_KEY_NULLS		32
#define AGG_SORT_VALUE_NULLS	40

/* The counters a round's kernels keep on the device */
typedef struct AggCounters
{
	unsigned long long ngroups;	/* group numbers reserved */
	unsigned long long undecided;
	unsigned long long noverflow;
	unsigned long long live;	/* GrowTable: groups placed */
} AggCounters;

/* One table's arrays (device pointers), passed to the kernels by value */
typedef struct AggTableArgs
{
	int64_t		capacity;
	int64_t		nslots;
	unsigned long long *hashes;
	long long  *slots;
	uint8_t    *live;
	int64_t    *keys[GJ_AGG_MAX_KEYS];
	uint8_t    *key_nulls[GJ_AGG_MAX_KEYS];
	int64_t    *words[3 * GJ_AGG_MAX_AGGS];
} AggTableArgs;

/* One table's buffers */
typedef struct AggTable
{
	int64_t		capacity;
	int64_t		nslots;
	GjDeviceBuffer hashes;
	GjDeviceBuffer slots;
	GjDeviceBuffer live;
	GjDeviceBuffer keys[GJ_AGG_MAX_KEYS];
	GjDeviceBuffer key_nulls[GJ_AGG_MAX_KEYS];
	GjDeviceBuffer words[3 * GJ_AGG_MAX_AGGS];
} AggTable;

/* SORT_TR: a round's words, one array each (device pointers), by value */
typedef struct AggSortWords
{
	int			nwords;			/* 0: SORT, which reads the inputs again */
	int64_t    *w[AGG_SORT_WORDS];
} AggSortWords;

/* A round's columns (device pointers), by value */
typedef struct AggColumns
{
	const void *values[GJ_NUM_SIDES][GJ_MAX_COLUMNS];
	const uint8_t *nulls[GJ_NUM_SIDES][GJ_MAX_COLUMNS];
	int32_t		widths[GJ_NUM_SIDES][GJ_MAX_COLUMNS];
} AggColumns;

typedef struct CudaAggState
{
	GjAggSpec	spec;
	GjDeviceBuffer d_spec;
	GjDeviceBuffer counters;
	GjDeviceBuffer lists[2];	/* matches the groups had no room for */
	GjDeviceBuffer sort_hashes[2];	/* SORT: the round's (hash, match) pairs */
	GjDeviceBuffer sort_rows[2];
	GjDeviceBuffer sort_first_hashes;	/* SORT_TR: the hashes in match order */
	GjDeviceBuffer sort_words[2][AGG_SORT_WORDS];	/* SORT_TR: in match order,
													 * and sorted */
	GjDeviceBuffer order_words[2];	/* agg_result in key order: a key's */
	GjDeviceBuffer order_groups[2];	/* words and the live groups by them */
	GjDeviceBuffer order_count;
	GjDeviceBuffer order_out;	/* one array of the groups, in that order */
	AggTable	tables[2];
	int			cur;			/* tables[cur] holds the groups */
	AggCounters *h_counters;	/* page-locked */
	GjAggGroups spilled;		/* groups the table was emptied of */
	int64_t		spills;
	/* a table's arrays copied back (CopyBack), and agg_result's */
	GjAggGroups raw;
	uint8_t    *raw_live;
	GjAggGroups result;
} CudaAggState;

static AggTableArgs
TableArgs(const CudaAggState *agg, const AggTable *t)
{
	AggTableArgs a;

	memset(&a, 0, sizeof(a));
	a.capacity = t->capacity;
	a.nslots = t->nslots;
	a.hashes = (unsigned long long *) t->hashes.ptr;
	a.slots = (long long *) t->slots.ptr;
	a.live = (uint8_t *) t->live.ptr;
	for (int k = 0; k < agg->spec.nkeys; k++)
	{
		a.keys[k] = (int64_t *) t->keys[k].ptr;
		a.key_nulls[k] = (uint8_t *) t->key_nulls[k].ptr;
	}
	for (int w = 0; w < 3 * agg->spec.naggs; w++)
		a.words[w] = (int64_t *) t->words[w].ptr;
	return a;
}

/* Every group empty, every slot free */
__global__ static void
agg_init_kernel(const GjAggSpec *spec, AggTableArgs t)
{
	int64_t		stride = (int64_t) gridDim.x * blockDim.x;

	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
		 i < t.nslots; i += stride)
	{
		t.hashes[i] = 0;
		t.slots[i] = -1;
		if (i < t.capacity)
		{
			t.live[i] = 0;
			for (int a = 0; a < spec->naggs; a++)
				gj_agg_init_words(&spec->aggs[a], &t.words[3 * a][i],
								  &t.words[3 * a + 1][i], &t.words[3 * a + 2][i]);
		}
	}
}

/* The inputs of match i */
static __device__ void
ReadInputs(const GjAggSpec *spec, const AggColumns *cols, int64_t i, GjExprDatum *inputs)
{
	for (int j = 0; j < spec->ninputs; j++)
	{
		const GjAggInput *in = &spec->inputs[j];

		inputs[j] = gj_agg_input(in, cols->values[in->side][in->column],
								 cols->nulls[in->side][in->column],
								 cols->widths[in->side][in->column], i);
	}
}

/* Whether group g holds the match's keys (read past the caches) */
static __device__ bool
SameKeys(const AggTableArgs *t, int nkeys, long long g, const GjAggMatch *m)
{
	for (int k = 0; k < nkeys; k++)
	{
		bool		isnull = ((const volatile uint8_t *) t->key_nulls[k])[g] != 0;

		if (isnull != (((m->key_nulls >> k) & 1) != 0))
			return false;
		if (!isnull && ((const volatile int64_t *) t->keys[k])[g] != m->keys[k])
			return false;
	}
	return true;
}

/* Are two matches of one group?  (the same NULL flags and non-NULL keys) */
static __device__ bool
SameMatchKeys(int nkeys, const GjAggMatch *a, const GjAggMatch *b)
{
	if (a->key_nulls != b->key_nulls)
		return false;
	for (int k = 0; k < nkeys; k++)
		if (((a->key_nulls >> k) & 1) == 0 && a->keys[k] != b->keys[k])
			return false;
	return true;
}

/*
 * The group of a match, created if new: its number, or -1 when the table
 * has no room for another group
 */
static __device__ long long
FindGroup(const AggTableArgs *t, AggCounters *counters, int nkeys, const GjAggMatch *m)
{
	unsigned long long h = gj_agg_hash(m, nkeys);
	int64_t		mask = t->nslots - 1;
	int64_t		s = (int64_t) (h & (unsigned long long) mask);
	long long	reserved = -1;

	for (;;)
	{
		unsigned long long tag = ((volatile unsigned long long *) t->hashes)[s];

		if (tag == 0)
		{
			/* a new group, as far as this slot knows: reserve, then claim */
			if (reserved < 0)
			{
				reserved = (long long) atomicAdd(&counters->ngroups, 1ULL);
				if (reserved >= t->capacity)
					return -1;
			}
			tag = atomicCAS(&t->hashes[s], 0ULL, h);
			if (tag == 0)
			{
				for (int k = 0; k < nkeys; k++)
				{
					t->keys[k][reserved] = m->keys[k];
					t->key_nulls[k][reserved] = (m->key_nulls >> k) & 1;
				}
				t->live[reserved] = 1;
				__threadfence();
				atomicExch((unsigned long long *) &t->slots[s], (unsigned long long) reserved);
				return reserved;
			}
		}
		if (tag == h)
		{
			long long	g;

			while ((g = ((volatile long long *) t->slots)[s]) < 0)
				;
			__threadfence();
			if (SameKeys(t, nkeys, g, m))
				return g;		/* a reservation, if any, stays a hole */
		}
		s = (s + 1) & mask;
	}
}

/*
 * Combine words (n2, a2, b2) into the words at n, wa, wb atomically, as
 * gj_agg_combine does; the words may be in device or in shared memory
 */
static __device__ void
CombineAtomic(const GjAgg *agg, int64_t *n, int64_t *wa, int64_t *wb,
			  int64_t n2, int64_t a2, int64_t b2)
{
	atomicAdd((unsigned long long *) n, (unsigned long long) n2);
	if (b2 != 0)
		atomicAdd((unsigned long long *) wb, (unsigned long long) b2);
	switch (agg->kind)
	{
		case GJ_AGG_COUNT:
			break;
		case GJ_AGG_SUM:
			if (gj_expr_is_float(agg->type))
				atomicAdd((double *) wa, gj_agg_word_double(a2));
			else
				atomicAdd((unsigned long long *) wa, (unsigned long long) a2);
			break;
		case GJ_AGG_MIN:
			atomicMin((long long *) wa, (long long) a2);
			break;
		case GJ_AGG_MAX:
			atomicMax((long long *) wa, (long long) a2);
			break;
	}
}

/* Fold value v of aggregate a into the words at n, wa, wb, atomically */
static __device__ void
FoldAtomic(const GjAgg *agg, int64_t *n, int64_t *wa, int64_t *wb, const GjExprDatum *v)
{
	int64_t		a2;
	int64_t		b2;

	if (v->isnull)
		return;
	gj_agg_value_words(agg, v, &a2, &b2);
	CombineAtomic(agg, n, wa, wb, 1, a2, b2);
}

/*
 * With keys: matches 0 .. n - 1, or those rows[0 .. n - 1] lists, each
 * into its group.  shared_groups > 0 (the SHARED variant): the block
 * keeps the words of groups 0 .. shared_groups - 1 in shared memory
 * (word w of group g at [w * shared_groups + g]), folds there, and adds
 * the groups it reached to the table's at the end.
 */
__global__ static void
agg_groups_kernel(const GjAggSpec *spec, AggColumns cols, int64_t n, const uint32_t *rows,
				  AggTableArgs t, AggCounters *counters, uint32_t *overflow_rows,
				  int shared_groups)
{
	extern __shared__ int64_t block_words[];
	int64_t		stride = (int64_t) gridDim.x * blockDim.x;
	int			naggs = spec->naggs;

	for (int g = threadIdx.x; g < shared_groups; g += blockDim.x)
		for (int a = 0; a < naggs; a++)
			gj_agg_init_words(&spec->aggs[a], &block_words[(3 * a) * shared_groups + g],
							  &block_words[(3 * a + 1) * shared_groups + g],
							  &block_words[(3 * a + 2) * shared_groups + g]);
	if (shared_groups > 0)
		__syncthreads();

	for (int64_t r = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; r < n; r += stride)
	{
		int64_t		i = rows ? rows[r] : r;
		GjExprDatum inputs[GJ_AGG_MAX_INPUTS];
		GjAggMatch	m;
		long long	g;

		ReadInputs(spec, &cols, i, inputs);
		if (!gj_agg_eval_match(spec, inputs, &m))
		{
			atomicAdd(&counters->undecided, 1ULL);
			continue;
		}
		g = FindGroup(&t, counters, spec->nkeys, &m);
		if (g < 0)
		{
			overflow_rows[atomicAdd(&counters->noverflow, 1ULL)] = (uint32_t) i;
			continue;
		}
		if (g < shared_groups)
		{
			for (int a = 0; a < naggs; a++)
				FoldAtomic(&spec->aggs[a], &block_words[(3 * a) * shared_groups + g],
						   &block_words[(3 * a + 1) * shared_groups + g],
						   &block_words[(3 * a + 2) * shared_groups + g], &m.values[a]);
		}
		else
		{
			for (int a = 0; a < naggs; a++)
				FoldAtomic(&spec->aggs[a], &t.words[3 * a][g], &t.words[3 * a + 1][g],
						   &t.words[3 * a + 2][g], &m.values[a]);
		}
	}

	if (shared_groups == 0)
		return;
	__syncthreads();
	/* the block's words of the groups it reached, into the table's */
	for (int g = threadIdx.x; g < shared_groups; g += blockDim.x)
		for (int a = 0; a < naggs; a++)
		{
			int64_t		bn = block_words[(3 * a) * shared_groups + g];

			if (bn == 0)
				continue;
			CombineAtomic(&spec->aggs[a], &t.words[3 * a][g], &t.words[3 * a + 1][g],
						  &t.words[3 * a + 2][g], bn,
						  block_words[(3 * a + 1) * shared_groups + g],
						  block_words[(3 * a + 2) * shared_groups + g]);
		}
}

/* SORT_TR: the words of match i (AGG_SORT_WORDS), at [i] of each array */
static __device__ void
PutWords(const GjAggSpec *spec, const AggSortWords *words, int64_t i, const GjAggMatch *m)
{
	uint64_t	flags = (uint64_t) (uint32_t) i | (uint64_t) m->key_nulls << AGG_SORT_KEY_NULLS;
	int			w = 1 + spec->nkeys;

	for (int k = 0; k < spec->nkeys; k++)
		words->w[1 + k][i] = m->keys[k];
	for (int a = 0; a < spec->naggs; a++)
	{
		if (m->values[a].isnull)
			flags |= UINT64_C(1) << (AGG_SORT_VALUE_NULLS + a);
		if (spec->aggs[a].has_arg)
			words->w[w++][i] = m->values[a].v.i;
	}
	words->w[0][i] = (int64_t) flags;
}

/* SORT_TR: the match whose words are at [p], as gj_agg_eval_match made it */
static __device__ void
GetWords(const GjAggSpec *spec, const AggSortWords *words, int64_t p, GjAggMatch *m)
{
	uint64_t	flags = (uint64_t) words->w[0][p];
	int			w = 1 + spec->nkeys;

	m->key_nulls = (uint32_t) (flags >> AGG_SORT_KEY_NULLS) & 0xff;
	for (int k = 0; k < spec->nkeys; k++)
		m->keys[k] = words->w[1 + k][p];
	for (int a = 0; a < spec->naggs; a++)
	{
		m->values[a].isnull = ((flags >> (AGG_SORT_VALUE_NULLS + a)) & 1) != 0;
		m->values[a].v.i = spec->aggs[a].has_arg ? words->w[w++][p] : 0;
	}
}

/* SORT, SORT_TR: the number of the match at sorted position p */
static __device__ uint32_t
SortedRow(const uint32_t *sorted, const AggSortWords *words, int64_t p)
{
	return words->nwords > 0 ? (uint32_t) words->w[0][p] : sorted[p];
}

/*
 * SORT, first: each match's sort key, the high 32 bits of its group's hash
 * with the lowest set (0, which sorts first, for an undecided match), and
 * its number (rows; SORT_TR: its words instead).  32 bits are enough to
 * bring a group's matches together (the radix sort then takes 4 passes,
 * not 8): groups that share them are told apart by their keys.
 */
__global__ static void
agg_sort_hash_kernel(const GjAggSpec *spec, AggColumns cols, int64_t n,
					 AggCounters *counters, uint32_t *hashes, uint32_t *rows, AggSortWords words)
{
	int64_t		stride = (int64_t) gridDim.x * blockDim.x;
	unsigned long long undecided = 0;

	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n; i += stride)
	{
		GjExprDatum inputs[GJ_AGG_MAX_INPUTS];
		GjAggMatch	m;

		ReadInputs(spec, &cols, i, inputs);
		if (gj_agg_eval_match(spec, inputs, &m))
		{
			hashes[i] = (uint32_t) (gj_agg_hash(&m, spec->nkeys) >> 32) | 1;
			if (words.nwords > 0)
				PutWords(spec, &words, i, &m);
		}
		else
		{
			hashes[i] = 0;		/* its words are never read */
			undecided++;
		}
		if (rows != NULL)
			rows[i] = (uint32_t) i;
	}
	if (undecided > 0)
		atomicAdd(&counters->undecided, undecided);
}

/*
 * SORT, then: the run of one group that a thread has folded (matches
 * sorted[first .. end - 1]) into the table; where the table has no room
 * for the group, the run's matches are listed instead, to be folded one by
 * one once it has grown (as agg_groups_kernel lists its matches)
 */
static __device__ void
FlushRun(const GjAggSpec *spec, AggTableArgs *t, AggCounters *counters,
		 const GjAggMatch *m, const int64_t *words, const uint32_t *sorted,
		 const AggSortWords *sorted_words, int64_t first, int64_t end,
		 uint32_t *overflow_rows)
{
	long long	g = FindGroup(t, counters, spec->nkeys, m);

	if (g < 0)
	{
		unsigned long long at = atomicAdd(&counters->noverflow,
										  (unsigned long long) (end - first));

		for (int64_t p = first; p < end; p++)
			overflow_rows[at++] = SortedRow(sorted, sorted_words, p);
		return;
	}
	for (int a = 0; a < spec->naggs; a++)
		if (words[3 * a] != 0)
			CombineAtomic(&spec->aggs[a], &t->words[3 * a][g], &t->words[3 * a + 1][g],
						  &t->words[3 * a + 2][g], words[3 * a], words[3 * a + 1],
						  words[3 * a + 2]);
}

/*
 * SORT, last: the n matches in sort key order (hashes[p], sorted[p], whose
 * inputs are read again; SORT_TR: words, whose words are the match), each
 * thread GJ_AGG_SORT_RUN_ITEMS consecutive ones, folded run by run.  Matches
 * of one group are consecutive unless another group has the same sort key,
 * in which case a run ends at each change of keys: the group is found
 * again, never confused.
 */
__global__ static void
agg_sorted_kernel(const GjAggSpec *spec, AggColumns cols, int64_t n, const uint32_t *hashes,
				  const uint32_t *sorted, AggSortWords words, AggTableArgs t,
				  AggCounters *counters, uint32_t *overflow_rows)
{
	int64_t		stride = (int64_t) gridDim.x * blockDim.x * GJ_AGG_SORT_RUN_ITEMS;
	int			naggs = spec->naggs;

	for (int64_t start = (blockIdx.x * (int64_t) blockDim.x + threadIdx.x) * GJ_AGG_SORT_RUN_ITEMS;
		 start < n; start += stride)
	{
		int64_t		end = start + GJ_AGG_SORT_RUN_ITEMS < n ? start + GJ_AGG_SORT_RUN_ITEMS : n;
		int64_t		run_words[3 * GJ_AGG_MAX_AGGS];
		GjAggMatch	run;
		uint32_t	run_hash = 0;
		int64_t		run_first = start;

		for (int64_t p = start; p < end; p++)
		{
			uint32_t	h = hashes[p];
			GjExprDatum inputs[GJ_AGG_MAX_INPUTS];
			GjAggMatch	m;
			bool		same;

			if (h == 0)
				continue;		/* undecided, counted already */
			if (words.nwords > 0)
				GetWords(spec, &words, p, &m);
			else
			{
				ReadInputs(spec, &cols, sorted[p], inputs);
				if (!gj_agg_eval_match(spec, inputs, &m))
					continue;	/* cannot be: the same programs decided it */
			}
			same = h == run_hash && SameMatchKeys(spec->nkeys, &m, &run);
			if (!same)
			{
				if (run_hash != 0)
					FlushRun(spec, &t, counters, &run, run_words, sorted, &words, run_first,
							 p, overflow_rows);
				run = m;
				run_hash = h;
				run_first = p;
				for (int a = 0; a < naggs; a++)
					gj_agg_init_words(&spec->aggs[a], &run_words[3 * a], &run_words[3 * a + 1],
									  &run_words[3 * a + 2]);
			}
			for (int a = 0; a < naggs; a++)
				gj_agg_fold(&spec->aggs[a], &m.values[a], &run_words[3 * a], &run_words[3 * a + 1],
							&run_words[3 * a + 2]);
		}
		if (run_hash != 0)
			FlushRun(spec, &t, counters, &run, run_words, sorted, &words, run_first, end,
					 overflow_rows);
	}
}

/* Words a thread has folded: lane 0 of a warp ends with the warp's */
static __device__ void
WarpCombine(const GjAgg *agg, int64_t *n, int64_t *a, int64_t *b)
{
	for (int offset = 16; offset > 0; offset /= 2)
	{
		int64_t		n2 = __shfl_down_sync(0xffffffffu, *n, offset);
		int64_t		a2 = __shfl_down_sync(0xffffffffu, *a, offset);
		int64_t		b2 = __shfl_down_sync(0xffffffffu, *b, offset);

		gj_agg_combine(agg, n, a, b, n2, a2, b2);
	}
}

/* No key: every match into group 0; every thread runs the same iterations */
__global__ static void
agg_one_group_kernel(const GjAggSpec *spec, AggColumns cols, int64_t n, AggTableArgs t,
					 AggCounters *counters)
{
	int64_t		stride = (int64_t) gridDim.x * blockDim.x;
	int64_t		words[3 * GJ_AGG_MAX_AGGS];
	unsigned long long undecided = 0;

	for (int a = 0; a < spec->naggs; a++)
		gj_agg_init_words(&spec->aggs[a], &words[3 * a], &words[3 * a + 1], &words[3 * a + 2]);
	for (int64_t i = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; i < n; i += stride)
	{
		GjExprDatum inputs[GJ_AGG_MAX_INPUTS];
		GjAggMatch	m;

		ReadInputs(spec, &cols, i, inputs);
		if (!gj_agg_eval_match(spec, inputs, &m))
		{
			undecided++;
			continue;
		}
		for (int a = 0; a < spec->naggs; a++)
			gj_agg_fold(&spec->aggs[a], &m.values[a], &words[3 * a], &words[3 * a + 1],
						&words[3 * a + 2]);
	}
	/* every thread of the warp is here: combine, then one add per word */
	for (int a = 0; a < spec->naggs; a++)
	{
		const GjAgg *agg = &spec->aggs[a];

		WarpCombine(agg, &words[3 * a], &words[3 * a + 1], &words[3 * a + 2]);
		if ((threadIdx.x & 31) != 0 || words[3 * a] == 0)
			continue;
		CombineAtomic(agg, &t.words[3 * a][0], &t.words[3 * a + 1][0], &t.words[3 * a + 2][0],
					  words[3 * a], words[3 * a + 1], words[3 * a + 2]);
	}
	if (undecided > 0)
		atomicAdd(&counters->undecided, undecided);
}

/* GrowTable: every live group of "from" into "to", placed again */
__global__ static void
agg_move_kernel(const GjAggSpec *spec, AggTableArgs from, AggTableArgs to,
				AggCounters *counters)
{
	int64_t		stride = (int64_t) gridDim.x * blockDim.x;

	for (int64_t g = blockIdx.x * (int64_t) blockDim.x + threadIdx.x;
		 g < from.capacity; g += stride)
	{
		GjAggMatch	m;
		long long	ng;
		int64_t		mask = to.nslots - 1;
		int64_t		s;
		unsigned long long h;

		if (!from.live[g])
			continue;
		m.key_nulls = 0;
		for (int k = 0; k < spec->nkeys; k++)
		{
			m.keys[k] = from.keys[k][g];
			if (from.key_nulls[k][g])
				m.key_nulls |= UINT32_C(1) << k;
		}
		ng = (long long) atomicAdd(&counters->live, 1ULL);
		for (int k = 0; k < spec->nkeys; k++)
		{
			to.keys[k][ng] = from.keys[k][g];
			to.key_nulls[k][ng] = from.key_nulls[k][g];
		}
		for (int w = 0; w < 3 * spec->naggs; w++)
			to.words[w][ng] = from.words[w][g];
		to.live[ng] = 1;
		/* distinct keys: the first free slot from the hash is ours */
		h = gj_agg_hash(&m, spec->nkeys);
		for (s = (int64_t) (h & (unsigned long long) mask);
			 atomicCAS(&to.hashes[s], 0ULL, h) != 0; s = (s + 1) & mask)
			;
		to.slots[s] = ng;
	}
}

/* Every group of a table empty, every slot free */
static GjStatus
InitTable(GjCudaContext *ctx, CudaAggState *agg, AggTable *t, GjError *err)
{
	agg_init_kernel<<<gj_cuda_grid_size(ctx, t->nslots), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		(const GjAggSpec *) agg->d_spec.ptr, TableArgs(agg, t));
	GJ_CUDA_TRY(err, cudaGetLastError());
	return GJ_OK;
}

static GjStatus
ReserveTable(GjCudaContext *ctx, CudaAggState *agg, AggTable *t, int64_t capacity,
			 GjError *err)
{
	const char *what = "the groups of an aggregation";

	t->capacity = capacity;
	t->nslots = 2 * capacity;
	GJ_TRY(gj_cuda_device_reserve(ctx, &t->hashes, t->nslots * sizeof(uint64_t), what, err));
	GJ_TRY(gj_cuda_device_reserve(ctx, &t->slots, t->nslots * sizeof(long long), what, err));
	GJ_TRY(gj_cuda_device_reserve(ctx, &t->live, capacity, what, err));
	for (int k = 0; k < agg->spec.nkeys; k++)
	{
		GJ_TRY(gj_cuda_device_reserve(ctx, &t->keys[k], capacity * sizeof(int64_t), what, err));
		GJ_TRY(gj_cuda_device_reserve(ctx, &t->key_nulls[k], capacity, what, err));
	}
	for (int w = 0; w < 3 * agg->spec.naggs; w++)
		GJ_TRY(gj_cuda_device_reserve(ctx, &t->words[w], capacity * sizeof(int64_t), what, err));
	return InitTable(ctx, agg, t, err);
}

static void
ReleaseTable(GjCudaContext *ctx, AggTable *t)
{
	gj_cuda_device_release(ctx, &t->hashes);
	gj_cuda_device_release(ctx, &t->slots);
	gj_cuda_device_release(ctx, &t->live);
	for (int k = 0; k < GJ_AGG_MAX_KEYS; k++)
	{
		gj_cuda_device_release(ctx, &t->keys[k]);
		gj_cuda_device_release(ctx, &t->key_nulls[k]);
	}
	for (int w = 0; w < 3 * GJ_AGG_MAX_AGGS; w++)
		gj_cuda_device_release(ctx, &t->words[w]);
	t->capacity = t->nslots = 0;
}

static void
FreeResults(CudaAggState *agg)
{
	gj_agg_groups_free(&agg->spilled);
	gj_agg_groups_free(&agg->raw);
	gj_agg_groups_free(&agg->result);
	free(agg->raw_live);
	agg->raw_live = NULL;
}

/* Free the aggregation's state; for context_destroy, errors ignored */
void
gj_cuda_agg_destroy(GjCudaContext *ctx)
{
	CudaAggState *agg = (CudaAggState *) ctx->agg_state;

	if (agg == NULL)
		return;
	for (int i = 0; i < 2; i++)
		ReleaseTable(ctx, &agg->tables[i]);
	gj_cuda_device_release(ctx, &agg->d_spec);
	gj_cuda_device_release(ctx, &agg->counters);
	for (int i = 0; i < 2; i++)
	{
		gj_cuda_device_release(ctx, &agg->lists[i]);
		gj_cuda_device_release(ctx, &agg->sort_hashes[i]);
		gj_cuda_device_release(ctx, &agg->sort_rows[i]);
		for (int j = 0; j < AGG_SORT_WORDS; j++)
			gj_cuda_device_release(ctx, &agg->sort_words[i][j]);
		gj_cuda_device_release(ctx, &agg->order_words[i]);
		gj_cuda_device_release(ctx, &agg->order_groups[i]);
	}
	gj_cuda_device_release(ctx, &agg->sort_first_hashes);
	gj_cuda_device_release(ctx, &agg->order_count);
	gj_cuda_device_release(ctx, &agg->order_out);
	gj_cuda_pinned_free(agg->h_counters);
	FreeResults(agg);
	free(agg);
	ctx->agg_state = NULL;
	(void) cudaGetLastError();
}

/* The counters, copied back (waits for the stream) */
static GjStatus
ReadCounters(GjCudaContext *ctx, CudaAggState *agg, GjError *err)
{
	return gj_cuda_copy_from_device(ctx, agg->h_counters, agg->counters.ptr,
									sizeof(AggCounters), err);
}

/*
 * The reserved entries of the current table (live or holes; the group
 * numbers reserved, up to its capacity) copied back into raw and raw_live
 */
static GjStatus
CopyBack(GjCudaContext *ctx, CudaAggState *agg, GjError *err)
{
	AggTable   *t = &agg->tables[agg->cur];
	int64_t		cap = t->capacity;
	uint8_t    *live;

	GJ_TRY(ReadCounters(ctx, agg, err));
	if ((int64_t) agg->h_counters->ngroups < cap)
		cap = (int64_t) agg->h_counters->ngroups;
	agg->raw.n = 0;
	if (agg->raw.capacity < cap)
	{
		/* room for cap entries, kept for the next time */
		gj_agg_groups_free(&agg->raw);
		free(agg->raw_live);
		agg->raw_live = (uint8_t *) malloc(cap);
		if (agg->raw_live == NULL)
			goto oom;
		for (int k = 0; k < agg->spec.nkeys; k++)
		{
			agg->raw.keys[k] = (int64_t *) malloc(cap * sizeof(int64_t));
			agg->raw.key_nulls[k] = (uint8_t *) malloc(cap);
			if (agg->raw.keys[k] == NULL || agg->raw.key_nulls[k] == NULL)
				goto oom;
		}
		for (int w = 0; w < 3 * agg->spec.naggs; w++)
			if ((agg->raw.words[w] = (int64_t *) malloc(cap * sizeof(int64_t))) == NULL)
				goto oom;
		agg->raw.capacity = cap;
	}
	live = agg->raw_live;
	if (cap > 0)
	{
		GJ_TRY(gj_cuda_copy_from_device(ctx, live, t->live.ptr, cap, err));
		for (int k = 0; k < agg->spec.nkeys; k++)
		{
			GJ_TRY(gj_cuda_copy_from_device(ctx, agg->raw.keys[k], t->keys[k].ptr,
											cap * sizeof(int64_t), err));
			GJ_TRY(gj_cuda_copy_from_device(ctx, agg->raw.key_nulls[k], t->key_nulls[k].ptr,
											cap, err));
		}
		for (int w = 0; w < 3 * agg->spec.naggs; w++)
			GJ_TRY(gj_cuda_copy_from_device(ctx, agg->raw.words[w], t->words[w].ptr,
											cap * sizeof(int64_t), err));
	}
	agg->raw.n = cap;
	return GJ_OK;

oom:
	gj_agg_groups_free(&agg->raw);
	free(agg->raw_live);
	agg->raw_live = NULL;
	return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
						"Could not allocate host memory for the groups of an aggregation.");
}

/*
 * No room on the device for more groups: the table's live groups into the
 * spilled ones in host memory, and the table empty again, to go on with
 */
static GjStatus
SpillTable(GjCudaContext *ctx, CudaAggState *agg, GjError *err)
{
	GJ_TRY(CopyBack(ctx, agg, err));
	if (!gj_agg_groups_append(&agg->spilled, &agg->spec, &agg->raw, agg->raw_live))
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate host memory for the groups of an aggregation.");
	GJ_TRY(InitTable(ctx, agg, &agg->tables[agg->cur], err));
	agg->h_counters->ngroups = 0;
	GJ_TRY(gj_cuda_copy_to_device(ctx, agg->counters.ptr, agg->h_counters,
								  sizeof(AggCounters), err));
	agg->spills++;
	return GJ_OK;
}

/*
 * Twice the room (or more), every live group moved there; where the device
 * has no room for that, the groups are spilled instead (SpillTable)
 */
static GjStatus
GrowTable(GjCudaContext *ctx, CudaAggState *agg, int64_t at_least, GjError *err)
{
	AggTable   *from = &agg->tables[agg->cur];
	AggTable   *to = &agg->tables[1 - agg->cur];
	int64_t		capacity = from->capacity * 2;
	GjStatus	status;

	while (capacity < at_least)
		capacity *= 2;
	status = ReserveTable(ctx, agg, to, capacity, err);
	if (status == GJ_ERROR_DEVICE_MEMORY)
	{
		ReleaseTable(ctx, to);
		memset(err, 0, sizeof(*err));
		return SpillTable(ctx, agg, err);
	}
	GJ_TRY(status);
	GJ_CUDA_TRY(err, cudaMemsetAsync(&((AggCounters *) agg->counters.ptr)->live, 0,
									 sizeof(unsigned long long), ctx->stream));
	agg_move_kernel<<<gj_cuda_grid_size(ctx, from->capacity), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		(const GjAggSpec *) agg->d_spec.ptr, TableArgs(agg, from), TableArgs(agg, to),
		(AggCounters *) agg->counters.ptr);
	GJ_CUDA_TRY(err, cudaGetLastError());
	GJ_TRY(ReadCounters(ctx, agg, err));
	/* the group numbers go on from the live ones */
	agg->h_counters->ngroups = agg->h_counters->live;
	GJ_TRY(gj_cuda_copy_to_device(ctx, agg->counters.ptr, agg->h_counters,
								  sizeof(AggCounters), err));
	ReleaseTable(ctx, from);
	agg->cur = 1 - agg->cur;
	return GJ_OK;
}

/*
 * Room to list n matches, twice (a pass reads one list and writes the
 * other).  Where the device has none, the groups are spilled and the table
 * shrinks to its first size, once, to make some.
 */
static GjStatus
ReserveLists(GjCudaContext *ctx, CudaAggState *agg, int64_t n, GjError *err)
{
	const char *what = "the matches an aggregation's groups had no room for";
	GjStatus	status = GJ_OK;

	for (int attempt = 0; attempt < 2; attempt++)
	{
		AggTable   *t = &agg->tables[agg->cur];

		status = gj_cuda_device_reserve(ctx, &agg->lists[0], (size_t) n * sizeof(uint32_t),
										what, err);
		if (status == GJ_OK)
			status = gj_cuda_device_reserve(ctx, &agg->lists[1], (size_t) n * sizeof(uint32_t),
											what, err);
		if (status != GJ_ERROR_DEVICE_MEMORY || attempt > 0 || t->capacity <= 1024)
			break;
		memset(err, 0, sizeof(*err));
		GJ_TRY(SpillTable(ctx, agg, err));
		ReleaseTable(ctx, t);
		GJ_TRY(ReserveTable(ctx, agg, t, 1024, err));
	}
	return status;
}

/*
 * The SHARED variant's bound: the groups (numbered below it) whose words a
 * block keeps in shared memory, enough for the group numbers given so far
 * (or the groups expected) up to what GJ_AGG_SHARED_BYTES holds; 0 for
 * HASH.  Before any number is given, as many as it holds: the matches
 * that first reach a new group all reserve a number and all but one leave
 * a hole, so that a table's first groups can be numbered in the hundreds
 * even when there are few of them (with a bound of the groups expected,
 * a 1-group round on the H200 ran no faster than HASH).
 */
static int
SharedGroups(const CudaAggState *agg)
{
	int64_t		known = (int64_t) agg->h_counters->ngroups;
	int64_t		most = GJ_AGG_SHARED_GROUPS(agg->spec.naggs);
	int64_t		groups = 32;

	if (agg->spec.variant != GJ_AGG_SHARED)
		return 0;
	if (known == 0)
		return (int) most;
	if (known < agg->spec.groups_hint)
		known = agg->spec.groups_hint;
	while (groups < known && groups < most)
		groups *= 2;
	return (int) (groups < most ? groups : most);
}

extern "C" GjStatus
gj_cuda_agg_begin(GjContext *ctx, const GjAggSpec *spec, GjError *err)
{
	GjCudaContext *cuda = gj_cuda_context_get(ctx, err);
	CudaAggState *agg;
	int64_t		capacity = 1;
	GjStatus	status;

	if (cuda == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	GJ_TRY(gj_agg_check(spec, &cuda->spec, err));
	gj_cuda_agg_destroy(cuda);
	cuda->agg_state = agg = (CudaAggState *) calloc(1, sizeof(CudaAggState));
	if (agg == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate host memory for an aggregation.");
	agg->spec = *spec;
	agg->h_counters = (AggCounters *) gj_cuda_pinned_alloc(sizeof(AggCounters));
	if (agg->h_counters == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate page-locked host memory for an aggregation.");
	memset(agg->h_counters, 0, sizeof(AggCounters));
	GJ_TRY(gj_cuda_device_reserve(cuda, &agg->d_spec, sizeof(GjAggSpec),
								  "an aggregation's programs", err));
	GJ_TRY(gj_cuda_copy_to_device(cuda, agg->d_spec.ptr, spec, sizeof(GjAggSpec), err));
	GJ_TRY(gj_cuda_device_reserve(cuda, &agg->counters, sizeof(AggCounters),
								  "an aggregation's counters", err));
	if (spec->nkeys > 0)
	{
		/*
		 * Room for the groups expected, up to GJ_AGG_FIRST_GROUPS: the
		 * planner's estimate can be far too high (an expression's), and the
		 * table grows cheaply when it is too low
		 */
		capacity = 1024;
		while (capacity < spec->groups_hint && capacity < GJ_AGG_FIRST_GROUPS)
			capacity *= 2;
	}
	else
		agg->h_counters->ngroups = 1;	/* the one group, there from the start */
	GJ_TRY(gj_cuda_copy_to_device(cuda, agg->counters.ptr, agg->h_counters,
								  sizeof(AggCounters), err));
	status = ReserveTable(cuda, agg, &agg->tables[0], capacity, err);
	if (status == GJ_ERROR_DEVICE_MEMORY && capacity > 1024)
	{
		/* the expected groups have no room: start small, grow or spill */
		ReleaseTable(cuda, &agg->tables[0]);
		memset(err, 0, sizeof(*err));
		status = ReserveTable(cuda, agg, &agg->tables[0], 1024, err);
	}
	GJ_TRY(status);
	if (spec->nkeys == 0)
	{
		/* group 0 is live with no row */
		GJ_CUDA_TRY(err, cudaMemsetAsync(agg->tables[0].live.ptr, 1, 1, cuda->stream));
	}
	agg->cur = 0;
	return GJ_OK;
}

/*
 * Where the device has no room for an optional pass's arrays: no error,
 * the caller goes another way (true); any other status is the caller's
 */
static bool
NoRoom(GjStatus status, GjError *err)
{
	if (status != GJ_ERROR_DEVICE_MEMORY)
		return false;
	memset(err, 0, sizeof(*err));
	return true;
}

/* SORT_TR: how many words a match carries (AGG_SORT_WORDS) */
static int
SortWords(const GjAggSpec *spec)
{
	int			nwords = 1 + spec->nkeys;

	for (int a = 0; a < spec->naggs; a++)
		nwords += spec->aggs[a].has_arg ? 1 : 0;
	return nwords;
}

/*
 * SORT and SORT_TR: the first pass over a round's n matches
 * (agg_sort_hash_kernel, the sorts, agg_sorted_kernel), listing into
 * overflow_rows the matches whose group the table had no room for.  *done
 * false where the device has no room for the sorts' arrays: the round then
 * goes as in HASH.
 */
static GjStatus
SortedPass(GjCudaContext *ctx, CudaAggState *agg, const GjAggSpec *d_spec,
		   const AggColumns *cols, int64_t n, uint32_t *overflow_rows, bool *done,
		   GjError *err)
{
	const char *what = "an aggregation's sorted matches";
	AggCounters *d_counters = (AggCounters *) agg->counters.ptr;
	bool		along = agg->spec.variant == GJ_AGG_SORT_TR;
	AggSortWords words;
	AggSortWords sorted_words;
	uint32_t   *hashes;
	uint32_t   *rows = NULL;
	const uint32_t *sorted_hashes;
	const uint32_t *sorted_rows = NULL;
	size_t		temp_bytes = 0;
	GjStatus	status = GJ_OK;

	*done = false;
	memset(&words, 0, sizeof(words));
	memset(&sorted_words, 0, sizeof(sorted_words));
	for (int i = 0; i < 2 && status == GJ_OK; i++)
		status = gj_cuda_device_reserve(ctx, &agg->sort_hashes[i], (size_t) n * sizeof(uint32_t),
										what, err);
	if (!along)
		for (int i = 0; i < 2 && status == GJ_OK; i++)
			status = gj_cuda_device_reserve(ctx, &agg->sort_rows[i],
											(size_t) n * sizeof(uint32_t), what, err);
	else
	{
		words.nwords = sorted_words.nwords = SortWords(&agg->spec);
		if (status == GJ_OK)
			status = gj_cuda_device_reserve(ctx, &agg->sort_first_hashes,
											(size_t) n * sizeof(uint32_t), what, err);
		for (int j = 0; j < words.nwords && status == GJ_OK; j++)
			for (int i = 0; i < 2 && status == GJ_OK; i++)
				status = gj_cuda_device_reserve(ctx, &agg->sort_words[i][j],
												(size_t) n * sizeof(int64_t), what, err);
	}
	if (NoRoom(status, err))
		return GJ_OK;
	GJ_TRY(status);

	if (along)
	{
		hashes = (uint32_t *) agg->sort_first_hashes.ptr;
		for (int j = 0; j < words.nwords; j++)
			words.w[j] = (int64_t *) agg->sort_words[0][j].ptr;
		cub::DoubleBuffer<uint32_t> keys;
		cub::DoubleBuffer<int64_t> values;

		GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(NULL, temp_bytes, keys, values, n, 0, 32,
														 ctx->stream));
	}
	else
	{
		hashes = (uint32_t *) agg->sort_hashes[0].ptr;
		rows = (uint32_t *) agg->sort_rows[0].ptr;
		cub::DoubleBuffer<uint32_t> keys;
		cub::DoubleBuffer<uint32_t> values;

		GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(NULL, temp_bytes, keys, values, n, 0, 32,
														 ctx->stream));
	}
	agg_sort_hash_kernel<<<gj_cuda_grid_size(ctx, n), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		d_spec, *cols, n, d_counters, hashes, rows, words);
	GJ_CUDA_TRY(err, cudaGetLastError());
	status = gj_cuda_buffer_reserve(ctx, GJ_BUFFER_CUB_TEMP, temp_bytes, err);
	if (NoRoom(status, err))
	{
		/* the hashes' undecided count is recounted by the HASH pass */
		GJ_CUDA_TRY(err, cudaMemsetAsync(&d_counters->undecided, 0,
										 sizeof(unsigned long long), ctx->stream));
		return GJ_OK;
	}
	GJ_TRY(status);
	if (along)
	{
		/*
		 * One sort of (hash, word) pairs per word, each of the same hashes:
		 * a stable sort moves every word where its match goes
		 */
		for (int j = 0; j < words.nwords; j++)
		{
			cub::DoubleBuffer<uint32_t> keys((uint32_t *) agg->sort_hashes[0].ptr,
											 (uint32_t *) agg->sort_hashes[1].ptr);
			cub::DoubleBuffer<int64_t> values((int64_t *) agg->sort_words[0][j].ptr,
											  (int64_t *) agg->sort_words[1][j].ptr);

			GJ_CUDA_TRY(err, cudaMemcpyAsync(keys.Current(), hashes, (size_t) n * sizeof(uint32_t),
											 cudaMemcpyDeviceToDevice, ctx->stream));
			GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(GJ_BUFFER(ctx, GJ_BUFFER_CUB_TEMP, void),
															 temp_bytes, keys, values, n, 0, 32,
															 ctx->stream));
			sorted_hashes = keys.Current();
			sorted_words.w[j] = values.Current();
		}
	}
	else
	{
		cub::DoubleBuffer<uint32_t> keys(hashes, (uint32_t *) agg->sort_hashes[1].ptr);
		cub::DoubleBuffer<uint32_t> values(rows, (uint32_t *) agg->sort_rows[1].ptr);

		GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(GJ_BUFFER(ctx, GJ_BUFFER_CUB_TEMP, void),
														 temp_bytes, keys, values, n, 0, 32,
														 ctx->stream));
		sorted_hashes = keys.Current();
		sorted_rows = values.Current();
	}
	agg_sorted_kernel<<<gj_cuda_grid_size(ctx, (n + GJ_AGG_SORT_RUN_ITEMS - 1) / GJ_AGG_SORT_RUN_ITEMS),
		GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		d_spec, *cols, n, sorted_hashes, sorted_rows, sorted_words,
		TableArgs(agg, &agg->tables[agg->cur]), d_counters, overflow_rows);
	GJ_CUDA_TRY(err, cudaGetLastError());
	*done = true;
	return GJ_OK;
}

extern "C" GjStatus
gj_cuda_aggregate(GjContext *ctx, int64_t first, int64_t *nmatches, int64_t *undecided,
				  GjError *err)
{
	GjCudaContext *cuda = gj_cuda_context_get(ctx, err);
	double		start = gj_clock_ms();
	double		transfer_start;
	CudaAggState *agg;
	GjMatchRound probe;
	int64_t		round_size = 0;
	GjRoundSources sources;
	AggColumns	cols;
	AggCounters *d_counters;
	const GjAggSpec *d_spec;
	GjStatus	status;

	if (cuda == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	agg = (CudaAggState *) cuda->agg_state;
	if (agg == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"aggregate was called before agg_begin.");
	*nmatches = 0;
	*undecided = 0;
	GJ_TRY(gj_check_retrieve(cuda->has_chunk, cuda->nmatches, cuda->spec.max_matches,
							 first, &probe, &round_size, err));
	if (round_size == 0)
		return GJ_OK;
	transfer_start = cuda->stats.transfer_ms;
	memset(&sources, 0, sizeof(sources));
	GJ_TRY(cuda->variant->retrieve(cuda, (uint64_t) first, round_size, &sources, err));
	GJ_TRY(gj_cuda_round_gather(cuda, &sources, round_size, err));

	memset(&cols, 0, sizeof(cols));
	for (int s = 0; s < GJ_NUM_SIDES; s++)
	{
		const GjDeviceColumns *set = &cuda->columns[s == GJ_SIDE_OUTER ? GJ_COLUMNS_ROUND_OUTER :
													 GJ_COLUMNS_ROUND_INNER];
		const int32_t *widths = gj_side_widths(&cuda->spec, (GjSide) s);

		for (int c = 0; c < gj_side_ncolumns(&cuda->spec, (GjSide) s); c++)
		{
			cols.values[s][c] = set->values[c].ptr;
			cols.nulls[s][c] = set->has_nulls[c] ? (const uint8_t *) set->nulls[c].ptr : NULL;
			cols.widths[s][c] = widths[c];
		}
	}
	d_counters = (AggCounters *) agg->counters.ptr;
	d_spec = (const GjAggSpec *) agg->d_spec.ptr;
	GJ_CUDA_TRY(err, cudaMemsetAsync(&d_counters->undecided, 0, 2 * sizeof(unsigned long long),
									 cuda->stream));
	if (agg->spec.nkeys == 0)
	{
		agg_one_group_kernel<<<gj_cuda_grid_size(cuda, round_size), GJ_BLOCK_SIZE, 0, cuda->stream>>>(
			d_spec, cols, round_size, TableArgs(agg, &agg->tables[agg->cur]), d_counters);
		GJ_CUDA_TRY(err, cudaGetLastError());
		status = ReadCounters(cuda, agg, err);
	}
	else
	{
		const uint32_t *rows = NULL;
		int64_t		n = round_size;
		int			out = 0;

		GJ_TRY(ReserveLists(cuda, agg, round_size, err));
		for (;;)
		{
			int			shared_groups = SharedGroups(agg);
			int			blocks = gj_cuda_grid_size(cuda, n);
			bool		sorted = false;

			/* SORT's first pass; matches it lists go one by one, as in HASH */
			if (rows == NULL && (agg->spec.variant == GJ_AGG_SORT ||
								 agg->spec.variant == GJ_AGG_SORT_TR))
				GJ_TRY(SortedPass(cuda, agg, d_spec, &cols, n, (uint32_t *) agg->lists[out].ptr,
								  &sorted, err));
			/* fewer blocks with shared words: each adds its groups once */
			if (shared_groups > 0 && blocks > cuda->max_grid / 2)
				blocks = cuda->max_grid / 2;
			if (!sorted)
			{
				agg_groups_kernel<<<blocks, GJ_BLOCK_SIZE,
					(size_t) shared_groups * 3 * agg->spec.naggs * sizeof(int64_t),
					cuda->stream>>>(
					d_spec, cols, n, rows, TableArgs(agg, &agg->tables[agg->cur]), d_counters,
					(uint32_t *) agg->lists[out].ptr, shared_groups);
				GJ_CUDA_TRY(err, cudaGetLastError());
			}
			GJ_TRY(ReadCounters(cuda, agg, err));
			if (agg->h_counters->noverflow == 0)
				break;
			n = (int64_t) agg->h_counters->noverflow;
			*undecided += (int64_t) agg->h_counters->undecided;
			/* the listed matches again, into a table with room for them */
			GJ_TRY(GrowTable(cuda, agg, agg->tables[agg->cur].capacity + n, err));
			GJ_CUDA_TRY(err, cudaMemsetAsync(&d_counters->undecided, 0,
											 2 * sizeof(unsigned long long), cuda->stream));
			/* read this list; the kernel lists into the other */
			rows = (const uint32_t *) agg->lists[out].ptr;
			out = 1 - out;
		}
		status = GJ_OK;
	}
	if (status == GJ_OK)
	{
		*undecided += (int64_t) agg->h_counters->undecided;
		*nmatches = round_size;
	}
	cuda->stats.materialize_ms += gj_clock_ms() - start -
		(cuda->stats.transfer_ms - transfer_start);
	return status;
}

/* Sort key i's words of the groups in order: its values, or its NULL flags */
__global__ static void
agg_order_words_kernel(const GjAggSpec *spec, int i, const int64_t *keys, const uint8_t *nulls,
					   const uint32_t *groups, int64_t n, bool null_pass,
					   unsigned long long *words)
{
	for (int64_t j = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; j < n;
		 j += (int64_t) gridDim.x * blockDim.x)
	{
		uint32_t	g = groups[j];

		words[j] = null_pass ? gj_agg_sort_null_bit(spec, i, nulls[g] != 0) :
			gj_agg_sort_word(spec, i, keys[g]);
	}
}

/* One array of the groups (width 1 or 8 bytes) in order */
__global__ static void
agg_order_gather_kernel(const void *from, int width, const uint32_t *groups, int64_t n,
						void *to)
{
	for (int64_t j = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; j < n;
		 j += (int64_t) gridDim.x * blockDim.x)
	{
		if (width == 8)
			((int64_t *) to)[j] = ((const int64_t *) from)[groups[j]];
		else
			((uint8_t *) to)[j] = ((const uint8_t *) from)[groups[j]];
	}
}

/* One array of the groups gathered in order on the device, then copied to host */
static GjStatus
GatherBack(GjCudaContext *ctx, CudaAggState *agg, const GjDeviceBuffer *from, int width,
		   const uint32_t *groups, int n, void *to, GjError *err)
{
	agg_order_gather_kernel<<<gj_cuda_grid_size(ctx, n), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
		from->ptr, width, groups, n, agg->order_out.ptr);
	GJ_CUDA_TRY(err, cudaGetLastError());
	return gj_cuda_copy_from_device(ctx, to, agg->order_out.ptr, (size_t) n * width, err);
}

/*
 * agg_result with sort keys and no spill: the table's live groups listed
 * (cub::DeviceSelect), then per sort key, least significant first, a
 * stable radix sort of them by its values and one by its NULL flags
 * (cub::DeviceRadixSort), and each array gathered in that order and copied
 * back into result.  *done false where the device has no room for the
 * sort's arrays (or the table is too large for 32-bit group numbers): the
 * caller sorts on the host.
 */
static GjStatus
SortOnDevice(GjCudaContext *ctx, CudaAggState *agg, bool *done, GjError *err)
{
	const char *what = "the groups of an aggregation, sorted";
	AggTable   *t = &agg->tables[agg->cur];
	const GjAggSpec *d_spec = (const GjAggSpec *) agg->d_spec.ptr;
	int64_t		cap = t->capacity;
	size_t		select_bytes = 0;
	size_t		sort_bytes = 0;
	size_t		temp_bytes;
	void	   *temp;
	int			n = 0;
	GjStatus	status = GJ_OK;

	*done = false;
	GJ_TRY(ReadCounters(ctx, agg, err));
	if ((int64_t) agg->h_counters->ngroups < cap)
		cap = (int64_t) agg->h_counters->ngroups;
	if (cap >= INT32_MAX)
		return GJ_OK;
	for (int i = 0; i < 2 && status == GJ_OK; i++)
	{
		status = gj_cuda_device_reserve(ctx, &agg->order_words[i],
										(size_t) (cap > 0 ? cap : 1) * sizeof(uint64_t), what, err);
		if (status == GJ_OK)
			status = gj_cuda_device_reserve(ctx, &agg->order_groups[i],
											(size_t) (cap > 0 ? cap : 1) * sizeof(uint32_t), what, err);
	}
	if (status == GJ_OK)
		status = gj_cuda_device_reserve(ctx, &agg->order_count, sizeof(int), what, err);
	if (status == GJ_OK)
		status = gj_cuda_device_reserve(ctx, &agg->order_out,
										(size_t) (cap > 0 ? cap : 1) * sizeof(int64_t), what, err);
	if (NoRoom(status, err))
		return GJ_OK;
	GJ_TRY(status);

	cub::DoubleBuffer<unsigned long long> words((unsigned long long *) agg->order_words[0].ptr,
												(unsigned long long *) agg->order_words[1].ptr);
	cub::DoubleBuffer<uint32_t> groups((uint32_t *) agg->order_groups[0].ptr,
									   (uint32_t *) agg->order_groups[1].ptr);

	/* the temporary storage both CUB calls need */
	GJ_CUDA_TRY(err, cub::DeviceSelect::Flagged(NULL, select_bytes,
												thrust::counting_iterator<uint32_t>(0),
												(const uint8_t *) t->live.ptr, groups.Current(),
												(int *) agg->order_count.ptr, (int) cap,
												ctx->stream));
	GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(NULL, sort_bytes, words, groups, (int) cap,
													 0, 64, ctx->stream));
	temp_bytes = select_bytes > sort_bytes ? select_bytes : sort_bytes;
	status = gj_cuda_buffer_reserve(ctx, GJ_BUFFER_CUB_TEMP, temp_bytes, err);
	if (NoRoom(status, err))
		return GJ_OK;
	GJ_TRY(status);
	temp = GJ_BUFFER(ctx, GJ_BUFFER_CUB_TEMP, void);

	if (cap > 0)
	{
		GJ_CUDA_TRY(err, cub::DeviceSelect::Flagged(temp, temp_bytes,
													thrust::counting_iterator<uint32_t>(0),
													(const uint8_t *) t->live.ptr,
													groups.Current(),
													(int *) agg->order_count.ptr, (int) cap,
													ctx->stream));
		GJ_TRY(gj_cuda_copy_from_device(ctx, &n, agg->order_count.ptr, sizeof(int), err));
	}
	for (int i = agg->spec.nsort - 1; i >= 0 && n > 1; i--)
	{
		int			k = agg->spec.sort_keys[i];

		for (int pass = 0; pass < 2; pass++)
		{
			agg_order_words_kernel<<<gj_cuda_grid_size(ctx, n), GJ_BLOCK_SIZE, 0, ctx->stream>>>(
				d_spec, i, (const int64_t *) t->keys[k].ptr,
				(const uint8_t *) t->key_nulls[k].ptr, groups.Current(), n, pass == 1,
				words.Current());
			GJ_CUDA_TRY(err, cudaGetLastError());
			GJ_CUDA_TRY(err, cub::DeviceRadixSort::SortPairs(temp, temp_bytes, words, groups, n,
															 0, pass == 1 ? 1 : 64,
															 ctx->stream));
		}
	}

	agg->result.n = 0;
	if (!gj_agg_groups_reserve(&agg->result, &agg->spec, n > 0 ? n : 1))
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate host memory for the groups of an aggregation.");
	for (int k = 0; k < agg->spec.nkeys && n > 0; k++)
	{
		GJ_TRY(GatherBack(ctx, agg, &t->keys[k], 8, groups.Current(), n, agg->result.keys[k], err));
		GJ_TRY(GatherBack(ctx, agg, &t->key_nulls[k], 1, groups.Current(), n,
						  agg->result.key_nulls[k], err));
	}
	for (int w = 0; w < 3 * agg->spec.naggs && n > 0; w++)
		GJ_TRY(GatherBack(ctx, agg, &t->words[w], 8, groups.Current(), n, agg->result.words[w],
						  err));
	agg->result.n = n;
	*done = true;
	return GJ_OK;
}

extern "C" GjStatus
gj_cuda_agg_result(GjContext *ctx, GjAggResult *out, GjError *err)
{
	GjCudaContext *cuda = gj_cuda_context_get(ctx, err);
	CudaAggState *agg;

	if (cuda == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	agg = (CudaAggState *) cuda->agg_state;
	if (agg == NULL || out == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"agg_result was called before agg_begin.");
	/* in key order, sorted on the device where nothing was spilled */
	if (agg->spec.nsort > 0 && agg->spilled.n == 0)
	{
		bool		done;

		GJ_TRY(SortOnDevice(cuda, agg, &done, err));
		if (done)
		{
			gj_agg_groups_result(&agg->result, &agg->spec, agg->spills, out);
			return GJ_OK;
		}
	}
	/* the spilled groups, then the live ones of the table (holes skipped) */
	GJ_TRY(CopyBack(cuda, agg, err));
	agg->result.n = 0;
	if (!gj_agg_groups_append(&agg->result, &agg->spec, &agg->spilled, NULL) ||
		!gj_agg_groups_append(&agg->result, &agg->spec, &agg->raw, agg->raw_live) ||
		!gj_agg_groups_sort(&agg->result, &agg->spec))
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate host memory for the groups of an aggregation.");
	gj_agg_groups_result(&agg->result, &agg->spec, agg->spills, out);
	return GJ_OK;
}
