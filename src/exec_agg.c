/*-------------------------------------------------------------------------
 *
 * exec_agg.c
 *	  GpuPreAgg: a GPU join that folds its matches into groups on the device
 *	  and returns one row of partial aggregates per group
 *
 * The node is the join (exec.c) with gj_Agg set: where a join hands each
 * round of matches to GJ_EMIT, this one calls the kernels' aggregate for
 * every round of every chunk (GpuJoinAggregateChunk), and at the end emits
 * the groups (GpuJoinAggEmitNext).  Its scan tuple is the join's columns,
 * then the non-Var group keys and the partial Aggrefs the plan appended
 * (planner_agg.c); the targetlist reads those.
 *
 * The programs (group keys, arguments, FILTERs) are compiled here from the
 * plan's expressions over the join's columns, each input a device column
 * of one side.  Each group's words (gpujoin_kernels.h, GROUPED
 * AGGREGATION) become the partial state PostgreSQL's combine function
 * takes (PartialState): int8 for count and for sum of int2/int4, int8[2]
 * {count, sum} for their avg, int8_avg_serialize's bytea (N, then the
 * 128-bit sum as a NumericVar) for sum and avg of int8,
 * numeric_avg_serialize's for sum and avg of a numeric column of declared
 * scale (its values times 10^scale on the device, AddNaNCounts),
 * float4/float8 for float sums, the argument's type for min and max.
 *
 * A round in which the device could not decide some match (an argument
 * PostgreSQL's arithmetic would raise an error on, or numeric arithmetic
 * past the device's 18 digits, or a numeric NaN in it) is fetched again as
 * the join would emit it, and PostgreSQL's own expressions are evaluated
 * on the matches the device folded into nothing (gj_agg_match_folded):
 * that raises PostgreSQL's error, or gives the values, which become a row
 * of partial aggregates of their own per match (FoldUndecided), emitted
 * with the groups.
 *
 * When a join moves from the GPU to the CPU twin (out of device memory in
 * a build or count, exec.c's SwitchToCpu), the groups folded so far are
 * taken from the old context first (GpuJoinCloseDevice) and emitted too:
 * two partial rows of one group are what Finalize Aggregate combines.
 *
 * IDENTIFICATION
 *	  src/exec_agg.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "exec.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/fmgroids.h"
#include "utils/date.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

/* int8 = int8 and float8 * float8 (pg_operator.dat has no symbol for them) */
#define GJ_INT8_EQ_OPERATOR		410
#define GJ_FLOAT8_MUL_OPERATOR	594

/*
 * An avg(float8) argument above DBL_MAX / GJ_AVG_GUARD_SCALE (1.8e108) in
 * magnitude is folded on the host (AddOverflowGuards)
 */
#define GJ_AVG_GUARD_SCALE		1e200

/* A partial Aggref of the scan tuple */
typedef struct GpuJoinAggItem
{
	GpuJoinAggFunc func;
	int			scan_att;		/* its position in the scan tuple */
	Oid			type;			/* min/max: the argument's (and result's) type */
	int			scale;			/* a numeric argument's declared scale, or -1 */
	int			nan_agg;		/* a numeric sum: the device aggregate counting
								 * its NaNs, else -1 */
	int			guard_agg;		/* an avg(float8): its guard's device
								 * aggregate (AddOverflowGuards), else -1 */
	ExprState  *arg;			/* PostgreSQL's own, over the scan tuple */
	ExprState  *filter;
} GpuJoinAggItem;

/*
 * The groups a context left behind (SaveGroups), copied; or the matches
 * folded on the host (FoldUndecided), whose numeric sums' states are made
 * from PostgreSQL's values (states[item][group], 0 for NULL) rather than
 * from words, which hold no more than 94 bits
 */
typedef struct GpuJoinAggSaved
{
	GjAggResult result;
	Datum	   *states[GJ_AGG_MAX_AGGS];
	bool		sorted;			/* in the spec's order (agg_result's) */
} GpuJoinAggSaved;

/*
 * A condition of the HAVING clause checked on whole groups (planner_agg.c
 * HavingConditions): item's final value (a count, an integer sum, a min or
 * max's word, a numeric's value times 10^scale) against bound, of the
 * same scale
 */
typedef struct GpuJoinAggHaving
{
	int			item;
	int			strategy;		/* B-tree's, the value on the left */
	int128		bound;
} GpuJoinAggHaving;

typedef struct GpuJoinAgg
{
	GjAggSpec  *spec;
	int			nitems;
	GpuJoinAggItem *items;
	int			nkeys;
	ExprState **key_exprs;		/* per key, PostgreSQL's own, over the scan
								 * tuple */
	int		   *key_atts;		/* per key, its position in the scan tuple */
	Oid		   *key_types;
	int		   *key_scales;		/* per key, a numeric's scale (GpuJoinNumericKeyScale), or -1 */
	GpuJoinDict **key_dicts;	/* per key, a text's codes (GpuJoinDict), or
								 * NULL */
	const char *variant;		/* GpuJoinGroupByVariantName's, or "one group" */
	const char *considered;		/* the variants priced, for EXPLAIN VERBOSE */
	double		groups_planned;
	GjContext  *begun;			/* the context agg_begin was called on */
	int64		folded;			/* matches its table has folded since */
	List	   *saved;			/* GpuJoinAggSaved, of contexts closed */
	bool		emitting;
	GjAggResult result;			/* being emitted */
	Datum	  **result_states;	/* its states made on the host, or NULL */
	int64		pos;
	int64		groups;			/* EXPLAIN ANALYZE: rows emitted */
	int64		spills;			/* EXPLAIN ANALYZE: tables emptied to the host */
	int64		undecided_rounds;
	GpuJoinAggSaved *host;		/* the matches folded on the host (in saved) */
	int64		host_capacity;
	int64		host_folded;	/* EXPLAIN ANALYZE: matches folded on the host */

	/*
	 * Rows in the order of the group keys (the plan's pathkeys; planner_agg.c
	 * GroupOrdering), where the spec has sort columns (nsort, and per column
	 * the key, its direction and where NULL goes: agg_result returns a
	 * context's groups in that order).  Every set of groups is gathered
	 * first (sets); one set that came back sorted is emitted as it is
	 * (order NULL), several through one index sorted on the host (order).
	 */
	int		   *key_refs;		/* per key, its ressortgroupref */
	GpuJoinAggSaved **sets;
	struct GpuJoinAggRow *order;
	int64		norder;			/* rows in order; -1: not gathered yet */
	int64		host_sorted;	/* EXPLAIN ANALYZE: groups sorted on the host */

	/*
	 * A serial plan's HAVING conditions, checked on the groups being
	 * emitted where they are whole (each folded once, into one table: one
	 * set of groups, the context's, whose table never spilled, which would
	 * return a key once per spill); the Finalize Aggregate checks the
	 * whole clause again
	 */
	int			nhaving;
	GpuJoinAggHaving *having;
	bool		whole;			/* the groups being emitted are */
	int64		sets_begun;		/* sets of groups emitted so far */
	int64		having_removed; /* EXPLAIN ANALYZE: groups not emitted */
} GpuJoinAgg;

/* A row of the sorted output: group g of set "set" */
typedef struct GpuJoinAggRow
{
	int32		set;
	int64		g;
} GpuJoinAggRow;

static void InitOrdering(GpuJoinAgg *agg, GjAggSpec *spec, List *ordering);
static void InitHaving(GpuJoinAgg *agg, List *conditions);
static int128 Sum128(const GjAggResult *r, int a, int64 g);
static bool ReadContextGroups(GpuJoinState *node, GjAggResult *r);
static TupleTableSlot *EmitGroup(GpuJoinState *node, const GjAggResult *r, Datum **states,
								 int64 g);

/* Replace the join's Vars by references to their place in the scan tuple */
static Node *
ScanVars(Node *node, List *tlist)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *var = (Var *) node;
		int			pos = 0;
		ListCell   *lc;

		foreach(lc, tlist)
		{
			Var		   *v = (Var *) lfirst_node(TargetEntry, lc)->expr;

			pos++;
			if (IsA(v, Var) && v->varno == var->varno && v->varattno == var->varattno &&
				var->varlevelsup == 0)
			{
				Var		   *ref = copyObject(var);

				ref->varno = INDEX_VAR;
				ref->varattno = pos;
				return (Node *) ref;
			}
		}
		elog(ERROR, "gpujoin: an aggregate reads a column the join does not carry");
	}
	return expression_tree_mutator(node, ScanVars, tlist);
}

