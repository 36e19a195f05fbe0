/*-------------------------------------------------------------------------
 *
 * device.c
 *	  Which kernels run a join, device contexts and their cleanup, errors
 *
 * The CPU twins are always compiled in, so "cpu" is always a valid answer;
 * the CUDA kernels are used when gpujoin.device allows it and a device
 * answers the probe.  The probe runs lazily in the backend, never in
 * _PG_init: with shared_preload_libraries that would initialize CUDA in the
 * postmaster, and forked backends could not use it.
 *
 * A device context (GjContext) holds device and pinned host memory.  It is
 * destroyed by EndGpuJoin, and, should the query fail or be cancelled
 * first, by a reset callback on the executor's memory context, so neither an
 * ERROR nor a cancel can leak device memory.
 *
 * CUDA's own context is another matter: the first CUDA call that needs it
 * creates it, and it keeps about 0.5 GB of device memory (520 MiB on the
 * H200, bench/results/reliability.md) until the backend exits.  So that
 * many sessions cannot take the whole device, gpujoin.max_gpu_backends caps
 * the backends that hold one: a backend takes a slot in shared memory
 * before it first touches the device, and gives it back when it exits (a
 * crashed backend's slot goes with the shared memory that the postmaster
 * reinitializes).  A backend refused a slot has no usable GPU, asking again
 * at its next join.  The slots need shared_preload_libraries.
 *
 * IDENTIFICATION
 *	  src/device.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "funcapi.h"
#include "gpujoin.h"
#include "miscadmin.h"
#include "service.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"

/*
 * How long a join forced onto the GPU (gpujoin.device = gpu) waits for a
 * gpujoin service that is starting again: the postmaster restarts it one
 * second after it exits, and it opens its devices before taking requests
 */
#define SERVICE_RESTART_WAIT_MS 10000

/* Number of usable CUDA devices in this backend; -1 until probed */
static int	cuda_device_count = -1;

/* Why there is no device, once probed; shown by gpujoin_device_info() */
static char cuda_probe_message[256];

/* Name of device 0, for EXPLAIN */
static char cuda_device_name[256];

/* free device memory when this backend probed the GPU (bytes) */
static int64 cuda_free_memory = 0;

/* this backend holds a slot and has opened the device */
static bool cuda_ready = false;

/* this backend's last try for a slot found gpujoin.max_gpu_backends reached */
static bool slot_refused = false;

/*
 * Shared memory (with shared_preload_libraries): the backends that hold a
 * slot, that is, use the GPU; and what the first backend to open device 0
 * learnt of it, so that a backend that only plans needs neither a slot nor
 * CUDA's context (PlannerSeesDevice)
 */
typedef struct GpuJoinShared
{
	slock_t		mutex;
	int			gpu_backends;
	bool		device_known;	/* the fields below are set */
	int64		free_memory;	/* free device memory then (bytes) */
	char		device_name[256];
} GpuJoinShared;

static GpuJoinShared *gj_shared = NULL;
static bool holds_slot = false;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

PG_FUNCTION_INFO_V1(gpujoin_device_info);

static void
GpuJoinShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(GpuJoinShared)));
	if (gpujoin_service)
		RequestAddinShmemSpace(MAXALIGN(GpuJoinServiceShmemSize()));
}

static void
GpuJoinShmemStartup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	gj_shared = ShmemInitStruct("gpujoin", sizeof(GpuJoinShared), &found);
	if (!found)
	{
		SpinLockInit(&gj_shared->mutex);
		gj_shared->gpu_backends = 0;
		gj_shared->device_known = false;
	}
	if (gpujoin_service)
		GpuJoinServiceShmemInit();
	LWLockRelease(AddinShmemInitLock);
}

/*
 * _PG_init, loaded by shared_preload_libraries: ask for the slots' memory
 */
void
GpuJoinRequestSharedMemory(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = GpuJoinShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = GpuJoinShmemStartup;
	if (gpujoin_service)
		GpuJoinServiceRegister();
}

/* Is a slot free for one more backend?  Call it holding the mutex. */
static bool
SlotFreeLocked(void)
{
	return gpujoin_max_gpu_backends < 0 ||
		gj_shared->gpu_backends < gpujoin_max_gpu_backends;
}

/* Why this backend has no GPU: the slots are taken */
static void
NoteSlotsTaken(void)
{
	snprintf(cuda_probe_message, sizeof(cuda_probe_message),
			 "gpujoin.max_gpu_backends (%d) backends already use the GPU.",
			 gpujoin_max_gpu_backends);
}

#ifdef GPUJOIN_WITH_CUDA		/* a build without CUDA never opens a device */
/* on_shmem_exit callback: give the slot back */
static void
ReleaseDeviceSlot(int code, Datum arg)
{
	SpinLockAcquire(&gj_shared->mutex);
	gj_shared->gpu_backends--;
	SpinLockRelease(&gj_shared->mutex);
	holds_slot = false;
}

