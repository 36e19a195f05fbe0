/*-------------------------------------------------------------------------
 *
 * heap_deform.h
 *	  One heap tuple into a join side's column arrays and packed key: the
 *	  per-tuple step that both implementations of the deform run
 *
 * The deform is a map, one tuple to one row, so unlike the joins its two
 * implementations share their per-row code: heap_deform_cpu.c loops over
 * the tuples and calls gj_heap_deform_row for each, heap_deform.cu runs it
 * in one thread per tuple.  The arrays can then only differ by how they
 * were shipped, which the kernel tests check.
 *
 * A heap tuple, as heaptuple.c lays it out (the offsets and masks come in
 * GjHeapLayout, filled by src/exec_heap.c from PostgreSQL's headers):
 *
 *	  header: ..., t_infomask2 (attributes in the tuple, in its low bits),
 *			  t_infomask (HEAP_HASNULL: a null bitmap follows), t_hoff (where
 *			  the data start), t_bits (the null bitmap: bit i - 1 clear
 *			  means attribute i is NULL)
 *	  data:   the non-NULL attributes in order, each aligned to its
 *			  attalign, except a varlena that starts with a 1-byte header,
 *			  which is not aligned (a pad byte is always 0, a 1-byte header
 *			  never is)
 *
 * So an attribute's offset depends on those before it: the deform walks
 * attributes 1 .. natts of each tuple, adding each one's size (attlen, or
 * the varlena's own header, or the C string's length), as
 * slot_deform_heap_tuple does.  A tuple written before ALTER TABLE ... ADD
 * COLUMN has fewer attributes than the relation: the rest take the value
 * the column was added with (GjHeapAttr.missing_*), as getmissingattr
 * gives it.  Dropped columns still occupy their place in old tuples and
 * are walked over like the others.
 *
 * Varlena sizes, little-endian (postgres.h's VARSIZE_ANY): a first byte of
 * 0x01 is a TOAST pointer (its size depends on the tag in the next byte;
 * on disk only the on-disk tag occurs); an odd first byte a 1-byte header
 * holding the size in its upper 7 bits; otherwise a 4-byte header holding
 * it in its upper 30 bits.
 *
 * IDENTIFICATION
 *	  cuda/scan/heap_deform.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_HEAP_DEFORM_H
#define GPUJOIN_HEAP_DEFORM_H

#include <stdint.h>
#include <string.h>

#include "gpujoin_kernels.h"
#include "expr.h"
#include "page_cache.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One attribute as the walk needs it, with what the spec asks of it */
typedef struct GjDeformAttr
{
	int16_t		len;			/* > 0: fixed; -1: varlena; -2: cstring */
	uint8_t		align;			/* 1, 2, 4 or 8 */
	bool		missing_isnull; /* GjHeapAttr's */
	int16_t		column;			/* the output column it becomes, or -1 */
	bool		is_key;			/* a key reads it */
	int8_t		input;			/* the filter's input it is, or -1 */
	uint64_t	missing_value;
} GjDeformAttr;

/*
 * A GjDeformSpec checked and turned into what every tuple's step reads,
 * of a fixed size (heap_deform.cu copies it to the device with each call,
 * its filter's program and text constants in it).  The attributes
 * themselves (natts GjDeformAttr) are a separate array, in the memory of
 * whoever runs the step.
 *
 *	fixed_natts		attributes 1 .. fixed_natts lie at fixed_off[] in
 *					every tuple that has no NULL: those before the first
 *					varlena or C string (heaptuple.c's attcacheoff)
 *	max_needed		the highest attribute a column, key or the filter reads
 *	filter			the spec's filter (has_filter), its inputs read as
 *					input_kinds[] from input_attnos[], or as numerics of
 *					scale input_scales[] (>= 0), or as text placed
 *					among constants input_text_first[] ..
 *					+ input_text_count[] - 1 (count > 0) of text_offsets[]
 *					and text_pool[]
 */
