/*-------------------------------------------------------------------------
 *
 * test_expr.c
 *	  Kernel tests of the device expression interpreter (cuda/expr/):
 *	  hand-written programs with answers known from PostgreSQL's built-ins,
 *	  and the programs gj_expr_check must refuse
 *
 * Each program is written step by step here, with the answer PostgreSQL 15
 * gives (or the error it raises, which the interpreter must report as
 * undecided) worked out by hand: integer overflow at the result type's
 * width, division by zero, INT_MIN / -1, x % -1, float.c's overflow,
 * underflow and division checks, float4 rounding, PostgreSQL's float order
 * (NaN equal to itself and above everything, -0 = 0), three-valued logic,
 * boolean tests, casts, and ScalarArrayOpExpr over constants.  The CPU
 * interpreter runs each program directly; every check is then also turned
 * into a qual with a known verdict and run through the heap deform's
 * filter (TestDeformQuals, test_heap_deform.c), so that on a GPU the
 * device's own arithmetic (its intrinsics, not the host's) answers too.
 *
 * IDENTIFICATION
 *	  test/kernels/test_expr.c
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "gpujoin_kernels.h"
#include "expr.h"
#include "test_kernels.h"

#define MAX_QUAL_CASES	400

/* The program being written, and the inputs of the row it runs on */
static GjExprProgram prog;
static GjExprDatum row_inputs[GJ_EXPR_MAX_INPUTS];

/* Every check, as a qual for the deform */
static TestQualCase qual_cases[MAX_QUAL_CASES];
static int	nqual_cases = 0;

/* ----------------------------------------------------------------
 *		Writing programs
 * ----------------------------------------------------------------
 */

static void
Begin(void)
{
	memset(&prog, 0, sizeof(prog));
	memset(row_inputs, 0, sizeof(row_inputs));
}

static void
Step(int op, int type, int from, int cmp, int arg, int count)
{
	GjExprStep *step = &prog.steps[prog.nsteps++];

	step->op = (uint8_t) op;
	step->type = (uint8_t) type;
	step->from = (uint8_t) from;
	step->cmp = (uint8_t) cmp;
	step->arg = (int16_t) arg;
	step->count = (int16_t) count;
}

static int
AddConst(bool isnull, int64_t i, double f, bool is_float)
{
	GjExprDatum *d = &prog.consts[prog.nconsts];

	memset(d, 0, sizeof(*d));
	d->isnull = isnull;
	if (is_float)
		d->v.f = f;
	else
		d->v.i = i;
	return prog.nconsts++;
}

/* Push an integer (or bool) constant, a float constant, a NULL */
static void
PushI(int type, int64_t v)
{
	Step(GJ_EXPR_CONST, type, 0, 0, AddConst(false, v, 0, false), 0);
}

static void
PushF(int type, double v)
{
	Step(GJ_EXPR_CONST, type, 0, 0, AddConst(false, 0, v, true), 0);
}

static void
PushNull(int type)
{
	Step(GJ_EXPR_CONST, type, 0, 0, AddConst(true, 0, 0, false), 0);
}

/* Push input index, of type, holding d on the row */
static void
PushInput(int type, int index, GjExprDatum d)
{
	if (index >= prog.ninputs)
		prog.ninputs = index + 1;
	prog.input_types[index] = (uint8_t) type;
	row_inputs[index] = d;
	Step(GJ_EXPR_INPUT, type, 0, 0, index, 0);
}

static GjExprDatum
DatumI(int64_t v)
{
	GjExprDatum d;

	memset(&d, 0, sizeof(d));
	d.v.i = v;
	return d;
}

static GjExprDatum
DatumF(double v)
{
	GjExprDatum d;

	memset(&d, 0, sizeof(d));
	d.v.f = v;
	return d;
}

static GjExprDatum
DatumNull(void)
{
	GjExprDatum d;

	memset(&d, 0, sizeof(d));
	d.isnull = true;
	return d;
}

/* An operator of one or two operands, of the type the op says */
static void
Op(int op, int type)
{
	Step(op, type, 0, 0, 0, 0);
}

static void
Logic(int op, int n)
{
	Step(op, GJ_EXPR_BOOL, 0, 0, n, 0);
}

static void
Cast(int from, int to)
{
	Step(GJ_EXPR_CAST, to, from, 0, 0, 0);
}

/*
 * op (ANY or ALL) of cmp over the list: n integer constants of type, one
 * of them NULL where null_at says (-1: none)
 */
static void
ListI(int op, int cmp, int type, int n, const int64_t *list, int null_at)
{
	int			first = prog.nconsts;

	for (int k = 0; k < n; k++)
		AddConst(k == null_at, list[k], 0, false);
	Step(op, type, 0, cmp, first, n);
}

static void
ListF(int op, int cmp, int type, int n, const double *list)
{
	int			first = prog.nconsts;

	for (int k = 0; k < n; k++)
		AddConst(false, 0, list[k], true);
	Step(op, type, 0, cmp, first, n);
}

/* ----------------------------------------------------------------
 *		Checking a program's answer
 * ----------------------------------------------------------------
 */

typedef enum Want
{
	WANT_UNDECIDED,
	WANT_NULL,
	WANT_INT,					/* also BOOL */
	WANT_FLOAT
} Want;

/*
 * Record the program as a qual of known verdict: a BOOL result as it is;
 * a value compared with the expected one (NaN = NaN in PostgreSQL's order);
 * a NULL or undecided result under IS NULL, which keeps it so
 */
static void
AddQualCase(const char *name, Want want, int type, int64_t i, double f)
{
	TestQualCase *c;
	int			verdict;

	if (nqual_cases >= MAX_QUAL_CASES)
	{
		Failf("more than %d qual cases", MAX_QUAL_CASES);
		TestReport("cpu", "expr: qual cases");
		return;
	}
	switch (want)
	{
		case WANT_UNDECIDED:
			Op(GJ_EXPR_IS_NULL, type);
			verdict = GJ_QUAL_UNDECIDED;
			break;
		case WANT_NULL:
			Op(GJ_EXPR_IS_NULL, type);
			verdict = GJ_QUAL_PASSES;
			break;
		case WANT_INT:
			if (type == GJ_EXPR_BOOL)
				verdict = i ? GJ_QUAL_PASSES : GJ_QUAL_FAILS;
			else
			{
				PushI(type, i);
				Op(GJ_EXPR_EQ, type);
				verdict = GJ_QUAL_PASSES;
			}
			break;
		default:
			PushF(type, f);
			Op(GJ_EXPR_EQ, type);
			verdict = GJ_QUAL_PASSES;
			break;
	}
	c = &qual_cases[nqual_cases++];
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->program = prog;
	memcpy(c->inputs, row_inputs, sizeof(row_inputs));
	c->verdict = verdict;
}