/*
 * The side column of the join column at 1-based position pos, its side in
 * *s (0 outer, 1 inner)
 */
static const GpuJoinColumn *
SideColumnAt(GpuJoinState *node, int pos, int *s)
{
	for (*s = 0; *s < 2; (*s)++)
	{
		GpuJoinSide *side = *s == 0 ? &node->gj_Outer : &node->gj_Inner;

		for (int c = 0; c < side->ncolumns; c++)
			if (side->columns[c].scan_att == pos - 1)
				return &side->columns[c];
	}
	elog(ERROR, "gpujoin: an aggregate reads join column %d, which the join does not load", pos);
	return NULL;				/* keep compiler quiet */
}

/* Side and device column of the join column at 1-based position pos */
static GjAggInput
InputAt(GpuJoinState *node, int pos, uint8 kind, uint8 type)
{
	GjAggInput	in;
	int			s;
	const GpuJoinColumn *col = SideColumnAt(node, pos, &s);

	if (col->device < 0)
		elog(ERROR, "gpujoin: an aggregate reads a column that is not on the device");
	in.side = (int8) s;
	in.column = (int8) col->device;
	in.kind = kind;
	in.type = type;
	return in;
}

/*
 * One program of the spec from a compiled expression: its inputs made the
 * spec's (each join column once)
 */
static void
SetProgram(GpuJoinState *node, GjAggSpec *spec, const GpuJoinDeviceExpr *expr, GjAggExpr *out)
{
	out->program = expr->program;
	for (int i = 0; i < expr->program.ninputs; i++)
	{
		GjAggInput	in = InputAt(node, expr->input_attnos[i], expr->input_kinds[i],
								 expr->program.input_types[i]);
		int			j;

		for (j = 0; j < spec->ninputs; j++)
			if (spec->inputs[j].side == in.side && spec->inputs[j].column == in.column)
				break;
		if (j == spec->ninputs)
		{
			if (spec->ninputs >= GJ_AGG_MAX_INPUTS)
				elog(ERROR, "gpujoin: the aggregates read more than %d columns", GJ_AGG_MAX_INPUTS);
			spec->inputs[spec->ninputs++] = in;
		}
		out->inputs[i] = (int16) j;
	}
}

static void
Compile(Node *expr, List *join_tlist, bool is_qual, GpuJoinDeviceExpr *out, GjExprType *type)
{
	if (!GpuJoinCompileTlistExpr(expr, join_tlist, is_qual, out, type))
		elog(ERROR, "gpujoin: an aggregate's expression the planner compiled does not compile");
}

/*
 * A text group key, a join column its side codes (GpuJoinDict): a program
 * reading the codes, which are the group's key words; the codes' *dict
 */
static void
TextKeyProgram(GpuJoinState *node, Node *key, List *join_tlist, GpuJoinDeviceExpr *out,
			   GpuJoinDict **dict)
{
	Var		   *ref;
	GjAggExpr	input;
	int			s;

	if (!IsA(key, Var))
		elog(ERROR, "gpujoin: a text group key of a GpuPreAgg is not a column");
	ref = (Var *) ScanVars(key, join_tlist);
	*dict = SideColumnAt(node, ref->varattno, &s)->dict;
	if (*dict == NULL)
		elog(ERROR, "gpujoin: a text group key of a GpuPreAgg is not coded on its side");
	gj_agg_expr_input(&input, 0, GJ_EXPR_INT8);
	memset(out, 0, sizeof(*out));
	out->program = input.program;
	out->input_attnos[0] = ref->varattno;
	out->input_kinds[0] = GJ_KEY_SIGNED;
}

/*
 * The join columns the aggregation reads, added to needed (as
 * pull_varattnos numbers them), so that the sides load them; before the
 * sides are set up
 */
void
GpuJoinAggNeeded(CustomScan *cscan, List *join_tlist, Bitmapset **needed)
{
	ListCell   *lc;

	foreach(lc, list_copy_tail(cscan->custom_scan_tlist, list_length(join_tlist)))
	{
		List	   *vars = pull_var_clause((Node *) lfirst_node(TargetEntry, lc)->expr,
										   PVC_RECURSE_AGGREGATES);
		ListCell   *lc2;

		foreach(lc2, vars)
		{
			Var		   *ref = (Var *) ScanVars(lfirst(lc2), join_tlist);

			*needed = bms_add_member(*needed,
									 ref->varattno - FirstLowInvalidHeapAttributeNumber);
		}
	}
	/* (keys that are plain Vars the targetlist reads: BeginGpuJoin has them) */
}

/*
 * One more device aggregate, which no scan tuple column shows: a count of
 * arg (NULL: of the matches) where filter holds (NULL: every match); its
 * index in the spec
 */
static int
HiddenCount(GpuJoinState *node, GjAggSpec *spec, List *join_tlist, Expr *arg, Expr *filter)
{
	GjAgg	   *dev;
	GpuJoinDeviceExpr expr;
	GjExprType	type = GJ_EXPR_INT8;

	if (spec->naggs >= GJ_AGG_MAX_AGGS)
		elog(ERROR, "gpujoin: more than %d aggregates", GJ_AGG_MAX_AGGS);
	dev = &spec->aggs[spec->naggs];
	memset(dev, 0, sizeof(*dev));
	dev->kind = GJ_AGG_COUNT;
	if (arg != NULL)
	{
		Compile((Node *) arg, join_tlist, false, &expr, &type);
		dev->has_arg = true;
		SetProgram(node, spec, &expr, &dev->arg);
	}
	dev->type = (uint8) type;
	if (filter != NULL)
	{
		Compile((Node *) filter, join_tlist, true, &expr, NULL);
		dev->has_filter = true;
		SetProgram(node, spec, &expr, &dev->filter);
	}
	return spec->naggs++;
}

/*
 * A numeric sum's NaNs: a numeric column reaches the device as its values
 * times 10^scale and NaN as PG_INT64_MAX (GpuJoinNumericScaled), which the
 * sum adds as any value; one more device aggregate per numeric sum counts
 * them, count(x) FILTER (WHERE [its FILTER AND] x = PG_INT64_MAX) over the
 * column read as int8, so that the state takes them out of the sum and
 * counts them apart, as numeric_avg_accum does (PartialState)
 */
static void
AddNaNCounts(GpuJoinState *node, GpuJoinAgg *agg, List *join_tlist)
{
	GjAggSpec  *spec = agg->spec;
	CustomScan *cscan = (CustomScan *) node->css.ss.ps.plan;

	for (int a = 0; a < agg->nitems; a++)
	{
		GpuJoinAggItem *item = &agg->items[a];
		Aggref	   *aggref;
		Var		   *column;
		Var		   *as_int8;
		Expr	   *is_nan;
		Expr	   *filter;

		if (item->func != GPUJOIN_AGG_SUM_NUMERIC)
			continue;
		aggref = (Aggref *) list_nth_node(TargetEntry, cscan->custom_scan_tlist,
										  item->scan_att)->expr;
		column = (Var *) linitial_node(TargetEntry, aggref->args)->expr;
		if (item->scale < 0)
			elog(ERROR, "gpujoin: a numeric sum's argument has no scale the device computes with");
		if (!IsA(column, Var))
		{
			/*
			 * Arithmetic: a NaN in it is undecided on the device (GJ_EXPR_DIGITS),
			 * so only the host counts NaNs (FoldUndecided); the device's
			 * count is FILTER (WHERE false)
			 */
			item->nan_agg = HiddenCount(node, spec, join_tlist, NULL,
										(Expr *) makeBoolConst(false, false));
			continue;
		}
		as_int8 = makeVar(column->varno, column->varattno, INT8OID, -1, InvalidOid, 0);
		is_nan = make_opclause(GJ_INT8_EQ_OPERATOR, BOOLOID, false, (Expr *) as_int8,
							   (Expr *) makeConst(INT8OID, -1, InvalidOid, sizeof(int64),
												  Int64GetDatum(PG_INT64_MAX), false,
												  FLOAT8PASSBYVAL),
							   InvalidOid, InvalidOid);
		((OpExpr *) is_nan)->opfuncid = F_INT8EQ;
		filter = aggref->aggfilter == NULL ? is_nan :
			make_andclause(list_make2(copyObject(aggref->aggfilter), is_nan));

		item->nan_agg = HiddenCount(node, spec, join_tlist, (Expr *) as_int8, filter);
	}
}

