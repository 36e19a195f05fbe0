/*-------------------------------------------------------------------------
 *
 * heap_deform_cpu.c
 *	  CPU twin of the heap deform: PostgreSQL heap tuples, copied page by
 *	  page, into a join side's column arrays and packed keys
 *
 * This file is the specification of the deform (gpujoin_kernels.h, HEAP
 * PAGES TO COLUMNS), written for clarity; a device kernel doing the same
 * per tuple, one thread each, must produce the very same arrays.
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
 *	  cuda/scan/heap_deform_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <string.h>

#include "common.h"
#include "gpujoin_kernels.h"

/* Read a little-endian value of a tuple without alignment assumptions */
static inline uint64_t
LoadBytes(const char *p, int len)
{
	uint64_t	v = 0;

	memcpy(&v, p, (size_t) len);
	return v;
}

/* Sign-extend the low len bytes of v */
static inline int64_t
SignExtend(uint64_t v, int len)
{
	int			shift = 64 - 8 * len;

	return (int64_t) (v << shift) >> shift;
}

/* The signed key value of an attribute's bytes (GjKeyKind) */
static inline int64_t
KeyOf(uint64_t bytes, int len, GjKeyKind kind)
{
	union
	{
		uint32_t	u;
		float		f;
	}			f4;
	union
	{
		uint64_t	u;
		double		d;
	}			f8;

	switch (kind)
	{
		case GJ_KEY_OID:
			return (int64_t) (uint32_t) bytes - ((int64_t) 1 << 31);
		case GJ_KEY_BOOL:
			return (bytes & 0xFF) != 0 ? 1 : 0;
		case GJ_KEY_FLOAT4:
			f4.u = (uint32_t) bytes;
			return gj_float_key((double) f4.f);
		case GJ_KEY_FLOAT8:
			f8.u = bytes;
			return gj_float_key(f8.d);
		case GJ_KEY_SIGNED:
		default:
			return SignExtend(bytes, len);
	}
}

/* The size of the varlena at p, or -1 for a TOAST pointer of an unknown tag */
static inline int64_t
VarlenaSize(const GjHeapLayout *layout, const uint8_t *p)
{
	uint32_t	word;

	if (p[0] == 0x01)
		return p[1] == layout->external_tag ? layout->external_size : -1;
	if (p[0] & 0x01)
		return (p[0] >> 1) & 0x7F;
	memcpy(&word, p, sizeof(word));
	return (word >> 2) & 0x3FFFFFFF;
}

static inline int64_t
AlignUp(int64_t off, int align)
{
	return (off + align - 1) & ~((int64_t) align - 1);
}

