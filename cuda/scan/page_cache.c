/*-------------------------------------------------------------------------
 *
 * page_cache.c
 *	  Which heap pages the deform keeps, in which slots (page_cache.h)
 *
 * The slots are split in shards (GjPageShard), a block's by its hash; in
 * each, a chained hash table over its slots: a bucket holds the first slot
 * of its chain, each slot the next; a slot's key is its relation's three
 * words and its block.  A call's pages are taken a shard at a time, under
 * that shard's mutex, which is never held while waiting for anything else;
 * each slot's fields lie together (GjPageSlot), and the buckets and slots a
 * call will look at are fetched into the CPU's cache before the mutex is
 * taken, so that it is held for little more than the comparisons.
 *
 * Which page a full shard gives up (Victim) resists scans: the pages of a
 * relation read whole, again and again, and larger than the cache would
 * each be dropped before their next read by a clock that takes every
 * page it comes to, and the cache would serve none.  Here the hand, which
 * moves one slot a miss, takes a cold page (neither filled nor hit during
 * the hand's last COLD_TURNS x nslots moves) outright, any other for one
 * miss in ADMIT_ONE_IN; for the other misses the page missed is not kept.
 * So a relation read again and again keeps about as much of itself as the
 * cache holds (the pages it keeps are hit every turn and never go cold),
 * and pages no longer read make room for new ones within two turns of
 * the hand.  That holds for a relation up to about three times the cache
 * (its misses in one reading move the hand less than two turns); a larger
 * one looks cold page by page, and gets about nothing, as from a clock.
 * The distance is counted in moves, not in whole turns: counted in turns,
 * a page hit late in one looked cold early in the next but one, so a
 * relation 2.4 times the cache lost hits run after run until it got
 * almost none (on an H200, 2026-12-01).
 *
 * IDENTIFICATION
 *	  cuda/scan/page_cache.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "page_cache.h"

#define SLOT_FREE		0
#define SLOT_FILLING	1
#define SLOT_FILLED		2

#define ADMIT_ONE_IN	8
#define COLD_TURNS		2

/* The pages a call takes at a time: their hashes, a shard at a time */
#define BATCH			256

static uint64_t
Hash(const uint32_t rel[3], uint32_t block)
{
	uint64_t	h = ((uint64_t) rel[0] << 32 | rel[1]) * UINT64_C(0x9E3779B97F4A7C15);

	h ^= ((uint64_t) rel[2] << 32 | block) + UINT64_C(0xBF58476D1CE4E5B9) + (h << 6) + (h >> 2);
	h ^= h >> 31;
	h *= UINT64_C(0x94D049BB133111EB);
	return h ^ (h >> 29);
}

/* A hash's shard (bits 40 and up: apart from the bucket's low bits) */
static inline int
ShardIndex(const GjPageCache *cache, uint64_t h)
{
	return (int) ((h >> 40) & (uint64_t) (cache->nshards - 1));
}

/* The shard of a slot counted over the cache */
static inline int
ShardOfSlot(const GjPageCache *cache, int64_t s)
{
	int			k = (int) (s / cache->shards[0].nslots);

	return k < cache->nshards ? k : cache->nshards - 1;
}

static void
FreeShard(GjPageShard *shard)
{
	free(shard->buckets);
	free(shard->slots);
	if (shard->nslots > 0 && shard->buckets != NULL && shard->slots != NULL)
		pthread_mutex_destroy(&shard->lock);
	memset(shard, 0, sizeof(*shard));
}

static bool
InitShard(GjPageShard *shard, int64_t first, int64_t nslots, int k)
{
	memset(shard, 0, sizeof(*shard));
	shard->nbuckets = 1;
	while (shard->nbuckets < 2 * nslots)
		shard->nbuckets <<= 1;
	shard->first = first;
	shard->nslots = nslots;
	shard->buckets = (int64_t *) malloc(sizeof(int64_t) * (size_t) shard->nbuckets);
	shard->slots = (GjPageSlot *) calloc((size_t) nslots, sizeof(GjPageSlot));
	if (shard->buckets == NULL || shard->slots == NULL)
	{
		free(shard->buckets);
		free(shard->slots);
		memset(shard, 0, sizeof(*shard));
		return false;
	}
	shard->nfree = nslots;
	shard->lottery = UINT64_C(0x9E3779B97F4A7C15) + (uint64_t) k * UINT64_C(0x632BE59BD9B4E019);
	for (int64_t b = 0; b < shard->nbuckets; b++)
		shard->buckets[b] = -1;
	for (int64_t s = 0; s < nslots; s++)
		shard->slots[s].next = -1;
	pthread_mutex_init(&shard->lock, NULL);
	return true;
}