/* Check the program, run it on row_inputs, compare with the answer */
static void
Expect(const char *name, Want want, int type, int64_t i, double f)
{
	GjError		err;
	GjExprDatum result;
	GjExprOutcome outcome;
	char		label[128];

	memset(&err, 0, sizeof(err));
	snprintf(label, sizeof(label), "expr: %s", name);
	if (gj_expr_check(&prog, type == GJ_EXPR_BOOL, &err) != GJ_OK)
	{
		Failf("gj_expr_check refused it: %s", err.message);
		TestReport("cpu", label);
		return;
	}
	memset(&result, 0x5A, sizeof(result));
	outcome = gj_expr_eval(&prog, row_inputs, &result);
	if (want == WANT_UNDECIDED)
	{
		if (outcome != GJ_EXPR_UNDECIDED)
			Failf("done (null %d, %lld, %.17g), expected undecided", result.isnull,
				  (long long) result.v.i, result.v.f);
	}
	else if (outcome != GJ_EXPR_DONE)
		Failf("undecided, expected a value");
	else if (want == WANT_NULL)
	{
		if (!result.isnull)
			Failf("not NULL (%lld, %.17g)", (long long) result.v.i, result.v.f);
	}
	else if (result.isnull)
		Failf("NULL, expected a value");
	else if (want == WANT_INT)
	{
		if (result.v.i != i)
			Failf("%lld, expected %lld", (long long) result.v.i, (long long) i);
	}
	else if (isnan(f) ? !isnan(result.v.f) :
			 memcmp(&result.v.f, &f, sizeof(double)) != 0)
		Failf("%.17g, expected %.17g", result.v.f, f);
	TestReport("cpu", label);
	AddQualCase(name, want, type, i, f);
}

static void
ExpectUndecided(const char *name, int type)
{
	Expect(name, WANT_UNDECIDED, type, 0, 0);
}

static void
ExpectNull(const char *name, int type)
{
	Expect(name, WANT_NULL, type, 0, 0);
}

static void
ExpectInt(const char *name, int type, int64_t v)
{
	Expect(name, WANT_INT, type, v, 0);
}

static void
ExpectFloat(const char *name, int type, double v)
{
	Expect(name, WANT_FLOAT, type, 0, v);
}

/* A bool: 1, 0, or -1 for NULL */
static void
ExpectBool(const char *name, int v)
{
	if (v < 0)
		Expect(name, WANT_NULL, GJ_EXPR_BOOL, 0, 0);
	else
		Expect(name, WANT_INT, GJ_EXPR_BOOL, v, 0);
}

/* a op b on integer constants of type */
static void
IntOp(int op, int type, int64_t a, int64_t b)
{
	Begin();
	PushI(type, a);
	PushI(type, b);
	Op(op, type);
}

static void
FloatOp(int op, int type, double a, double b)
{
	Begin();
	PushF(type, a);
	PushF(type, b);
	Op(op, type);
}

/* A float rounded to float4 by the host, for the expected values */
static double
Float4(double d)
{
	volatile float f = (float) d;

	return (double) f;
}

/* ----------------------------------------------------------------
 *		The programs
 * ----------------------------------------------------------------
 */

static void
TestIntegerArithmetic(void)
{
	IntOp(GJ_EXPR_ADD, GJ_EXPR_INT4, INT32_MAX, 1);
	ExpectUndecided("int4 2147483647 + 1", GJ_EXPR_INT4);
	IntOp(GJ_EXPR_ADD, GJ_EXPR_INT4, INT32_MAX - 1, 1);
	ExpectInt("int4 2147483646 + 1", GJ_EXPR_INT4, INT32_MAX);
	IntOp(GJ_EXPR_ADD, GJ_EXPR_INT2, 32767, 1);
	ExpectUndecided("int2 32767 + 1", GJ_EXPR_INT2);
	IntOp(GJ_EXPR_SUB, GJ_EXPR_INT2, -32768, 1);
	ExpectUndecided("int2 -32768 - 1", GJ_EXPR_INT2);
	IntOp(GJ_EXPR_SUB, GJ_EXPR_INT4, INT32_MIN, 1);
	ExpectUndecided("int4 -2147483648 - 1", GJ_EXPR_INT4);
	IntOp(GJ_EXPR_ADD, GJ_EXPR_INT8, INT64_MAX, 1);
	ExpectUndecided("int8 INT64_MAX + 1", GJ_EXPR_INT8);
	IntOp(GJ_EXPR_SUB, GJ_EXPR_INT8, INT64_MIN, 1);
	ExpectUndecided("int8 INT64_MIN - 1", GJ_EXPR_INT8);
	IntOp(GJ_EXPR_SUB, GJ_EXPR_INT8, -1, INT64_MAX);
	ExpectInt("int8 -1 - INT64_MAX", GJ_EXPR_INT8, INT64_MIN);
	IntOp(GJ_EXPR_DIV, GJ_EXPR_INT8, INT64_MIN, -1);
	ExpectUndecided("int8 INT64_MIN / -1", GJ_EXPR_INT8);
	IntOp(GJ_EXPR_DIV, GJ_EXPR_INT4, INT32_MIN, -1);
	ExpectUndecided("int4 -2147483648 / -1", GJ_EXPR_INT4);
	IntOp(GJ_EXPR_DIV, GJ_EXPR_INT2, -32768, -1);
	ExpectUndecided("int2 -32768 / -1", GJ_EXPR_INT2);
	IntOp(GJ_EXPR_DIV, GJ_EXPR_INT4, -7, 2);
	ExpectInt("int4 -7 / 2 truncates", GJ_EXPR_INT4, -3);
	IntOp(GJ_EXPR_MOD, GJ_EXPR_INT4, 7, -1);
	ExpectInt("int4 7 % -1", GJ_EXPR_INT4, 0);
	IntOp(GJ_EXPR_MOD, GJ_EXPR_INT8, INT64_MIN, -1);
	ExpectInt("int8 INT64_MIN % -1", GJ_EXPR_INT8, 0);
	IntOp(GJ_EXPR_MOD, GJ_EXPR_INT4, -7, 3);
	ExpectInt("int4 -7 % 3", GJ_EXPR_INT4, -1);
	IntOp(GJ_EXPR_DIV, GJ_EXPR_INT4, 1, 0);
	ExpectUndecided("int4 1 / 0", GJ_EXPR_INT4);
	IntOp(GJ_EXPR_MOD, GJ_EXPR_INT8, 1, 0);
	ExpectUndecided("int8 1 % 0", GJ_EXPR_INT8);
	IntOp(GJ_EXPR_MUL, GJ_EXPR_INT4, 65536, 32768);
	ExpectUndecided("int4 65536 * 32768", GJ_EXPR_INT4);
	IntOp(GJ_EXPR_MUL, GJ_EXPR_INT4, -65536, 32768);
	ExpectInt("int4 -65536 * 32768", GJ_EXPR_INT4, INT32_MIN);
	IntOp(GJ_EXPR_MUL, GJ_EXPR_INT8, INT64_C(3037000500), INT64_C(3037000500));
	ExpectUndecided("int8 3037000500 * 3037000500", GJ_EXPR_INT8);
	IntOp(GJ_EXPR_MUL, GJ_EXPR_INT8, INT64_C(-3037000499), INT64_C(3037000499));
	ExpectInt("int8 -3037000499 * 3037000499", GJ_EXPR_INT8, INT64_C(-9223372030926249001));
	IntOp(GJ_EXPR_MUL, GJ_EXPR_INT8, INT64_MIN, -1);
	ExpectUndecided("int8 INT64_MIN * -1", GJ_EXPR_INT8);

	/* int48pl: an int4 operand, an int8 result */
	Begin();
	PushI(GJ_EXPR_INT4, INT32_MAX);
	PushI(GJ_EXPR_INT8, 1);
	Op(GJ_EXPR_ADD, GJ_EXPR_INT8);
	ExpectInt("int4 2147483647 + int8 1", GJ_EXPR_INT8, INT64_C(2147483648));

	Begin();
	PushI(GJ_EXPR_INT4, INT32_MIN);
	Op(GJ_EXPR_NEG, GJ_EXPR_INT4);
	ExpectUndecided("int4 -(-2147483648)", GJ_EXPR_INT4);
	Begin();
	PushI(GJ_EXPR_INT2, -32767);
	Op(GJ_EXPR_NEG, GJ_EXPR_INT2);
	ExpectInt("int2 -(-32767)", GJ_EXPR_INT2, 32767);

	/* NULL in, NULL out, even where the other operand would fail */
	Begin();
	PushNull(GJ_EXPR_INT4);
	PushI(GJ_EXPR_INT4, 0);
	Op(GJ_EXPR_DIV, GJ_EXPR_INT4);
	ExpectNull("int4 NULL / 0", GJ_EXPR_INT4);

	/* from an input row */
	Begin();
	PushInput(GJ_EXPR_INT4, 0, DatumI(INT32_MAX));
	PushInput(GJ_EXPR_INT4, 1, DatumI(-1));
	Op(GJ_EXPR_SUB, GJ_EXPR_INT4);
	ExpectUndecided("int4 input 2147483647 - input -1", GJ_EXPR_INT4);
	Begin();
	PushInput(GJ_EXPR_INT2, 0, DatumI(-300));
	PushI(GJ_EXPR_INT2, 100);
	Op(GJ_EXPR_MUL, GJ_EXPR_INT2);
	ExpectInt("int2 input -300 * 100", GJ_EXPR_INT2, -30000);

	/*
	 * GJ_EXPR_DIGITS: a numeric's scaled value within 18 digits passes, a
	 * NaN (PG_INT64_MAX) or anything larger is undecided, NULL stays NULL
	 */
	{
		const int64_t passes[] = {INT64_C(999999999999999999), -INT64_C(999999999999999999), 0};
		const int64_t undecided[] = {INT64_C(1000000000000000000), -INT64_C(1000000000000000000),
		INT64_MAX, INT64_MAX - 1, INT64_MIN};
		char		name[64];

		for (int i = 0; i < (int) (sizeof(passes) / sizeof(passes[0])); i++)
		{
			Begin();
			PushInput(GJ_EXPR_INT8, 0, DatumI(passes[i]));
			Op(GJ_EXPR_DIGITS, GJ_EXPR_INT8);
			snprintf(name, sizeof(name), "digits %lld", (long long) passes[i]);
			ExpectInt(name, GJ_EXPR_INT8, passes[i]);
		}
		for (int i = 0; i < (int) (sizeof(undecided) / sizeof(undecided[0])); i++)
		{
			Begin();
			PushInput(GJ_EXPR_INT8, 0, DatumI(undecided[i]));
			Op(GJ_EXPR_DIGITS, GJ_EXPR_INT8);
			snprintf(name, sizeof(name), "digits %lld", (long long) undecided[i]);
			ExpectUndecided(name, GJ_EXPR_INT8);
		}
		Begin();
		PushInput(GJ_EXPR_INT8, 0, DatumNull());
		Op(GJ_EXPR_DIGITS, GJ_EXPR_INT8);
		ExpectNull("digits NULL", GJ_EXPR_INT8);
		/* a scaled numeric's arithmetic: 12.34 * (1 - 0.05) at scale 4 */
		Begin();
		PushInput(GJ_EXPR_INT8, 0, DatumI(1234));
		Op(GJ_EXPR_DIGITS, GJ_EXPR_INT8);
		PushI(GJ_EXPR_INT8, 1);
		PushI(GJ_EXPR_INT8, 100);
		Op(GJ_EXPR_MUL, GJ_EXPR_INT8);
		PushInput(GJ_EXPR_INT8, 1, DatumI(5));
		Op(GJ_EXPR_DIGITS, GJ_EXPR_INT8);
		Op(GJ_EXPR_SUB, GJ_EXPR_INT8);
		Op(GJ_EXPR_MUL, GJ_EXPR_INT8);
		ExpectInt("numeric 12.34 * (1 - 0.05) scaled", GJ_EXPR_INT8, 117230);
	}
}

