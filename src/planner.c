/*-------------------------------------------------------------------------
 *
 * planner.c
 *	  Offer GPU join paths to the planner and turn the chosen one into a plan
 *
 * set_join_pathlist_hook is called for every (outer, inner) split of every
 * join relation, after PostgreSQL has added its own paths.  For a join (of
 * any type but the planner's unique-ified ones) with at least one equality
 * clause whose keys have a coding (keys.c), we add a GpuHashJoin and a
 * GpuMergeJoin CustomPath over the cheapest unparameterized paths of both
 * sides; without one, comparisons make a GpuThetaJoin.  add_path() keeps a
 * path only if it is cheaper than what is there, so a join the GPU would
 * not speed up stays on the CPU.
 *
 * Clause analysis splits extra->restrictlist into
 *	- key clauses: equality with a key coding, evaluated on the device
 *	  (packed into one uint64 per row; see keys.c),
 *	- join quals: everything else, rechecked on the CPU on each matched pair,
 *	  like a hash join's Join Filter.  When the keys do not pack into 64
 *	  bits, or a key's coding is a hash (text, uuid ...), the row's key is
 *	  hashed, and then the key clauses are rechecked too, and
 *	- for outer joins, the clauses pushed down from above, which filter the
 *	  joined rows (the plan's qual).
 *
 * The plan: a CustomScan whose custom_plans are [outer, inner], whose
 * custom_scan_tlist is the outer child's targetlist followed by the inner
 * child's, and whose targetlist and custom_exprs setrefs.c rewrites into
 * references to that scan tuple (INDEX_VAR).  The executor fills the scan
 * tuple from the two sides' column batches (exec.c).
 *
 * Costs, in the planner's units, so that add_path() compares them with
 * PostgreSQL's own joins:
 *	- the children: their costs, a Seq Scan's times gpujoin.scan_cost_scale
 *	  (PostgreSQL prices a scan high against its hash join: on the
 *	  development host a Seq Scan of 1M rows of two int4 columns is
 *	  estimated at 14,400 units, 116 ms at the 124 units per ms its serial
 *	  hash join runs at, and takes 31 ms; PostgreSQL's own plans all scan,
 *	  and a parallel one divides its scans by its workers, but a serial GPU
 *	  join would carry them whole);
 *	- host extraction: every needed column and key of every input row is
 *	  copied into a column batch (gpujoin.extract_cost each), plus a hash
 *	  function call per hashed key (cpu_operator_cost);
 *	- the GPU: gpujoin.setup_cost once, and the device and bus time of the
 *	  chosen variant by ModelDeviceMs (the model of papers/notes/
 *	  wu-2025-gftr.md §4 with constants gpujoin_calibrate() measures) times
 *	  gpujoin.cost_per_ms; the CPU twin: cpu_operator_cost per key and pass;
 *	- output: the recheck quals on every match, then gpujoin.emit_cost and
 *	  the projection for every row returned, as PostgreSQL charges its own
 *	  joins.
 *
 * Parallel plans: a partial GPU join path (for a Gather above it) runs the
 * whole join in every process, the leader's and each worker's, on that
 * process's part of a partial outer path (a Parallel Seq Scan hands out the
 * pages) and all of the inner side, as PostgreSQL's hash join does without
 * Parallel Hash; so not for right and full joins.  Its costs are per
 * process: the host work of its share of the outer rows and of the whole
 * inner side, gpujoin.worker_setup_cost per worker for opening the GPU in
 * a new process (one after another), and the device time of every
 * process's build and of all the probes, as the processes share one GPU.
 *
 * The host constants' defaults are those gpujoin_calibrate() measured on
 * the H200 host (bench/results/cost_model.md): there, with them, the
 * planner chose a plan within 10 % of the faster one at every size from
 * 10^3 to 10^8 rows a side.
 *
 * IDENTIFICATION
 *	  src/planner.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "gpujoin.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/plancat.h"
#include "optimizer/restrictinfo.h"
#include "utils/lsyscache.h"

/*
 * Items stored in CustomPath.custom_private, turned into the plan's
 * custom_exprs and custom_private by PlanGpuJoinPath
 */
typedef enum GpuJoinPathPrivateIndex
{
	GpuJoinPathKeyClauses,		/* List of OpExpr */
	GpuJoinPathOuterIsLeft,		/* Integer list */
	GpuJoinPathKeyBits,			/* Integer list */
	GpuJoinPathKeyExact,		/* Boolean */
	GpuJoinPathJoinQuals,		/* List of Expr, rechecked on the CPU */
	GpuJoinPathStrategy,		/* Integer: GpuJoinStrategy */
	GpuJoinPathVariant,			/* Integer: GjVariant */
	GpuJoinPathMaterialize,		/* Integer: GjMaterialize */
	GpuJoinPathThetaOps,		/* Integer list: GjThetaOp per clause */
	GpuJoinPathJoinType,		/* Integer: JoinType */
	GpuJoinPathOtherQuals,		/* List of Expr: the plan's qual */
	GpuJoinPathKeyCodings,		/* Integer list: 4 per key clause */
	GpuJoinPathConsidered,		/* String: variants priced, for EXPLAIN */
	GpuJoinPathPartitioned,		/* Boolean: a hash join costed as partitioned */
} GpuJoinPathPrivateIndex;

/* What ExtractJoinClauses found in a restrictlist */
typedef struct GpuJoinClauses
{
	List	   *key_rinfos;		/* RestrictInfos of the key clauses */
	List	   *key_clauses;	/* their OpExprs */
	List	   *outer_is_left;	/* Integer list: 1 if arg 1 is the outer side */
	List	   *key_bits;		/* Integer list: bits in the packed key */
	List	   *codings;		/* Integer list: per key clause, the outer
								 * side's kind and arg, then the inner's */
	bool		hashed;			/* some key clause has a hashed coding */
	bool		exact;			/* packed keys compare exactly */
	List	   *theta_ops;		/* theta joins: GjThetaOp per key clause, as
								 * inner OP outer; NIL for equi-joins */
	List	   *join_quals;		/* bare clauses rechecked on the CPU, that
								 * decide which rows match */
	List	   *other_quals;	/* outer joins: pushed-down clauses, which
								 * filter the joined (or NULL-extended) rows */
} GpuJoinClauses;

static set_join_pathlist_hook_type prev_set_join_pathlist_hook = NULL;

static Plan *PlanGpuJoinPath(PlannerInfo *root, RelOptInfo *rel,
							 CustomPath *best_path, List *tlist,
							 List *clauses, List *custom_plans);

static const CustomPathMethods gpujoin_hash_path_methods = {
	.CustomName = "GpuHashJoin",
	.PlanCustomPath = PlanGpuJoinPath,
};

static const CustomPathMethods gpujoin_merge_path_methods = {
	.CustomName = "GpuMergeJoin",
	.PlanCustomPath = PlanGpuJoinPath,
};

static const CustomPathMethods gpujoin_theta_path_methods = {
	.CustomName = "GpuThetaJoin",
	.PlanCustomPath = PlanGpuJoinPath,
};

/*
 * Can every variable of expr be taken from this side's targetlist?
 *
 * The child plans are made with exactly their rel's reltarget as tlist
 * (CP_EXACT_TLIST), so that is where key values must come from.  Vars are
 * matched on varno and varattno, PlaceHolderVars on phid, as setrefs.c
 * matches them against a child's tlist.
 */