bool
gj_page_cache_init(GjPageCache *cache, int64_t nslots)
{
	int64_t		per;

	memset(cache, 0, sizeof(*cache));
	if (nslots <= 0)
		return false;
	cache->nshards = 1;
	while (cache->nshards * 2 <= GJ_PAGE_CACHE_SHARDS &&
		   nslots / (cache->nshards * 2) >= GJ_PAGE_SHARD_MIN_SLOTS)
		cache->nshards *= 2;
	cache->nslots = nslots;
	per = nslots / cache->nshards;
	for (int k = 0; k < cache->nshards; k++)
		if (!InitShard(&cache->shards[k], k * per,
					   k == cache->nshards - 1 ? nslots - k * per : per, k))
		{
			gj_page_cache_free(cache);
			return false;
		}
	return true;
}

void
gj_page_cache_free(GjPageCache *cache)
{
	for (int k = 0; k < GJ_PAGE_CACHE_SHARDS; k++)
		FreeShard(&cache->shards[k]);
	memset(cache, 0, sizeof(*cache));
}

void
gj_page_cache_counters(GjPageCache *cache, int64_t *fills, int64_t *looked, int64_t *readers)
{
	*fills = *looked = *readers = 0;
	for (int k = 0; k < cache->nshards; k++)
	{
		GjPageShard *shard = &cache->shards[k];

		pthread_mutex_lock(&shard->lock);
		*fills += shard->fills;
		*looked += shard->looked;
		for (int64_t s = 0; s < shard->nslots; s++)
			*readers += shard->slots[s].readers;
		pthread_mutex_unlock(&shard->lock);
	}
}

static inline int64_t
Bucket(const GjPageShard *shard, uint64_t h)
{
	return (int64_t) (h & (uint64_t) (shard->nbuckets - 1));
}

/* The slot of the shard that holds the block (hash h), or -1 */
static int64_t
Find(const GjPageShard *shard, uint64_t h, const uint32_t rel[3], uint32_t block)
{
	for (int64_t s = shard->buckets[Bucket(shard, h)]; s >= 0; s = shard->slots[s].next)
	{
		const uint32_t *key = shard->slots[s].key;

		if (key[3] == block && key[0] == rel[0] && key[1] == rel[1] && key[2] == rel[2])
			return s;
	}
	return -1;
}

/* Take slot s out of its chain, and free it */
static void
Unlink(GjPageShard *shard, int64_t s)
{
	GjPageSlot *slot = &shard->slots[s];
	int64_t    *at = &shard->buckets[Bucket(shard, Hash(slot->key, slot->key[3]))];

	while (*at != s)
		at = &shard->slots[*at].next;
	*at = slot->next;
	slot->next = -1;
	slot->state = SLOT_FREE;
	shard->nfree++;
}

/* Whether this miss may take a kept page's slot: one in ADMIT_ONE_IN */
static bool
Admit(GjPageShard *shard)
{
	uint64_t	x = shard->lottery;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	shard->lottery = x;
	return x % ADMIT_ONE_IN == 0;
}

/*
 * A free slot for a block not held: one that is free, or a filled one no
 * call reads that the clock gives up (see the file's head), taken out of
 * its chain; -1 when the page is not to be kept (every slot being filled
 * or read, or the lottery lost)
 */
static int64_t
Victim(GjPageShard *shard)
{
	/* the next free slot from where the last one was found */
	if (shard->nfree > 0)
		for (int64_t i = 0; i < shard->nslots; i++)
		{
			int64_t		s = shard->free_at;

			shard->looked++;
			shard->free_at = (shard->free_at + 1) % shard->nslots;
			if (shard->slots[s].state == SLOT_FREE)
				return s;
		}
	for (int64_t i = 0; i < shard->nslots; i++)
	{
		int64_t		s = shard->hand;
		GjPageSlot *slot = &shard->slots[s];

		shard->looked++;
		shard->moves++;
		if (++shard->hand == shard->nslots)
			shard->hand = 0;
		if (slot->state != SLOT_FILLED || slot->readers > 0)
			continue;			/* being filled or read: the next one */
		if (shard->moves - slot->used < (uint64_t) (COLD_TURNS * shard->nslots) &&
			!Admit(shard))
			return -1;
		Unlink(shard, s);
		return s;
	}
	return -1;
}

