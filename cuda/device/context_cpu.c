/*-------------------------------------------------------------------------
 *
 * context_cpu.c
 *	  CPU twin of context.cu: the variant table, the entry points of the
 *	  kernel table, contexts, grow-only buffers, and the steps that every
 *	  variant takes alike (its state, a key range, match offsets)
 *
 * A context holds everything one GpuJoin node needs between calls: the
 * spec it was created for, what the variant built on the inner side, the
 * counts of the current outer chunk, and the arrays that one round of
 * matches is handed out in.  The CUDA context (context.cu) holds the same
 * in device memory plus a stream; this one holds it in malloc'ed memory,
 * ignores memory_limit (but for the groups of an aggregation, which spill
 * under it as on a device: group_agg_cpu.c), and reports no device traffic
 * in its statistics.
 *
 * ENTRY POINTS AND VARIANTS
 *
 * gj_cpu_build, gj_cpu_count and gj_cpu_retrieve check their arguments
 * (through common.h, exactly as context.cu does), keep the state that
 * every variant shares, time the call, and dispatch on the spec's variant
 * through the table "variants" below to the variant's own functions
 * (GjCpuVariant, cpu_internal.h).  A round is then materialized the same
 * way for every variant (materialize_cpu.c).
 *
 * How to add a variant (say SMJ, in sort_merge_cpu.c):
 *	  1. write its build, count, retrieve and destroy_state against
 *		 cpu_internal.h, with its arrays in a private state struct hung off
 *		 ctx->variant_state (allocated by its first build through
 *		 gj_cpu_variant_state, freed by its destroy_state), and export them
 *		 as "const GjCpuVariant gj_cpu_smj";
 *	  2. declare gj_cpu_smj in cpu_internal.h next to gj_cpu_nphj;
 *	  3. replace the NULL of its line in "variants" below with &gj_cpu_smj;
 *	  4. have cuda/join/sort_merge_cpu.o added to OBJS in the top-level
 *		 Makefile (cuda/Makefile compiles every *_cpu.c of its folders for
 *		 the kernel tests).
 * The CUDA side (context.cu) takes the same steps; a variant must be in
 * both tables before a spec may name it, since a join may move from the
 * GPU to the CPU twin between two calls.
 *
 * Arrays are grow-only (gj_cpu_buffer_reserve): a chunk that fits into the
 * arrays of the previous one reuses them, so a join of many chunks
 * allocates a few times, not once per chunk.
 *
 * Nothing here may exit, abort or call PostgreSQL: a failed malloc becomes
 * GJ_ERROR_HOST_MEMORY with a message, and the caller decides what to do.
 *
 * IDENTIFICATION
 *	  cuda/device/context_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cpu_internal.h"
#include "gpujoin_kernels.h"

/*
 * The variants, indexed by GjVariant: one line each, NULL for a variant
 * that is not implemented yet (context_create then refuses its specs)
 */
static const GjCpuVariant *const variants[GJ_NUM_VARIANTS] = {
	&gj_cpu_nphj,				/* GJ_VARIANT_NPHJ: hash_join_cpu.c */
	&gj_cpu_phj,				/* GJ_VARIANT_PHJ: partitioned_join_cpu.c */
	&gj_cpu_smj,				/* GJ_VARIANT_SMJ: sort_merge_cpu.c */
	&gj_cpu_band,				/* GJ_VARIANT_BAND: band_join_cpu.c */
	&gj_cpu_nlj,				/* GJ_VARIANT_NLJ: theta_nlj_cpu.c */
	&gj_cpu_scan,				/* GJ_VARIANT_SCAN: scan_cpu.c */
};

/* Does this table implement the variant?  (for gj_check_spec) */
static bool
VariantImplemented(GjVariant variant)
{
	return variants[variant] != NULL;
}

/* Release the variant's state and every array */
static void
ReleaseAll(GjCpuContext *ctx)
{
	if (ctx->variant_state != NULL && ctx->variant != NULL)
		ctx->variant->destroy_state(ctx);
	ctx->variant_state = NULL;
	gj_cpu_agg_destroy(ctx->agg_state);
	ctx->agg_state = NULL;
	gj_cpu_materialize_release(ctx);
	gj_cpu_buffer_release(&ctx->packed_keys);
}

/*
 * Create a context for the join spec describes
 *
 * The spec is checked (common.h) and copied; memory_limit is otherwise
 * ignored (an aggregation's groups excepted): the host memory that the
 * twin uses is PostgreSQL's business.
 * The arrays a round is handed out in are allocated here, as the CUDA
 * context allocates its page-locked ones.
 */