static void
TestFloatArithmetic(void)
{
	FloatOp(GJ_EXPR_DIV, GJ_EXPR_FLOAT8, 1.0, 0.0);
	ExpectUndecided("float8 1.0 / 0.0", GJ_EXPR_FLOAT8);
	FloatOp(GJ_EXPR_DIV, GJ_EXPR_FLOAT8, 0.0, 0.0);
	ExpectUndecided("float8 0.0 / 0.0", GJ_EXPR_FLOAT8);
	FloatOp(GJ_EXPR_DIV, GJ_EXPR_FLOAT8, NAN, 0.0);
	ExpectFloat("float8 NaN / 0.0", GJ_EXPR_FLOAT8, NAN);
	FloatOp(GJ_EXPR_MUL, GJ_EXPR_FLOAT8, 1e308, 10.0);
	ExpectUndecided("float8 1e308 * 10", GJ_EXPR_FLOAT8);
	FloatOp(GJ_EXPR_ADD, GJ_EXPR_FLOAT8, 1e308, 1e308);
	ExpectUndecided("float8 1e308 + 1e308", GJ_EXPR_FLOAT8);
	FloatOp(GJ_EXPR_MUL, GJ_EXPR_FLOAT8, 1e-308, 1e-308);
	ExpectUndecided("float8 1e-308 * 1e-308", GJ_EXPR_FLOAT8);
	FloatOp(GJ_EXPR_DIV, GJ_EXPR_FLOAT8, 1e-300, 1e300);
	ExpectUndecided("float8 1e-300 / 1e300", GJ_EXPR_FLOAT8);
	FloatOp(GJ_EXPR_DIV, GJ_EXPR_FLOAT8, 1.0, INFINITY);
	ExpectFloat("float8 1 / Infinity", GJ_EXPR_FLOAT8, 0.0);
	FloatOp(GJ_EXPR_MUL, GJ_EXPR_FLOAT8, INFINITY, 2.0);
	ExpectFloat("float8 Infinity * 2", GJ_EXPR_FLOAT8, INFINITY);
	FloatOp(GJ_EXPR_SUB, GJ_EXPR_FLOAT8, INFINITY, INFINITY);
	ExpectFloat("float8 Infinity - Infinity", GJ_EXPR_FLOAT8, NAN);
	FloatOp(GJ_EXPR_MUL, GJ_EXPR_FLOAT8, 0.0, 1e-308);
	ExpectFloat("float8 0 * 1e-308", GJ_EXPR_FLOAT8, 0.0);
	FloatOp(GJ_EXPR_ADD, GJ_EXPR_FLOAT8, 0.1, 0.2);
	ExpectFloat("float8 0.1 + 0.2", GJ_EXPR_FLOAT8, 0.30000000000000004);

	/* float4: rounded to float at each step, and its own range */
	FloatOp(GJ_EXPR_ADD, GJ_EXPR_FLOAT4, 16777216.0, 1.0);
	ExpectFloat("float4 16777216 + 1", GJ_EXPR_FLOAT4, 16777216.0);
	FloatOp(GJ_EXPR_ADD, GJ_EXPR_FLOAT4, Float4(0.1), Float4(0.2));
	ExpectFloat("float4 0.1 + 0.2", GJ_EXPR_FLOAT4, Float4(Float4(0.1) + Float4(0.2)));
	FloatOp(GJ_EXPR_MUL, GJ_EXPR_FLOAT4, Float4(3e38), 10.0);
	ExpectUndecided("float4 3e38 * 10", GJ_EXPR_FLOAT4);
	FloatOp(GJ_EXPR_MUL, GJ_EXPR_FLOAT4, Float4(1e-30), Float4(1e-30));
	ExpectUndecided("float4 1e-30 * 1e-30", GJ_EXPR_FLOAT4);
	FloatOp(GJ_EXPR_DIV, GJ_EXPR_FLOAT4, 1.0, 0.0);
	ExpectUndecided("float4 1 / 0", GJ_EXPR_FLOAT4);

	/* float48mul: a float4 operand, a float8 result, no float rounding */
	Begin();
	PushF(GJ_EXPR_FLOAT4, 16777216.0);
	PushF(GJ_EXPR_FLOAT8, 1.0);
	Op(GJ_EXPR_ADD, GJ_EXPR_FLOAT8);
	ExpectFloat("float4 16777216 + float8 1", GJ_EXPR_FLOAT8, 16777217.0);

	Begin();
	PushInput(GJ_EXPR_FLOAT8, 0, DatumF(-0.0));
	Op(GJ_EXPR_NEG, GJ_EXPR_FLOAT8);
	ExpectFloat("float8 -(input -0)", GJ_EXPR_FLOAT8, 0.0);
}

