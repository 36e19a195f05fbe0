/*-------------------------------------------------------------------------
 *
 * planner_agg.c
 *	  Offer GpuPreAgg: the aggregates over a GPU join computed on the device,
 *	  one partial row per group, under PostgreSQL's own Finalize Aggregate
 *
 * create_upper_paths_hook (UPPERREL_GROUP_AGG) is called once the grouped
 * relation has PostgreSQL's own paths.  When the relation being grouped is
 * a join for which we made a GpuHashJoin path, and every aggregate, FILTER,
 * argument and grouping key is one the device computes (below), we add
 *
 *		Finalize Aggregate / Finalize HashAggregate / Finalize GroupAggregate
 *		  -> [Sort ->] Custom Scan (GpuPreAgg)
 *
 * where GpuPreAgg is that join's CustomScan run in aggregation mode: its
 * matches are folded into groups on the device (cuda/agg/) and it returns
 * each group's partial aggregates in the format the aggregate's combine
 * (and deserialize) functions take, as a Partial Aggregate would.  The
 * cheapest plan wins, as for joins.  A serial GpuPreAgg is also offered
 * with its rows in the order of the group keys (GroupOrdering: the groups
 * sorted by their keys' words on the device once every group is in, the
 * kernels' agg_result), under a Finalize GroupAggregate with no Sort, whose
 * order an ORDER BY of the same keys then takes as it is.
 *
 * The join path is remembered when it is made (GpuJoinRememberAggJoin):
 * add_path may drop it from the join relation, and frees what it drops, so
 * a copy is kept, per planner invocation (planner_hook forgets them); not
 * under GEQO, whose join relations live in memory reset after each tour.
 *
 * What the device computes (anything else keeps PostgreSQL's Aggregate):
 *	aggregates	count(*), count(x), sum, avg of int2/int4/int8 and
 *				float4/float8, min and max of those and of date, time,
 *				timestamp(tz) and oid; sum, avg, min and max of a numeric
 *				column of declared scale, sum and avg of numeric arithmetic
 *				on such columns, constants and integers (+ - *: TPC-H's
 *				l_extendedprice * (1 - l_discount); planner_expr.c,
 *				exec_agg.c); not DISTINCT, no
 *				ORDER BY, a FILTER and arguments the device expression
 *				compiler takes over the join's columns (planner_expr.c)
 *	grouping	none, or keys that compile to programs of fixed-width
 *				values (bool, int2/4/8, float4/8, date, time, timestamp(tz),
 *				oid, a numeric column of declared scale), or text, varchar
 *				and char(n) columns, which their side codes on the host, a
 *				number per distinct value (exec_batch.c, GpuJoinDict); a
 *				float key's -0 and 0 are one group, shown as 0, and its NaNs
 *				one (gj_float_key); no grouping sets
 *	the join	a GpuHashJoin, inner, whose keys decide the matches alone
 *				(no recheck, no pushed-down quals); serial, or partial (one
 *				GpuPreAgg per process under a Gather)
 *
 * IDENTIFICATION
 *	  src/planner_agg.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/stratnum.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_statistic.h"
#include "commands/defrem.h"
#include "catalog/pg_type.h"
#include "expr/expr.h"
#include "gpujoin.h"
#include "planner.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "utils/timestamp.h"

/* A join path kept for the aggregation above its relation */
typedef struct RememberedJoin
{
	PlannerInfo *root;
	RelOptInfo *joinrel;
	CustomPath *path;			/* a copy, never handed to add_path */
} RememberedJoin;

static List *remembered = NIL;
static planner_hook_type prev_planner_hook = NULL;
static create_upper_paths_hook_type prev_upper_paths_hook = NULL;

static Plan *PlanGpuPreAggPath(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
							   List *tlist, List *clauses, List *custom_plans);

static const CustomPathMethods gpujoin_preagg_path_methods = {
	.CustomName = "GpuPreAgg",
	.PlanCustomPath = PlanGpuPreAggPath,
};

/* What an aggregate function is to the device (GpuJoinAggFunc), or -1 */
int
GpuJoinAggFuncOf(Oid aggfnoid)
{
	switch (aggfnoid)
	{
		case F_COUNT_:
			return GPUJOIN_AGG_COUNT_STAR;
		case F_COUNT_ANY:
			return GPUJOIN_AGG_COUNT;
		case F_SUM_INT2:
		case F_SUM_INT4:
			return GPUJOIN_AGG_SUM_INT;
		case F_SUM_INT8:
			return GPUJOIN_AGG_SUM_INT8;
		case F_AVG_INT2:
		case F_AVG_INT4:
			return GPUJOIN_AGG_AVG_INT;
		case F_AVG_INT8:
			return GPUJOIN_AGG_AVG_INT8;
		case F_SUM_FLOAT4:
			return GPUJOIN_AGG_SUM_FLOAT4;
		case F_SUM_FLOAT8:
			return GPUJOIN_AGG_SUM_FLOAT8;
		case F_SUM_NUMERIC:
		case F_AVG_NUMERIC:
			return GPUJOIN_AGG_SUM_NUMERIC;
		case F_AVG_FLOAT4:
		case F_AVG_FLOAT8:
			return GPUJOIN_AGG_AVG_FLOAT;
		case F_MIN_INT2:
		case F_MIN_INT4:
		case F_MIN_INT8:
		case F_MIN_FLOAT4:
		case F_MIN_FLOAT8:
		case F_MIN_DATE:
		case F_MIN_TIME:
		case F_MIN_TIMESTAMP:
		case F_MIN_TIMESTAMPTZ:
		case F_MIN_OID:
		case F_MIN_NUMERIC:
			return GPUJOIN_AGG_MIN;
		case F_MAX_INT2:
		case F_MAX_INT4:
		case F_MAX_INT8:
		case F_MAX_FLOAT4:
		case F_MAX_FLOAT8:
		case F_MAX_DATE:
		case F_MAX_TIME:
		case F_MAX_TIMESTAMP:
		case F_MAX_TIMESTAMPTZ:
		case F_MAX_OID:
		case F_MAX_NUMERIC:
			return GPUJOIN_AGG_MAX;
	}
	return -1;
}