typedef struct GjDeformPlan
{
	GjHeapLayout layout;
	int32_t		natts;
	int32_t		fixed_natts;
	int32_t		max_needed;
	int32_t		ncolumns;
	int16_t		column_attnos[GJ_MAX_COLUMNS];	/* 1-based */
	int16_t		column_widths[GJ_MAX_COLUMNS];	/* 1, 2, 4 or 8 */
	int8_t		column_scales[GJ_MAX_COLUMNS];	/* a numeric's scale,
												 * GJ_COLUMN_TEXT_WORD, or -1 */
	int16_t		fixed_off[GJ_MAX_COLUMNS];	/* of each column, when
											 * column_attnos <= fixed_natts */
	int32_t		nkeys;
	int16_t		key_attnos[GJ_MAX_KEYS];
	int16_t		key_fixed_off[GJ_MAX_KEYS];
	uint8_t		key_kinds[GJ_MAX_KEYS];	/* GjKeyKind */
	uint8_t		key_widths[GJ_MAX_KEYS];
	int32_t		key_bits[GJ_MAX_KEYS];
	bool		keys_exact;
	bool		has_filter;
	int32_t		ninputs;
	int16_t		input_attnos[GJ_EXPR_MAX_INPUTS];
	int16_t		input_fixed_off[GJ_EXPR_MAX_INPUTS];
	uint8_t		input_kinds[GJ_EXPR_MAX_INPUTS];	/* GjKeyKind */
	uint8_t		input_widths[GJ_EXPR_MAX_INPUTS];
	int8_t		input_scales[GJ_EXPR_MAX_INPUTS];	/* a numeric's, or -1 */
	int16_t		input_text_first[GJ_EXPR_MAX_INPUTS];
	int16_t		input_text_count[GJ_EXPR_MAX_INPUTS];	/* 0: no text input */
	int32_t		text_offsets[GJ_DEFORM_MAX_TEXTS + 1];
	char		text_pool[GJ_DEFORM_MAX_TEXT_BYTES];
	GjExprProgram filter;
} GjDeformPlan;

/*
 * Where one call's rows go: row i of the call is row i of each array.
 * nulls[c] and keynulls are zero on entry and set to 1 for a NULL.
 */
typedef struct GjDeformRows
{
	char	   *values[GJ_MAX_COLUMNS];
	uint8_t    *nulls[GJ_MAX_COLUMNS];
	uint64_t   *keys;
	uint8_t    *keynulls;
} GjDeformRows;

/* What one tuple's step found besides its values */
typedef struct GjDeformFound
{
	uint32_t	null_columns;	/* bit c: column c is NULL */
	bool		keynull;		/* a key attribute is NULL: matches nothing */
	int32_t		bad_attno;		/* > 0: a TOAST pointer of an unknown tag in
								 * this attribute; the row is not written */
	int32_t		host_numerics;	/* numeric and text word columns left
								 * GJ_NUMERIC_ON_HOST (= GJ_TEXT_ON_HOST) */
	uint8_t		verdict;		/* the filter's GJ_QUAL_*: PASSES without one */
} GjDeformFound;

/*
 * Check a call's range of tuples and its spec, and plan it: plan, and
 * *attrs (spec->natts of them, malloc'ed: the caller frees them);
 * heap_deform_cpu.c, for both implementations
 */
extern GjStatus gj_heap_deform_prepare(const GjPageBatch *pages, const GjDeformSpec *spec,
									   int64_t first, int64_t n, GjDeformPlan *plan,
									   GjDeformAttr **attrs, GjError *err);

/* Page p of a batch in place: where it lies in the region */
static inline const char *
gj_heap_page_in_place(const GjPageBatch *pages, int64_t p)
{
	return pages->region + (size_t) pages->page_index[p] * (size_t) pages->page_size;
}

/* Whether page p of a batch in place is a kept copy only (GJ_PAGE_KEPT_ONLY) */
static inline bool
gj_heap_page_kept_only(const GjPageBatch *pages, int64_t p)
{
	return pages->page_index != NULL && pages->page_index[p] == GJ_PAGE_KEPT_ONLY;
}