static void
TestComparisons(void)
{
	FloatOp(GJ_EXPR_EQ, GJ_EXPR_FLOAT8, NAN, NAN);
	ExpectBool("float8 NaN = NaN", 1);
	FloatOp(GJ_EXPR_NE, GJ_EXPR_FLOAT8, NAN, NAN);
	ExpectBool("float8 NaN <> NaN", 0);
	FloatOp(GJ_EXPR_GT, GJ_EXPR_FLOAT8, NAN, 1e308);
	ExpectBool("float8 NaN > 1e308", 1);
	FloatOp(GJ_EXPR_GT, GJ_EXPR_FLOAT8, NAN, INFINITY);
	ExpectBool("float8 NaN > Infinity", 1);
	FloatOp(GJ_EXPR_LT, GJ_EXPR_FLOAT8, 1.0, NAN);
	ExpectBool("float8 1 < NaN", 1);
	FloatOp(GJ_EXPR_EQ, GJ_EXPR_FLOAT8, -0.0, 0.0);
	ExpectBool("float8 -0 = 0", 1);
	FloatOp(GJ_EXPR_LT, GJ_EXPR_FLOAT8, -0.0, 0.0);
	ExpectBool("float8 -0 < 0", 0);
	FloatOp(GJ_EXPR_LT, GJ_EXPR_FLOAT8, -INFINITY, -1e308);
	ExpectBool("float8 -Infinity < -1e308", 1);
	FloatOp(GJ_EXPR_GE, GJ_EXPR_FLOAT4, Float4(0.1), Float4(0.1));
	ExpectBool("float4 0.1 >= 0.1", 1);

	/* float48eq: the float4 widened, not the float8 narrowed */
	Begin();
	PushF(GJ_EXPR_FLOAT4, Float4(0.1));
	PushF(GJ_EXPR_FLOAT8, 0.1);
	Op(GJ_EXPR_EQ, GJ_EXPR_FLOAT8);
	ExpectBool("float4 0.1 = float8 0.1", 0);

	IntOp(GJ_EXPR_LT, GJ_EXPR_INT8, INT64_MIN, INT64_MAX);
	ExpectBool("int8 INT64_MIN < INT64_MAX", 1);
	IntOp(GJ_EXPR_LE, GJ_EXPR_INT4, 2, 2);
	ExpectBool("int4 2 <= 2", 1);
	IntOp(GJ_EXPR_LT, GJ_EXPR_INT4, 2, 2);
	ExpectBool("int4 2 < 2", 0);
	IntOp(GJ_EXPR_GE, GJ_EXPR_INT4, 3, 4);
	ExpectBool("int4 3 >= 4", 0);
	IntOp(GJ_EXPR_GT, GJ_EXPR_INT2, -1, -2);
	ExpectBool("int2 -1 > -2", 1);

	/* int48lt: the int4 widened */
	Begin();
	PushI(GJ_EXPR_INT4, -1);
	PushI(GJ_EXPR_INT8, INT64_C(4294967295));
	Op(GJ_EXPR_LT, GJ_EXPR_INT8);
	ExpectBool("int4 -1 < int8 4294967295", 1);

	Begin();
	PushNull(GJ_EXPR_INT4);
	PushNull(GJ_EXPR_INT4);
	Op(GJ_EXPR_EQ, GJ_EXPR_INT4);
	ExpectBool("int4 NULL = NULL", -1);

	Begin();
	PushInput(GJ_EXPR_FLOAT8, 0, DatumF(NAN));
	PushInput(GJ_EXPR_FLOAT8, 1, DatumF(INFINITY));
	Op(GJ_EXPR_GT, GJ_EXPR_FLOAT8);
	ExpectBool("float8 input NaN > input Infinity", 1);
}

/* op over n BOOL values, each 1, 0 or -1 (NULL) */
static void
LogicOf(int op, int n, const int *values)
{
	Begin();
	for (int k = 0; k < n; k++)
	{
		if (values[k] < 0)
			PushNull(GJ_EXPR_BOOL);
		else
			PushI(GJ_EXPR_BOOL, values[k]);
	}
	if (op == GJ_EXPR_NOT || op >= GJ_EXPR_IS_NULL)
		Op(op, GJ_EXPR_BOOL);
	else
		Logic(op, n);
}