/*
 * Whether the device computes aggref over the columns in tlist (the join's
 * output): a supported function, plain (no DISTINCT, no ORDER BY, not
 * variadic), its argument and FILTER compiling
 */
bool
GpuJoinAggSupported(Aggref *aggref, List *tlist)
{
	GpuJoinDeviceExpr expr;
	GjExprType	type;
	Node	   *arg;
	int			func = GpuJoinAggFuncOf(aggref->aggfnoid);

	if (func < 0 || aggref->aggdistinct != NIL || aggref->aggorder != NIL ||
		aggref->aggvariadic || aggref->agglevelsup != 0 || aggref->aggkind != AGGKIND_NORMAL)
		return false;
	if (aggref->aggfilter != NULL &&
		!GpuJoinCompileTlistExpr((Node *) aggref->aggfilter, tlist, true, &expr, NULL))
		return false;
	if (func == GPUJOIN_AGG_COUNT_STAR)
		return aggref->args == NIL;
	if (list_length(aggref->args) != 1)
		return false;
	arg = (Node *) linitial_node(TargetEntry, aggref->args)->expr;
	/*
	 * A numeric: min and max of a column of declared scale, whose values
	 * the device keeps as they are; sums and averages also of arithmetic
	 * on such columns, of a scale known here (GpuJoinNumericExprScale)
	 */
	if (exprType(arg) == NUMERICOID &&
		(func == GPUJOIN_AGG_SUM_NUMERIC ? GpuJoinNumericExprScale(arg) :
		 GpuJoinNumericScale(arg)) < 0)
		return false;
	return GpuJoinCompileTlistExpr(arg, tlist, false, &expr, &type);
}

/* The types whose group keys a GpuPreAgg codes on the host: text, varchar, char(n) */
bool
GpuJoinDictType(Oid type)
{
	return type == TEXTOID || type == VARCHAROID || type == BPCHAROID;
}

/*
 * Whether the device groups by expr over the columns in tlist (a List of
 * TargetEntry or of expressions); a text key only as one of those columns,
 * which its side codes (exec_batch.c, GpuJoinDict)
 */
bool
GpuJoinGroupKeySupported(Expr *expr, List *tlist)
{
	GpuJoinDeviceExpr dexpr;
	GjExprType	type;

	if (GpuJoinDictType(exprType((Node *) expr)))
		return IsA(expr, Var) && ((Var *) expr)->varlevelsup == 0 &&
			GpuJoinTlistPosition(tlist, (Var *) expr) > 0;

	/*
	 * a numeric: a column of declared scale, whose values group as they are,
	 * or EXTRACT's day field of a date or timestamp (GpuJoinNumericKeyScale)
	 */
	if (exprType((Node *) expr) == NUMERICOID && GpuJoinNumericKeyScale((Node *) expr) < 0)
		return false;
	return GpuJoinCompileTlistExpr((Node *) expr, tlist, false, &dexpr, &type);
}

/*
 * Keep a copy of a GPU join path for the aggregation above its relation:
 * the cheapest one the device can aggregate, per relation, serial and
 * partial apart
 */
void
GpuJoinRememberAggJoin(PlannerInfo *root, RelOptInfo *joinrel, CustomPath *cpath,
					   JoinType jointype, GpuJoinClauses *clauses)
{
	RememberedJoin *r = NULL;
	ListCell   *lc;
	CustomPath *copy;

	if (!gpujoin_enable_preagg || jointype != JOIN_INNER || clauses->join_quals != NIL ||
		clauses->other_quals != NIL)
		return;

	/*
	 * Not under GEQO: it builds its join relations in a memory context it
	 * resets after each tour, which would take the copy with it
	 */
	if (root->join_search_private != NULL)
		return;
	foreach(lc, remembered)
	{
		RememberedJoin *e = lfirst(lc);

		if (e->root == root && e->joinrel == joinrel &&
			e->path->path.parallel_aware == cpath->path.parallel_aware)
			r = e;
	}
	if (r != NULL && r->path->path.total_cost <= cpath->path.total_cost)
		return;
	copy = makeNode(CustomPath);
	memcpy(copy, cpath, sizeof(CustomPath));
	copy->custom_paths = list_copy(cpath->custom_paths);
	copy->custom_private = list_copy(cpath->custom_private);
	if (r == NULL)
	{
		r = palloc(sizeof(RememberedJoin));
		r->root = root;
		r->joinrel = joinrel;
		remembered = lappend(remembered, r);
	}
	r->path = copy;
}

/* Forget the paths of the planning that ends (or starts) */
static PlannedStmt *
GpuJoinPlanner(Query *parse, const char *query_string, int cursorOptions,
			   ParamListInfo boundParams)
{
	List	   *saved = remembered;
	PlannedStmt *result;

	remembered = NIL;
	PG_TRY();
	{
		if (prev_planner_hook)
			result = prev_planner_hook(parse, query_string, cursorOptions, boundParams);
		else
			result = standard_planner(parse, query_string, cursorOptions, boundParams);
	}
	PG_FINALLY();
	{
		remembered = saved;
	}
	PG_END_TRY();
	return result;
}

/*
 * The partial target of the grouping: the group keys as they are, the
 * Aggrefs in partial mode (as planner.c's make_partial_grouping_target);
 * NULL where another expression is needed.  A column outside the
 * aggregates that is not a group key is one PostgreSQL let the query
 * read because a primary key among the group keys determines it (its
 * planner took such columns out of the GROUP BY:
 * remove_useless_groupby_columns; TPC-H Q10's c_name, c_acctbal,
 * c_phone): the device groups by it too, which makes the same groups, and
 * it comes out as a key.  keys: every key the device groups by, the
 * query's first (*nquery of them); a dependent column's sort/group
 * reference is its ORDER BY's, or one no clause uses.
 */
