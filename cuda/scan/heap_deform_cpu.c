/*-------------------------------------------------------------------------
 *
 * heap_deform_cpu.c
 *	  CPU twin of the heap deform: PostgreSQL heap tuples, in pages copied
 *	  or in place, into a join side's column arrays and packed keys
 *
 * The specification of the deform (gpujoin_kernels.h, HEAP PAGES TO
 * COLUMNS): the spec checked and planned once a call, then each tuple's
 * step, gj_heap_deform_row (heap_deform.h, which describes the tuple
 * format), which heap_deform.cu runs in one thread per tuple.
 *
 * IDENTIFICATION
 *	  cuda/scan/heap_deform_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "gpujoin_kernels.h"
#include "heap_deform.h"

/*
 * The twin's kept pages (page_cache.h), in host memory: made by the
 * process's first call with GjPageBatch.cache_bytes, that size for as long
 * as the process lives (none when it cannot be had)
 */
static GjPageCache twin_cache;
static char *twin_memory;
static uint16_t *twin_items;	/* per slot, GJ_PAGE_MAX_ITEMS offsets: its
								 * tuples' places in the page */
static int32_t twin_page_size;
static bool twin_tried;
static pthread_mutex_t twin_mutex = PTHREAD_MUTEX_INITIALIZER;

static GjPageCache *
TwinCache(const GjPageBatch *pages)
{
	GjPageCache *cache = NULL;

	pthread_mutex_lock(&twin_mutex);
	if (!twin_tried)
	{
		int64_t		nslots = pages->cache_bytes / pages->page_size;

		twin_tried = true;
		twin_memory = nslots > 0 ? (char *) malloc((size_t) nslots * (size_t) pages->page_size) : NULL;
		twin_items = nslots > 0 ? (uint16_t *) malloc(sizeof(uint16_t) * (size_t) nslots *
													  GJ_PAGE_MAX_ITEMS((size_t) pages->page_size)) : NULL;
		if (twin_memory == NULL || twin_items == NULL || !gj_page_cache_init(&twin_cache, nslots))
		{
			free(twin_memory);
			free(twin_items);
			twin_memory = NULL;
			twin_items = NULL;
		}
		twin_page_size = pages->page_size;
	}
	if (twin_memory != NULL && twin_page_size == pages->page_size)
		cache = &twin_cache;
	pthread_mutex_unlock(&twin_mutex);
	return cache;
}

/* gj_cpu_kernels' pages_kept: the twin's kept pages */
GjStatus
gj_cpu_pages_kept(GjContext *ctx, const uint32_t relation[3], const uint32_t *blocks,
				  const uint64_t *lsns, int64_t n, int32_t page_size, int16_t *counts,
				  GjError *err)
{
	GjPageCache *cache;

	pthread_mutex_lock(&twin_mutex);
	cache = twin_memory != NULL && twin_page_size == page_size ? &twin_cache : NULL;
	pthread_mutex_unlock(&twin_mutex);
	gj_page_cache_probe(cache, relation, blocks, lsns, n, counts);
	return GJ_OK;
}

/*
 * Check spec and plan its deform: plan, and attrs[0 .. spec->natts - 1]
 */