GjStatus
gj_cpu_heap_deform(const GjPageBatch *pages, const GjDeformSpec *spec,
				   int64_t first, int64_t n, GjDeformOut *out, GjError *err)
{
	const GjHeapLayout *layout = &spec->layout;
	/* per attribute: its output column, or -1; whether a key reads it */
	int32_t		column_of[GJ_MAX_HEAP_ATTS];
	bool		is_key[GJ_MAX_HEAP_ATTS];
	int64_t		keyvals[GJ_MAX_KEYS];
	/*
	 * The attributes before the first varlena or C string lie at the same
	 * offset in every tuple that has no NULL (heaptuple.c's attcacheoff):
	 * fixed_natts of them, at fixed_off[]
	 */
	int64_t		fixed_off[GJ_MAX_HEAP_ATTS];
	int			fixed_natts = 0;
	int			max_needed = 0;

	if (spec->natts < 0 || spec->natts > GJ_MAX_HEAP_ATTS || spec->nkeys > GJ_MAX_KEYS ||
		first < 0 || n < 0 || first + n > pages->ntuples)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"heap deform: %d attributes, %d keys, tuples %lld + %lld of %lld.",
							(int) spec->natts, (int) spec->nkeys, (long long) first,
							(long long) n, (long long) pages->ntuples);
	for (int a = 0; a < spec->natts; a++)
	{
		column_of[a] = -1;
		is_key[a] = false;
	}
	for (int c = 0; c < spec->ncolumns; c++)
		column_of[spec->column_attnos[c] - 1] = c;
	for (int k = 0; k < spec->nkeys; k++)
		is_key[spec->key_attnos[k] - 1] = true;
	for (int a = 0, off = 0; a < spec->natts && spec->attrs[a].len > 0; a++)
	{
		off = (int) AlignUp(off, spec->attrs[a].align);
		fixed_off[a] = off;
		off += spec->attrs[a].len;
		fixed_natts = a + 1;
	}
	for (int a = 0; a < spec->natts; a++)
		if (column_of[a] >= 0 || is_key[a])
			max_needed = a + 1;

	out->key_nulls = 0;
	for (int64_t i = 0; i < n; i++)
	{
		const char *tup = pages->pages + pages->tuples[first + i];
		uint16_t	infomask2 = (uint16_t) LoadBytes(tup + layout->infomask2_offset, 2);
		uint16_t	infomask = (uint16_t) LoadBytes(tup + layout->infomask_offset, 2);
		const uint8_t *bits = (const uint8_t *) tup + layout->bits_offset;
		const char *data = tup + (uint8_t) tup[layout->hoff_offset];
		int			tuple_natts = infomask2 & layout->natts_mask;
		bool		hasnull = (infomask & layout->hasnull_flag) != 0;
		bool		keynull = false;
		int64_t		off = 0;

		/*
		 * No NULL, every needed attribute in the tuple and at a fixed
		 * offset: read them there (the walk below gives the same values)
		 */
		if (!hasnull && tuple_natts >= max_needed && max_needed <= fixed_natts)
		{
			for (int c = 0; c < spec->ncolumns; c++)
			{
				int			a = spec->column_attnos[c] - 1;
				int			width = spec->attrs[a].len;

				memcpy(out->values[c] + i * width, data + fixed_off[a], (size_t) width);
			}
			if (spec->nkeys > 0)
			{
				for (int k = 0; k < spec->nkeys; k++)
				{
					int			a = spec->key_attnos[k] - 1;

					keyvals[k] = KeyOf(LoadBytes(data + fixed_off[a], spec->attrs[a].len),
									   spec->attrs[a].len, (GjKeyKind) spec->key_kinds[k]);
				}
				out->keynulls[i] = 0;
				out->keys[i] = gj_pack_keys(keyvals, spec->key_bits, spec->nkeys,
											spec->keys_exact);
			}
			continue;
		}

		for (int a = 0; a < spec->natts; a++)
		{
			const GjHeapAttr *attr = &spec->attrs[a];
			bool		isnull;
			uint64_t	bytes = 0;

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
				const char *p;
				int64_t		size;

				isnull = false;
				if (attr->len == -1 && data[off] != 0)
					;			/* a 1-byte varlena header: not aligned */
				else
					off = AlignUp(off, attr->align);
				p = data + off;
				if (attr->len > 0)
				{
					size = attr->len;
					if (size <= 8)
						bytes = LoadBytes(p, (int) size);
				}
				else if (attr->len == -1)
				{
					size = VarlenaSize(layout, (const uint8_t *) p);
					if (size < 0)
						return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
											"heap deform: a TOAST pointer of tag %u in attribute %d.",
											(unsigned) ((const uint8_t *) p)[1], a + 1);
				}
				else
					size = (int64_t) strlen(p) + 1;
				off += size;
			}

			if (column_of[a] >= 0)
			{
				int			c = column_of[a];
				int			width = attr->len;

				if (isnull)
				{
					out->nulls[c][i] = 1;
					out->column_nulls[c]++;
					memset(out->values[c] + i * width, 0, (size_t) width);
				}
				else
					memcpy(out->values[c] + i * width, &bytes, (size_t) width);
			}
			if (is_key[a])
			{
				for (int k = 0; k < spec->nkeys; k++)
				{
					if (spec->key_attnos[k] != a + 1)
						continue;
					if (isnull)
						keynull = true;
					else
						keyvals[k] = KeyOf(bytes, attr->len, (GjKeyKind) spec->key_kinds[k]);
				}
			}
		}

		if (spec->nkeys > 0)
		{
			if (keynull)
			{
				out->keynulls[i] = 1;
				out->keys[i] = 0;
				out->key_nulls++;
			}
			else
			{
				out->keynulls[i] = 0;
				out->keys[i] = gj_pack_keys(keyvals, spec->key_bits, spec->nkeys,
											spec->keys_exact);
			}
		}
	}
	return GJ_OK;
}