static void
TestLogic(void)
{
	/* SQL's three-valued truth tables, one value NULL at a time */
	static const struct
	{
		int			op;
		int			a;
		int			b;
		int			want;
		const char *name;
	}			table[] = {
		{GJ_EXPR_AND, 1, 1, 1, "true AND true"},
		{GJ_EXPR_AND, 1, 0, 0, "true AND false"},
		{GJ_EXPR_AND, 1, -1, -1, "true AND NULL"},
		{GJ_EXPR_AND, -1, 0, 0, "NULL AND false"},
		{GJ_EXPR_AND, 0, -1, 0, "false AND NULL"},
		{GJ_EXPR_AND, -1, -1, -1, "NULL AND NULL"},
		{GJ_EXPR_OR, 0, 0, 0, "false OR false"},
		{GJ_EXPR_OR, 0, -1, -1, "false OR NULL"},
		{GJ_EXPR_OR, -1, 1, 1, "NULL OR true"},
		{GJ_EXPR_OR, 1, -1, 1, "true OR NULL"},
		{GJ_EXPR_OR, -1, -1, -1, "NULL OR NULL"},
	};
	static const struct
	{
		int			op;
		int			a;
		int			want;
		const char *name;
	}			unary[] = {
		{GJ_EXPR_NOT, -1, -1, "NOT NULL"},
		{GJ_EXPR_NOT, 1, 0, "NOT true"},
		{GJ_EXPR_NOT, 0, 1, "NOT false"},
		{GJ_EXPR_IS_TRUE, -1, 0, "NULL IS TRUE"},
		{GJ_EXPR_IS_NOT_TRUE, -1, 1, "NULL IS NOT TRUE"},
		{GJ_EXPR_IS_FALSE, -1, 0, "NULL IS FALSE"},
		{GJ_EXPR_IS_NOT_FALSE, -1, 1, "NULL IS NOT FALSE"},
		{GJ_EXPR_IS_TRUE, 1, 1, "true IS TRUE"},
		{GJ_EXPR_IS_NOT_TRUE, 0, 1, "false IS NOT TRUE"},
		{GJ_EXPR_IS_FALSE, 0, 1, "false IS FALSE"},
		{GJ_EXPR_IS_NOT_FALSE, 0, 0, "false IS NOT FALSE"},
		{GJ_EXPR_IS_NOT_FALSE, 1, 1, "true IS NOT FALSE"},
		{GJ_EXPR_IS_NULL, -1, 1, "NULL IS NULL"},
		{GJ_EXPR_IS_NULL, 0, 0, "false IS NULL"},
		{GJ_EXPR_IS_NOT_NULL, -1, 0, "NULL IS NOT NULL"},
	};

	for (int t = 0; t < (int) (sizeof(table) / sizeof(table[0])); t++)
	{
		int			values[2] = {table[t].a, table[t].b};

		LogicOf(table[t].op, 2, values);
		ExpectBool(table[t].name, table[t].want);
	}
	for (int t = 0; t < (int) (sizeof(unary) / sizeof(unary[0])); t++)
	{
		LogicOf(unary[t].op, 1, &unary[t].a);
		ExpectBool(unary[t].name, unary[t].want);
	}

	/* more than two operands: one false decides AND over NULLs, not OR */
	{
		int			values[4] = {-1, 1, 0, -1};

		LogicOf(GJ_EXPR_AND, 4, values);
		ExpectBool("AND(NULL, true, false, NULL)", 0);
		LogicOf(GJ_EXPR_OR, 4, values);
		ExpectBool("OR(NULL, true, false, NULL)", 1);
		values[1] = 0;
		LogicOf(GJ_EXPR_OR, 4, values);
		ExpectBool("OR(NULL, false, false, NULL)", -1);
	}

	/* IS NULL of a non-bool, from an input */
	Begin();
	PushInput(GJ_EXPR_INT8, 0, DatumNull());
	Op(GJ_EXPR_IS_NULL, GJ_EXPR_INT8);
	ExpectBool("int8 input NULL IS NULL", 1);
	Begin();
	PushInput(GJ_EXPR_FLOAT8, 0, DatumF(NAN));
	Op(GJ_EXPR_IS_NOT_NULL, GJ_EXPR_FLOAT8);
	ExpectBool("float8 input NaN IS NOT NULL", 1);

	/* a NULL comparison under NOT, then IS NOT FALSE */
	Begin();
	PushInput(GJ_EXPR_INT4, 0, DatumNull());
	PushI(GJ_EXPR_INT4, 1);
	Op(GJ_EXPR_GT, GJ_EXPR_INT4);
	Op(GJ_EXPR_NOT, GJ_EXPR_BOOL);
	Op(GJ_EXPR_IS_NOT_FALSE, GJ_EXPR_BOOL);
	ExpectBool("(NOT (NULL > 1)) IS NOT FALSE", 1);

	/*
	 * ON_HOST: a scan's quals the device evaluates, then the host's: a row
	 * they pass is undecided (the host evaluates the rest), one they fail
	 * or leave NULL fails as it is
	 */
	{
		static const struct
		{
			int64_t		z;
			bool		isnull;
			int			want;	/* 1 undecided, 0 false, -1 NULL */
		}			rows[] = {{7, false, 1}, {3, false, 0}, {0, true, -1}};

		for (int r = 0; r < 3; r++)
		{
			char		name[64];

			Begin();
			PushInput(GJ_EXPR_INT4, 0, rows[r].isnull ? DatumNull() : DatumI(rows[r].z));
			PushI(GJ_EXPR_INT4, 5);
			Op(GJ_EXPR_GT, GJ_EXPR_INT4);
			Op(GJ_EXPR_ON_HOST, GJ_EXPR_BOOL);
			snprintf(name, sizeof(name), "ON_HOST(z > 5), z %s",
					 rows[r].isnull ? "NULL" : rows[r].z == 7 ? "7" : "3");
			if (rows[r].want > 0)
				ExpectUndecided(name, GJ_EXPR_BOOL);
			else
				ExpectBool(name, rows[r].want);
		}
	}
	/* every qual the host's: each row undecided */
	Begin();
	PushI(GJ_EXPR_BOOL, 1);
	Op(GJ_EXPR_ON_HOST, GJ_EXPR_BOOL);
	ExpectUndecided("ON_HOST(true): every row the host's", GJ_EXPR_BOOL);
}

/* Cast constant a (of from) to to */
static void
CastI(int from, int to, int64_t a)
{
	Begin();
	PushI(from, a);
	Cast(from, to);
}

static void
CastF(int from, int to, double a)
{
	Begin();
	PushF(from, a);
	Cast(from, to);
}