static GjStatus
PlanDeform(const GjDeformSpec *spec, GjDeformPlan *plan, GjDeformAttr *attrs,
		   GjError *err)
{
	int64_t		off = 0;

	if (spec->natts < 0 || spec->natts > GJ_MAX_HEAP_ATTS ||
		spec->ncolumns < 0 || spec->ncolumns > GJ_MAX_COLUMNS ||
		spec->nkeys < 0 || spec->nkeys > GJ_MAX_KEYS)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"heap deform: %d attributes, %d columns, %d keys.",
							(int) spec->natts, (int) spec->ncolumns, (int) spec->nkeys);

	memset(plan, 0, sizeof(*plan));
	plan->layout = spec->layout;
	plan->natts = spec->natts;
	plan->ncolumns = spec->ncolumns;
	plan->nkeys = spec->nkeys;
	plan->keys_exact = spec->keys_exact;
	for (int a = 0; a < spec->natts; a++)
	{
		const GjHeapAttr *src = &spec->attrs[a];

		if (src->len == 0 || src->len < -2 ||
			(src->align != 1 && src->align != 2 && src->align != 4 && src->align != 8))
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"heap deform: attribute %d has length %d and alignment %d.",
								a + 1, (int) src->len, (int) src->align);
		attrs[a].len = src->len;
		attrs[a].align = src->align;
		attrs[a].missing_isnull = src->missing_isnull;
		attrs[a].missing_value = src->missing_value;
		attrs[a].column = -1;
		attrs[a].is_key = false;
		attrs[a].input = -1;
	}

	/* the attributes at a fixed offset in a tuple with no NULL */
	for (int a = 0; a < spec->natts && spec->attrs[a].len > 0; a++)
	{
		off = gj_heap_align(off, spec->attrs[a].align);
		if (off + spec->attrs[a].len > INT16_MAX)
			break;
		off += spec->attrs[a].len;
		plan->fixed_natts = a + 1;
	}

	for (int c = 0; c < spec->ncolumns; c++)
	{
		int			attno = spec->column_attnos[c];
		int			len = attno >= 1 && attno <= spec->natts ? spec->attrs[attno - 1].len : 0;
		int			scale = spec->column_scales != NULL ? spec->column_scales[c] : -1;

		/* a numeric of declared scale or a text word is a varlena, into 8 bytes */
		if (scale >= 0 ? (len != -1 || scale > GJ_NUMERIC_MAX_DIGITS) :
			scale == GJ_COLUMN_TEXT_WORD ? len != -1 :
			(scale != -1 || (len != 1 && len != 2 && len != 4 && len != 8)))
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"heap deform: column %d is attribute %d of %d, of length %d, scale %d.",
								c, attno, (int) spec->natts, len, scale);
		attrs[attno - 1].column = (int16_t) c;
		plan->column_attnos[c] = (int16_t) attno;
		plan->column_widths[c] = (int16_t) (scale == -1 ? len : 8);
		plan->column_scales[c] = (int8_t) scale;
		if (attno > plan->max_needed)
			plan->max_needed = attno;
	}
	for (int k = 0; k < spec->nkeys; k++)
	{
		int			attno = spec->key_attnos[k];
		int			len = attno >= 1 && attno <= spec->natts ? spec->attrs[attno - 1].len : 0;

		if ((len != 1 && len != 2 && len != 4 && len != 8) ||
			spec->key_bits[k] < 1 || spec->key_bits[k] > 64)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"heap deform: key %d is attribute %d of %d, of length %d, in %d bits.",
								k, attno, (int) spec->natts, len, (int) spec->key_bits[k]);
		attrs[attno - 1].is_key = true;
		plan->key_attnos[k] = (int16_t) attno;
		plan->key_kinds[k] = spec->key_kinds[k];
		plan->key_widths[k] = (uint8_t) len;
		plan->key_bits[k] = spec->key_bits[k];
		if (attno > plan->max_needed)
			plan->max_needed = attno;
	}

	/*
	 * the filter's inputs: attributes of a by-value width, or numerics of
	 * declared scale or text matched against constants (varlenas, read
	 * into an INT8), each once
	 */
	plan->has_filter = spec->filter != NULL;
	plan->ninputs = 0;
	if (spec->filter != NULL)
	{
		GjStatus	status = gj_expr_check(spec->filter, true, err);
		int			ntexts = 0;
		int32_t		pool_bytes = 0;

		if (status != GJ_OK)
			return status;
		plan->filter = *spec->filter;
		plan->ninputs = spec->filter->ninputs;
		for (int i = 0; i < plan->ninputs; i++)
		{
			int			attno = spec->input_attnos[i];
			int			len = attno >= 1 && attno <= spec->natts ? spec->attrs[attno - 1].len : 0;
			int			scale = spec->input_scales != NULL ? spec->input_scales[i] : -1;
			int			texts = spec->input_texts != NULL ? spec->input_texts[i] : 0;
			bool		varlena = scale >= 0 || texts > 0;

			if ((varlena ? (len != -1 || scale > GJ_NUMERIC_MAX_DIGITS || (scale >= 0 && texts > 0) ||
							plan->filter.input_types[i] != GJ_EXPR_INT8) :
				 (len != 1 && len != 2 && len != 4 && len != 8)) ||
				texts < 0 || attrs[attno - 1].input >= 0 || spec->input_kinds[i] > GJ_KEY_FLOAT8)
				return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
									"heap deform: filter input %d is attribute %d of %d, of length %d, scale %d, %d texts.",
									i, attno, (int) spec->natts, len, scale, texts);
			attrs[attno - 1].input = (int8_t) i;
			plan->input_attnos[i] = (int16_t) attno;
			plan->input_kinds[i] = spec->input_kinds[i];
			plan->input_widths[i] = (uint8_t) (varlena ? 8 : len);
			plan->input_scales[i] = (int8_t) scale;
			plan->input_text_first[i] = (int16_t) ntexts;
			plan->input_text_count[i] = (int16_t) texts;
			if (texts > GJ_DEFORM_MAX_TEXTS - ntexts)
				return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
									"heap deform: more than %d text constants.", GJ_DEFORM_MAX_TEXTS);
			for (int k = 0; k < texts; k++, ntexts++)
			{
				int32_t		from = spec->text_offsets[ntexts];
				int32_t		to = spec->text_offsets[ntexts + 1];

				if (from < 0 || to < from || to - from > GJ_DEFORM_MAX_TEXT_BYTES - pool_bytes)
					return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
										"heap deform: text constant %d is bytes %d .. %d, past the %d a filter holds.",
										ntexts, (int) from, (int) to, GJ_DEFORM_MAX_TEXT_BYTES);
				plan->text_offsets[ntexts] = pool_bytes;
				memcpy(plan->text_pool + pool_bytes, spec->text_pool + from, (size_t) (to - from));
				/* each of an input's constants above the one before (gj_heap_text_place) */
				if (k > 0 &&
					gj_text_compare(plan->text_pool + plan->text_offsets[ntexts - 1],
									pool_bytes - plan->text_offsets[ntexts - 1],
									plan->text_pool + pool_bytes, to - from) >= 0)
					return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
										"heap deform: text constant %d is not above the one before.",
										ntexts);
				pool_bytes += to - from;
			}
			plan->text_offsets[ntexts] = pool_bytes;
			if (attno > plan->max_needed)
				plan->max_needed = attno;
		}
	}

	/* where the fixed path reads each column, key and input */
	off = 0;
	for (int a = 0; a < plan->fixed_natts; a++)
	{
		off = gj_heap_align(off, spec->attrs[a].align);
		if (attrs[a].column >= 0)
			plan->fixed_off[attrs[a].column] = (int16_t) off;
		for (int k = 0; k < spec->nkeys; k++)
			if (plan->key_attnos[k] == a + 1)
				plan->key_fixed_off[k] = (int16_t) off;
		if (attrs[a].input >= 0)
			plan->input_fixed_off[attrs[a].input] = (int16_t) off;
		off += spec->attrs[a].len;
	}
	return GJ_OK;
}