/*
 * An avg(float8)'s guard.  PostgreSQL's float8_accum keeps, beside the
 * count and the sum, the sum of squared deviations, and raises an overflow
 * error where that becomes infinite from finite values; the device keeps
 * none (the state carries 0: avg's final function never reads it).  Values
 * under 1.8e108 in magnitude cannot overflow it in a group of fewer than
 * 10^45 rows, so the device folds those; a larger one is left undecided by
 * one more device aggregate, count(x * 1e200) [FILTER (its FILTER)], whose
 * product overflows just there.  FoldUndecided folds such a match on the
 * host into a state of its own, and Finalize Aggregate's float8_combine
 * then raises the overflow error where the deviations overflow, as in
 * PostgreSQL's own parallel aggregation.  avg(float4) needs none: a float4
 * is at most 3.4e38.
 */
static void
AddOverflowGuards(GpuJoinState *node, GpuJoinAgg *agg, List *join_tlist)
{
	GjAggSpec  *spec = agg->spec;
	CustomScan *cscan = (CustomScan *) node->css.ss.ps.plan;

	for (int a = 0; a < agg->nitems; a++)
	{
		GpuJoinAggItem *item = &agg->items[a];
		Aggref	   *aggref;
		Expr	   *scaled;

		if (item->func != GPUJOIN_AGG_AVG_FLOAT || item->type != FLOAT8OID)
			continue;
		aggref = (Aggref *) list_nth_node(TargetEntry, cscan->custom_scan_tlist,
										  item->scan_att)->expr;
		scaled = make_opclause(GJ_FLOAT8_MUL_OPERATOR, FLOAT8OID, false,
							   copyObject(linitial_node(TargetEntry, aggref->args)->expr),
							   (Expr *) makeConst(FLOAT8OID, -1, InvalidOid, sizeof(float8),
												  Float8GetDatum(GJ_AVG_GUARD_SCALE), false,
												  FLOAT8PASSBYVAL),
							   InvalidOid, InvalidOid);
		((OpExpr *) scaled)->opfuncid = F_FLOAT8MUL;

		item->guard_agg = HiddenCount(node, spec, join_tlist, scaled, aggref->aggfilter);
	}
}

/*
 * Set up the aggregation of a GpuPreAgg node, after its sides: the spec,
 * the items, PostgreSQL's own expressions for undecided rounds
 */
void
GpuJoinAggInit(GpuJoinState *node, CustomScan *cscan, List *join_tlist, List *agg_private)
{
	GpuJoinAgg *agg = palloc0(sizeof(GpuJoinAgg));
	GjAggSpec  *spec = palloc0(sizeof(GjAggSpec));
	int			num_join_cols = list_length(join_tlist);
	List	   *tlist = cscan->scan.plan.targetlist;
	ListCell   *lc;
	int			pos;

	agg->spec = spec;
	agg->groups_planned = floatVal(linitial(agg_private));
	agg->variant = strVal(lsecond(agg_private));
	/* with no key ("one group") the variant is not used */
	spec->variant = (uint8_t) Max(GpuJoinGroupByVariantOf(agg->variant), GJ_AGG_HASH);
	agg->considered = strVal(lfourth(agg_private));
	agg->items = palloc0(sizeof(GpuJoinAggItem) * GJ_AGG_MAX_AGGS);
	agg->key_exprs = palloc0(sizeof(ExprState *) * GJ_AGG_MAX_KEYS);
	agg->key_atts = palloc0(sizeof(int) * GJ_AGG_MAX_KEYS);
	agg->key_types = palloc0(sizeof(Oid) * GJ_AGG_MAX_KEYS);
	agg->key_scales = palloc0(sizeof(int) * GJ_AGG_MAX_KEYS);
	agg->key_dicts = palloc0(sizeof(GpuJoinDict *) * GJ_AGG_MAX_KEYS);
	agg->key_refs = palloc0(sizeof(int) * GJ_AGG_MAX_KEYS);
	agg->norder = -1;
	spec->groups_hint = (int64) Min(agg->groups_planned, (double) (INT64CONST(1) << 30));

	/*
	 * The group keys: the targetlist's entries with a sort/group reference.
	 * setrefs.c made each a reference to the scan tuple: to a join column
	 * (a key that is a plain Var) or to the key's own entry.
	 */
	foreach(lc, tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Var		   *ref = (Var *) tle->expr;
		TargetEntry *scan_tle;
		GpuJoinDeviceExpr expr;
		GjExprType	type;
		Node	   *key;

		if (tle->ressortgroupref == 0)
			continue;
		if (!IsA(ref, Var) || ref->varno != INDEX_VAR)
			elog(ERROR, "gpujoin: a group key of a GpuPreAgg is not in its scan tuple");
		if (agg->nkeys >= GJ_AGG_MAX_KEYS)
			elog(ERROR, "gpujoin: more than %d group keys", GJ_AGG_MAX_KEYS);
		scan_tle = list_nth_node(TargetEntry, cscan->custom_scan_tlist, ref->varattno - 1);
		key = (Node *) scan_tle->expr;
		if (GpuJoinDictType(exprType(key)))
		{
			TextKeyProgram(node, key, join_tlist, &expr, &agg->key_dicts[agg->nkeys]);
			type = GJ_EXPR_INT8;
		}
		else
			Compile(key, join_tlist, false, &expr, &type);
		SetProgram(node, spec, &expr, &spec->keys[agg->nkeys]);
		spec->key_types[agg->nkeys] = (uint8) type;
		agg->key_exprs[agg->nkeys] = ExecInitExpr((Expr *) ScanVars(key, join_tlist),
												  &node->css.ss.ps);
		agg->key_atts[agg->nkeys] = ref->varattno - 1;
		agg->key_types[agg->nkeys] = exprType(key);
		agg->key_scales[agg->nkeys] = GpuJoinNumericKeyScale((Node *) key);
		agg->key_refs[agg->nkeys] = (int) tle->ressortgroupref;
		agg->nkeys++;
	}
	spec->nkeys = agg->nkeys;
	InitOrdering(agg, spec, (List *) list_nth(agg_private, 4));

	/* the partial Aggrefs the plan appended */
	pos = 0;
	foreach(lc, cscan->custom_scan_tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Aggref	   *aggref = (Aggref *) tle->expr;
		GpuJoinAggItem *item;
		GjAgg	   *dev;
		GpuJoinDeviceExpr expr;
		GjExprType	type = GJ_EXPR_INT8;

		pos++;
		if (pos <= num_join_cols || !IsA(aggref, Aggref))
			continue;
		if (agg->nitems >= GJ_AGG_MAX_AGGS)
			elog(ERROR, "gpujoin: more than %d aggregates", GJ_AGG_MAX_AGGS);
		item = &agg->items[agg->nitems];
		dev = &spec->aggs[agg->nitems];
		agg->nitems++;
		item->func = (GpuJoinAggFunc) GpuJoinAggFuncOf(aggref->aggfnoid);
		if ((int) item->func < 0)
			elog(ERROR, "gpujoin: aggregate %u has no device form", aggref->aggfnoid);
		item->scan_att = pos - 1;
		item->scale = -1;
		item->nan_agg = -1;
		item->guard_agg = -1;
		if (aggref->aggfilter != NULL)
		{
			Compile((Node *) aggref->aggfilter, join_tlist, true, &expr, NULL);
			dev->has_filter = true;
			SetProgram(node, spec, &expr, &dev->filter);
			item->filter = ExecInitExpr((Expr *) ScanVars((Node *) aggref->aggfilter, join_tlist),
										&node->css.ss.ps);
		}
		if (item->func != GPUJOIN_AGG_COUNT_STAR)
		{
			Expr	   *arg = linitial_node(TargetEntry, aggref->args)->expr;

			Compile((Node *) arg, join_tlist, false, &expr, &type);
			dev->has_arg = true;
			SetProgram(node, spec, &expr, &dev->arg);
			item->type = exprType((Node *) arg);
			item->scale = GpuJoinNumericExprScale((Node *) arg);
			item->arg = ExecInitExpr((Expr *) ScanVars((Node *) arg, join_tlist),
									 &node->css.ss.ps);
		}
		dev->type = (uint8) type;
		switch (item->func)
		{
			case GPUJOIN_AGG_COUNT_STAR:
			case GPUJOIN_AGG_COUNT:
				dev->kind = GJ_AGG_COUNT;
				break;
			case GPUJOIN_AGG_MIN:
				dev->kind = GJ_AGG_MIN;
				break;
			case GPUJOIN_AGG_MAX:
				dev->kind = GJ_AGG_MAX;
				break;
			default:
				dev->kind = GJ_AGG_SUM;
				break;
		}
	}
	spec->naggs = agg->nitems;
	if (agg->nitems == 0)
		elog(ERROR, "gpujoin: a GpuPreAgg without aggregates");
	AddNaNCounts(node, agg, join_tlist);
	AddOverflowGuards(node, agg, join_tlist);
	/* (with no group key the Finalize Aggregate needs its one group: none) */
	InitHaving(agg, agg->nkeys > 0 ? (List *) list_nth(agg_private, 5) : NIL);
	node->gj_Agg = agg;
}