static void
TestCasts(void)
{
	CastI(GJ_EXPR_INT8, GJ_EXPR_INT4, INT64_C(3000000000));
	ExpectUndecided("int8 3000000000 :: int4", GJ_EXPR_INT4);
	CastI(GJ_EXPR_INT8, GJ_EXPR_INT4, INT32_MIN);
	ExpectInt("int8 -2147483648 :: int4", GJ_EXPR_INT4, INT32_MIN);
	CastI(GJ_EXPR_INT4, GJ_EXPR_INT2, 32768);
	ExpectUndecided("int4 32768 :: int2", GJ_EXPR_INT2);
	CastI(GJ_EXPR_INT2, GJ_EXPR_INT8, -5);
	ExpectInt("int2 -5 :: int8", GJ_EXPR_INT8, -5);

	/* dtoi4 and friends: rint, so halves to even */
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_INT4, 2.5);
	ExpectInt("float8 2.5 :: int4", GJ_EXPR_INT4, 2);
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_INT4, 3.5);
	ExpectInt("float8 3.5 :: int4", GJ_EXPR_INT4, 4);
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_INT4, -2.5);
	ExpectInt("float8 -2.5 :: int4", GJ_EXPR_INT4, -2);
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_INT4, NAN);
	ExpectUndecided("float8 NaN :: int4", GJ_EXPR_INT4);
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_INT4, 2147483647.4);
	ExpectInt("float8 2147483647.4 :: int4", GJ_EXPR_INT4, INT32_MAX);
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_INT4, 2147483647.5);
	ExpectUndecided("float8 2147483647.5 :: int4", GJ_EXPR_INT4);
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_INT4, -2147483648.4);
	ExpectInt("float8 -2147483648.4 :: int4", GJ_EXPR_INT4, INT32_MIN);
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_INT8, 9223372036854775808.0);
	ExpectUndecided("float8 2^63 :: int8", GJ_EXPR_INT8);
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_INT8, -9223372036854775808.0);
	ExpectInt("float8 -2^63 :: int8", GJ_EXPR_INT8, INT64_MIN);
	CastF(GJ_EXPR_FLOAT4, GJ_EXPR_INT2, -32768.5);
	ExpectInt("float4 -32768.5 :: int2", GJ_EXPR_INT2, -32768);
	CastF(GJ_EXPR_FLOAT4, GJ_EXPR_INT2, 32767.5);
	ExpectUndecided("float4 32767.5 :: int2", GJ_EXPR_INT2);
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_INT8, INFINITY);
	ExpectUndecided("float8 Infinity :: int8", GJ_EXPR_INT8);

	/* i8tod, i8tof: one rounding from the integer */
	CastI(GJ_EXPR_INT8, GJ_EXPR_FLOAT8, INT64_C(9007199254740993));
	ExpectFloat("int8 9007199254740993 :: float8", GJ_EXPR_FLOAT8, 9007199254740992.0);
	CastI(GJ_EXPR_INT4, GJ_EXPR_FLOAT4, 16777219);
	ExpectFloat("int4 16777219 :: float4", GJ_EXPR_FLOAT4, 16777220.0);

	/*
	 * 2^60 + 2^36 + 1 lies just above halfway between two floats: one
	 * rounding gives the upper, 2^60 + 2^37; through a double it would lose
	 * the 1, land on the halfway point and round to even, 2^60
	 */
	CastI(GJ_EXPR_INT8, GJ_EXPR_FLOAT4, INT64_C(1152921573326323713));
	ExpectFloat("int8 2^60 + 2^36 + 1 :: float4", GJ_EXPR_FLOAT4, 1152921642045800448.0);

	/* dtof: float4's range */
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_FLOAT4, 1e300);
	ExpectUndecided("float8 1e300 :: float4", GJ_EXPR_FLOAT4);
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_FLOAT4, 1e-300);
	ExpectUndecided("float8 1e-300 :: float4", GJ_EXPR_FLOAT4);
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_FLOAT4, -INFINITY);
	ExpectFloat("float8 -Infinity :: float4", GJ_EXPR_FLOAT4, -INFINITY);
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_FLOAT4, NAN);
	ExpectFloat("float8 NaN :: float4", GJ_EXPR_FLOAT4, NAN);
	CastF(GJ_EXPR_FLOAT8, GJ_EXPR_FLOAT4, 0.1);
	ExpectFloat("float8 0.1 :: float4", GJ_EXPR_FLOAT4, Float4(0.1));
	CastF(GJ_EXPR_FLOAT4, GJ_EXPR_FLOAT8, Float4(0.1));
	ExpectFloat("float4 0.1 :: float8", GJ_EXPR_FLOAT8, Float4(0.1));

	Begin();
	PushNull(GJ_EXPR_FLOAT8);
	Cast(GJ_EXPR_FLOAT8, GJ_EXPR_INT2);
	ExpectNull("float8 NULL :: int2", GJ_EXPR_INT2);
}

/* x op cmp (list) with x an int4 (NULL when x_null) */
static void
IntList(int op, int cmp, bool x_null, int64_t x, int n, const int64_t *list, int null_at)
{
	Begin();
	if (x_null)
		PushInput(GJ_EXPR_INT4, 0, DatumNull());
	else
		PushInput(GJ_EXPR_INT4, 0, DatumI(x));
	ListI(op, cmp, GJ_EXPR_INT4, n, list, null_at);
}

static void
TestArrays(void)
{
	static const int64_t one_two[] = {1, 2};
	static const int64_t one_seven[] = {1, 7};
	static const double floats[] = {1.0, NAN};

	IntList(GJ_EXPR_ANY, GJ_EXPR_EQ, true, 0, 0, NULL, -1);
	ExpectBool("NULL IN ()", 0);
	IntList(GJ_EXPR_ANY, GJ_EXPR_EQ, false, 1, 0, NULL, -1);
	ExpectBool("1 IN ()", 0);
	IntList(GJ_EXPR_ALL, GJ_EXPR_NE, true, 0, 0, NULL, -1);
	ExpectBool("NULL <> ALL ()", 1);
	IntList(GJ_EXPR_ANY, GJ_EXPR_EQ, true, 0, 1, one_two, -1);
	ExpectBool("NULL IN (1)", -1);
	IntList(GJ_EXPR_ALL, GJ_EXPR_NE, true, 0, 1, one_two, -1);
	ExpectBool("NULL <> ALL (1)", -1);
	IntList(GJ_EXPR_ANY, GJ_EXPR_EQ, false, 3, 2, one_two, 1);
	ExpectBool("3 IN (1, NULL)", -1);
	IntList(GJ_EXPR_ANY, GJ_EXPR_EQ, false, 1, 2, one_two, 1);
	ExpectBool("1 IN (1, NULL)", 1);
	IntList(GJ_EXPR_ANY, GJ_EXPR_EQ, false, 1, 2, one_two, 0);
	ExpectBool("1 IN (NULL, 2)", -1);
	IntList(GJ_EXPR_ANY, GJ_EXPR_EQ, false, 3, 2, one_two, -1);
	ExpectBool("3 IN (1, 2)", 0);
	IntList(GJ_EXPR_ANY, GJ_EXPR_EQ, false, 2, 2, one_two, -1);
	ExpectBool("2 IN (1, 2)", 1);
	IntList(GJ_EXPR_ALL, GJ_EXPR_NE, false, 3, 2, one_two, 1);
	ExpectBool("3 <> ALL (1, NULL)", -1);
	IntList(GJ_EXPR_ALL, GJ_EXPR_NE, false, 1, 2, one_two, 1);
	ExpectBool("1 <> ALL (1, NULL)", 0);
	IntList(GJ_EXPR_ALL, GJ_EXPR_NE, false, 3, 2, one_two, -1);
	ExpectBool("3 <> ALL (1, 2)", 1);
	IntList(GJ_EXPR_ANY, GJ_EXPR_LT, false, 5, 2, one_seven, -1);
	ExpectBool("5 < ANY (1, 7)", 1);
	IntList(GJ_EXPR_ALL, GJ_EXPR_GT, false, 5, 2, one_seven, -1);
	ExpectBool("5 > ALL (1, 7)", 0);
	IntList(GJ_EXPR_ALL, GJ_EXPR_GE, false, 7, 2, one_seven, -1);
	ExpectBool("7 >= ALL (1, 7)", 1);

	Begin();
	PushF(GJ_EXPR_FLOAT8, NAN);
	ListF(GJ_EXPR_ANY, GJ_EXPR_EQ, GJ_EXPR_FLOAT8, 2, floats);
	ExpectBool("float8 NaN IN (1, NaN)", 1);
	Begin();
	PushF(GJ_EXPR_FLOAT8, INFINITY);
	ListF(GJ_EXPR_ALL, GJ_EXPR_LT, GJ_EXPR_FLOAT8, 2, floats);
	ExpectBool("float8 Infinity < ALL (1, NaN)", 0);
}

/* ----------------------------------------------------------------
 *		What gj_expr_check refuses
 * ----------------------------------------------------------------
 */

