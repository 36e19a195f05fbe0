/*-------------------------------------------------------------------------
 *
 * planner_expr.c
 *	  The device expression compiler: a scan's quals, when every part of
 *	  them is one the device interprets, as a program of cuda/expr/expr.h
 *
 * What compiles (anything else, and the side keeps its Seq Scan):
 *
 *	Vars		user columns of the scanned relation of type bool, int2,
 *				int4, int8, float4, float8, oid, date, time, timestamp or
 *				timestamptz: the program's inputs, each attribute once
 *	Consts		of those types; Params of the query's parameters
 *				(PARAM_EXTERN), whose values are set when the scan starts
 *	operators	PostgreSQL's built-in arithmetic (+ - * / %, unary -) on
 *				int2/4/8 and float4/8 and their comparisons, the
 *				comparisons of oid, bool, date, time and timestamp(tz);
 *				recognised by the C function behind the operator (int4pl,
 *				float84lt, timestamp_eq, ...) of an internal-language
 *				function, so that a user's operator of the same name
 *				does not pass for it
 *	casts		among int2/4/8, from them to float4/8, between float4 and
 *				float8, from floats to integers (i4tod, dtoi4, ...)
 *	AND, OR, NOT, IS [NOT] NULL, IS [NOT] TRUE/FALSE/UNKNOWN, and
 *	x op ANY/ALL (array constant): IN (...), NOT IN (...)
 *	text		a scan's text or varchar column = or <> a text constant,
 *				IN and NOT IN lists of them (texteq, textne), under a
 *				deterministic collation, and < <= > >= (text_lt, ...)
 *				under a C collation: the deform places the bytes among
 *				the constants' (CompileTextCompare)
 *	numerics	numeric columns of declared scale (in a scan's quals the
 *				deform reads them at that scale, gj_heap_numeric; in
 *				the aggregation's programs the sides converted them,
 *				exec_batch.c), numeric constants,
 *				int2/4/8 cast to numeric, EXTRACT of a date's or a
 *				timestamp's year, quarter, month, day, dow, isodow or doy
 *				(numerics of scale 0; undecided for an infinity), and
 *				numeric + - * , unary - and
 *				the comparisons.  A numeric of scale s is the INT8 of its
 *				value times 10^s, and the scale of every step is known
 *				here, as PostgreSQL's numeric arithmetic gives it (a sum's
 *				the larger of its operands', a product's their sum:
 *				numeric.c's add_var and mul_var), so the steps are integer
 *				ones: operands brought to a common scale by multiplying
 *				with 10^k, an overflow of 64 bits undecided.  A column's
 *				value is checked first (GJ_EXPR_DIGITS), so that a NaN is
 *				undecided rather than computed with.  Where PostgreSQL
 *				computes a value the device could not, the caller folds
 *				that row from PostgreSQL's own evaluation (exec_agg.c).
 *
 * The program evaluates every step on every row (the interpreter has no
 * jumps) and marks a row undecided where a step would raise an error
 * (gpujoin_kernels.h, DEVICE EXPRESSIONS); exec_heap.c evaluates
 * PostgreSQL's own quals on those rows.  So the compiler need not keep
 * PostgreSQL's order of evaluation, only its values.
 *
 * The planner compiles a scan's quals to decide whether the side can be
 * read as heap pages; the executor compiles the same quals again (they
 * travel in the plan as expressions, which copy and serialize, rather
 * than as a program, which does not) and sets the Params' values.
 *
 * IDENTIFICATION
 *	  src/planner_expr.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "gpujoin.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/scansup.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/float.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

/* What a built-in function does as a step */
typedef struct DeviceFunction
{
	const char *prosrc;			/* its C function */
	GjExprOp	op;
} DeviceFunction;

/*
 * The built-in functions the device runs, by their C functions; the
 * operand and result types come from the expression, so that int48pl and
 * int4pl need only their names here
 */
static const char *const int_prefixes[] = {
	"int2", "int4", "int8", "int24", "int42", "int28", "int82", "int48", "int84"
};
static const char *const float_prefixes[] = {"float4", "float8", "float48", "float84"};
static const char *const ordered_prefixes[] = {"date_", "time_", "timestamp_", "oid", "bool"};
static const DeviceFunction arith_suffixes[] = {
	{"pl", GJ_EXPR_ADD}, {"mi", GJ_EXPR_SUB}, {"mul", GJ_EXPR_MUL}, {"div", GJ_EXPR_DIV}
};
static const DeviceFunction compare_suffixes[] = {
	{"eq", GJ_EXPR_EQ}, {"ne", GJ_EXPR_NE}, {"lt", GJ_EXPR_LT},
	{"le", GJ_EXPR_LE}, {"gt", GJ_EXPR_GT}, {"ge", GJ_EXPR_GE}
};
static const DeviceFunction single_functions[] = {
	{"int2mod", GJ_EXPR_MOD}, {"int4mod", GJ_EXPR_MOD}, {"int8mod", GJ_EXPR_MOD},
	{"int2um", GJ_EXPR_NEG}, {"int4um", GJ_EXPR_NEG}, {"int8um", GJ_EXPR_NEG},
	{"float4um", GJ_EXPR_NEG}, {"float8um", GJ_EXPR_NEG},
	/* casts */
	{"i2toi4", GJ_EXPR_CAST}, {"i4toi2", GJ_EXPR_CAST}, {"int28", GJ_EXPR_CAST},
	{"int82", GJ_EXPR_CAST}, {"int48", GJ_EXPR_CAST}, {"int84", GJ_EXPR_CAST},
	{"i2tod", GJ_EXPR_CAST}, {"i4tod", GJ_EXPR_CAST}, {"i8tod", GJ_EXPR_CAST},
	{"i2tof", GJ_EXPR_CAST}, {"i4tof", GJ_EXPR_CAST}, {"i8tof", GJ_EXPR_CAST},
	{"ftod", GJ_EXPR_CAST}, {"dtof", GJ_EXPR_CAST},
	{"dtoi2", GJ_EXPR_CAST}, {"dtoi4", GJ_EXPR_CAST}, {"dtoi8", GJ_EXPR_CAST},
	{"ftoi2", GJ_EXPR_CAST}, {"ftoi4", GJ_EXPR_CAST}, {"ftoi8", GJ_EXPR_CAST}
};

/*
 * The numeric functions the aggregation's programs run (NUMERIC_OP marks
 * their steps apart from the other types'); the casts from integers to
 * numeric are NUMERIC_CAST
 */