/*
 * Pages 0 .. n - 1 of a batch (n <= BATCH) in order of their shards,
 * shard_of[i] (-1: none, left out): shard k's at order[start[k] ..
 * start[k + 1] - 1]
 */
static void
OrderByShard(const GjPageCache *cache, const int8_t *shard_of, int64_t n, int16_t *order,
			 int *start)
{
	int			at[GJ_PAGE_CACHE_SHARDS];

	memset(start, 0, sizeof(int) * (GJ_PAGE_CACHE_SHARDS + 1));
	for (int64_t i = 0; i < n; i++)
		if (shard_of[i] >= 0)
			start[shard_of[i] + 1]++;
	for (int k = 0; k < cache->nshards; k++)
	{
		start[k + 1] += start[k];
		at[k] = start[k];
	}
	for (int64_t i = 0; i < n; i++)
		if (shard_of[i] >= 0)
			order[at[shard_of[i]]++] = (int16_t) i;
}

/*
 * Hashes of pages 0 .. n - 1 of a batch (n <= BATCH) into h, and the pages
 * in order of their shards (OrderByShard), with their buckets' chains'
 * first slots on their way into the CPU's cache (read without the lock:
 * only a hint)
 */
static void
HashBatch(GjPageCache *cache, const uint32_t rel[3], const uint32_t *blocks, int64_t n,
		  uint64_t *h, int16_t *order, int *start)
{
	int8_t		shard_of[BATCH] = {0};

	for (int64_t i = 0; i < n; i++)
	{
		GjPageShard *shard;

		h[i] = Hash(rel, blocks[i]);
		shard_of[i] = (int8_t) ShardIndex(cache, h[i]);
		shard = &cache->shards[shard_of[i]];
		__builtin_prefetch(&shard->buckets[Bucket(shard, h[i])]);
	}
	OrderByShard(cache, shard_of, n, order, start);
	for (int64_t i = 0; i < n; i++)
	{
		GjPageShard *shard = &cache->shards[shard_of[i]];
		int64_t		s = __atomic_load_n(&shard->buckets[Bucket(shard, h[i])], __ATOMIC_RELAXED);

		if (s >= 0 && s < shard->nslots)
			__builtin_prefetch(&shard->slots[s]);
	}
}

/* Page i, of hash h, in shard (locked): what the call does with it */
static void
AcquireOne(GjPageShard *shard, uint64_t h, const uint32_t rel[3], uint32_t block, uint64_t lsn,
		   int16_t count, bool kept_only, uint8_t *use, int64_t *slot)
{
	int64_t		s;
	GjPageSlot *sl;

	*use = GJ_PAGE_SHIP;
	*slot = -1;
	if (lsn == 0 || count < 0)
	{
		if (kept_only)
			*use = GJ_PAGE_GONE;
		return;
	}
	s = Find(shard, h, rel, block);
	if (s >= 0 && shard->slots[s].state == SLOT_FILLED && shard->slots[s].lsn == lsn &&
		shard->slots[s].count == count)
	{
		/* the same page as when it was kept */
		shard->slots[s].readers++;
		shard->slots[s].used = shard->moves;
		shard->hits++;
		*use = GJ_PAGE_HIT;
		*slot = shard->first + s;
		return;
	}
	if (kept_only)
	{
		/* nothing to fill it from: the caller reads the page */
		*use = GJ_PAGE_GONE;
		return;
	}
	if (s >= 0)
	{
		/*
		 * Kept under another LSN (or being filled): refilled here when no
		 * call reads it, else this call ships the page
		 */
		if (shard->slots[s].state != SLOT_FILLED || shard->slots[s].readers > 0)
			return;
		Unlink(shard, s);
	}
	else if ((s = Victim(shard)) < 0)
		return;
	sl = &shard->slots[s];
	sl->key[0] = rel[0];
	sl->key[1] = rel[1];
	sl->key[2] = rel[2];
	sl->key[3] = block;
	sl->lsn = lsn;
	sl->count = count;
	sl->state = SLOT_FILLING;
	sl->used = shard->moves;
	shard->nfree--;
	sl->next = shard->buckets[Bucket(shard, h)];
	shard->buckets[Bucket(shard, h)] = s;
	shard->fills++;
	*use = GJ_PAGE_FILL;
	*slot = shard->first + s;
}