static PathTarget *
PartialTarget(PlannerInfo *root, PathTarget *grouping_target, Node *having, List **keys,
			  int *nquery, List **aggrefs)
{
	Query	   *parse = root->parse;
	PathTarget *partial = create_empty_pathtarget();
	List	   *others = NIL;
	List	   *pulled;
	ListCell   *lc;
	ListCell   *lc2;
	Index		next_ref = 0;
	int			i = 0;

	*keys = NIL;
	*aggrefs = NIL;
	foreach(lc, parse->targetList)
		next_ref = Max(next_ref, lfirst_node(TargetEntry, lc)->ressortgroupref);
	foreach(lc, grouping_target->exprs)
	{
		Expr	   *expr = (Expr *) lfirst(lc);
		Index		sgref = get_pathtarget_sortgroupref(grouping_target, i);

		next_ref = Max(next_ref, sgref);
		if (sgref && parse->groupClause &&
			get_sortgroupref_clause_noerr(sgref, parse->groupClause) != NULL)
		{
			add_column_to_pathtarget(partial, expr, sgref);
			*keys = lappend(*keys, expr);
		}
		else
			others = lappend(others, expr);
		i++;
	}
	*nquery = list_length(*keys);
	if (having)
		others = lappend(others, having);
	pulled = pull_var_clause((Node *) others, PVC_INCLUDE_AGGREGATES |
							 PVC_RECURSE_WINDOWFUNCS | PVC_INCLUDE_PLACEHOLDERS);
	foreach(lc, pulled)
	{
		Node	   *node = lfirst(lc);
		Index		sgref = 0;

		if (IsA(node, Aggref) || list_member(*keys, node))
			continue;
		/* a functionally dependent column (above); nothing else */
		if (!IsA(node, Var) || ((Var *) node)->varlevelsup != 0 || *nquery == 0)
			return NULL;
		i = 0;
		foreach(lc2, grouping_target->exprs)
		{
			if (equal(lfirst(lc2), node))
				sgref = get_pathtarget_sortgroupref(grouping_target, i);
			i++;
		}
		add_column_to_pathtarget(partial, (Expr *) node, sgref ? sgref : ++next_ref);
		*keys = lappend(*keys, node);
	}
	add_new_columns_to_pathtarget(partial, pulled);
	foreach(lc, partial->exprs)
	{
		Aggref	   *aggref = (Aggref *) lfirst(lc);

		if (IsA(aggref, Aggref))
		{
			Aggref	   *partial_ref = makeNode(Aggref);

			memcpy(partial_ref, aggref, sizeof(Aggref));
			mark_partial_aggref(partial_ref, AGGSPLIT_INITIAL_SERIAL);
			lfirst(lc) = partial_ref;
			*aggrefs = lappend(*aggrefs, aggref);
		}
	}
	return set_pathtarget_cost_width(root, partial);
}

/*
 * A grouping whose input is one plain relation, not a join: a GPU "join"
 * of it with nothing (GJ_VARIANT_SCAN, GpuJoinScanPath), serial or partial
 * (with the workers of its cheapest partial path), over a Seq Scan of it
 * whose target is the Vars the grouping needs: the hook runs after the
 * relation's paths took the grouping's input target, whose expressions
 * the GpuPreAgg computes itself.  NULL where the relation is not a plain
 * table or materialized view read whole, or no device is there.
 */
static CustomPath *
ScanAggPath(PlannerInfo *root, RelOptInfo *rel, bool partial)
{
	RangeTblEntry *rte;
	PathTarget *target;
	Path	   *scan;
	List	   *vars;
	ListCell   *lc;
	bool		use_gpu;
	int			workers = 0;

	if (!gpujoin_enable_preagg_scan || rel->reloptkind != RELOPT_BASEREL ||
		rel->rtekind != RTE_RELATION || rel->lateral_relids != NULL ||
		GpuJoinCarriesRecordVar(rel))
		return NULL;
	rte = planner_rt_fetch(rel->relid, root);
	if (rte->inh || rte->tablesample != NULL ||
		(rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW))
		return NULL;
	if (partial)
	{
		if (rel->partial_pathlist == NIL)
			return NULL;
		workers = ((Path *) linitial(rel->partial_pathlist))->parallel_workers;
		if (workers <= 0)
			return NULL;
	}
	vars = pull_var_clause((Node *) rel->reltarget->exprs,
						   PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
						   PVC_INCLUDE_PLACEHOLDERS);
	foreach(lc, vars)
		if (!IsA(lfirst(lc), Var))
			return NULL;
	if (!GpuJoinPlannerHasDevice(&use_gpu))
		return NULL;
	scan = create_seqscan_path(root, rel, NULL, workers);
	target = create_empty_pathtarget();
	add_new_columns_to_pathtarget(target, vars);
	scan->pathtarget = set_pathtarget_cost_width(root, target);
	return GpuJoinScanPath(root, rel, scan, use_gpu);
}

/* The remembered GPU join path of relation rel, serial or partial, or NULL */
static CustomPath *
RememberedPath(PlannerInfo *root, RelOptInfo *rel, bool partial)
{
	ListCell   *lc;

	foreach(lc, remembered)
	{
		RememberedJoin *r = lfirst(lc);

		if (r->root == root && r->joinrel == rel && r->path->path.parallel_aware == partial)
			return r->path;
	}
	return NULL;
}

/*
 * The model's device time, in ms, of folding rows matches into groups
 * groups with naggs aggregates by a group-by variant (-1: no key).  Hash:
 * per match and aggregate, more where few groups take every match's
 * atomics; shared memory: per match and aggregate, and each block's words
 * of each group added to the table at the end; sort: per match (sorted by
 * its group, read again), and per run of one group's matches that a
 * thread adds to the table (a thread takes GJ_AGG_SORT_RUN_ITEMS sorted
 * matches: a run ends at its last one or at the next group); sort with
 * the values sorted along: per match and word sorted (its number, its
 * nkeys keys, an argument per aggregate), and its runs as sort's.
 */