/*
 * The HAVING conditions the plan gave (planner_agg.c HavingConditions),
 * each constant at its item's scale; a constant of more decimals than the
 * sum has is left to the Finalize Aggregate
 */
static void
InitHaving(GpuJoinAgg *agg, List *conditions)
{
	ListCell   *lc;

	agg->having = palloc0(sizeof(GpuJoinAggHaving) * Max(list_length(conditions), 1));
	foreach(lc, conditions)
	{
		List	   *c = lfirst(lc);
		GpuJoinAggHaving *h = &agg->having[agg->nhaving];
		Const	   *bound = lthird_node(Const, c);
		int			scale = 0;
		int64		value;

		h->item = intVal(linitial(c));
		h->strategy = intVal(lsecond(c));
		if (h->item < 0 || h->item >= agg->nitems)
			elog(ERROR, "gpujoin: a HAVING condition on aggregate %d of %d", h->item,
				 agg->nitems);
		switch (bound->consttype)
		{
			case INT2OID:
				value = DatumGetInt16(bound->constvalue);
				break;
			case INT4OID:
				value = DatumGetInt32(bound->constvalue);
				break;
			case INT8OID:
				value = DatumGetInt64(bound->constvalue);
				break;
			case DATEOID:
				value = DatumGetDateADT(bound->constvalue);
				break;
			default:
				if (!GpuJoinNumericConstScaled(bound->constvalue, &scale, &value) ||
					scale > Max(agg->items[h->item].scale, 0))
					continue;
				break;
		}
		h->bound = value;
		for (int d = scale; d < Max(agg->items[h->item].scale, 0); d++)
			h->bound *= 10;
		agg->nhaving++;
	}
}

/*
 * Whether group g of r may pass the HAVING conditions: false only where
 * one is false of the group's final value; a NULL sum, min or max, a NaN
 * in a numeric, a state made on the host are left to the Finalize
 * Aggregate
 */
static bool
HavingKeeps(const GpuJoinAgg *agg, const GjAggResult *r, Datum **states, int64 g)
{
	for (int i = 0; i < agg->nhaving; i++)
	{
		const GpuJoinAggHaving *h = &agg->having[i];
		const GpuJoinAggItem *item = &agg->items[h->item];
		int			a = h->item;
		int128		v;
		bool		holds;

		if (states != NULL && states[a] != NULL)
			continue;
		switch (item->func)
		{
			case GPUJOIN_AGG_COUNT_STAR:
			case GPUJOIN_AGG_COUNT:
				v = r->n[a][g];
				break;
			case GPUJOIN_AGG_SUM_INT:
				if (r->n[a][g] == 0)
					continue;
				/* as PartialState emits it: int4_sum's int8, unchecked */
				v = (int64) (uint64) Sum128(r, a, g);
				break;
			case GPUJOIN_AGG_SUM_INT8:
				if (r->n[a][g] == 0)
					continue;
				v = Sum128(r, a, g);
				break;
			case GPUJOIN_AGG_SUM_NUMERIC:
				if (r->n[a][g] == 0 || r->n[item->nan_agg][g] > 0)
					continue;
				v = Sum128(r, a, g);
				break;
			case GPUJOIN_AGG_MIN:
			case GPUJOIN_AGG_MAX:
				/* the value's word (IntDatum's); a numeric's NaN PG_INT64_MAX */
				if (r->n[a][g] == 0 ||
					(item->type == NUMERICOID && r->a[a][g] == PG_INT64_MAX))
					continue;
				v = r->a[a][g];
				break;
			default:
				continue;
		}
		switch (h->strategy)
		{
			case BTLessStrategyNumber:
				holds = v < h->bound;
				break;
			case BTLessEqualStrategyNumber:
				holds = v <= h->bound;
				break;
			case BTEqualStrategyNumber:
				holds = v == h->bound;
				break;
			case BTGreaterEqualStrategyNumber:
				holds = v >= h->bound;
				break;
			case BTGreaterStrategyNumber:
				holds = v > h->bound;
				break;
			default:
				holds = true;
				break;
		}
		if (!holds)
			return false;
	}
	return true;
}

/*
 * Whether group g of r, whole, is not to be emitted (HavingKeeps), counted
 * as removed
 */
static bool
HavingDrops(GpuJoinAgg *agg, const GjAggResult *r, Datum **states, int64 g)
{
	if (agg->nhaving == 0 || HavingKeeps(agg, r, states, g))
		return false;
	agg->having_removed++;
	return true;
}

/*
 * The output order the plan promised, (sortgroupref, descending,
 * nulls_first) for each sort column, or NIL for none, as the spec's sort
 * columns
 */
static void
InitOrdering(GpuJoinAgg *agg, GjAggSpec *spec, List *ordering)
{
	for (int i = 0; i + 2 < list_length(ordering); i += 3)
	{
		int			ref = intVal(list_nth(ordering, i));
		int			k;

		for (k = 0; k < agg->nkeys; k++)
			if (agg->key_refs[k] == ref)
				break;
		if (k == agg->nkeys)
			elog(ERROR, "gpujoin: a sort column of a GpuPreAgg is not one of its group keys");
		spec->sort_keys[spec->nsort] = (int8) k;
		spec->sort_desc[spec->nsort] = boolVal(list_nth(ordering, i + 1));
		spec->sort_nulls_first[spec->nsort] = boolVal(list_nth(ordering, i + 2));
		spec->nsort++;
	}
}

/*
 * qsort_arg's comparison of two rows by the sort columns: a key's words
 * order as its values do (integers, dates and times as they are, numerics
 * times 10^scale with NaN as the largest word, booleans 0 and 1)
 */
static int
CompareRows(const void *a, const void *b, void *arg)
{
	const GpuJoinAgg *agg = arg;
	const GpuJoinAggRow *x = a;
	const GpuJoinAggRow *y = b;
	const GjAggResult *rx = &agg->sets[x->set]->result;
	const GjAggResult *ry = &agg->sets[y->set]->result;
	const GjAggSpec *spec = agg->spec;

	for (int i = 0; i < spec->nsort; i++)
	{
		int			k = spec->sort_keys[i];
		bool		nx = rx->key_nulls[k][x->g] != 0;
		bool		ny = ry->key_nulls[k][y->g] != 0;
		int64		vx = rx->keys[k][x->g];
		int64		vy = ry->keys[k][y->g];
		int			c;

		if (nx || ny)
		{
			if (nx && ny)
				continue;
			/* NULL first or last, whatever the direction */
			return (nx == spec->sort_nulls_first[i]) ? -1 : 1;
		}
		c = (vx > vy) - (vx < vy);
		if (c != 0)
			return spec->sort_desc[i] ? -c : c;
	}
	return 0;
}

/*
 * Ordered output: every set of groups (those of closed contexts and of the
 * host, then the context's own).  One set that agg_result sorted comes out
 * as it is; several, through one index of their rows sorted on the host by
 * the sort columns, so that the rows of one group in several sets come out
 * next to each other, which is all Finalize GroupAggregate needs.
 */
