/*-------------------------------------------------------------------------
 *
 * heap_deform.cu
 *	  The heap deform on the device: copied heap pages in, a join side's
 *	  column arrays and packed keys out
 *
 * One call ships what the tuples first .. first + n - 1 need (the plan,
 * their byte offsets, the pages: queued on the stream with no wait, at the
 * bus's speed when the caller staged them in GjKernels.stage_alloc's
 * page-locked memory), runs gj_heap_deform_row (heap_deform.h) in one
 * thread per tuple, and copies the rows back into the caller's arrays: the
 * values and keys always, the NULL flags of a column or of the keys only
 * when one was set (the caller's are zero).  The rows come back
 * to host memory because the join's build and count take host batches
 * today; the pages are what crosses the bus, not per-row executor work.
 *
 * The device arrays are two of the context's shared buffers: the input
 * (plan, attributes, offsets, pages) and the output (what the tuples
 * found, the NULL flags, the keys, the values), each laid out in one
 * allocation, grown as needed and reused by the next call.
 *
 * IDENTIFICATION
 *	  cuda/scan/heap_deform.cu
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>

#include "common.cuh"
#include "heap_deform.h"

/* What the tuples of one call found, at the start of the output buffer */
typedef struct DeformFound
{
	unsigned int null_columns;	/* bits of GjDeformFound.null_columns */
	int			bad_attno;		/* the highest GjDeformFound.bad_attno */
	unsigned long long key_nulls;	/* rows with a NULL key */
} DeformFound;

/* Offsets in a buffer, each array aligned to 8 bytes */
static size_t
Align8(size_t off)
{
	return (off + 7) & ~(size_t) 7;
}

__global__ void __launch_bounds__(GJ_BLOCK_SIZE)
heap_deform_kernel(const GjDeformPlan *__restrict__ plan,
				   const GjDeformAttr *__restrict__ attrs,
				   const char *__restrict__ pages,
				   const uint32_t *__restrict__ tuples, int64_t n,
				   const __grid_constant__ GjDeformRows rows,
				   DeformFound *__restrict__ found)
{
	for (int64_t i = gj_thread_index(); i < n; i += gj_grid_stride())
	{
		GjDeformFound f;

		gj_heap_deform_row(plan, attrs, pages + tuples[i], i, &rows, &f);
		if (f.null_columns != 0)
			atomicOr(&found->null_columns, f.null_columns);
		if (f.bad_attno > 0)
			atomicMax(&found->bad_attno, f.bad_attno);
		if (f.keynull)
			atomicAdd(&found->key_nulls, 1ULL);
	}
}

/*
 * Ship plan and tuples first .. first + n - 1, deform them on the device,
 * and bring the rows back into out
 */