static bool
ExprIsComputableFrom(Node *expr, RelOptInfo *rel)
{
	List	   *vars = pull_var_clause(expr, PVC_INCLUDE_PLACEHOLDERS);
	ListCell   *lc;

	foreach(lc, vars)
	{
		Node	   *var = lfirst(lc);
		bool		found = false;
		ListCell   *lc2;

		foreach(lc2, rel->reltarget->exprs)
		{
			Node	   *texpr = lfirst(lc2);

			if (IsA(var, Var) && IsA(texpr, Var))
				found = ((Var *) var)->varno == ((Var *) texpr)->varno &&
					((Var *) var)->varattno == ((Var *) texpr)->varattno;
			else if (IsA(var, PlaceHolderVar) && IsA(texpr, PlaceHolderVar))
				found = ((PlaceHolderVar *) var)->phid == ((PlaceHolderVar *) texpr)->phid;
			if (found)
				break;
		}
		if (!found)
			return false;
	}
	return true;
}

/*
 * Does this side carry a variable of type record (a subquery's, a
 * function's or a CTE's column; no table column has that type)?
 *
 * EXPLAIN names the fields of such a column, as in (ss.x).f, by looking
 * through the SubqueryScan that produced it (ruleutils.c,
 * get_name_for_var_field).  Passed through this node's scan tuple, the
 * column is resolved with the GPU join as its plan, which has no such
 * child: an assert-enabled server aborts there, and a production one prints
 * a made-up field name ("f1").  Found by sqlsmith in information_schema
 * views; those joins stay PostgreSQL's.
 */
static bool
CarriesRecordVar(RelOptInfo *rel)
{
	List	   *vars = pull_var_clause((Node *) rel->reltarget->exprs,
									   PVC_RECURSE_PLACEHOLDERS);
	ListCell   *lc;

	foreach(lc, vars)
	{
		if (((Var *) lfirst(lc))->vartype == RECORDOID)
			return true;
	}
	return false;
}

/*
 * Does the join carry the row identity of an inherited or partitioned
 * UPDATE, DELETE or MERGE target (a ROWID_VAR Var, appendinfo.c)?
 *
 * Such a Var stands for a different column in each partition and means
 * something only where the partitions' rows are appended; a join above
 * that Append passes it through.  PostgreSQL's own joins reach it in their
 * children's target lists; a custom scan would have to hold it in its scan
 * tuple's, where setrefs.c does not allow it (an assert-enabled server
 * aborts) and EXPLAIN (VERBOSE) cannot name it ("bogus varno: -4").  Those
 * joins stay PostgreSQL's; the joins below them, which do not carry the
 * target, may still run on the GPU.
 */
static bool
CarriesRowIdentityVar(RelOptInfo *joinrel)
{
	ListCell   *lc;

	foreach(lc, joinrel->reltarget->exprs)
	{
		Node	   *expr = lfirst(lc);

		if (IsA(expr, Var) && ((Var *) expr)->varno == ROWID_VAR)
			return true;
	}
	return false;
}

/*
 * The binary operator clause of rinfo, if the device could evaluate it
 * between outerrel and innerrel: each argument computable from one side's
 * targetlist, nothing volatile, no subplans (the arguments are evaluated
 * once per row of their side).  *outer_is_left says which argument is the
 * outer side's.  NULL otherwise.
 */
static OpExpr *
DeviceJoinOpClause(RestrictInfo *rinfo, RelOptInfo *outerrel,
				   RelOptInfo *innerrel, bool *outer_is_left)
{
	OpExpr	   *op;

	if (!rinfo->can_join || rinfo->pseudoconstant ||
		!is_opclause(rinfo->clause))
		return NULL;
	op = (OpExpr *) rinfo->clause;
	if (list_length(op->args) != 2)
		return NULL;

	/* which side is which; also rejects clauses spanning both sides */
	if (bms_is_subset(rinfo->left_relids, outerrel->relids) &&
		bms_is_subset(rinfo->right_relids, innerrel->relids))
		*outer_is_left = true;
	else if (bms_is_subset(rinfo->left_relids, innerrel->relids) &&
			 bms_is_subset(rinfo->right_relids, outerrel->relids))
		*outer_is_left = false;
	else
		return NULL;

	if (contain_volatile_functions((Node *) op) || contain_subplans((Node *) op))
		return NULL;
	if (!ExprIsComputableFrom(*outer_is_left ? linitial(op->args) : lsecond(op->args), outerrel) ||
		!ExprIsComputableFrom(*outer_is_left ? lsecond(op->args) : linitial(op->args), innerrel))
		return NULL;
	return op;
}

/* Add one key clause's codings, outer side first, to clauses->codings */
static void
AddCodings(GpuJoinClauses *clauses, bool outer_is_left,
		   const GpuJoinKeyCoding *left, const GpuJoinKeyCoding *right)
{
	const GpuJoinKeyCoding *outer = outer_is_left ? left : right;
	const GpuJoinKeyCoding *inner = outer_is_left ? right : left;

	clauses->codings = lappend_int(clauses->codings, outer->kind);
	clauses->codings = lappend_int(clauses->codings, outer->arg);
	clauses->codings = lappend_int(clauses->codings, inner->kind);
	clauses->codings = lappend_int(clauses->codings, inner->arg);
	if (outer->kind == GPUJOIN_KEY_HASHED)
		clauses->hashed = true;
}

/*
 * Is rinfo an equality the device can evaluate between outerrel and innerrel?
 *
 * On success, *outer_is_left says which argument comes from the outer side,
 * *left and *right how each argument is encoded, and *bits how wide the key
 * is once packed.
 */
static bool
IsDeviceKeyClause(RestrictInfo *rinfo, RelOptInfo *outerrel,
				  RelOptInfo *innerrel, bool *outer_is_left,
				  GpuJoinKeyCoding *left, GpuJoinKeyCoding *right, int *bits)
{
	OpExpr	   *op = DeviceJoinOpClause(rinfo, outerrel, innerrel, outer_is_left);

	return op != NULL && GpuJoinEqualityCoding(op, left, right, bits);
}

/*
 * Is rinfo a qual that filters the join's output rather than deciding which
 * rows match?  As in create_hashjoin_plan: for an outer join (left, right,
 * full, anti), the clauses pushed down from above it; for an inner or semi
 * join, none.  Those become the plan's qual and never device keys.
 */
static bool
IsOtherQual(RestrictInfo *rinfo, RelOptInfo *joinrel, JoinType jointype)
{
	return IS_OUTER_JOIN(jointype) && RINFO_IS_PUSHED_DOWN(rinfo, joinrel->relids);
}

/*
 * Split the restrictlist into device key clauses and quals to recheck
 *
 * Returns false when there is no key clause, i.e. no GPU hash join.
 */
static bool
ExtractJoinClauses(List *restrictlist, RelOptInfo *joinrel, JoinType jointype,
				   RelOptInfo *outerrel, RelOptInfo *innerrel,
				   GpuJoinClauses *clauses)
{
	ListCell   *lc;

	memset(clauses, 0, sizeof(*clauses));
	foreach(lc, restrictlist)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		bool		outer_is_left;
		GpuJoinKeyCoding left;
		GpuJoinKeyCoding right;
		int			bits;

		if (IsOtherQual(rinfo, joinrel, jointype))
			clauses->other_quals = lappend(clauses->other_quals, rinfo->clause);
		else if (IsDeviceKeyClause(rinfo, outerrel, innerrel, &outer_is_left,
								   &left, &right, &bits))
		{
			AddCodings(clauses, outer_is_left, &left, &right);
			clauses->key_rinfos = lappend(clauses->key_rinfos, rinfo);
			clauses->key_clauses = lappend(clauses->key_clauses, rinfo->clause);
			clauses->outer_is_left = lappend_int(clauses->outer_is_left, outer_is_left);
			clauses->key_bits = lappend_int(clauses->key_bits, bits);
		}
		else
			clauses->join_quals = lappend(clauses->join_quals, rinfo->clause);
	}
	if (clauses->key_clauses == NIL)
		return false;

	/* hashed keys may collide: then every key clause is rechecked too */
	clauses->exact = GpuJoinKeysAreExact(clauses->key_bits, clauses->hashed);
	if (!clauses->exact)
		clauses->join_quals = list_concat(list_copy(clauses->key_clauses),
										  clauses->join_quals);
	return true;
}