static void
GatherOrdered(GpuJoinState *node)
{
	GpuJoinAgg *agg = node->gj_Agg;
	int			nsets = list_length(agg->saved) + 1;
	int			n = 0;
	int64		rows = 0;
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(node->css.ss.ps.state->es_query_cxt);

	agg->sets = palloc0(sizeof(GpuJoinAggSaved *) * nsets);
	foreach(lc, agg->saved)
		agg->sets[n++] = lfirst(lc);
	agg->saved = NIL;
	/* the context's arrays, valid until its next call: none comes */
	agg->sets[n] = palloc0(sizeof(GpuJoinAggSaved));
	if (ReadContextGroups(node, &agg->sets[n]->result))
		agg->sets[n++]->sorted = true;
	for (int i = 0; i < n; i++)
		rows += agg->sets[i]->result.ngroups;
	agg->pos = 0;
	if (n == 0 || (n == 1 && agg->sets[0]->sorted))
	{
		agg->order = NULL;
		agg->norder = rows;
		MemoryContextSwitchTo(old);
		return;
	}
	agg->host_sorted += rows;
	agg->order = palloc_extended(sizeof(GpuJoinAggRow) * Max(rows, 1), MCXT_ALLOC_HUGE);
	agg->norder = 0;
	for (int i = 0; i < n; i++)
		for (int64 g = 0; g < agg->sets[i]->result.ngroups; g++)
		{
			agg->order[agg->norder].set = i;
			agg->order[agg->norder].g = g;
			agg->norder++;
		}
	MemoryContextSwitchTo(old);
	CHECK_FOR_INTERRUPTS();
	qsort_arg(agg->order, agg->norder, sizeof(GpuJoinAggRow), CompareRows, agg);
	agg->pos = 0;
}

/* The context's groups, once per context: agg_begin on first use */
static GjStatus
Begin(GpuJoinState *node, GjError *err)
{
	GpuJoinAgg *agg = node->gj_Agg;
	GpuJoinDeviceContext *dev = &node->gj_Device;
	GjStatus	status;

	if (agg->begun == dev->ctx)
		return GJ_OK;
	memset(err, 0, sizeof(*err));
	status = dev->kernels->agg_begin(dev->ctx, agg->spec, err);
	if (status == GJ_OK)
	{
		agg->begun = dev->ctx;
		agg->folded = 0;
	}
	return status;
}

/*
 * Begin, and where the device has no room for the groups, the join goes on
 * on the CPU twin, as for a build (nothing is folded in this context yet)
 */
static void
BeginOnContext(GpuJoinState *node)
{
	GjError		err;
	GjStatus	status = Begin(node, &err);

	if (status == GJ_ERROR_DEVICE_MEMORY && !node->gj_OnFallback)
	{
		GpuJoinSwitchToCpu(node, &err);	/* rebuilds, recounts the chunk */
		status = Begin(node, &err);
	}
	GpuJoinCheckStatus(status, &err, "could not start the aggregation of a GPU join");
}

/*
 * The matches one group table folds at most: a group's integer sums are
 * exact in its words for up to 2^32 rows (gpujoin_kernels.h, GROUPED
 * AGGREGATION), and a group has no more rows than the table has folded
 * matches.  Past it, the table is emptied to the host and begun again.
 */
#define GJ_AGG_TABLE_MATCHES	(INT64CONST(1) << 32)

static int64
TableMatches(void)
{
	return gpujoin_preagg_table_matches > 0 ? gpujoin_preagg_table_matches :
		GJ_AGG_TABLE_MATCHES;
}

/* Copy a result's arrays into the node's memory */
static GjAggResult
CopyResult(const GjAggResult *r, int nkeys, int naggs)
{
	GjAggResult copy;
	Size		n = (Size) Max(r->ngroups, 1);

	memset(&copy, 0, sizeof(copy));
	copy.ngroups = r->ngroups;
	for (int k = 0; k < nkeys; k++)
	{
		int64	   *keys = palloc_extended(n * sizeof(int64), MCXT_ALLOC_HUGE);
		uint8	   *nulls = palloc_extended(n, MCXT_ALLOC_HUGE);

		memcpy(keys, r->keys[k], r->ngroups * sizeof(int64));
		memcpy(nulls, r->key_nulls[k], r->ngroups);
		copy.keys[k] = keys;
		copy.key_nulls[k] = nulls;
	}
	for (int a = 0; a < naggs; a++)
	{
		const int64 *const src[3] = {r->n[a], r->a[a], r->b[a]};
		int64	   *dst[3];

		for (int w = 0; w < 3; w++)
		{
			dst[w] = palloc_extended(n * sizeof(int64), MCXT_ALLOC_HUGE);
			memcpy(dst[w], src[w], r->ngroups * sizeof(int64));
		}
		copy.n[a] = dst[0];
		copy.a[a] = dst[1];
		copy.b[a] = dst[2];
	}
	return copy;
}

/*
 * The groups of the node's context, read once: false when it has none
 * (no agg_begin on it, or read already).  The arrays stay valid until the
 * context's next call.
 */
static bool
ReadContextGroups(GpuJoinState *node, GjAggResult *r)
{
	GpuJoinAgg *agg = node->gj_Agg;
	GpuJoinDeviceContext *dev = &node->gj_Device;
	GjError		err;

	if (agg == NULL || agg->begun == NULL || agg->begun != dev->ctx)
		return false;
	memset(&err, 0, sizeof(err));
	GpuJoinCheckStatus(dev->kernels->agg_result(dev->ctx, r, &err), &err,
					   "could not read the groups of a GPU aggregation");
	agg->spills += r->spills;
	agg->begun = NULL;
	return true;
}

/*
 * Before the node's context is closed for another (GpuJoinCloseDevice):
 * keep the groups folded in it, to be emitted with the rest
 */
static void
SaveGroups(GpuJoinState *node)
{
	GpuJoinAgg *agg = node->gj_Agg;
	GjAggResult r;
	GpuJoinAggSaved *saved;

	if (!ReadContextGroups(node, &r))
		return;
	saved = palloc0(sizeof(GpuJoinAggSaved));
	saved->result = CopyResult(&r, agg->spec->nkeys, agg->spec->naggs);
	saved->sorted = true;
	agg->saved = lappend(agg->saved, saved);
}

/*
 * Key k's value as the device holds it (KeyDatum's inverse): a numeric
 * column's value times 10^scale, a float's gj_float_key word, a text's code
 */
static int64
KeyWord(const GpuJoinAgg *agg, int k, Datum value)
{
	Oid			type = agg->key_types[k];
	GjExprDatum d;

	if (agg->key_dicts[k] != NULL)
		return GpuJoinDictCode(agg->key_dicts[k], value);
	if (type == NUMERICOID)
		return GpuJoinNumericKeyWord(value, agg->key_scales[k]);
	GpuJoinDeviceExprDatum(type, value, false, &d);
	if (type == FLOAT8OID || type == FLOAT4OID)
		return gj_float_key(d.v.f);
	return d.v.i;
}

/* Room for one more row of host-folded groups; its index */
static int64
HostGroup(GpuJoinState *node)
{
	GpuJoinAgg *agg = node->gj_Agg;
	GjAggSpec  *spec = agg->spec;
	GjAggResult *r;
	MemoryContext old;

	if (agg->host == NULL)
	{
		old = MemoryContextSwitchTo(node->css.ss.ps.state->es_query_cxt);
		agg->host = palloc0(sizeof(GpuJoinAggSaved));
		agg->host_capacity = 0;
		agg->saved = lappend(agg->saved, agg->host);
		MemoryContextSwitchTo(old);
	}
	r = &agg->host->result;
	if (r->ngroups == agg->host_capacity)
	{
		int64		capacity = Max(16, 2 * agg->host_capacity);
		MemoryContext cxt = node->css.ss.ps.state->es_query_cxt;

		for (int k = 0; k < spec->nkeys; k++)
		{
			r->keys[k] = GpuJoinGrowHostArray(cxt, (void *) r->keys[k], capacity * sizeof(int64));
			r->key_nulls[k] = GpuJoinGrowHostArray(cxt, (void *) r->key_nulls[k], capacity);
		}
		for (int a = 0; a < spec->naggs; a++)
		{
			const int64 **words[3] = {&r->n[a], &r->a[a], &r->b[a]};

			for (int w = 0; w < 3; w++)
				*words[w] = GpuJoinGrowHostArray(cxt, (void *) *words[w], capacity * sizeof(int64));
		}
		for (int a = 0; a < agg->nitems; a++)
			if (agg->items[a].func == GPUJOIN_AGG_SUM_NUMERIC)
				agg->host->states[a] = GpuJoinGrowHostArray(cxt, agg->host->states[a],
															capacity * sizeof(Datum));
		agg->host_capacity = capacity;
	}
	return r->ngroups++;
}

/* numeric_send's sign field for NaN and the infinities (numeric.c) */
#define SENT_NUMERIC_NAN	0xC000
#define SENT_NUMERIC_PINF	0xD000
#define SENT_NUMERIC_NINF	0xF000

static void SendNumericVar(StringInfo buf, int128 v, int scale);
static void SendNumericCounts(StringInfo buf, int max_scale, int64 max_scale_count, int64 nans,
							  int64 pinfs, int64 ninfs);