#define NUMERIC_OP		0x100
#define NUMERIC_CAST	(NUMERIC_OP | 0xff)
static const DeviceFunction numeric_functions[] = {
	{"numeric_add", GJ_EXPR_ADD}, {"numeric_sub", GJ_EXPR_SUB}, {"numeric_mul", GJ_EXPR_MUL},
	{"numeric_uminus", GJ_EXPR_NEG},
	{"numeric_eq", GJ_EXPR_EQ}, {"numeric_ne", GJ_EXPR_NE}, {"numeric_lt", GJ_EXPR_LT},
	{"numeric_le", GJ_EXPR_LE}, {"numeric_gt", GJ_EXPR_GT}, {"numeric_ge", GJ_EXPR_GE},
	{"int2_numeric", NUMERIC_CAST & ~NUMERIC_OP}, {"int4_numeric", NUMERIC_CAST & ~NUMERIC_OP},
	{"int8_numeric", NUMERIC_CAST & ~NUMERIC_OP},
	/* EXTRACT(field FROM date or timestamp): a numeric of scale 0 */
	{"extract_date", GJ_EXPR_DATE_FIELD}, {"extract_timestamp", GJ_EXPR_DATE_FIELD}
};

StaticAssertDecl(DATEVAL_NOBEGIN == GJ_DATE_NOBEGIN && DATEVAL_NOEND == GJ_DATE_NOEND &&
				 DT_NOBEGIN == GJ_TIMESTAMP_NOBEGIN && DT_NOEND == GJ_TIMESTAMP_NOEND &&
				 USECS_PER_DAY == GJ_USECS_PER_DAY,
				 "the device's infinite dates and timestamps are PostgreSQL's");

/*
 * Text comparisons (TEXT_OP marks them): a scan's text column compared
 * with constants, among which the deform places it (CompileTextCompare)
 */
#define TEXT_OP			0x200
static const DeviceFunction text_functions[] = {
	{"texteq", GJ_EXPR_EQ}, {"textne", GJ_EXPR_NE},
	{"text_lt", GJ_EXPR_LT}, {"text_le", GJ_EXPR_LE},
	{"text_gt", GJ_EXPR_GT}, {"text_ge", GJ_EXPR_GE}
};

/* The step of the built-in function behind funcid (| NUMERIC_OP), or -1 */
static int
LookUpFunctionOp(Oid funcid)
{
	HeapTuple	tuple;
	Form_pg_proc proc;
	Datum		datum;
	char	   *prosrc;
	int			op = -1;
	char		name[64];
	bool		isnull;

	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
	if (!HeapTupleIsValid(tuple))
		return -1;
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	if (proc->prolang != INTERNALlanguageId)
	{
		ReleaseSysCache(tuple);
		return -1;
	}
	datum = SysCacheGetAttr(PROCOID, tuple, Anum_pg_proc_prosrc, &isnull);
	if (isnull)
	{
		ReleaseSysCache(tuple);
		return -1;
	}
	prosrc = TextDatumGetCString(datum);
	ReleaseSysCache(tuple);

	for (int i = 0; i < lengthof(single_functions) && op < 0; i++)
		if (strcmp(prosrc, single_functions[i].prosrc) == 0)
			op = single_functions[i].op;
	for (int i = 0; i < lengthof(numeric_functions) && op < 0; i++)
		if (strcmp(prosrc, numeric_functions[i].prosrc) == 0)
			op = numeric_functions[i].op | NUMERIC_OP;
	for (int i = 0; i < lengthof(text_functions) && op < 0; i++)
		if (strcmp(prosrc, text_functions[i].prosrc) == 0)
			op = text_functions[i].op | TEXT_OP;
	for (int s = 0; s < lengthof(compare_suffixes) && op < 0; s++)
	{
		for (int p = 0; p < lengthof(int_prefixes) && op < 0; p++)
		{
			snprintf(name, sizeof(name), "%s%s", int_prefixes[p], compare_suffixes[s].prosrc);
			if (strcmp(prosrc, name) == 0)
				op = compare_suffixes[s].op;
		}
		for (int p = 0; p < lengthof(float_prefixes) && op < 0; p++)
		{
			snprintf(name, sizeof(name), "%s%s", float_prefixes[p], compare_suffixes[s].prosrc);
			if (strcmp(prosrc, name) == 0)
				op = compare_suffixes[s].op;
		}
		for (int p = 0; p < lengthof(ordered_prefixes) && op < 0; p++)
		{
			snprintf(name, sizeof(name), "%s%s", ordered_prefixes[p], compare_suffixes[s].prosrc);
			if (strcmp(prosrc, name) == 0)
				op = compare_suffixes[s].op;
		}
	}
	for (int s = 0; s < lengthof(arith_suffixes) && op < 0; s++)
	{
		for (int p = 0; p < lengthof(int_prefixes) && op < 0; p++)
		{
			snprintf(name, sizeof(name), "%s%s", int_prefixes[p], arith_suffixes[s].prosrc);
			if (strcmp(prosrc, name) == 0)
				op = arith_suffixes[s].op;
		}
		for (int p = 0; p < lengthof(float_prefixes) && op < 0; p++)
		{
			snprintf(name, sizeof(name), "%s%s", float_prefixes[p], arith_suffixes[s].prosrc);
			if (strcmp(prosrc, name) == 0)
				op = arith_suffixes[s].op;
		}
	}
	pfree(prosrc);
	return op;
}

/*
 * LookUpFunctionOp's answers by function: the planner asks for the same
 * operators at every costing of every path, and the lookup compares the
 * function's C name with about a hundred built ones.  Forgotten whenever
 * pg_proc changes (a function dropped and its OID reused).
 */
typedef struct FunctionOpEntry
{
	Oid			funcid;
	int			op;
} FunctionOpEntry;

static HTAB *function_ops = NULL;

static void
ForgetFunctionOps(Datum arg, int cacheid, uint32 hashvalue)
{
	if (function_ops != NULL)
		hash_destroy(function_ops);
	function_ops = NULL;
}