static GjStatus
Deform(GjCudaContext *ctx, const GjPageBatch *pages, const GjDeformPlan *plan,
	   const GjDeformAttr *attrs, int64_t first, int64_t n, GjDeformOut *out,
	   GjError *err)
{
	size_t		attrs_bytes = sizeof(GjDeformAttr) * (size_t) plan->natts;
	size_t		attrs_off = Align8(sizeof(GjDeformPlan));
	size_t		tuples_off = Align8(attrs_off + attrs_bytes);
	size_t		pages_off = Align8(tuples_off + sizeof(uint32_t) * (size_t) n);
	size_t		input_bytes = pages_off + (size_t) pages->bytes;
	size_t		flags_off = Align8(sizeof(DeformFound));
	size_t		flags_bytes = (size_t) n * (plan->ncolumns + 1);
	size_t		output_bytes;
	size_t		off;
	char	   *input;
	char	   *output;
	GjDeformRows rows;
	DeformFound found;

	/* the output: found, the NULL flags (columns, then keys), keys, values */
	off = Align8(flags_off + flags_bytes);
	memset(&rows, 0, sizeof(rows));
	output_bytes = off + (plan->nkeys > 0 ? sizeof(uint64_t) * (size_t) n : 0);
	for (int c = 0; c < plan->ncolumns; c++)
		output_bytes = Align8(output_bytes + (size_t) plan->column_widths[c] * n);

	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_SCAN_INPUT, input_bytes, err));
	GJ_TRY(gj_cuda_buffer_reserve(ctx, GJ_BUFFER_SCAN_OUTPUT, output_bytes, err));
	input = GJ_BUFFER(ctx, GJ_BUFFER_SCAN_INPUT, char);
	output = GJ_BUFFER(ctx, GJ_BUFFER_SCAN_OUTPUT, char);

	for (int c = 0; c < plan->ncolumns; c++)
		rows.nulls[c] = (uint8_t *) output + flags_off + (size_t) c * n;
	rows.keynulls = (uint8_t *) output + flags_off + (size_t) plan->ncolumns * n;
	if (plan->nkeys > 0)
	{
		rows.keys = (uint64_t *) (output + off);
		off += sizeof(uint64_t) * (size_t) n;
	}
	for (int c = 0; c < plan->ncolumns; c++)
	{
		rows.values[c] = output + off;
		off = Align8(off + (size_t) plan->column_widths[c] * n);
	}

	/* queued: the copy of found below waits for them and the kernel */
	GJ_TRY(gj_cuda_copy_to_device_async(ctx, input, plan, sizeof(GjDeformPlan), err));
	GJ_TRY(gj_cuda_copy_to_device_async(ctx, input + attrs_off, attrs, attrs_bytes, err));
	GJ_TRY(gj_cuda_copy_to_device_async(ctx, input + tuples_off, pages->tuples + first,
										sizeof(uint32_t) * (size_t) n, err));
	GJ_TRY(gj_cuda_copy_to_device_async(ctx, input + pages_off, pages->pages,
										(size_t) pages->bytes, err));
	GJ_CUDA_TRY(err, cudaMemsetAsync(output, 0, flags_off + flags_bytes, ctx->stream));

	heap_deform_kernel<<<gj_cuda_grid_size(ctx, n), GJ_BLOCK_SIZE, 0, ctx->stream>>>
		((const GjDeformPlan *) input, (const GjDeformAttr *) (input + attrs_off),
		 input + pages_off, (const uint32_t *) (input + tuples_off), n, rows,
		 (DeformFound *) output);
	GJ_CUDA_TRY(err, cudaGetLastError());

	GJ_TRY(gj_cuda_copy_from_device(ctx, &found, output, sizeof(found), err));
	if (found.bad_attno > 0)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"heap deform: a TOAST pointer of an unknown tag in attribute %d.",
							found.bad_attno);

	if (plan->nkeys > 0)
	{
		GJ_TRY(gj_cuda_copy_from_device(ctx, out->keys, rows.keys,
										sizeof(uint64_t) * (size_t) n, err));
		if (found.key_nulls > 0)
			GJ_TRY(gj_cuda_copy_from_device(ctx, out->keynulls, rows.keynulls,
											(size_t) n, err));
	}
	for (int c = 0; c < plan->ncolumns; c++)
	{
		GJ_TRY(gj_cuda_copy_from_device(ctx, out->values[c], rows.values[c],
										(size_t) plan->column_widths[c] * n, err));
		if (found.null_columns & (1U << c))
			GJ_TRY(gj_cuda_copy_from_device(ctx, out->nulls[c], rows.nulls[c],
											(size_t) n, err));
	}
	out->null_columns = found.null_columns;
	out->key_nulls = (int64_t) found.key_nulls;
	return GJ_OK;
}

GjStatus
gj_cuda_heap_deform(GjContext *gctx, const GjPageBatch *pages, const GjDeformSpec *spec,
					int64_t first, int64_t n, GjDeformOut *out, GjError *err)
{
	GjCudaContext *ctx = gj_cuda_context_get(gctx, err);
	GjDeformPlan plan;
	GjDeformAttr *attrs;
	GjStatus	status;

	if (ctx == NULL)
		return err->status;
	GJ_TRY(gj_heap_deform_prepare(pages, spec, first, n, &plan, &attrs, err));
	out->null_columns = 0;
	out->key_nulls = 0;
	status = n > 0 ? Deform(ctx, pages, &plan, attrs, first, n, out, err) : GJ_OK;
	free(attrs);
	return status;
}
