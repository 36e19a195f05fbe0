/*-------------------------------------------------------------------------
 *
 * keys.c
 *	  Join key encoding: SQL values to the kernels' uint64 keys
 *
 * The kernels compare one uint64 per row (cuda/gpujoin_kernels.h).  A join
 * on one key clause encodes the value as a signed 64-bit integer, which is
 * exact: two keys are equal exactly when the SQL operator says so.  This
 * holds across int2, int4 and int8 (int4 = int8 compares the values as
 * int8, as int48eq does), and for date = date.
 *
 * Several key clauses are packed side by side when their widths add up to
 * 64 bits or less (two int4 keys, or int2 + int4 ...), the first clause in
 * the highest bits.  Wider combinations are hashed into one uint64; then
 * unequal keys may collide, and the planner puts the key clauses into the
 * join filter so that every match is rechecked on the CPU.
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
#include "common.h"				/* gj_hash64, shared with the kernels */
#include "gpujoin.h"
#include "nodes/value.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"

/*
 * How values of this type are encoded, or GPUJOIN_KEY_NONE when there is no
 * exact encoding (yet).  Domains are encoded as their base type.
 */
GpuJoinKeyKind
GpuJoinKeyKindOf(Oid typid)
{
	switch (getBaseType(typid))
	{
		case INT2OID:
			return GPUJOIN_KEY_INT2;
		case INT4OID:
			return GPUJOIN_KEY_INT4;
		case INT8OID:
			return GPUJOIN_KEY_INT8;
		case DATEOID:
			return GPUJOIN_KEY_DATE;
		case FLOAT4OID:
			return GPUJOIN_KEY_FLOAT4;
		case FLOAT8OID:
			return GPUJOIN_KEY_FLOAT8;
		case TIMESTAMPOID:
			return GPUJOIN_KEY_TIMESTAMP;
		case TIMESTAMPTZOID:
			return GPUJOIN_KEY_TIMESTAMPTZ;
		default:
			return GPUJOIN_KEY_NONE;
	}
}

/*
 * Kinds whose values compare with each other: the integers (as int8), the
 * floats (as float8), and each date/time type with itself
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
		case GPUJOIN_KEY_DATE:
			return 3;
		case GPUJOIN_KEY_TIMESTAMP:
			return 4;
		case GPUJOIN_KEY_TIMESTAMPTZ:
			return 5;
		case GPUJOIN_KEY_NONE:
			break;
	}
	return 0;
}

/*
 * Is opno one of <, <=, >, >= of the default btree order of its types, with
 * an order-preserving encoding (GpuJoinOrderedKey) for both?  *op gets it as
 * "left OP right".
 *
 * The default operator family of the left type decides, so an operator of
 * some other (say, reversed) ordering is not mistaken for "<".
 */
bool
GpuJoinThetaOperator(Oid opno, Oid lefttype, Oid righttype, GjThetaOp *op)
{
	GpuJoinKeyKind lkind = GpuJoinKeyKindOf(lefttype);
	GpuJoinKeyKind rkind = GpuJoinKeyKindOf(righttype);
	Oid			opclass;
	Oid			family;
	List	   *interps;
	ListCell   *lc;

	if (KindDomain(lkind) == 0 || KindDomain(lkind) != KindDomain(rkind))
		return false;
	opclass = GetDefaultOpClass(getBaseType(lefttype), BTREE_AM_OID);
	if (!OidIsValid(opclass))
		return false;
	family = get_opclass_family(opclass);

	interps = get_op_btree_interpretation(opno);
	foreach(lc, interps)
	{
		OpBtreeInterpretation *interp = lfirst(lc);

		if (interp->opfamily_id != family)
			continue;
		switch (interp->strategy)
		{
			case BTLessStrategyNumber:
				*op = GJ_THETA_LT;
				return true;
			case BTLessEqualStrategyNumber:
				*op = GJ_THETA_LE;
				return true;
			case BTGreaterEqualStrategyNumber:
				*op = GJ_THETA_GE;
				return true;
			case BTGreaterStrategyNumber:
				*op = GJ_THETA_GT;
				return true;
			default:
				return false;	/* equality goes to the hash join */
		}
	}
	return false;
}