/*
 * Is rinfo a comparison (<, <=, >, >=) the device can evaluate between
 * outerrel and innerrel?  *op gets it as "inner OP outer".
 */
static bool
IsThetaClause(RestrictInfo *rinfo, RelOptInfo *outerrel, RelOptInfo *innerrel,
			  bool *outer_is_left, GjThetaOp *op, GpuJoinKeyCoding *left,
			  GpuJoinKeyCoding *right)
{
	OpExpr	   *opexpr = DeviceJoinOpClause(rinfo, outerrel, innerrel, outer_is_left);

	if (opexpr == NULL || !GpuJoinThetaCoding(opexpr, op, left, right))
		return false;

	/* written "outer OP inner": as "inner OP' outer" the comparison turns */
	if (*outer_is_left)
	{
		static const GjThetaOp commuted[] = {
			[GJ_THETA_LT] = GJ_THETA_GT, [GJ_THETA_LE] = GJ_THETA_GE,
			[GJ_THETA_GT] = GJ_THETA_LT, [GJ_THETA_GE] = GJ_THETA_LE,
		};

		*op = commuted[*op];
	}
	return true;
}

/*
 * The lower (or upper) end of BETWEEN SYMMETRIC's range: LEAST(a, b) (or
 * GREATEST), but NULL when either is NULL, as the range then admits nothing
 * (LEAST alone would ignore the NULL)
 */
static Expr *
SymmetricBound(Expr *a, Expr *b, bool upper)
{
	MinMaxExpr *minmax = makeNode(MinMaxExpr);
	CaseExpr   *caseexpr = makeNode(CaseExpr);
	CaseWhen   *when = makeNode(CaseWhen);
	NullTest   *tests[2];

	minmax->minmaxtype = exprType((Node *) a);
	minmax->minmaxcollid = exprCollation((Node *) a);
	minmax->inputcollid = exprCollation((Node *) a);
	minmax->op = upper ? IS_GREATEST : IS_LEAST;
	minmax->args = list_make2(copyObject(a), copyObject(b));
	minmax->location = -1;

	for (int i = 0; i < 2; i++)
	{
		tests[i] = makeNode(NullTest);
		tests[i]->arg = copyObject(i == 0 ? a : b);
		tests[i]->nulltesttype = IS_NULL;
		tests[i]->argisrow = false;
		tests[i]->location = -1;
	}
	when->expr = make_orclause(list_make2(tests[0], tests[1]));
	when->result = (Expr *) makeNullConst(exprType((Node *) a), exprTypmod((Node *) a),
										  exprCollation((Node *) a));
	when->location = -1;
	caseexpr->casetype = exprType((Node *) a);
	caseexpr->casecollid = exprCollation((Node *) a);
	caseexpr->arg = NULL;
	caseexpr->args = list_make1(when);
	caseexpr->defresult = (Expr *) minmax;
	caseexpr->location = -1;
	return (Expr *) caseexpr;
}

/*
 * Is clause "x BETWEEN SYMMETRIC a AND b", as the parser expands it:
 *		(x >= a AND x <= b) OR (x >= b AND x <= a)?
 * Then the clauses "x >= LEAST(a, b)" and "x <= GREATEST(a, b)" (each NULL
 * when a or b is) say exactly the same, and each compares one expression of
 * one side with one of the other, which a theta join can take.  Returns
 * them as RestrictInfos, or NIL.
 */
static List *
ExpandBetweenSymmetric(PlannerInfo *root, Expr *clause)
{
	OpExpr	   *ops[4];
	int			n = 0;
	Expr	   *x;
	Expr	   *a;
	Expr	   *b;
	Expr	   *lower;
	Expr	   *upper;
	ListCell   *lc1;
	ListCell   *lc2;

	if (!is_orclause(clause) || list_length(((BoolExpr *) clause)->args) != 2)
		return NIL;
	foreach(lc1, ((BoolExpr *) clause)->args)
	{
		Expr	   *arm = lfirst(lc1);

		if (!is_andclause(arm) || list_length(((BoolExpr *) arm)->args) != 2)
			return NIL;
		foreach(lc2, ((BoolExpr *) arm)->args)
		{
			if (!is_opclause(lfirst(lc2)) || list_length(((OpExpr *) lfirst(lc2))->args) != 2)
				return NIL;
			ops[n++] = lfirst(lc2);
		}
	}

	/* x >= a, x <= b, x >= b, x <= a: the same operators, x, a and b */
	x = linitial(ops[0]->args);
	a = lsecond(ops[0]->args);
	b = lsecond(ops[1]->args);
	if (ops[2]->opno != ops[0]->opno || ops[3]->opno != ops[1]->opno ||
		ops[0]->opno == ops[1]->opno ||
		!equal(x, linitial(ops[1]->args)) || !equal(x, linitial(ops[2]->args)) ||
		!equal(x, linitial(ops[3]->args)) ||
		!equal(b, lsecond(ops[2]->args)) || !equal(a, lsecond(ops[3]->args)))
		return NIL;
	/* LEAST and GREATEST need a and b of one type, not a domain */
	if (exprType((Node *) a) != exprType((Node *) b) ||
		getBaseType(exprType((Node *) a)) != exprType((Node *) a) ||
		exprTypmod((Node *) a) != exprTypmod((Node *) b))
		return NIL;

	lower = (Expr *) copyObject(ops[0]);
	lsecond(((OpExpr *) lower)->args) = SymmetricBound(a, b, false);
	upper = (Expr *) copyObject(ops[1]);
	lsecond(((OpExpr *) upper)->args) = SymmetricBound(a, b, true);
	return list_make2(make_simple_restrictinfo(root, lower),
					  make_simple_restrictinfo(root, upper));
}

/* The inner side's argument of a key clause */
static Node *
InnerArg(Expr *clause, bool outer_is_left)
{
	OpExpr	   *opexpr = (OpExpr *) clause;

	return outer_is_left ? lsecond(opexpr->args) : linitial(opexpr->args);
}

/*
 * Split the restrictlist of a join without equality keys into the
 * comparisons a theta variant evaluates on the device and the quals to
 * recheck on the CPU
 *
 * BAND takes the comparisons on one inner expression (the one most of them
 * are on): each outer row then gets one range of it.  NLJ takes up to
 * GJ_MAX_TERMS comparisons on any inner expressions.  Returns false when
 * there is no comparison for the variant.
 */
