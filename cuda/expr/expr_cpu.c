/*-------------------------------------------------------------------------
 *
 * expr_cpu.c
 *	  Checking a device expression program before any row runs it
 *
 * The interpreter (expr.h) trusts its program: every index in range, the
 * stack never under- or overflowing, every step's operands of the types it
 * takes.  gj_expr_check proves that once per program by running the steps
 * over the operands' types instead of their values, so that neither the
 * device nor the CPU twin can read outside the program or the row's inputs
 * whatever src/ compiled.
 *
 * IDENTIFICATION
 *	  cuda/expr/expr_cpu.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>

#include "common.h"
#include "gpujoin_kernels.h"
#include "expr.h"

static bool
IsInt(int type)
{
	return type == GJ_EXPR_INT2 || type == GJ_EXPR_INT4 || type == GJ_EXPR_INT8;
}

static bool
IsType(int type)
{
	return type >= GJ_EXPR_BOOL && type <= GJ_EXPR_FLOAT8;
}

/* Whether values of types a and b can be compared by a step of type cmp */
static bool
Comparable(int cmp_type, int a, int b)
{
	if (gj_expr_is_float(cmp_type))
		return gj_expr_is_float(a) && gj_expr_is_float(b);
	if (cmp_type == GJ_EXPR_BOOL || a == GJ_EXPR_BOOL || b == GJ_EXPR_BOOL)
		return a == GJ_EXPR_BOOL && b == GJ_EXPR_BOOL && cmp_type == GJ_EXPR_BOOL;
	return IsInt(a) && IsInt(b);
}

/* Whether an arithmetic step of result type t takes operands a and b */
static bool
ArithTakes(int op, int t, int a, int b)
{
	if (t == GJ_EXPR_FLOAT4)
		return op != GJ_EXPR_MOD && a == GJ_EXPR_FLOAT4 && b == GJ_EXPR_FLOAT4;
	if (t == GJ_EXPR_FLOAT8)
		return op != GJ_EXPR_MOD && gj_expr_is_float(a) && gj_expr_is_float(b);
	/* integers: the result at least as wide as each operand (int48pl: int8) */
	return IsInt(t) && IsInt(a) && IsInt(b) && a <= t && b <= t;
}

