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
 * The plan: a CustomScan whose custom_plans are [outer, inner], whose
 * custom_scan_tlist is the outer child's targetlist followed by the inner
 * child's, and whose targetlist and custom_exprs setrefs.c rewrites into
 * references to that scan tuple (INDEX_VAR).  The executor fills the scan
 * tuple from the two sides' column batches (exec*.c).
 *
 * Parallel plans: a partial GPU join path (for a Gather above it) runs the
 * whole join in every process, the leader's and each worker's, on that
 * process's part of a partial outer path (a Parallel Seq Scan hands out the
 * pages) and all of the inner side, as PostgreSQL's hash join does without
 * Parallel Hash; so not for right and full joins.
 *
 * The planner side is in three files (planner.h declares what they share):
 *	planner.c			the hook, the paths, the plan
 *	planner_clauses.c	which clauses the device evaluates, which are
 *						rechecked, and which joins get no GPU path
 *	planner_cost.c		what a GPU join path costs, and its variant
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
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "gpujoin.h"
#include "planner.h"
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
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

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
	GpuJoinPathOuterByTid,		/* Boolean: an outer heap side's host columns
								 * fetched by tid for each match */
	GpuJoinPathInnerByTid,		/* Boolean: likewise the inner side's, from a
								 * parallel join's shared build */
	GpuJoinPathChainSaved,		/* Float: what the price took off as the top of
								 * a chain with the GPU join below
								 * (ChainSaving); 0 where it is none */
	GpuJoinPathDeformedNumerics,	/* Float: what the price charged its heap
									 * sides' numerics on the host, which a
									 * GpuPreAgg's deform converts */
} GpuJoinPathPrivateIndex;

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
 * The rows whose key of a level a chain encodes on the host (exec_chain.c's
 * extra key columns): those of the side below that holds the key's column,
 * the lowest outer side for a star, a lower level's inner side for a
 * snowflake.  Every row of that side is encoded, not only those that reach
 * the level, so a selective join below makes the encoding cost more than
 * the rows it spares.
 */
static double
ChainKeyRows(Path *lower, Var *key)
{
	Path	   *p = lower;

	while (IsA(p, CustomPath) && ((CustomPath *) p)->methods == &gpujoin_hash_path_methods)
	{
		Path	   *inner = lsecond(((CustomPath *) p)->custom_paths);

		if (bms_is_member(key->varno, inner->parent->relids))
			return inner->rows;
		p = linitial(((CustomPath *) p)->custom_paths);
	}
	return p->rows;
}

/*
 * What the host's encoding of one row's key for a chain level costs: none
 * for an int4 or int8 column keyed against an integer (int2, int4, int8:
 * each side keeps its own type's coding) or a date against a date, which
 * the kernels pack from the column the rounds carry, for the rows that
 * reach the level (exec_chain.c's IntKeyPack; until 2026-12-01 the host
 * packed it for every row of the side, about 2 ns a row on the
 * development machine); any other key goes through a value's extraction
 */
static Cost
ChainKeyCost(OpExpr *op, Node *outer_arg)
{
	Oid			type = getBaseType(exprType(outer_arg));
	Oid			left = getBaseType(exprType(linitial(op->args)));
	Oid			right = getBaseType(exprType(lsecond(op->args)));

#define CHAIN_INTEGER(t) ((t) == INT2OID || (t) == INT4OID || (t) == INT8OID)
	if (((type == INT4OID || type == INT8OID) && CHAIN_INTEGER(left) && CHAIN_INTEGER(right)) ||
		(type == DATEOID && left == DATEOID && right == DATEOID))
		return 0.0;
#undef CHAIN_INTEGER
	return gpujoin_extract_cost;
}

/*
 * What running this join as the top of a chain with the GPU hash join
 * below it saves (src/exec_chain.c), or 0 when the two cannot be one
 * chain: the lower join's emission of its rows and this one's copying of
 * them into a batch, and where the joins are priced as the GPU's (as_gpu)
 * the bus that their device prices charge for those rows, which stay on
 * the device (GpuJoinChainBusMs), less the encoding of this join's key on
 * the host for each row of the side that holds it (ChainKeyRows,
 * ChainKeyCost).  Not
 * positive: the two stay apart (the plan says so, GpuJoinPrivateChainBelow,
 * and the executor chains only where it does).
 *
 * A partial chain (both joins partial, gpujoin.enable_parallel_chain) runs
 * whole in every process of the parallel plan, each on its share of the
 * lowest outer side; through the service each level is built once for
 * all (exec_chain.c), as the joins' prices have it (host columns fetched
 * by tid where they priced them so).  The lowest level's inner side is
 * read in shares as its price has it, but a level above it by one process
 * alone (the builder of the one below, while the others wait for that
 * build): what this join's price saved by the shares (unshared) is
 * charged back.
 */