static void
ExpectRefused(const char *name, bool is_qual)
{
	GjError		err;
	char		label[128];

	memset(&err, 0, sizeof(err));
	snprintf(label, sizeof(label), "expr check refuses: %s", name);
	if (gj_expr_check(&prog, is_qual, &err) != GJ_ERROR_INVALID_ARGUMENT)
		Failf("accepted");
	else if (strstr(err.message, "device expression") == NULL)
		Failf("message \"%s\"", err.message);
	TestReport("cpu", label);
}

static void
ExpectAccepted(const char *name, bool is_qual)
{
	GjError		err;
	char		label[128];

	memset(&err, 0, sizeof(err));
	snprintf(label, sizeof(label), "expr check accepts: %s", name);
	if (gj_expr_check(&prog, is_qual, &err) != GJ_OK)
		Failf("refused: %s", err.message);
	TestReport("cpu", label);
}

/*
 * EXTRACT's day fields (GJ_EXPR_DATE_FIELD) of dates and timestamps, with
 * PostgreSQL 15's answers: leap days of 2000 and of 5 BC (the year -4),
 * the turns of years, months and the century, the first and last days
 * PostgreSQL's date type holds, and a timestamp a microsecond before
 * 2000-01-01 (the day before: the division rounds down)
 */
typedef struct DateCase
{
	const char *text;
	int			unit;			/* GJ_DATE_OF_DATE or GJ_DATE_OF_TIMESTAMP */
	int64_t		value;			/* days or microseconds from 2000-01-01 */
	int64_t		fields[GJ_DATE_FIELDS];	/* year quarter month day dow isodow doy */
} DateCase;

static const DateCase date_cases[] = {
	{"2000-01-01", GJ_DATE_OF_DATE, 0, {2000, 1, 1, 1, 6, 6, 1}},
	{"1999-12-31", GJ_DATE_OF_DATE, -1, {1999, 4, 12, 31, 5, 5, 365}},
	{"2000-02-29", GJ_DATE_OF_DATE, 59, {2000, 1, 2, 29, 2, 2, 60}},
	{"2000-03-01", GJ_DATE_OF_DATE, 60, {2000, 1, 3, 1, 3, 3, 61}},
	{"1900-03-01", GJ_DATE_OF_DATE, -36465, {1900, 1, 3, 1, 4, 4, 60}},
	{"2024-12-31", GJ_DATE_OF_DATE, 9131, {2024, 4, 12, 31, 2, 2, 366}},
	{"2023-06-18", GJ_DATE_OF_DATE, 8569, {2023, 2, 6, 18, 0, 7, 169}},
	{"1970-01-01", GJ_DATE_OF_DATE, -10957, {1970, 1, 1, 1, 4, 4, 1}},
	{"0001-01-01", GJ_DATE_OF_DATE, -730119, {1, 1, 1, 1, 1, 1, 1}},
	{"0001-12-31 BC", GJ_DATE_OF_DATE, -730120, {-1, 4, 12, 31, 0, 7, 366}},
	{"0005-02-29 BC", GJ_DATE_OF_DATE, -731887, {-5, 1, 2, 29, 4, 4, 60}},
	{"0005-12-31 BC", GJ_DATE_OF_DATE, -731581, {-5, 4, 12, 31, 2, 2, 366}},
	{"4713-11-24 BC", GJ_DATE_OF_DATE, -2451179, {-4713, 4, 11, 24, 3, 3, 329}},
	{"5874897-12-31", GJ_DATE_OF_DATE, 2145031948, {5874897, 4, 12, 31, 2, 2, 365}},
	{"1999-12-31 23:59:59.999999", GJ_DATE_OF_TIMESTAMP, -1, {1999, 4, 12, 31, 5, 5, 365}},
	{"2000-01-01 00:00:00", GJ_DATE_OF_TIMESTAMP, 0, {2000, 1, 1, 1, 6, 6, 1}},
	{"1582-10-04 12:00:00", GJ_DATE_OF_TIMESTAMP, INT64_C(-13166884800000000),
	 {1582, 4, 10, 4, 1, 1, 277}},
	{"4713-11-24 00:00:00.000001 BC", GJ_DATE_OF_TIMESTAMP, INT64_C(-211781865599999999),
	 {-4713, 4, 11, 24, 3, 3, 329}},
	{"294276-12-31 23:59:59.999999", GJ_DATE_OF_TIMESTAMP, INT64_C(9223371331199999999),
	 {294276, 4, 12, 31, 0, 7, 366}}
};

static const char *const date_field_names[GJ_DATE_FIELDS] = {
	"year", "quarter", "month", "day", "dow", "isodow", "doy"
};

/* field of input 0, a date's days (INT4) or a timestamp's microseconds (INT8) */
static void
DateField(int field, int unit, GjExprDatum d)
{
	Begin();
	PushInput(unit == GJ_DATE_OF_TIMESTAMP ? GJ_EXPR_INT8 : GJ_EXPR_INT4, 0, d);
	Step(GJ_EXPR_DATE_FIELD, GJ_EXPR_INT8, 0, 0, field, unit);
}

static void
TestDateFields(void)
{
	char		name[96];

	for (int c = 0; c < (int) (sizeof(date_cases) / sizeof(date_cases[0])); c++)
		for (int f = 0; f < GJ_DATE_FIELDS; f++)
		{
			const DateCase *dc = &date_cases[c];

			snprintf(name, sizeof(name), "extract(%s from %s '%s')", date_field_names[f],
					 dc->unit == GJ_DATE_OF_DATE ? "date" : "timestamp", dc->text);
			DateField(f, dc->unit, DatumI(dc->value));
			ExpectInt(name, GJ_EXPR_INT8, dc->fields[f]);
		}

	/* infinities: an infinite numeric or NULL in PostgreSQL, so undecided */
	DateField(GJ_DATE_YEAR, GJ_DATE_OF_DATE, DatumI(INT32_MAX));
	ExpectUndecided("extract(year from date 'infinity')", GJ_EXPR_INT8);
	DateField(GJ_DATE_MONTH, GJ_DATE_OF_DATE, DatumI(INT32_MIN));
	ExpectUndecided("extract(month from date '-infinity')", GJ_EXPR_INT8);
	DateField(GJ_DATE_YEAR, GJ_DATE_OF_TIMESTAMP, DatumI(INT64_MAX));
	ExpectUndecided("extract(year from timestamp 'infinity')", GJ_EXPR_INT8);
	DateField(GJ_DATE_DOY, GJ_DATE_OF_TIMESTAMP, DatumI(INT64_MIN));
	ExpectUndecided("extract(doy from timestamp '-infinity')", GJ_EXPR_INT8);
	DateField(GJ_DATE_YEAR, GJ_DATE_OF_DATE, DatumNull());
	ExpectNull("extract(year from NULL::date)", GJ_EXPR_INT8);

	/* what gj_expr_check refuses */
	DateField(GJ_DATE_FIELDS, GJ_DATE_OF_DATE, DatumI(0));
	ExpectRefused("DATE_FIELD of an unknown field", false);
	DateField(GJ_DATE_YEAR, 2, DatumI(0));
	ExpectRefused("DATE_FIELD of an unknown unit", false);
	Begin();
	PushInput(GJ_EXPR_INT8, 0, DatumI(0));
	Step(GJ_EXPR_DATE_FIELD, GJ_EXPR_INT8, 0, 0, GJ_DATE_YEAR, GJ_DATE_OF_DATE);
	ExpectRefused("DATE_FIELD of a date as an INT8", false);
	Begin();
	PushInput(GJ_EXPR_INT4, 0, DatumI(0));
	Step(GJ_EXPR_DATE_FIELD, GJ_EXPR_INT8, 0, 0, GJ_DATE_YEAR, GJ_DATE_OF_TIMESTAMP);
	ExpectRefused("DATE_FIELD of a timestamp as an INT4", false);
	DateField(GJ_DATE_YEAR, GJ_DATE_OF_DATE, DatumI(0));
	prog.steps[1].type = GJ_EXPR_INT4;
	ExpectRefused("DATE_FIELD giving an INT4", false);
}