static bool
ExtractThetaClauses(PlannerInfo *root, List *restrictlist, RelOptInfo *joinrel,
					JoinType jointype, RelOptInfo *outerrel, RelOptInfo *innerrel,
					GjVariant variant, GpuJoinClauses *clauses)
{
	List	   *thetas = NIL;
	List	   *others = NIL;
	List	   *is_left = NIL;
	List	   *ops = NIL;
	List	   *codings = NIL;	/* per comparison, a GpuJoinKeyCoding pair */
	Node	   *band_expr = NULL;
	ListCell   *lc;
	ListCell   *lc2;
	ListCell   *lc3;
	int			i;

	memset(clauses, 0, sizeof(*clauses));
	foreach(lc, restrictlist)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		List	   *parts;
		List	   *part_is_left = NIL;
		List	   *part_ops = NIL;
		List	   *part_codings = NIL;
		ListCell   *lcp;

		if (IsOtherQual(rinfo, joinrel, jointype))
		{
			clauses->other_quals = lappend(clauses->other_quals, rinfo->clause);
			continue;
		}

		/*
		 * The comparisons the clause says: itself, or BETWEEN SYMMETRIC's
		 * two; the device takes all of them, or the clause is rechecked
		 */
		parts = ExpandBetweenSymmetric(root, rinfo->clause);
		if (parts == NIL)
			parts = list_make1(rinfo);
		foreach(lcp, parts)
		{
			bool		outer_is_left;
			GjThetaOp	op;
			GpuJoinKeyCoding *pair = palloc(2 * sizeof(GpuJoinKeyCoding));

			if (!IsThetaClause(lfirst_node(RestrictInfo, lcp), outerrel, innerrel,
							   &outer_is_left, &op, &pair[0], &pair[1]))
				break;
			part_is_left = lappend_int(part_is_left, outer_is_left);
			part_ops = lappend_int(part_ops, op);
			part_codings = lappend(part_codings, pair);
		}
		if (list_length(part_ops) == list_length(parts))
		{
			thetas = list_concat(thetas, parts);
			is_left = list_concat(is_left, part_is_left);
			ops = list_concat(ops, part_ops);
			codings = list_concat(codings, part_codings);
		}
		else
			others = lappend(others, rinfo->clause);
	}

	if (variant == GJ_VARIANT_BAND)
	{
		int			best = 0;

		/* the inner expression most comparisons are on */
		forboth(lc, thetas, lc2, is_left)
		{
			Node	   *expr = InnerArg(lfirst_node(RestrictInfo, lc)->clause, lfirst_int(lc2));
			int			n = 0;
			ListCell   *lc4;
			ListCell   *lc5;

			forboth(lc4, thetas, lc5, is_left)
				n += equal(expr, InnerArg(lfirst_node(RestrictInfo, lc4)->clause,
										  lfirst_int(lc5)));
			if (n > best)
			{
				best = n;
				band_expr = expr;
			}
		}
	}

	i = 0;
	forthree(lc, thetas, lc2, is_left, lc3, ops)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);
		GpuJoinKeyCoding *pair = list_nth(codings, i++);
		bool		take;

		if (variant == GJ_VARIANT_BAND)
			take = equal(band_expr, InnerArg(rinfo->clause, lfirst_int(lc2)));
		else
			take = list_length(clauses->key_clauses) < GJ_MAX_TERMS;

		if (take)
		{
			clauses->key_rinfos = lappend(clauses->key_rinfos, rinfo);
			clauses->key_clauses = lappend(clauses->key_clauses, rinfo->clause);
			clauses->outer_is_left = lappend_int(clauses->outer_is_left, lfirst_int(lc2));
			clauses->theta_ops = lappend_int(clauses->theta_ops, lfirst_int(lc3));
			AddCodings(clauses, lfirst_int(lc2), &pair[0], &pair[1]);
		}
		else
			clauses->join_quals = lappend(clauses->join_quals, rinfo->clause);
	}
	clauses->join_quals = list_concat(clauses->join_quals, others);
	clauses->exact = true;
	return clauses->key_clauses != NIL;
}

/*
 * What a side sends to the device: its fixed-width columns (bytes per row,
 * and how many), as far as the planner can tell from the side's targetlist
 * (the executor keeps only those referenced above the join)
 */
static void
CountPayload(Path *path, int *ncolumns, int *bytes)
{
	ListCell   *lc;

	*ncolumns = 0;
	*bytes = 0;
	foreach(lc, path->pathtarget->exprs)
	{
		int16		typlen;
		bool		typbyval;

		get_typlenbyval(exprType(lfirst(lc)), &typlen, &typbyval);
		if (typbyval && (typlen == 1 || typlen == 2 || typlen == 4 || typlen == 8) &&
			*ncolumns < GJ_MAX_COLUMNS)
		{
			(*ncolumns)++;
			*bytes += typlen;
		}
	}
}

/*
 * Device and bus time of one GPU join in milliseconds, by the model whose
 * constants gpujoin_calibrate() measures (GpuJoinModel):
 *	- the variant's passes over the keys: row_ns per input row (NLJ: every
 *	  pair and term, nlj_compare_ns), as wu-2025-gftr.md §4 counts them in
 *	  passes over the input;
 *	- materialization (§4.2, §4.3): GFTR carries every payload column
 *	  through the passes (gftr_column_ns per row and column: the inner
 *	  side's for NPHJ, which transforms only the build side, both sides'
 *	  otherwise) and then gathers nearly in order (gftr_gather_ns per match
 *	  and column; NPHJ's probe order is random, so gather_ns); GFUR gathers
 *	  every column of every match by row number (gather_ns, the random
 *	  access that the paper prices at B_G/24);
 *	- match_ns per match for row numbers and offsets;
 *	- the bus (rui-2020.md §7: bytes over the bus dominate): keys and
 *	  fixed-width columns in, the matches' columns and row numbers out, at
 *	  transfer_gbps.
 */
static double
ModelDeviceMs(GjVariant variant, GjMaterialize materialize, double inner_rows,
			  double outer_rows, double matches, int inner_cols, int outer_cols,
			  int inner_bytes, int outer_bytes, int nterms)
{
	const GpuJoinModel *m = &gpujoin_model;
	int			cols = inner_cols + outer_cols;
	double		ns;
	double		bytes;

	if (variant == GJ_VARIANT_NLJ)
		ns = inner_rows * outer_rows * Max(nterms, 1) * m->nlj_compare_ns;
	else
		ns = (inner_rows + outer_rows) * m->row_ns[variant];
	if (materialize == GJ_MATERIALIZE_GFTR)
	{
		ns += m->gftr_column_ns * (inner_rows * inner_cols +
								   (variant == GJ_VARIANT_NPHJ ? 0.0 : outer_rows * outer_cols));
		ns += matches * cols * (variant == GJ_VARIANT_NPHJ ? m->gather_ns : m->gftr_gather_ns);
	}
	else
		ns += matches * cols * m->gather_ns;
	ns += matches * m->match_ns;

	bytes = inner_rows * (GPUJOIN_KEY_BYTES + inner_bytes) +
		outer_rows * (GPUJOIN_KEY_BYTES + outer_bytes) +
		matches * (inner_bytes + outer_bytes + GPUJOIN_MATCH_BYTES);
	return ns / 1e6 + bytes / (m->transfer_gbps * 1e6);
}

