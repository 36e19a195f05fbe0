/*-------------------------------------------------------------------------
 *
 * expr.h
 *	  The device expression interpreter: one row's values in, one value
 *	  (or "undecided") out, by the same code on the device and in the CPU
 *	  twin
 *
 * A program (gpujoin_kernels.h, DEVICE EXPRESSIONS) is a postfix list of
 * steps over a stack of GjExprDatum; gj_expr_check (expr_cpu.c) has
 * verified it before any row runs it, so the interpreter does no bounds
 * checks of its own beyond the stack's.  Each step does what PostgreSQL's
 * function for it does (int4pl, float8div, dtoi4, ...; utils/adt/int.c,
 * int8.c, float.c), with one difference: where that function raises an
 * error, the row's result is undecided, and the caller evaluates
 * PostgreSQL's own expression for it.  The float steps use the device's
 * round-to-nearest intrinsics, so that the compiler cannot fuse a multiply
 * and an add into one rounding where PostgreSQL rounds twice.
 *
 * IDENTIFICATION
 *	  cuda/expr/expr.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_EXPR_H
#define GPUJOIN_EXPR_H

#include <math.h>
#include <stdint.h>

#include "gpujoin_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a row's evaluation gives besides its value */
typedef enum GjExprOutcome
{
	GJ_EXPR_DONE = 0,			/* the value is PostgreSQL's */
	GJ_EXPR_UNDECIDED			/* PostgreSQL would (maybe) raise an error */
} GjExprOutcome;

/* A qual's verdict on a row */
#define GJ_QUAL_FAILS		0	/* false or NULL */
#define GJ_QUAL_PASSES		1
#define GJ_QUAL_UNDECIDED	2

static inline GJ_HOST_DEVICE bool
gj_expr_is_float(int type)
{
	return type == GJ_EXPR_FLOAT4 || type == GJ_EXPR_FLOAT8;
}

/* The value of an attribute's bytes (len 1, 2, 4 or 8) read as kind */
static inline GJ_HOST_DEVICE GjExprDatum
gj_expr_input_of(uint64_t bytes, int len, GjKeyKind kind)
{
	GjExprDatum d;
	int			shift = 64 - 8 * len;
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

	d.isnull = false;
	switch (kind)
	{
		case GJ_KEY_OID:
			d.v.i = (int64_t) (uint32_t) bytes;
			break;
		case GJ_KEY_BOOL:
			d.v.i = (bytes & 0xFF) != 0;
			break;
		case GJ_KEY_FLOAT4:
			f4.u = (uint32_t) bytes;
			d.v.f = (double) f4.f;
			break;
		case GJ_KEY_FLOAT8:
			f8.u = bytes;
			d.v.f = f8.d;
			break;
		case GJ_KEY_SIGNED:
		default:
			d.v.i = (int64_t) (bytes << shift) >> shift;
			break;
	}
	return d;
}

/* Rounded once, as the host's IEEE arithmetic rounds (no fused steps) */
static inline GJ_HOST_DEVICE double
gj_expr_darith(int op, double a, double b)
{
#ifdef __CUDA_ARCH__
	switch (op)
	{
		case GJ_EXPR_ADD:
			return __dadd_rn(a, b);
		case GJ_EXPR_SUB:
			return __dsub_rn(a, b);
		case GJ_EXPR_MUL:
			return __dmul_rn(a, b);
		default:
			return __ddiv_rn(a, b);
	}
#else
	volatile double r;			/* no contraction into a neighbour */

	switch (op)
	{
		case GJ_EXPR_ADD:
			r = a + b;
			break;
		case GJ_EXPR_SUB:
			r = a - b;
			break;
		case GJ_EXPR_MUL:
			r = a * b;
			break;
		default:
			r = a / b;
			break;
	}
	return r;
#endif
}