/* The step of the built-in function behind funcid, or -1 */
static int
DeviceFunctionOp(Oid funcid)
{
	static bool callback_registered = false;
	FunctionOpEntry *entry;
	int			op;

	if (function_ops != NULL &&
		(entry = hash_search(function_ops, &funcid, HASH_FIND, NULL)) != NULL)
		return entry->op;

	/* the lookup may process invalidations, which drop the table */
	op = LookUpFunctionOp(funcid);
	if (function_ops == NULL)
	{
		HASHCTL		ctl;

		if (!callback_registered)
		{
			CacheRegisterSyscacheCallback(PROCOID, ForgetFunctionOps, (Datum) 0);
			callback_registered = true;
		}
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(FunctionOpEntry);
		ctl.hcxt = CacheMemoryContext;
		function_ops = hash_create("gpujoin device functions", 64, &ctl,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	entry = hash_search(function_ops, &funcid, HASH_ENTER, NULL);
	entry->op = op;
	return op;
}

/*
 * The device's type for a PostgreSQL type, and how an attribute of it is
 * read (GjKeyKind); false when the device has none
 */
bool
GpuJoinDeviceExprType(Oid type, GjExprType *t, GjKeyKind *kind)
{
	*kind = GJ_KEY_SIGNED;
	switch (type)
	{
		case BOOLOID:
			*t = GJ_EXPR_BOOL;
			*kind = GJ_KEY_BOOL;
			return true;
		case INT2OID:
			*t = GJ_EXPR_INT2;
			return true;
		case INT4OID:
		case DATEOID:
			*t = GJ_EXPR_INT4;
			return true;
		case INT8OID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			*t = GJ_EXPR_INT8;
			return true;
		case OIDOID:
			*t = GJ_EXPR_INT8;
			*kind = GJ_KEY_OID;
			return true;
		case FLOAT4OID:
			*t = GJ_EXPR_FLOAT4;
			*kind = GJ_KEY_FLOAT4;
			return true;
		case FLOAT8OID:
			*t = GJ_EXPR_FLOAT8;
			*kind = GJ_KEY_FLOAT8;
			return true;
		default:
			return false;
	}
}

/* A value of a type the device has, as the interpreter holds it */
void
GpuJoinDeviceExprDatum(Oid type, Datum value, bool isnull, GjExprDatum *d)
{
	memset(d, 0, sizeof(*d));
	d->isnull = isnull;
	if (isnull)
		return;
	switch (type)
	{
		case BOOLOID:
			d->v.i = DatumGetBool(value) ? 1 : 0;
			break;
		case INT2OID:
			d->v.i = DatumGetInt16(value);
			break;
		case INT4OID:
		case DATEOID:
			d->v.i = DatumGetInt32(value);
			break;
		case OIDOID:
			d->v.i = (int64) DatumGetObjectId(value);
			break;
		case FLOAT4OID:
			d->v.f = (double) DatumGetFloat4(value);
			break;
		case FLOAT8OID:
			d->v.f = DatumGetFloat8(value);
			break;
		default:				/* int8, time, timestamp(tz) */
			d->v.i = DatumGetInt64(value);
			break;
	}
}

/*
 * The compiler's state: the program growing in out; its Vars those of
 * relation relid (their attribute numbers the inputs), or, when tlist is
 * not NIL, the plain Vars listed there (their positions the inputs)
 */
typedef struct Compiler
{
	GpuJoinDeviceExpr *out;
	Index		relid;
	List	   *tlist;
	/* a scan's text inputs: each one's constants (text *), in their order */
	List	   *texts[GJ_EXPR_MAX_INPUTS];
	int			ntexts;			/* of all text inputs, and their bytes */
	int			text_bytes;
	/* per constant of the program: 1 + the text input whose code it is, or 0 */
	uint8		text_code_of[GJ_EXPR_MAX_CONSTS];
} Compiler;

/*
 * The 1-based position of var among the plain Vars of tlist (a List of
 * TargetEntry or of expressions), or 0
 */
int
GpuJoinTlistPosition(List *tlist, Var *var)
{
	int			pos = 0;
	ListCell   *lc;

	foreach(lc, tlist)
	{
		Node	   *node = lfirst(lc);
		Var		   *v;

		pos++;
		if (IsA(node, TargetEntry))
			node = (Node *) ((TargetEntry *) node)->expr;
		if (!IsA(node, Var))
			continue;
		v = (Var *) node;
		if (v->varno == var->varno && v->varattno == var->varattno && v->varlevelsup == 0)
			return pos;
	}
	return 0;
}

static bool CompileNode(Compiler *c, Node *node, GjExprType *type);

static bool
AddStep(Compiler *c, GjExprOp op, GjExprType type, int arg)
{
	GjExprProgram *p = &c->out->program;
	GjExprStep *step;

	if (p->nsteps >= GJ_EXPR_MAX_STEPS)
		return false;
	step = &p->steps[p->nsteps++];
	memset(step, 0, sizeof(*step));
	step->op = (uint8) op;
	step->type = (uint8) type;
	step->arg = (int16) arg;
	return true;
}

static int
AddConst(Compiler *c, Oid type, Datum value, bool isnull)
{
	GjExprProgram *p = &c->out->program;

	if (p->nconsts >= GJ_EXPR_MAX_CONSTS)
		return -1;
	GpuJoinDeviceExprDatum(type, value, isnull, &p->consts[p->nconsts]);
	return p->nconsts++;
}

/* An INT8 constant (a scaled numeric, a text's number) and its step */
static bool
AddInt8Const(Compiler *c, int64 v, bool isnull)
{
	GjExprProgram *p = &c->out->program;

	if (p->nconsts >= GJ_EXPR_MAX_CONSTS)
		return false;
	p->consts[p->nconsts].isnull = isnull;
	p->consts[p->nconsts].v.i = v;
	return AddStep(c, GJ_EXPR_CONST, GJ_EXPR_INT8, p->nconsts++);
}

/*
 * The input for attribute attno, added the first time it is read; scale:
 * a scan's numeric column's (read as an INT8 of that scale), else -1
 */
static int
InputOf(Compiler *c, AttrNumber attno, GjExprType type, GjKeyKind kind, int scale)
{
	GjExprProgram *p = &c->out->program;

	for (int i = 0; i < p->ninputs; i++)
		if (c->out->input_attnos[i] == attno)
			return i;
	if (p->ninputs >= GJ_EXPR_MAX_INPUTS)
		return -1;
	c->out->input_attnos[p->ninputs] = attno;
	c->out->input_kinds[p->ninputs] = (uint8) kind;
	c->out->input_scales[p->ninputs] = (int8) scale;
	p->input_types[p->ninputs] = (uint8) type;
	return p->ninputs++;
}

/* The function and arguments of an operator or function call, or false */
static bool
CallOf(Node *node, Oid *funcid, List **args)
{
	if (IsA(node, OpExpr))
	{
		set_opfuncid((OpExpr *) node);
		*funcid = ((OpExpr *) node)->opfuncid;
		*args = ((OpExpr *) node)->args;
		return true;
	}
	if (IsA(node, FuncExpr) && !((FuncExpr *) node)->funcretset &&
		!((FuncExpr *) node)->funcvariadic)
	{
		*funcid = ((FuncExpr *) node)->funcid;
		*args = ((FuncExpr *) node)->args;
		return true;
	}
	return false;
}

static bool
IsIntegerType(Oid type)
{
	return type == INT2OID || type == INT4OID || type == INT8OID;
}

/*
 * The field of EXTRACT(field FROM x) (extract_date's or extract_timestamp's
 * args) the device computes, and in *unit whether x is a date or a
 * timestamp; -1 for another field (hours of a timestamp, epoch, week), or
 * one not known when the plan is made.  The field's name is read as
 * PostgreSQL reads it (DecodeUnits, then DecodeSpecial), aliases included.
 */
static int
DateFieldOf(List *args, int *unit)
{
	static const struct
	{
		int			dtk;
		GjDateField field;
	}			fields[] = {
		{DTK_YEAR, GJ_DATE_YEAR}, {DTK_QUARTER, GJ_DATE_QUARTER}, {DTK_MONTH, GJ_DATE_MONTH},
		{DTK_DAY, GJ_DATE_DAY}, {DTK_DOW, GJ_DATE_DOW}, {DTK_ISODOW, GJ_DATE_ISODOW},
		{DTK_DOY, GJ_DATE_DOY}
	};
	Const	   *units;
	Oid			type;
	text	   *name;
	char	   *lowunits;
	int			kind;
	int			dtk;

	if (list_length(args) != 2 || !IsA(linitial(args), Const))
		return -1;
	units = linitial_node(Const, args);
	type = exprType(lsecond(args));
	if (units->consttype != TEXTOID || units->constisnull ||
		(type != DATEOID && type != TIMESTAMPOID))
		return -1;
	*unit = type == DATEOID ? GJ_DATE_OF_DATE : GJ_DATE_OF_TIMESTAMP;
	name = DatumGetTextPP(units->constvalue);
	lowunits = downcase_truncate_identifier(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name), false);
	/* as extract_date and extract_timestamp read it */
	kind = DecodeUnits(0, lowunits, &dtk);
	if (kind == UNKNOWN_FIELD)
		kind = DecodeSpecial(0, lowunits, &dtk);
	if (kind != UNITS && kind != RESERV)
		return -1;
	for (int i = 0; i < lengthof(fields); i++)
		if (fields[i].dtk == dtk)
			return fields[i].field;
	return -1;
}

/*
 * The scale of a numeric-valued call of numeric function op (NUMERIC_OP)
 * on args, as numeric.c gives it; -1 where it has none we compute with
 */
static int
NumericCallScale(int op, List *args)
{
	int			scales[2] = {0, 0};
	int			nargs = list_length(args);
	int			base = op & ~NUMERIC_OP;
	int			unit;

	if (op < 0 || !(op & NUMERIC_OP) || nargs < 1 || nargs > 2)
		return -1;
	if (op == NUMERIC_CAST)
		return nargs == 1 && IsIntegerType(exprType(linitial(args))) ? 0 : -1;
	if (base == GJ_EXPR_DATE_FIELD)
		return DateFieldOf(args, &unit) >= 0 ? 0 : -1;
	for (int i = 0; i < nargs; i++)
		if ((scales[i] = GpuJoinNumericExprScale(list_nth(args, i))) < 0)
			return -1;
	switch (base)
	{
		case GJ_EXPR_ADD:
		case GJ_EXPR_SUB:
			return nargs == 2 ? Max(scales[0], scales[1]) : -1;
		case GJ_EXPR_MUL:	/* mul_var's rscale: the operands' scales added */
			return nargs == 2 && scales[0] + scales[1] <= GPUJOIN_NUMERIC_MAX_DIGITS ?
				scales[0] + scales[1] : -1;
		case GJ_EXPR_NEG:
			return nargs == 1 ? scales[0] : -1;
		default:				/* a comparison: not a numeric */
			return -1;
	}
}

/*
 * The display scale every value of node has, a numeric expression the
 * aggregation's programs compute: a column's declared scale (within 18
 * digits), a constant's own, an integer cast to numeric 0, EXTRACT's day
 * fields 0, and that of numeric.c's arithmetic on them; -1 where there is
 * none we compute with
 */
int
GpuJoinNumericExprScale(Node *node)
{
	Oid			funcid;
	List	   *args;

	if (node == NULL || exprType(node) != NUMERICOID)
		return -1;
	if (IsA(node, Var))
		return GpuJoinNumericScale(node);
	if (IsA(node, Const))
	{
		Const	   *con = (Const *) node;
		int			scale;
		int64		v;

		if (con->constisnull)
			return 0;
		if (!GpuJoinNumericConstScaled(con->constvalue, &scale, &v))
			return -1;
		return scale;
	}
	if (CallOf(node, &funcid, &args))
		return NumericCallScale(DeviceFunctionOp(funcid), args);
	return -1;
}

/*
 * The scale of a numeric group key's words (exec_agg.c): a column's declared
 * scale, or 0 for EXTRACT's day fields, whose values are integers of a few
 * digits or infinities (which the words keep apart from every value, as
 * they keep NaN: GpuJoinNumericKeyWord); -1 for any other numeric, whose
 * values could meet those words
 */
int
GpuJoinNumericKeyScale(Node *expr)
{
	Node	   *arg;
	int			scale = GpuJoinNumericScale(expr);

	if (scale >= 0)
		return scale;
	return GpuJoinExtractField(expr, &arg) >= 0 ? 0 : -1;
}

/*
 * The day field (GjDateField) of expr, an EXTRACT(field FROM x) the device
 * computes, with x (a date or a timestamp) in *arg; -1 for any other
 * expression
 */
int
GpuJoinExtractField(Node *expr, Node **arg)
{
	Oid			funcid;
	List	   *args;
	int			unit;
	int			field;

	if (exprType(expr) != NUMERICOID || !CallOf(expr, &funcid, &args) ||
		DeviceFunctionOp(funcid) != (GJ_EXPR_DATE_FIELD | NUMERIC_OP) ||
		(field = DateFieldOf(args, &unit)) < 0)
		return -1;
	*arg = lsecond(args);
	return field;
}

static bool CompileNumericCall(Compiler *c, int op, List *args, GjExprType *type);

static bool CompileTextCompare(Compiler *c, Node *column, Node *constant, Oid collid,
							   int cmp, bool use_or, GjExprType *type);

/* The comparison that holds of b and a where cmp holds of a and b */
static int
CommutedCompare(int cmp)
{
	switch (cmp)
	{
		case GJ_EXPR_LT:
			return GJ_EXPR_GT;
		case GJ_EXPR_LE:
			return GJ_EXPR_GE;
		case GJ_EXPR_GT:
			return GJ_EXPR_LT;
		case GJ_EXPR_GE:
			return GJ_EXPR_LE;
		default:
			return cmp;
	}
}

/*
 * The arguments of an operator or function, then its step; collid: an
 * operator's input collation (a text comparison's; InvalidOid for a
 * function call, which therefore compiles no text comparison)
 */
static bool
CompileCall(Compiler *c, Oid funcid, List *args, Oid collid, Oid resulttype,
			GjExprType *type)
{
	int			op = DeviceFunctionOp(funcid);
	GjExprType	argtypes[2];
	GjKeyKind	kind;
	int			nargs = list_length(args);
	ListCell   *lc;
	int			i = 0;

	if (op >= 0 && (op & NUMERIC_OP))
		return CompileNumericCall(c, op, args, type);
	if (op >= 0 && (op & TEXT_OP))
	{
		/* the column on either side of the constant */
		if (nargs != 2)
			return false;
		if (IsA(linitial(args), Const))
			return CompileTextCompare(c, lsecond(args), linitial(args), collid,
									  CommutedCompare(op & ~TEXT_OP), false, type);
		return CompileTextCompare(c, linitial(args), lsecond(args), collid,
								  op & ~TEXT_OP, false, type);
	}
	if (op < 0 || nargs < 1 || nargs > 2 ||
		(nargs == 1) != (op == GJ_EXPR_NEG || op == GJ_EXPR_CAST) ||
		!GpuJoinDeviceExprType(resulttype, type, &kind))
		return false;
	foreach(lc, args)
		if (!CompileNode(c, lfirst(lc), &argtypes[i++]))
			return false;
	if (op == GJ_EXPR_CAST)
	{
		GjExprProgram *p = &c->out->program;

		if (!AddStep(c, GJ_EXPR_CAST, *type, 0))
			return false;
		p->steps[p->nsteps - 1].from = (uint8) argtypes[0];
		return true;
	}
	if (op >= GJ_EXPR_EQ && op <= GJ_EXPR_GE)
	{
		/* a comparison: typed by its operands' domain, gives a bool */
		if (*type != GJ_EXPR_BOOL)
			return false;
		return AddStep(c, op, argtypes[0], 0);
	}
	return AddStep(c, op, *type, 0);
}

/*
 * node, a numeric of scale "from" (GpuJoinNumericExprScale), as an INT8 of
 * scale "to": a column's value checked to be within 18 digits (a NaN is
 * not: undecided), then multiplied by 10^(to - from)
 */
static bool
CompileNumeric(Compiler *c, Node *node, int from, int to)
{
	GjExprType	type;
	int64		power = 1;

	if (from < 0 || to < from || to - from > GPUJOIN_NUMERIC_MAX_DIGITS)
		return false;
	if (IsA(node, Const))
	{
		Const	   *con = (Const *) node;
		int			scale = 0;
		int64		v = 0;

		if ((!con->constisnull && !GpuJoinNumericConstScaled(con->constvalue, &scale, &v)) ||
			!AddInt8Const(c, v, con->constisnull))
			return false;
	}
	else if (IsA(node, Var))
	{
		if (!CompileNode(c, node, &type) || type != GJ_EXPR_INT8 ||
			!AddStep(c, GJ_EXPR_DIGITS, GJ_EXPR_INT8, 0))
			return false;
	}
	else if (!CompileNode(c, node, &type) || type != GJ_EXPR_INT8)
		return false;
	if (to == from)
		return true;
	for (int i = from; i < to; i++)
		power *= 10;
	return AddInt8Const(c, power, false) && AddStep(c, GJ_EXPR_MUL, GJ_EXPR_INT8, 0);
}

/* A numeric function's call (NUMERIC_OP): integer steps on scaled values */
static bool
CompileNumericCall(Compiler *c, int op, List *args, GjExprType *type)
{
	int			base = op & ~NUMERIC_OP;
	int			nargs = list_length(args);
	int			scale = NumericCallScale(op, args);
	GjExprType	argtype;

	*type = GJ_EXPR_INT8;
	if (op == NUMERIC_CAST)
	{
		/* int2/4/8 to numeric: the integer, of scale 0 */
		if (scale != 0 || !CompileNode(c, linitial(args), &argtype))
			return false;
		if (argtype == GJ_EXPR_INT8)
			return true;
		if (argtype != GJ_EXPR_INT2 && argtype != GJ_EXPR_INT4)
			return false;
		if (!AddStep(c, GJ_EXPR_CAST, GJ_EXPR_INT8, 0))
			return false;
		c->out->program.steps[c->out->program.nsteps - 1].from = (uint8) argtype;
		return true;
	}
	if (base >= GJ_EXPR_EQ && base <= GJ_EXPR_GE)
	{
		/* a comparison: both operands at the larger scale */
		int			sa;
		int			sb;

		if (nargs != 2)
			return false;
		sa = GpuJoinNumericExprScale(linitial(args));
		sb = GpuJoinNumericExprScale(lsecond(args));
		*type = GJ_EXPR_BOOL;
		return sa >= 0 && sb >= 0 &&
			CompileNumeric(c, linitial(args), sa, Max(sa, sb)) &&
			CompileNumeric(c, lsecond(args), sb, Max(sa, sb)) &&
			AddStep(c, base, GJ_EXPR_INT8, 0);
	}
	if (scale < 0)
		return false;
	switch (base)
	{
		case GJ_EXPR_ADD:
		case GJ_EXPR_SUB:
			return CompileNumeric(c, linitial(args), GpuJoinNumericExprScale(linitial(args)), scale) &&
				CompileNumeric(c, lsecond(args), GpuJoinNumericExprScale(lsecond(args)), scale) &&
				AddStep(c, base, GJ_EXPR_INT8, 0);
		case GJ_EXPR_MUL:
			{
				int			sa = GpuJoinNumericExprScale(linitial(args));
				int			sb = GpuJoinNumericExprScale(lsecond(args));

				return CompileNumeric(c, linitial(args), sa, sa) &&
					CompileNumeric(c, lsecond(args), sb, sb) &&
					AddStep(c, GJ_EXPR_MUL, GJ_EXPR_INT8, 0);
			}
		case GJ_EXPR_NEG:
			return CompileNumeric(c, linitial(args), scale, scale) &&
				AddStep(c, GJ_EXPR_NEG, GJ_EXPR_INT8, 0);
		case GJ_EXPR_DATE_FIELD:
			{
				int			unit;
				int			field = DateFieldOf(args, &unit);
				GjExprType	from;

				/* a date is an INT4 of days, a timestamp an INT8 of microseconds */
				if (field < 0 || !CompileNode(c, lsecond(args), &from) ||
					from != (unit == GJ_DATE_OF_DATE ? GJ_EXPR_INT4 : GJ_EXPR_INT8) ||
					!AddStep(c, GJ_EXPR_DATE_FIELD, GJ_EXPR_INT8, field))
					return false;
				c->out->program.steps[c->out->program.nsteps - 1].count = (int16) unit;
				return true;
			}
	}
	return false;
}

/* The elements of a constant array of elemtype: their number */
static int
ArrayElements(Const *array, Oid elemtype, Datum **values, bool **nulls)
{
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;
	int			n;

	get_typlenbyvalalign(elemtype, &elmlen, &elmbyval, &elmalign);
	deconstruct_array(DatumGetArrayTypeP(array->constvalue), elemtype, elmlen, elmbyval,
					  elmalign, values, nulls, &n);
	return n;
}

/* x cmp ANY (use_or) or ALL over the n constants from first on */
static bool
AddArrayStep(Compiler *c, bool use_or, GjExprType type, int first, int n, int cmp)
{
	GjExprProgram *p = &c->out->program;

	if (!AddStep(c, use_or ? GJ_EXPR_ANY : GJ_EXPR_ALL, type, first))
		return false;
	p->steps[p->nsteps - 1].cmp = (uint8) cmp;
	p->steps[p->nsteps - 1].count = (int16) n;
	return true;
}

/*
 * The code of the constant value (text *) among a text input's: its
 * number in the order they came, added the first time (PlaceTexts makes
 * it the number the input reads for it); -1 where a filter's constants
 * would be too many or too large
 */
static int
TextCode(Compiler *c, int input, Datum value)
{
	text	   *t = DatumGetTextPP(value);
	int			len = VARSIZE_ANY_EXHDR(t);
	int			k = 1;
	ListCell   *lc;

	foreach(lc, c->texts[input])
	{
		text	   *u = (text *) lfirst(lc);

		if (VARSIZE_ANY_EXHDR(u) == len && memcmp(VARDATA_ANY(u), VARDATA_ANY(t), len) == 0)
			return k;
		k++;
	}
	if (c->ntexts >= GJ_DEFORM_MAX_TEXTS || len > GJ_DEFORM_MAX_TEXT_BYTES - c->text_bytes)
		return -1;
	c->texts[input] = lappend(c->texts[input], t);
	c->ntexts++;
	c->text_bytes += len;
	return k;
}

/* Two text constants (cells of text *) in gj_text_compare's order */
static int
CompareTexts(const ListCell *a, const ListCell *b)
{
	text	   *t = (text *) lfirst(a);
	text	   *u = (text *) lfirst(b);

	return gj_text_compare(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t),
						   VARDATA_ANY(u), VARSIZE_ANY_EXHDR(u));
}