GjStatus
gj_cpu_context_create(GjContext **ctx, const GjJoinSpec *spec, GjError *err)
{
	GjCpuContext *cpu;
	GjStatus	status;

	if (ctx == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No place to return the context was given.");
	*ctx = NULL;
	status = gj_check_spec(spec, VariantImplemented, err);
	if (status != GJ_OK)
		return status;

	cpu = (GjCpuContext *) calloc(1, sizeof(GjCpuContext));
	if (cpu == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate %zu bytes of host memory for a join context.",
							sizeof(GjCpuContext));
	cpu->magic = GJ_CPU_CONTEXT_MAGIC;
	cpu->spec = *spec;
	cpu->variant = variants[spec->variant];

	gj_cpu_columns_init(cpu);
	status = gj_cpu_round_alloc(cpu, err);
	if (status != GJ_OK)
	{
		gj_cpu_context_destroy((GjContext *) cpu);
		return status;
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

	ReleaseAll(cpu);
	cpu->magic = 0;				/* a stale pointer no longer looks valid */
	free(cpu);
}

/*
 * Make *ctx a context that probes built's build (GjKernels.context_share)
 *
 * It gets built's spec, the NULL flags of built's inner columns and the
 * description of its table; everything else of it is its own.  A context
 * that shares passes on the build it shares.
 */
GjStatus
gj_cpu_context_share(GjContext **ctx, GjContext *built, GjError *err)
{
	GjCpuContext *owner = gj_cpu_context_get(built, err);
	GjCpuContext *cpu;
	GjStatus	status;

	if (ctx != NULL)
		*ctx = NULL;
	if (owner == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	owner = (GjCpuContext *) GJ_CPU_BUILD(owner);
	status = gj_check_share(&owner->spec, owner->variant->name, owner->has_build, err);
	if (status != GJ_OK)
		return status;
	status = gj_cpu_context_create(ctx, &owner->spec, err);
	if (status != GJ_OK)
		return status;
	cpu = (GjCpuContext *) *ctx;
	cpu->build_of = owner;
	cpu->has_build = true;
	memcpy(cpu->has_nulls[GJ_SIDE_INNER], owner->has_nulls[GJ_SIDE_INNER],
		   sizeof(cpu->has_nulls[GJ_SIDE_INNER]));
	memcpy(cpu->stats.detail, owner->stats.detail, sizeof(cpu->stats.detail));
	return GJ_OK;
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
 * Keep a side's row numbers (GjBatch.row_numbers) for the rounds to
 * report, or note that the batch has none
 */
GjStatus
gj_cpu_keep_row_numbers(GjCpuContext *ctx, GjSide side, const GjBatch *batch,
						GjError *err)
{
	size_t		bytes = (size_t) batch->nrows * sizeof(GjRowId);

	ctx->has_row_numbers[side] = false;
	if (batch->row_numbers == NULL)
		return GJ_OK;
	GJ_TRY(gj_cpu_buffer_reserve(&ctx->row_numbers[side], bytes,
								 side == GJ_SIDE_INNER ? "the inner row numbers" : "the outer row numbers",
								 err));
	if (bytes > 0)
		memcpy(ctx->row_numbers[side].ptr, batch->row_numbers, bytes);
	ctx->has_row_numbers[side] = true;
	return GJ_OK;
}

/* Milliseconds since start, added to one of the phase timers */
static void
AddElapsed(double *timer, double start)
{
	*timer += gj_clock_ms() - start;
}

/* Remember which of a batch's payload columns came with NULL flags */
static void
RecordNulls(GjCpuContext *ctx, GjSide side, const GjBatch *batch)
{
	int			ncolumns = gj_side_ncolumns(&ctx->spec, side);

	memset(ctx->has_nulls[side], 0, sizeof(ctx->has_nulls[side]));
	for (int c = 0; c < ncolumns; c++)
		ctx->has_nulls[side][c] = gj_column_has_nulls(&ctx->spec, side,
													  batch->columns[c].nulls != NULL);
}

/*
 * Build on the inner side: keys and payload columns
 *
 * Replaces the build of an earlier call and forgets any counted chunk,
 * also when it fails.
 */
GjStatus
gj_cpu_build(GjContext *ctx, const GjBatch *inner, GjError *err)
{
	GjCpuContext *cpu = gj_cpu_context_get(ctx, err);
	double		start = gj_clock_ms();
	GjStatus	status;

	if (cpu == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	if (cpu->build_of != NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"A context that shares another's build cannot build.");
	cpu->has_build = false;
	cpu->has_chunk = false;
	status = gj_check_batch(inner, &cpu->spec, GJ_SIDE_INNER, err);
	if (status != GJ_OK)
		return status;

	RecordNulls(cpu, GJ_SIDE_INNER, inner);
	status = cpu->variant->build(cpu, inner, err);
	if (status == GJ_OK)
		status = gj_cpu_keep_row_numbers(cpu, GJ_SIDE_INNER, inner, err);
	cpu->has_build = (status == GJ_OK);
	AddElapsed(&cpu->stats.build_ms, start);
	return status;
}

/* Build on an inner side in parts (GjKernels.build_parts): gathered in host memory */
static GjStatus
BuildWhole(void *arg, const GjBatch *whole, GjError *err)
{
	return gj_cpu_build((GjContext *) arg, whole, err);
}

static GjStatus
gj_cpu_build_parts(GjContext *ctx, const GjBatch *parts, int nparts, GjError *err)
{
	GjCpuContext *cpu = gj_cpu_context_get(ctx, err);

	if (cpu == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	return gj_build_parts_on_host(BuildWhole, ctx, &cpu->spec, parts, nparts, err);
}

/*
 * Count the matches of one outer chunk
 *
 * Forgets the previous chunk, then keeps what retrieve needs of this one
 * (copies: the caller's arrays need not outlive count).  *nmatches is the
 * chunk's total, which can exceed 2^32 (every outer row may match every
 * inner row).
 */
GjStatus
gj_cpu_count(GjContext *ctx, const GjBatch *outer, int64_t *nmatches,
			 GjError *err)
{
	GjCpuContext *cpu = gj_cpu_context_get(ctx, err);
	double		start = gj_clock_ms();
	uint64_t	total = 0;
	GjStatus	status;

	if (cpu == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	cpu->has_chunk = false;
	if (!cpu->has_build)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"count was called before build.");
	if (nmatches == NULL)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"No place to return the number of matches was given.");
	status = gj_check_batch(outer, &cpu->spec, GJ_SIDE_OUTER, err);
	if (status != GJ_OK)
		return status;

	RecordNulls(cpu, GJ_SIDE_OUTER, outer);
	cpu->outer_rows = outer->nrows;
	cpu->nmatches = 0;
	status = cpu->variant->count(cpu, outer, &total, err);
	if (status == GJ_OK)
		status = gj_cpu_keep_row_numbers(cpu, GJ_SIDE_OUTER, outer, err);
	if (status == GJ_OK)
	{
		cpu->nmatches = total;
		cpu->has_chunk = true;
		*nmatches = (int64_t) total;
	}
	AddElapsed(&cpu->stats.probe_ms, start);
	return status;
}

/*
 * Hand out the matches numbered first .. first + max_matches - 1
 *
 * round->nmatches is min(max_matches, total - first), 0 once first reaches
 * the total.  The arrays are the context's; a column's NULL array is there
 * when the column came with NULL flags (in the build for the inner side,
 * in the counted chunk for the outer side).
 */
GjStatus
gj_cpu_retrieve(GjContext *ctx, int64_t first, GjMatchRound *round,
				GjError *err)
{
	GjCpuContext *cpu = gj_cpu_context_get(ctx, err);
	double		start = gj_clock_ms();
	int64_t		round_size = 0;
	GjRoundSources sources;
	GjStatus	status;

	if (cpu == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	status = gj_check_retrieve(cpu->has_chunk, cpu->nmatches,
							   cpu->spec.max_matches, first, round,
							   &round_size, err);
	if (status != GJ_OK)
		return status;

	status = gj_cpu_round_alloc(cpu, err);	/* NULL arrays met since */
	if (status != GJ_OK)
		return status;
	gj_cpu_round_fill(cpu, round);
	if (round_size > 0)
	{
		memset(&sources, 0, sizeof(sources));
		status = cpu->variant->retrieve(cpu, (uint64_t) first, round_size,
										&sources, err);
		if (status == GJ_OK)
			status = gj_cpu_round_materialize(cpu, &sources, round_size, err);
		if (status == GJ_OK)
			round->nmatches = round_size;
	}
	AddElapsed(&cpu->stats.materialize_ms, start);
	return status;
}

/*
 * The variant's private state, ctx->variant_state: allocated, zeroed, by
 * the first call (a variant's first build), returned as it is by later
 * ones; NULL with err filled when there is no memory for it
 *
 * size is the variant's state struct; "what" names the join in the
 * message ("a hash join").  The variant's destroy_state frees it.
 */
void *
gj_cpu_variant_state(GjCpuContext *ctx, size_t size, const char *what,
					 GjError *err)
{
	if (ctx->variant_state == NULL)
	{
		ctx->variant_state = calloc(1, size);
		if (ctx->variant_state == NULL)
			gj_error_set(err, GJ_ERROR_HOST_MEMORY,
						 "Could not allocate %zu bytes of host memory for %s.",
						 size, what);
	}
	return ctx->variant_state;
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

/*
 * The range of a side's keys: *has_keys is false when every key is NULL,
 * else [*min_key, *max_key] in unsigned order
 */
void
gj_cpu_key_range(const uint64_t *keys, const uint8_t *nulls, int64_t nrows,
				 bool *has_keys, uint64_t *min_key, uint64_t *max_key)
{
	*has_keys = false;
	*min_key = UINT64_MAX;
	*max_key = 0;
	for (int64_t row = 0; row < nrows; row++)
	{
		uint64_t	key = keys[row];

		if (gj_flag_set(nulls, row))
			continue;
		*has_keys = true;
		if (key < *min_key)
			*min_key = key;
		if (key > *max_key)
			*max_key = key;
	}
}

/*
 * Turn the match counts of a chunk's nrows rows (or positions) into match
 * offsets: the exclusive prefix sum of counts[0 .. nrows], in place;
 * returns the matches in all
 *
 * The caller set counts[nrows] to 0, so that it ends as the total.  64-bit
 * elements, so the sum cannot wrap.
 */
uint64_t
gj_cpu_count_offsets(uint64_t *counts, int64_t nrows)
{
	uint64_t	sum = 0;

	for (int64_t row = 0; row <= nrows; row++)
	{
		uint64_t	count = counts[row];

		counts[row] = sum;
		sum += count;
	}
	return sum;
}

/*
 * A chain's key packed (GjKernels.pack_keys), as gj_cuda_pack_keys packs
 * it on the device: each row's integer, whatever its NULL flag
 */
static GjStatus
PackKeys(GjContext *ctx, const void *values, int width, int64_t n, int32_t bits,
		 bool exact, const uint64_t **keys, GjError *err)
{
	GjCpuContext *cpu = gj_cpu_context_get(ctx, err);
	uint64_t   *out;

	*keys = NULL;
	if (cpu == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	GJ_TRY(gj_check_pack(values, width, n, bits, err));
	GJ_TRY(gj_cpu_buffer_reserve(&cpu->packed_keys, (size_t) n * sizeof(uint64_t),
								 "a chain's packed keys", err));
	out = cpu->packed_keys.ptr;
	for (int64_t row = 0; row < n; row++)
		out[row] = gj_pack_int_key(values, width, row, bits, exact);
	*keys = out;
	return GJ_OK;
}

/* The CPU twin's deform is done when it starts: nothing left to finish */
static GjStatus
DeformFinish(GjContext *ctx, GjError *err)
{
	return GJ_OK;
}

/* Staging memory of the CPU twin (GjKernels.stage_alloc): plain memory */
static void *
StageAlloc(size_t bytes)
{
	return malloc(bytes > 0 ? bytes : 1);
}

const GjKernels gj_cpu_kernels = {
	.name = "cpu",
	.context_create = gj_cpu_context_create,
	.context_destroy = gj_cpu_context_destroy,
	.context_stats = gj_cpu_context_stats,
	.build = gj_cpu_build,
	.count = gj_cpu_count,
	.retrieve = gj_cpu_retrieve,
	.heap_deform = gj_cpu_heap_deform,
	.heap_deform_start = gj_cpu_heap_deform,	/* the whole deform */
	.heap_deform_finish = DeformFinish,
	.stage_alloc = StageAlloc,
	.stage_free = free,
	.agg_begin = gj_cpu_agg_begin,
	.aggregate = gj_cpu_aggregate,
	.agg_result = gj_cpu_agg_result,
	.context_share = gj_cpu_context_share,
	.exchange_send = gj_cpu_exchange_send,
	.exchange_receive = gj_cpu_exchange_receive,
	.exchange_free = gj_cpu_exchange_free,
	.retrieve_device = gj_cpu_retrieve,	/* its rounds are host memory */
	.build_parts = gj_cpu_build_parts,
	.pack_keys = PackKeys,
	.pages_kept = gj_cpu_pages_kept,
};