/*
 * Choose the variant and the materialization of a GPU join
 *
 * The settings may force either.  Otherwise every candidate the strategy
 * allows (a hash join: NPHJ, PHJ and SMJ; a merge join: SMJ; a theta join:
 * the variant its path is for), each with GFTR and GFUR, is priced by
 * ModelDeviceMs and the cheapest wins.  *considered gets them all for
 * EXPLAIN (VERBOSE): "NPHJ-UR 1.204 ms (chosen), NPHJ-TR 1.377 ms, ...".
 *
 * This replaces the paper's decision rules (papers/notes/wu-2025-gftr.md
 * §6.3, §6.4: NPHJ for an inner side that stays in L2, GFTR from a 25 %
 * match ratio), which the H200 grid contradicted (bench/results/kernels.md:
 * GFUR won nearly everywhere, GFTR only for PHJ in the PK-FK shape from a
 * match ratio of about 0.73); with the measured constants the model
 * reproduces that crossover.
 */
static void
ChooseVariant(GpuJoinStrategy strategy, double outer_rows, double inner_rows,
			  double matches, int outer_cols, int inner_cols, int outer_bytes,
			  int inner_bytes, int nterms, GjVariant *variant,
			  GjMaterialize *materialize, char **considered)
{
	StringInfoData buf;
	GjVariant	first;
	GjVariant	last;
	double		best_ms = -1.0;
	GjVariant	best_variant = *variant;
	GjMaterialize best_materialize = GJ_MATERIALIZE_GFUR;
	bool		forced_variant = false;
	int			chosen_at = 0;

	if (strategy == GPUJOIN_STRATEGY_MERGE)
		first = last = GJ_VARIANT_SMJ;
	else if (strategy == GPUJOIN_STRATEGY_THETA)
		first = last = *variant;	/* the caller offers each */
	else if (gpujoin_join_variant != GPUJOIN_AUTO && gpujoin_join_variant <= GJ_VARIANT_SMJ)
	{
		first = last = (GjVariant) gpujoin_join_variant;
		forced_variant = true;
	}
	else
	{
		first = GJ_VARIANT_NPHJ;
		last = GJ_VARIANT_SMJ;
	}

	initStringInfo(&buf);
	for (int v = first; v <= last; v++)
	{
		for (int mat = GJ_MATERIALIZE_GFUR; mat <= GJ_MATERIALIZE_GFTR; mat++)
		{
			double		ms;

			if (gpujoin_materialize != GPUJOIN_AUTO && gpujoin_materialize != mat)
				continue;
			/* theta variants gather by row number (GFUR) unless told */
			if (strategy == GPUJOIN_STRATEGY_THETA && gpujoin_materialize == GPUJOIN_AUTO &&
				mat == GJ_MATERIALIZE_GFTR)
				continue;
			ms = ModelDeviceMs((GjVariant) v, (GjMaterialize) mat, inner_rows, outer_rows,
							   matches, inner_cols, outer_cols, inner_bytes,
							   outer_bytes, nterms);
			if (buf.len > 0)
				appendStringInfoString(&buf, ", ");
			appendStringInfo(&buf, "%s %.3f ms",
							 GpuJoinVariantName((GjVariant) v, (GjMaterialize) mat), ms);
			if (best_ms < 0.0 || ms < best_ms)
			{
				best_ms = ms;
				best_variant = (GjVariant) v;
				best_materialize = (GjMaterialize) mat;
				chosen_at = buf.len;
			}
		}
	}
	/* mark the winner */
	{
		StringInfoData out;

		initStringInfo(&out);
		appendBinaryStringInfo(&out, buf.data, chosen_at);
		appendStringInfoString(&out, (forced_variant || gpujoin_materialize != GPUJOIN_AUTO) ?
							   " (chosen; forced by a setting)" : " (chosen)");
		appendStringInfoString(&out, buf.data + chosen_at);
		*considered = out.data;
	}
	*variant = best_variant;
	*materialize = best_materialize;
}

/*
 * A partial path's rows per process, as costsize.c's get_parallel_divisor
 * counts them (static there): one share per worker, and the leader's share,
 * which shrinks as it has more workers' tuples to gather
 */
static double
ParallelDivisor(const Path *path)
{
	double		divisor = path->parallel_workers;

	if (parallel_leader_participation)
	{
		double		leader_share = 1.0 - 0.3 * path->parallel_workers;

		if (leader_share > 0.0)
			divisor += leader_share;
	}
	return divisor;
}

/* The processes that run a path's join: its workers and, mostly, the leader */
static int
ParallelProcesses(const Path *path)
{
	if (path->parallel_workers == 0)
		return 1;
	return path->parallel_workers + (parallel_leader_participation ? 1 : 0);
}

/* The share of a child's cost a GPU join is charged (see the file header) */
static double
ChildCostScale(const Path *path)
{
	return path->pathtype == T_SeqScan ? gpujoin_scan_cost_scale : 1.0;
}

/*
 * Estimate the costs of a GPU join path; see the file header
 */
