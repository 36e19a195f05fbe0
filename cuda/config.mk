# cuda/config.mk: where nvcc is and whether to build the CUDA kernels.
# Included by the top-level Makefile and by cuda/Makefile, so both agree.
#
#   make                   CUDA build when nvcc is found (PATH or /usr/local/cuda)
#   make WITH_CUDA=0       CPU-only build: the CPU twins alone
#   make CUDA_ARCHS="80 90" machine code for these architectures, PTX for the last
#
# Never -arch=native: build machines have no GPU.

NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
ifeq ($(strip $(NVCC)),)
WITH_CUDA ?= 0
else
WITH_CUDA ?= 1
endif
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_LIBDIR ?= $(CUDA_HOME)/lib64
CUDA_ARCHS ?= 80 90

# static runtime: gpujoin.so must load on a machine with no driver at all
CUDA_LIBS = -L$(CUDA_LIBDIR) -lcudart_static -lstdc++ -ldl -lrt -lpthread