static double
GroupByMs(int variant, double rows, int nkeys, int naggs, double groups)
{
	const GpuJoinModel *m = &gpujoin_model;

	groups = Max(groups, 1.0);
	switch (variant)
	{
		case GJ_AGG_HASH:
			return rows * naggs * m->preagg_row_ns *
				(1.0 + m->preagg_contention_groups / groups) / 1e6;
		case GJ_AGG_SHARED:
			return (rows * naggs * m->preagg_shared_row_ns +
					Min(groups, GJ_AGG_SHARED_GROUPS(naggs)) * naggs * m->preagg_flush_ns) / 1e6;
		case GJ_AGG_SORT:
			return (rows * m->preagg_sort_row_ns +
					gj_agg_sort_runs(rows, groups) * naggs * m->preagg_sort_run_ns) / 1e6;
		case GJ_AGG_SORT_TR:
			/* words: the match's number, its keys, its aggregates' values */
			return (rows * (1 + nkeys + naggs) * m->preagg_sort_word_ns +
					gj_agg_sort_runs(rows, groups) * naggs * m->preagg_sort_run_ns) / 1e6;
		default:
			return rows * naggs * m->preagg_row_ns / 1e6;
	}
}

/*
 * The GpuPreAgg path over join (partial: in each process of a parallel
 * plan, on its share of the outer side): the join without its output (no
 * joined row formed for an Aggregate), plus the aggregation on the device
 * and one row per group.  Its parent is the join's relation, whose relids
 * become the plan's custom_relids: EXPLAIN names the relations it reads by
 * them.  custom_private: the join, the groups expected, the variant, the
 * variants considered, the output order (NIL here: SortedPreAggPath) and
 * the HAVING conditions it checks (HavingConditions, or NIL).
 */
static CustomPath *
PreAggPath(RelOptInfo *input_rel, CustomPath *join, PathTarget *partial, int nkeys,
		   int naggs, double groups, List *having)
{
	CustomPath *cpath = makeNode(CustomPath);
	double		rows;
	Cost		emit;
	Cost		device;
	char	   *considered;
	const char *variant;

	/* not a chain's top: its join priced as no chain's either */
	if (!gpujoin_enable_chain_preagg)
		join = GpuJoinPathUnchained(join);
	rows = join->path.rows;
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = input_rel;
	cpath->path.pathtarget = partial;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = join->path.parallel_aware;
	cpath->path.parallel_safe = join->path.parallel_safe;
	cpath->path.parallel_workers = join->path.parallel_workers;
	cpath->path.rows = groups;
	cpath->path.pathkeys = NIL;
	cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	cpath->custom_paths = join->custom_paths;
	GpuJoinSetDisabledNodes(&cpath->path, cpath->custom_paths);
	cpath->methods = &gpujoin_preagg_path_methods;
	emit = (gpujoin_emit_cost + join->path.pathtarget->cost.per_tuple) * rows;
	if (nkeys == 0)
	{
		device = GroupByMs(-1, rows, 0, naggs, groups);
		considered = psprintf("one group (warp sums, one atomic per warp and word) %.3f ms (chosen)",
							  device);
		variant = "one group";
	}
	else
	{
		double		ms[GJ_AGG_NUM_VARIANTS];
		bool		fits = groups <= GJ_AGG_SHARED_GROUPS(naggs);
		int			chosen = GJ_AGG_HASH;

		for (int v = 0; v < GJ_AGG_NUM_VARIANTS; v++)
			ms[v] = GroupByMs(v, rows, nkeys, naggs, groups);
		/* the cheapest; shared memory only where the groups expected fit it */
		if (gpujoin_groupby_variant != GPUJOIN_AUTO)
			chosen = gpujoin_groupby_variant;
		else
			for (int v = 0; v < GJ_AGG_NUM_VARIANTS; v++)
				if (ms[v] < ms[chosen] && (v != GJ_AGG_SHARED || fits))
					chosen = v;
		device = ms[chosen];
		variant = GpuJoinGroupByVariantName(chosen);
		considered = psprintf("hash (device table of exact keys, grown as needed) %.3f ms%s, "
							  "shared memory (per-block words for up to %d groups) %.3f ms%s, "
							  "sort (runs of matches sorted by group) %.3f ms%s, "
							  "sort, values sorted along %.3f ms%s",
							  ms[GJ_AGG_HASH], chosen == GJ_AGG_HASH ? " (chosen)" : "",
							  GJ_AGG_SHARED_GROUPS(naggs), ms[GJ_AGG_SHARED],
							  chosen == GJ_AGG_SHARED ? " (chosen)" :
							  (fits ? "" : " (the groups do not fit)"),
							  ms[GJ_AGG_SORT], chosen == GJ_AGG_SORT ? " (chosen)" : "",
							  ms[GJ_AGG_SORT_TR], chosen == GJ_AGG_SORT_TR ? " (chosen)" : "");
	}
	device *= gpujoin_model.cost_per_ms;
	cpath->path.startup_cost = join->path.total_cost - emit + device;
	/* its numeric columns converted by the deform, not the host */
	if (gpujoin_deform_numeric)
		cpath->path.startup_cost -= Min(GpuJoinDeformedNumericCost(join),
										cpath->path.startup_cost - device);
	cpath->path.total_cost = cpath->path.startup_cost + groups * gpujoin_emit_cost;
	cpath->custom_private = list_make4(join, makeFloat(psprintf("%.1f", groups)),
									   makeString(pstrdup(variant)), makeString(considered));
	cpath->custom_private = lappend(lappend(cpath->custom_private, NIL), having);
	return cpath;
}

/*
 * The order of the group keys PostgreSQL's Finalize GroupAggregate wants
 * (root->group_pathkeys), as the executor sorts by it: for each pathkey
 * the group key it orders (its sortgroupref), descending or not, NULLs
 * first or not, as a flat list of three per pathkey; NIL when a pathkey
 * is not a group key sorted by its type's default B-tree order (the order
 * of the key's words: every device group key is integer-valued).
 */