static Cost
ChainSaving(Path *outer_path, JoinType jointype, GpuJoinStrategy strategy, bool partial,
			GpuJoinClauses *clauses, GjVariant variant, bool partitioned, Cost unshared,
			bool as_gpu)
{
	CustomPath *lower = (CustomPath *) outer_path;
	List	   *priv;
	OpExpr	   *op;
	Node	   *outer_arg;
	GjVariant	lower_variant;
	JoinType	lower_type;

	if (!gpujoin_enable_chain || strategy != GPUJOIN_STRATEGY_HASH || jointype != JOIN_INNER ||
		partitioned || (variant != GJ_VARIANT_NPHJ && variant != GJ_VARIANT_PHJ) ||
		list_length(clauses->key_clauses) != 1 || !IsA(outer_path, CustomPath) ||
		lower->methods != &gpujoin_hash_path_methods || outer_path->parallel_aware != partial ||
		(partial && !gpujoin_enable_parallel_chain))
		return 0.0;
	op = linitial_node(OpExpr, clauses->key_clauses);
	outer_arg = linitial_int(clauses->outer_is_left) ? linitial(op->args) : lsecond(op->args);
	while (IsA(outer_arg, RelabelType))
		outer_arg = (Node *) ((RelabelType *) outer_arg)->arg;
	priv = lower->custom_private;
	lower_variant = (GjVariant) intVal(list_nth(priv, GpuJoinPathVariant));
	lower_type = (JoinType) intVal(list_nth(priv, GpuJoinPathJoinType));
	/*
	 * below the top, a semi, anti or left join of NPHJ too (its kernels
	 * keep, drop or NULL-extend each row)
	 */
	if (!IsA(outer_arg, Var) ||
		(lower_type != JOIN_INNER &&
		 ((lower_type != JOIN_SEMI && lower_type != JOIN_ANTI && lower_type != JOIN_LEFT) ||
		  lower_variant != GJ_VARIANT_NPHJ)) ||
		list_nth(priv, GpuJoinPathJoinQuals) != NIL ||
		list_nth(priv, GpuJoinPathOtherQuals) != NIL ||
		boolVal(list_nth(priv, GpuJoinPathPartitioned)) ||
		(lower_variant != GJ_VARIANT_NPHJ && lower_variant != GJ_VARIANT_PHJ))
		return 0.0;
	return (gpujoin_emit_cost + outer_path->pathtarget->cost.per_tuple) * outer_path->rows +
		outer_path->rows * (list_length(outer_path->pathtarget->exprs) + 1) * gpujoin_extract_cost +
		(as_gpu ? GpuJoinChainBusMs(outer_path) * gpujoin_model.cost_per_ms : 0.0) -
		ChainKeyRows(outer_path, (Var *) outer_arg) * ChainKeyCost(op, outer_arg) - unshared;
}

/*
 * Does path hold a parallel GPU node run by the processes that run path
 * (under no Gather of its own)?  Then they opened the GPU for it, or
 * became clients of the gpujoin service, before any GPU node above it
 * runs: such a node's price has no worker setup (planner_cost.c).
 */
bool
GpuJoinPathHoldsParallelGpu(Path *path)
{
	check_stack_depth();
	switch (nodeTag(path))
	{
		case T_CustomPath:
			{
				CustomPath *cpath = (CustomPath *) path;
				ListCell   *lc;

				if (path->parallel_aware && cpath->methods->PlanCustomPath == PlanGpuJoinPath)
					return true;
				foreach(lc, cpath->custom_paths)
					if (GpuJoinPathHoldsParallelGpu(lfirst(lc)))
						return true;
				return false;
			}
		case T_NestPath:
		case T_MergePath:
		case T_HashPath:
			return GpuJoinPathHoldsParallelGpu(((JoinPath *) path)->outerjoinpath) ||
				GpuJoinPathHoldsParallelGpu(((JoinPath *) path)->innerjoinpath);
		case T_ProjectionPath:
			return GpuJoinPathHoldsParallelGpu(((ProjectionPath *) path)->subpath);
		case T_MaterialPath:
			return GpuJoinPathHoldsParallelGpu(((MaterialPath *) path)->subpath);
		default:
			return false;
	}
}