static Datum SerializeNumericSum(int64 n, int128 sum, int scale, int64 nans, int64 pinfs,
								 int64 ninfs);

/*
 * numeric_avg_serialize's bytea for one value (NaN and the infinities
 * counted apart, as do_numeric_accum does), from numeric_send's form: a
 * host-folded match's state of a numeric sum or average
 */
static Datum
SerializeNumericValue(Datum value)
{
	bytea	   *sent = DatumGetByteaPP(DirectFunctionCall1(numeric_send, value));
	const char *p = VARDATA_ANY(sent);
	int16		head[4];		/* ndigits, weight, sign, dscale */
	uint16		sign;
	StringInfoData buf;

	memcpy(head, p, sizeof(head));
	for (int i = 0; i < 4; i++)
		head[i] = (int16) pg_ntoh16((uint16) head[i]);
	sign = (uint16) head[2];
	if (sign == SENT_NUMERIC_NAN || sign == SENT_NUMERIC_PINF || sign == SENT_NUMERIC_NINF)
		return SerializeNumericSum(0, 0, 0, sign == SENT_NUMERIC_NAN, sign == SENT_NUMERIC_PINF,
								   sign == SENT_NUMERIC_NINF);
	pq_begintypsend(&buf);
	pq_sendint64(&buf, 1);		/* N */
	/* numericvar_serialize: the same fields, in 32 bits */
	for (int i = 0; i < 4; i++)
		pq_sendint32(&buf, head[i]);
	pq_sendbytes(&buf, p + sizeof(head), head[0] * sizeof(int16));
	SendNumericCounts(&buf, head[3], 1, 0, 0, 0);	/* maxScale: its dscale */
	return PointerGetDatum(pq_endtypsend(&buf));
}

/*
 * Item a's words in host group g (a numeric sum's state), from
 * PostgreSQL's value of its argument; isnull where the argument is NULL or
 * its FILTER not true
 */
static void
HostItemWords(GpuJoinAgg *agg, int a, int64 g, Datum value, bool isnull)
{
	GpuJoinAggItem *item = &agg->items[a];
	const GjAgg *dev = &agg->spec->aggs[a];
	GjAggResult *r = &agg->host->result;
	int64	   *n = (int64 *) &r->n[a][g];
	int64	   *wa = (int64 *) &r->a[a][g];
	int64	   *wb = (int64 *) &r->b[a][g];
	GjExprDatum v;

	if (item->func == GPUJOIN_AGG_SUM_NUMERIC)
	{
		int			na = item->nan_agg;

		/* the words unused: the state is made here */
		*n = *wa = *wb = 0;
		*(int64 *) &r->n[na][g] = *(int64 *) &r->a[na][g] = *(int64 *) &r->b[na][g] = 0;
		agg->host->states[a][g] = isnull ? (Datum) 0 : SerializeNumericValue(value);
		return;
	}
	if (item->guard_agg >= 0)
		*(int64 *) &r->n[item->guard_agg][g] = *(int64 *) &r->a[item->guard_agg][g] =
			*(int64 *) &r->b[item->guard_agg][g] = 0;
	memset(&v, 0, sizeof(v));
	v.isnull = isnull;
	if (!isnull && item->type == NUMERICOID)
		v.v.i = GpuJoinNumericScaled(value, item->scale);	/* min, max */
	else if (!isnull)
		GpuJoinDeviceExprDatum(item->type, value, false, &v);
	gj_agg_value_words_of(dev, item->func == GPUJOIN_AGG_COUNT_STAR ? NULL : &v, n, wa, wb);
	if (item->func == GPUJOIN_AGG_COUNT_STAR && isnull)
		*n = 0;
}

/*
 * A round the device left undecided matches in: fetch it as the join would
 * emit it, and evaluate PostgreSQL's own group keys, FILTERs and arguments
 * on the matches the device folded into nothing.  That raises the error
 * PostgreSQL raises, if any; otherwise each such match becomes a group of
 * its own on the host (Finalize Aggregate combines it with the rest).
 */
static void
FoldUndecided(GpuJoinState *node, int64 first)
{
	GpuJoinAgg *agg = node->gj_Agg;
	GpuJoinDeviceContext *dev = &node->gj_Device;
	ExprContext *econtext = node->css.ss.ps.ps_ExprContext;
	TupleTableSlot *scanslot = node->css.ss.ss_ScanTupleSlot;
	const GjJoinSpec *join = GpuJoinChainSpec(node);
	GjError		err;

	memset(&err, 0, sizeof(err));
	GpuJoinCheckStatus(dev->kernels->retrieve(dev->ctx, first, &node->gj_Round, &err), &err,
					   "could not fetch the matches of a GPU join");
	for (int64 i = 0; i < node->gj_Round.nmatches; i++)
	{
		GjAggResult *r;
		int64		g;

		if (gj_agg_match_folded(agg->spec, join, &node->gj_Round, i))
			continue;
		CHECK_FOR_INTERRUPTS();
		ResetExprContext(econtext);
		/* (a chain's top: the match's columns where the chain carries them) */
		if (!GpuJoinChainFillMatch(node, &node->gj_Round, i))
			GpuJoinFillScanSlot(node, scanslot, i);
		econtext->ecxt_scantuple = scanslot;
		g = HostGroup(node);
		r = &agg->host->result;
		for (int k = 0; k < agg->nkeys; k++)
		{
			bool		isnull;
			Datum		d = ExecEvalExpr(agg->key_exprs[k], econtext, &isnull);

			((uint8 *) r->key_nulls[k])[g] = isnull ? 1 : 0;
			((int64 *) r->keys[k])[g] = isnull ? 0 :
				KeyWord(agg, k, d);
		}
		for (int a = 0; a < agg->nitems; a++)
		{
			GpuJoinAggItem *item = &agg->items[a];
			bool		isnull = false;
			Datum		d = (Datum) 0;

			if (item->filter)
			{
				d = ExecEvalExpr(item->filter, econtext, &isnull);
				isnull = isnull || !DatumGetBool(d);
			}
			if (!isnull && item->arg)
				d = ExecEvalExpr(item->arg, econtext, &isnull);
			HostItemWords(agg, a, g, d, isnull);
		}
		agg->host_folded++;
	}
}

/*
 * Fold one round of the node's counted chunk, from match first on (left of
 * them not folded yet), into the groups: *n matches (mid_chunk: some
 * matches of the chunk of the outer side were folded already, which
 * gpujoin.inject_fault's retrieve_oom waits for).  Out of device memory
 * nothing of the round is folded (the contract) and the status is the
 * caller's to act on (its switch to the CPU twin keeps the groups so far),
 * unless fall_back is false: then it is an ERROR, as is any other failure.
 */
GjStatus
GpuJoinAggFoldRound(GpuJoinState *node, int64 first, int64 left, bool mid_chunk, bool fall_back,
					int64 *n, GjError *err)
{
	GpuJoinDeviceContext *dev = &node->gj_Device;
	GpuJoinAgg *agg = node->gj_Agg;
	int64		undecided = 0;
	GjStatus	status;

	memset(err, 0, sizeof(*err));

	/*
	 * A round of up to max_matches could take a group's sums past what the
	 * table's words hold exactly: its groups go to the host first, as from
	 * a closed context, and a new table begins
	 */
	if (agg->folded > 0 && agg->folded + node->gj_Spec.max_matches > TableMatches())
	{
		SaveGroups(node);
		agg->spills++;
	}
	status = Begin(node, err);
	/*
	 * The step that takes the matches, as retrieve does for a join; an
	 * injected fault comes before it, as the kernels' own failures do
	 * (nothing of the round folded)
	 */
	if (status == GJ_OK)
		status = GpuJoinInjectFault(GPUJOIN_FAULT_RETRIEVE, !fall_back, GJ_OK, err, mid_chunk);
	*n = 0;
	if (status == GJ_OK)
		status = dev->kernels->aggregate(dev->ctx, first, n, &undecided, err);
	if (status == GJ_ERROR_DEVICE_MEMORY && fall_back)
		return status;
	if (status == GJ_ERROR_DEVICE_MEMORY)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("gpujoin: the groups of a GPU aggregation do not fit in device memory"),
				 errdetail("%s", err->message),
				 errhint("Set gpujoin.enable_preagg = off to aggregate on the CPU, or raise gpujoin.device_memory_limit.")));
	GpuJoinCheckStatus(status, err, "could not aggregate the matches of a GPU join");
	agg->folded += *n;
	if (undecided > 0)
	{
		agg->undecided_rounds++;
		FoldUndecided(node, first);
	}
	if (*n <= 0 || *n > left)
		elog(ERROR, "gpujoin: the kernels aggregated " INT64_FORMAT " matches where " INT64_FORMAT " were left",
			 *n, left);
	return GJ_OK;
}