/*
 * Sort each text input's constants in gj_text_compare's order and give
 * the program's constants that are their codes (TextCode) the numbers
 * the deform reads for them: 2k for the k-th (gj_heap_text_place)
 */
static void
PlaceTexts(Compiler *c)
{
	GjExprProgram *p = &c->out->program;

	for (int i = 0; i < p->ninputs; i++)
	{
		List	   *came = c->texts[i];
		int			place[GJ_DEFORM_MAX_TEXTS + 1];
		int			k = 0;
		ListCell   *lc;
		ListCell   *lc2;

		if (came == NIL)
			continue;
		/* the k-th to come: 2 x (1 + the constants below it) */
		foreach(lc, came)
		{
			place[++k] = 2;
			foreach(lc2, came)
				place[k] += CompareTexts(lc2, lc) < 0 ? 2 : 0;
		}
		for (int j = 0; j < p->nconsts; j++)
			if (c->text_code_of[j] == i + 1 && !p->consts[j].isnull)
				p->consts[j].v.i = place[p->consts[j].v.i];
		c->texts[i] = list_copy(came);
		list_sort(c->texts[i], CompareTexts);
	}
}

/*
 * A text column compared (cmp: GJ_EXPR_EQ, texteq; GJ_EXPR_NE, textne;
 * GJ_EXPR_LT .. GE, text_lt ..) with a constant, or with each element of
 * a constant array (ANY where use_or, else ALL: IN, NOT IN), under a
 * deterministic collation, where equal text is equal bytes (texteq), and
 * for an order under a C collation, which orders the bytes as
 * gj_text_compare does (varstr_cmp): the column, of the scanned relation,
 * is an input the deform reads as its place among the input's constants
 * (gj_heap_text_place: 2k at the k-th, odd between them), checked within
 * 18 digits (a value only the host can read is not: undecided), and
 * compared with the constants' places (PlaceTexts)
 */