/*
 * A GPU hash join path as a GpuPreAgg runs it where the GpuPreAgg is no
 * chain's top (gpujoin.enable_chain_preagg off, planner_agg.c): a node of
 * its own over the rows of the GPU join below, so what its price took off
 * as the top of a chain (ChainSaving) is paid back, and the plan says it
 * is none.  The path itself where it was priced as no chain; else a copy.
 */
CustomPath *
GpuJoinPathUnchained(CustomPath *path)
{
	Cost		saved = floatVal(list_nth(path->custom_private, GpuJoinPathChainSaved));
	CustomPath *copy;
	List	   *priv;

	if (saved <= 0.0)
		return path;
	copy = makeNode(CustomPath);
	memcpy(copy, path, sizeof(CustomPath));
	copy->path.total_cost += saved;
	priv = list_copy(path->custom_private);
	list_nth_cell(priv, GpuJoinPathConsidered)->ptr_value =
		makeString(psprintf("%s; paid back: the GpuPreAgg runs this join on its own",
							strVal(list_nth(priv, GpuJoinPathConsidered))));
	list_nth_cell(priv, GpuJoinPathChainSaved)->ptr_value = makeFloat(pstrdup("0"));
	copy->custom_private = priv;
	return copy;
}

/* A GPU join path's custom_private, in GpuJoinPathPrivateIndex's order */
static List *
PathPrivate(GpuJoinClauses *clauses, GpuJoinStrategy strategy, GjVariant variant,
			GjMaterialize materialize, JoinType jointype, char *considered,
			bool partitioned, bool outer_by_tid, bool inner_by_tid, Cost chain_saved,
			Cost deformed_numerics)
{
	List	   *priv = list_make5(clauses->key_clauses,
								  clauses->outer_is_left,
								  clauses->key_bits,
								  makeBoolean(clauses->exact),
								  clauses->join_quals);

	priv = lappend(priv, makeInteger(strategy));
	priv = lappend(priv, makeInteger(variant));
	priv = lappend(priv, makeInteger(materialize));
	priv = lappend(priv, clauses->theta_ops);
	priv = lappend(priv, makeInteger(jointype));
	priv = lappend(priv, clauses->other_quals);
	priv = lappend(priv, clauses->codings);
	priv = lappend(priv, makeString(considered));
	priv = lappend(priv, makeBoolean(partitioned));
	priv = lappend(priv, makeBoolean(outer_by_tid));
	priv = lappend(priv, makeBoolean(inner_by_tid));
	priv = lappend(priv, makeFloat(psprintf("%g", chain_saved)));
	priv = lappend(priv, makeFloat(psprintf("%g", deformed_numerics)));
	return priv;
}

/*
 * What a GPU join path's price charged its heap sides for their numeric
 * columns of declared scale on the host, which the deform converts for a
 * GpuPreAgg over it (planner_agg.c takes it off)
 */
Cost
GpuJoinDeformedNumericCost(const CustomPath *path)
{
	return floatVal(list_nth(path->custom_private, GpuJoinPathDeformedNumerics));
}

/*
 * Add a GPU join path of the given strategy over these two paths, if it
 * can run
 */