static void
CostGpuJoin(PlannerInfo *root, CustomPath *cpath, Path *outer_path,
			Path *inner_path, GpuJoinClauses *clauses, JoinPathExtraData *extra,
			bool use_gpu, GpuJoinStrategy strategy, GjVariant *variant,
			GjMaterialize *materialize, char **considered, bool *partitioned)
{
	double		outer_rows = outer_path->rows;	/* a partial path's: per process */
	double		inner_rows = inner_path->rows;
	double		out_rows = cpath->path.rows;
	int			processes = ParallelProcesses(&cpath->path);
	double		divisor = processes > 1 ? ParallelDivisor(&cpath->path) : 1.0;
	int			nkeys = list_length(clauses->key_clauses);
	int			outer_cols = list_length(outer_path->pathtarget->exprs);
	int			inner_cols = list_length(inner_path->pathtarget->exprs);
	int			outer_payloads;
	int			inner_payloads;
	int			outer_bytes;
	int			inner_bytes;
	double		matches;
	double		passes;
	QualCost	qual_cost;
	Cost		startup_cost;
	Cost		run_cost;
	Cost		emit_cost;

	*partitioned = false;

	/* candidate pairs the device returns: rows matching the key clauses */
	matches = clamp_row_est(outer_rows * inner_rows *
							clauselist_selectivity(root, clauses->key_rinfos, 0,
												   JOIN_INNER, extra->sjinfo));

	CountPayload(outer_path, &outer_payloads, &outer_bytes);
	CountPayload(inner_path, &inner_payloads, &inner_bytes);
	ChooseVariant(strategy, outer_rows, inner_rows, matches, outer_payloads,
				  inner_payloads, outer_bytes, inner_bytes, nkeys, variant,
				  materialize, considered);

	startup_cost = outer_path->startup_cost * ChildCostScale(outer_path) +
		inner_path->total_cost * ChildCostScale(inner_path);
	run_cost = (outer_path->total_cost - outer_path->startup_cost) * ChildCostScale(outer_path);

	/* host: column batches, and a hash function call per hashed key */
	startup_cost += inner_rows * (inner_cols + nkeys) * gpujoin_extract_cost;
	run_cost += outer_rows * (outer_cols + nkeys) * gpujoin_extract_cost;
	for (int i = 0; i < list_length(clauses->codings); i += 2)
	{
		if (list_nth_int(clauses->codings, i) == GPUJOIN_KEY_HASHED)
		{
			bool		inner = (i % 4) == 2;

			startup_cost += inner ? inner_rows * cpu_operator_cost : 0.0;
			run_cost += inner ? 0.0 : outer_rows * cpu_operator_cost;
		}
	}

	/*
	 * The CPU twin's work, per key: one pass to build or probe a global
	 * table, two partitioning passes more for PHJ, a radix sort (about four
	 * passes) for SMJ; GFTR moves every payload column through the same
	 * passes.
	 */
	switch (*variant)
	{
		case GJ_VARIANT_NPHJ:
			passes = 1.0;
			break;
		case GJ_VARIANT_PHJ:
			passes = 3.0;
			break;
		case GJ_VARIANT_BAND:
			/* sorting the inner side, two binary searches per outer row */
			passes = 5.0 + 2.0 * log2(Max(inner_rows, 2.0)) / 8.0;
			break;
		case GJ_VARIANT_NLJ:
			/* every pair, every term: a few hundred comparisons per key */
			passes = Max(inner_rows, 1.0) * list_length(clauses->key_clauses) / 256.0;
			break;
		default:
			passes = 5.0;
			break;
	}
	if (*materialize == GJ_MATERIALIZE_GFTR)
		passes *= 1.0 + 0.5 * (outer_payloads + inner_payloads);

	/*
	 * A join whose device structures will not fit its device budget
	 * (GpuJoinPartitions): a hash join is partitioned on the host and joined
	 * one partition at a time (exec.c), which costs a pass over both sides
	 * to partition them, the outer side's trip through a tuplestore (written
	 * and read back, spilling beyond work_mem like a hash join's batch
	 * files), and a build per partition; any other join, or one that would
	 * take too many partitions, falls back to the CPU twin when it runs out
	 * of device memory: cost it as that.  (Only a hash join lowers its outer
	 * chunks to fit, so GpuJoinPartitions' "1" is no promise for the others:
	 * they must fit as they are.)  The CPU twin partitions too, under
	 * gpujoin.device_memory_limit (so that tests need no GPU).
	 */
	if (use_gpu || gpujoin_cost_as_gpu || gpujoin_device_memory_limit > 0)
	{
		bool		as_gpu = use_gpu || gpujoin_cost_as_gpu;
		int64		chunk_rows = gpujoin_chunk_rows;
		/* the processes of a parallel join share the free device memory */
		double		budget = GpuJoinPlannerDeviceBudget() /
			(gpujoin_device_memory_limit > 0 ? 1 : processes);
		int			nparts = GpuJoinPartitions(inner_rows, inner_bytes, outer_rows,
											   outer_bytes, budget, &chunk_rows);
		double		need = GpuJoinInnerDeviceBytes(inner_rows, inner_bytes) +
			GpuJoinChunkDeviceBytes(Min(outer_rows, (double) gpujoin_chunk_rows),
									outer_bytes, inner_bytes);

		if (nparts > 1 && strategy == GPUJOIN_STRATEGY_HASH)
		{
			/* as costsize.c's page_size() counts a tuplestore's pages */
			double		outer_pages = ceil(outer_rows *
										   (MAXALIGN(outer_path->pathtarget->width) +
											MAXALIGN(SizeofHeapTupleHeader)) / BLCKSZ);

			*partitioned = true;
			*considered = psprintf("%s; needs about %.0f MB of device memory, %.0f MB available: %d partitions",
								   *considered, need / (1024.0 * 1024.0),
								   budget / (1024.0 * 1024.0), nparts);
			run_cost += cpu_operator_cost * (inner_rows + 2.0 * outer_rows);
			if (outer_pages * BLCKSZ > work_mem * 1024.0)
				run_cost += 2.0 * outer_pages * seq_page_cost;
			/* a build per partition: a tenth of a join's fixed cost */
			run_cost += nparts * gpujoin_setup_cost / 10.0;
		}
		else if (as_gpu && (strategy == GPUJOIN_STRATEGY_HASH ? nparts != 1 :
							budget > 0.0 && need > budget))
		{
			*considered = psprintf("%s; needs about %.0f MB of device memory, %.0f MB available: costed as the CPU twin",
								   *considered, need / (1024.0 * 1024.0),
								   budget / (1024.0 * 1024.0));
			as_gpu = false;
		}
		use_gpu = as_gpu;
	}

	if (use_gpu)
	{
		/*
		 * The model's milliseconds: the inner side's part before the first
		 * row.  The processes of a parallel join share one GPU, which runs
		 * their kernels one after another: each waits for every build and
		 * for the probes of all outer rows.  Each worker opens the GPU
		 * first, and the driver lets them do so one at a time (on the H200
		 * host, about 180 ms each: bench/results/parallel.md).
		 */
		double		total_ms = ModelDeviceMs(*variant, *materialize, inner_rows,
											 outer_rows * divisor, matches * divisor,
											 inner_payloads, outer_payloads,
											 inner_bytes, outer_bytes, nkeys);
		double		build_ms = ModelDeviceMs(*variant, *materialize, inner_rows,
											 0.0, 0.0, inner_payloads,
											 outer_payloads, inner_bytes,
											 outer_bytes, nkeys);

		startup_cost += gpujoin_setup_cost + processes * build_ms * gpujoin_model.cost_per_ms;
		startup_cost += cpath->path.parallel_workers * gpujoin_worker_setup_cost;
		run_cost += (total_ms - build_ms) * gpujoin_model.cost_per_ms;
	}
	else
	{
		startup_cost += cpu_operator_cost * passes * inner_rows;
		run_cost += cpu_operator_cost * (passes * outer_rows + matches);
	}

	/* output: recheck every candidate, emit and project the survivors */
	cost_qual_eval(&qual_cost, clauses->join_quals, root);
	startup_cost += qual_cost.startup;
	run_cost += qual_cost.per_tuple * matches;
	startup_cost += cpath->path.pathtarget->cost.startup;
	emit_cost = (gpujoin_emit_cost + cpath->path.pathtarget->cost.per_tuple) * out_rows;
	run_cost += emit_cost;

	/* a merge join has everything before its first row: it sorts it all */
	if (strategy == GPUJOIN_STRATEGY_MERGE)
	{
		startup_cost += run_cost - emit_cost;
		run_cost = emit_cost;
	}

	cpath->path.startup_cost = startup_cost;
	cpath->path.total_cost = startup_cost + run_cost;
}

/*
 * The order of a merge join's output, as pathkeys: by the first key clause,
 * then the second, ... (packed keys compare in that order, keys.c), each
 * ascending.  NIL when a key has no btree order to offer.
 */
static List *
MergeJoinPathKeys(PlannerInfo *root, RelOptInfo *joinrel, JoinType jointype,
				  GpuJoinClauses *clauses)
{
	List	   *outer_pathkeys = NIL;
	ListCell   *lc1;
	ListCell   *lc2;

	forboth(lc1, clauses->key_rinfos, lc2, clauses->outer_is_left)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc1);
		EquivalenceClass *ec;
		PathKey    *pathkey;

		if (rinfo->mergeopfamilies == NIL)
			return NIL;
		update_mergeclause_eclasses(root, rinfo);
		ec = lfirst_int(lc2) ? rinfo->left_ec : rinfo->right_ec;
		pathkey = make_canonical_pathkey(root, ec, linitial_oid(ec->ec_opfamilies),
										 BTLessStrategyNumber, false);
		/* a key equal to an earlier one adds no order */
		if (!list_member_ptr(outer_pathkeys, pathkey))
			outer_pathkeys = lappend(outer_pathkeys, pathkey);
	}
	return build_join_pathkeys(root, joinrel, jointype, outer_pathkeys);
}

/*
 * Add a GPU join path of the given strategy for this (outer, inner) split,
 * if it can run
 */