/*
 * Take a slot before this backend first touches the device; false when
 * gpujoin.max_gpu_backends backends already hold one.  Without the shared
 * memory (gpujoin not preloaded) every backend may, and a WARNING says once
 * that a limit that is set is not enforced.
 */
static bool
TakeDeviceSlot(void)
{
	static bool warned = false;
	bool		taken = false;

	if (holds_slot)
		return true;
	if (gj_shared == NULL)
	{
		if (gpujoin_max_gpu_backends >= 0 && !warned)
		{
			ereport(WARNING,
					(errmsg("gpujoin.max_gpu_backends is not enforced"),
					 errdetail("The limit needs gpujoin in shared_preload_libraries.")));
			warned = true;
		}
		return true;
	}

	SpinLockAcquire(&gj_shared->mutex);
	if (SlotFreeLocked())
	{
		gj_shared->gpu_backends++;
		taken = true;
	}
	SpinLockRelease(&gj_shared->mutex);

	slot_refused = !taken;
	if (taken)
	{
		holds_slot = true;
		on_shmem_exit(ReleaseDeviceSlot, (Datum) 0);
	}
	return taken;
}
#endif

/*
 * CUDA devices, counted once per backend without creating CUDA's context
 * (cudaGetDeviceCount: on the H200 host, sessions refused a slot after
 * counting held no device memory)
 */
static int
CountDevices(void)
{
	if (GpuJoinServiceInUse())
	{
		/* the service's devices; asked again while it is not running */
		if (cuda_device_count < 0)
		{
			GjDeviceInfo info;
			int			n = GpuJoinServiceProbe(&info, cuda_probe_message,
												sizeof(cuda_probe_message));

			if (n > 0)
			{
				strlcpy(cuda_device_name, info.name, sizeof(cuda_device_name));
				cuda_free_memory = info.free_memory;
			}
			if (n >= 0)
				cuda_device_count = n;
			return Max(n, 0);
		}
		return cuda_device_count;
	}
#ifdef GPUJOIN_WITH_CUDA
	if (cuda_device_count < 0)
	{
		GjError		err;

		memset(&err, 0, sizeof(err));
		cuda_device_count = gj_cuda_device_count(&err);
		if (cuda_device_count <= 0)
		{
			cuda_device_count = 0;
			strlcpy(cuda_probe_message, err.message, sizeof(cuda_probe_message));
		}
	}
#else
	cuda_device_count = 0;
	strlcpy(cuda_probe_message, "gpujoin was built without CUDA.",
			sizeof(cuda_probe_message));
#endif
	return cuda_device_count;
}

/*
 * Open device 0 in this backend once a slot is had; true if it is usable
 */
static bool
ProbeCuda(void)
{
	/* the service owns the device: nothing to open here */
	if (GpuJoinServiceInUse())
		return CountDevices() > 0;
#ifdef GPUJOIN_WITH_CUDA
	if (CountDevices() > 0 && !cuda_ready)
	{
		GjDeviceInfo info;
		GjError		err;

		if (!TakeDeviceSlot())
		{
			NoteSlotsTaken();
			return false;
		}
		memset(&info, 0, sizeof(info));
		memset(&err, 0, sizeof(err));
		if (gj_cuda_device_info(0, &info, &err) == GJ_OK)
		{
			strlcpy(cuda_device_name, info.name, sizeof(cuda_device_name));
			cuda_free_memory = info.free_memory;
			if (gj_shared != NULL)
			{
				SpinLockAcquire(&gj_shared->mutex);
				if (!gj_shared->device_known)
				{
					strlcpy(gj_shared->device_name, info.name,
							sizeof(gj_shared->device_name));
					gj_shared->free_memory = info.free_memory;
					gj_shared->device_known = true;
				}
				SpinLockRelease(&gj_shared->mutex);
			}
		}
		cuda_ready = true;
	}
	return cuda_ready;
#else
	(void) CountDevices();
	return false;
#endif
}

/* gpujoin.device_memory_limit (a setting in kB) in bytes; 0: none set */
static int64
DeviceMemoryLimitBytes(void)
{
	return (int64) gpujoin_device_memory_limit * 1024;
}

/*
 * Is there a device for the planner to plan GPU joins on?
 *
 * Opening the device takes a slot and CUDA's context, about 0.5 GB that
 * the backend keeps until it exits, and most backends that plan a join
 * never run one on the GPU.  So once a backend has opened device 0 since
 * the server started (its name and free memory are then in shared memory),
 * the planner of another backend only counts the devices and looks for a
 * free slot; the backend takes its slot and context when it runs a GPU
 * join (GpuJoinChooseKernels).  Should the slots run out in between, such a
 * join runs on the CPU twin (auto) or fails with 53000 (gpu).  Without the
 * shared memory, or before any backend has opened the device, the planner
 * opens it as the executor would.
 */
