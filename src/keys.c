/*-------------------------------------------------------------------------
 *
 * keys.c
 *	  Join key encoding: SQL values to the kernels' uint64 keys
 *
 * The kernels compare one uint64 per row (cuda/gpujoin_kernels.h).  Each
 * side of a key clause has a coding (GpuJoinKeyCoding), chosen by the
 * planner from the function behind the clause's operator, that turns a
 * non-NULL value into a signed 64-bit integer:
 *
 *	- exact codings, where two values are equal under the operator exactly
 *	  when their integers are: the integers, oid, bool, date, time,
 *	  timestamp and timestamptz as the integers they are stored as; float4
 *	  and float8 in PostgreSQL's float order (-0 = 0, NaN = NaN, NaN above
 *	  everything); numeric with a declared scale as the value times 10^scale
 *	  when its digits fit 18 (1.0 = 1.00); and the cross-type equalities of
 *	  PostgreSQL's operator families: integers of any width compare as int8
 *	  (int48eq), float4 with float8 as float8 (float48eq), date with
 *	  timestamp as a timestamp, date or timestamp with timestamptz as a
 *	  timestamptz in the session's time zone (date_eq_timestamptz ...).
 *	  The integers preserve SQL order, so they also serve theta joins and
 *	  sorted output;
 *	- hashed codings, for every other equality with a hash operator family
 *	  (text, varchar, bpchar with its trailing-space rule, bytea, uuid,
 *	  numeric without a usable scale, interval, arrays ...): the value's
 *	  hash under the family's own hash function, which the family promises
 *	  is equal for equal values.  Unequal values may collide, so the planner
 *	  rechecks the clause on the CPU.  Only deterministic collations:
 *	  under a nondeterministic one, equal strings can differ in bytes, and
 *	  the clause gets no GPU path.
 *
 * Several exact key clauses are packed side by side when their widths add
 * up to 64 bits or less (two int4 keys, or int2 + int4 ...), the first
 * clause in the highest bits.  Wider combinations, and any hashed clause,
 * make the row's key a hash of all its clause values; then every key clause
 * is rechecked on the CPU.
 *
 * Exact keys also preserve order: each value is offset by 2^(bits-1), so
 * that the signed range of its type maps onto the unsigned range of its
 * field in the same order (the two's complement with its top bit flipped).
 * Comparing packed keys as unsigned integers then orders rows by the first
 * key, then the second, ..., which is what a sort-merge join needs to hand
 * its output to a parent expecting that order.
 *
 * IDENTIFICATION
 *	  src/keys.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/stratnum.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "fmgr.h"
#include "libpq/pqformat.h"
#include "gpujoin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/value.h"
#include "utils/date.h"
#include "utils/fmgrprotos.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

/*
 * The exact coding of values of this type, or GPUJOIN_KEY_NONE.  Domains
 * are encoded as their base type.
 */
static GpuJoinKeyKind
KindOfType(Oid typid)
{
	switch (getBaseType(typid))
	{
		case INT2OID:
			return GPUJOIN_KEY_INT2;
		case INT4OID:
			return GPUJOIN_KEY_INT4;
		case INT8OID:
			return GPUJOIN_KEY_INT8;
		case OIDOID:
			return GPUJOIN_KEY_OID;
		case BOOLOID:
			return GPUJOIN_KEY_BOOL;
		case DATEOID:
			return GPUJOIN_KEY_DATE;
		case TIMEOID:
			return GPUJOIN_KEY_TIME;
		case TIMESTAMPOID:
			return GPUJOIN_KEY_TIMESTAMP;
		case TIMESTAMPTZOID:
			return GPUJOIN_KEY_TIMESTAMPTZ;
		case FLOAT4OID:
			return GPUJOIN_KEY_FLOAT4;
		case FLOAT8OID:
			return GPUJOIN_KEY_FLOAT8;
		case NUMERICOID:
			return GPUJOIN_KEY_NUMERIC;
		default:
			return GPUJOIN_KEY_NONE;
	}
}

/*
 * Kinds whose values compare with each other under one coding: the
 * integers (as int8), the floats (as float8), and each other type with
 * itself
 */