static bool
CompileTextCompare(Compiler *c, Node *column, Node *constant, Oid collid, int cmp,
				   bool use_or, GjExprType *type)
{
	GjExprProgram *p = &c->out->program;
	Var		   *var;
	Const	   *con = (Const *) constant;
	int			input;
	int			first = p->nconsts;
	int			n = 0;

	while (IsA(column, RelabelType))
		column = (Node *) ((RelabelType *) column)->arg;
	if (c->tlist != NIL || !IsA(column, Var) || !IsA(con, Const) || con->constisnull ||
		!OidIsValid(collid) || !get_collation_isdeterministic(collid) ||
		(cmp != GJ_EXPR_EQ && cmp != GJ_EXPR_NE && !GpuJoinCollationIsC(collid)))
		return false;
	var = (Var *) column;
	if ((var->vartype != TEXTOID && var->vartype != VARCHAROID) || var->varno != c->relid ||
		var->varlevelsup != 0 || var->varattno <= 0 || var->varattno > GJ_MAX_HEAP_ATTS)
		return false;
	input = InputOf(c, var->varattno, GJ_EXPR_INT8, GJ_KEY_SIGNED, -1);
	if (input < 0 || !AddStep(c, GJ_EXPR_INPUT, GJ_EXPR_INT8, input) ||
		!AddStep(c, GJ_EXPR_DIGITS, GJ_EXPR_INT8, 0))
		return false;

	if (con->consttype == TEXTOID || con->consttype == VARCHAROID)
	{
		int			k = TextCode(c, input, con->constvalue);

		*type = GJ_EXPR_BOOL;
		if (k < 0 || !AddInt8Const(c, k, false))
			return false;
		c->text_code_of[p->nconsts - 1] = (uint8) (input + 1);
		return AddStep(c, cmp, GJ_EXPR_INT8, 0);
	}
	else
	{
		Oid			elemtype = get_element_type(con->consttype);
		Datum	   *values;
		bool	   *nulls;
		int			nvalues = 0;

		if (elemtype != TEXTOID && elemtype != VARCHAROID)
			return false;
		n = ArrayElements(con, elemtype, &values, &nulls);
		if (n > GJ_EXPR_MAX_CONSTS - first)
			return false;
		for (int i = 0; i < n; i++)
		{
			int			k = nulls[i] ? 0 : TextCode(c, input, values[i]);

			if (k < 0)
				return false;
			nvalues += !nulls[i];
			p->consts[p->nconsts].isnull = nulls[i];
			p->consts[p->nconsts].v.i = k;
			c->text_code_of[p->nconsts] = (uint8) (input + 1);
			p->nconsts++;
		}
		/* a text input has a constant to be placed among (gj_heap_text_place) */
		*type = GJ_EXPR_BOOL;
		return nvalues > 0 && AddArrayStep(c, use_or, GJ_EXPR_INT8, first, n, cmp);
	}
}

