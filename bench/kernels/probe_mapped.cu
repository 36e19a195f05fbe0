/*
 * bench/kernels/probe_mapped.cu: what reading heap pages in place costs on
 * a GPU host, outside PostgreSQL (the numbers behind gpujoin.heap_in_place)
 *
 *   nvcc -O3 -arch=sm_90 -o probe_mapped bench/kernels/probe_mapped.cu && ./probe_mapped
 *
 * 4 GB of MAP_SHARED anonymous memory, as PostgreSQL's shared buffers are
 * mapped: the time to register it with the driver 64 MB at a time (as
 * cuda/scan/heap_deform.cu does), and the device's gather of 8 kB pages
 * from it (one block per page, 16 bytes a thread) in page order, in a
 * scattered order and every other page, next to a copy from page-locked
 * memory, a copy from the registered memory, and the host's own copy of
 * the pages (what gpujoin.heap_in_place = off does).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <sys/mman.h>
#include <chrono>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); } } while (0)
static double now() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
__global__ void gather(const char *region, const unsigned *idx, int npages, char *dst)
{
	for (int p = blockIdx.x; p < npages; p += gridDim.x) {
		const uint4 *src = (const uint4 *) (region + (size_t) idx[p] * 8192);
		uint4 *d = (uint4 *) (dst + (size_t) p * 8192);
		for (int i = threadIdx.x; i < 512; i += blockDim.x) d[i] = src[i];
	}
}
int main(int argc, char **argv)
{
	size_t total = (size_t) 4 << 30, slab = (size_t) 64 << 20;
	int flag = 0; CK(cudaDeviceGetAttribute(&flag, cudaDevAttrCanUseHostPointerForRegisteredMem, 0));
	printf("CanUseHostPointerForRegisteredMem=%d\n", flag);
	CK(cudaFree(0));
	char *shm = (char *) mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double t = now(); memset(shm, 1, total); printf("touch 4GB: %.1f ms\n", now() - t);
	t = now();
	for (size_t off = 0; off < total; off += slab)
		CK(cudaHostRegister(shm + off, slab, cudaHostRegisterMapped | cudaHostRegisterPortable));
	double reg = now() - t;
	printf("register 4GB in 64MB slabs: %.1f ms (%.2f ms per slab)\n", reg, reg / (total / slab));
	void *dp; CK(cudaHostGetDevicePointer(&dp, shm, 0)); printf("device ptr == host ptr: %d\n", dp == shm);
	int npages = 1024; size_t bytes = (size_t) npages * 8192;
	char *dst; CK(cudaMalloc(&dst, bytes * 8));
	unsigned *idx_h, *idx_d; CK(cudaMallocHost(&idx_h, 4 * npages * 8)); CK(cudaMalloc(&idx_d, 4 * npages * 8));
	cudaStream_t s; CK(cudaStreamCreate(&s));
	int nb = total / 8192;
	for (int mode = 0; mode < 3; mode++) {
		for (int i = 0; i < npages * 8; i++) idx_h[i] = mode == 0 ? i : mode == 1 ? (unsigned) (((size_t) i * 2654435761u) % nb) : (unsigned) (i * 2);
		for (int grid : {132, 264, 528, 1056}) {
			for (int rep = 0; rep < 2; rep++) {
				CK(cudaStreamSynchronize(s)); t = now();
				for (int b = 0; b < 8; b++) {
					CK(cudaMemcpyAsync(idx_d + b * npages, idx_h + b * npages, 4 * npages, cudaMemcpyHostToDevice, s));
					gather<<<grid, 256, 0, s>>>(shm, idx_d + b * npages, npages, dst + b * bytes);
				}
				CK(cudaStreamSynchronize(s)); double ms = now() - t;
				if (rep) printf("gather mode=%s grid=%d: 64MB in %.2f ms = %.1f GB/s\n", mode == 0 ? "seq" : mode == 1 ? "random" : "stride2", grid, ms, bytes * 8 / ms / 1e6);
			}
		}
	}
	char *pin; CK(cudaMallocHost(&pin, bytes * 8));
	memset(pin, 2, bytes * 8);
	for (int rep = 0; rep < 2; rep++) { t = now(); CK(cudaMemcpyAsync(dst, pin, bytes * 8, cudaMemcpyHostToDevice, s)); CK(cudaStreamSynchronize(s)); if (rep) printf("pinned memcpy 64MB: %.2f ms = %.1f GB/s\n", now() - t, bytes * 8 / (now() - t) / 1e6); }
	for (int rep = 0; rep < 2; rep++) { t = now(); CK(cudaMemcpyAsync(dst, shm, bytes * 8, cudaMemcpyHostToDevice, s)); CK(cudaStreamSynchronize(s)); if (rep) printf("registered shm memcpy 64MB: %.2f ms = %.1f GB/s\n", now() - t, bytes * 8 / (now() - t) / 1e6); }
	// host side memcpy of pages as today
	for (int rep = 0; rep < 2; rep++) { t = now(); for (int i = 0; i < npages * 8; i++) memcpy(pin + (size_t) i * 8192, shm + (size_t) idx_h[i] * 8192, 8192); if (rep) printf("host memcpy 64MB of pages: %.2f ms = %.1f GB/s\n", now() - t, bytes * 8 / (now() - t) / 1e6); }
	t = now();
	for (size_t off = 0; off < total; off += slab) CK(cudaHostUnregister(shm + off));
	printf("unregister: %.1f ms\n", now() - t);
	return 0;
}
