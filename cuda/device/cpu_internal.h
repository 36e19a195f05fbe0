/*-------------------------------------------------------------------------
 *
 * cpu_internal.h
 *	  The CPU twin's context and helpers, shared by the *_cpu.c files
 *
 * Private to cuda/: src/ reaches the twin only through gj_cpu_kernels.
 * The context mirrors the CUDA one (common.cuh) field for field where the
 * two do the same thing, with malloc'ed host arrays in place of device
 * buffers; reading the two side by side shows what the GPU adds (a stream,
 * a memory limit, copies and their accounting, page-locked output arrays).
 *
 * IDENTIFICATION
 *	  cuda/device/cpu_internal.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_CPU_INTERNAL_H
#define GPUJOIN_CPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "gpujoin_kernels.h"

/* First word of every CPU context: catches a context of the other table */
#define GJ_CPU_CONTEXT_MAGIC	0x50434a47	/* "GJCP" */

/*
 * A grow-only host array: reallocated only when a call needs more bytes
 * than it holds, so that per-chunk arrays are allocated once per join.
 */
typedef struct GjHostBuffer
{
	void	   *ptr;
	size_t		bytes;			/* allocated size */
} GjHostBuffer;

/*
 * One side's payload columns (materialize_cpu.c): as GjDeviceColumns
 * (common.cuh), in host memory
 */
typedef struct GjHostColumns
{
	GjSide		side;
	int64_t		nrows;
	bool		has_nulls[GJ_MAX_COLUMNS];
	GjHostBuffer values[GJ_MAX_COLUMNS];
	GjHostBuffer nulls[GJ_MAX_COLUMNS];
} GjHostColumns;

struct GjCpuContext;

/*
 * A variant's entry points (hash_join_cpu.c: gj_cpu_nphj); the contract
 * of each is GjCudaVariant's (common.cuh), with host arrays
 */
typedef struct GjCpuVariant
{
	const char *name;
	GjStatus	(*build) (struct GjCpuContext *ctx, const GjBatch *inner,
						  GjError *err);
	GjStatus	(*count) (struct GjCpuContext *ctx, const GjBatch *outer,
						  uint64_t *nmatches, GjError *err);
	GjStatus	(*retrieve) (struct GjCpuContext *ctx, uint64_t first,
							 int64_t round_size, GjRoundSources *sources,
							 GjError *err);
	void		(*destroy_state) (struct GjCpuContext *ctx);
} GjCpuVariant;

/*
 * The CPU twin's GjContext
 *
 *	magic			GJ_CPU_CONTEXT_MAGIC
 *	spec			the validated GjJoinSpec the context was created with
 *	variant			the spec's variant's entry points
 *	variant_state	the variant's private state, or NULL before its first
 *					build; freed by variant->destroy_state
 *	stats			what context_stats reports
 *	columns			payload column sets, see GjColumnSetId (common.h); the
 *					ROUND sets are the arrays a round is handed out in
 *	round_maps		index arrays of one round, see GjRoundMap (common.h)
 *	round_rows		round_rows[side]: GjRowId[max_matches], the round's row
 *					numbers when spec.row_ids
 *	build_of		the context whose build this one probes (context_share),
 *					or NULL: its own; GJ_CPU_BUILD(ctx) is the one to read
 *					the table and the inner payload columns from
 *	row_numbers		row_numbers[side]: the side's GjBatch.row_numbers, copied
 *					(the build's, the counted chunk's); has_row_numbers[side]
 *					says whether the batch had them
 *
 * The state every variant shares, kept by context_cpu.c:
 *	has_build, has_chunk, outer_rows, nmatches, has_nulls
 *					as in the CUDA context
 */
typedef struct GjCpuContext
{
	uint32_t	magic;
	GjJoinSpec	spec;
	const GjCpuVariant *variant;
	void	   *variant_state;
	GjStats		stats;
	GjHostColumns columns[GJ_NUM_COLUMN_SETS];
	GjHostBuffer round_maps[GJ_NUM_ROUND_MAPS];
	GjHostBuffer round_rows[GJ_NUM_SIDES];
	const struct GjCpuContext *build_of;
	GjHostBuffer row_numbers[GJ_NUM_SIDES];
	bool		has_row_numbers[GJ_NUM_SIDES];
	GjHostBuffer packed_keys;	/* a chain's keys for this level (pack_keys) */

	bool		has_build;
	bool		has_chunk;
	int64_t		outer_rows;
	uint64_t	nmatches;
	bool		has_nulls[GJ_NUM_SIDES][GJ_MAX_COLUMNS];

	/* the grouped aggregation's groups (agg/group_agg_cpu.c), or NULL */
	void	   *agg_state;
} GjCpuContext;

/* The context that holds ctx's build: its own, or the one it shares */
#define GJ_CPU_BUILD(ctx)	((ctx)->build_of != NULL ? (ctx)->build_of : (ctx))

/* The variants (one line per implemented variant; see context_cpu.c) */
extern const GjCpuVariant gj_cpu_nphj;	/* hash_join_cpu.c */
extern const GjCpuVariant gj_cpu_phj;	/* partitioned_join_cpu.c */
extern const GjCpuVariant gj_cpu_smj;	/* sort_merge_cpu.c */
extern const GjCpuVariant gj_cpu_band;	/* band_join_cpu.c */
extern const GjCpuVariant gj_cpu_nlj;	/* theta_nlj_cpu.c */
extern const GjCpuVariant gj_cpu_scan;	/* scan_cpu.c */