/* x op ANY/ALL (constant array) */
static bool
CompileArrayOp(Compiler *c, ScalarArrayOpExpr *saop, GjExprType *type)
{
	Node	   *scalar = linitial(saop->args);
	Const	   *array = (Const *) lsecond(saop->args);
	int			op = DeviceFunctionOp(saop->opfuncid);
	Oid			elemtype;
	GjExprType	elemdevtype;
	GjExprType	scalartype;
	GjKeyKind	kind;
	Datum	   *values;
	bool	   *nulls;
	int			n;
	int			first = c->out->program.nconsts;

	if (op >= 0 && (op & TEXT_OP) && IsA(array, Const) && !array->constisnull)
		return CompileTextCompare(c, scalar, (Node *) array, saop->inputcollid, op & ~TEXT_OP,
								  saop->useOr, type);
	if (op < GJ_EXPR_EQ || op > GJ_EXPR_GE || !IsA(array, Const) || array->constisnull)
		return false;
	elemtype = get_element_type(array->consttype);
	if (!OidIsValid(elemtype) || !GpuJoinDeviceExprType(elemtype, &elemdevtype, &kind))
		return false;
	if (!CompileNode(c, scalar, &scalartype))
		return false;
	n = ArrayElements(array, elemtype, &values, &nulls);
	if (n > GJ_EXPR_MAX_CONSTS - first)
		return false;
	for (int i = 0; i < n; i++)
		AddConst(c, elemtype, values[i], nulls[i]);
	*type = GJ_EXPR_BOOL;
	return AddArrayStep(c, saop->useOr, elemdevtype, first, n, op);
}