static List *
GroupOrdering(PlannerInfo *root)
{
	Query	   *parse = root->parse;
	List	   *ordering = NIL;
	ListCell   *lc;

	if (root->group_pathkeys == NIL || !grouping_is_sortable(parse->groupClause))
		return NIL;
	foreach(lc, root->group_pathkeys)
	{
		PathKey    *pk = lfirst_node(PathKey, lc);
		SortGroupClause *found = NULL;
		ListCell   *lc2;

		foreach(lc2, parse->groupClause)
		{
			SortGroupClause *sgc = lfirst_node(SortGroupClause, lc2);
			Expr	   *expr = (Expr *) get_sortgroupclause_expr(sgc, parse->targetList);
			ListCell   *lc3;

			foreach(lc3, pk->pk_eclass->ec_members)
			{
				EquivalenceMember *em = lfirst(lc3);

				if (equal(em->em_expr, expr))
				{
					Oid			opclass = GetDefaultOpClass(exprType((Node *) expr),
															BTREE_AM_OID);

					if (OidIsValid(opclass) &&
						get_opclass_family(opclass) == pk->pk_opfamily)
						found = sgc;
					break;
				}
			}
			if (found != NULL)
				break;
		}
		/* a text key's words are codes, in no collation's order */
		if (found == NULL ||
			GpuJoinDictType(exprType((Node *) get_sortgroupclause_expr(found, parse->targetList))))
			return NIL;
		ordering = lappend(ordering, makeInteger((int) found->tleSortGroupRef));
		ordering = lappend(ordering, makeBoolean(GpuJoinPathKeyDescending(pk)));
		ordering = lappend(ordering, makeBoolean(pk->pk_nulls_first));
	}
	return ordering;
}

/*
 * PostgreSQL's Finalize Aggregate over the partial rows of path; with
 * sorted (path's rows in root->group_pathkeys' order) the Finalize
 * GroupAggregate over path as it is, alone
 */
static void
AddFinalizePaths(PlannerInfo *root, RelOptInfo *output_rel, Path *path, double groups,
				 bool sorted)
{
	Query	   *parse = root->parse;
	AggClauseCosts final_costs;

	MemSet(&final_costs, 0, sizeof(AggClauseCosts));
	get_agg_clause_costs(root, AGGSPLIT_FINAL_DESERIAL, &final_costs);
	if (parse->groupClause == NIL)
		add_path(output_rel, (Path *)
				 create_agg_path(root, output_rel, path, output_rel->reltarget,
								 AGG_PLAIN, AGGSPLIT_FINAL_DESERIAL, NIL,
								 (List *) parse->havingQual, &final_costs, 1.0));
	else
	{
		/* no more groups than partial rows come */
		double		out_groups = Min(output_rel->rows > 0 ? output_rel->rows : groups,
									 path->rows);

		if (!sorted && grouping_is_hashable(parse->groupClause))
			add_path(output_rel, (Path *)
					 create_agg_path(root, output_rel, path, output_rel->reltarget,
									 AGG_HASHED, AGGSPLIT_FINAL_DESERIAL, parse->groupClause,
									 (List *) parse->havingQual, &final_costs, out_groups));
		if (sorted || (grouping_is_sortable(parse->groupClause) && root->group_pathkeys != NIL))
		{
			Path	   *input = sorted ? path :
				(Path *) create_sort_path(root, output_rel, path, root->group_pathkeys, -1.0);

			add_path(output_rel, (Path *)
					 create_agg_path(root, output_rel, input, output_rel->reltarget,
									 AGG_SORTED, AGGSPLIT_FINAL_DESERIAL, parse->groupClause,
									 (List *) parse->havingQual, &final_costs, out_groups));
		}
	}
}

/*
 * The years between the least and the greatest value of a date or
 * timestamp expression that PostgreSQL's statistics have seen (its
 * histogram's bounds and its most common values), each year as the device
 * computes it (gj_expr_date_field), or -1 where it has none or one is
 * infinite
 */
static double
YearsSpanned(PlannerInfo *root, Node *arg)
{
	static const int kinds[] = {STATISTIC_KIND_HISTOGRAM, STATISTIC_KIND_MCV};
	VariableStatData vardata;
	bool		is_date = exprType(arg) == DATEOID;
	int64		lo = PG_INT64_MAX;
	int64		hi = PG_INT64_MIN;
	bool		infinite = false;

	examine_variable(root, arg, 0, &vardata);
	if (HeapTupleIsValid(vardata.statsTuple))
		for (int k = 0; k < lengthof(kinds); k++)
		{
			AttStatsSlot sslot;

			if (!get_attstatsslot(&sslot, vardata.statsTuple, kinds[k], InvalidOid,
								  ATTSTATSSLOT_VALUES))
				continue;
			for (int i = 0; i < sslot.nvalues; i++)
			{
				int64_t		year = is_date ? (int64) DatumGetDateADT(sslot.values[i]) :
					DatumGetTimestamp(sslot.values[i]);

				if (!gj_expr_date_field(GJ_DATE_YEAR,
										is_date ? GJ_DATE_OF_DATE : GJ_DATE_OF_TIMESTAMP, &year))
					infinite = true;
				lo = Min(lo, year);
				hi = Max(hi, year);
			}
			free_attstatsslot(&sslot);
		}
	ReleaseVariableStats(vardata);
	if (infinite || lo > hi)
		return -1.0;
	return (double) (hi - lo + 1);
}

/*
 * The most values a grouping key can take, NULL one of them, where its
 * form says (-1: no bound): a boolean 3; an integer modulo a constant c,
 * 2|c| (its remainders lie in -(|c| - 1) .. |c| - 1); EXTRACT's fields of
 * a date or timestamp: a quarter 5, a month 13, a day of the month 32, of
 * the week 8, of the year 367, a year one more than the years its
 * argument's statistics span (YearsSpanned).  PostgreSQL's
 * estimate_num_groups knows none of them (it takes "k % 10" to have as
 * many values as k, and an expression without statistics 200), and a
 * GpuPreAgg's partial rows priced as a join's rows lost to a plan that
 * forms every joined row (10^8 rows a side, 10 groups; TPC-H Q9's groups
 * by nation and year, 1,715 where there are 175).
 */
