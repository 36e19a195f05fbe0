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
#include <stdint.h>

#include "common.h"
#include "gpujoin_kernels.h"

/* A CUDA device is usable: compare the CUDA kernels too */
extern bool have_cuda;

/* Why the current check failed; the first reason given wins */
extern void Failf(const char *fmt,...) GJ_PRINTF_LIKE(1, 2);

/* Count one check of case name on implementation impl; print a failure */
extern void TestReport(const char *impl, const char *name);

/* malloc, or exit: the test itself out of memory */
extern void *TestAlloc(size_t bytes);

/* The tests' fixed-seed generator (splitmix64): the next value of *state */
extern uint64_t TestRandom(uint64_t *state);

/* test_heap_deform.c */
extern void TestHeapDeform(void);

/* test_expr.c */
extern void TestExpr(void);

/* test_agg.c */
extern void TestAgg(void);

/* test_chain.c */
extern void TestChain(void);

/* test_scan.c */
extern void TestScan(void);

/*
 * A qual with the inputs of one row and the verdict (GJ_QUAL_FAILS,
 * _PASSES or _UNDECIDED, expr.h) it must have there, known by hand
 */
typedef struct TestQualCase
{
	char		name[96];
	GjExprProgram program;
	GjExprDatum inputs[GJ_EXPR_MAX_INPUTS];
	int			verdict;
} TestQualCase;

/*
 * test_heap_deform.c: run each case's qual as the filter of a deform of
 * tuples holding its inputs, on every implementation, and check the rows
 * that come out against its verdict
 */
extern void TestDeformQuals(const TestQualCase *cases, int ncases);

#endif							/* TEST_KERNELS_H */