/* node's steps, its value's type in *type; false where it does not compile */
static bool
CompileNode(Compiler *c, Node *node, GjExprType *type)
{
	GjKeyKind	kind;

	check_stack_depth();
	if (node == NULL)
		return false;
	switch (nodeTag(node))
	{
		case T_Var:
			{
				Var		   *var = (Var *) node;
				int			input;
				int			attno = var->varattno;
				int			scale = -1;

				if (c->tlist != NIL)
				{
					attno = (var->varlevelsup == 0) ? GpuJoinTlistPosition(c->tlist, var) : 0;
					if (attno <= 0 || attno > PG_INT16_MAX)
						return false;
					/*
					 * A numeric column of declared scale: its values times
					 * 10^scale (the sides convert them, exec_batch.c), for
					 * the aggregates and group keys to read as they are; no
					 * device function takes numeric, so nothing computes
					 * with them as integers
					 */
					if (var->vartype == NUMERICOID && GpuJoinNumericScale(node) >= 0)
					{
						*type = GJ_EXPR_INT8;
						kind = GJ_KEY_SIGNED;
					}
					else if (!GpuJoinDeviceExprType(var->vartype, type, &kind))
						return false;
				}
				else if (var->varno != c->relid || var->varlevelsup != 0 || var->varattno <= 0 ||
						 var->varattno > GJ_MAX_HEAP_ATTS)
					return false;
				else if (var->vartype == NUMERICOID && GpuJoinNumericScale(node) >= 0)
				{
					/* the deform reads it as an INT8 of its scale */
					scale = GpuJoinNumericScale(node);
					*type = GJ_EXPR_INT8;
					kind = GJ_KEY_SIGNED;
				}
				else if (!GpuJoinDeviceExprType(var->vartype, type, &kind))
					return false;
				input = InputOf(c, attno, *type, kind, scale);
				return input >= 0 && AddStep(c, GJ_EXPR_INPUT, *type, input);
			}
		case T_Const:
			{
				Const	   *con = (Const *) node;
				int			k;

				if (!GpuJoinDeviceExprType(con->consttype, type, &kind))
					return false;
				k = AddConst(c, con->consttype, con->constvalue, con->constisnull);
				return k >= 0 && AddStep(c, GJ_EXPR_CONST, *type, k);
			}
		case T_Param:
			{
				Param	   *param = (Param *) node;
				int			k;

				/* the query's parameters: fixed while the plan runs */
				if (param->paramkind != PARAM_EXTERN || c->tlist != NIL ||
					!GpuJoinDeviceExprType(param->paramtype, type, &kind))
					return false;
				k = AddConst(c, param->paramtype, (Datum) 0, true);
				if (k < 0)
					return false;
				c->out->params = lappend(c->out->params, param);
				c->out->param_consts = lappend_int(c->out->param_consts, k);
				return AddStep(c, GJ_EXPR_CONST, *type, k);
			}
		case T_RelabelType:
			{
				RelabelType *relabel = (RelabelType *) node;
				GjExprType	to;

				if (!GpuJoinDeviceExprType(relabel->resulttype, &to, &kind) ||
					!CompileNode(c, (Node *) relabel->arg, type))
					return false;
				return *type == to;
			}
		case T_OpExpr:
		case T_FuncExpr:
			{
				Oid			funcid;
				List	   *args;

				return CallOf(node, &funcid, &args) &&
					CompileCall(c, funcid, args,
								IsA(node, OpExpr) ? ((OpExpr *) node)->inputcollid : InvalidOid,
								exprType(node), type);
			}
		case T_ScalarArrayOpExpr:
			{
				ScalarArrayOpExpr *saop = (ScalarArrayOpExpr *) node;

				set_sa_opfuncid(saop);
				return CompileArrayOp(c, saop, type);
			}
		case T_BoolExpr:
			{
				BoolExpr   *b = (BoolExpr *) node;
				ListCell   *lc;

				foreach(lc, b->args)
					if (!CompileNode(c, lfirst(lc), type) || *type != GJ_EXPR_BOOL)
						return false;
				*type = GJ_EXPR_BOOL;
				switch (b->boolop)
				{
					case AND_EXPR:
						return AddStep(c, GJ_EXPR_AND, GJ_EXPR_BOOL, list_length(b->args));
					case OR_EXPR:
						return AddStep(c, GJ_EXPR_OR, GJ_EXPR_BOOL, list_length(b->args));
					case NOT_EXPR:
						return AddStep(c, GJ_EXPR_NOT, GJ_EXPR_BOOL, 0);
				}
				return false;
			}
		case T_NullTest:
			{
				NullTest   *nt = (NullTest *) node;

				if (nt->argisrow || !CompileNode(c, (Node *) nt->arg, type))
					return false;
				*type = GJ_EXPR_BOOL;
				return AddStep(c, nt->nulltesttype == IS_NULL ? GJ_EXPR_IS_NULL :
							   GJ_EXPR_IS_NOT_NULL, GJ_EXPR_BOOL, 0);
			}
		case T_BooleanTest:
			{
				BooleanTest *bt = (BooleanTest *) node;
				GjExprOp	op;

				if (!CompileNode(c, (Node *) bt->arg, type) || *type != GJ_EXPR_BOOL)
					return false;
				switch (bt->booltesttype)
				{
					case IS_TRUE:
						op = GJ_EXPR_IS_TRUE;
						break;
					case IS_NOT_TRUE:
						op = GJ_EXPR_IS_NOT_TRUE;
						break;
					case IS_FALSE:
						op = GJ_EXPR_IS_FALSE;
						break;
					case IS_NOT_FALSE:
						op = GJ_EXPR_IS_NOT_FALSE;
						break;
					case IS_UNKNOWN:
						op = GJ_EXPR_IS_NULL;
						break;
					default:
						op = GJ_EXPR_IS_NOT_NULL;
						break;
				}
				return AddStep(c, op, GJ_EXPR_BOOL, 0);
			}
		default:
			return false;
	}
}