static void
TestCheck(void)
{
	Begin();
	ExpectRefused("no steps", false);

	Begin();
	PushInput(GJ_EXPR_INT4, 0, DatumI(1));
	prog.steps[0].arg = 1;
	ExpectRefused("input index past ninputs", false);
	prog.steps[0].arg = -1;
	ExpectRefused("input index -1", false);
	prog.steps[0].arg = 0;
	prog.input_types[0] = GJ_EXPR_INT8;
	ExpectRefused("input of another type than input_types says", false);
	prog.ninputs = GJ_EXPR_MAX_INPUTS + 1;
	ExpectRefused("ninputs past GJ_EXPR_MAX_INPUTS", false);

	Begin();
	PushI(GJ_EXPR_INT4, 1);
	prog.steps[0].arg = 1;
	ExpectRefused("const index past nconsts", false);
	prog.steps[0].arg = 0;
	ExpectAccepted("one int4 constant", false);
	ExpectRefused("an int4 as a qual", true);

	Begin();
	PushI(GJ_EXPR_INT4, 1);
	Op(GJ_EXPR_ADD, GJ_EXPR_INT4);
	ExpectRefused("stack underflow (ADD of one value)", false);
	Begin();
	Op(GJ_EXPR_NOT, GJ_EXPR_BOOL);
	ExpectRefused("stack underflow (NOT of nothing)", true);

	Begin();
	PushI(GJ_EXPR_BOOL, 1);
	PushI(GJ_EXPR_BOOL, 1);
	ExpectRefused("two values left", true);

	Begin();
	PushI(GJ_EXPR_INT4, 1);
	Op(GJ_EXPR_ON_HOST, GJ_EXPR_BOOL);
	ExpectRefused("ON_HOST of an INT4", true);
	Begin();
	PushI(GJ_EXPR_BOOL, 1);
	Op(GJ_EXPR_ON_HOST, GJ_EXPR_INT4);
	ExpectRefused("ON_HOST giving an INT4", false);
	Begin();
	Op(GJ_EXPR_ON_HOST, GJ_EXPR_BOOL);
	ExpectRefused("ON_HOST of nothing", true);

	Begin();
	PushF(GJ_EXPR_FLOAT4, 1.0);
	PushF(GJ_EXPR_FLOAT8, 1.0);
	Op(GJ_EXPR_ADD, GJ_EXPR_FLOAT4);
	ExpectRefused("FLOAT4 ADD of a FLOAT8", false);
	prog.steps[2].type = GJ_EXPR_FLOAT8;
	ExpectAccepted("FLOAT8 ADD of a FLOAT4 and a FLOAT8", false);
	prog.steps[2].op = GJ_EXPR_MOD;
	ExpectRefused("MOD of floats", false);

	Begin();
	PushI(GJ_EXPR_INT8, 1);
	PushI(GJ_EXPR_INT4, 1);
	Op(GJ_EXPR_ADD, GJ_EXPR_INT4);
	ExpectRefused("INT4 ADD of an INT8", false);

	Begin();
	PushI(GJ_EXPR_INT4, 1);
	PushF(GJ_EXPR_FLOAT8, 1.0);
	Op(GJ_EXPR_LT, GJ_EXPR_FLOAT8);
	ExpectRefused("FLOAT8 LT of an INT4", true);

	Begin();
	PushI(GJ_EXPR_BOOL, 1);
	PushI(GJ_EXPR_INT4, 1);
	Logic(GJ_EXPR_AND, 2);
	ExpectRefused("AND of an INT4", true);
	prog.steps[1].type = GJ_EXPR_BOOL;
	ExpectAccepted("AND of two BOOLs", true);
	prog.steps[2].arg = 3;
	ExpectRefused("AND of more values than the stack holds", true);
	prog.steps[2].arg = 0;
	ExpectRefused("AND of no values", true);

	Begin();
	PushI(GJ_EXPR_INT4, 1);
	Op(GJ_EXPR_NOT, GJ_EXPR_BOOL);
	ExpectRefused("NOT of an INT4", true);

	Begin();
	PushI(GJ_EXPR_INT4, 1);
	Cast(GJ_EXPR_INT8, GJ_EXPR_INT2);
	ExpectRefused("CAST from another type than the operand's", false);
	prog.steps[1].from = GJ_EXPR_INT4;
	prog.steps[1].type = GJ_EXPR_BOOL;
	ExpectRefused("CAST to BOOL", false);

	Begin();
	PushI(GJ_EXPR_INT4, 1);
	ListI(GJ_EXPR_ANY, GJ_EXPR_EQ, GJ_EXPR_INT4, 2, (const int64_t[]) {1, 2}, -1);
	ExpectAccepted("ANY over two constants", true);
	prog.steps[1].count = 3;
	ExpectRefused("ANY past nconsts", true);
	prog.steps[1].count = 2;
	prog.steps[1].cmp = GJ_EXPR_ADD;
	ExpectRefused("ANY of ADD", true);

	Begin();
	PushI(GJ_EXPR_INT4, 1);
	prog.steps[0].op = 200;
	ExpectRefused("an unknown op", false);
	prog.steps[0].op = GJ_EXPR_CONST;
	prog.steps[0].type = 9;
	ExpectRefused("an unknown type", false);

	/* GJ_EXPR_MAX_DEPTH values at once, and one more */
	Begin();
	for (int k = 0; k < GJ_EXPR_MAX_DEPTH; k++)
		PushI(GJ_EXPR_BOOL, 1);
	Logic(GJ_EXPR_AND, GJ_EXPR_MAX_DEPTH);
	ExpectAccepted("GJ_EXPR_MAX_DEPTH values", true);
	Begin();
	for (int k = 0; k <= GJ_EXPR_MAX_DEPTH; k++)
		PushI(GJ_EXPR_BOOL, 1);
	Logic(GJ_EXPR_AND, GJ_EXPR_MAX_DEPTH + 1);
	ExpectRefused("GJ_EXPR_MAX_DEPTH + 1 values", true);

	Begin();
	PushI(GJ_EXPR_BOOL, 1);
	prog.nsteps = GJ_EXPR_MAX_STEPS + 1;
	ExpectRefused("nsteps past GJ_EXPR_MAX_STEPS", true);
}

void
TestExpr(void)
{
	nqual_cases = 0;
	TestIntegerArithmetic();
	TestFloatArithmetic();
	TestComparisons();
	TestLogic();
	TestCasts();
	TestArrays();
	TestDateFields();
	TestCheck();
	TestDeformQuals(qual_cases, nqual_cases);
}
