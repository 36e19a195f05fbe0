/*
 * threads.c
 *	  The table of kept heap pages (cuda/scan/page_cache.c) under threads
 *	  that take and let go of pages at once, as the gpujoin service's
 *	  threads do for the processes of a parallel scan: a cache of 2^20
 *	  slots (8 GB of 8 kB pages), SSB's lineorder at SF 10 (618,548
 *	  pages) taken in calls of 1,024 pages, shared out among T threads,
 *	  three times (the first fills, the others hit); the time of each.
 *
 *	  cc -O2 -I cuda/scan -o /tmp/threads bench/page_cache/threads.c \
 *		  cuda/scan/page_cache.c -lpthread && /tmp/threads 7
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "page_cache.h"

#define PAGES	618548
#define CALL	1024

static GjPageCache cache;
static const uint32_t relation[3] = {1663, 5, 16384};
static int nthreads;

static double
Now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *
Worker(void *arg)
{
	long		id = (long) arg;
	uint32_t	blocks[CALL];
	uint64_t	lsns[CALL];
	int16_t		counts[CALL];
	uint8_t		use[CALL];
	int64_t		slot[CALL];

	for (int64_t p0 = id * CALL; p0 < PAGES; p0 += (int64_t) nthreads * CALL)
	{
		int64_t		n = PAGES - p0 < CALL ? PAGES - p0 : CALL;

		for (int64_t i = 0; i < n; i++)
		{
			blocks[i] = (uint32_t) (p0 + i);
			lsns[i] = 7;
			counts[i] = 97;
		}
		gj_page_cache_acquire(&cache, relation, blocks, lsns, counts, NULL, n, use, slot);
		gj_page_cache_release(&cache, use, slot, n, true);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	nthreads = argc > 1 ? atoi(argv[1]) : 7;
	if (nthreads < 1 || nthreads > 64 || !gj_page_cache_init(&cache, 1 << 20))
		return 1;
	for (int turn = 0; turn < 3; turn++)
	{
		pthread_t	threads[64];
		double		start = Now();

		for (long i = 0; i < nthreads; i++)
			pthread_create(&threads[i], NULL, Worker, (void *) i);
		for (int i = 0; i < nthreads; i++)
			pthread_join(threads[i], NULL);
		printf("threads %d turn %d: %.1f ms\n", nthreads, turn, (Now() - start) * 1e3);
	}
	gj_page_cache_free(&cache);
	return 0;
}