/* An implicitly ANDed list of quals, as one boolean; false where it does not compile */
static bool
CompileQuals(Compiler *c, List *quals)
{
	GjExprType	type;
	ListCell   *lc;

	foreach(lc, quals)
		if (!CompileNode(c, lfirst(lc), &type) || type != GJ_EXPR_BOOL)
			return false;
	return list_length(quals) == 1 ||
		AddStep(c, GJ_EXPR_AND, GJ_EXPR_BOOL, list_length(quals));
}

/* Whether node holds a Param (an expression_tree_walker: true stops the walk) */
static bool
HasParam(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return true;
	return expression_tree_walker(node, HasParam, context);
}

/*
 * Whether the host may evaluate qual on the tuples the deform staged
 * (exec_heap.c's Recheck, an ExprState with no parent plan node): over the
 * relation's own user columns, with no Param, no SubPlan and nothing
 * volatile (a row the device's quals fail never reaches it)
 */
static bool
HostQual(Node *qual, Index relid)
{
	List	   *vars;
	ListCell   *lc;
	bool		ok = true;

	if (contain_subplans(qual) || contain_volatile_functions(qual) || HasParam(qual, NULL))
		return false;
	vars = pull_var_clause(qual, PVC_INCLUDE_PLACEHOLDERS);
	foreach(lc, vars)
	{
		Var		   *var = (Var *) lfirst(lc);

		if (!IsA(var, Var) || var->varno != relid || var->varlevelsup != 0 || var->varattno <= 0)
			ok = false;
	}
	list_free(vars);
	return ok;
}

/*
 * quals compiled into out, and with on_host, the ON_HOST step after them:
 * a row they pass is undecided, for the host's quals (no quals: every row)
 */
static bool
CompileScanQuals(List *quals, Index relid, bool on_host, GpuJoinDeviceExpr *out)
{
	Compiler	c;
	GjError		err;

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	c.out = out;
	c.relid = relid;
	c.tlist = NIL;
	if (quals == NIL)
	{
		int			k = on_host ? AddConst(&c, BOOLOID, BoolGetDatum(true), false) : -1;

		if (k < 0 || !AddStep(&c, GJ_EXPR_CONST, GJ_EXPR_BOOL, k))
			return false;
	}
	else if (!CompileQuals(&c, quals))
		return false;
	if (on_host && !AddStep(&c, GJ_EXPR_ON_HOST, GJ_EXPR_BOOL, 0))
		return false;
	/* the text inputs' constants, input by input, each input's in order */
	PlaceTexts(&c);
	for (int i = 0; i < out->program.ninputs; i++)
	{
		ListCell   *lc;

		out->input_texts[i] = (int16) list_length(c.texts[i]);
		foreach(lc, c.texts[i])
		{
			text	   *t = (text *) lfirst(lc);
			int			len = VARSIZE_ANY_EXHDR(t);
			int32		off = out->text_offsets[out->ntexts];

			memcpy(out->text_pool + off, VARDATA_ANY(t), len);
			out->text_offsets[++out->ntexts] = off + len;
		}
	}
	/* the stack's depth and the operand types, as the kernels check them */
	memset(&err, 0, sizeof(err));
	return gj_expr_check(&out->program, true, &err) == GJ_OK;
}

/*
 * Compile quals (an implicitly ANDed list, over relation relid) into out;
 * false when some part of them has no device step, or the program would
 * be too large.  out->params lists the Params whose values the executor
 * puts in the constants out->param_consts.
 *
 * With host_quals, the quals from the first one the device does not
 * evaluate on may be left to the host (HostQual): *host_quals lists them,
 * and the program evaluates the ones before, then ON_HOST, so that the rows
 * those pass are undecided and the executor's own evaluation of every qual
 * decides them.  Only the quals before: a row the device drops is one
 * whose evaluation in the planner's order stops before any of the host's,
 * so none of theirs raises an error that PostgreSQL would raise.  False
 * where one of the rest is not the host's.
 */
bool
GpuJoinCompileQual(List *quals, Index relid, GpuJoinDeviceExpr *out, List **host_quals)
{
	List	   *device = NIL;
	List	   *host = NIL;
	ListCell   *lc;

	if (host_quals != NULL)
		*host_quals = NIL;
	if (quals == NIL)
		return false;
	/* all of them the device's, the usual case: compiled once */
	if (CompileScanQuals(quals, relid, false, out))
		return true;
	if (host_quals == NULL)
		return false;
	foreach(lc, quals)
	{
		Node	   *qual = lfirst(lc);

		if (host == NIL && CompileScanQuals(list_make1(qual), relid, false, out))
			device = lappend(device, qual);
		else if (HostQual(qual, relid))
			host = lappend(host, qual);
		else
			return false;
	}
	if (!CompileScanQuals(device, relid, host != NIL, out))
		return false;
	*host_quals = host;
	return true;
}

/*
 * Compile one expression over the columns of a join into out: its Vars
 * must be plain Vars that tlist (a List of TargetEntry or of expressions)
 * holds, and its inputs are their 1-based positions there (input_attnos).
 * With is_qual, a boolean (an aggregate's FILTER); otherwise the value's
 * type comes back in *type.  No Params: the aggregation's programs are
 * compiled once, when the node starts.  False when some part of it does
 * not compile.
 */
bool
GpuJoinCompileTlistExpr(Node *expr, List *tlist, bool is_qual, GpuJoinDeviceExpr *out,
						GjExprType *type)
{
	Compiler	c;
	GjExprType	t;
	GjError		err;

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	c.out = out;
	c.relid = 0;
	c.tlist = tlist;
	if (expr == NULL || tlist == NIL)
		return false;
	if (IsA(expr, List))
	{
		if (!is_qual || !CompileQuals(&c, (List *) expr))
			return false;
		t = GJ_EXPR_BOOL;
	}
	else if (!CompileNode(&c, expr, &t))
		return false;
	if (is_qual && t != GJ_EXPR_BOOL)
		return false;
	if (type)
		*type = t;
	memset(&err, 0, sizeof(err));
	return gj_expr_check(&out->program, is_qual, &err) == GJ_OK;
}