static bool
PlannerSeesDevice(void)
{
	bool		known = false;
	bool		free_slot = false;

	if (GpuJoinServiceInUse())
		return ProbeCuda();
	if (cuda_ready || gj_shared == NULL || CountDevices() <= 0)
		return ProbeCuda();

	SpinLockAcquire(&gj_shared->mutex);
	if (gj_shared->device_known)
	{
		known = true;
		free_slot = holds_slot || SlotFreeLocked();
		strlcpy(cuda_device_name, gj_shared->device_name, sizeof(cuda_device_name));
		cuda_free_memory = gj_shared->free_memory;
	}
	SpinLockRelease(&gj_shared->mutex);

	if (!known)
		return ProbeCuda();
	if (!free_slot)
		NoteSlotsTaken();
	return free_slot;
}

/*
 * Device bytes the planner assumes one join may use: gpujoin.device_memory_limit
 * when set, else what the GPU had free when this backend first probed it;
 * 0 when unknown (no GPU probed: the CPU twin has no such limit)
 */
double
GpuJoinPlannerDeviceBudget(void)
{
	if (gpujoin_device_memory_limit > 0)
		return (double) DeviceMemoryLimitBytes();
	if (gpujoin_device != GPUJOIN_DEVICE_CPU && PlannerSeesDevice())
		return (double) cuda_free_memory;
	return 0.0;
}

/*
 * Device bytes of a GPU join's structures, the planner's and the executor's
 * estimate: about three times the key, row number and payload bytes of each
 * inner row (the build's and the partitioning's or sort's buffers), the same
 * for each row of an outer chunk, and two matches' worth of row numbers and
 * payloads per chunk row (the round of matches is a chunk's rows).  The
 * measured peaks of the kernel grid (bench/results/kernels.csv,
 * device_peak_bytes) are within this.
 */
double
GpuJoinInnerDeviceBytes(double rows, int payload_bytes)
{
	return 3.0 * rows * (GPUJOIN_KEY_BYTES + sizeof(GjRowId) + payload_bytes);
}

double
GpuJoinChunkDeviceBytes(double rows, int outer_bytes, int inner_bytes)
{
	return 3.0 * rows * (GPUJOIN_KEY_BYTES + sizeof(GjRowId) + outer_bytes) +
		2.0 * rows * (GPUJOIN_MATCH_BYTES + inner_bytes + outer_bytes);
}

/*
 * How a hash join fits a device budget of "budget" bytes: the number of
 * partitions its inner side is split into (1: it fits whole), or 0 when it
 * would take more than GPUJOIN_MAX_PARTITIONS, and in *chunk_rows the rows
 * of an outer chunk (lowered when the join does not fit and a chunk would
 * take more than half of the budget).  Both sides are split by a hash of the join key, so each inner
 * partition meets only the outer rows of its own (Rui 2020, ch. 4: the
 * partitioned join, here with the partitions on the host and joined one at
 * a time on the device, as a grace hash join does with its batches).
 *
 * A partition is planned to fill at most GPUJOIN_PARTITION_FILL of what is
 * left after the chunk and GPUJOIN_DEVICE_RESERVE (a quarter of a budget
 * under 1 MB, so that tests can partition small joins): the estimate is an
 * estimate, and a skewed key makes partitions uneven.
 */
int
GpuJoinPartitions(double inner_rows, int inner_bytes, double outer_rows,
				  int outer_bytes, double budget, int64 *chunk_rows)
{
	double		chunk = Min((double) *chunk_rows, Max(outer_rows, 1.0));
	double		per_chunk_row = GpuJoinChunkDeviceBytes(1.0, outer_bytes, inner_bytes);
	double		inner_need = GpuJoinInnerDeviceBytes(inner_rows, inner_bytes);
	double		usable = budget - Min(GPUJOIN_DEVICE_RESERVE, budget / 4.0);
	double		parts;

	if (budget <= 0.0 || inner_need + chunk * per_chunk_row <= budget)
		return 1;				/* no budget known, or it fits */
	if (usable <= 0.0)
		return 0;
	if (chunk * per_chunk_row > usable / 2.0)
	{
		chunk = Max(floor(usable / 2.0 / per_chunk_row), (double) GPUJOIN_MIN_PARTITION_CHUNK);
		*chunk_rows = (int64) chunk;
	}
	usable -= chunk * per_chunk_row;
	if (usable <= 0.0)
		return 0;
	if (inner_need <= usable)
		return 1;				/* fits with smaller chunks */
	parts = ceil(inner_need / (usable * GPUJOIN_PARTITION_FILL));
	if (parts > GPUJOIN_MAX_PARTITIONS)
		return 0;
	return (int) parts;
}

/* The kernels a spread table runs on (gj_spread_kernels), else kernels */
static const GjKernels *
BaseKernels(const GjKernels *kernels)
{
	if (kernels != NULL && kernels == gj_spread_kernels(&gj_cpu_kernels))
		return &gj_cpu_kernels;
#ifdef GPUJOIN_WITH_CUDA
	if (kernels != NULL && kernels == gj_spread_kernels(&gj_cuda_kernels))
		return &gj_cuda_kernels;
#endif
	return kernels;
}

/*
 * Device bytes a join may use now, in the executor: gpujoin.device_memory_limit
 * when set, else the memory free on the GPU now (other sessions' joins
 * hold some); 0 when not known (the CPU twin, no limit set)
 */
