/*-------------------------------------------------------------------------
 *
 * exchange_cpu.c
 *	  PARTITION's exchange in the CPU twin: each logical device partitions
 *	  its slice of a side into one run per device, and each device gathers
 *	  its runs (GjKernels.exchange_send, exchange_receive, exchange_free)
 *
 * The twin of device/exchange.cu, with host arrays for device memory and
 * memcpy for the copies between devices.  Both keep the side's order
 * within every run and every part, so that a spread join numbers its
 * matches alike on either.
 *
 * IDENTIFICATION
 *	  cuda/device/exchange_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/*
 * Rows sorted into runs: what a device sent (one run per device), or the
 * part one received (one run).  offset[t] .. offset[t + 1] - 1 is run t.
 */
typedef struct CpuRuns
{
	GjSide		side;
	int			nruns;
	int64_t		offset[GJ_MAX_DEVICES + 1];
	int			ncolumns;
	int32_t		widths[GJ_MAX_COLUMNS];
	bool		has_nulls[GJ_MAX_COLUMNS];
	uint64_t   *keys;
	GjRowId    *numbers;
	void	   *values[GJ_MAX_COLUMNS];
	uint8_t    *nulls[GJ_MAX_COLUMNS];
} CpuRuns;

static void
FreeRuns(CpuRuns *runs)
{
	if (runs == NULL)
		return;
	free(runs->keys);
	free(runs->numbers);
	for (int c = 0; c < GJ_MAX_COLUMNS; c++)
	{
		free(runs->values[c]);
		free(runs->nulls[c]);
	}
	free(runs);
}

/*
 * Runs of nrows rows in all, for a side's columns (ncolumns of widths,
 * NULL flags where has_nulls); NULL with err filled
 */
static CpuRuns *
AllocRuns(GjSide side, int ncolumns, const int32_t *widths,
		  const bool *has_nulls, int64_t nrows, GjError *err)
{
	CpuRuns    *runs = calloc(1, sizeof(CpuRuns));
	size_t		n = (size_t) (nrows > 0 ? nrows : 1);

	if (runs == NULL)
		goto oom;
	runs->side = side;
	runs->ncolumns = ncolumns;
	memcpy(runs->widths, widths, (size_t) ncolumns * sizeof(int32_t));
	runs->keys = malloc(n * sizeof(uint64_t));
	runs->numbers = malloc(n * sizeof(GjRowId));
	if (runs->keys == NULL || runs->numbers == NULL)
		goto oom;
	for (int c = 0; c < runs->ncolumns; c++)
	{
		runs->has_nulls[c] = has_nulls[c];
		if ((runs->values[c] = malloc(n * (size_t) runs->widths[c])) == NULL)
			goto oom;
		if (has_nulls[c] && (runs->nulls[c] = malloc(n)) == NULL)
			goto oom;
	}
	return runs;

oom:
	FreeRuns(runs);
	gj_error_set(err, GJ_ERROR_HOST_MEMORY,
				 "Could not allocate host memory to exchange %lld %s rows.",
				 (long long) nrows, gj_side_name(side));
	return NULL;
}