/*
 * The order-preserving uint64 of a non-NULL value, for theta joins:
 * unsigned order of the results is the SQL order of the values
 *
 * Integers, dates and timestamps are signed 64-bit integers with the sign
 * bit flipped.  Floats follow PostgreSQL's float order, in which -0 equals
 * 0 and NaN equals NaN and is greater than every other value: -0 becomes 0,
 * NaN the largest key, and the IEEE bits are mapped the usual way (flip
 * all bits of a negative number, the sign bit of a positive one), which
 * keeps -Infinity and Infinity at the ends.
 */
uint64
GpuJoinOrderedKey(Datum value, GpuJoinKeyKind kind)
{
	const uint64 sign = UINT64CONST(1) << 63;
	int64		ivalue;
	double		fvalue;
	uint64		bits;

	switch (kind)
	{
		case GPUJOIN_KEY_INT2:
			ivalue = DatumGetInt16(value);
			break;
		case GPUJOIN_KEY_INT4:
		case GPUJOIN_KEY_DATE:
			ivalue = DatumGetInt32(value);
			break;
		case GPUJOIN_KEY_INT8:
		case GPUJOIN_KEY_TIMESTAMP:
		case GPUJOIN_KEY_TIMESTAMPTZ:
			ivalue = DatumGetInt64(value);
			break;
		case GPUJOIN_KEY_FLOAT4:
		case GPUJOIN_KEY_FLOAT8:
			fvalue = (kind == GPUJOIN_KEY_FLOAT4) ?
				(double) DatumGetFloat4(value) : DatumGetFloat8(value);
			if (isnan(fvalue))
				return PG_UINT64_MAX;
			if (fvalue == 0.0)
				fvalue = 0.0;	/* -0 is 0 */
			memcpy(&bits, &fvalue, sizeof(bits));
			return (bits & sign) ? ~bits : (bits | sign);
		default:
			elog(ERROR, "gpujoin: key of kind %d has no order-preserving encoding",
				 (int) kind);
			return 0;			/* keep compiler quiet */
	}
	return (uint64) ivalue ^ sign;
}

/*
 * Bits a value of this kind takes in a packed key
 */
int
GpuJoinKeyKindBits(GpuJoinKeyKind kind)
{
	switch (kind)
	{
		case GPUJOIN_KEY_INT2:
			return 16;
		case GPUJOIN_KEY_INT4:
		case GPUJOIN_KEY_DATE:
			return 32;
		case GPUJOIN_KEY_INT8:
			return 64;
		default:
			break;				/* no equality encoding (yet) */
	}
	return 0;
}

/*
 * Is opno an equality whose result is exactly "the encoded keys are equal"?
 *
 * Checked by the function behind the operator rather than by operator OID,
 * so that every cross-type variant of integer equality is recognized and
 * nothing else is (a user-defined "=" on int4 with other semantics is not).
 */
bool
GpuJoinKeyOperatorIsExact(Oid opno, Oid lefttype, Oid righttype)
{
	Oid			ltype = getBaseType(lefttype);
	Oid			rtype = getBaseType(righttype);

	switch (get_opcode(opno))
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
			return (ltype == INT2OID || ltype == INT4OID || ltype == INT8OID) &&
				(rtype == INT2OID || rtype == INT4OID || rtype == INT8OID);
		case F_DATE_EQ:
			return ltype == DATEOID && rtype == DATEOID;
		default:
			return false;
	}
}

/*
 * Do keys packed with these widths (an integer List) compare exactly?
 */
bool
GpuJoinKeysAreExact(List *key_bits)
{
	int			total = 0;
	ListCell   *lc;

	foreach(lc, key_bits)
		total += lfirst_int(lc);
	return total <= 64;
}

/*
 * Encode one row's non-NULL key values into the uint64 the kernels compare
 *
 * Both sides must call this with the same bits[] and exact, so that equal
 * values give equal keys; the planner stores both in the plan.
 */
uint64
GpuJoinPackKeys(const int64 *values, const int *bits, int nkeys, bool exact)
{
	uint64		key = 0;

	if (exact)
	{
		for (int i = 0; i < nkeys; i++)
		{
			/* flip the sign bit of the field: order-preserving, see above */
			uint64		field = (uint64) values[i] ^ (UINT64CONST(1) << (bits[i] - 1));

			if (bits[i] < 64)
			{
				field &= (UINT64CONST(1) << bits[i]) - 1;
				key = (key << bits[i]) | field;
			}
			else
				key = field;	/* only possible when nkeys == 1 */
		}
	}
	else
	{
		for (int i = 0; i < nkeys; i++)
			key = gj_hash64(key ^ (uint64) values[i]) + UINT64CONST(0x9e3779b97f4a7c15);
	}
	return key;
}