static double
KeyValueBound(PlannerInfo *root, Node *key)
{
	List	   *args = NIL;
	Oid			funcid = InvalidOid;
	Node	   *arg;
	Const	   *c;
	int64		divisor;

	while (IsA(key, RelabelType))
		key = (Node *) ((RelabelType *) key)->arg;
	if (exprType(key) == BOOLOID)
		return 3.0;
	switch (GpuJoinExtractField(key, &arg))
	{
		case GJ_DATE_YEAR:
			{
				double		years = YearsSpanned(root, arg);

				return years < 0.0 ? -1.0 : years + 1.0;
			}
		case GJ_DATE_QUARTER:
			return 5.0;
		case GJ_DATE_MONTH:
			return 13.0;
		case GJ_DATE_DAY:
			return 32.0;
		case GJ_DATE_DOW:
		case GJ_DATE_ISODOW:
			return 8.0;
		case GJ_DATE_DOY:
			return 367.0;
		default:
			break;
	}
	if (IsA(key, OpExpr))
	{
		funcid = ((OpExpr *) key)->opfuncid;
		args = ((OpExpr *) key)->args;
	}
	else if (IsA(key, FuncExpr))
	{
		funcid = ((FuncExpr *) key)->funcid;
		args = ((FuncExpr *) key)->args;
	}
	if (list_length(args) != 2 || !IsA(lsecond(args), Const))
		return -1.0;
	c = lsecond_node(Const, args);
	switch (funcid)
	{
		case F_INT2MOD:
		case F_MOD_INT2_INT2:
			divisor = c->constisnull ? 0 : DatumGetInt16(c->constvalue);
			break;
		case F_INT4MOD:
		case F_MOD_INT4_INT4:
			divisor = c->constisnull ? 0 : DatumGetInt32(c->constvalue);
			break;
		case F_INT8MOD:
		case F_MOD_INT8_INT8:
			divisor = c->constisnull ? 0 : DatumGetInt64(c->constvalue);
			break;
		default:
			return -1.0;
	}
	/* NULL (a NULL or zero divisor: NULL or an error for every row) */
	return Max(2.0 * fabs((double) divisor), 1.0);
}

/*
 * The groups of keys over rows: PostgreSQL's estimate, as for its own
 * grouping, no more than the keys' values can make: the product of each
 * key's bound (KeyValueBound), or where its form gives none, of
 * PostgreSQL's estimate of its values alone
 */
static double
EstimateGroups(PlannerInfo *root, List *keys, double rows)
{
	double		groups;
	double		bound = 1.0;
	bool		bounded = false;
	ListCell   *lc;

	if (keys == NIL)
		return 1.0;
	groups = estimate_num_groups(root, keys, rows, NULL, NULL);
	foreach(lc, keys)
	{
		double		b = KeyValueBound(root, lfirst(lc));

		if (b >= 0.0)
			bounded = true;
		else
			b = estimate_num_groups(root, list_make1(lfirst(lc)), rows, NULL, NULL);
		bound *= b;
	}
	return bounded ? Max(Min(groups, bound), 1.0) : groups;
}

/*
 * A GpuPreAgg path whose groups come out in the order of the grouping's
 * pathkeys (GroupOrdering gave ordering): sorted where they are at the end
 * (the kernels' agg_result: per sort column a radix sort of the groups by
 * its 64-bit words and one by its NULL flags), priced as the SORT
 * group-by variant prices its radix sort of 32-bit hashes,
 * gpujoin.preagg_sort_row_ns per element and 32 bits
 */
static CustomPath *
SortedPreAggPath(PlannerInfo *root, RelOptInfo *input_rel, CustomPath *join,
				 PathTarget *partial, int nkeys, int naggs, double groups, List *ordering,
				 List *having)
{
	CustomPath *sorted = PreAggPath(input_rel, join, partial, nkeys, naggs, groups, having);
	int			columns = list_length(ordering) / 3;
	Cost		sort = groups * columns * (64.0 + 8.0) / 32.0 * gpujoin_model.preagg_sort_row_ns /
		1e6 * gpujoin_model.cost_per_ms;

	sorted->path.pathkeys = root->group_pathkeys;
	sorted->path.startup_cost += sort;
	sorted->path.total_cost += sort;
	list_nth_cell(sorted->custom_private, 4)->ptr_value = ordering;
	return sorted;
}

/*
 * Whether var, a text column, is short enough on average for the heap
 * deform to make words of most of its values (gj_text_word: at most
 * GJ_TEXT_WORD_MAX_BYTES bytes, after a 1-byte header)
 */
static bool
ShortTextColumn(PlannerInfo *root, Var *var)
{
	RangeTblEntry *rte = planner_rt_fetch(var->varno, root);
	int32		width;

	if (rte->rtekind != RTE_RELATION || var->varattno <= 0)
		return false;
	width = get_attavgwidth(rte->relid, var->varattno);
	return width > 0 && width <= 1 + GJ_TEXT_WORD_MAX_BYTES;
}

/*
 * Text keys are coded on the host as their side's rows load (exec_batch.c,
 * GpuJoinDict): a hash and a comparison per row of that side and key.  A
 * side read as heap pages has the deform make words of the short values
 * on the device (exec_heap.c), the host coding only the longer ones: a
 * short column of such a side costs nothing here.
 */