/*
 * Check a call's arguments and plan its deform: plan, and *attrs, malloc'ed
 * for the caller to free (NULL on failure)
 */
GjStatus
gj_heap_deform_prepare(const GjPageBatch *pages, const GjDeformSpec *spec, int64_t first,
					   int64_t n, GjDeformPlan *plan, GjDeformAttr **attrs, GjError *err)
{
	GjStatus	status;

	*attrs = NULL;
	if (first < 0 || n < 0 || first + n > pages->ntuples || pages->bytes < 0 ||
		n > (int64_t) ~GJ_DEFORM_UNDECIDED)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"heap deform: tuples %lld + %lld of %lld.",
							(long long) first, (long long) n, (long long) pages->ntuples);
	if (pages->pages == NULL)
	{
		uint32_t	page = (uint32_t) pages->page_size;

		if (pages->page_size <= 0 || pages->bytes % pages->page_size != 0 ||
			pages->region == NULL || pages->page_index == NULL || pages->region_bytes < 0)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"heap deform: pages in place need their size, region and indexes.");
		/* the pages the call's tuples lie in, which it reads, in the region
		 * (or kept copies only, which the call finds kept or not) */
		if (n > 0)
		{
			uint32_t	last = pages->tuples[first + n - 1] / page;

			for (uint32_t p = pages->tuples[first] / page; p <= last; p++)
				if ((int64_t) p * page >= pages->bytes ||
					(!gj_heap_page_kept_only(pages, p) &&
					 ((int64_t) pages->page_index[p] + 1) * page > pages->region_bytes))
					return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
										"heap deform: page %u in place is not in its region.",
										(unsigned) p);
		}
	}
	*attrs = (GjDeformAttr *) malloc(sizeof(GjDeformAttr) * (spec->natts > 0 ? spec->natts : 1));
	if (*attrs == NULL)
		return gj_error_set(err, GJ_ERROR_HOST_MEMORY, "heap deform: out of memory.");
	status = PlanDeform(spec, plan, *attrs, err);
	if (status != GJ_OK)
	{
		free(*attrs);
		*attrs = NULL;
	}
	return status;
}