/*
 * The arrays of one sort of (key, row) pairs (key_sort_cpu.c), held by the
 * caller: as GjSortBuffers (common.cuh), with host arrays and no counter
 */
typedef struct GjHostSortBuffers
{
	GjHostBuffer *keys;
	GjHostBuffer *rows;
	GjHostBuffer *keys_alt;
	GjHostBuffer *rows_alt;
} GjHostSortBuffers;

/* A round map's array: GJ_CPU_ROUND_MAP(ctx, GJ_ROUND_OUTER_ROWS) */
#define GJ_CPU_ROUND_MAP(ctx, map)	((GjRowId *) (ctx)->round_maps[(map)].ptr)

/* context_cpu.c */
extern GjStatus gj_cpu_context_create(GjContext **ctx, const GjJoinSpec *spec,
									  GjError *err);
extern void gj_cpu_context_destroy(GjContext *ctx);
extern void gj_cpu_context_stats(const GjContext *ctx, GjStats *stats);
extern GjCpuContext *gj_cpu_context_get(GjContext *ctx, GjError *err);
extern GjStatus gj_cpu_context_share(GjContext **ctx, GjContext *built,
									 GjError *err);
extern GjStatus gj_cpu_build(GjContext *ctx, const GjBatch *inner, GjError *err);
extern GjStatus gj_cpu_count(GjContext *ctx, const GjBatch *outer,
							 int64_t *nmatches, GjError *err);
extern GjStatus gj_cpu_retrieve(GjContext *ctx, int64_t first,
								GjMatchRound *round, GjError *err);
extern void *gj_cpu_variant_state(GjCpuContext *ctx, size_t size,
								  const char *what, GjError *err);
extern GjStatus gj_cpu_buffer_reserve(GjHostBuffer *buf, size_t bytes,
									  const char *what, GjError *err);
extern void gj_cpu_buffer_release(GjHostBuffer *buf);
extern void gj_cpu_key_range(const uint64_t *keys, const uint8_t *nulls,
							 int64_t nrows, bool *has_keys, uint64_t *min_key,
							 uint64_t *max_key);
extern uint64_t gj_cpu_count_offsets(uint64_t *counts, int64_t nrows);

/* context_cpu.c: keep a batch's row numbers, or forget the last ones */
extern GjStatus gj_cpu_keep_row_numbers(GjCpuContext *ctx, GjSide side,
										const GjBatch *batch, GjError *err);

/* exchange_cpu.c: PARTITION's exchange (GjKernels.exchange_send ..) */
extern GjStatus gj_cpu_exchange_send(GjContext *ctx, const GjBatch *side, bool inner,
									 int64_t start, int64_t end, int ndevices,
									 GjExchange *sent, GjError *err);
extern GjStatus gj_cpu_exchange_receive(GjContext *ctx, const GjExchange *sent,
										int nsent, int self, GjExchange *part,
										GjError *err);
extern void gj_cpu_exchange_free(GjExchange *x);

/* agg/group_agg_cpu.c */
extern GjStatus gj_cpu_agg_begin(GjContext *ctx, const GjAggSpec *spec, GjError *err);
extern GjStatus gj_cpu_aggregate(GjContext *ctx, int64_t first, int64_t *nmatches,
								 int64_t *undecided, GjError *err);
extern GjStatus gj_cpu_agg_result(GjContext *ctx, GjAggResult *out, GjError *err);
extern void gj_cpu_agg_destroy(void *state);

/* key_sort_cpu.c */
extern GjStatus gj_cpu_sort_pairs(GjSide side, const uint64_t *keys,
								  const uint8_t *nulls, int64_t nrows,
								  uint64_t min_key, uint64_t max_key, int bits,
								  const GjHostSortBuffers *buffers,
								  int64_t *npairs, GjError *err);
extern void gj_cpu_ranges_retrieve(const GjSortedRanges *ranges,
								   uint64_t first, int64_t round_size,
								   GjRowId *const maps[GJ_NUM_ROUND_MAPS]);

/* materialize_cpu.c */
extern void gj_cpu_columns_init(GjCpuContext *ctx);
extern GjStatus gj_cpu_columns_upload(GjCpuContext *ctx, GjColumnSetId set,
									  const GjBatch *batch, GjError *err);
extern GjStatus gj_cpu_columns_reserve(GjCpuContext *ctx, GjColumnSetId set,
									   int64_t nrows, const bool *has_nulls,
									   GjError *err);
extern GjStatus gj_cpu_columns_gather(GjCpuContext *ctx, GjColumnSetId dst,
									  GjColumnSetId src, const GjRowId *map,
									  int64_t n, GjError *err);
extern GjStatus gj_cpu_columns_load(GjCpuContext *ctx, GjSide side,
									const GjBatch *batch, const GjRowId *map,
									int64_t n, GjError *err);
extern void gj_cpu_columns_release(GjCpuContext *ctx, GjColumnSetId set);
extern GjStatus gj_cpu_round_maps_reserve(GjCpuContext *ctx,
										  bool outer_transformed, int64_t n,
										  GjRoundSources *sources,
										  GjRowId *maps[GJ_NUM_ROUND_MAPS],
										  GjError *err);
extern GjStatus gj_cpu_round_alloc(GjCpuContext *ctx, GjError *err);
extern GjStatus gj_cpu_round_materialize(GjCpuContext *ctx,
										 const GjRoundSources *sources,
										 int64_t n, GjError *err);
extern void gj_cpu_round_fill(const GjCpuContext *ctx, GjMatchRound *round);
extern void gj_cpu_materialize_release(GjCpuContext *ctx);

#endif							/* GPUJOIN_CPU_INTERNAL_H */