static void
AddGpuJoinPath(PlannerInfo *root, RelOptInfo *joinrel, Path *outer_path, Path *inner_path,
			   JoinType jointype, JoinPathExtraData *extra, GpuJoinClauses *clauses,
			   bool use_gpu, GpuJoinStrategy strategy, GjVariant theta_variant, bool partial)
{
	CustomPath *cpath;
	List	   *pathkeys = NIL;
	GjVariant	variant;
	GjMaterialize materialize;
	char	   *considered;
	bool		partitioned;
	bool		outer_by_tid;
	bool		shared_build;
	bool		inner_by_tid;
	Cost		unshared;
	Cost		deformed_numerics;
	Cost		saved;

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
		 * (exec_emit.c), but unmatched inner rows (RIGHT, FULL) would come out
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
		/* parallel-aware only to gather the processes' counters (exec_parallel.c) */
		cpath->path.parallel_aware = true;
		cpath->path.parallel_safe = true;
		cpath->path.parallel_workers = outer_path->parallel_workers;
		cpath->path.rows = clamp_row_est(joinrel->rows / GpuJoinParallelDivisor(outer_path));
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
	GpuJoinSetDisabledNodes(&cpath->path, cpath->custom_paths);
	cpath->methods = (strategy == GPUJOIN_STRATEGY_MERGE) ? &gpujoin_merge_path_methods :
		(strategy == GPUJOIN_STRATEGY_THETA) ? &gpujoin_theta_path_methods :
		&gpujoin_hash_path_methods;

	variant = theta_variant;	/* chosen by the caller for theta joins */
	GpuJoinCostPath(root, cpath, outer_path, inner_path, clauses, extra, use_gpu,
				strategy, &variant, &materialize, &considered, &partitioned,
				&outer_by_tid, &shared_build, &unshared, &inner_by_tid,
				&deformed_numerics);
	if (partial && shared_build)
		considered = psprintf("%s; run by %d processes on one build of the inner rows (gpujoin service)%s",
							  considered, GpuJoinParallelProcesses(&cpath->path),
							  inner_by_tid ? ", its host columns fetched per match" : "");
	else if (partial)
		considered = psprintf("%s; run by each of %d processes on all inner rows%s",
							  considered, GpuJoinParallelProcesses(&cpath->path),
							  clauses->fill_inner ?
							  ", the last to finish emitting those none matched" : "");
	/* the top of a chain with the GPU hash join below: no rows between them */
	saved = ChainSaving(outer_path, jointype, strategy, partial, clauses, variant, partitioned,
						unshared, use_gpu || gpujoin_cost_as_gpu);
	if (saved > 0.0)
	{
		saved = Min(saved, cpath->path.total_cost - cpath->path.startup_cost);
		cpath->path.total_cost -= saved;
		considered = psprintf("%s; a chain with the GPU join below (%.2f saved%s)",
							  considered, saved,
							  !partial ? "" : shared_build ?
							  ", its build shared, its inner side read by one process" :
							  ", each process building its table");
	}
	/* a merge join emitting unmatched outer rows sorts them on the host */
	if (strategy == GPUJOIN_STRATEGY_MERGE &&
		(jointype == JOIN_LEFT || jointype == JOIN_ANTI))
	{
		Cost		sort = 2.0 * cpu_operator_cost * outer_path->rows *
			log2(Max(outer_path->rows, 2.0));

		cpath->path.startup_cost += sort;
		cpath->path.total_cost += sort;
	}

	cpath->custom_private = PathPrivate(clauses, strategy, variant, materialize, jointype,
										considered, partitioned, outer_by_tid, inner_by_tid,
										Max(saved, 0.0), deformed_numerics);

	/* a copy for an aggregation above (before add_path may free it) */
	if (strategy == GPUJOIN_STRATEGY_HASH)
		GpuJoinRememberAggJoin(root, joinrel, cpath, jointype, clauses);

	if (partial)
		add_partial_path(joinrel, &cpath->path);
	else
		add_path(joinrel, &cpath->path);
}

/*
 * A GPU "join" of one relation with nothing (GJ_VARIANT_SCAN: every row of
 * scan_path one match, no inner side, no key), for a GpuPreAgg over that
 * relation (planner_agg.c): a CustomPath shaped as AddGpuJoinPath's, whose
 * only child is scan_path.  Partial where scan_path is (each process reads
 * its share of the relation).  Never added to a relation: only a GpuPreAgg
 * plans it.
 */