double
GpuJoinExecutorDeviceBudget(const GjKernels *kernels)
{
	bool		service_gpu;

	if (gpujoin_device_memory_limit > 0)
		return (double) DeviceMemoryLimitBytes();
	if (GpuJoinIsServiceKernels(kernels, &service_gpu))
	{
		GjDeviceInfo info;
		char		message[256];

		if (service_gpu && GpuJoinServiceProbe(&info, message, sizeof(message)) > 0)
			return (double) info.free_memory;
		return 0.0;
	}
#ifdef GPUJOIN_WITH_CUDA
	if (BaseKernels(kernels) != &gj_cpu_kernels && ProbeCuda())
	{
		GjDeviceInfo info;
		GjError		err;

		memset(&info, 0, sizeof(info));
		memset(&err, 0, sizeof(err));
		if (gj_cuda_device_info(0, &info, &err) == GJ_OK)
			return (double) info.free_memory;
	}
#endif
	return 0.0;
}

/*
 * May the planner offer GPU join paths, and will they run on a GPU?
 *
 * With gpujoin.device = auto and no usable GPU there are no paths at all:
 * the CPU twin is there for tests and for falling back mid-query, not to
 * compete with PostgreSQL's own joins.
 */
bool
GpuJoinPlannerHasDevice(bool *use_gpu)
{
	switch ((GpuJoinDeviceSetting) gpujoin_device)
	{
		case GPUJOIN_DEVICE_CPU:
			*use_gpu = false;
			return true;
		case GPUJOIN_DEVICE_GPU:
			*use_gpu = true;
			return true;
		case GPUJOIN_DEVICE_AUTO:
			*use_gpu = true;
			return PlannerSeesDevice();
	}
	return false;
}

/*
 * Choose the kernel table for a join that is about to run
 */
const GjKernels *
GpuJoinChooseKernels(void)
{
	bool		service = GpuJoinServiceInUse() && GpuJoinServiceReady();

	/* forced onto the GPU: a restarting service is waited for, not refused */
	if (!service && GpuJoinServiceInUse() && gpujoin_device == GPUJOIN_DEVICE_GPU)
		service = GpuJoinServiceWaitReady(SERVICE_RESTART_WAIT_MS);

	if (gpujoin_device == GPUJOIN_DEVICE_CPU)
		return service ? GpuJoinServiceKernels(false) : &gj_cpu_kernels;
	if (GpuJoinServiceInUse())
	{
		/* a GPU only through the service; while it restarts, none */
		if (service && ProbeCuda())
			return GpuJoinServiceKernels(true);
		if (gpujoin_device == GPUJOIN_DEVICE_GPU)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("no usable GPU for gpujoin"),
					 errdetail("%s", service ? cuda_probe_message : "The gpujoin service is not running."),
					 errhint("Set gpujoin.device = 'auto' to run joins on the CPU when no GPU is available.")));
		return service ? GpuJoinServiceKernels(false) : &gj_cpu_kernels;
	}

#ifdef GPUJOIN_WITH_CUDA
	if (ProbeCuda())
		return &gj_cuda_kernels;
#else
	(void) ProbeCuda();
#endif

	if (gpujoin_device == GPUJOIN_DEVICE_GPU && slot_refused)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("too many backends use the GPU"),
				 errdetail("%s", cuda_probe_message),
				 errhint("Raise gpujoin.max_gpu_backends, or set gpujoin.device = 'auto' to plan PostgreSQL's joins while the GPU is taken.")));
	if (gpujoin_device == GPUJOIN_DEVICE_GPU)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("no usable GPU for gpujoin"),
				 errdetail("%s", cuda_probe_message),
				 errhint("Set gpujoin.device = 'auto' to run joins on the CPU when no GPU is available.")));

	return &gj_cpu_kernels;
}

static bool ParseDevices(const char *value, int32 *ordinals, int *n);

/*
 * "GPU n (its name)" for the GPU a join of one device runs on: the first
 * that gpujoin.devices names (GpuJoinSpreadSpec's spec.device), GPU 0 for
 * "all".  The name is the one probed, device 0's; another GPU's is left
 * out rather than guessed.
 */
static char *
DescribeGpu(const char *suffix)
{
	int32		ordinals[GJ_MAX_DEVICES];
	int			n = 0;
	int			ordinal = 0;

	if (gpujoin_devices != NULL && ParseDevices(gpujoin_devices, ordinals, &n) && n > 0)
		ordinal = ordinals[0];
	if (ordinal == 0)
		return psprintf("GPU 0 (%s)%s", cuda_device_name, suffix);
	return psprintf("GPU %d%s", (int) ordinal, suffix);
}

/*
 * The device a kernel table runs on, for EXPLAIN; NULL kernels means "what
 * a join would use now", and never fails
 */
