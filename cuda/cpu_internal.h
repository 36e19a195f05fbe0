/*-------------------------------------------------------------------------
 *
 * cpu_internal.h
 *	  The CPU twin's context, shared by context_cpu.c and hash_join_cpu.c
 *
 * Private to cuda/: src/ reaches the twin only through gj_cpu_kernels.
 * The context mirrors the CUDA one (common.cuh) field for field where the
 * two do the same thing, with malloc'ed host arrays in place of device
 * buffers; reading the two side by side shows what the GPU adds (a stream,
 * a memory limit, copies and their accounting).
 *
 * IDENTIFICATION
 *	  cuda/cpu_internal.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_CPU_INTERNAL_H
#define GPUJOIN_CPU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
 * The CPU twin's GjContext
 *
 *	magic			GJ_CPU_CONTEXT_MAGIC
 *	max_matches		capacity of one round of hash_retrieve
 *	stats			what context_stats reports
 *
 * The table, valid once has_table is set (see hash_join_cpu.c):
 *	bucket_bits		gj_bucket_bits(inner rows); 0 for an empty inner side
 *	nentries		inner rows with a non-NULL key
 *	entry_keys		uint64_t[nentries], keys in bucket order
 *	entry_rows		GjRowId[nentries], their inner rows
 *	bucket_start	uint32_t[nbuckets + 1], first entry of each bucket
 *
 * The counted chunk, valid once has_chunk is set:
 *	outer_rows		rows in the chunk
 *	nmatches		total matches of the chunk
 *	outer_keys		uint64_t[outer_rows], a copy of the chunk's keys (the
 *					caller's array need not outlive hash_count)
 *	offsets			uint64_t[outer_rows + 1], exclusive prefix sum of the
 *					per-row match counts; row r's count is
 *					offsets[r + 1] - offsets[r]
 *
 * One round of hash_retrieve:
 *	match_outer, match_inner	GjRowId[max_matches], handed out in the
 *					GjMatchRound
 */
typedef struct GjCpuContext
{
	uint32_t	magic;
	int64_t		max_matches;
	GjStats		stats;

	bool		has_table;
	int			bucket_bits;
	int64_t		nentries;
	GjHostBuffer entry_keys;
	GjHostBuffer entry_rows;
	GjHostBuffer bucket_start;

	bool		has_chunk;
	int64_t		outer_rows;
	uint64_t	nmatches;
	GjHostBuffer outer_keys;
	GjHostBuffer offsets;

	GjRowId    *match_outer;
	GjRowId    *match_inner;
} GjCpuContext;

/* context_cpu.c */
extern GjStatus gj_cpu_context_create(GjContext **ctx, int64_t memory_limit,
									  int64_t max_matches, GjError *err);
extern void gj_cpu_context_destroy(GjContext *ctx);
extern void gj_cpu_context_stats(const GjContext *ctx, GjStats *stats);
extern GjCpuContext *gj_cpu_context_get(GjContext *ctx, GjError *err);
extern GjStatus gj_cpu_buffer_reserve(GjHostBuffer *buf, size_t bytes,
									  const char *what, GjError *err);
extern void gj_cpu_buffer_release(GjHostBuffer *buf);

/* hash_join_cpu.c */
extern GjStatus gj_cpu_hash_build(GjContext *ctx, const GjKeyColumn *inner,
								  GjError *err);
extern GjStatus gj_cpu_hash_count(GjContext *ctx, const GjKeyColumn *outer,
								  int64_t *nmatches, GjError *err);
extern GjStatus gj_cpu_hash_retrieve(GjContext *ctx, int64_t first,
									 GjMatchRound *round, GjError *err);

#endif							/* GPUJOIN_CPU_INTERNAL_H */