CustomPath *
GpuJoinScanPath(PlannerInfo *root, RelOptInfo *rel, Path *scan_path, bool use_gpu)
{
	CustomPath *cpath = makeNode(CustomPath);
	GpuJoinClauses clauses;
	char	   *considered;
	Cost		deformed_numerics = 0.0;

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = rel;
	cpath->path.pathtarget = scan_path->pathtarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = scan_path->parallel_aware;
	cpath->path.parallel_safe = scan_path->parallel_aware;
	cpath->path.parallel_workers = scan_path->parallel_workers;
	cpath->path.rows = scan_path->rows;
	cpath->path.pathkeys = NIL;
	cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	cpath->custom_paths = list_make1(scan_path);
	GpuJoinSetDisabledNodes(&cpath->path, cpath->custom_paths);
	cpath->methods = &gpujoin_hash_path_methods;
	GpuJoinCostScanPath(root, cpath, scan_path, use_gpu, &considered, &deformed_numerics);

	/* no key clause: "exact", nothing to recheck */
	memset(&clauses, 0, sizeof(clauses));
	clauses.exact = true;
	cpath->custom_private = PathPrivate(&clauses, GPUJOIN_STRATEGY_HASH, GJ_VARIANT_SCAN,
										GJ_MATERIALIZE_GFUR, JOIN_INNER, considered,
										false, false, false, 0.0, deformed_numerics);
	return cpath;
}

/*
 * A plain Seq Scan of rel, for a side the join could read as heap pages
 * when rel's cheapest path is something else (NULL when there is no such
 * side, or the cheapest path is that scan already).  Under a join the
 * pages replace the scan, so its cost is the join's own (HeapSideCost),
 * and a Gather over a Parallel Seq Scan, cheaper as a child, must not hide
 * it: without parallel workers allowed, PostgreSQL keeps the Seq Scan; with
 * them, add_path drops it for the Gather, and a serial join reading the
 * pages would never be offered.
 */
static Path *
HeapScanCandidate(PlannerInfo *root, RelOptInfo *rel, Path *cheapest, GpuJoinStrategy strategy,
				  GpuJoinClauses *clauses, bool outer)
{
	RangeTblEntry *rte;
	Path	   *scan = NULL;
	ListCell   *lc;

	if (cheapest == NULL || cheapest->pathtype == T_SeqScan || rel->rtekind != RTE_RELATION ||
		(rel->reloptkind != RELOPT_BASEREL && rel->reloptkind != RELOPT_OTHER_MEMBER_REL))
		return NULL;
	rte = planner_rt_fetch(rel->relid, root);
	if (rte->inh || rte->tablesample != NULL ||
		(rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW))
		return NULL;
	foreach(lc, rel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);

		if (path->pathtype == T_SeqScan && path->param_info == NULL && !path->parallel_aware)
			scan = path;
	}
	if (scan == NULL)
		scan = create_seqscan_path(root, rel, NULL, 0);
	if (!GpuJoinHeapSide(root, scan, strategy, clauses->key_clauses, clauses->outer_is_left,
						 outer))
		return NULL;
	return scan;
}

/*
 * Add GPU join paths of the given strategy for this (outer, inner) split:
 * over each side's cheapest path, and over a side's Seq Scan too where the
 * join would read it as heap pages (HeapScanCandidate); add_path keeps the
 * cheapest
 */
static void
TryGpuJoinPath(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
			   RelOptInfo *innerrel, JoinType jointype, JoinPathExtraData *extra,
			   GpuJoinClauses *clauses, bool use_gpu, GpuJoinStrategy strategy,
			   GjVariant theta_variant, bool partial)
{
	Path	   *outer_paths[2] = {outerrel->cheapest_total_path, NULL};
	Path	   *inner_paths[2] = {innerrel->cheapest_total_path, NULL};

	/*
	 * A partial path, for a Gather above it: every process joins its part of
	 * a partial outer path against the whole of a parallel-safe inner one
	 */
	if (partial)
	{
		outer_paths[0] = linitial(outerrel->partial_pathlist);
		inner_paths[0] = get_cheapest_parallel_safe_total_inner(innerrel->pathlist);
	}
	else
		outer_paths[1] = HeapScanCandidate(root, outerrel, outer_paths[0], strategy,
										   clauses, true);
	inner_paths[1] = HeapScanCandidate(root, innerrel, inner_paths[0], strategy, clauses, false);
	if (inner_paths[1] != NULL && partial && !inner_paths[1]->parallel_safe)
		inner_paths[1] = NULL;

	/*
	 * A parallel right or full join: the participants mark the inner rows
	 * they matched in one set of flags, by row number (exec_parallel.c), so
	 * every one must read the inner side in the same order, as the join's
	 * own heap-page reader does (blocks in order, under the query's
	 * snapshot); a Seq Scan child may start in mid-table (synchronized
	 * scans), any other child promises no order at all
	 */
	if (partial && clauses->fill_inner)
		for (int i = 0; i < 2; i++)
			if (inner_paths[i] != NULL &&
				!GpuJoinHeapSide(root, inner_paths[i], strategy, clauses->key_clauses,
								 clauses->outer_is_left, false))
				inner_paths[i] = NULL;

	for (int o = 0; o < 2; o++)
		for (int i = 0; i < 2; i++)
			if (outer_paths[o] != NULL && inner_paths[i] != NULL)
				AddGpuJoinPath(root, joinrel, outer_paths[o], inner_paths[i], jointype, extra,
							   clauses, use_gpu, strategy, theta_variant, partial);
}