static int
KindDomain(GpuJoinKeyKind kind)
{
	switch (kind)
	{
		case GPUJOIN_KEY_INT2:
		case GPUJOIN_KEY_INT4:
		case GPUJOIN_KEY_INT8:
			return 1;
		case GPUJOIN_KEY_FLOAT4:
		case GPUJOIN_KEY_FLOAT8:
			return 2;
		case GPUJOIN_KEY_NONE:
		case GPUJOIN_KEY_HASHED:
			return 0;
		default:
			return 100 + (int) kind;
	}
}

/*
 * Bits a value of this coding takes in a packed key
 */
static int
KindBits(GpuJoinKeyKind kind)
{
	switch (kind)
	{
		case GPUJOIN_KEY_BOOL:
			return 8;
		case GPUJOIN_KEY_INT2:
			return 16;
		case GPUJOIN_KEY_INT4:
		case GPUJOIN_KEY_OID:
		case GPUJOIN_KEY_DATE:
			return 32;
		default:
			return 64;
	}
}

/*
 * The declared scale of a numeric expression (at least 0: values of a
 * negative scale are stored as integers) and the decimal digits it allows
 * before the point; false when it has none (numeric without a typmod, or
 * an expression whose typmod is unknown)
 */
static bool
DeclaredNumeric(Node *arg, int *scale, int *digits)
{
	int32		typmod = exprTypmod(arg);
	Oid			type = exprType(arg);
	int			declared;

	if (typmod < 0 && type != NUMERICOID)
		getBaseTypeAndTypmod(type, &typmod);	/* a domain over numeric(p,s) */
	if (typmod < (int32) VARHDRSZ)
		return false;
	typmod -= VARHDRSZ;
	/*
	 * numeric(p,s): p in the high 16 bits, s in the low 11, signed (since
	 * PostgreSQL 15 the scale may be negative, or above p)
	 */
	declared = ((typmod & 0x7ff) ^ 1024) - 1024;
	*scale = Max(declared, 0);
	*digits = ((typmod >> 16) & 0xffff) - declared;
	return true;
}

/*
 * The decimal scale both sides of a numeric comparison are brought to, or
 * -1 when a side has no declared scale (numeric without a typmod, or an
 * expression) or the scaled values might not fit 18 digits
 */
static int
NumericCommonScale(Node *left, Node *right)
{
	int			scale = 0;
	int			digits = 0;		/* before the decimal point */
	Node	   *args[2] = {left, right};

	for (int i = 0; i < 2; i++)
	{
		int			s;
		int			d;

		if (!DeclaredNumeric(args[i], &s, &d))
			return -1;
		scale = Max(scale, s);
		digits = Max(digits, d);
	}
	if (digits + scale > GPUJOIN_NUMERIC_MAX_DIGITS)
		return -1;
	return scale;
}

/*
 * The scale at which the values of a numeric expression of type numeric
 * itself (not a domain) are exact 64-bit integers (GpuJoinNumericScaled),
 * or -1
 */
int
GpuJoinNumericScale(Node *expr)
{
	int			scale;
	int			digits;

	if (exprType(expr) != NUMERICOID || !DeclaredNumeric(expr, &scale, &digits) ||
		digits + scale > GPUJOIN_NUMERIC_MAX_DIGITS)
		return -1;
	return scale;
}

/*
 * How the two arguments of an equality clause are encoded, and the bits the
 * clause takes in a packed key; false when the device cannot evaluate it
 *
 * Exactness is decided by the function behind the operator rather than by
 * operator OID, so that every cross-type variant is recognized and nothing
 * else is (a user-defined "=" on int4 with other semantics is not).
 */
