/*-------------------------------------------------------------------------
 *
 * planner.h
 *	  Declarations shared by the planner files (planner.c, planner_clauses.c, planner_cost.c)
 *
 * The planner side is in three files (planner.h declares what they share):
 *	planner.c			the hook, the paths, the plan
 *	planner_clauses.c	which clauses the device evaluates, which are
 *						rechecked, and which joins get no GPU path
 *	planner_cost.c		what a GPU join path costs, and its variant
 *
 * IDENTIFICATION
 *	  src/planner.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUJOIN_PLANNER_H
#define GPUJOIN_PLANNER_H

#include "postgres.h"

#include "gpujoin.h"
#include "nodes/pathnodes.h"
#include "optimizer/paths.h"

/* What GpuJoinExtractJoinClauses found in a restrictlist */
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
	bool		fill_inner;		/* right and full joins: the unmatched inner
								 * rows come out too */
} GpuJoinClauses;

/* planner_clauses.c */
extern bool GpuJoinCarriesRecordVar(RelOptInfo *rel);
extern bool GpuJoinCarriesRowIdentityVar(RelOptInfo *joinrel);
extern bool GpuJoinExtractJoinClauses(List *restrictlist, RelOptInfo *joinrel, JoinType jointype,
									  RelOptInfo *outerrel, RelOptInfo *innerrel,
									  GpuJoinClauses *clauses);
extern bool GpuJoinExtractThetaClauses(PlannerInfo *root, List *restrictlist, RelOptInfo *joinrel,
									   JoinType jointype, RelOptInfo *outerrel, RelOptInfo *innerrel,
									   GjVariant variant, GpuJoinClauses *clauses);

extern Index GpuJoinPathHeapSide(PlannerInfo *root, CustomPath *path, bool outer);
extern Index GpuJoinHeapSide(PlannerInfo *root, Path *path, GpuJoinStrategy strategy,
							 List *key_clauses, List *outer_is_left, bool outer);
extern List *GpuJoinHeapHostQuals(RelOptInfo *rel);

/* planner_cost.c */
extern double GpuJoinParallelDivisor(const Path *path);
extern double GpuJoinChainBusMs(Path *outer_path);
extern int GpuJoinParallelProcesses(const Path *path);
extern void GpuJoinCostPath(PlannerInfo *root, CustomPath *cpath, Path *outer_path,
							Path *inner_path, GpuJoinClauses *clauses, JoinPathExtraData *extra,
							bool use_gpu, GpuJoinStrategy strategy, GjVariant *variant,
							GjMaterialize *materialize, char **considered, bool *partitioned,
							bool *outer_by_tid, bool *shared_build, Cost *unshared,
							bool *inner_by_tid, Cost *deformed_numerics);

extern void GpuJoinCostScanPath(PlannerInfo *root, CustomPath *cpath, Path *scan_path,
								bool use_gpu, char **considered, Cost *deformed_numerics);

/* planner.c */
extern CustomPath *GpuJoinPathUnchained(CustomPath *path);
extern bool GpuJoinPathHoldsParallelGpu(Path *path);
extern Cost GpuJoinDeformedNumericCost(const CustomPath *path);
extern Plan *GpuJoinPlanJoin(PlannerInfo *root, RelOptInfo *rel, CustomPath *path,
							 List *tlist, List *custom_plans);
extern CustomPath *GpuJoinScanPath(PlannerInfo *root, RelOptInfo *rel, Path *scan_path,
								   bool use_gpu);

/* planner_agg.c */
extern void GpuJoinRememberAggJoin(PlannerInfo *root, RelOptInfo *joinrel, CustomPath *cpath,
								   JoinType jointype, GpuJoinClauses *clauses);

#endif							/* GPUJOIN_PLANNER_H */
