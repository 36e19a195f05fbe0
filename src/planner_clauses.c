/*-------------------------------------------------------------------------
 *
 * planner_clauses.c
 *	  Which clauses of a join the device evaluates, and which joins get no GPU path
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
 * A theta join (no equality) takes comparisons instead
 * (GpuJoinExtractThetaClauses).  Some joins get no GPU path at all: those
 * that carry a record-typed column EXPLAIN could not name
 * (GpuJoinCarriesRecordVar) or a partitioned UPDATE/DELETE/MERGE target's
 * row identity (GpuJoinCarriesRowIdentityVar).
 *
 * IDENTIFICATION
 *	  src/planner_clauses.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "gpujoin.h"
#include "planner.h"
#include "parser/parsetree.h"
#include "utils/syscache.h"
#include "catalog/pg_class.h"
#include "catalog/pg_am.h"
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
#include "optimizer/restrictinfo.h"
#include "utils/lsyscache.h"

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
bool
GpuJoinCarriesRecordVar(RelOptInfo *rel)
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
bool
GpuJoinCarriesRowIdentityVar(RelOptInfo *joinrel)
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
bool
GpuJoinExtractJoinClauses(List *restrictlist, RelOptInfo *joinrel, JoinType jointype,
						  RelOptInfo *outerrel, RelOptInfo *innerrel,
						  GpuJoinClauses *clauses)
{
	ListCell   *lc;

	memset(clauses, 0, sizeof(*clauses));
	clauses->fill_inner = (jointype == JOIN_RIGHT || jointype == JOIN_FULL);
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
bool
GpuJoinExtractThetaClauses(PlannerInfo *root, List *restrictlist, RelOptInfo *joinrel,
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
	clauses->fill_inner = (jointype == JOIN_RIGHT || jointype == JOIN_FULL);
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
 * The relation a GPU join reads itself as heap pages for one side
 * (exec_heap.c) instead of running that side's Seq Scan, or 0
 *
 * The side's path must be a plain Seq Scan of a heap table or materialized
 * view (quals where the device evaluates them, planner_expr.c, or the host
 * does on the tuples the device's quals pass, DeviceEvaluatesQuals; no sampling, no parameters; parallel only as the outer
 * side of a partial join, whose processes then share out the relation's
 * blocks as a Parallel Seq Scan's do: exec_parallel.c), every column of
 * its target (what the join needs of it) a user column (the fixed-width
 * by-value ones are deformed on the device, the others taken on the host),
 * and every key of the join on it a plain column (encoded by the deform
 * where its coding allows, GpuJoinHeapKeyKind, else on the host from the
 * staged tuples: exec_heap.c).  Only in a SELECT without row
 * marks: EvalPlanQual rechecks (UPDATE, DELETE, MERGE, FOR UPDATE) replace
 * a scan's rows with the row being rechecked, which only a Seq Scan node
 * knows how to do.  Equi-joins only: theta joins keep their children.
 */
/*
 * Whether the device evaluates the quals of rel's scan (planner_expr.c), or
 * those it does not the host may, on the tuples the device's quals pass
 * (*host_quals; not under row-level security, whose quals must come before
 * the others)
 */
static bool
DeviceEvaluatesQuals(RelOptInfo *rel, List **host_quals)
{
	GpuJoinDeviceExpr expr;
	bool		secure = false;
	ListCell   *lc;

	*host_quals = NIL;
	if (rel->baserestrictinfo == NIL)
		return true;
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc);

		if (rinfo->pseudoconstant)
			return false;
		secure |= rinfo->security_level > 0;
	}
	return GpuJoinCompileQual(extract_actual_clauses(rel->baserestrictinfo, false),
							  rel->relid, &expr, secure ? NULL : host_quals);
}

/*
 * The quals of rel's scan that a GPU join reading it as heap pages leaves
 * to the host (GpuJoinHeapSide), or NIL
 */
List *
GpuJoinHeapHostQuals(RelOptInfo *rel)
{
	List	   *host_quals;

	if (!DeviceEvaluatesQuals(rel, &host_quals))
		return NIL;
	return host_quals;
}

Index
GpuJoinHeapSide(PlannerInfo *root, Path *path, GpuJoinStrategy strategy, List *key_clauses,
				List *outer_is_left, bool outer)
{
	RelOptInfo *rel = path->parent;
	RangeTblEntry *rte;
	HeapTuple	tuple;
	Oid			relam;
	List	   *host_quals;
	ListCell   *lc;
	ListCell   *lc2;

	if (!gpujoin_enable_heapscan || strategy == GPUJOIN_STRATEGY_THETA ||
		root->parse->commandType != CMD_SELECT || root->rowMarks != NIL ||
		path->pathtype != T_SeqScan || (path->parallel_aware && !outer) ||
		path->param_info != NULL ||
		(rel->reloptkind != RELOPT_BASEREL && rel->reloptkind != RELOPT_OTHER_MEMBER_REL) ||
		!DeviceEvaluatesQuals(rel, &host_quals) ||
		list_length(path->pathtarget->exprs) > GJ_MAX_COLUMNS)
		return 0;
	rte = planner_rt_fetch(rel->relid, root);
	if (rte->rtekind != RTE_RELATION || rte->tablesample != NULL ||
		(rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW))
		return 0;
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(rte->relid));
	if (!HeapTupleIsValid(tuple))
		return 0;
	relam = ((Form_pg_class) GETSTRUCT(tuple))->relam;
	ReleaseSysCache(tuple);
	if (relam != HEAP_TABLE_AM_OID)
		return 0;

	foreach(lc, path->pathtarget->exprs)
	{
		Var		   *var = (Var *) lfirst(lc);

		if (!IsA(var, Var) || var->varno != rel->relid || var->varattno <= 0 ||
			var->varattno > GJ_MAX_HEAP_ATTS || var->varlevelsup != 0)
			return 0;
	}

	forboth(lc, key_clauses, lc2, outer_is_left)
	{
		OpExpr	   *op = lfirst_node(OpExpr, lc);
		/* this side's argument: the left one when (outer is left) == outer */
		bool		left = (lfirst_int(lc2) != 0) == outer;
		Node	   *arg = left ? linitial(op->args) : lsecond(op->args);

		while (IsA(arg, RelabelType))
			arg = (Node *) ((RelabelType *) arg)->arg;
		if (!IsA(arg, Var) || ((Var *) arg)->varno != rel->relid || ((Var *) arg)->varattno <= 0)
			return 0;
	}
	return rel->relid;
}