bool
GpuJoinEqualityCoding(OpExpr *op, GpuJoinKeyCoding *left,
					  GpuJoinKeyCoding *right, int *bits)
{
	Node	   *larg = linitial(op->args);
	Node	   *rarg = lsecond(op->args);
	GpuJoinKeyKind lkind = KindOfType(exprType(larg));
	GpuJoinKeyKind rkind = KindOfType(exprType(rarg));
	bool		exact;
	RegProcedure lhash;
	RegProcedure rhash;

	memset(left, 0, sizeof(*left));
	memset(right, 0, sizeof(*right));
	switch (get_opcode(op->opno))
	{
		case F_INT2EQ:
		case F_INT4EQ:
		case F_INT8EQ:
		case F_INT24EQ:
		case F_INT42EQ:
		case F_INT28EQ:
		case F_INT82EQ:
		case F_INT48EQ:
		case F_INT84EQ:
		case F_FLOAT4EQ:
		case F_FLOAT8EQ:
		case F_FLOAT48EQ:
		case F_FLOAT84EQ:
			exact = KindDomain(lkind) != 0 && KindDomain(lkind) == KindDomain(rkind) &&
				KindDomain(lkind) <= 2;
			break;
		case F_OIDEQ:
		case F_BOOLEQ:
		case F_DATE_EQ:
		case F_TIME_EQ:
		case F_TIMESTAMP_EQ:
		case F_TIMESTAMPTZ_EQ:
			exact = lkind != GPUJOIN_KEY_NONE && lkind == rkind;
			break;
		case F_NUMERIC_EQ:
			exact = lkind == GPUJOIN_KEY_NUMERIC && rkind == GPUJOIN_KEY_NUMERIC &&
				(left->arg = right->arg = NumericCommonScale(larg, rarg)) >= 0;
			break;
		case F_DATE_EQ_TIMESTAMP:
		case F_TIMESTAMP_EQ_DATE:
		case F_DATE_EQ_TIMESTAMPTZ:
		case F_TIMESTAMPTZ_EQ_DATE:
		case F_TIMESTAMP_EQ_TIMESTAMPTZ:
		case F_TIMESTAMPTZ_EQ_TIMESTAMP:
			/* the narrower type converts to the wider one, as the function does */
			exact = (lkind == GPUJOIN_KEY_DATE || lkind == GPUJOIN_KEY_TIMESTAMP ||
					 lkind == GPUJOIN_KEY_TIMESTAMPTZ) &&
				(rkind == GPUJOIN_KEY_DATE || rkind == GPUJOIN_KEY_TIMESTAMP ||
				 rkind == GPUJOIN_KEY_TIMESTAMPTZ) && lkind != rkind;
			if (exact)
			{
				GpuJoinKeyKind wider = Max(lkind, rkind);
				GpuJoinKeyKind *narrow = (lkind < rkind) ? &lkind : &rkind;

				StaticAssertStmt(GPUJOIN_KEY_DATE < GPUJOIN_KEY_TIMESTAMP &&
								 GPUJOIN_KEY_TIMESTAMP < GPUJOIN_KEY_TIMESTAMPTZ,
								 "date/time kinds must be ordered by width");
				if (wider == GPUJOIN_KEY_TIMESTAMP)
					*narrow = GPUJOIN_KEY_DATE_AS_TIMESTAMP;
				else if (*narrow == GPUJOIN_KEY_DATE)
					*narrow = GPUJOIN_KEY_DATE_AS_TIMESTAMPTZ;
				else
					*narrow = GPUJOIN_KEY_TIMESTAMP_AS_TIMESTAMPTZ;
			}
			break;
		default:
			exact = false;
			break;
	}

	if (exact)
	{
		left->kind = lkind;
		right->kind = rkind;
		*bits = Max(KindBits(lkind), KindBits(rkind));
		return true;
	}

	/* hashed: the operator's hash family, under a deterministic collation */
	if (!op_hashjoinable(op->opno, exprType(larg)) ||
		!get_op_hash_functions(op->opno, &lhash, &rhash))
		return false;
	if (OidIsValid(op->inputcollid) && !get_collation_isdeterministic(op->inputcollid))
		return false;
	left->kind = right->kind = GPUJOIN_KEY_HASHED;
	left->arg = (int32) lhash;
	right->arg = (int32) rhash;
	*bits = 64;
	return true;
}