/*
 * A call's pages p0 .. p0 + npages - 1 where it reads them: with kept
 * pages, each from its slot (a page kept under the same LSN, or the page
 * copied into a slot now, with its tuples' offsets), else from the region;
 * a kept copy only (GJ_PAGE_KEPT_ONLY) with its tuples' offsets in items
 */
typedef struct KeptCall
{
	GjPageCache *cache;			/* NULL: no page kept, read in place */
	int64_t		p0;
	int64_t		npages;
	uint8_t    *use;
	int64_t    *slot;
	const char **from;
	const uint16_t **items;		/* a copy only: its tuples' offsets, else NULL */
} KeptCall;

static void
FreeKeptCall(KeptCall *kept)
{
	free(kept->use);
	free(kept->slot);
	free(kept->from);
	free(kept->items);
	memset(kept, 0, sizeof(*kept));
}

/* Whether any of the call's pages is a kept copy only */
static bool
AnyKeptOnly(const GjPageBatch *pages, int64_t first, int64_t n)
{
	uint32_t	page = (uint32_t) pages->page_size;

	if (pages->pages != NULL || pages->page_index == NULL || n == 0)
		return false;
	return gj_heap_any_kept_only(pages, pages->tuples[first] / page,
								 pages->tuples[first + n - 1] / page + 1);
}

static GjStatus
KeptPages(const GjPageBatch *pages, int64_t first, int64_t n, KeptCall *kept, GjError *err)
{
	uint32_t	page = (uint32_t) pages->page_size;
	int64_t		max_items = GJ_PAGE_MAX_ITEMS((int64_t) page);
	int64_t		p1;
	int64_t    *found = NULL;	/* the pages' starts, where the batch has none */
	const int64_t *starts;
	int16_t    *counts;
	uint8_t    *only;
	bool		gone = false;
	GjStatus	status = GJ_OK;

	memset(kept, 0, sizeof(*kept));
	if (pages->pages != NULL || pages->cache_bytes <= 0 || pages->page_lsn == NULL ||
		pages->page_block == NULL || n == 0 || (kept->cache = TwinCache(pages)) == NULL)
		return AnyKeptOnly(pages, first, n) ?
			gj_error_set(err, GJ_ERROR_PAGES_GONE, "heap deform: a page kept is gone.") : GJ_OK;
	kept->p0 = pages->tuples[first] / page;
	p1 = pages->tuples[first + n - 1] / page + 1;
	kept->npages = p1 - kept->p0;
	kept->use = (uint8_t *) malloc((size_t) kept->npages);
	kept->slot = (int64_t *) malloc(sizeof(int64_t) * (size_t) kept->npages);
	kept->from = (const char **) malloc(sizeof(char *) * (size_t) kept->npages);
	kept->items = (const uint16_t **) calloc((size_t) kept->npages, sizeof(uint16_t *));
	if (pages->page_starts == NULL)
		found = (int64_t *) malloc(sizeof(int64_t) * (size_t) (kept->npages + 1));
	counts = (int16_t *) malloc(sizeof(int16_t) * (size_t) kept->npages);
	only = (uint8_t *) malloc((size_t) kept->npages);
	if (kept->use == NULL || kept->slot == NULL || kept->from == NULL || kept->items == NULL ||
		(pages->page_starts == NULL && found == NULL) || counts == NULL || only == NULL)
	{
		FreeKeptCall(kept);
		status = gj_error_set(err, GJ_ERROR_HOST_MEMORY, "heap deform: out of memory.");
		goto done;
	}
	starts = gj_heap_page_starts(pages, kept->p0, p1, found);
	(void) gj_heap_page_kept_counts(pages, kept->p0, kept->npages, starts, counts, only);
	gj_page_cache_acquire(kept->cache, pages->relation, pages->page_block + kept->p0,
						  pages->page_lsn + kept->p0, counts, only, kept->npages, kept->use,
						  kept->slot);
	for (int64_t i = 0; i < kept->npages; i++)
		gone |= kept->use[i] == GJ_PAGE_GONE;
	if (gone)
	{
		gj_page_cache_release(kept->cache, kept->use, kept->slot, kept->npages, false);
		FreeKeptCall(kept);
		status = gj_error_set(err, GJ_ERROR_PAGES_GONE, "heap deform: a page kept is gone.");
		goto done;
	}
	for (int64_t i = 0; i < kept->npages; i++)
	{
		int64_t		s = kept->slot[i] < 0 ? 0 : kept->slot[i];
		char	   *slot = twin_memory + (size_t) s * page;
		uint16_t   *items = twin_items + (size_t) s * (size_t) max_items;

		if (kept->use[i] == GJ_PAGE_FILL)
		{
			/* the page, and where its listed tuples lie in it */
			memcpy(slot, gj_heap_page_in_place(pages, kept->p0 + i), page);
			for (int64_t k = 0; k < counts[i]; k++)
				items[k] = (uint16_t) (pages->tuples[starts[i] + k] % page);
		}
		kept->from[i] = kept->use[i] == GJ_PAGE_SHIP ?
			gj_heap_page_in_place(pages, kept->p0 + i) : slot;
		if (only[i])
			kept->items[i] = items;
	}
done:
	free(found);
	free(counts);
	free(only);
	return status;
}