static inline GJ_HOST_DEVICE float
gj_expr_farith(int op, float a, float b)
{
#ifdef __CUDA_ARCH__
	switch (op)
	{
		case GJ_EXPR_ADD:
			return __fadd_rn(a, b);
		case GJ_EXPR_SUB:
			return __fsub_rn(a, b);
		case GJ_EXPR_MUL:
			return __fmul_rn(a, b);
		default:
			return __fdiv_rn(a, b);
	}
#else
	volatile float r;

	switch (op)
	{
		case GJ_EXPR_ADD:
			r = a + b;
			break;
		case GJ_EXPR_SUB:
			r = a - b;
			break;
		case GJ_EXPR_MUL:
			r = a * b;
			break;
		default:
			r = a / b;
			break;
	}
	return r;
#endif
}

/* Whether an integer fits the integer type */
static inline GJ_HOST_DEVICE bool
gj_expr_fits(int64_t v, int type)
{
	switch (type)
	{
		case GJ_EXPR_INT2:
			return v >= INT16_MIN && v <= INT16_MAX;
		case GJ_EXPR_INT4:
			return v >= INT32_MIN && v <= INT32_MAX;
		default:
			return true;
	}
}

/*
 * a op b for integers of the result type: false where PostgreSQL's
 * function raises an error (out of range, division by zero)
 */
static inline GJ_HOST_DEVICE bool
gj_expr_iarith(int op, int type, int64_t a, int64_t b, int64_t *r)
{
	uint64_t	ua = (uint64_t) a;
	uint64_t	ub = (uint64_t) b;

	switch (op)
	{
		case GJ_EXPR_ADD:
			*r = (int64_t) (ua + ub);
			if (((a ^ *r) & (b ^ *r)) < 0)
				return false;
			break;
		case GJ_EXPR_SUB:
			*r = (int64_t) (ua - ub);
			if (((a ^ b) & (a ^ *r)) < 0)
				return false;
			break;
		case GJ_EXPR_MUL:
#ifdef __CUDA_ARCH__
			*r = (int64_t) (ua * ub);
			if (__mul64hi(a, b) != (*r >> 63))
				return false;
#else
			if (__builtin_mul_overflow(a, b, r))
				return false;
#endif
			break;
		case GJ_EXPR_DIV:
			if (b == 0 || (a == INT64_MIN && b == -1))
				return false;
			*r = a / b;
			break;
		default:				/* GJ_EXPR_MOD */
			if (b == 0)
				return false;
			/* x % -1 is 0, and INT64_MIN % -1 would trap */
			*r = b == -1 ? 0 : a % b;
			break;
	}
	return gj_expr_fits(*r, type);
}

/*
 * A float's arithmetic result, as float.c checks it: false where that
 * raises an error (overflow, underflow, division by zero)
 */
static inline GJ_HOST_DEVICE bool
gj_expr_float_ok(int op, double a, double b, double r)
{
	switch (op)
	{
		case GJ_EXPR_ADD:
		case GJ_EXPR_SUB:
			return !(isinf(r) && !isinf(a) && !isinf(b));
		case GJ_EXPR_MUL:
			return !(isinf(r) && !isinf(a) && !isinf(b)) &&
				!(r == 0.0 && a != 0.0 && b != 0.0);
		default:				/* GJ_EXPR_DIV */
			if (b == 0.0 && !isnan(a))
				return false;
			return !(isinf(r) && !isinf(a)) && !(r == 0.0 && a != 0.0 && !isinf(b));
	}
}

/* a cmp b, for values of the domain of type; neither is NULL */
static inline GJ_HOST_DEVICE bool
gj_expr_compare(int cmp, int type, GjExprDatum a, GjExprDatum b)
{
	int64_t		x = a.v.i;
	int64_t		y = b.v.i;

	if (gj_expr_is_float(type))
	{
		/* PostgreSQL's float order: gj_float_key keeps it in integers */
		x = gj_float_key(a.v.f);
		y = gj_float_key(b.v.f);
	}
	switch (cmp)
	{
		case GJ_EXPR_EQ:
			return x == y;
		case GJ_EXPR_NE:
			return x != y;
		case GJ_EXPR_LT:
			return x < y;
		case GJ_EXPR_LE:
			return x <= y;
		case GJ_EXPR_GT:
			return x > y;
		default:
			return x >= y;
	}
}