const char *
GpuJoinDescribeDevice(const GjKernels *kernels)
{
	bool		service_gpu;

	if (kernels == NULL && GpuJoinServiceInUse() && GpuJoinServiceReady())
		kernels = GpuJoinServiceKernels(gpujoin_device != GPUJOIN_DEVICE_CPU &&
										PlannerSeesDevice());
	if (kernels != NULL && GpuJoinIsServiceKernels(kernels, &service_gpu))
		return service_gpu ? DescribeGpu(", gpujoin service") : "CPU, gpujoin service";
	if (kernels == NULL)
	{
		if (gpujoin_device == GPUJOIN_DEVICE_CPU || !PlannerSeesDevice())
			kernels = &gj_cpu_kernels;
#ifdef GPUJOIN_WITH_CUDA
		else
			kernels = &gj_cuda_kernels;
#endif
	}

#ifdef GPUJOIN_WITH_CUDA
	if (BaseKernels(kernels) == &gj_cuda_kernels)
		return DescribeGpu("");
#endif
	return "CPU";
}

/* Do these kernels run on the CPU (the twin, here or in the service)? */
bool
GpuJoinIsCpuTwin(const GjKernels *kernels)
{
	bool		service_gpu;

	if (GpuJoinIsServiceKernels(kernels, &service_gpu))
		return !service_gpu;
	return BaseKernels(kernels) == &gj_cpu_kernels;
}

/* ----------------------------------------------------------------
 *		Several devices
 * ----------------------------------------------------------------
 */

/*
 * Parse gpujoin.devices: "all", or CUDA ordinals separated by commas;
 * false for anything else.  ordinals gets up to GJ_MAX_DEVICES of them.
 */
static bool
ParseDevices(const char *value, int32 *ordinals, int *n)
{
	const char *p = value;

	*n = 0;
	while (*p == ' ')
		p++;
	if (pg_strcasecmp(p, "all") == 0)
		return true;
	for (;;)
	{
		char	   *end;
		long		ordinal;

		while (*p == ' ')
			p++;
		if (*p < '0' || *p > '9')
			return false;
		ordinal = strtol(p, &end, 10);
		if (ordinal > 1024 || *n >= GJ_MAX_DEVICES)
			return false;
		for (int i = 0; i < *n; i++)
			if (ordinals[i] == ordinal)
				return false;
		ordinals[(*n)++] = (int32) ordinal;
		p = end;
		while (*p == ' ')
			p++;
		if (*p == '\0')
			return true;
		if (*p++ != ',')
			return false;
	}
}

/* gpujoin.devices' check hook */
bool
GpuJoinCheckDevices(char **newval, void **extra, GucSource source)
{
	int32		ordinals[GJ_MAX_DEVICES];
	int			n;

	if (*newval == NULL || !ParseDevices(*newval, ordinals, &n))
	{
		GUC_check_errdetail("gpujoin.devices is \"all\" or up to %d distinct CUDA ordinals separated by commas, such as \"0,1\".",
							GJ_MAX_DEVICES);
		return false;
	}
	return true;
}

/*
 * The devices a join is spread over, in devices[] (GJ_MAX_DEVICES of room):
 * each device gpujoin.devices names that there is (the CPU twin, one
 * device, when joins run on the CPU), gpujoin.logical_devices times,
 * round the devices.  Returns how many, at least 1.
 */
int
GpuJoinSpreadDevices(int32 *devices)
{
	int32		physical[GJ_MAX_DEVICES];
	int			nphysical = 0;
	int			n;

	if (gpujoin_device != GPUJOIN_DEVICE_CPU && PlannerSeesDevice())
	{
		int			count = CountDevices();
		int32		named[GJ_MAX_DEVICES];
		int			nnamed;

		(void) ParseDevices(gpujoin_devices, named, &nnamed);
		if (nnamed == 0)
		{
			for (int d = 0; d < count && d < GJ_MAX_DEVICES; d++)
				physical[nphysical++] = d;
		}
		for (int i = 0; i < nnamed; i++)
		{
			if (named[i] >= count)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("gpujoin.devices names device %d, but there %s %d",
								named[i], count == 1 ? "is" : "are", count),
						 errhint("Name CUDA ordinals below %d, or set gpujoin.devices = 'all'.",
								 count)));
			physical[nphysical++] = named[i];
		}
	}
	if (nphysical == 0)
		physical[nphysical++] = 0;	/* the CPU twin, or the first GPU */

	n = Min(nphysical * gpujoin_logical_devices, GJ_MAX_DEVICES);
	for (int d = 0; d < n; d++)
		devices[d] = physical[d % nphysical];
	return n;
}

/*
 * Spread a join's spec over the devices there are (GpuJoinSpreadDevices),
 * as gpujoin.multi_device says.  auto takes the cheapest way by the cost
 * model (GpuJoinChooseSpread, from the planner's row estimates: inner_rows,
 * outer_rows, matches), which partitions an equi-join whose inner side is
 * larger than one device's budget whatever the estimates; *considered gets
 * the estimates for EXPLAIN (VERBOSE), or NULL when nothing was priced.  A
 * join whose matches must come in key order (ordered), and every join with
 * one device, keeps a spec of one device: the first one.
 */