GjStatus
gj_cpu_exchange_send(GjContext *ctx, const GjBatch *batch, bool inner,
					 int64_t start, int64_t end, int ndevices,
					 GjExchange *sent, GjError *err)
{
	GjCpuContext *cpu = gj_cpu_context_get(ctx, err);
	GjSide		side = inner ? GJ_SIDE_INNER : GJ_SIDE_OUTER;
	bool		has_nulls[GJ_MAX_COLUMNS];
	int64_t		next[GJ_MAX_DEVICES];
	CpuRuns    *runs;
	uint8_t    *device;
	double		clock = gj_clock_ms();

	if (cpu == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	GJ_TRY(gj_check_exchange_send(batch, start, end, ndevices, sent, err));
	memset(sent, 0, sizeof(*sent));
	memset(has_nulls, 0, sizeof(has_nulls));
	for (int c = 0; c < gj_side_ncolumns(&cpu->spec, side); c++)
		has_nulls[c] = batch->columns[c].nulls != NULL;

	/* each row's device (UINT8_MAX: a NULL key, sent nowhere), the runs' sizes */
	device = malloc((size_t) (end - start > 0 ? end - start : 1));
	if (device == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY,
							"Could not allocate host memory to exchange %lld %s rows.",
							(long long) (end - start), gj_side_name(side));
	for (int64_t r = start; r < end; r++)
	{
		bool		null_key = batch->nulls != NULL && batch->nulls[r] != 0;

		device[r - start] = null_key ? UINT8_MAX :
			(uint8_t) gj_spread_device(batch->keys[r], ndevices);
		if (!null_key)
			sent->rows[device[r - start]]++;
	}
	runs = AllocRuns(side, gj_side_ncolumns(&cpu->spec, side),
					 gj_side_widths(&cpu->spec, side), has_nulls, end - start, err);
	if (runs == NULL)
	{
		free(device);
		return GJ_ERROR_HOST_MEMORY;
	}
	runs->nruns = ndevices;
	for (int t = 0; t < ndevices; t++)
	{
		runs->offset[t + 1] = runs->offset[t] + sent->rows[t];
		next[t] = runs->offset[t];
	}

	/* each row to the end of its run, so every run keeps the side's order */
	for (int64_t r = start; r < end; r++)
	{
		int64_t		i;

		if (device[r - start] == UINT8_MAX)
			continue;
		i = next[device[r - start]]++;
		runs->keys[i] = batch->keys[r];
		runs->numbers[i] = batch->row_numbers != NULL ? batch->row_numbers[r] : (GjRowId) r;
		for (int c = 0; c < runs->ncolumns; c++)
		{
			size_t		w = (size_t) runs->widths[c];

			memcpy((char *) runs->values[c] + i * w,
				   (const char *) batch->columns[c].values + r * w, w);
			if (runs->has_nulls[c])
				runs->nulls[c][i] = batch->columns[c].nulls[r];
		}
	}
	free(device);
	sent->ndevices = ndevices;
	sent->impl = runs;
	cpu->stats.exchange_ms += gj_clock_ms() - clock;
	return GJ_OK;
}

GjStatus
gj_cpu_exchange_receive(GjContext *ctx, const GjExchange *sent, int nsent,
						int self, GjExchange *part, GjError *err)
{
	GjCpuContext *cpu = gj_cpu_context_get(ctx, err);
	const CpuRuns *first;
	CpuRuns    *runs;
	int64_t		total = 0;
	int64_t		at = 0;
	int64_t		received = 0;
	double		clock = gj_clock_ms();
	double		ms;

	if (cpu == NULL)
		return GJ_ERROR_INVALID_ARGUMENT;
	GJ_TRY(gj_check_exchange_receive(sent, nsent, self, part, err));
	memset(part, 0, sizeof(*part));
	for (int s = 0; s < nsent; s++)
		total += sent[s].rows[self];
	first = (const CpuRuns *) sent[0].impl;
	runs = AllocRuns(first->side, first->ncolumns, first->widths,
					 first->has_nulls, total, err);
	if (runs == NULL)
		return GJ_ERROR_HOST_MEMORY;
	runs->nruns = 1;
	runs->offset[1] = total;

	/* run "self" of each send, in the senders' order */
	for (int s = 0; s < nsent; s++)
	{
		const CpuRuns *from = (const CpuRuns *) sent[s].impl;
		int64_t		off = from->offset[self];
		int64_t		n = sent[s].rows[self];

		memcpy(runs->keys + at, from->keys + off, (size_t) n * sizeof(uint64_t));
		memcpy(runs->numbers + at, from->numbers + off, (size_t) n * sizeof(GjRowId));
		for (int c = 0; c < runs->ncolumns; c++)
		{
			size_t		w = (size_t) runs->widths[c];

			memcpy((char *) runs->values[c] + at * w,
				   (const char *) from->values[c] + off * w, (size_t) n * w);
			if (runs->has_nulls[c])
				memcpy(runs->nulls[c] + at, from->nulls[c] + off, (size_t) n);
		}
		at += n;
		if (s != self)
			received += (int64_t) gj_exchange_row_bytes(runs->ncolumns, runs->widths,
														runs->has_nulls) * n;
	}
	ms = gj_clock_ms() - clock;
	cpu->stats.exchange_ms += ms;
	cpu->stats.exchange_copy_ms += ms;
	cpu->stats.bytes_received += received;

	part->impl = runs;
	part->batch.keys = runs->keys;
	part->batch.nrows = total;
	part->batch.row_numbers = runs->numbers;
	for (int c = 0; c < runs->ncolumns; c++)
	{
		part->columns[c].values = runs->values[c];
		part->columns[c].nulls = runs->has_nulls[c] ? runs->nulls[c] : NULL;
	}
	part->batch.columns = part->columns;
	return GJ_OK;
}

void
gj_cpu_exchange_free(GjExchange *x)
{
	if (x == NULL)
		return;
	FreeRuns((CpuRuns *) x->impl);
	x->impl = NULL;
}