/* a cast from one type to another; false where PostgreSQL's cast fails */
static inline GJ_HOST_DEVICE bool
gj_expr_cast(int from, int to, GjExprDatum *a)
{
	if (!gj_expr_is_float(from) && !gj_expr_is_float(to))
		return gj_expr_fits(a->v.i, to);	/* int2/int4/int8 */
	if (!gj_expr_is_float(from))
	{
		/* i4tod, i8tod, i4tof, i8tof: rounded once, from the integer */
#ifdef __CUDA_ARCH__
		a->v.f = to == GJ_EXPR_FLOAT4 ? (double) __ll2float_rn(a->v.i) : __ll2double_rn(a->v.i);
#else
		a->v.f = to == GJ_EXPR_FLOAT4 ? (double) (float) a->v.i : (double) a->v.i;
#endif
		return true;
	}
	if (gj_expr_is_float(to))
	{
		double		d = a->v.f;
		float		f;

		if (from == GJ_EXPR_FLOAT4 || to == GJ_EXPR_FLOAT8)
			return true;		/* ftod: exact */
#ifdef __CUDA_ARCH__
		f = __double2float_rn(d);
#else
		f = (float) d;
#endif
		a->v.f = (double) f;
		/* dtof */
		return !(isinf(f) && !isinf(d)) && !(f == 0.0f && d != 0.0);
	}
	else
	{
		/* dtoi2/4/8, ftoi2/4: rounded to even, then range-checked */
		double		r = rint(a->v.f);
		double		bound = to == GJ_EXPR_INT2 ? 32768.0 :
			to == GJ_EXPR_INT4 ? 2147483648.0 : 9223372036854775808.0;

		if (isnan(r) || !(r >= -bound && r < bound))
			return false;
		a->v.i = (int64_t) r;
		return true;
	}
}

/* a / b rounded toward minus infinity (b > 0) */
static inline GJ_HOST_DEVICE int64_t
gj_floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

/*
 * GJ_EXPR_DATE_FIELD: field of the day *v falls on (unit: GJ_DATE_OF_DATE,
 * *v days from 2000-01-01; GJ_DATE_OF_TIMESTAMP, microseconds), in *v;
 * false for an infinity, whose fields PostgreSQL gives as an infinite
 * numeric or NULL.
 *
 * The calendar is counted in 400-year cycles from 0000-03-01 (146,097 days
 * each; the year 0 is 1 BC), each year from March, so that a leap day is a
 * year's last: within a cycle, the year is the day less the leap days
 * before it, over 365; within a year, months of 153 days in every five
 * (31 30 31 30 31) start at (153 m + 2) / 5.
 */
static inline GJ_HOST_DEVICE bool
gj_expr_date_field(int field, int unit, int64_t *v)
{
	int64_t		days = *v;
	int64_t		cycle;
	int64_t		day_of_cycle;
	int64_t		year_of_cycle;
	int64_t		day_of_year;	/* from March 1st */
	int64_t		march_month;	/* 0: March .. 11: February */
	int64_t		year;
	int64_t		month;
	int64_t		day;
	int64_t		dow;
	bool		leap;

	if (unit == GJ_DATE_OF_TIMESTAMP)
	{
		if (days == GJ_TIMESTAMP_NOBEGIN || days == GJ_TIMESTAMP_NOEND)
			return false;
		days = gj_floor_div(days, GJ_USECS_PER_DAY);
	}
	else if (days == GJ_DATE_NOBEGIN || days == GJ_DATE_NOEND)
		return false;

	/* 2000-01-01 is day 730,425 from 0000-03-01 */
	days += 730425;
	cycle = gj_floor_div(days, 146097);
	day_of_cycle = days - cycle * 146097;
	year_of_cycle = (day_of_cycle - day_of_cycle / 1460 + day_of_cycle / 36524 -
					 day_of_cycle / 146096) / 365;
	day_of_year = day_of_cycle - (365 * year_of_cycle + year_of_cycle / 4 - year_of_cycle / 100);
	march_month = (5 * day_of_year + 2) / 153;
	day = day_of_year - (153 * march_month + 2) / 5 + 1;
	month = march_month < 10 ? march_month + 3 : march_month - 9;
	year = cycle * 400 + year_of_cycle + (month <= 2);
	leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);

	switch (field)
	{
		case GJ_DATE_YEAR:
			*v = year > 0 ? year : year - 1;
			return true;
		case GJ_DATE_QUARTER:
			*v = (month - 1) / 3 + 1;
			return true;
		case GJ_DATE_MONTH:
			*v = month;
			return true;
		case GJ_DATE_DAY:
			*v = day;
			return true;
		case GJ_DATE_DOW:
		case GJ_DATE_ISODOW:
			/* 0000-03-01 was a Wednesday */
			dow = days % 7;
			if (dow < 0)
				dow += 7;
			dow = (dow + 3) % 7;
			*v = field == GJ_DATE_ISODOW && dow == 0 ? 7 : dow;
			return true;
		case GJ_DATE_DOY:
			/* March 1st is day 60 of a common year, 61 of a leap year */
			*v = month <= 2 ? day_of_year - 305 : day_of_year + 60 + leap;
			return true;
		default:
			return false;
	}
}

