/*
 * bench/kernels/probe_host_memory.cu: what new host memory costs on a GPU
 * host, outside PostgreSQL (the numbers behind the gpujoin service's
 * page-locking of client segments and the inner side read in shares)
 *
 *   nvcc -O3 -arch=sm_90 -o probe_host_memory bench/kernels/probe_host_memory.cu && ./probe_host_memory
 *
 * 1. Shared memory as PostgreSQL's DSM segments are made (shm_open,
 *    ftruncate, posix_fallocate, mmap): the first write to each 4 kB page,
 *    against madvise(MADV_POPULATE_WRITE) and MAP_POPULATE first; then a
 *    second process mapping the written segment, as the gpujoin service
 *    maps a client's (touching it, or populating it first).
 * 2. cudaHostRegister of such memory, untouched and touched.
 * 3. Calls shaped like one heap deform of the service (8 MB to the device,
 *    a kernel, 3 MB back, a small pageable read, a stream sync) from 1, 2,
 *    4 and 9 threads with a stream each: calls per second.
 * 4. The same calls from 8 threads while the main thread page-locks 512 MB
 *    that no one touched: the callers stop after 3 s, and the registration's
 *    start and end show whether it could run among them.
 * Every result is a wall-clock time of this process; one run.
 */
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>
#include <cuda_runtime.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static const size_t GB = (size_t) 1 << 30;