/*
 * Is op one of <, <=, >, >= of the default btree order of its types, with
 * an order-preserving coding for both arguments?  *thetaop gets it as
 * "left OP right".
 *
 * The default operator family of the left type decides, so an operator of
 * some other (say, reversed) ordering is not mistaken for "<".
 */
bool
GpuJoinThetaCoding(OpExpr *op, GjThetaOp *thetaop, GpuJoinKeyCoding *left,
				   GpuJoinKeyCoding *right)
{
	Node	   *larg = linitial(op->args);
	Node	   *rarg = lsecond(op->args);
	GpuJoinKeyKind lkind = KindOfType(exprType(larg));
	GpuJoinKeyKind rkind = KindOfType(exprType(rarg));
	Oid			opclass;
	Oid			family;

	if (KindDomain(lkind) == 0 || KindDomain(lkind) != KindDomain(rkind))
		return false;
	memset(left, 0, sizeof(*left));
	memset(right, 0, sizeof(*right));
	left->kind = lkind;
	right->kind = rkind;
	if (lkind == GPUJOIN_KEY_NUMERIC &&
		(left->arg = right->arg = NumericCommonScale(larg, rarg)) < 0)
		return false;

	opclass = GetDefaultOpClass(getBaseType(exprType(larg)), BTREE_AM_OID);
	if (!OidIsValid(opclass))
		return false;
	family = get_opclass_family(opclass);

	switch (GpuJoinBtreeStrategy(op->opno, family))
	{
		case BTLessStrategyNumber:
			*thetaop = GJ_THETA_LT;
			return true;
		case BTLessEqualStrategyNumber:
			*thetaop = GJ_THETA_LE;
			return true;
		case BTGreaterEqualStrategyNumber:
			*thetaop = GJ_THETA_GE;
			return true;
		case BTGreaterStrategyNumber:
			*thetaop = GJ_THETA_GT;
			return true;
		default:
			return false;	/* equality goes to the hash join; none: no theta */
	}
}

/* A float key in PostgreSQL's float order (gj_float_key, gpujoin_kernels.h) */
static inline int64
FloatKey(double value)
{
	return gj_float_key(value);
}

#define GJ_NBASE		10000		/* numeric.c's digits are base 10000 */

/*
 * A numeric value (possibly with a short varlena header) times 10^scale,
 * read from its stored digits (gj_numeric_scaled, which the heap deform
 * uses too): exact within 18 decimal digits, no arithmetic of numeric.c's
 * and no allocation
 */
static GjScaledKind
ParseScaled(const struct varlena *value, int scale, int64 *result)
{
	return gj_numeric_scaled((const uint8_t *) VARDATA_ANY(value),
							 (int) VARSIZE_ANY_EXHDR(value), scale, (int64_t *) result);
}

/*
 * numeric with a declared scale: the value times 10^scale, exact; NaN above
 * everything and the infinities (which a typmod keeps out of tables, but an
 * expression's declared typmod might not) at the ends below it; *kind
 * says which the value was
 */
static int64
NumericKeyOf(Datum value, int scale, GjScaledKind *kind)
{
	struct varlena *packed = pg_detoast_datum_packed((struct varlena *) DatumGetPointer(value));
	int64		scaled;

	switch ((*kind = ParseScaled(packed, scale, &scaled)))
	{
		case GJ_SCALED_VALUE:
			return scaled;
		case GJ_SCALED_NAN:
			return PG_INT64_MAX;
		case GJ_SCALED_PINF:
			return PG_INT64_MAX - 1;
		case GJ_SCALED_NINF:
			return PG_INT64_MIN;
		case GJ_SCALED_INEXACT:
			break;
	}
	/* more digits than the typmod allowed: not exact, so not ours */
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("gpujoin: numeric value does not fit its declared scale %d", scale),
			 errhint("Set gpujoin.enabled = off for this query.")));
	return 0;					/* keep compiler quiet */
}

static int64
NumericKey(Datum value, int scale)
{
	GjScaledKind kind;

	return NumericKeyOf(value, scale, &kind);
}

/*
 * A value of a numeric column of declared scale (GpuJoinNumericScale) as
 * the aggregation reads it: the value times 10^scale, NaN as PG_INT64_MAX
 * (above every value, as numeric orders NaN); an infinity, which such a
 * column cannot hold, is an error
 */