static void
ChargeTextKeys(PlannerInfo *root, CustomPath *cpath, List *keys)
{
	CustomPath *join = linitial(cpath->custom_private);
	Path	   *outer = linitial(cpath->custom_paths);
	Path	   *inner = list_length(cpath->custom_paths) > 1 ? lsecond(cpath->custom_paths) : NULL;
	bool		outer_heap = GpuJoinPathHeapSide(root, join, true) != 0;
	bool		inner_heap = inner != NULL && GpuJoinPathHeapSide(root, join, false) != 0;
	ListCell   *lc;
	Cost		cost = 0.0;

	foreach(lc, keys)
	{
		Var		   *var = lfirst(lc);
		bool		of_inner;

		if (!GpuJoinDictType(exprType((Node *) var)))
			continue;
		of_inner = inner != NULL && IsA(var, Var) &&
			bms_is_member(var->varno, inner->parent->relids);
		if ((of_inner ? inner_heap : outer_heap) && IsA(var, Var) && ShortTextColumn(root, var))
			continue;
		cost += 2.0 * cpu_operator_cost * (of_inner ? inner->rows : outer->rows);
	}
	cpath->path.startup_cost += cost;
	cpath->path.total_cost += cost;
}

/*
 * The conditions of the HAVING clause that a serial GpuPreAgg checks on
 * its groups before it emits them, where they are whole (each group
 * folded once, in one table: exec_agg.c's HavingKeeps): a count, a sum
 * of integers or of a numeric of declared scale, or the min or max of an
 * integer, a date or such a numeric, compared (<, <=, =, >=, >) with a
 * constant of its type, which a group that fails does not pass the
 * Finalize Aggregate's HAVING either.  Each a list: the aggregate's
 * position among the partial target's Aggrefs (the node's items), the
 * comparison's B-tree strategy with the aggregate on the left, and the
 * constant.  The Finalize Aggregate keeps the whole clause.  TPC-H's Q18
 * folds 1.5 million groups at SF 1 of which 28 pass.  None with
 * gpujoin.enable_preagg_having off.
 */
static List *
HavingConditions(Query *parse, PathTarget *partial)
{
	List	   *conditions = NIL;
	Oid			numeric_family = get_opclass_family(GetDefaultOpClass(NUMERICOID, BTREE_AM_OID));
	Oid			date_family = get_opclass_family(GetDefaultOpClass(DATEOID, BTREE_AM_OID));
	ListCell   *lc;

	/*
	 * with no GROUP BY the Finalize Aggregate makes its one row of no
	 * input too (a count of 0): the group must reach it
	 */
	if (!gpujoin_enable_preagg_having || parse->groupClause == NIL)
		return NIL;
	foreach(lc, (List *) parse->havingQual)
	{
		OpExpr	   *op = lfirst(lc);
		Aggref	   *aggref;
		Const	   *bound;
		bool		commuted;
		Oid			family;
		int			strategy;
		int			index = 0;
		int			found = -1;
		ListCell   *lc2;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2)
			continue;
		commuted = IsA(linitial(op->args), Const);
		aggref = (Aggref *) (commuted ? lsecond(op->args) : linitial(op->args));
		bound = (Const *) (commuted ? linitial(op->args) : lsecond(op->args));
		if (!IsA(aggref, Aggref) || !IsA(bound, Const) || bound->constisnull ||
			aggref->aggdistinct != NIL || aggref->aggorder != NIL)
			continue;
		switch (aggref->aggfnoid)
		{
			case F_COUNT_:
			case F_COUNT_ANY:
			case F_SUM_INT2:
			case F_SUM_INT4:
			case F_MIN_INT2:
			case F_MIN_INT4:
			case F_MIN_INT8:
			case F_MAX_INT2:
			case F_MAX_INT4:
			case F_MAX_INT8:
				family = INTEGER_BTREE_FAM_OID;
				break;
			case F_MIN_DATE:
			case F_MAX_DATE:
				family = date_family;
				break;
			case F_SUM_INT8:
				family = numeric_family;
				break;
			case F_SUM_NUMERIC:
			case F_MIN_NUMERIC:
			case F_MAX_NUMERIC:
				/* at the argument's declared scale, exact */
				if (GpuJoinNumericExprScale((Node *) linitial_node(TargetEntry, aggref->args)->expr) < 0)
					continue;
				family = numeric_family;
				break;
			default:
				continue;
		}
		if ((family == numeric_family) != (bound->consttype == NUMERICOID) ||
			(family == date_family) != (bound->consttype == DATEOID) ||
			(family == INTEGER_BTREE_FAM_OID && bound->consttype != INT2OID &&
			 bound->consttype != INT4OID && bound->consttype != INT8OID))
			continue;
		strategy = get_op_opfamily_strategy(op->opno, family);
		if (strategy == 0)
			continue;
		if (commuted)
			strategy = BTMaxStrategyNumber + 1 - strategy;	/* < and >, <= and >= */
		/* the node's item: the partial target's Aggref of the same aggregate */
		foreach(lc2, partial->exprs)
		{
			Aggref	   *item = lfirst(lc2);

			if (!IsA(item, Aggref))
				continue;
			if (item->aggfnoid == aggref->aggfnoid && equal(item->args, aggref->args) &&
				equal(item->aggfilter, aggref->aggfilter))
			{
				found = index;
				break;
			}
			index++;
		}
		if (found >= 0)
			conditions = lappend(conditions, list_make3(makeInteger(found),
														makeInteger(strategy),
														copyObject(bound)));
	}
	return conditions;
}

/*
 * create_upper_paths_hook: offer the GpuPreAgg plans for a grouping whose
 * input is a join we have a GPU path for: the serial one, and in a parallel
 * plan one per process under a Gather (each process folds its share of the
 * outer side; Finalize Aggregate combines their rows of a group); where the
 * grouping can be sorted, each also with its groups in key order, under
 * Finalize GroupAggregate (through a Gather Merge in a parallel plan)
 */
