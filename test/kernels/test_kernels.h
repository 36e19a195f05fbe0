/*-------------------------------------------------------------------------
 *
 * test_kernels.h
 *	  What the kernel test files share: test_kernels.c's reporting, and the
 *	  test groups of the other files it runs
 *
 * IDENTIFICATION
 *	  test/kernels/test_kernels.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef TEST_KERNELS_H
#define TEST_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include "common.h"

/* A CUDA device is usable: compare the CUDA kernels too */
extern bool have_cuda;

/* Why the current check failed; the first reason given wins */
extern void Failf(const char *fmt,...) GJ_PRINTF_LIKE(1, 2);

/* Count one check of case name on implementation impl; print a failure */
extern void TestReport(const char *impl, const char *name);

/* malloc, or exit: the test itself out of memory */
extern void *TestAlloc(size_t bytes);

/* test_heap_deform.c */
extern void TestHeapDeform(void);

#endif							/* TEST_KERNELS_H */