void
gj_page_cache_acquire(GjPageCache *cache, const uint32_t rel[3], const uint32_t *blocks,
					  const uint64_t *lsns, const int16_t *counts, const uint8_t *kept_only,
					  int64_t n, uint8_t *use, int64_t *slot)
{
	uint64_t	h[BATCH];
	int16_t		order[BATCH];
	int			start[GJ_PAGE_CACHE_SHARDS + 1];

	for (int64_t p0 = 0; p0 < n; p0 += BATCH)
	{
		int64_t		m = n - p0 < BATCH ? n - p0 : BATCH;

		HashBatch(cache, rel, blocks + p0, m, h, order, start);
		for (int k = 0; k < cache->nshards; k++)
		{
			GjPageShard *shard = &cache->shards[k];

			if (start[k] == start[k + 1])
				continue;
			pthread_mutex_lock(&shard->lock);
			for (int j = start[k]; j < start[k + 1]; j++)
			{
				int64_t		i = p0 + order[j];

				AcquireOne(shard, h[order[j]], rel, blocks[i], lsns[i], counts[i],
						   kept_only != NULL && kept_only[i], &use[i], &slot[i]);
			}
			pthread_mutex_unlock(&shard->lock);
		}
	}
}

void
gj_page_cache_probe(GjPageCache *cache, const uint32_t rel[3], const uint32_t *blocks,
					const uint64_t *lsns, int64_t n, int16_t *counts)
{
	uint64_t	h[BATCH];
	int16_t		order[BATCH];
	int			start[GJ_PAGE_CACHE_SHARDS + 1];

	if (cache == NULL)
	{
		for (int64_t i = 0; i < n; i++)
			counts[i] = -1;
		return;
	}
	for (int64_t p0 = 0; p0 < n; p0 += BATCH)
	{
		int64_t		m = n - p0 < BATCH ? n - p0 : BATCH;

		HashBatch(cache, rel, blocks + p0, m, h, order, start);
		for (int k = 0; k < cache->nshards; k++)
		{
			GjPageShard *shard = &cache->shards[k];

			if (start[k] == start[k + 1])
				continue;
			pthread_mutex_lock(&shard->lock);
			for (int j = start[k]; j < start[k + 1]; j++)
			{
				int64_t		i = p0 + order[j];
				int64_t		s = lsns[i] != 0 ? Find(shard, h[order[j]], rel, blocks[i]) : -1;

				counts[i] = s >= 0 && shard->slots[s].state == SLOT_FILLED &&
					shard->slots[s].lsn == lsns[i] ? shard->slots[s].count : -1;
			}
			pthread_mutex_unlock(&shard->lock);
		}
	}
}

void
gj_page_cache_release(GjPageCache *cache, const uint8_t *use, const int64_t *slot, int64_t n,
					  bool filled)
{
	int8_t		shard_of[BATCH];
	int16_t		order[BATCH];
	int			start[GJ_PAGE_CACHE_SHARDS + 1];

	for (int64_t p0 = 0; p0 < n; p0 += BATCH)
	{
		int64_t		m = n - p0 < BATCH ? n - p0 : BATCH;

		/* the slots held, by shard, each shard's taken under its lock once */
		for (int64_t i = 0; i < m; i++)
		{
			shard_of[i] = -1;
			if (use[p0 + i] == GJ_PAGE_HIT || use[p0 + i] == GJ_PAGE_FILL)
			{
				GjPageShard *shard;

				shard_of[i] = (int8_t) ShardOfSlot(cache, slot[p0 + i]);
				shard = &cache->shards[shard_of[i]];
				__builtin_prefetch(&shard->slots[slot[p0 + i] - shard->first]);
			}
		}
		OrderByShard(cache, shard_of, m, order, start);
		for (int k = 0; k < cache->nshards; k++)
		{
			GjPageShard *shard = &cache->shards[k];

			if (start[k] == start[k + 1])
				continue;
			pthread_mutex_lock(&shard->lock);
			for (int j = start[k]; j < start[k + 1]; j++)
			{
				int64_t		i = p0 + order[j];
				int64_t		s = slot[i] - shard->first;

				if (use[i] == GJ_PAGE_HIT)
					shard->slots[s].readers--;
				else if (filled)
					shard->slots[s].state = SLOT_FILLED;
				else
					Unlink(shard, s);
			}
			pthread_mutex_unlock(&shard->lock);
		}
	}
}
