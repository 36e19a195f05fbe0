/*-------------------------------------------------------------------------
 *
 * page_cache.h
 *	  Heap pages kept between calls of the deform, by the process that
 *	  runs it (the gpujoin service, or a backend): which block of which
 *	  relation each slot holds, under which page LSN
 *
 * A page read in place is kept (GjPageBatch.page_lsn not 0: an
 * all-visible page of a WAL-logged relation, its LSN read under the share
 * lock its items were listed under) in a slot of the cache's memory, in
 * device memory on a GPU, in host memory on the CPU twin; a later call
 * whose page carries the same key and LSN reads the slot instead of the
 * page, so the page does not cross the bus again.  Equal LSNs mean no
 * WAL-logged change to the page since its items were listed: a change in
 * progress holds the exclusive lock the next listing waits for, and a
 * copy made while one ran is kept under the LSN from before it, which the
 * change then moved.  The listed items' bytes in the copy are then the
 * page's; what may differ (hint bits, xmax) is nothing the deform reads.
 *
 * The table is plain C for both tables of kernels; the slots' memory is
 * the caller's (slot s at s x page size).  A slot being filled is read by
 * no call until its filler says it is filled, and a slot a call reads is
 * not reused until the call lets it go, so calls in several threads (the
 * service's) may use one cache.  Slots are reused in clock order, the
 * clock of their shard (GjPageShard).
 *
 * IDENTIFICATION
 *	  cuda/scan/page_cache.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GJ_PAGE_CACHE_H
#define GJ_PAGE_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* What a call does with one of its pages */
typedef enum GjPageUse
{
	GJ_PAGE_SHIP = 0,			/* from the region, not kept */
	GJ_PAGE_HIT,				/* from its slot */
	GJ_PAGE_FILL,				/* from the region, and copied into its slot */
	GJ_PAGE_GONE				/* a page the call has only a kept copy of
								 * (not in the region), no longer kept */
} GjPageUse;

/*
 * The most tuples a page of page_size bytes holds (PostgreSQL's
 * MaxHeapTuplesPerPage: a 24-byte page header, then per tuple a 4-byte item
 * and a MAXALIGNed 23-byte header): the room a slot's item list has
 */
#define GJ_PAGE_MAX_ITEMS(page_size)	(((page_size) - 24) / 28)

/* A slot: which block it holds, under which LSN, and its state (one cache line) */
typedef struct GjPageSlot
{
	uint32_t	key[4];			/* the relation's 3 words, the block */
	uint64_t	lsn;			/* the LSN it was filled under */
	uint64_t	used;			/* filled: its shard's hand's moves when it
								 * was last filled or hit */
	int64_t		next;			/* the next slot of its chain (in its shard),
								 * or -1 */
	int32_t		readers;		/* the calls reading it now */
	int16_t		count;			/* the tuples listed when it was filled
								 * (their offsets are kept with the page, in
								 * the caller's memory) */
	uint8_t		state;			/* free, filling, filled */
} GjPageSlot;

/*
 * A shard of the cache: the slots of the blocks whose hash falls in it,
 * with a lock, a chained hash table and a clock of their own (a block is
 * in one shard), so that calls of several threads on other blocks do not
 * wait for each other (on the H200, seven processes' calls through one
 * lock spent about 60 ms of every SF 10 scan of SSB's fact table in it)
 */
typedef struct GjPageShard
{
	pthread_mutex_t lock;
	int64_t		first;			/* its first slot, counted over the cache */
	int64_t		nslots;
	int64_t		nbuckets;		/* a power of two */
	int64_t    *buckets;		/* per bucket, its chain's first slot (in the
								 * shard), or -1 */
	GjPageSlot *slots;
	int64_t		nfree;			/* free slots */
	int64_t		free_at;		/* where to look for the next free one */
	int64_t		hand;			/* the clock: the next slot to look at */
	uint64_t	moves;			/* the hand's moves so far, one slot each */
	uint64_t	lottery;		/* the state of Admit's xorshift */
	int64_t		hits;			/* pages read from slots, ever */
	int64_t		fills;			/* pages copied into slots, ever */
	int64_t		looked;			/* slots Victim looked at, ever */
} GjPageShard;

/* Shards of a cache of many slots (each at least GJ_PAGE_SHARD_MIN_SLOTS) */
#define GJ_PAGE_CACHE_SHARDS	16
#define GJ_PAGE_SHARD_MIN_SLOTS	4096

typedef struct GjPageCache
{
	int64_t		nslots;
	int			nshards;		/* a power of two */
	GjPageShard shards[GJ_PAGE_CACHE_SHARDS];
} GjPageCache;

/* A cache of nslots slots (> 0); false when out of host memory */
extern bool gj_page_cache_init(GjPageCache *cache, int64_t nslots);
extern void gj_page_cache_free(GjPageCache *cache);

/* Its counters, over the shards (for tests): fills, slots looked at, calls reading slots */
extern void gj_page_cache_counters(GjPageCache *cache, int64_t *fills, int64_t *looked,
								   int64_t *readers);

/*
 * For each of n pages of relation rel (its 3 words), block blocks[i],
 * kept under LSN lsns[i] (0: not to be kept) with counts[i] tuples listed
 * (-1: more than a slot's list holds, not to be kept),
 * what the call does with it (use[i]) and its slot (slot[i], -1 for
 * GJ_PAGE_SHIP and GJ_PAGE_GONE).  A page with kept_only[i] set (kept_only
 * NULL: none) is not in the region: it is read from its slot if kept under
 * the same LSN with the same count, and is GJ_PAGE_GONE if not (never
 * filled).  The slots stay the call's until gj_page_cache_release.
 */
extern void gj_page_cache_acquire(GjPageCache *cache, const uint32_t rel[3],
								  const uint32_t *blocks, const uint64_t *lsns,
								  const int16_t *counts, const uint8_t *kept_only,
								  int64_t n, uint8_t *use, int64_t *slot);

/*
 * Which of n blocks of relation rel are kept under LSN lsns[i] (not 0):
 * counts[i] the tuples listed when it was kept, or -1 (every one for a
 * NULL cache: none made).  Nothing is held: a later call's acquire finds
 * out whether it still is.
 */
extern void gj_page_cache_probe(GjPageCache *cache, const uint32_t rel[3],
								const uint32_t *blocks, const uint64_t *lsns, int64_t n,
								int16_t *counts);

/*
 * The call is done with what acquire gave it: the slots it read let go;
 * the slots it filled readable when filled is true, else freed
 */
extern void gj_page_cache_release(GjPageCache *cache, const uint8_t *use,
								  const int64_t *slot, int64_t n, bool filled);

#ifdef __cplusplus
}
#endif

#endif							/* GJ_PAGE_CACHE_H */