/*
 * Run program on one row's inputs: GJ_EXPR_DONE with the value in *result,
 * or GJ_EXPR_UNDECIDED
 */
static inline GJ_HOST_DEVICE GjExprOutcome
gj_expr_eval(const GjExprProgram *program, const GjExprDatum *inputs, GjExprDatum *result)
{
	GjExprDatum stack[GJ_EXPR_MAX_DEPTH];
	int			sp = 0;

	for (int s = 0; s < program->nsteps; s++)
	{
		const GjExprStep *step = &program->steps[s];
		GjExprDatum a;
		GjExprDatum b;

		switch (step->op)
		{
			case GJ_EXPR_INPUT:
				stack[sp++] = inputs[step->arg];
				break;
			case GJ_EXPR_CONST:
				stack[sp++] = program->consts[step->arg];
				break;
			case GJ_EXPR_ADD:
			case GJ_EXPR_SUB:
			case GJ_EXPR_MUL:
			case GJ_EXPR_DIV:
			case GJ_EXPR_MOD:
				b = stack[--sp];
				a = stack[sp - 1];
				if (a.isnull || b.isnull)
				{
					stack[sp - 1].isnull = true;
					break;
				}
				if (step->type == GJ_EXPR_FLOAT8)
				{
					a.v.f = gj_expr_darith(step->op, a.v.f, b.v.f);
					if (!gj_expr_float_ok(step->op, stack[sp - 1].v.f, b.v.f, a.v.f))
						return GJ_EXPR_UNDECIDED;
				}
				else if (step->type == GJ_EXPR_FLOAT4)
				{
					float		r = gj_expr_farith(step->op, (float) a.v.f, (float) b.v.f);

					a.v.f = (double) r;
					if (!gj_expr_float_ok(step->op, stack[sp - 1].v.f, b.v.f, a.v.f))
						return GJ_EXPR_UNDECIDED;
				}
				else if (!gj_expr_iarith(step->op, step->type, a.v.i, b.v.i, &a.v.i))
					return GJ_EXPR_UNDECIDED;
				stack[sp - 1] = a;
				break;
			case GJ_EXPR_NEG:
				if (stack[sp - 1].isnull)
					break;
				if (gj_expr_is_float(step->type))
					stack[sp - 1].v.f = -stack[sp - 1].v.f;
				else if (stack[sp - 1].v.i == INT64_MIN ||
						 !gj_expr_fits(-stack[sp - 1].v.i, step->type))
					return GJ_EXPR_UNDECIDED;
				else
					stack[sp - 1].v.i = -stack[sp - 1].v.i;
				break;
			case GJ_EXPR_EQ:
			case GJ_EXPR_NE:
			case GJ_EXPR_LT:
			case GJ_EXPR_LE:
			case GJ_EXPR_GT:
			case GJ_EXPR_GE:
				b = stack[--sp];
				a = stack[sp - 1];
				stack[sp - 1].isnull = a.isnull || b.isnull;
				stack[sp - 1].v.i = !stack[sp - 1].isnull &&
					gj_expr_compare(step->op, step->type, a, b);
				break;
			case GJ_EXPR_AND:
			case GJ_EXPR_OR:
				{
					/* AND: any false decides; OR: any true; else NULL wins */
					int64_t		decisive = step->op == GJ_EXPR_OR;
					bool		decided = false;
					bool		anynull = false;

					for (int k = 0; k < step->arg; k++)
					{
						a = stack[--sp];
						if (a.isnull)
							anynull = true;
						else if (a.v.i == decisive)
							decided = true;
					}
					stack[sp].isnull = !decided && anynull;
					stack[sp].v.i = decided ? decisive : !decisive;
					sp++;
				}
				break;
			case GJ_EXPR_NOT:
				stack[sp - 1].v.i = !stack[sp - 1].v.i;
				break;
			case GJ_EXPR_IS_NULL:
			case GJ_EXPR_IS_NOT_NULL:
				stack[sp - 1].v.i = stack[sp - 1].isnull == (step->op == GJ_EXPR_IS_NULL);
				stack[sp - 1].isnull = false;
				break;
			case GJ_EXPR_IS_TRUE:
			case GJ_EXPR_IS_NOT_TRUE:
			case GJ_EXPR_IS_FALSE:
			case GJ_EXPR_IS_NOT_FALSE:
				{
					bool		want = step->op == GJ_EXPR_IS_TRUE ||
						step->op == GJ_EXPR_IS_NOT_TRUE;
					bool		is = !stack[sp - 1].isnull && (stack[sp - 1].v.i != 0) == want;

					stack[sp - 1].isnull = false;
					stack[sp - 1].v.i = (step->op == GJ_EXPR_IS_TRUE ||
										 step->op == GJ_EXPR_IS_FALSE) ? is : !is;
				}
				break;
			case GJ_EXPR_CAST:
				if (!stack[sp - 1].isnull && !gj_expr_cast(step->from, step->type, &stack[sp - 1]))
					return GJ_EXPR_UNDECIDED;
				break;
			case GJ_EXPR_ANY:
			case GJ_EXPR_ALL:
				{
					/* ExecEvalScalarArrayOp, over a constant array */
					bool		any = step->op == GJ_EXPR_ANY;
					bool		decided = false;
					bool		anynull = false;

					a = stack[sp - 1];
					if (step->count == 0)
					{
						stack[sp - 1].isnull = false;
						stack[sp - 1].v.i = !any;
						break;
					}
					if (a.isnull)
						break;
					for (int k = 0; k < step->count && !decided; k++)
					{
						b = program->consts[step->arg + k];
						if (b.isnull)
							anynull = true;
						else if (gj_expr_compare(step->cmp, step->type, a, b) == any)
							decided = true;
					}
					stack[sp - 1].isnull = !decided && anynull;
					stack[sp - 1].v.i = decided ? any : !any;
				}
				break;
			case GJ_EXPR_DIGITS:
				a = stack[sp - 1];
				if (!a.isnull && (a.v.i >= GJ_EXPR_DIGITS_BOUND || a.v.i <= -GJ_EXPR_DIGITS_BOUND))
					return GJ_EXPR_UNDECIDED;
				break;
			case GJ_EXPR_DATE_FIELD:
				if (!stack[sp - 1].isnull &&
					!gj_expr_date_field(step->arg, step->count, &stack[sp - 1].v.i))
					return GJ_EXPR_UNDECIDED;
				break;
			case GJ_EXPR_ON_HOST:
				if (!stack[sp - 1].isnull && stack[sp - 1].v.i != 0)
					return GJ_EXPR_UNDECIDED;
				break;
			default:
				return GJ_EXPR_UNDECIDED;
		}
	}
	*result = stack[0];
	return GJ_EXPR_DONE;
}

/* A qual program's verdict on a row: GJ_QUAL_FAILS, _PASSES or _UNDECIDED */
static inline GJ_HOST_DEVICE int
gj_expr_qual(const GjExprProgram *program, const GjExprDatum *inputs)
{
	GjExprDatum r;

	if (gj_expr_eval(program, inputs, &r) != GJ_EXPR_DONE)
		return GJ_QUAL_UNDECIDED;
	return !r.isnull && r.v.i != 0 ? GJ_QUAL_PASSES : GJ_QUAL_FAILS;
}

#ifdef __cplusplus
}
#endif

#endif							/* GPUJOIN_EXPR_H */
