/*-------------------------------------------------------------------------
 *
 * pinned.c
 *	  Page-locked host memory for a join's staging areas and batches, kept
 *	  from join to join
 *
 * Copies between host memory and a GPU run at the bus's full speed, and
 * asynchronously, only from and into page-locked memory (the kernels'
 * stage_alloc); from ordinary memory the driver bounces them through a
 * buffer of its own at a fraction of that speed.  Page-locking is itself
 * slow, though: every page is mapped, zeroed and locked, which for the
 * inner batch of a 10M-row join (140 MB) takes about as long as the copies
 * it saves.  So the blocks a join is done with are kept, up to
 * gpujoin.pinned_cache in all, for the session's next joins; a join takes
 * the smallest kept block that holds what it asks for (and is at most
 * four times as large), else a new one.  The CPU twin's stage_alloc is
 * plain malloc, kept the same way, so that CI runs this code.
 *
 * Kept blocks belong to the process: they go when it exits (the driver
 * unlocks them), or when the setting is lowered and a block is freed.
 *
 * A caller about to ask for a set of blocks whose sizes it knows (the
 * arrays of a side read as heap pages) says so first (GpuJoinPinnedExpect):
 * a staging allocator that carves blocks out of larger segments (the
 * gpujoin service's arenas) then makes a new segment the size of what is
 * left of the set (GpuJoinPinnedExpected), not a guess.  Every block given
 * counts against the set, kept or new.
 *
 * IDENTIFICATION
 *	  src/pinned.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "exec.h"
#include "gpujoin.h"

#define MAX_KEPT	64

typedef struct KeptBlock
{
	const GjKernels *kernels;
	void	   *ptr;
	Size		size;
} KeptBlock;

int			gpujoin_pinned_cache = GPUJOIN_DEFAULT_PINNED_CACHE;	/* kB */

static KeptBlock kept[MAX_KEPT];	/* oldest first */
static int	nkept = 0;
static Size kept_bytes = 0;

/* what is left of the set of blocks the caller expects to ask for */
static Size expected_bytes = 0;
static int	expected_blocks = 0;

/* size bytes of the set expected are given */
static void
Given(Size size)
{
	expected_bytes = (expected_bytes > size) ? expected_bytes - size : 0;
	if (expected_blocks > 0 && --expected_blocks == 0)
		expected_bytes = 0;
}

/*
 * The caller is about to ask for nblocks blocks of bytes in all; 0 when it
 * is done with them
 */
void
GpuJoinPinnedExpect(Size bytes, int nblocks)
{
	expected_bytes = (nblocks > 0) ? bytes : 0;
	expected_blocks = (bytes > 0) ? nblocks : 0;
}

/* What is left of the set expected: bytes, and how many blocks (*nblocks) */
Size
GpuJoinPinnedExpected(int *nblocks)
{
	*nblocks = expected_blocks;
	return expected_bytes;
}

/* Take kept block i out of the list */
static void
Take(int i)
{
	kept_bytes -= kept[i].size;
	memmove(&kept[i], &kept[i + 1], sizeof(KeptBlock) * (nkept - i - 1));
	nkept--;
}

/* Free kept block i for good */
static void
Drop(int i)
{
	kept[i].kernels->stage_free(kept[i].ptr);
	Take(i);
}

/*
 * A block of at least size bytes of the kernels' staging memory; *got is
 * its size.  NULL when the kernels have none to give (the caller uses
 * ordinary memory then).
 */
void *
GpuJoinPinnedAlloc(const GjKernels *kernels, Size size, Size *got)
{
	int			best = -1;
	void	   *ptr;

	size = Max(size, 1);
	for (int i = 0; i < nkept; i++)
	{
		if (kept[i].kernels == kernels && kept[i].size >= size && kept[i].size / 4 <= size &&
			(best < 0 || kept[i].size < kept[best].size))
			best = i;
	}
	if (best >= 0)
	{
		ptr = kept[best].ptr;
		*got = kept[best].size;
		Take(best);
		Given(size);
		return ptr;
	}
	ptr = kernels->stage_alloc(size);
	if (ptr == NULL && nkept > 0)
	{
		/* page-locked memory is scarce: give back what is kept, try again */
		while (nkept > 0)
			Drop(0);
		ptr = kernels->stage_alloc(size);
	}
	*got = size;
	if (ptr != NULL)
		Given(size);
	return ptr;
}

/*
 * Give back a block GpuJoinPinnedAlloc gave (size: its *got): kept for a
 * later join if gpujoin.pinned_cache has room for it once older blocks
 * are freed, else freed
 */
void
GpuJoinPinnedFree(const GjKernels *kernels, void *ptr, Size size)
{
	Size		limit = (Size) gpujoin_pinned_cache * 1024;

	if (ptr == NULL)
		return;
	if (size > limit)
	{
		kernels->stage_free(ptr);
		return;
	}
	while (nkept > 0 && (nkept == MAX_KEPT || kept_bytes + size > limit))
		Drop(0);
	kept[nkept].kernels = kernels;
	kept[nkept].ptr = ptr;
	kept[nkept].size = size;
	kept_bytes += size;
	nkept++;
}

/*
 * Free every kept block of kernels' staging memory: for one large batch
 * about to be made, whose memory the kept blocks would keep from the
 * arenas they lie in (the gpujoin service's stage_alloc)
 */
void
GpuJoinPinnedRelease(const GjKernels *kernels)
{
	for (int i = nkept - 1; i >= 0; i--)
		if (kept[i].kernels == kernels)
			Drop(i);
}