static double
NowMs()
{
	return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/* A shared segment of bytes, as dsm_impl_posix makes one; flags for mmap */
static char *
Segment(const char *name, size_t bytes, int flags)
{
	int			fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	char	   *p;

	if (fd < 0 || ftruncate(fd, bytes) != 0 || posix_fallocate(fd, 0, bytes) != 0)
	{
		perror("shm");
		exit(1);
	}
	p = (char *) mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | flags, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
	{
		perror("mmap");
		exit(1);
	}
	return p;
}

/* Write one byte of every 4 kB page: ms */
static double
Touch(char *p, size_t bytes)
{
	double		t = NowMs();

	for (size_t i = 0; i < bytes; i += 4096)
		p[i] = 1;
	return NowMs() - t;
}

static void
Faults()
{
	char		name[64];
	char	   *p;
	double		t;

	snprintf(name, sizeof(name), "/probe_host_memory_%d", (int) getpid());
	p = Segment(name, GB, 0);
	printf("1 GB shared, first write to each page: %.1f ms; again: %.1f ms\n", Touch(p, GB), Touch(p, GB));
	munmap(p, GB);
	shm_unlink(name);

	p = Segment(name, GB, 0);
	t = NowMs();
	if (madvise(p, GB, MADV_POPULATE_WRITE) != 0)
		perror("madvise");
	t = NowMs() - t;
	printf("1 GB shared, MADV_POPULATE_WRITE: %.1f ms, then the writes: %.1f ms\n", t, Touch(p, GB));

	/* another process maps the written segment, as the service does */
	for (int mode = 0; mode < 3; mode++)
	{
		pid_t		child = fork();

		if (child == 0)
		{
			int			fd = shm_open(name, O_RDWR, 0600);
			char	   *q = (char *) mmap(NULL, GB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			double		populate = 0;

			t = NowMs();
			if (mode > 0)
				(void) madvise(q, GB, mode == 1 ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
			populate = NowMs() - t;
			printf("  another process maps it: %s %.1f ms, then writes each page %.1f ms\n",
				   mode == 0 ? "(no populate)" : mode == 1 ? "MADV_POPULATE_WRITE" : "MADV_POPULATE_READ",
				   populate, Touch(q, GB));
			fflush(stdout);
			_exit(0);
		}
		waitpid(child, NULL, 0);
	}
	munmap(p, GB);
	shm_unlink(name);

	t = NowMs();
	p = Segment(name, GB, MAP_POPULATE);
	t = NowMs() - t;
	printf("1 GB shared, made with MAP_POPULATE: %.1f ms, then the writes: %.1f ms\n", t, Touch(p, GB));
	munmap(p, GB);
	shm_unlink(name);
}

static void
Register()
{
	size_t		bytes = (size_t) 300 << 20;
	char	   *p = (char *) mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double		t = NowMs();

	CK(cudaHostRegister(p, bytes, cudaHostRegisterPortable));
	printf("cudaHostRegister of 300 MB never touched: %.1f ms\n", NowMs() - t);
	CK(cudaHostUnregister(p));
	t = NowMs();
	CK(cudaHostRegister(p, bytes, cudaHostRegisterPortable));
	printf("cudaHostRegister of the same 300 MB, touched: %.1f ms\n", NowMs() - t);
	CK(cudaHostUnregister(p));
	munmap(p, bytes);
}

__global__ void
AddOne(char *p, size_t n)
{
	for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t) gridDim.x * blockDim.x)
		p[i] += 1;
}

/* Per thread: a stream, a device buffer, page-locked input and output */
struct Caller
{
	cudaStream_t stream;
	char	   *dev;
	char	   *in;
	char	   *out;
};

/* One call shaped like a heap deform of the service */
static void
Call(const Caller *c)
{
	long		found[3];

	CK(cudaMemcpyAsync(c->dev, c->in, 8 << 20, cudaMemcpyHostToDevice, c->stream));
	AddOne<<<264, 256, 0, c->stream>>>(c->dev, 8 << 20);
	CK(cudaMemcpyAsync(c->out, c->dev, 3 << 20, cudaMemcpyDeviceToHost, c->stream));
	CK(cudaMemcpyAsync(found, c->dev, sizeof(found), cudaMemcpyDeviceToHost, c->stream));
	CK(cudaStreamSynchronize(c->stream));
}

static void
Calls(std::vector<Caller> &callers)
{
	for (int nthreads : {1, 2, 4, 9})
	{
		std::atomic<long> calls{0};
		std::vector<std::thread> threads;
		double		t0 = NowMs();
		double		ms;

		for (int t = 0; t < nthreads; t++)
			threads.emplace_back([&, t]() {
				while (NowMs() - t0 < 1000)
				{
					Call(&callers[t]);
					calls++;
				}
			});
		for (auto &th : threads)
			th.join();
		ms = NowMs() - t0;
		printf("%d threads: %.0f calls a second, %.2f ms a call in each thread\n",
			   nthreads, calls * 1000.0 / ms, ms * nthreads / calls);
	}
}

static void
RegisterAmongCalls(std::vector<Caller> &callers)
{
	std::vector<std::vector<double>> done(8);
	std::vector<std::thread> threads;
	size_t		bytes = (size_t) 512 << 20;
	char	   *p = (char *) mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double		t0 = NowMs();
	double		r0;
	double		r1;

	for (int t = 0; t < 8; t++)
		threads.emplace_back([&, t]() {
			while (NowMs() - t0 < 3000)
			{
				Call(&callers[t]);
				done[t].push_back(NowMs() - t0);
			}
		});
	std::this_thread::sleep_for(std::chrono::milliseconds(500));
	r0 = NowMs() - t0;
	CK(cudaHostRegister(p, bytes, cudaHostRegisterPortable));
	r1 = NowMs() - t0;
	for (auto &th : threads)
		th.join();
	printf("8 threads calling for 3 s; cudaHostRegister of 512 MB never touched began at %.0f ms, ended at %.0f ms\n", r0, r1);
	for (double w = 0; w < 3000; w += 250)
	{
		long		n = 0;

		for (auto &v : done)
			for (double x : v)
				n += x >= w && x < w + 250;
		printf("  %4.0f-%4.0f ms: %ld calls\n", w, w + 250, n);
	}
	CK(cudaHostUnregister(p));
	munmap(p, bytes);
}

int
main()
{
	std::vector<Caller> callers(9);

	setvbuf(stdout, NULL, _IONBF, 0);
	Faults();
	CK(cudaFree(0));
	Register();
	for (auto &c : callers)
	{
		CK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
		CK(cudaMalloc(&c.dev, 8 << 20));
		CK(cudaMallocHost(&c.in, 8 << 20));
		CK(cudaMallocHost(&c.out, 3 << 20));
	}
	Calls(callers);
	RegisterAmongCalls(callers);
	return 0;
}