static void
GpuJoinUpperPaths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
				  RelOptInfo *output_rel, void *extra)
{
	Query	   *parse = root->parse;
	GroupPathExtraData *gextra = extra;
	CustomPath *join;
	CustomPath *partial_join;
	PathTarget *partial;
	List	   *keys;
	List	   *aggrefs;
	List	   *join_tlist;
	ListCell   *lc;
	double		groups;
	int			naggs;
	int			nquery;

	if (prev_upper_paths_hook)
		prev_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (stage != UPPERREL_GROUP_AGG || !gpujoin_enabled || !gpujoin_enable_preagg ||
		gextra == NULL)
		return;
	if (!parse->hasAggs || parse->groupingSets != NIL || root->hasNonPartialAggs ||
		root->hasNonSerialAggs || gextra->patype != PARTITIONWISE_AGGREGATE_NONE)
		return;
	join = RememberedPath(root, input_rel, false);
	partial_join = output_rel->consider_parallel ? RememberedPath(root, input_rel, true) : NULL;
	/* no join: one relation, read by a SCAN */
	if (join == NULL && partial_join == NULL)
	{
		join = ScanAggPath(root, input_rel, false);
		partial_join = output_rel->consider_parallel && input_rel->consider_parallel ?
			ScanAggPath(root, input_rel, true) : NULL;
	}
	if (join == NULL && partial_join == NULL)
		return;

	/* every key and aggregate on the device */
	join_tlist = (join ? join : partial_join)->path.pathtarget->exprs;
	partial = PartialTarget(root, output_rel->reltarget, (Node *) parse->havingQual, &keys,
							&nquery, &aggrefs);
	if (partial == NULL || aggrefs == NIL || list_length(keys) > GJ_AGG_MAX_KEYS)
		return;
	/* a numeric sum also counts its NaNs (exec_agg.c) */
	naggs = list_length(aggrefs);
	foreach(lc, aggrefs)
		if (GpuJoinAggFuncOf(lfirst_node(Aggref, lc)->aggfnoid) == GPUJOIN_AGG_SUM_NUMERIC)
			naggs++;
	if (naggs > GJ_AGG_MAX_AGGS)
		return;
	foreach(lc, keys)
		if (!GpuJoinGroupKeySupported(lfirst(lc), join_tlist))
			return;
	foreach(lc, aggrefs)
		if (!GpuJoinAggSupported(lfirst(lc), join_tlist))
			return;

	if (join != NULL)
	{
		List	   *ordering = GroupOrdering(root);
		List	   *having = HavingConditions(parse, partial);
		CustomPath *cpath;

		groups = EstimateGroups(root, list_copy_head(keys, nquery), join->path.rows);
		cpath = PreAggPath(input_rel, join, partial, list_length(keys), naggs, groups, having);
		ChargeTextKeys(root, cpath, keys);
		AddFinalizePaths(root, output_rel, &cpath->path, groups, false);
		if (ordering != NIL)
			AddFinalizePaths(root, output_rel,
							 &SortedPreAggPath(root, input_rel, join, partial, list_length(keys),
											   naggs, groups, ordering, having)->path,
							 groups, true);
	}
	if (partial_join != NULL)
	{
		List	   *ordering = GroupOrdering(root);
		CustomPath *cpath;
		double		processes = GpuJoinParallelDivisor(&partial_join->path);
		double		total;
		Path	   *gather;

		/* each process may meet every group */
		groups = EstimateGroups(root, list_copy_head(keys, nquery), partial_join->path.rows);
		cpath = PreAggPath(input_rel, partial_join, partial, list_length(keys), naggs, groups,
						   NIL);
		ChargeTextKeys(root, cpath, keys);
		total = groups * processes;
		gather = (Path *) create_gather_path(root, input_rel, &cpath->path, partial, NULL, &total);
		AddFinalizePaths(root, output_rel, gather, groups, false);

		/* each process's groups in key order, merged by a Gather Merge */
		if (ordering != NIL)
		{
			cpath = SortedPreAggPath(root, input_rel, partial_join, partial, list_length(keys),
									 naggs, groups, ordering, NIL);
			total = groups * processes;
			gather = (Path *) create_gather_merge_path(root, input_rel, &cpath->path, partial,
													   root->group_pathkeys, NULL, &total);
			AddFinalizePaths(root, output_rel, gather, groups, true);
		}
	}
}

/*
 * PlanCustomPath callback: the join's CustomScan (PlanGpuJoinPath), in
 * aggregation mode: its targetlist the partial target; its scan tuple the
 * join's columns, then each non-Var group key and each partial Aggref,
 * which setrefs.c matches the targetlist's (and the Finalize Aggregate's)
 * against; custom_private ends with a list: the groups expected, the
 * variant, the number of join columns, the variants considered, the
 * output order (GroupOrdering's list, or NIL), and in a serial plan the
 * HAVING conditions checked on whole groups (HavingConditions)
 */
static Plan *
PlanGpuPreAggPath(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path, List *tlist,
				  List *clauses, List *custom_plans)
{
	CustomPath *join = linitial(best_path->custom_private);
	CustomScan *cscan;
	int			resno;
	int			num_join_cols;
	ListCell   *lc;

	cscan = (CustomScan *) GpuJoinPlanJoin(root, join->path.parent, join, tlist, custom_plans);
	resno = list_length(cscan->custom_scan_tlist);
	num_join_cols = resno;
	foreach(lc, tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (IsA(tle->expr, Var))
			continue;			/* a join column already */
		cscan->custom_scan_tlist = lappend(cscan->custom_scan_tlist,
										   makeTargetEntry(copyObject(tle->expr), ++resno,
														   NULL, false));
	}
	cscan->custom_private = lappend(cscan->custom_private,
									lappend(list_make5(lsecond(best_path->custom_private),
													   lthird(best_path->custom_private),
													   makeInteger(num_join_cols),
													   lfourth(best_path->custom_private),
													   list_nth(best_path->custom_private, 4)),
											list_nth(best_path->custom_private, 5)));
	cscan->methods = &gpujoin_preagg_scan_methods;
	return &cscan->scan.plan;
}

/* Install the hooks, chaining any loaded before us */
void
GpuJoinInitPlannerAgg(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = GpuJoinPlanner;
	prev_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = GpuJoinUpperPaths;
}