int64
GpuJoinNumericScaled(Datum value, int scale)
{
	GjScaledKind kind;
	int64		scaled = NumericKeyOf(value, scale, &kind);

	if (kind == GJ_SCALED_PINF || kind == GJ_SCALED_NINF)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("gpujoin: an infinite numeric value in a column of declared scale %d", scale)));
	return scaled;
}

/*
 * A numeric group key's value as a GpuPreAgg's word: as a column's value
 * (GpuJoinNumericScaled), and an infinity at an end (PG_INT64_MAX - 1,
 * PG_INT64_MIN: NumericKeyOf), where the key is an expression that can
 * give one (EXTRACT's year of an infinite date); GpuJoinNumericKeyDatum
 * turns it back
 */
int64
GpuJoinNumericKeyWord(Datum value, int scale)
{
	return NumericKey(value, scale);
}

Datum
GpuJoinNumericKeyDatum(int64 word, int scale)
{
	if (word == PG_INT64_MAX - 1 || word == PG_INT64_MIN)
		return DirectFunctionCall3(numeric_in,
								   CStringGetDatum(word == PG_INT64_MIN ? "-Infinity" : "Infinity"),
								   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	return GpuJoinNumericDatum(word, scale, word == PG_INT64_MAX);
}

/*
 * A numeric constant as the aggregation's programs compute with it: its
 * display scale, and its value times 10^scale; false for NaN, an infinity,
 * or a value past 18 digits
 */
bool
GpuJoinNumericConstScaled(Datum value, int *scale, int64 *scaled)
{
	Numeric		num = DatumGetNumeric(value);

	if (numeric_is_nan(num) || numeric_is_inf(num))
		return false;
	*scale = DatumGetInt32(DirectFunctionCall1(numeric_scale, value));
	return ParseScaled(pg_detoast_datum_packed((struct varlena *) DatumGetPointer(value)),
					   *scale, scaled) == GJ_SCALED_VALUE;
}

/*
 * The base-10000 digits of v / 10^scale, most significant first, as a
 * NumericVar holds them: their count, and in *weight the power of 10000
 * of the first; digits must hold GJ_NUMERIC_MAX_NDIGITS
 */
int
GpuJoinNumericDigits(int128 v, int scale, int16 *digits, int *weight)
{
	int			frac = (scale + 3) / 4;	/* digits after the point */
	uint128		u = v < 0 ? -(uint128) v : (uint128) v;
	int16		reversed[GJ_NUMERIC_MAX_NDIGITS];
	int			n = 0;

	/* the point between two digits: scale up to a multiple of 4 */
	for (int i = scale; i < 4 * frac; i++)
		u *= 10;
	while (u != 0)
	{
		reversed[n++] = (int16) (u % GJ_NBASE);
		u /= GJ_NBASE;
	}
	for (int i = 0; i < n; i++)
		digits[i] = reversed[n - 1 - i];
	*weight = n - 1 - frac;
	if (n == 0)
		*weight = 0;
	return n;
}

/*
 * v / 10^scale as a numeric of display scale scale (what a column of that
 * scale holds), or NaN.  A value within 64 bits through PostgreSQL's
 * int64_div_fast_to_numeric (a join emits one for each numeric of each
 * match: numeric_recv took about five times as long); a wider one (a sum)
 * through numeric_recv, which checks the digits.
 */
Datum
GpuJoinNumericDatum(int128 v, int scale, bool nan)
{
	StringInfoData buf;
	int16		digits[GJ_NUMERIC_MAX_NDIGITS];
	int			weight = 0;
	int			n;

	if (!nan && v >= PG_INT64_MIN && v <= PG_INT64_MAX && scale >= 0)
		return NumericGetDatum(int64_div_fast_to_numeric((int64) v, scale));
	n = nan ? 0 : GpuJoinNumericDigits(v, scale, digits, &weight);
	initStringInfo(&buf);
	pq_sendint16(&buf, (uint16) n);
	pq_sendint16(&buf, (uint16) weight);
	pq_sendint16(&buf, nan ? GJ_NUMERIC_NAN : v < 0 ? GJ_NUMERIC_NEG : 0);
	pq_sendint16(&buf, nan ? 0 : (uint16) scale);
	for (int i = 0; i < n; i++)
		pq_sendint16(&buf, (uint16) digits[i]);
	return DirectFunctionCall3(numeric_recv, PointerGetDatum(&buf),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/*
 * The signed 64-bit integer of a non-NULL key value, under its coding
 *
 * Returns false when the value equals nothing on the other side (a date
 * beyond the timestamp range): the row then matches no row, as with a NULL.
 * hash is the looked-up hash function of a hashed coding (else unused),
 * collation the clause's input collation.  May allocate in the current
 * memory context (numeric arithmetic, detoasting for a hash).
 */
bool
GpuJoinKeyValue(Datum value, const GpuJoinKeyCoding *coding, FmgrInfo *hash,
				Oid collation, int64 *result)
{
	int			overflow = 0;

	switch (coding->kind)
	{
		case GPUJOIN_KEY_INT2:
			*result = DatumGetInt16(value);
			break;
		case GPUJOIN_KEY_INT4:
		case GPUJOIN_KEY_DATE:
			*result = DatumGetInt32(value);
			break;
		case GPUJOIN_KEY_INT8:
		case GPUJOIN_KEY_TIME:
		case GPUJOIN_KEY_TIMESTAMP:
		case GPUJOIN_KEY_TIMESTAMPTZ:
			*result = DatumGetInt64(value);
			break;
		case GPUJOIN_KEY_OID:
			/* unsigned: shifted into the signed range, keeping order */
			*result = (int64) DatumGetObjectId(value) - ((int64) 1 << 31);
			break;
		case GPUJOIN_KEY_BOOL:
			*result = DatumGetBool(value) ? 1 : 0;
			break;
		case GPUJOIN_KEY_FLOAT4:
			*result = FloatKey((double) DatumGetFloat4(value));
			break;
		case GPUJOIN_KEY_FLOAT8:
			*result = FloatKey(DatumGetFloat8(value));
			break;
		case GPUJOIN_KEY_NUMERIC:
			*result = NumericKey(value, coding->arg);
			break;
		case GPUJOIN_KEY_DATE_AS_TIMESTAMP:
			*result = date2timestamp_opt_overflow(DatumGetDateADT(value), &overflow);
			break;
		case GPUJOIN_KEY_DATE_AS_TIMESTAMPTZ:
			*result = date2timestamptz_opt_overflow(DatumGetDateADT(value), &overflow);
			break;
		case GPUJOIN_KEY_TIMESTAMP_AS_TIMESTAMPTZ:
			*result = timestamp2timestamptz_opt_overflow(DatumGetTimestamp(value), &overflow);
			break;
		case GPUJOIN_KEY_HASHED:
			*result = (int64) DatumGetUInt32(FunctionCall1Coll(hash, collation, value));
			break;
		case GPUJOIN_KEY_NONE:
			elog(ERROR, "gpujoin: join key without a coding");
	}
	/* beyond the wider type's range: greater or less than all of it */
	return overflow == 0;
}

/*
 * Do keys packed with these widths (an integer List) compare exactly?  Any
 * hashed clause, or more than 64 bits, makes them hashed.
 */
bool
GpuJoinKeysAreExact(List *key_bits, bool any_hashed)
{
	int			total = 0;
	ListCell   *lc;

	foreach(lc, key_bits)
		total += lfirst_int(lc);
	return !any_hashed && total <= 64;
}

/*
 * Encode one row's non-NULL key values into the uint64 the kernels compare
 * (gj_pack_keys, gpujoin_kernels.h, which the heap deform uses too)
 *
 * Both sides must call this with the same bits[] and exact, so that equal
 * values give equal keys; the planner stores both in the plan.
 */
uint64
GpuJoinPackKeys(const int64 *values, const int *bits, int nkeys, bool exact)
{
	return gj_pack_keys((const int64_t *) values, (const int32_t *) bits, nkeys, exact);
}