/* Whether any of pages p0 .. p1 - 1 of a batch is a kept copy only */
static inline bool
gj_heap_any_kept_only(const GjPageBatch *pages, int64_t p0, int64_t p1)
{
	for (int64_t p = p0; p < p1; p++)
		if (gj_heap_page_kept_only(pages, p))
			return true;
	return false;
}

/*
 * The first of tuples lo .. hi - 1 of a batch (sorted by offset) whose
 * offset is at least off, or hi
 */
static inline int64_t
gj_heap_tuple_at(const GjPageBatch *pages, int64_t lo, int64_t hi, uint64_t off)
{
	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (pages->tuples[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Where the tuples of pages p0 .. p1 - 1 lie in the batch's list (sorted by
 * offset): page p0 + i's are starts[i] .. starts[i + 1] - 1 (p1 - p0 + 1
 * entries), whichever tuples of the batch a call takes. The batch's own
 * page_starts when it has them (found needs no room then: NULL will do);
 * else written into found, by doubling steps from each page's start, then
 * halving (a few dozen reads a page, not one and a division per tuple)
 */
static inline const int64_t *
gj_heap_page_starts(const GjPageBatch *pages, int64_t p0, int64_t p1, int64_t *found)
{
	uint64_t	page = (uint64_t) pages->page_size;
	int64_t		n = pages->ntuples;
	int64_t		lo;

	if (pages->page_starts != NULL)
		return pages->page_starts + p0;
	lo = gj_heap_tuple_at(pages, 0, n, (uint64_t) p0 * page);
	for (int64_t p = p0; p < p1; p++)
	{
		uint64_t	end = (uint64_t) (p + 1) * page;
		int64_t		step = 1;
		int64_t		hi = lo;

		found[p - p0] = lo;
		/* past the page's tuples: the first at or beyond end lies in hi's range */
		while (hi < n && pages->tuples[hi] < end)
		{
			lo = hi + 1;
			hi = hi + step < n ? hi + step : n;
			step *= 2;
		}
		lo = gj_heap_tuple_at(pages, lo, hi, end);
	}
	found[p1 - p0] = lo;
	return found;
}

/*
 * Pages p0 .. p0 + npages - 1 of a batch as the page cache takes them
 * (gj_page_cache_acquire), from their tuples' starts (gj_heap_page_starts):
 * counts[i] the tuples listed (-1 where more than a slot's list holds: not
 * kept), only[i] whether it is a kept copy only; the kept copies only
 */
static inline int64_t
gj_heap_page_kept_counts(const GjPageBatch *pages, int64_t p0, int64_t npages,
						 const int64_t *starts, int16_t *counts, uint8_t *only)
{
	int64_t		nonly = 0;

	for (int64_t i = 0; i < npages; i++)
	{
		int64_t		n = starts[i + 1] - starts[i];

		counts[i] = n > GJ_PAGE_MAX_ITEMS(pages->page_size) ? -1 : (int16_t) n;
		only[i] = gj_heap_page_kept_only(pages, p0 + i);
		nonly += only[i];
	}
	return nonly;
}

/*
 * The pages a call from tuple first read from kept copies, by its uses
 * (page_cache.h, one per page from the page of tuple first): its first
 * page counted only where the call starts it, not where the call before
 * read tuples of the same page (a page two calls share counts once)
 */
static inline int64_t
gj_heap_pages_kept(const GjPageBatch *pages, int64_t first, const uint8_t *use, int64_t npages)
{
	uint32_t	page = (uint32_t) pages->page_size;
	int64_t		kept = 0;

	for (int64_t i = first > 0 && pages->tuples[first - 1] / page == pages->tuples[first] / page;
		 i < npages; i++)
		kept += use[i] == GJ_PAGE_HIT;
	return kept;
}

/*
 * The bytes of a batch's tuple at offset t (GjPageBatch.tuples): in the
 * copied pages, or in place in the region (on the host: the CPU twin, and
 * heap_deform.cu's copy where it cannot read the region from the device)
 */
static inline const char *
gj_heap_batch_tuple(const GjPageBatch *pages, uint32_t t)
{
	uint32_t	page = (uint32_t) pages->page_size;

	if (pages->pages != NULL)
		return pages->pages + t;
	return gj_heap_page_in_place(pages, t / page) + t % page;
}

/* A little-endian value of len (1, 2, 4 or 8) bytes, at any alignment */
static inline GJ_HOST_DEVICE uint64_t
gj_heap_load(const char *p, int len)
{
	uint64_t	v = 0;

#ifdef __CUDA_ARCH__
	for (int b = 0; b < len; b++)
		v |= (uint64_t) (uint8_t) p[b] << (8 * b);
#else
	memcpy(&v, p, (size_t) len);
#endif
	return v;
}

/* Store the low width bytes of v at row of an array of that width */
static inline GJ_HOST_DEVICE void
gj_heap_store(char *array, int64_t row, int width, uint64_t v)
{
	switch (width)
	{
		case 1:
			((uint8_t *) array)[row] = (uint8_t) v;
			break;
		case 2:
			((uint16_t *) array)[row] = (uint16_t) v;
			break;
		case 4:
			((uint32_t *) array)[row] = (uint32_t) v;
			break;
		default:
			((uint64_t *) array)[row] = v;
			break;
	}
}

/*
 * The signed key value of an attribute's bytes (GjKeyKind): its value
 * (gj_expr_input_of, expr.h) in the order the join's keys compare
 */
static inline GJ_HOST_DEVICE int64_t
gj_heap_key_of(uint64_t bytes, int len, GjKeyKind kind)
{
	GjExprDatum d = gj_expr_input_of(bytes, len, kind);

	switch (kind)
	{
		case GJ_KEY_OID:
			return d.v.i - ((int64_t) 1 << 31);	/* keeping the order */
		case GJ_KEY_FLOAT4:
		case GJ_KEY_FLOAT8:
			return gj_float_key(d.v.f);
		default:
			return d.v.i;		/* SIGNED, sign-extended; BOOL, 0 or 1 */
	}
}

/* The size of the varlena at p, or -1 for a TOAST pointer of an unknown tag */
static inline GJ_HOST_DEVICE int64_t
gj_heap_varlena_size(const GjHeapLayout *layout, const uint8_t *p)
{
	if (p[0] == 0x01)
		return p[1] == layout->external_tag ? layout->external_size : -1;
	if (p[0] & 0x01)
		return (p[0] >> 1) & 0x7F;
	return (int64_t) ((gj_heap_load((const char *) p, 4) >> 2) & 0x3FFFFFFF);
}

static inline GJ_HOST_DEVICE int64_t
gj_heap_align(int64_t off, int align)
{
	return (off + align - 1) & ~((int64_t) align - 1);
}

/*
 * The bytes of the varlena of size bytes at p, past its 1- or 4-byte
 * header, in *data and *len; false where they are not here to read (p NULL:
 * a value ALTER TABLE ... ADD COLUMN gave; a TOAST pointer; compressed)
 */
static inline GJ_HOST_DEVICE bool
gj_heap_varlena_bytes(const char *p, int64_t size, const char **data, int64_t *len)
{
	const uint8_t *v = (const uint8_t *) p;
	int			header;

	if (v == NULL || v[0] == 0x01)
		return false;
	if (v[0] & 0x01)
		header = 1;
	else if ((v[0] & 0x03) == 0x00)
		header = 4;
	else
		return false;
	*data = p + header;
	*len = size - header;
	return true;
}

/*
 * The value of a numeric column of declared scale: the varlena of size
 * bytes at p times 10^scale, NaN as INT64_MAX, or GJ_NUMERIC_ON_HOST where
 * only the host can say (a value gj_heap_varlena_bytes cannot read, an
 * infinity, a value not exact at the scale: the host raises the error a
 * join on the host would)
 */
static inline GJ_HOST_DEVICE int64_t
gj_heap_numeric(const char *p, int64_t size, int scale)
{
	const char *data;
	int64_t		len;
	int64_t		result = GJ_NUMERIC_ON_HOST;

	if (!gj_heap_varlena_bytes(p, size, &data, &len))
		return GJ_NUMERIC_ON_HOST;
	switch (gj_numeric_scaled((const uint8_t *) data, (int) len, scale, &result))
	{
		case GJ_SCALED_VALUE:
			return result;
		case GJ_SCALED_NAN:
			return INT64_MAX;
		default:
			return GJ_NUMERIC_ON_HOST;
	}
}

/*
 * A text attribute's value at p (size bytes with its varlena header) as a
 * column of GJ_COLUMN_TEXT_WORD: its gj_text_word, or GJ_TEXT_ON_HOST
 * where the value is longer or gj_heap_varlena_bytes cannot read it
 */
static inline GJ_HOST_DEVICE int64_t
gj_heap_text_word(const char *p, int64_t size)
{
	const char *data;
	int64_t		len;

	if (!gj_heap_varlena_bytes(p, size, &data, &len))
		return GJ_TEXT_ON_HOST;
	return gj_text_word(data, len);
}

/*
 * A text attribute's value at p (size bytes with its varlena header) as
 * filter input i reads it: its place among the input's constants, which
 * are in gj_text_compare's order (GjDeformSpec: 2k where it is constant k,
 * 2k - 1 below constant k and above those before, 2n + 1 above all n),
 * GJ_TEXT_ON_HOST where gj_heap_varlena_bytes cannot read it
 */
static inline GJ_HOST_DEVICE int64_t
gj_heap_text_place(const GjDeformPlan *plan, int i, const char *p, int64_t size)
{
	const char *data;
	int64_t		len;
	int			n = plan->input_text_count[i];

	if (!gj_heap_varlena_bytes(p, size, &data, &len))
		return GJ_TEXT_ON_HOST;
	for (int k = 0; k < n; k++)
	{
		int			j = plan->input_text_first[i] + k;
		int			cmp = gj_text_compare(data, len, plan->text_pool + plan->text_offsets[j],
										  plan->text_offsets[j + 1] - plan->text_offsets[j]);

		if (cmp <= 0)
			return 2 * (k + 1) + (cmp < 0 ? -1 : 0);
	}
	return 2 * n + 1;
}

/*
 * Deform the tuple at tup into row row of out; what it found besides the
 * values in *found
 */
static inline GJ_HOST_DEVICE void
gj_heap_deform_row(const GjDeformPlan *plan, const GjDeformAttr *attrs,
				   const char *tup, int64_t row, const GjDeformRows *out,
				   GjDeformFound *found)
{
	const GjHeapLayout *layout = &plan->layout;
	int			tuple_natts = (int) (gj_heap_load(tup + layout->infomask2_offset, 2) &
									 layout->natts_mask);
	bool		hasnull = (gj_heap_load(tup + layout->infomask_offset, 2) &
						   layout->hasnull_flag) != 0;
	const uint8_t *bits = (const uint8_t *) tup + layout->bits_offset;
	const char *data = tup + (uint8_t) tup[layout->hoff_offset];
	int64_t		keyvals[GJ_MAX_KEYS];
	GjExprDatum inputs[GJ_EXPR_MAX_INPUTS];
	int64_t		off = 0;

	found->null_columns = 0;
	found->keynull = false;
	found->bad_attno = 0;
	found->host_numerics = 0;
	found->verdict = GJ_QUAL_PASSES;

	/*
	 * No NULL, every needed attribute in the tuple and at a fixed offset:
	 * read them there (the walk below gives the same values)
	 */
	if (!hasnull && tuple_natts >= plan->max_needed && plan->max_needed <= plan->fixed_natts)
	{
		for (int c = 0; c < plan->ncolumns; c++)
			gj_heap_store(out->values[c], row, plan->column_widths[c],
						  gj_heap_load(data + plan->fixed_off[c], plan->column_widths[c]));
		if (plan->nkeys > 0)
		{
			for (int k = 0; k < plan->nkeys; k++)
				keyvals[k] = gj_heap_key_of(gj_heap_load(data + plan->key_fixed_off[k],
														 plan->key_widths[k]),
											plan->key_widths[k],
											(GjKeyKind) plan->key_kinds[k]);
			out->keys[row] = gj_pack_keys(keyvals, plan->key_bits, plan->nkeys,
										  plan->keys_exact);
		}
		if (plan->has_filter)
		{
			for (int i = 0; i < plan->ninputs; i++)
				inputs[i] = gj_expr_input_of(gj_heap_load(data + plan->input_fixed_off[i],
														  plan->input_widths[i]),
											 plan->input_widths[i],
											 (GjKeyKind) plan->input_kinds[i]);
			found->verdict = (uint8_t) gj_expr_qual(&plan->filter, inputs);
		}
		return;
	}

	for (int a = 0; a < plan->natts && a < plan->max_needed; a++)
	{
		const GjDeformAttr *attr = &attrs[a];
		bool		isnull;
		uint64_t	bytes = 0;
		const char *p = NULL;
		int64_t		size = 0;

		if (a >= tuple_natts)
		{
			/* not in this tuple: the value the column was added with */
			isnull = attr->missing_isnull;
			bytes = attr->missing_value;
		}
		else if (hasnull && !(bits[a >> 3] & (1 << (a & 7))))
			isnull = true;
		else
		{
			isnull = false;
			if (attr->len == -1 && data[off] != 0)
				;				/* a 1-byte varlena header: not aligned */
			else
				off = gj_heap_align(off, attr->align);
			p = data + off;
			if (attr->len > 0)
			{
				size = attr->len;
				if (size <= 8)
					bytes = gj_heap_load(p, (int) size);
			}
			else if (attr->len == -1)
			{
				size = gj_heap_varlena_size(layout, (const uint8_t *) p);
				if (size < 0)
				{
					found->bad_attno = a + 1;
					return;
				}
			}
			else
			{
				size = 1;		/* a C string, its terminator included */
				while (p[size - 1] != '\0')
					size++;
			}
			off += size;
		}

		if (attr->column >= 0)
		{
			int			c = attr->column;

			if (isnull)
			{
				out->nulls[c][row] = 1;
				found->null_columns |= UINT32_C(1) << c;
				bytes = 0;
			}
			else if (plan->column_scales[c] >= 0)
			{
				bytes = (uint64_t) gj_heap_numeric(p, size, plan->column_scales[c]);
				found->host_numerics += (int64_t) bytes == GJ_NUMERIC_ON_HOST;
			}
			else if (plan->column_scales[c] == GJ_COLUMN_TEXT_WORD)
			{
				bytes = (uint64_t) gj_heap_text_word(p, size);
				found->host_numerics += (int64_t) bytes == GJ_TEXT_ON_HOST;
			}
			gj_heap_store(out->values[c], row, plan->column_widths[c], bytes);
		}
		if (attr->is_key)
		{
			for (int k = 0; k < plan->nkeys; k++)
			{
				if (plan->key_attnos[k] != a + 1)
					continue;
				if (isnull)
					found->keynull = true;
				else
					keyvals[k] = gj_heap_key_of(bytes, attr->len,
												(GjKeyKind) plan->key_kinds[k]);
			}
		}
		if (attr->input >= 0)
		{
			int			i = attr->input;

			if (plan->input_scales[i] >= 0)
				inputs[i].v.i = isnull ? 0 : gj_heap_numeric(p, size, plan->input_scales[i]);
			else if (plan->input_text_count[i] > 0)
				inputs[i].v.i = isnull ? 0 : gj_heap_text_place(plan, i, p, size);
			else
				inputs[i] = gj_expr_input_of(bytes, plan->input_widths[i],
											 (GjKeyKind) plan->input_kinds[i]);
			inputs[i].isnull = isnull;
		}
	}

	if (plan->nkeys > 0)
	{
		if (found->keynull)
		{
			out->keynulls[row] = 1;
			out->keys[row] = 0;
		}
		else
			out->keys[row] = gj_pack_keys(keyvals, plan->key_bits, plan->nkeys,
										  plan->keys_exact);
	}
	if (plan->has_filter)
		found->verdict = (uint8_t) gj_expr_qual(&plan->filter, inputs);
}

#ifdef __cplusplus
}
#endif

#endif							/* GPUJOIN_HEAP_DEFORM_H */