/*
 * GJ_RETRIEVE in a GpuPreAgg: fold every round of the counted chunk into
 * the groups
 */
void
GpuJoinAggregateChunk(GpuJoinState *node)
{
	BeginOnContext(node);
	while (node->gj_NextMatch < node->gj_ChunkMatches)
	{
		int64		n;
		GjError		err;

		CHECK_FOR_INTERRUPTS();
		if (GpuJoinAggFoldRound(node, node->gj_NextMatch,
								node->gj_ChunkMatches - node->gj_NextMatch,
								node->gj_NextMatch > 0, !node->gj_OnFallback, &n, &err) != GJ_OK)
		{
			/*
			 * Out of device memory: the groups so far are kept, and the CPU
			 * twin goes on from this match
			 */
			GpuJoinSwitchToCpu(node, &err);
			BeginOnContext(node);
			continue;
		}
		node->gj_NextMatch += n;
	}
}

/* The 128-bit sum of a SUM's words */
static int128
Sum128(const GjAggResult *r, int a, int64 g)
{
	return (int128) r->b[a][g] * ((int128) 1 << 32) + (int128) (uint64) r->a[a][g];
}

/* numericvar_serialize's form of v / 10^scale, of display scale scale */
static void
SendNumericVar(StringInfo buf, int128 v, int scale)
{
	int16		digits[GJ_NUMERIC_MAX_NDIGITS];
	int			weight;
	int			ndigits = GpuJoinNumericDigits(v, scale, digits, &weight);

	pq_sendint32(buf, ndigits);
	pq_sendint32(buf, weight);
	pq_sendint32(buf, v < 0 ? 0x4000 : 0x0000);	/* NUMERIC_NEG, NUMERIC_POS */
	pq_sendint32(buf, scale);	/* dscale */
	for (int i = 0; i < ndigits; i++)
		pq_sendint16(buf, digits[i]);
}

/* int8_avg_serialize's bytea: N, then the sum as a NumericVar */
static Datum
SerializeInt128Sum(int64 n, int128 sum)
{
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint64(&buf, n);
	SendNumericVar(&buf, sum, 0);
	return PointerGetDatum(pq_endtypsend(&buf));
}

/*
 * numeric_avg_serialize's bytea for n values of display scale scale adding
 * up to sum / 10^scale, and nans NaNs, pinfs and ninfs infinities: N, the
 * sum, the largest input scale and how many had it, the NaNs and the
 * infinities (the device's sums have none: a declared scale keeps them out)
 */
static Datum
SerializeNumericSum(int64 n, int128 sum, int scale, int64 nans, int64 pinfs, int64 ninfs)
{
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint64(&buf, n);
	SendNumericVar(&buf, sum, scale);
	SendNumericCounts(&buf, n > 0 ? scale : 0, n, nans, pinfs, ninfs);
	return PointerGetDatum(pq_endtypsend(&buf));
}

/* The end of numeric_avg_serialize's bytea, after N and the sum */
static void
SendNumericCounts(StringInfo buf, int max_scale, int64 max_scale_count, int64 nans,
				  int64 pinfs, int64 ninfs)
{
	pq_sendint32(buf, max_scale);
	pq_sendint64(buf, max_scale_count);
	pq_sendint64(buf, nans);
	pq_sendint64(buf, pinfs);
	pq_sendint64(buf, ninfs);
}

/*
 * A signed 64-bit value as a Datum of type; a numeric's is its value times
 * 10^scale (NaN PG_INT64_MAX), a float's gj_agg_float_order integer (a
 * group key's, or a min's or max's)
 */
static Datum
IntDatum(Oid type, int scale, int64 v)
{
	switch (type)
	{
		case NUMERICOID:
			return GpuJoinNumericDatum(v, scale, v == PG_INT64_MAX);
		case FLOAT8OID:
			return Float8GetDatum(gj_agg_float_from_order(v));
		case FLOAT4OID:
			return Float4GetDatum((float4) gj_agg_float_from_order(v));
		case BOOLOID:
			return BoolGetDatum(v != 0);
		case INT2OID:
			return Int16GetDatum((int16) v);
		case INT4OID:
		case DATEOID:
			return Int32GetDatum((int32) v);
		case OIDOID:
			return ObjectIdGetDatum((Oid) v);
		default:				/* int8, time, timestamp(tz) */
			return Int64GetDatum(v);
	}
}

/* Key k's value from the device's word (KeyWord's inverse) */
static Datum
KeyDatum(const GpuJoinAgg *agg, int k, int64 word)
{
	if (agg->key_dicts[k] != NULL)
		return GpuJoinDictValue(agg->key_dicts[k], word);
	if (agg->key_types[k] == NUMERICOID)
		return GpuJoinNumericKeyDatum(word, agg->key_scales[k]);
	return IntDatum(agg->key_types[k], agg->key_scales[k], word);
}

/* Item a's partial state in group g of r; *isnull for none */
static Datum
PartialState(const GpuJoinAggItem *item, const GjAggResult *r, int a, int64 g, bool *isnull)
{
	int64		n = r->n[a][g];

	*isnull = false;
	switch (item->func)
	{
		case GPUJOIN_AGG_COUNT_STAR:
		case GPUJOIN_AGG_COUNT:
			return Int64GetDatum(n);
		case GPUJOIN_AGG_SUM_INT:
			*isnull = (n == 0);
			/* int4_sum adds in int8 without a check: so do we */
			return Int64GetDatum((int64) (uint64) Sum128(r, a, g));
		case GPUJOIN_AGG_AVG_INT:
			{
				Datum		elems[2];

				elems[0] = Int64GetDatum(n);
				elems[1] = Int64GetDatum((int64) (uint64) Sum128(r, a, g));
				return PointerGetDatum(construct_array(elems, 2, INT8OID, 8, FLOAT8PASSBYVAL,
													   TYPALIGN_DOUBLE));
			}
		case GPUJOIN_AGG_SUM_INT8:
		case GPUJOIN_AGG_AVG_INT8:
			*isnull = (n == 0);
			return n == 0 ? (Datum) 0 : SerializeInt128Sum(n, Sum128(r, a, g));
		case GPUJOIN_AGG_SUM_NUMERIC:
			{
				int64		nans = r->n[item->nan_agg][g];

				*isnull = (n == 0);
				if (n == 0)
					return (Datum) 0;
				return SerializeNumericSum(n - nans, Sum128(r, a, g) - (int128) nans * PG_INT64_MAX,
										   item->scale, nans, 0, 0);
			}
		case GPUJOIN_AGG_SUM_FLOAT4:
		case GPUJOIN_AGG_SUM_FLOAT8:
			{
				double		sum;
				bool		finite_inputs = (r->b[a][g] == 0);

				*isnull = (n == 0);
				if (n == 0)
					return (Datum) 0;
				memcpy(&sum, &r->a[a][g], sizeof(double));
				/* float4pl and float8pl: infinity from finite inputs */
				if (isinf(sum) && finite_inputs)
					float_overflow_error();
				if (item->func == GPUJOIN_AGG_SUM_FLOAT8)
					return Float8GetDatum(sum);
				if (isinf((float4) sum) && !isinf(sum))
					float_overflow_error();
				return Float4GetDatum((float4) sum);
			}
		case GPUJOIN_AGG_AVG_FLOAT:
			{
				/* float8_accum's {N, Sx, Sxx}, Sxx 0 (AddOverflowGuards) */
				Datum		elems[3];
				double		sum;

				memcpy(&sum, &r->a[a][g], sizeof(double));
				/* float8_accum: an infinite Sx from finite inputs */
				if (isinf(sum) && r->b[a][g] == 0)
					float_overflow_error();
				elems[0] = Float8GetDatum((double) n);
				elems[1] = Float8GetDatum(n == 0 ? 0.0 : sum);
				elems[2] = Float8GetDatum(0.0);
				return PointerGetDatum(construct_array(elems, 3, FLOAT8OID, 8, FLOAT8PASSBYVAL,
													   TYPALIGN_DOUBLE));
			}
		case GPUJOIN_AGG_MIN:
		case GPUJOIN_AGG_MAX:
			*isnull = (n == 0);
			if (n == 0)
				return (Datum) 0;
			return IntDatum(item->type, item->scale, r->a[a][g]);
	}
	elog(ERROR, "gpujoin: unrecognized aggregate %d", (int) item->func);
	return (Datum) 0;
}

