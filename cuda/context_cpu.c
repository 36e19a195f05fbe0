/*-------------------------------------------------------------------------
 *
 * context_cpu.c
 *	  CPU twin of context.cu: contexts, grow-only buffers, the kernel table
 *
 * A context holds everything one GpuJoin node needs between calls: the
 * table built on the inner side, the counts of the current outer chunk,
 * and the arrays that one round of matches is handed out in.  The CUDA
 * context (context.cu) holds the same in device memory plus a stream; this
 * one holds it in malloc'ed memory, ignores memory_limit, and reports no
 * device traffic in its statistics.
 *
 * Arrays are grow-only (gj_cpu_buffer_reserve): a chunk that fits into the
 * arrays of the previous one reuses them, so a join of many chunks
 * allocates a few times, not once per chunk.
 *
 * Nothing here may exit, abort or call PostgreSQL: a failed malloc becomes
 * GJ_ERROR_HOST_MEMORY with a message, and the caller decides what to do.
 *
 * IDENTIFICATION
 *	  cuda/context_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cpu_internal.h"
#include "gpujoin_kernels.h"

/*
 * Create a context
 *
 * memory_limit is checked (a negative one is a caller bug) but otherwise
 * ignored: the host memory that the twin uses is PostgreSQL's business.
 */
GjStatus
gj_cpu_context_create(GjContext **ctx, int64_t memory_limit,
					  int64_t max_matches, GjError *err)
{
	GjCpuContext *cpu;

	if (ctx == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No place to return the context was given.");
	*ctx = NULL;
	if (memory_limit < 0)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"The memory limit must not be negative, but is %lld.",
							(long long) memory_limit);
	if (max_matches < 1)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A round of matches must hold at least 1 match, but max_matches is %lld.",
							(long long) max_matches);
	if ((uint64_t) max_matches > SIZE_MAX / sizeof(GjRowId))
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"A round of %lld matches does not fit into host memory.",
							(long long) max_matches);

	cpu = (GjCpuContext *) calloc(1, sizeof(GjCpuContext));
	if (cpu == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate %zu bytes of host memory for a join context.",
							sizeof(GjCpuContext));
	cpu->magic = GJ_CPU_CONTEXT_MAGIC;
	cpu->max_matches = max_matches;

	cpu->match_outer = (GjRowId *) malloc((size_t) max_matches * sizeof(GjRowId));
	cpu->match_inner = (GjRowId *) malloc((size_t) max_matches * sizeof(GjRowId));
	if (cpu->match_outer == NULL || cpu->match_inner == NULL)
	{
		gj_cpu_context_destroy((GjContext *) cpu);
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate 2 x %zu bytes of host memory for a round of %lld matches.",
							(size_t) max_matches * sizeof(GjRowId),
							(long long) max_matches);
	}

	*ctx = (GjContext *) cpu;
	return GJ_OK;
}

/* Free a context and all its arrays; accepts NULL */
void
gj_cpu_context_destroy(GjContext *ctx)
{
	GjCpuContext *cpu = (GjCpuContext *) ctx;

	if (cpu == NULL || cpu->magic != GJ_CPU_CONTEXT_MAGIC)
		return;

	gj_cpu_buffer_release(&cpu->entry_keys);
	gj_cpu_buffer_release(&cpu->entry_rows);
	gj_cpu_buffer_release(&cpu->bucket_start);
	gj_cpu_buffer_release(&cpu->outer_keys);
	gj_cpu_buffer_release(&cpu->offsets);
	free(cpu->match_outer);
	free(cpu->match_inner);
	cpu->magic = 0;				/* a stale pointer no longer looks valid */
	free(cpu);
}

/* Copy out the context's counters; all zero for NULL */
void
gj_cpu_context_stats(const GjContext *ctx, GjStats *stats)
{
	const GjCpuContext *cpu = (const GjCpuContext *) ctx;

	if (stats == NULL)
		return;
	if (cpu == NULL || cpu->magic != GJ_CPU_CONTEXT_MAGIC)
	{
		memset(stats, 0, sizeof(GjStats));
		return;
	}
	*stats = cpu->stats;
}

/*
 * The CPU context behind a GjContext, or NULL with err filled
 *
 * Catches a NULL context and one created by the CUDA table, which would
 * otherwise be read as the wrong struct.
 */
GjCpuContext *
gj_cpu_context_get(GjContext *ctx, GjError *err)
{
	GjCpuContext *cpu = (GjCpuContext *) ctx;

	if (cpu == NULL)
	{
		gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT, "The join context is NULL.");
		return NULL;
	}
	if (cpu->magic != GJ_CPU_CONTEXT_MAGIC)
	{
		gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
					 "The join context was not created by the \"cpu\" kernels.");
		return NULL;
	}
	return cpu;
}

/*
 * Make buf hold at least bytes bytes
 *
 * Grow-only: a large enough array is kept as it is; a smaller one is freed
 * and replaced, without copying its contents (every caller overwrites
 * what it reserved).  "what" names the array in the error message.
 */
GjStatus
gj_cpu_buffer_reserve(GjHostBuffer *buf, size_t bytes, const char *what,
					  GjError *err)
{
	void	   *ptr;

	if (buf->ptr != NULL && buf->bytes >= bytes)
		return GJ_OK;

	gj_cpu_buffer_release(buf);
	ptr = malloc(bytes > 0 ? bytes : 1);
	if (ptr == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate %zu bytes of host memory for %s.",
							bytes, what);
	buf->ptr = ptr;
	buf->bytes = bytes;
	return GJ_OK;
}

/* Free buf's array; it can be reserved again */
void
gj_cpu_buffer_release(GjHostBuffer *buf)
{
	free(buf->ptr);
	buf->ptr = NULL;
	buf->bytes = 0;
}

const GjKernels gj_cpu_kernels = {
	.name = "cpu",
	.context_create = gj_cpu_context_create,
	.context_destroy = gj_cpu_context_destroy,
	.context_stats = gj_cpu_context_stats,
	.hash_build = gj_cpu_hash_build,
	.hash_count = gj_cpu_hash_count,
	.hash_retrieve = gj_cpu_hash_retrieve,
};