/* Where the call's tuple at offset t lies */
static inline const char *
KeptTuple(const GjPageBatch *pages, const KeptCall *kept, uint32_t t)
{
	uint32_t	page = (uint32_t) pages->page_size;
	int64_t		i;

	if (kept->cache == NULL)
		return gj_heap_batch_tuple(pages, t);
	i = t / page - kept->p0;
	if (kept->items[i] != NULL)
		return kept->from[i] + kept->items[i][t % page];
	return kept->from[i] + t % page;
}

/* The call from tuple first is done with its kept pages: counted in out, let go */
static void
ReleaseKept(const GjPageBatch *pages, int64_t first, KeptCall *kept, GjDeformOut *out)
{
	if (kept->cache == NULL)
		return;
	out->pages_cached += gj_heap_pages_kept(pages, first, kept->use, kept->npages);
	gj_page_cache_release(kept->cache, kept->use, kept->slot, kept->npages, true);
	FreeKeptCall(kept);
}

/*
 * Deform tuples first .. first + n - 1 of pages into out (the context is
 * not needed on the CPU and may be NULL)
 */
GjStatus
gj_cpu_heap_deform(GjContext *ctx, const GjPageBatch *pages, const GjDeformSpec *spec,
				   int64_t first, int64_t n, GjDeformOut *out, GjError *err)
{
	GjDeformPlan plan;
	GjDeformAttr *attrs;
	GjDeformRows rows;
	GjStatus	status;
	KeptCall	kept;

	status = gj_heap_deform_prepare(pages, spec, first, n, &plan, &attrs, err);
	if (status != GJ_OK)
		return status;

	for (int c = 0; c < plan.ncolumns; c++)
	{
		rows.values[c] = out->values[c];
		rows.nulls[c] = out->nulls[c];
	}
	rows.keys = out->keys;
	rows.keynulls = out->keynulls;
	out->null_columns = 0;
	out->key_nulls = 0;
	out->nrows = 0;
	out->bytes_shipped = 0;
	out->host_numerics = 0;
	out->pages_cached = 0;
	status = KeptPages(pages, first, n, &kept, err);
	if (status != GJ_OK)
	{
		free(attrs);
		return status;
	}
	for (int64_t i = 0; i < n; i++)
	{
		GjDeformFound found;
		int64_t		row = out->nrows;
		uint32_t	t = pages->tuples[first + i];
		const char *tuple = KeptTuple(pages, &kept, t);

		/* a row the filter drops is written over by the next tuple's */
		gj_heap_deform_row(&plan, attrs, tuple, row, &rows, &found);
		if (found.bad_attno > 0)
		{
			ReleaseKept(pages, first, &kept, out);
			free(attrs);
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"heap deform: a TOAST pointer of an unknown tag in attribute %d.",
								(int) found.bad_attno);
		}
		if (found.verdict == GJ_QUAL_FAILS)
		{
			/* only the NULLs were set: clear them for the next */
			for (int c = 0; c < plan.ncolumns; c++)
				rows.nulls[c][row] = 0;
			if (plan.nkeys > 0)
				rows.keynulls[row] = 0;
			continue;
		}
		if (plan.has_filter)
			out->selected[row] = (uint32_t) i |
				(found.verdict == GJ_QUAL_UNDECIDED ? GJ_DEFORM_UNDECIDED : 0);
		out->null_columns |= found.null_columns;
		out->key_nulls += found.keynull;
		out->host_numerics += found.host_numerics;
		out->nrows++;
	}
	ReleaseKept(pages, first, &kept, out);
	free(attrs);
	return GJ_OK;
}