/*
 * Can a partial GPU join path be offered?  Each process emits what its own
 * outer rows produce; the unmatched inner rows of a right or full join, the
 * last process to finish (exec_parallel.c), which needs the inner side read
 * as heap pages (TryGpuJoinPath)
 */
static bool
CanJoinInParallel(RelOptInfo *joinrel, RelOptInfo *outerrel, JoinType jointype)
{
	return gpujoin_enable_parallel && joinrel->consider_parallel &&
		outerrel->partial_pathlist != NIL &&
		(gpujoin_enable_heapscan || (jointype != JOIN_RIGHT && jointype != JOIN_FULL));
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
	if (GpuJoinCarriesRecordVar(outerrel) || GpuJoinCarriesRecordVar(innerrel))
		return;					/* EXPLAIN could not name its fields */
	if (GpuJoinCarriesRowIdentityVar(joinrel))
		return;					/* setrefs.c allows it in no custom scan */

	/*
	 * Split restrictlist into encodable key clauses and quals to recheck.
	 * Equality keys make an equi-join (a hash or merge join; comparisons
	 * among the other clauses are rechecked); without them, comparisons make
	 * a theta join.
	 */
	if (GpuJoinExtractJoinClauses(extra->restrictlist, joinrel, jointype, outerrel,
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
		if (!GpuJoinExtractThetaClauses(root, extra->restrictlist, joinrel, jointype, outerrel,
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

#if PG_VERSION_NUM >= 160000
/*
 * 16 and later: a Var carries the outer joins that can null it
 * (varnullingrels; a PlaceHolderVar, phnullingrels), and setrefs.c matches
 * the node's targetlist, qual and custom_exprs against custom_scan_tlist
 * by column, checking that the sets are equal.  Above an outer join a
 * nullable side's Var carries the join (and the node above expects it so
 * in our targetlist), while the same column in a join qual, evaluated
 * below the join, carries none.  The scan tuple's columns take the sets
 * the join relation's output gives them (the Vars and PlaceHolderVars of
 * its reltarget, which for the top join may hold the final target's
 * expressions: apply_scanjoin_target_to_paths sets it), and the join
 * quals' Vars take the scan tuple's: the executor never reads the sets,
 * only setrefs.c checks them.
 *
 * NullingRels: where a Var's or a PlaceHolderVar's set is.
 */
static Bitmapset **
NullingRels(Node *node)
{
	if (IsA(node, Var))
		return &((Var *) node)->varnullingrels;
	if (IsA(node, PlaceHolderVar))
		return &((PlaceHolderVar *) node)->phnullingrels;
	return NULL;
}

/*
 * The entry of exprs (expressions or TargetEntries) that is the same column
 * as node, a Var (same varno, varattno, level) or a PlaceHolderVar (same
 * phid, level), whatever their nulling sets; NULL when there is none
 */
static Node *
SameColumnIn(List *exprs, Node *node)
{
	ListCell   *lc;

	foreach(lc, exprs)
	{
		Node	   *expr = lfirst(lc);

		if (IsA(expr, TargetEntry))
			expr = (Node *) ((TargetEntry *) expr)->expr;
		if (IsA(node, Var) && IsA(expr, Var) &&
			((Var *) expr)->varno == ((Var *) node)->varno &&
			((Var *) expr)->varattno == ((Var *) node)->varattno &&
			((Var *) expr)->varlevelsup == ((Var *) node)->varlevelsup)
			return expr;
		if (IsA(node, PlaceHolderVar) && IsA(expr, PlaceHolderVar) &&
			((PlaceHolderVar *) expr)->phid == ((PlaceHolderVar *) node)->phid &&
			((PlaceHolderVar *) expr)->phlevelsup == ((PlaceHolderVar *) node)->phlevelsup)
			return expr;
	}
	return NULL;
}

/* custom_exprs' Vars and PlaceHolderVars take the scan tuple's sets */
static bool
AdoptNullingRels(Node *node, List *scan_tlist)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) || IsA(node, PlaceHolderVar))
	{
		Node	   *scan_col = SameColumnIn(scan_tlist, node);

		if (scan_col != NULL)
		{
			*NullingRels(node) = bms_copy(*NullingRels(scan_col));
			return false;
		}
		/* a PlaceHolderVar not in the scan tuple is computed from its Vars */
		if (IsA(node, Var))
			return false;
	}
	return expression_tree_walker(node, AdoptNullingRels, (void *) scan_tlist);
}

static void
MatchNullingRels(CustomScan *cscan, RelOptInfo *rel)
{
	const int	flags = PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
		PVC_INCLUDE_PLACEHOLDERS;
	/*
	 * The final scan/join target may be the reltarget: expressions, not
	 * Vars.  A PlaceHolderVar computed at this join (COALESCE of a FULL
	 * JOIN's merged columns) holds Vars of this join's output: those count
	 * too, after the output's own Vars and PlaceHolderVars.
	 */
	List	   *out_cols = list_concat(pull_var_clause((Node *) rel->reltarget->exprs, flags),
									   pull_var_clause((Node *) rel->reltarget->exprs,
													   (flags & ~PVC_INCLUDE_PLACEHOLDERS) |
													   PVC_RECURSE_PLACEHOLDERS));
	List	   *qual_cols = pull_var_clause((Node *) cscan->scan.plan.qual, flags);
	ListCell   *lc;

	foreach(lc, cscan->custom_scan_tlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Node	   *out;

		if (NullingRels((Node *) tle->expr) == NULL)
			continue;
		/* as the join's output has it, or a qual above the join (pushed down) */
		if ((out = SameColumnIn(out_cols, (Node *) tle->expr)) != NULL ||
			(out = SameColumnIn(qual_cols, (Node *) tle->expr)) != NULL)
			*NullingRels((Node *) tle->expr) = bms_copy(*NullingRels(out));
	}
	cscan->custom_exprs = copyObject(cscan->custom_exprs);
	(void) AdoptNullingRels((Node *) cscan->custom_exprs, cscan->custom_scan_tlist);
}
#endif

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
 * Whether a side's plan is a Seq Scan whose quals (none, or those the
 * planner ordered) the device evaluates, or leaves to the host where
 * GpuJoinHeapSide allowed it, so that the join can read its relation as
 * heap pages
 */
static bool
DeviceScan(Plan *plan)
{
	GpuJoinDeviceExpr expr;
	List	   *host_quals;

	if (!IsA(plan, SeqScan))
		return false;
	return plan->qual == NIL ||
		GpuJoinCompileQual(plan->qual, ((Scan *) plan)->scanrelid, &expr, &host_quals);
}

/*
 * The relation a GPU join path (or a SCAN's) reads as heap pages on its
 * outer or inner side, or 0: GpuJoinHeapSide over the path's own strategy
 * and key clauses, as the path was costed and as PlanGpuJoinPath plans it
 * (where the Seq Scan's quals come out as the device evaluates them)
 */
Index
GpuJoinPathHeapSide(PlannerInfo *root, CustomPath *path, bool outer)
{
	List	   *priv = path->custom_private;

	if (!outer && list_length(path->custom_paths) < 2)
		return 0;
	return GpuJoinHeapSide(root, outer ? linitial(path->custom_paths) : lsecond(path->custom_paths),
						   (GpuJoinStrategy) intVal(list_nth(priv, GpuJoinPathStrategy)),
						   list_nth(priv, GpuJoinPathKeyClauses),
						   list_nth(priv, GpuJoinPathOuterIsLeft), outer);
}

/*
 * PlanCustomPath callback: the CustomScan for a GpuHashJoin, GpuMergeJoin or
 * GpuThetaJoin path
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
	/* a SCAN (GpuJoinScanPath) has no inner side */
	Plan	   *inner_plan = list_length(custom_plans) > 1 ? lsecond(custom_plans) : NULL;
	/* the sides read as heap pages, as the path was costed (planner_cost.c) */
	Index		outer_heap = GpuJoinPathHeapSide(root, best_path, true);
	Index		inner_heap = inner_plan == NULL ? 0 : GpuJoinPathHeapSide(root, best_path, false);

	/* ... and as the Seq Scans came out, their quals on the device */
	if (outer_heap && !DeviceScan(outer_plan))
		outer_heap = 0;
	if (inner_heap && !DeviceScan(inner_plan))
		inner_heap = 0;

	Assert(clauses == NIL);

	/*
	 * A side read as heap pages keeps its Seq Scan's target list as the
	 * scan tuple's columns, and the Seq Scan goes; the others may return
	 * their physical tuples
	 */
	if (!outer_heap && !boolVal(list_nth(priv, GpuJoinPathPartitioned)))
		UsePhysicalTargetList(root, outer_plan);
	if (inner_plan != NULL && !inner_heap)
		UsePhysicalTargetList(root, inner_plan);

	cscan->scan.plan.targetlist = tlist;
	/* outer joins: the pushed-down quals filter the output */
	cscan->scan.plan.qual = list_nth(priv, GpuJoinPathOtherQuals);
	cscan->scan.scanrelid = 0;	/* a join, not a scan of one relation */
	cscan->flags = best_path->flags;
	cscan->custom_plans = NIL;
	if (!outer_heap)
		cscan->custom_plans = lappend(cscan->custom_plans, outer_plan);
	if (inner_plan != NULL && !inner_heap)
		cscan->custom_plans = lappend(cscan->custom_plans, inner_plan);
	cscan->custom_exprs = list_make2(list_nth(priv, GpuJoinPathKeyClauses),
									 list_nth(priv, GpuJoinPathJoinQuals));
	cscan->custom_private = list_make5(list_nth(priv, GpuJoinPathStrategy),
									   list_nth(priv, GpuJoinPathJoinType),
									   makeInteger(list_length(outer_plan->targetlist)),
									   list_nth(priv, GpuJoinPathOuterIsLeft),
									   list_nth(priv, GpuJoinPathKeyBits));
	cscan->custom_private = lappend(cscan->custom_private,
									list_nth(priv, GpuJoinPathKeyExact));
	/*
	 * Row counts as Floats written with a decimal point: digits alone would
	 * be read back as an Integer where the plan is copied as text (to a
	 * parallel worker)
	 */
	cscan->custom_private = lappend(cscan->custom_private,
									makeFloat(psprintf("%.1f", inner_plan ? inner_plan->plan_rows : 0.0)));
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
	/* flags: the range table indexes change in setrefs.c (exec.c, HeapSideRti) */
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(outer_heap == 0 ? 0 :
												boolVal(list_nth(priv, GpuJoinPathOuterByTid)) ? 2 : 1));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(inner_heap == 0 ? 0 :
												boolVal(list_nth(priv, GpuJoinPathInnerByTid)) ? 2 : 1));
	cscan->custom_private = lappend(cscan->custom_private,
									makeFloat(psprintf("%.1f", outer_plan->plan_rows)));
	cscan->custom_private = lappend(cscan->custom_private, outer_heap ? outer_plan->qual : NIL);
	cscan->custom_private = lappend(cscan->custom_private, inner_heap ? inner_plan->qual : NIL);
	cscan->custom_private = lappend(cscan->custom_private,
									makeBoolean(floatVal(list_nth(priv, GpuJoinPathChainSaved)) > 0.0));
	cscan->custom_scan_tlist = BuildScanTargetList(outer_plan->targetlist,
												   inner_plan ? inner_plan->targetlist : NIL);
#if PG_VERSION_NUM >= 160000
	MatchNullingRels(cscan, rel);
#endif
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

/* The join's CustomScan, for GpuPreAgg (planner_agg.c) to run in aggregation mode */
Plan *
GpuJoinPlanJoin(PlannerInfo *root, RelOptInfo *rel, CustomPath *path, List *tlist,
				List *custom_plans)
{
	return PlanGpuJoinPath(root, rel, path, tlist, NIL, custom_plans);
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
