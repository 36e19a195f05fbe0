# gpujoin: GPU join paths for PostgreSQL (PGXS build)
#
#   make && make install          CUDA build when nvcc is found, else CPU-only
#   make WITH_CUDA=0              CPU-only build
#   make installcheck             pg_regress suite (sql/, expected/)
#   make prove                    pgTAP suite (test/*.sql) through pg_prove
#   make -C cuda check            kernel tests outside PostgreSQL
#
# The device side (cuda/*/*.cu; cuda/README.md) is compiled by nvcc into
# cuda/libgpujoin_cuda.a and linked into gpujoin.so together with the static CUDA
# runtime; see cuda/config.mk.  Its CPU twins (cuda/*/*_cpu.c) are compiled here.

EXTENSION = gpujoin
MODULE_big = gpujoin
DATA = gpujoin--0.1.0.sql
PGFILEDESC = "gpujoin - GPU join paths for PostgreSQL"

OBJS = \
	src/gpujoin.o \
	src/planner.o \
	src/planner_clauses.o \
	src/planner_cost.o \
	src/planner_expr.o \
	src/planner_agg.o \
	src/exec.o \
	src/exec_agg.o \
	src/exec_batch.o \
	src/exec_partition.o \
	src/exec_emit.o \
	src/exec_explain.o \
	src/exec_parallel.o \
	src/exec_chain.o \
	src/exec_heap.o \
	src/pinned.o \
	src/keys.o \
	src/calibrate.o \
	src/device.o \
	src/service.o \
	src/service_client.o \
	src/setup.o \
	cuda/device/context_cpu.o \
	cuda/join/hash_join_cpu.o \
	cuda/device/materialize_cpu.o \
	cuda/join/partitioned_join_cpu.o \
	cuda/join/sort_merge_cpu.o \
	cuda/device/key_sort_cpu.o \
	cuda/join/band_join_cpu.o \
	cuda/join/theta_nlj_cpu.o \
	cuda/join/scan_cpu.o \
	cuda/device/exchange_cpu.o \
	cuda/scan/heap_deform_cpu.o \
	cuda/expr/expr_cpu.o \
	cuda/agg/group_agg_cpu.o \
	cuda/device/spread.o \
	cuda/device/chain.o \
	cuda/scan/page_cache.o

REGRESS = create_extension hash_join rescan settings variants theta join_types heap_in_place page_cache
REGRESS_OPTS = --inputdir=. --load-extension=gpujoin
# isolation tests (specs/): concurrent sessions against the heap-page path
ISOLATION = heap_mvcc
ISOLATION_OPTS = --load-extension=gpujoin

include cuda/config.mk

PG_CPPFLAGS = -I$(srcdir)/cuda
ifeq ($(WITH_CUDA),1)
PG_CPPFLAGS += -DGPUJOIN_WITH_CUDA
# --exclude-libs: keep CUB's and the CUDA runtime's symbols out of the backend's
# global namespace (PostgreSQL loads modules with RTLD_GLOBAL)
SHLIB_LINK += cuda/libgpujoin_cuda.a $(CUDA_LIBS) -Wl,--exclude-libs,ALL
endif

EXTRA_CLEAN = .build-flags cuda/build cuda/libgpujoin_cuda.a results regression.diffs regression.out

# No LLVM bitcode: JIT inlining of this module buys nothing, and GPU hosts may
# have no clang.  (Set before PGXS is read: pgxs.mk decides on it there.)
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# src/ includes cuda/gpujoin_kernels.h alone (-I cuda above); the CPU twins
# also include the device layer's headers (cuda/device/) and the expression
# interpreter (cuda/expr/), which src/ never
# sees.
cuda/%.o: override CPPFLAGS += -I$(srcdir)/cuda/device -I$(srcdir)/cuda/expr -I$(srcdir)/cuda/agg

# Rebuild when a header changes, or when WITH_CUDA or the server's version
# changes (.build-flags holds the values of the last build): PGXS tracks
# none of them.
BUILD_FLAGS = WITH_CUDA=$(WITH_CUDA) $(CUDA_ARCHS) PostgreSQL $(VERSION)
$(OBJS): $(wildcard src/*.h cuda/*.h cuda/*/*.h) .build-flags
.build-flags: FORCE
	@echo '$(BUILD_FLAGS)' | cmp -s - $@ || echo '$(BUILD_FLAGS)' > $@
.PHONY: FORCE
FORCE:

ifeq ($(WITH_CUDA),1)
$(shlib): cuda/libgpujoin_cuda.a
cuda/libgpujoin_cuda.a: FORCE
	$(MAKE) -C cuda lib
endif

# pgTAP suite; connection settings come from PGHOST, PGPORT, PGUSER, PGDATABASE
PROVE_FLAGS ?= --failures
.PHONY: prove
prove:
	pg_prove $(PROVE_FLAGS) test/*.sql