/*
 * After the last chunk: the next group as a row of partial aggregates,
 * projected; NULL when every group has come out
 */
TupleTableSlot *
GpuJoinAggEmitNext(GpuJoinState *node)
{
	GpuJoinAgg *agg = node->gj_Agg;
	GjAggResult *r = &agg->result;

	if (agg->spec->nsort > 0)
	{
		const GpuJoinAggRow *row;

		if (agg->norder < 0)
			GatherOrdered(node);
		if (agg->pos >= agg->norder)
			return NULL;
		if (agg->order == NULL)
		{
			/* one set, the context's: whole groups, where its table never spilled */
			GpuJoinAggSaved *set = agg->sets[0];

			while (set->result.spills == 0 && agg->pos < agg->norder &&
				   HavingDrops(agg, &set->result, set->states, agg->pos))
				agg->pos++;
			if (agg->pos >= agg->norder)
				return NULL;
			return EmitGroup(node, &set->result, set->states, agg->pos++);
		}
		row = &agg->order[agg->pos++];
		return EmitGroup(node, &agg->sets[row->set]->result, agg->sets[row->set]->states,
						 row->g);
	}
	for (;;)
	{
		if (agg->emitting && agg->pos < r->ngroups)
		{
			if (!agg->whole || !HavingDrops(agg, r, agg->result_states, agg->pos))
				break;
			agg->pos++;
			continue;
		}
		/*
		 * the next set of groups: a saved one, then the context's (its
		 * groups whole where it is the only one)
		 */
		agg->emitting = false;
		if (agg->saved != NIL)
		{
			GpuJoinAggSaved *saved = linitial(agg->saved);

			agg->saved = list_delete_first(agg->saved);
			*r = saved->result;
			agg->result_states = saved->states;
			agg->whole = false;
		}
		else if (ReadContextGroups(node, r))
		{
			agg->result_states = NULL;
			agg->whole = (agg->sets_begun == 0 && r->spills == 0);
		}
		else
			return NULL;
		agg->emitting = true;
		agg->sets_begun++;
		agg->pos = 0;
	}
	return EmitGroup(node, r, agg->result_states, agg->pos++);
}

/* GpuJoinAggEmitNext, its time counted as emission's (EXPLAIN ANALYZE) */
TupleTableSlot *
GpuJoinAggEmitTimed(GpuJoinState *node)
{
	instr_time	start;
	TupleTableSlot *slot;

	if (node->gj_Timing)
		INSTR_TIME_SET_CURRENT(start);
	slot = GpuJoinAggEmitNext(node);
	if (node->gj_Timing)
		node->gj_EmitMs += GpuJoinElapsedMs(start);
	return slot;
}

/*
 * The row of partial aggregates of group g of r (states: the numeric sums'
 * states made on the host, or NULL)
 */
static TupleTableSlot *
EmitGroup(GpuJoinState *node, const GjAggResult *r, Datum **states, int64 g)
{
	GpuJoinAgg *agg = node->gj_Agg;
	ExprContext *econtext = node->css.ss.ps.ps_ExprContext;
	TupleTableSlot *scanslot = node->css.ss.ss_ScanTupleSlot;

	ResetExprContext(econtext);
	ExecClearTuple(scanslot);
	{
		MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);

		for (int k = 0; k < agg->nkeys; k++)
		{
			bool		isnull = r->key_nulls[k][g] != 0;

			scanslot->tts_isnull[agg->key_atts[k]] = isnull;
			scanslot->tts_values[agg->key_atts[k]] = isnull ? (Datum) 0 :
				KeyDatum(agg, k, r->keys[k][g]);
		}
		for (int a = 0; a < agg->nitems; a++)
		{
			GpuJoinAggItem *item = &agg->items[a];

			if (states != NULL && states[a] != NULL)
			{
				scanslot->tts_values[item->scan_att] = states[a][g];
				scanslot->tts_isnull[item->scan_att] = states[a][g] == (Datum) 0;
			}
			else
				scanslot->tts_values[item->scan_att] =
					PartialState(item, r, a, g, &scanslot->tts_isnull[item->scan_att]);
		}
		MemoryContextSwitchTo(old);
	}
	ExecStoreVirtualTuple(scanslot);
	econtext->ecxt_scantuple = scanslot;
	agg->groups++;
	/* no projection where the scan tuple is the output (a count(*) alone) */
	if (node->css.ss.ps.ps_ProjInfo == NULL)
		return scanslot;
	return ExecProject(node->css.ss.ps.ps_ProjInfo);
}

/*
 * Close the node's device context to open another (the CPU twin, or the
 * GPU again, or one for other rounds): a GpuPreAgg's groups folded in it
 * are kept first, to be emitted with the rest
 */
void
GpuJoinCloseDevice(GpuJoinState *node)
{
	SaveGroups(node);
	GpuJoinDeviceClose(&node->gj_Device);
}

/* A GpuPreAgg's spec */
GjAggSpec *
GpuJoinAggSpec(GpuJoinState *node)
{
	return node->gj_Agg->spec;
}

/*
 * Another spec for a GpuPreAgg before it folds anything (a chain's top:
 * its inputs where the chain carries them, exec_chain.c)
 */
void
GpuJoinAggSetSpec(GpuJoinState *node, GjAggSpec *spec)
{
	node->gj_Agg->spec = spec;
	node->gj_Agg->begun = NULL;
}

/* A rescan: no group yet */
void
GpuJoinAggRescan(GpuJoinState *node)
{
	GpuJoinAgg *agg = node->gj_Agg;

	agg->begun = NULL;			/* agg_begin again on the next chunk */
	agg->saved = NIL;
	agg->host = NULL;
	agg->emitting = false;
	agg->sets_begun = 0;
	agg->pos = 0;
	agg->sets = NULL;
	agg->order = NULL;
	agg->norder = -1;
}

/*
 * Rows of partial aggregates this process's runs returned, and the times
 * their group tables were emptied to the host (0: no GpuPreAgg)
 */
void
GpuJoinAggCounts(GpuJoinState *node, int64 *groups, int64 *spills, int64 *host_sorted)
{
	*groups = node->gj_Agg ? node->gj_Agg->groups : 0;
	*spills = node->gj_Agg ? node->gj_Agg->spills : 0;
	*host_sorted = node->gj_Agg ? node->gj_Agg->host_sorted : 0;
}

/*
 * EXPLAIN: the aggregation's lines; groups: the rows of partial aggregates
 * returned, spills: the group tables emptied to the host, host_sorted: the
 * groups merged in key order on the host, each summed over the processes
 * of a parallel plan
 */
void
GpuJoinAggExplain(GpuJoinState *node, int64 groups, int64 spills, int64 host_sorted,
				  ExplainState *es)
{
	GpuJoinAgg *agg = node->gj_Agg;
	char	   *what;

	if (agg == NULL)
		return;
	what = psprintf("%s, %d aggregate%s", agg->variant, agg->nitems, agg->nitems == 1 ? "" : "s");
	ExplainPropertyText("Device Aggregation", what, es);
	if (agg->spec->nsort > 0)
		ExplainPropertyText("Output Order", "by the group keys, sorted on the device", es);
	if (agg->nhaving > 0)
		ExplainPropertyText("Having", psprintf("%d condition%s of the HAVING clause, on whole groups",
											  agg->nhaving, agg->nhaving == 1 ? "" : "s"), es);
	if (es->verbose)
		ExplainPropertyText("Group-By Variants Considered", agg->considered, es);
	if (es->analyze)
	{
		ExplainPropertyInteger("Groups Returned", NULL, groups, es);
		if (host_sorted > 0)
			ExplainPropertyInteger("Groups Sorted on the Host", NULL, host_sorted, es);
		if (spills > 0)
			ExplainPropertyInteger("Group Spills", NULL, spills, es);
		if (agg->undecided_rounds > 0)
		{
			ExplainPropertyInteger("Undecided Rounds", NULL, agg->undecided_rounds, es);
			ExplainPropertyInteger("Matches Folded on the Host", NULL, agg->host_folded, es);
		}
		if (agg->nhaving > 0)
			ExplainPropertyInteger("Groups Removed by Having", NULL, agg->having_removed, es);
	}
}