static void
TryGpuJoinPath(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
			   RelOptInfo *innerrel, JoinType jointype, JoinPathExtraData *extra,
			   GpuJoinClauses *clauses, bool use_gpu, GpuJoinStrategy strategy,
			   GjVariant theta_variant, bool partial)
{
	Path	   *outer_path = outerrel->cheapest_total_path;
	Path	   *inner_path = innerrel->cheapest_total_path;
	CustomPath *cpath;
	List	   *pathkeys = NIL;
	GjVariant	variant;
	GjMaterialize materialize;
	char	   *considered;
	bool		partitioned;

	/*
	 * A partial path, for a Gather above it: every process joins its part of
	 * a partial outer path against the whole of a parallel-safe inner one
	 */
	if (partial)
	{
		outer_path = linitial(outerrel->partial_pathlist);
		inner_path = get_cheapest_parallel_safe_total_inner(innerrel->pathlist);
	}

	/* the children are run to completion once per scan: no parameters */
	if (outer_path == NULL || inner_path == NULL ||
		PATH_REQ_OUTER(outer_path) != NULL || PATH_REQ_OUTER(inner_path) != NULL)
		return;
	/* row numbers on the device are 32 bits (GJ_MAX_ROWS) */
	if (inner_path->rows > (double) GJ_MAX_ROWS)
		return;

	if (strategy == GPUJOIN_STRATEGY_MERGE)
	{
		/*
		 * Sorted output needs exact keys and the outer side in one piece;
		 * unmatched outer rows (LEFT, ANTI) are put in their place by key
		 * (exec.c), but unmatched inner rows (RIGHT, FULL) would come out
		 * after the rest.
		 */
		if (!clauses->exact || outer_path->rows > (double) GJ_MAX_ROWS ||
			jointype == JOIN_RIGHT || jointype == JOIN_FULL)
			return;
		pathkeys = MergeJoinPathKeys(root, joinrel, jointype, clauses);
		if (pathkeys == NIL)
			return;				/* no order anyone could use */
	}

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = joinrel;
	cpath->path.pathtarget = joinrel->reltarget;
	cpath->path.param_info = NULL;	/* not parameterized: see above */
	if (partial)
	{
		/* parallel-aware only to gather the processes' counters (exec.c) */
		cpath->path.parallel_aware = true;
		cpath->path.parallel_safe = true;
		cpath->path.parallel_workers = outer_path->parallel_workers;
		cpath->path.rows = clamp_row_est(joinrel->rows / ParallelDivisor(outer_path));
	}
	else
	{
		/* a whole join in one process: not below a Gather */
		cpath->path.parallel_aware = false;
		cpath->path.parallel_safe = false;
		cpath->path.parallel_workers = 0;
		cpath->path.rows = joinrel->rows;
	}
	cpath->path.pathkeys = pathkeys;	/* NIL for a hash join: unordered */
	/*
	 * No backward scan, no mark/restore; but the node projects (ExecProject
	 * over its scan tuple in exec.c), so PostgreSQL 15 need not put a Result
	 * node above it to compute the join's output expressions
	 */
	cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	cpath->custom_paths = list_make2(outer_path, inner_path);
	cpath->methods = (strategy == GPUJOIN_STRATEGY_MERGE) ? &gpujoin_merge_path_methods :
		(strategy == GPUJOIN_STRATEGY_THETA) ? &gpujoin_theta_path_methods :
		&gpujoin_hash_path_methods;

	variant = theta_variant;	/* chosen by the caller for theta joins */
	CostGpuJoin(root, cpath, outer_path, inner_path, clauses, extra, use_gpu,
				strategy, &variant, &materialize, &considered, &partitioned);
	if (partial)
		considered = psprintf("%s; run by each of %d processes on all inner rows",
							  considered, ParallelProcesses(&cpath->path));
	/* a merge join emitting unmatched outer rows sorts them on the host */
	if (strategy == GPUJOIN_STRATEGY_MERGE &&
		(jointype == JOIN_LEFT || jointype == JOIN_ANTI))
	{
		Cost		sort = 2.0 * cpu_operator_cost * outer_path->rows *
			log2(Max(outer_path->rows, 2.0));

		cpath->path.startup_cost += sort;
		cpath->path.total_cost += sort;
	}

	cpath->custom_private = list_make5(clauses->key_clauses,
									   clauses->outer_is_left,
									   clauses->key_bits,
									   makeBoolean(clauses->exact),
									   clauses->join_quals);
	cpath->custom_private = lappend(cpath->custom_private, makeInteger(strategy));
	cpath->custom_private = lappend(cpath->custom_private, makeInteger(variant));
	cpath->custom_private = lappend(cpath->custom_private, makeInteger(materialize));
	cpath->custom_private = lappend(cpath->custom_private, clauses->theta_ops);
	cpath->custom_private = lappend(cpath->custom_private, makeInteger(jointype));
	cpath->custom_private = lappend(cpath->custom_private, clauses->other_quals);
	cpath->custom_private = lappend(cpath->custom_private, clauses->codings);
	cpath->custom_private = lappend(cpath->custom_private, makeString(considered));
	cpath->custom_private = lappend(cpath->custom_private, makeBoolean(partitioned));

	if (partial)
		add_partial_path(joinrel, &cpath->path);
	else
		add_path(joinrel, &cpath->path);
}

/*
 * Can a partial GPU join path be offered?  Each process emits only what its
 * own outer rows produce, so no join type that emits unmatched inner rows
 * (PostgreSQL's hash join without Parallel Hash has the same rule).
 */
static bool
CanJoinInParallel(RelOptInfo *joinrel, RelOptInfo *outerrel, JoinType jointype)
{
	return gpujoin_enable_parallel && joinrel->consider_parallel &&
		outerrel->partial_pathlist != NIL &&
		jointype != JOIN_RIGHT && jointype != JOIN_FULL;
}

/*
 * Add GPU join paths for one (outer, inner) combination of a join relation
 *
 * The planner calls this repeatedly for the same joinrel with different
 * outer/inner splits; each call adds at most one path per strategy.
 */