void
GpuJoinSpreadSpec(GjJoinSpec *spec, bool ordered, double inner_rows,
				  double outer_rows, double matches, char **considered)
{
	int32		devices[GJ_MAX_DEVICES];
	int			n = GpuJoinSpreadDevices(devices);
	bool		keyless = !gj_variant_partitions(spec->variant);
	int			inner_width = 0;
	GpuJoinSpreadWay way;

	*considered = NULL;
	spec->device = devices[0];
	spec->ndevices = 0;
	spec->spread = GJ_SPREAD_BROADCAST;
	if (n < 2 || ordered || gpujoin_multi_device == GPUJOIN_MULTI_DEVICE_OFF)
		return;

	if (gpujoin_multi_device == GPUJOIN_AUTO)
	{
		double		budget = GpuJoinPlannerDeviceBudget();

		for (int c = 0; c < spec->inner_ncolumns; c++)
			inner_width += spec->inner_widths[c];
		way = GpuJoinChooseSpread(spec, inner_rows, outer_rows, matches, n,
								  budget <= 0.0 ||
								  GpuJoinInnerDeviceBytes(inner_rows, inner_width) <= budget,
								  considered);
		if (way == GPUJOIN_SPREAD_ONE)
			return;
		spec->spread = way == GPUJOIN_SPREAD_PARTITION ? GJ_SPREAD_PARTITION : GJ_SPREAD_BROADCAST;
	}
	else
		spec->spread = (uint8) gpujoin_multi_device;
	spec->ndevices = n;
	memcpy(spec->devices, devices, sizeof(int32) * n);
	spec->device = 0;
	if (keyless)
		spec->spread = GJ_SPREAD_BROADCAST;
	/* gpujoin.inject_fault: the last device fails its first count */
	if (gpujoin_inject_fault == GPUJOIN_FAULT_DEVICE_COUNT ||
		gpujoin_inject_fault == GPUJOIN_FAULT_DEVICE_COUNT_OOM)
	{
		spec->fault_device = (uint8) n;
		spec->fault_status = (int8) (gpujoin_inject_fault == GPUJOIN_FAULT_DEVICE_COUNT ?
									 GJ_ERROR_KERNEL : GJ_ERROR_DEVICE_MEMORY);
	}
}

/*
 * The Spread line of EXPLAIN: how a spec spreads, over which devices of
 * the kernels (NULL: what a join would use now); NULL for one device
 */
