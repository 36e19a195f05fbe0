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
 * Each kernel file exists twice: cuda/X.cu (GPU) and cuda/X_cpu.c (CPU
 * twin, the executable specification).  Both are reached through a
 * GjKernels table, chosen in src/device.c.
 *
 * THE HASH JOIN CONTRACT
 *
 * hash_build takes the inner side's normalized keys (one uint64 per row,
 * see src/keys.c) and builds a table on them.  hash_count takes one outer
 * chunk's keys and counts, for every outer row, the inner rows whose key is
 * equal; a NULL key on either side never matches.  hash_retrieve then hands
 * out the matches of that chunk in rounds of at most max_matches rows.
 *
 * The matches of a chunk are numbered 0 .. nmatches-1 in one fixed order:
 * by outer row ascending, and for one outer row by inner row ascending.
 * hash_retrieve(first) returns the matches numbered first, first+1, ...;
 * both implementations produce the very same arrays, so the kernel tests
 * compare them element by element.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_KERNELS_H
#define GPUJOIN_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	GJ_ERROR_KERNEL				/* launch, copy or execution failure */
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

#define GJ_MAX_ROWS		((int64_t) 0x7FFFFFFF)

/* The join keys of one side, normalized by the caller */
typedef struct GjKeyColumn
{
	const uint64_t *keys;		/* one key per row */
	const uint8_t *nulls;		/* 1 = NULL key, never matches; the pointer
								 * itself is NULL when no key is NULL */
	int64_t		nrows;			/* 0 .. GJ_MAX_ROWS */
} GjKeyColumn;

/*
 * One round of matches.  The arrays belong to the context and stay valid
 * until the next call on it.
 */
typedef struct GjMatchRound
{
	const GjRowId *outer_rows;	/* row within the outer chunk */
	const GjRowId *inner_rows;	/* row within the inner relation */
	int64_t		nmatches;		/* rows in this round */
} GjMatchRound;

/* Counters a context keeps over its lifetime, for EXPLAIN ANALYZE */
typedef struct GjStats
{
	int64_t		bytes_to_device;	/* host to device copies */
	int64_t		bytes_from_device;	/* device to host copies */
	double		transfer_ms;	/* time in those copies */
	double		build_ms;		/* hash_build, copies excluded */
	double		probe_ms;		/* hash_count and hash_retrieve, copies
								 * excluded */
	int64_t		device_memory_peak; /* most bytes held at once (0 for CPU) */
} GjStats;

typedef struct GjContext GjContext;	/* opaque: buffers, streams, the table */

typedef struct GjKernels
{
	const char *name;			/* "cuda" or "cpu" */

	/*
	 * memory_limit: most device bytes the context may hold (0: what the
	 * device has free; ignored by the CPU twin).  max_matches: capacity of
	 * one round of hash_retrieve, at least 1.
	 */
	GjStatus	(*context_create) (GjContext **ctx, int64_t memory_limit,
								   int64_t max_matches, GjError *err);
	void		(*context_destroy) (GjContext *ctx);	/* accepts NULL, cannot
														 * fail */
	void		(*context_stats) (const GjContext *ctx, GjStats *stats);

	/* Build the table on the inner keys; replaces any earlier table */
	GjStatus	(*hash_build) (GjContext *ctx, const GjKeyColumn *inner,
							   GjError *err);
	/* Count the matches of one outer chunk; forgets the previous chunk */
	GjStatus	(*hash_count) (GjContext *ctx, const GjKeyColumn *outer,
							   int64_t *nmatches, GjError *err);
	/* Matches numbered first .. first+max_matches-1 of the counted chunk */
	GjStatus	(*hash_retrieve) (GjContext *ctx, int64_t first,
								  GjMatchRound *round, GjError *err);
} GjKernels;

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
extern GjStatus gj_cuda_device_info(int device, GjDeviceInfo *info,
									GjError *err);
#endif

#ifdef __cplusplus
}
#endif

#endif							/* GPUJOIN_KERNELS_H */