static void
GpuJoinAddPaths(PlannerInfo *root, RelOptInfo *joinrel,
				RelOptInfo *outerrel, RelOptInfo *innerrel,
				JoinType jointype, JoinPathExtraData *extra)
{
	GpuJoinClauses clauses;
	bool		use_gpu;

	if (prev_set_join_pathlist_hook)
		prev_set_join_pathlist_hook(root, joinrel, outerrel, innerrel,
									jointype, extra);

	/* Cheap checks first: settings, join type, lateral references */
	if (!gpujoin_enabled)
		return;
	switch (jointype)
	{
		case JOIN_INNER:
		case JOIN_LEFT:
		case JOIN_RIGHT:
		case JOIN_FULL:
		case JOIN_SEMI:
		case JOIN_ANTI:
			break;
		default:
			return;				/* JOIN_UNIQUE_*: the planner's own way */
	}
	if (!bms_is_empty(joinrel->lateral_relids))
		return;					/* would need parameterized paths */
	if (CarriesRecordVar(outerrel) || CarriesRecordVar(innerrel))
		return;					/* EXPLAIN could not name its fields */
	if (CarriesRowIdentityVar(joinrel))
		return;					/* setrefs.c allows it in no custom scan */

	/*
	 * Split restrictlist into encodable key clauses and quals to recheck.
	 * Equality keys make an equi-join (a hash or merge join; comparisons
	 * among the other clauses are rechecked); without them, comparisons make
	 * a theta join.
	 */
	if (ExtractJoinClauses(extra->restrictlist, joinrel, jointype, outerrel,
						   innerrel, &clauses))
	{
		if (!gpujoin_enable_hashjoin && !gpujoin_enable_mergejoin)
			return;
		/* Last, as it may probe the device: is there one to run on? */
		if (!GpuJoinPlannerHasDevice(&use_gpu))
			return;
		if (gpujoin_enable_hashjoin)
			TryGpuJoinPath(root, joinrel, outerrel, innerrel, jointype, extra,
						   &clauses, use_gpu, GPUJOIN_STRATEGY_HASH, GJ_VARIANT_NPHJ,
						   false);
		if (gpujoin_enable_hashjoin && CanJoinInParallel(joinrel, outerrel, jointype))
			TryGpuJoinPath(root, joinrel, outerrel, innerrel, jointype, extra,
						   &clauses, use_gpu, GPUJOIN_STRATEGY_HASH, GJ_VARIANT_NPHJ,
						   true);
		if (gpujoin_enable_mergejoin)
			TryGpuJoinPath(root, joinrel, outerrel, innerrel, jointype, extra,
						   &clauses, use_gpu, GPUJOIN_STRATEGY_MERGE, GJ_VARIANT_SMJ,
						   false);
		return;
	}

	if (!gpujoin_enable_thetajoin)
		return;
	for (int variant = GJ_VARIANT_BAND; variant <= GJ_VARIANT_NLJ; variant++)
	{
		/* gpujoin.join_variant = band or nlj offers that one alone */
		if ((gpujoin_join_variant == GJ_VARIANT_BAND || gpujoin_join_variant == GJ_VARIANT_NLJ) &&
			gpujoin_join_variant != variant)
			continue;
		if (!ExtractThetaClauses(root, extra->restrictlist, joinrel, jointype, outerrel,
								 innerrel, (GjVariant) variant, &clauses))
			return;
		if (!GpuJoinPlannerHasDevice(&use_gpu))
			return;
		TryGpuJoinPath(root, joinrel, outerrel, innerrel, jointype, extra,
					   &clauses, use_gpu, GPUJOIN_STRATEGY_THETA, (GjVariant) variant,
					   false);
		if (CanJoinInParallel(joinrel, outerrel, jointype))
			TryGpuJoinPath(root, joinrel, outerrel, innerrel, jointype, extra,
						   &clauses, use_gpu, GPUJOIN_STRATEGY_THETA, (GjVariant) variant,
						   true);
	}
}

/*
 * The scan tuple: the outer child's targetlist, then the inner child's
 */
static List *
BuildScanTargetList(List *outer_tlist, List *inner_tlist)
{
	List	   *tlist = NIL;
	AttrNumber	resno = 1;
	ListCell   *lc;

	foreach(lc, outer_tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		tlist = lappend(tlist, makeTargetEntry(copyObject(tle->expr), resno++,
											   NULL, false));
	}
	foreach(lc, inner_tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		tlist = lappend(tlist, makeTargetEntry(copyObject(tle->expr), resno++,
											   NULL, false));
	}
	return tlist;
}

/*
 * Let a Seq Scan below the join return its tuples as they lie on the page
 *
 * createplan.c plans a custom path's children with exact target lists, so
 * a Seq Scan projects every row into the columns the join needs.  With the
 * relation's physical target list it projects nothing (ExecScan hands up
 * the buffer tuple) and AppendRow deforms that tuple itself; the join still
 * extracts only the columns it needs (InitSide).  PostgreSQL's hash join
 * lets its children do the same unless it expects batches (createplan.c,
 * CP_SMALL_TLIST), and so do we: a partitioned hash join keeps the outer
 * side's exact target list, since its outer tuples go to tuplestores.  Only
 * a list of plain user columns of the scanned relation is replaced (system
 * columns for row locks, whole-row Vars and PlaceHolderVars are not), and
 * build_physical_tlist gives up on dropped or added-with-default columns.
 */
static void
UsePhysicalTargetList(PlannerInfo *root, Plan *plan)
{
	Scan	   *scan = (Scan *) plan;
	List	   *tlist;
	ListCell   *lc;

	if (!IsA(plan, SeqScan))
		return;
	foreach(lc, plan->targetlist)
	{
		Var		   *var = (Var *) lfirst_node(TargetEntry, lc)->expr;

		if (!IsA(var, Var) || var->varno != scan->scanrelid ||
			var->varattno <= 0 || var->varlevelsup != 0)
			return;
	}
	tlist = build_physical_tlist(root, find_base_rel(root, scan->scanrelid));
	if (tlist != NIL)
		plan->targetlist = tlist;
}

/*
 * PlanCustomPath callback: the CustomScan for a GpuHashJoin or GpuMergeJoin path
 *
 * "clauses" is the joinrel's baserestrictinfo, which is empty for a join;
 * our quals travel in the path's private list.
 */
static Plan *
PlanGpuJoinPath(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	List	   *priv = best_path->custom_private;
	Plan	   *outer_plan = linitial(custom_plans);
	Plan	   *inner_plan = lsecond(custom_plans);

	Assert(clauses == NIL);

	if (!boolVal(list_nth(priv, GpuJoinPathPartitioned)))
		UsePhysicalTargetList(root, outer_plan);
	UsePhysicalTargetList(root, inner_plan);

	cscan->scan.plan.targetlist = tlist;
	/* outer joins: the pushed-down quals filter the output */
	cscan->scan.plan.qual = list_nth(priv, GpuJoinPathOtherQuals);
	cscan->scan.scanrelid = 0;	/* a join, not a scan of one relation */
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = list_make2(list_nth(priv, GpuJoinPathKeyClauses),
									 list_nth(priv, GpuJoinPathJoinQuals));
	cscan->custom_private = list_make5(list_nth(priv, GpuJoinPathStrategy),
									   list_nth(priv, GpuJoinPathJoinType),
									   makeInteger(list_length(outer_plan->targetlist)),
									   list_nth(priv, GpuJoinPathOuterIsLeft),
									   list_nth(priv, GpuJoinPathKeyBits));
	cscan->custom_private = lappend(cscan->custom_private,
									list_nth(priv, GpuJoinPathKeyExact));
	cscan->custom_private = lappend(cscan->custom_private,
									makeFloat(psprintf("%.0f", inner_plan->plan_rows)));
	cscan->custom_private = lappend(cscan->custom_private,
									list_nth(priv, GpuJoinPathVariant));
	cscan->custom_private = lappend(cscan->custom_private,
									list_nth(priv, GpuJoinPathMaterialize));
	cscan->custom_private = lappend(cscan->custom_private,
									list_nth(priv, GpuJoinPathThetaOps));
	cscan->custom_private = lappend(cscan->custom_private,
									list_nth(priv, GpuJoinPathKeyCodings));
	cscan->custom_private = lappend(cscan->custom_private,
									list_nth(priv, GpuJoinPathConsidered));
	cscan->custom_scan_tlist = BuildScanTargetList(outer_plan->targetlist,
												   inner_plan->targetlist);
	switch ((GpuJoinStrategy) intVal(list_nth(priv, GpuJoinPathStrategy)))
	{
		case GPUJOIN_STRATEGY_HASH:
			cscan->methods = &gpujoin_hash_scan_methods;
			break;
		case GPUJOIN_STRATEGY_MERGE:
			cscan->methods = &gpujoin_merge_scan_methods;
			break;
		case GPUJOIN_STRATEGY_THETA:
			cscan->methods = &gpujoin_theta_scan_methods;
			break;
	}

	return &cscan->scan.plan;
}

/*
 * Install the join hook, chaining any hook loaded before us
 */
void
GpuJoinInitPlanner(void)
{
	prev_set_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = GpuJoinAddPaths;
}