const char *
GpuJoinDescribeSpread(const GjJoinSpec *spec, const GjKernels *kernels)
{
	StringInfoData buf;
	bool		cpu;

	if (spec->ndevices < 2)
		return NULL;
	cpu = kernels != NULL ? GpuJoinIsCpuTwin(kernels) :
		(gpujoin_device == GPUJOIN_DEVICE_CPU || !PlannerSeesDevice());
	initStringInfo(&buf);
	appendStringInfo(&buf, "%s over %d %sdevices (",
					 spec->spread == GJ_SPREAD_PARTITION ? "partitioned by key" : "broadcast",
					 spec->ndevices, gpujoin_logical_devices > 1 ? "logical " : "");
	if (cpu)
		appendStringInfoString(&buf, "CPU");
	else
	{
		for (int d = 0; d < spec->ndevices; d++)
			appendStringInfo(&buf, "%sGPU %d", d > 0 ? ", " : "", spec->devices[d]);
	}
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * SQLSTATE for a kernel status
 */
int
GpuJoinStatusToSqlState(GjStatus status)
{
	switch (status)
	{
		case GJ_OK:
			return ERRCODE_SUCCESSFUL_COMPLETION;
		case GJ_ERROR_NO_DEVICE:
			return ERRCODE_FEATURE_NOT_SUPPORTED;
		case GJ_ERROR_DEVICE_MEMORY:
		case GJ_ERROR_HOST_MEMORY:
			return ERRCODE_OUT_OF_MEMORY;
		case GJ_ERROR_INVALID_ARGUMENT:
		case GJ_ERROR_PAGES_GONE:	/* the scan reads them (exec_heap.c) */
			return ERRCODE_INTERNAL_ERROR;
		case GJ_ERROR_KERNEL:
			return ERRCODE_SYSTEM_ERROR;
	}
	return ERRCODE_INTERNAL_ERROR;
}

/*
 * Turn a failed kernel call into an ERROR; "what" is the primary message
 */
void
GpuJoinCheckStatus(GjStatus status, const GjError *err, const char *what)
{
	if (status == GJ_OK)
		return;

	ereport(ERROR,
			(errcode(GpuJoinStatusToSqlState(status)),
			 errmsg("%s", what),
			 err->cuda_error[0] != '\0' ?
			 errdetail("%s (%s)", err->message, err->cuda_error) :
			 errdetail("%s", err->message),
			 (status == GJ_ERROR_KERNEL || status == GJ_ERROR_NO_DEVICE) ?
			 errhint("Set gpujoin.device = 'cpu' to run joins without the GPU.") : 0));
}

/*
 * Reset callback: destroy a context the executor did not get to close
 */
static void
DeviceContextCallback(void *arg)
{
	GpuJoinDeviceContext *dev = (GpuJoinDeviceContext *) arg;

	if (dev->ctx != NULL)
	{
		dev->kernels->context_destroy(dev->ctx);
		dev->ctx = NULL;
	}
}

/*
 * Arm dev: no context yet, cleanup tied to the memory context "owner"
 */
void
GpuJoinDeviceInit(GpuJoinDeviceContext *dev, MemoryContext owner)
{
	memset(dev, 0, sizeof(*dev));
	dev->callback.func = DeviceContextCallback;
	dev->callback.arg = dev;
	MemoryContextRegisterResetCallback(owner, &dev->callback);
}

/*
 * gpujoin.inject_fault: turn a successful device step into the failure the
 * setting names, as the kernels would report it, so that the error paths
 * run in tests on any machine.  An out-of-memory fault applies to the
 * context a join chose, GPU or CPU twin, and not to the CPU twin's context
 * that takes over after it (on_fallback): so the fall-back path runs
 * without a GPU too, and ends.  retrieve_oom fails a retrieve that is not
 * its chunk's first (mid_chunk): the fall back then resumes mid-chunk.
 */
GjStatus
GpuJoinInjectFault(GpuJoinFault step, bool on_fallback, GjStatus status,
				   GjError *err, bool mid_chunk)
{
	static const char *const names[] = {
		[GPUJOIN_FAULT_CREATE] = "creating the device context",
		[GPUJOIN_FAULT_BUILD] = "the build",
		[GPUJOIN_FAULT_COUNT] = "the count",
		[GPUJOIN_FAULT_RETRIEVE] = "the retrieve",
		[GPUJOIN_FAULT_SHARED_COUNT] = "the count on a shared build",
	};
	GpuJoinFault fault = (GpuJoinFault) gpujoin_inject_fault;
	bool		oom;

	if (fault == GPUJOIN_FAULT_SHARE_PACE_RETRIEVE_OOM)
		fault = GPUJOIN_FAULT_RETRIEVE_OOM;	/* (and the shares paced: exec_heap.c) */

	if (step == GPUJOIN_FAULT_SHARED_COUNT && fault != GPUJOIN_FAULT_SHARED_COUNT_OOM)
		step = GPUJOIN_FAULT_COUNT; /* a count like any other */
	oom = (fault == GPUJOIN_FAULT_SHARED_COUNT_OOM && step == GPUJOIN_FAULT_SHARED_COUNT) ||
		(fault == GPUJOIN_FAULT_BUILD_OOM && step == GPUJOIN_FAULT_BUILD) ||
		(fault == GPUJOIN_FAULT_COUNT_OOM && step == GPUJOIN_FAULT_COUNT) ||
		(fault == GPUJOIN_FAULT_RETRIEVE_OOM && step == GPUJOIN_FAULT_RETRIEVE && mid_chunk);

	if (status != GJ_OK || (fault != step && !oom))
		return status;
	if (oom && on_fallback)
		return status;

	err->status = oom ? GJ_ERROR_DEVICE_MEMORY : GJ_ERROR_KERNEL;
	strlcpy(err->cuda_error, oom ? "cudaErrorMemoryAllocation (injected)" :
			"cudaErrorLaunchFailure (injected)", sizeof(err->cuda_error));
	snprintf(err->message, sizeof(err->message),
			 "gpujoin.inject_fault made %s fail.", names[step]);
	return err->status;
}

/*
 * Create a context on the given kernels for the join spec describes;
 * reports ERROR on failure.  The memory limit is the setting's, now.
 */
void
GpuJoinDeviceOpen(GpuJoinDeviceContext *dev, const GjKernels *kernels,
				  const GjJoinSpec *spec)
{
	GjJoinSpec	local = *spec;
	GjError		err;
	GjStatus	status;

	Assert(dev->ctx == NULL);
	local.memory_limit = DeviceMemoryLimitBytes();
	memset(&err, 0, sizeof(err));
	/* a spread spec runs on the spread table of local kernels; the
	 * service spreads it itself */
	if (local.ndevices > 1 && gj_spread_kernels(kernels) != NULL)
		kernels = gj_spread_kernels(kernels);
	dev->kernels = kernels;
	status = kernels->context_create(&dev->ctx, &local, &err);
	status = GpuJoinInjectFault(GPUJOIN_FAULT_CREATE, false, status, &err, false);
	if (status != GJ_OK && dev->ctx != NULL)
		kernels->context_destroy(dev->ctx);	/* an injected failure */
	if (status != GJ_OK)
		dev->ctx = NULL;
	GpuJoinCheckStatus(status, &err, "could not create a device context for a GPU join");
}

/*
 * Destroy the context, keeping its counters for EXPLAIN ANALYZE
 */
void
GpuJoinDeviceClose(GpuJoinDeviceContext *dev)
{
	if (dev->ctx != NULL)
	{
		GjStats		stats;

		dev->kernels->context_stats(dev->ctx, &stats);
		GpuJoinAddStats(&dev->closed, &stats);
		dev->kernels->context_destroy(dev->ctx);
		dev->ctx = NULL;
	}
}

/*
 * Counters of every context dev has had, the open one included
 */
void
GpuJoinDeviceStats(const GpuJoinDeviceContext *dev, GjStats *stats)
{
	*stats = dev->closed;
	if (dev->ctx != NULL)
	{
		GjStats		live;

		dev->kernels->context_stats(dev->ctx, &live);
		GpuJoinAddStats(stats, &live);
	}
}

/*
 * Add one context's (or process's) counters to a sum: bytes and times add
 * up, the peak is the largest, and the detail is the last one given
 */
void
GpuJoinAddStats(GjStats *sum, const GjStats *add)
{
	sum->bytes_to_device += add->bytes_to_device;
	sum->bytes_from_device += add->bytes_from_device;
	sum->transfer_ms += add->transfer_ms;
	sum->build_ms += add->build_ms;
	sum->probe_ms += add->probe_ms;
	sum->materialize_ms += add->materialize_ms;
	sum->device_memory_peak = Max(sum->device_memory_peak, add->device_memory_peak);
	sum->ndevices = Max(sum->ndevices, add->ndevices);
	for (int d = 0; d < GJ_MAX_DEVICES; d++)
	{
		sum->device_rows[d] += add->device_rows[d];
		sum->device_matches[d] += add->device_matches[d];
	}
	sum->bytes_exchanged += add->bytes_exchanged;
	if (add->detail[0] != '\0')
		memcpy(sum->detail, add->detail, sizeof(add->detail));
}

/*
 * gpujoin_device_info()
 *		The device joins use in this backend, or a row saying there is none
 */
Datum
gpujoin_device_info(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[13];
	bool		nulls[13];
	const GjKernels *kernels;
	char	   *service_state;
	int64		service_requests;
	int64		service_contexts;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);

	memset(nulls, true, sizeof(nulls));
	kernels = (gpujoin_device == GPUJOIN_DEVICE_CPU || !ProbeCuda()) ?
		&gj_cpu_kernels : NULL;

#ifdef GPUJOIN_WITH_CUDA
	if (kernels == NULL)
	{
		GjDeviceInfo info;
		GjError		err;
		GjStatus	status = GJ_OK;

		memset(&info, 0, sizeof(info));
		memset(&err, 0, sizeof(err));
		/* with the service, its device: this backend opens none */
		if (GpuJoinServiceInUse())
		{
			/* not running (restarting): the row below says so */
			if (GpuJoinServiceProbe(&info, cuda_probe_message,
									sizeof(cuda_probe_message)) <= 0)
				kernels = &gj_cpu_kernels;
		}
		else
		{
			status = gj_cuda_device_info(0, &info, &err);
			GpuJoinCheckStatus(status, &err, "could not read the GPU's properties");
		}
		if (kernels == NULL)
		{
			values[0] = Int32GetDatum(info.device);
			values[1] = CStringGetTextDatum(info.name);
			values[2] = Int64GetDatum(info.total_memory);
			values[3] = Int64GetDatum(info.free_memory);
			values[4] = CStringGetTextDatum(psprintf("%d.%d", info.cc_major, info.cc_minor));
			values[5] = Int32GetDatum(info.multiprocessors);
			values[6] = CStringGetTextDatum(psprintf("%d.%d", info.driver_version / 1000,
													 (info.driver_version % 1000) / 10));
			values[7] = CStringGetTextDatum(psprintf("%d.%d", info.runtime_version / 1000,
													 (info.runtime_version % 1000) / 10));
			values[8] = CStringGetTextDatum(gj_cuda_kernels.name);
			memset(nulls, false, 9 * sizeof(bool));
			kernels = &gj_cuda_kernels;
		}
	}
#endif

	if (kernels == &gj_cpu_kernels)
	{
		/* one row saying why there is no GPU, and what runs instead */
		values[1] = CStringGetTextDatum(gpujoin_device == GPUJOIN_DEVICE_CPU ?
										"no GPU: gpujoin.device is cpu" :
										psprintf("no GPU: %s", cuda_probe_message));
		nulls[1] = false;
		/* with gpujoin.device = gpu, joins fail instead of using the CPU twin */
		if (gpujoin_device != GPUJOIN_DEVICE_GPU)
		{
			values[8] = CStringGetTextDatum(gj_cpu_kernels.name);
			nulls[8] = false;
		}
	}

	/* the backends that hold the GPU now, where the slots are kept */
	nulls[9] = (gj_shared == NULL);
	if (gj_shared != NULL)
	{
		SpinLockAcquire(&gj_shared->mutex);
		values[9] = Int32GetDatum(gj_shared->gpu_backends);
		SpinLockRelease(&gj_shared->mutex);
	}

	/* the gpujoin service: its state, requests served, contexts open */
	GpuJoinServiceState(&service_state, &service_requests, &service_contexts);
	values[10] = CStringGetTextDatum(service_state);
	nulls[10] = false;
	if (gj_service != NULL)
	{
		values[11] = Int64GetDatum(service_requests);
		values[12] = Int64GetDatum(service_contexts);
		nulls[11] = nulls[12] = false;
	}

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}
