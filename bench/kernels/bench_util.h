/*-------------------------------------------------------------------------
 *
 * bench_util.h
 *	  What the kernel benchmarks share: a 64-bit mixer for their data, a
 *	  comparison for qsort'ing times, and the check of a kernel call
 *
 * IDENTIFICATION
 *	  bench/kernels/bench_util.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_BENCH_UTIL_H
#define GPUJOIN_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpujoin_kernels.h"

/* splitmix64's finalizer: well-spread values from a counter */
static inline uint64_t
BenchMix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* qsort's comparison of doubles, ascending */
static inline int
BenchCompareDouble(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/* Exit with the program's name and the error when a kernel call failed */
static inline void
BenchCheck(const char *program, GjStatus status, const GjError *err, const char *what)
{
	if (status != GJ_OK)
	{
		fprintf(stderr, "%s: %s failed: %s\n", program, what, err->message);
		exit(1);
	}
}

#endif							/* GPUJOIN_BENCH_UTIL_H */