GjStatus
gj_expr_check(const GjExprProgram *program, bool is_qual, GjError *err)
{
	uint8_t		types[GJ_EXPR_MAX_DEPTH];
	int			sp = 0;

	if (program->nsteps < 1 || program->nsteps > GJ_EXPR_MAX_STEPS ||
		program->nconsts < 0 || program->nconsts > GJ_EXPR_MAX_CONSTS ||
		program->ninputs < 0 || program->ninputs > GJ_EXPR_MAX_INPUTS)
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"device expression: %d steps, %d constants, %d inputs.",
							(int) program->nsteps, (int) program->nconsts,
							(int) program->ninputs);

	for (int s = 0; s < program->nsteps; s++)
	{
		const GjExprStep *step = &program->steps[s];
		int			t = step->type;
		int			need;
		bool		ok = IsType(t);

		switch (step->op)
		{
			case GJ_EXPR_INPUT:
			case GJ_EXPR_CONST:
			case GJ_EXPR_ANY:
			case GJ_EXPR_ALL:
			case GJ_EXPR_NEG:
			case GJ_EXPR_NOT:
			case GJ_EXPR_IS_NULL:
			case GJ_EXPR_IS_NOT_NULL:
			case GJ_EXPR_IS_TRUE:
			case GJ_EXPR_IS_NOT_TRUE:
			case GJ_EXPR_IS_FALSE:
			case GJ_EXPR_IS_NOT_FALSE:
			case GJ_EXPR_CAST:
			case GJ_EXPR_DIGITS:
			case GJ_EXPR_DATE_FIELD:
			case GJ_EXPR_ON_HOST:
				need = step->op == GJ_EXPR_INPUT || step->op == GJ_EXPR_CONST ? 0 : 1;
				break;
			case GJ_EXPR_AND:
			case GJ_EXPR_OR:
				need = step->arg;
				ok = ok && step->arg >= 1;
				break;
			default:
				need = 2;
				break;
		}
		if (!ok || sp < need)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"device expression: step %d (op %d, type %d) needs %d values of %d.",
								s, (int) step->op, t, need, sp);

		switch (step->op)
		{
			case GJ_EXPR_INPUT:
				ok = step->arg >= 0 && step->arg < program->ninputs &&
					program->input_types[step->arg] == t;
				break;
			case GJ_EXPR_CONST:
				ok = step->arg >= 0 && step->arg < program->nconsts;
				break;
			case GJ_EXPR_ADD:
			case GJ_EXPR_SUB:
			case GJ_EXPR_MUL:
			case GJ_EXPR_DIV:
			case GJ_EXPR_MOD:
				ok = ArithTakes(step->op, t, types[sp - 2], types[sp - 1]);
				break;
			case GJ_EXPR_NEG:
				ok = t != GJ_EXPR_BOOL && types[sp - 1] == t;
				break;
			case GJ_EXPR_EQ:
			case GJ_EXPR_NE:
			case GJ_EXPR_LT:
			case GJ_EXPR_LE:
			case GJ_EXPR_GT:
			case GJ_EXPR_GE:
				ok = Comparable(t, types[sp - 2], types[sp - 1]);
				t = GJ_EXPR_BOOL;
				break;
			case GJ_EXPR_AND:
			case GJ_EXPR_OR:
				for (int k = 1; k <= step->arg; k++)
					ok = ok && types[sp - k] == GJ_EXPR_BOOL;
				t = GJ_EXPR_BOOL;
				break;
			case GJ_EXPR_NOT:
			case GJ_EXPR_IS_TRUE:
			case GJ_EXPR_IS_NOT_TRUE:
			case GJ_EXPR_IS_FALSE:
			case GJ_EXPR_IS_NOT_FALSE:
				ok = types[sp - 1] == GJ_EXPR_BOOL;
				t = GJ_EXPR_BOOL;
				break;
			case GJ_EXPR_ON_HOST:
				ok = t == GJ_EXPR_BOOL && types[sp - 1] == GJ_EXPR_BOOL;
				break;
			case GJ_EXPR_IS_NULL:
			case GJ_EXPR_IS_NOT_NULL:
				t = GJ_EXPR_BOOL;
				break;
			case GJ_EXPR_CAST:
				ok = types[sp - 1] == step->from && step->from != t &&
					step->from != GJ_EXPR_BOOL && t != GJ_EXPR_BOOL && IsType(step->from);
				break;
			case GJ_EXPR_DIGITS:
				ok = t == GJ_EXPR_INT8 && types[sp - 1] == GJ_EXPR_INT8;
				break;
			case GJ_EXPR_DATE_FIELD:
				ok = t == GJ_EXPR_INT8 && step->arg >= 0 && step->arg < GJ_DATE_FIELDS &&
					((step->count == GJ_DATE_OF_DATE && types[sp - 1] == GJ_EXPR_INT4) ||
					 (step->count == GJ_DATE_OF_TIMESTAMP && types[sp - 1] == GJ_EXPR_INT8));
				break;
			case GJ_EXPR_ANY:
			case GJ_EXPR_ALL:
				ok = step->cmp >= GJ_EXPR_EQ && step->cmp <= GJ_EXPR_GE &&
					step->arg >= 0 && step->count >= 0 &&
					step->arg + step->count <= program->nconsts &&
					Comparable(t, types[sp - 1], t);
				t = GJ_EXPR_BOOL;
				break;
			default:
				ok = false;
				break;
		}
		if (!ok)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"device expression: step %d (op %d, type %d) does not take its operands.",
								s, (int) step->op, (int) step->type);
		sp -= need;
		if (sp >= GJ_EXPR_MAX_DEPTH)
			return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
								"device expression: deeper than %d values at step %d.",
								GJ_EXPR_MAX_DEPTH, s);
		types[sp++] = (uint8_t) t;
	}
	if (sp != 1 || (is_qual && types[0] != GJ_EXPR_BOOL))
		return gj_error_set(err, GJ_ERROR_INVALID_ARGUMENT,
							"device expression: %d values left, the first of type %d.",
							sp, (int) types[0]);
	return GJ_OK;
}
