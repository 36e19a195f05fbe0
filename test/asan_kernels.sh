#!/usr/bin/env bash
# test/asan_kernels.sh: the kernel tests' CPU twins under AddressSanitizer
# and UndefinedBehaviorSanitizer
#
#   test/asan_kernels.sh
#
# Copies cuda/ and test/kernels/ to a temporary directory, builds the kernel
# tests there (cuda/build/test_kernels, from test/kernels/test_kernels.c)
# without CUDA (the CPU twins only) with -fsanitize=address,undefined, and
# runs it: any read or write outside a buffer, use after free, leak or
# undefined behaviour in a twin fails the run (exit status non-zero).  The
# CUDA kernels are checked on a GPU host with compute-sanitizer instead.
# The generated "large" cases take GJ_TEST_LARGE_ROWS rows, 500000 here
# unless set (2000000 in the plain kernel tests): the same paths with a
# quarter of the rows, for CI's sake (on the 2-core development machine
# this script took 11.7 minutes with 2000000 and 8.8 with 500000).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$root/cuda" "$work/cuda"
mkdir -p "$work/test"
cp -r "$root/test/kernels" "$work/test/kernels"
rm -rf "$work/cuda/build" "$work/cuda/libgpujoin_cuda.a"
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
make -s -C "$work/cuda" WITH_CUDA=0 CFLAGS="-O1 -g -Wall $san" TEST_LD="${CC:-gcc} $san" \
	build/test_kernels
# (ldd's whole output first: "ldd | grep -q" under pipefail fails whenever
# grep's early exit makes ldd die of SIGPIPE, which CI once hit)
libs=$(ldd "$work/cuda/build/test_kernels")
grep -q libasan <<<"$libs" || { echo "asan_kernels.sh: not built with AddressSanitizer" >&2; exit 1; }
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	GJ_TEST_LARGE_ROWS=${GJ_TEST_LARGE_ROWS:-500000} "$work/cuda/build/test_kernels"
