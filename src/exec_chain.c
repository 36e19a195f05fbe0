/*-------------------------------------------------------------------------
 *
 * exec_chain.c
 *	  GPU hash joins stacked one on another, run by the top one as one
 *	  chain of joins on the device (gpujoin.enable_chain)
 *
 * A star query's plan is a stack of inner hash joins: fact ⋈ dim1 is the
 * outer side of (fact ⋈ dim1) ⋈ dim2, and so on.  Run as separate nodes,
 * each level's matches come back to the host as tuples and the level above
 * reads them into a new batch and sends them to the device again.  Where
 * every level is an inner GPU hash join, the top node runs them all as the
 * levels of one chain (cuda/device/chain.c): it reads every level's inner
 * side through that level's node (its child or heap pages, as the node
 * would), builds each level's table in the level's own device context,
 * reads the bottom level's outer side in chunks, and hands each chunk to
 * gj_chain_count; every level's matches go to the next level on the
 * device, and only the last level's come back, with the row numbers of
 * every side and every device column of every side, from which the top
 * fills its scan tuple (GpuJoinChainEmitNext).  The lower nodes are never
 * run themselves: the top calls their loading functions and keeps their
 * counters for EXPLAIN.
 *
 * Level k + 1 probes with the key of its one key clause, a column of the
 * level below's output: GpuJoinChainInit follows it through the lower
 * nodes' target lists to the side that holds it (the bottom's outer side
 * for a star, a lower level's inner side for a snowflake).  A plain
 * integer column there is packed into the level's key by the kernels, for
 * the rows handed down to it (IntKeyPack, GjKeyPack); for any other, that
 * side's batch carries the key, encoded on the host as the level's own
 * outer rows would be (GpuJoinEncodeKey), as an 8-byte column after its
 * own device columns.  The top's scan tuple columns are followed the same
 * way.
 *
 * What a chain takes: every level an inner GPU hash join (NPHJ or PHJ) on
 * one device, all serial or all partial (gpujoin.enable_parallel_chain).
 * A partial chain runs whole in every process of its parallel plan, on
 * the process's share of the bottom level's outer side (a Parallel Seq
 * Scan child's, or the block scan the bottom keeps in shared memory,
 * exec_parallel.c).  Through the gpujoin service one process builds a
 * level's table, in the chain's layout, and the others probe that table
 * (GpuJoinChainClaimBuild; an inner side read as heap pages read in
 * shares by the processes, each with the extra key columns of its rows,
 * ShareBatch): each level one build, as for stacked parallel
 * joins (host columns of the inner side fetched by tid for each match
 * where the planner priced them so), but for a level with text codes, a
 * join filter, or host columns read as values, which every process reads
 * and builds for itself; the planner charges back the shares' saving of a
 * level above the lowest, which its builder reads whole (planner.c's
 * ChainSaving).  A chain never probes a build of a node run
 * on its own, nor such a node a chain's.
 * The top may be a GpuPreAgg whose inputs the chain carries on the device
 * (gpujoin.enable_chain_preagg: ChainAggSpec), which folds the last
 * level's matches into its groups (CHAIN_FOLD); the levels above the bottom
 * with one key clause whose outer argument is a plain column; the levels
 * below the top with no join filter, no qual and a target list of plain
 * columns (the top keeps its join filter and qual).  Anything else runs as
 * stacked nodes.  A chain is not partitioned: the levels' tables must fit
 * the device together.  When a level would be partitioned on its own, or
 * the builds run out of device memory, the chain comes apart before any
 * row: its levels run as the stacked nodes they are (Unchain).  When a
 * chunk's count or retrieve runs out of device memory, the whole chain
 * moves to the CPU twin, recounts the chunk and goes on after the matches
 * it had taken (the twin numbers them alike).
 *
 * IDENTIFICATION
 *	  src/exec_chain.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/executor.h"
#include "executor/instrument.h"
#include "exec.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/memutils.h"

/* The sides of a chain: the bottom level's outer side, then each level's inner */
#define CHAIN_SIDES		(GJ_MAX_LEVELS + 1)
#define CHAIN_OUTER		0
#define CHAIN_INNER(k)	(1 + (k))

/* The states of GpuJoinChainExec */
#define CHAIN_START		0			/* read and build every level's inner side */
#define CHAIN_LOAD		1			/* read the next chunk of the outer side */
#define CHAIN_COUNT		2			/* count it at level 0 */
#define CHAIN_NEXT		3			/* the last level's next counted chunk */
#define CHAIN_ROUND		4			/* its next round */
#define CHAIN_EMIT		5			/* the round's rows */
#define CHAIN_DONE		6
#define CHAIN_FOLD		7			/* a GpuPreAgg on top: the last level's
									 * counted chunk into the groups */

/*
 * An 8-byte column a side's batch carries for a later level: a key, or the
 * codes of a text group key of the GpuPreAgg on top (CodeExtras)
 */
typedef struct ChainExtra
{
	int			level;			/* the level that probes with it, or -1 */
	GpuJoinDict *dict;			/* NULL for a key; else the dictionary
								 * whose codes of the values it holds */
	const GpuJoinColumn *col;	/* the side's column it is encoded from */
	uint64	   *keys;			/* per row of the batch */
	uint8	   *nulls;
	int64		capacity;		/* 0: keys and nulls are the side's arrays
								 * (a share of a level's inner side), gone
								 * with its rows */
} ChainExtra;

typedef struct ChainSide
{
	GpuJoinSide *side;
	int			nextra;
	ChainExtra	extra[GJ_MAX_LEVELS];
} ChainSide;

typedef struct GpuJoinChain
{
	int			nlevels;
	GpuJoinState *levels[GJ_MAX_LEVELS];	/* level 0 the bottom, the last
											 * the top */
	ChainSide	sides[CHAIN_SIDES];
	GjJoinSpec	specs[GJ_MAX_LEVELS];
	int32		key_columns[GJ_MAX_LEVELS];
	GjKeyPack	packs[GJ_MAX_LEVELS];	/* a level's integer key, packed by
										 * the kernels (IntKeyPack) */
	int			pack_sides[GJ_MAX_LEVELS];	/* ... the side it lies in, */
	int			pack_columns[GJ_MAX_LEVELS];	/* and its device column */
	GpuJoinChainColumn *cols;	/* the top's scan tuple */
	int			ncols;
	int		   *codes;			/* per top's outer column, where the codes
								 * of its text lie among the last level's
								 * columns, or -1 (CodeExtras) */
	GjAggSpec  *agg_spec;		/* a GpuPreAgg on top: its spec with the
								 * chain's layout of its outer columns */
	GjAggSpec  *own_agg_spec;	/* ... and as the node has it alone */
	MemoryContext cxt;			/* the extra key columns */

	int			state;
	int			share[GJ_MAX_LEVELS];	/* GJ_CHAIN_* of each level: partial
										 * chains share builds */
	const GjKernels *kernels;
	bool		on_fallback;
	bool		unchained;		/* run as the stacked nodes it was made of */
	bool		instrumented;	/* this run's rows given to the levels below */
	GjChain		gj;
	GjBatch		chunk;			/* the outer chunk gj_chain_count took */
	GjColumn	chunk_columns[GJ_MAX_COLUMNS];
	int64		last_matches;	/* of the last level's counted chunk */
	int64		next_match;		/* its next one to retrieve */
	int64		taken;			/* last-level matches of the outer chunk
								 * taken into rounds so far */
	GjMatchRound round;
	int64		round_pos;

	/*
	 * Chunks each level counted, their rows and its matches: base_* over
	 * the outer chunks done (and earlier runs), gj's over the outer chunk
	 * being joined (zeroed at its start; counted again after a switch to
	 * the CPU twin); run_out the matches at the run's start (the levels'
	 * rows in EXPLAIN ANALYZE)
	 */
	int64		base_chunks[GJ_MAX_LEVELS];
	int64		base_in[GJ_MAX_LEVELS];
	int64		base_out[GJ_MAX_LEVELS];
	int64		run_out[GJ_MAX_LEVELS];
} GpuJoinChain;

/* ----------------------------------------------------------------
 *		Which stacks are chains
 * ----------------------------------------------------------------
 */

/*
 * A level's outer match (GjOuterMatch): a semi join hands each row up
 * once, an anti join only the rows with no match (the kernels drop the
 * others), a left join every match and each row with none, NULL-extended;
 * every match of an inner join
 */
static uint8
LevelOuterMatch(const GpuJoinState *node)
{
	if (node->gj_JoinType == JOIN_SEMI)
		return GJ_OUTER_FIRST;
	if (node->gj_JoinType == JOIN_ANTI)
		return GJ_OUTER_NONE;
	if (node->gj_JoinType == JOIN_LEFT)
		return GJ_OUTER_LEFT;
	return GJ_OUTER_ALL;
}

/* Does a level hand up columns of its inner side (inner and left joins)? */
static bool
LevelHandsInner(const GpuJoinState *node)
{
	uint8		match = LevelOuterMatch(node);

	return match == GJ_OUTER_ALL || match == GJ_OUTER_LEFT;
}

/*
 * What every level of a chain must be: an inner join, or below the top a
 * semi, anti or left join of NPHJ on exact keys (the kernels keep, drop or
 * NULL-extend each row, GjOuterMatch: nothing is rechecked); the top may be a GpuPreAgg
 * (gpujoin.enable_chain_preagg), which folds the last level's matches into
 * its groups on the device
 */
static bool
ChainableLevel(GpuJoinState *node, bool top)
{
	CustomScan *cscan = (CustomScan *) node->css.ss.ps.plan;

	return (cscan->methods == &gpujoin_hash_scan_methods ||
			(top && cscan->methods == &gpujoin_preagg_scan_methods)) &&
		node->gj_Strategy == GPUJOIN_STRATEGY_HASH &&
		(node->gj_JoinType == JOIN_INNER ||
		 (!top && LevelOuterMatch(node) != GJ_OUTER_ALL &&
		  node->gj_Spec.variant == GJ_VARIANT_NPHJ && node->gj_KeyExact)) &&
		(node->gj_Spec.variant == GJ_VARIANT_NPHJ || node->gj_Spec.variant == GJ_VARIANT_PHJ) &&
		node->gj_Spec.ndevices < 2 &&
		(node->gj_Agg == NULL ||
		 (top && gpujoin_enable_chain_preagg && node->gj_JoinQual == NULL));
}

/* A level below the top: what it hands up is its scan tuple's columns */
static bool
ChainableLower(GpuJoinState *node)
{
	ListCell   *lc;

	if (!ChainableLevel(node, false) || node->gj_JoinQual != NULL || node->css.ss.ps.qual != NULL)
		return false;
	foreach(lc, node->css.ss.ps.plan->targetlist)
	{
		Var		   *var = (Var *) lfirst_node(TargetEntry, lc)->expr;

		if (!IsA(var, Var) || var->varno != INDEX_VAR)
			return false;
	}
	return true;
}

/* The level's child on its outer side, if it is a GPU join node */
static GpuJoinState *
OuterGpuJoin(GpuJoinState *node)
{
	PlanState  *ps = node->gj_Outer.ps;

	if (ps == NULL || !IsA(ps, CustomScanState) ||
		((CustomScanState *) ps)->methods->ExecCustomScan !=
		node->css.methods->ExecCustomScan)
		return NULL;
	return (GpuJoinState *) ps;
}

/* A side's column that fills scan tuple column scan_att, or NULL */
static const GpuJoinColumn *
SideColumn(const GpuJoinSide *side, int scan_att)
{
	for (int c = 0; c < side->ncolumns; c++)
		if (side->columns[c].scan_att == scan_att)
			return &side->columns[c];
	return NULL;
}

/*
 * The side of the chain and its column that give column attno of level
 * k's output; false when it cannot be followed
 */
static bool
Follow(GpuJoinChain *chain, int k, AttrNumber attno, int *side, const GpuJoinColumn **col)
{
	GpuJoinState *node = chain->levels[k];
	List	   *tlist = node->css.ss.ps.plan->targetlist;
	Var		   *var;
	int			scan_att;

	if (attno < 1 || attno > list_length(tlist))
		return false;
	var = (Var *) list_nth_node(TargetEntry, tlist, attno - 1)->expr;
	scan_att = var->varattno - 1;
	if ((*col = SideColumn(&node->gj_Inner, scan_att)) != NULL)
	{
		/* a semi or anti level hands up no column of its inner side */
		*side = CHAIN_INNER(k);
		return LevelHandsInner(node);
	}
	if ((*col = SideColumn(&node->gj_Outer, scan_att)) == NULL)
		return false;
	if (k == 0)
	{
		*side = CHAIN_OUTER;
		return true;
	}
	return Follow(chain, k - 1, (*col)->attno, side, col);
}

/*
 * Can level's key, col of a side below, be packed by the kernels from the
 * column itself (GjKeyPack)?  A plain int4, date or int8 device column
 * keyed against its own type is (KeyValue's integer keys: one packed key
 * of the level's bits): the rounds carry the column anyway, so nothing is
 * encoded on the host and no 8-byte key column is carried for every row
 * of that side, of which only those that reach the level need a key.
 * Before 2026-12-01 the host encoded it for every row (EncodeIntExtra).
 */
static bool
IntKeyPack(const GpuJoinState *level, const GpuJoinColumn *col, GjKeyPack *pack)
{
	if (col->device < 0 || GpuJoinColumnConverted(col))
		return false;
	switch (level->gj_Outer.key_codings[0].kind)
	{
		case GPUJOIN_KEY_INT4:
		case GPUJOIN_KEY_DATE:
			if (col->typlen != sizeof(int32))
				return false;
			break;
		case GPUJOIN_KEY_INT8:
			if (col->typlen != sizeof(int64))
				return false;
			break;
		default:
			return false;
	}
	pack->width = col->typlen;
	pack->bits = level->gj_KeyBits[0];
	pack->exact = level->gj_KeyExact;
	return true;
}

/* The widths of a side's device columns and its extra keys */
static int
SideWidths(const ChainSide *cs, int32 *widths)
{
	int32		n;

	GpuJoinSpecColumns(cs->side, &n, widths);
	for (int e = 0; e < cs->nextra; e++)
		widths[n + e] = sizeof(uint64);
	return n + cs->nextra;
}

/*
 * A GpuPreAgg on top: the inputs of its spec on its outer side name that
 * side's device columns, which in the chain are where the levels below
 * hand them down (chain->cols, the top's outer columns first; a text group
 * key's codes where CodeExtras put them).  A copy of the spec with those
 * inputs moved there; false where an input is not carried on the device
 * there (a host column of the side it comes from) or is converted by the
 * node's own outer side (a scaled numeric) but not by the side it comes
 * from alike (a heap side's numerics of declared scale:
 * GpuJoinHeapNumericsOnDevice).
 */
static inline bool
SameConversion(const GpuJoinColumn *a, const GpuJoinColumn *b)
{
	return a->dict == NULL && b->dict == NULL && a->scale == b->scale;
}

static bool
ChainAggSpec(GpuJoinChain *chain, GpuJoinState *top)
{
	GjAggSpec  *spec = palloc(sizeof(GjAggSpec));

	*spec = *GpuJoinAggSpec(top);
	for (int j = 0; j < spec->ninputs; j++)
	{
		GjAggInput *in = &spec->inputs[j];
		int			c;

		if (in->side != 0)
			continue;			/* the top's own inner side: as it is */
		for (c = 0; c < top->gj_Outer.ncolumns; c++)
			if (top->gj_Outer.columns[c].device == in->column)
				break;
		if (c == top->gj_Outer.ncolumns)
			return false;
		if (chain->codes[c] >= 0)
			in->column = (int8) chain->codes[c];
		else if (chain->cols[c].values >= 0 &&
				 SameConversion(&top->gj_Outer.columns[c], chain->cols[c].col))
			in->column = (int8) chain->cols[c].values;
		else
			return false;
	}
	chain->agg_spec = spec;
	chain->own_agg_spec = GpuJoinAggSpec(top);
	return true;
}

/*
 * A GpuPreAgg on top: its text group keys are codes of their values
 * (GpuJoinDict), which its own outer side would make as it reads them; in
 * the chain that side is not read, and the side below that holds such a
 * column (a level's inner side, or the lowest level's outer side) carries
 * their codes, made with the GpuPreAgg's own dictionary, as an extra
 * column (EncodeExtras), so that the groups' words decode as the node's
 * would.  Codes of long texts are each process's own, so in a partial
 * chain a level whose inner side carries codes builds its own table
 * (SharesOk).  False where a value is not in the side's batch (a host
 * column fetched by tid for each match).
 */
static bool
CodeExtras(GpuJoinChain *chain, GpuJoinState *top)
{
	for (int c = 0; c < top->gj_Outer.ncolumns; c++)
	{
		const GpuJoinColumn *col;
		ChainSide  *cs;
		int			side;

		chain->codes[c] = -1;
		if (top->gj_Outer.columns[c].dict == NULL)
			continue;
		if (!Follow(chain, chain->nlevels - 2, top->gj_Outer.columns[c].attno, &side, &col))
			return false;
		cs = &chain->sides[side];
		if (col->dict != NULL || GpuJoinColumnConverted(col) ||
			(col->device < 0 && cs->side->host_by_tid) ||
			cs->nextra == GJ_MAX_LEVELS)
			return false;
		cs->extra[cs->nextra].level = -1;
		cs->extra[cs->nextra].dict = top->gj_Outer.columns[c].dict;
		cs->extra[cs->nextra].col = col;
		cs->nextra++;			/* (where it lies: once the layouts are known) */
	}
	return true;
}

/*
 * Make node the top of a chain if it and the GPU joins stacked under it
 * can be one (see the file's head); called at the end of BeginGpuJoin, so
 * the nodes below have begun, and may have made themselves tops already
 */
void
GpuJoinChainInit(GpuJoinState *node)
{
	GpuJoinChain *chain;
	GpuJoinState *stack[GJ_MAX_LEVELS];
	GpuJoinState *lower;
	int			n = 1;
	int			c;

	if (!gpujoin_enable_chain || !ChainableLevel(node, true) || node->gj_NumKeys != 1 ||
		node->gj_Outer.key_attnos[0] == 0 ||
		(node->css.ss.ps.plan->parallel_aware && !gpujoin_enable_parallel_chain))
		return;
	stack[0] = node;
	for (lower = OuterGpuJoin(node); lower != NULL && n < GJ_MAX_LEVELS;
		 lower = OuterGpuJoin(lower))
	{
		/*
		 * only where the planner priced the pair as one chain, both serial
		 * or both partial (in every process of a parallel plan)
		 */
		if (!stack[n - 1]->gj_ChainBelow || !ChainableLower(lower) ||
			lower->css.ss.ps.plan->parallel_aware != node->css.ss.ps.plan->parallel_aware)
			break;
		stack[n++] = lower;
		/* a level above the bottom probes with one plain column */
		if (lower->gj_NumKeys != 1 || lower->gj_Outer.key_attnos[0] == 0)
			break;
	}
	if (n < 2)
		return;

	chain = palloc0(sizeof(GpuJoinChain));
	chain->nlevels = n;
	for (int k = 0; k < n; k++)
		chain->levels[k] = stack[n - 1 - k];
	chain->sides[CHAIN_OUTER].side = &chain->levels[0]->gj_Outer;
	for (int k = 0; k < n; k++)
		chain->sides[CHAIN_INNER(k)].side = &chain->levels[k]->gj_Inner;

	/* each level's key: a column of a side below it, carried as a key */
	for (int k = 1; k < n; k++)
	{
		GpuJoinState *level = chain->levels[k];
		const GpuJoinColumn *col;
		int			side;
		ChainSide  *cs;

		if (!Follow(chain, k - 1, level->gj_Outer.key_attnos[0], &side, &col))
			return;
		cs = &chain->sides[side];
		if (IntKeyPack(level, col, &chain->packs[k]))
		{
			chain->pack_sides[k] = side;
			chain->pack_columns[k] = col->device;
			continue;
		}
		/* a host column of a side fetched by tid is not in its batch */
		if (col->device < 0 && cs->side->host_by_tid)
			return;
		cs->extra[cs->nextra].level = k;
		cs->extra[cs->nextra].dict = NULL;
		cs->extra[cs->nextra].col = col;
		cs->nextra++;
	}
	chain->codes = palloc(sizeof(int) * Max(node->gj_Outer.ncolumns, 1));
	if (node->gj_Agg != NULL && !CodeExtras(chain, node))
		return;

	/* the levels' specs: each level's outer columns what the one below hands down */
	for (int k = 0; k < n; k++)
	{
		GjJoinSpec *spec = &chain->specs[k];

		*spec = chain->levels[k]->gj_Spec;
		spec->row_ids = true;
		spec->outer_match = LevelOuterMatch(chain->levels[k]);
		spec->inner_ncolumns = !LevelHandsInner(chain->levels[k]) ? 0 :
			SideWidths(&chain->sides[CHAIN_INNER(k)], spec->inner_widths);
		if (k == 0)
			spec->outer_ncolumns = SideWidths(&chain->sides[CHAIN_OUTER], spec->outer_widths);
		else
		{
			const GjJoinSpec *below = &chain->specs[k - 1];
			int			m = below->outer_ncolumns + below->inner_ncolumns + 1;

			if (m > GJ_MAX_COLUMNS)
				return;
			spec->outer_ncolumns = m;
			memcpy(spec->outer_widths, below->outer_widths,
				   sizeof(int32) * below->outer_ncolumns);
			memcpy(spec->outer_widths + below->outer_ncolumns, below->inner_widths,
				   sizeof(int32) * below->inner_ncolumns);
			spec->outer_widths[m - 1] = sizeof(GjRowId);
		}
		if (spec->inner_ncolumns > GJ_MAX_COLUMNS || spec->outer_ncolumns > GJ_MAX_COLUMNS)
			return;
	}
	/*
	 * where each level's key lies among its outer columns, and the codes of
	 * the top's text group keys among the last level's (its outer columns
	 * hold every column of the levels below)
	 */
	for (int s = 0; s < CHAIN_SIDES; s++)
	{
		ChainSide  *cs = &chain->sides[s];

		for (int e = 0; e < cs->nextra; e++)
		{
			int			at = (s == CHAIN_OUTER ? 0 : chain->specs[s - 1].outer_ncolumns) +
				cs->side->ndevice + e;

			if (cs->extra[e].dict == NULL)
				chain->key_columns[cs->extra[e].level] = at;
			else
				for (int i = 0; i < node->gj_Outer.ncolumns; i++)
					if (node->gj_Outer.columns[i].dict == cs->extra[e].dict)
						chain->codes[i] = at;
		}
	}
	/* a key packed by the kernels: its side's column itself */
	for (int k = 1; k < n; k++)
		if (chain->packs[k].width != 0)
		{
			int			s = chain->pack_sides[k];

			chain->key_columns[k] = (s == CHAIN_OUTER ? 0 : chain->specs[s - 1].outer_ncolumns) +
				chain->pack_columns[k];
		}

	/* the top's scan tuple: its own inner side, and what its outer columns follow to */
	chain->ncols = node->gj_Outer.ncolumns + node->gj_Inner.ncolumns;
	chain->cols = palloc0(sizeof(GpuJoinChainColumn) * Max(chain->ncols, 1));
	c = 0;
	for (int i = 0; i < node->gj_Outer.ncolumns; i++)
	{
		GpuJoinChainColumn *cc = &chain->cols[c++];
		int			side;
		const GpuJoinColumn *col;

		if (!Follow(chain, n - 2, node->gj_Outer.columns[i].attno, &side, &col))
			return;
		cc->side = chain->sides[side].side;
		cc->col = col;
		cc->scan_att = node->gj_Outer.columns[i].scan_att;
		cc->in_inner = false;
		if (side == CHAIN_OUTER)
		{
			cc->values = col->device;
			cc->rows = GJ_CHAIN_OUTER_ROWS;
		}
		else
		{
			int			base = chain->specs[side - 1].outer_ncolumns;

			cc->values = col->device >= 0 ? base + col->device : -1;
			cc->rows = base + chain->specs[side - 1].inner_ncolumns;
		}
		if (cc->values < 0 && cc->side->host_by_tid && side != CHAIN_OUTER)
			return;
	}
	for (int i = 0; i < node->gj_Inner.ncolumns; i++)
	{
		GpuJoinChainColumn *cc = &chain->cols[c++];
		const GpuJoinColumn *col = &node->gj_Inner.columns[i];

		cc->side = &node->gj_Inner;
		cc->col = col;
		cc->scan_att = col->scan_att;
		cc->in_inner = true;
		cc->values = col->device;
		cc->rows = GJ_CHAIN_INNER_ROWS;
	}

	if (node->gj_Agg != NULL && !ChainAggSpec(chain, node))
		return;

	chain->cxt = AllocSetContextCreate(CurrentMemoryContext, "GpuJoin chain",
									   ALLOCSET_DEFAULT_SIZES);
	chain->state = CHAIN_START;
	/* the levels below: run by this node now, not by themselves or a chain of their own */
	for (int k = 0; k < n - 1; k++)
	{
		chain->levels[k]->gj_Chain = NULL;
		chain->levels[k]->gj_ChainedInto = node;
	}
	node->gj_Chain = chain;
	if (chain->agg_spec != NULL)
		GpuJoinAggSetSpec(node, chain->agg_spec);
}

/*
 * The join spec of node's device context: the chain's layout where node
 * runs a chain (a GpuPreAgg's undecided rounds are read by it), else its own
 */
const GjJoinSpec *
GpuJoinChainSpec(GpuJoinState *node)
{
	GpuJoinChain *chain = node->gj_Chain;

	if (chain == NULL || chain->unchained)
		return &node->gj_Spec;
	return &chain->specs[chain->nlevels - 1];
}

/*
 * Where node runs a chain: match i of round (the last level's) in its scan
 * tuple, and true; else false
 */
bool
GpuJoinChainFillMatch(GpuJoinState *node, const GjMatchRound *round, int64 i)
{
	GpuJoinChain *chain = node->gj_Chain;

	if (chain == NULL || chain->unchained)
		return false;
	GpuJoinChainFillScanSlot(node, round, i, chain->cols, chain->ncols);
	return true;
}

/* ----------------------------------------------------------------
 *		Running a chain
 * ----------------------------------------------------------------
 */

/*
 * Encode the extra columns of a side for its rows now in the batch (keys,
 * codes); in_side: into arrays of the side's own (staging memory the
 * gpujoin service reads in place: a share of a level's inner side, part
 * of the table another process builds)
 */
static void
EncodeExtras(GpuJoinChain *chain, ChainSide *cs, bool in_side)
{
	GpuJoinSide *side = cs->side;

	for (int e = 0; e < cs->nextra; e++)
	{
		ChainExtra *x = &cs->extra[e];
		GpuJoinState *level = chain->levels[x->dict != NULL ? chain->nlevels - 1 : x->level];
		ExprContext *econtext = level->css.ss.ps.ps_ExprContext;

		if (in_side)
		{
			if (x->capacity > 0)
			{
				pfree(x->keys);
				pfree(x->nulls);
			}
			x->capacity = 0;
			x->keys = GpuJoinSideAlloc(side, sizeof(uint64) * Max(side->nrows, 1), false);
			x->nulls = GpuJoinSideAlloc(side, Max(side->nrows, 1), false);
		}
		else if (x->capacity < Max(side->nrows, 1))
		{
			if (x->capacity > 0)
			{
				pfree(x->keys);
				pfree(x->nulls);
			}
			x->capacity = Max(side->nrows, 1024);
			x->keys = MemoryContextAllocHuge(chain->cxt, sizeof(uint64) * x->capacity);
			x->nulls = MemoryContextAllocHuge(chain->cxt, x->capacity);
		}
		for (int64 row = 0; row < side->nrows; row++)
		{
			bool		isnull;
			Datum		value = GpuJoinSideDatum(side, x->col, row, &isnull);

			if ((row & 1023) == 0)
				ResetExprContext(econtext);
			if (x->dict != NULL)
			{
				x->nulls[row] = isnull;
				x->keys[row] = isnull ? 0 : (uint64) GpuJoinDictCode(x->dict, value);
				continue;
			}
			x->nulls[row] = isnull ||
				!GpuJoinEncodeKey(level, &level->gj_Outer, value, &x->keys[row]);
			if (x->nulls[row])
				x->keys[row] = 0;
		}
		ResetExprContext(econtext);
	}
}

/* A side's batch with its extra key columns after its device columns */
static GjBatch
ChainBatch(ChainSide *cs, GjColumn *columns)
{
	GjBatch		batch = GpuJoinSideBatch(cs->side, columns, 0, cs->side->nrows);

	for (int e = 0; e < cs->nextra; e++)
	{
		columns[cs->side->ndevice + e].values = cs->extra[e].keys;
		columns[cs->side->ndevice + e].nulls = cs->extra[e].nulls;
	}
	return batch;
}

/* Publish the levels' rows in and out to their nodes' counters */
static void
ShowRows(GpuJoinChain *chain)
{
	for (int k = 0; k < chain->nlevels; k++)
	{
		GpuJoinState *level = chain->levels[k];

		if (k > 0)
		{
			level->gj_Chunks = chain->base_chunks[k] + chain->gj.chunks[k];
			level->gj_OuterRows = chain->base_in[k] + chain->gj.rows_in[k];
		}
		level->gj_Matches = chain->base_out[k] + chain->gj.rows_out[k];
	}
}

/*
 * May level k's inner side be read with its host columns' tids instead of
 * their values (a shared build)?  Not where a later level's key is one of
 * them: EncodeExtras reads such a key from the side's batch.
 */
static bool
ByTidOk(GpuJoinChain *chain, int k)
{
	ChainSide  *cs = &chain->sides[CHAIN_INNER(k)];

	for (int e = 0; e < cs->nextra; e++)
		if (cs->extra[e].col->device < 0)
			return false;
	return true;
}

/*
 * May level k's table be built by one process for all?  Not where its
 * rows carry codes of texts (CodeExtras): a long text's code is the
 * process's own.
 */
static bool
SharesOk(GpuJoinChain *chain, int k)
{
	ChainSide  *cs = &chain->sides[CHAIN_INNER(k)];

	for (int e = 0; e < cs->nextra; e++)
		if (cs->extra[e].dict != NULL)
			return false;
	return true;
}

/*
 * A share of a level's inner side, read by this process of a partial
 * chain, as part of the level's table, which one process builds from the
 * shares where they lie (GpuJoinChainClaimBuild): its rows with the extra
 * key columns of later levels, encoded into the side's own arrays, in the
 * chain's layout of the level's columns
 */
static GjBatch
ShareBatch(GpuJoinState *level, void *arg, GjColumn *columns, int32 *ncolumns,
		   const int32 **widths)
{
	GpuJoinChain *chain = (GpuJoinChain *) arg;
	int			k = 0;

	while (chain->levels[k] != level)
		k++;
	EncodeExtras(chain, &chain->sides[CHAIN_INNER(k)], true);
	*ncolumns = chain->specs[k].inner_ncolumns;
	*widths = chain->specs[k].inner_widths;
	return ChainBatch(&chain->sides[CHAIN_INNER(k)], columns);
}

/* Level k's inner rows: read here, or those of the build it probes */
static int64
LevelRows(GpuJoinChain *chain, int k)
{
	GpuJoinState *level = chain->levels[k];

	return chain->share[k] == GJ_CHAIN_PROBES ? level->gj_ChainBuild.rows : level->gj_Inner.nrows;
}

/*
 * The levels this process was to build for the other processes of a
 * partial chain and has not: none to share, so that they build their own
 * (the chain ends early, comes apart, or its builds ran out of memory)
 */
static void
PublishUnbuilt(GpuJoinChain *chain)
{
	for (int k = 0; k < chain->nlevels; k++)
		if (chain->share[k] == GJ_CHAIN_BUILDS)
		{
			GpuJoinPublishBuild(chain->levels[k], false);
			chain->share[k] = GJ_CHAIN_OWN_BUILD;
		}
}

/*
 * A level that was to probe another process's table reads its inner side
 * after all: the build is not to be had, or the chain goes on on the CPU
 * twin (GpuJoinReadBorrowedInner then checks that it read the builder's
 * rows in its order, which the matches taken so far are numbered by)
 */
static void
ReadProbedInner(GpuJoinChain *chain, int k)
{
	GpuJoinState *level = chain->levels[k];

	if (level->gj_Borrowed)
		GpuJoinReadBorrowedInner(level);
	else
		GpuJoinLoadOwnInner(level);
	EncodeExtras(chain, &chain->sides[CHAIN_INNER(k)], false);
	chain->share[k] = GJ_CHAIN_OWN_BUILD;
}

/*
 * Open every level's context on kernels and build its table, or, a level
 * of a partial chain another process built, probe that one; false on an
 * out-of-memory failure (err), for the caller's switch to the CPU twin
 */
static bool
OpenAndBuild(GpuJoinChain *chain, const GjKernels *kernels, GjError *err)
{
	chain->kernels = kernels;
	for (int k = 0; k < chain->nlevels; k++)
	{
		GpuJoinState *level = chain->levels[k];
		GjColumn	columns[GJ_MAX_COLUMNS];
		GjBatch		inner;
		GjStatus	status;

		if (chain->share[k] == GJ_CHAIN_PROBES)
		{
			if (!chain->on_fallback && GpuJoinChainShareOpen(level, kernels))
				continue;
			ReadProbedInner(chain, k);
		}
		GpuJoinCloseDevice(level);	/* (a GpuPreAgg's groups kept) */
		GpuJoinDeviceOpen(&level->gj_Device, kernels, &chain->specs[k]);
		memset(err, 0, sizeof(*err));
		/* read in shares: built where they lie (not on the CPU twin), or read again whole */
		if (!level->gj_InnerInParts || !GpuJoinBuildShares(level, &status, err))
		{
			if (level->gj_InnerInParts)
			{
				GpuJoinWholeInner(level);
				EncodeExtras(chain, &chain->sides[CHAIN_INNER(k)], false);
			}
			inner = ChainBatch(&chain->sides[CHAIN_INNER(k)], columns);
			status = kernels->build(level->gj_Device.ctx, &inner, err);
		}
		status = GpuJoinInjectFault(GPUJOIN_FAULT_BUILD, chain->on_fallback, status, err, false);
		if (status == GJ_ERROR_DEVICE_MEMORY && !chain->on_fallback)
			return false;
		GpuJoinCheckStatus(status, err, "could not build the inner side of a chain of GPU joins");
		if (chain->share[k] == GJ_CHAIN_BUILDS)
		{
			/* as soon as it is built: the others may be waiting for it */
			GpuJoinPublishBuild(level, true);
			chain->share[k] = GJ_CHAIN_OWN_BUILD;
		}
	}
	{
		GjContext  *contexts[GJ_MAX_LEVELS];
		GjStatus	status;

		for (int k = 0; k < chain->nlevels; k++)
			contexts[k] = chain->levels[k]->gj_Device.ctx;
		memset(err, 0, sizeof(*err));
		status = gj_chain_init(&chain->gj, kernels, chain->nlevels, contexts,
							   chain->specs, chain->key_columns, chain->packs, err);
		GpuJoinCheckStatus(status, err, "could not chain GPU joins");
	}
	return true;
}

/*
 * Out of device memory: the whole chain goes on on the CPU twin.  Every
 * level is built again; a chunk being joined is counted again and its
 * matches up to those taken already are skipped, the twin numbering them
 * as the device did.  One NOTICE per chain.
 */
static void
SwitchToCpu(GpuJoinChain *chain, const GjError *cause)
{
	GpuJoinState *top = chain->levels[chain->nlevels - 1];
	GjError		err;
	bool		chunk_open = chain->state > CHAIN_COUNT ||
		(chain->state == CHAIN_COUNT && chain->chunk.nrows > 0);

	ereport(NOTICE,
			(errmsg("gpujoin: the chain of GPU joins ran out of device memory and continues on the CPU"),
			 errdetail("%s", cause->message),
			 errhint("Raise gpujoin.device_memory_limit, or set gpujoin.enable_chain = off to run the joins one by one.")));
	top->gj_FellBackFrom = GpuJoinIsCpuTwin(chain->kernels) ?
		"the CPU twin, gpujoin.inject_fault" : "the GPU";
	for (int k = 0; k < chain->nlevels; k++)
	{
		chain->levels[k]->gj_CpuParts++;
		chain->levels[k]->gj_FellBackFrom = top->gj_FellBackFrom;
	}

	/* the chunk's counts go (gj_chain_init): it is counted again */
	chain->on_fallback = true;
	if (!OpenAndBuild(chain, &gj_cpu_kernels, &err))
		GpuJoinCheckStatus(err.status, &err, "could not build a chain of GPU joins on the CPU");
	if (!chunk_open)
	{
		chain->state = CHAIN_LOAD;
		return;
	}

	GpuJoinCheckStatus(gj_chain_count(&chain->gj, &chain->chunk, &err), &err,
					   "could not match an outer chunk of a chain of GPU joins");
	for (int64 skipped = 0;;)
	{
		int64		n;

		GpuJoinCheckStatus(gj_chain_next(&chain->gj, &n, &err), &err,
						   "could not match an outer chunk of a chain of GPU joins");
		if (n == 0)
		{
			chain->state = CHAIN_LOAD;
			return;
		}
		if (skipped + n <= chain->taken)
		{
			skipped += n;
			continue;
		}
		chain->last_matches = n;
		chain->next_match = chain->taken - skipped;
		chain->state = (top->gj_Agg != NULL) ? CHAIN_FOLD : CHAIN_ROUND;
		return;
	}
}

/*
 * Count rows and loops of the levels below, which never run themselves:
 * once per run, when it ends or is shut down early (a LIMIT above)
 */
static void
InstrumentLower(GpuJoinChain *chain)
{
	if (chain->instrumented || chain->unchained)
		return;
	chain->instrumented = true;
	for (int k = 0; k < chain->nlevels - 1; k++)
	{
		GpuJoinState *level = chain->levels[k];
		Instrumentation *instr = level->css.ss.ps.instrument;

		level->gj_Ran = true;
		level->gj_Runs++;
		if (instr != NULL)
		{
			/* its rows: the matches it handed up on the device in this run */
			InstrStartNode(instr);
			InstrStopNode(instr, (double) (chain->base_out[k] + chain->gj.rows_out[k] -
										   chain->run_out[k]));
		}
	}
}

/*
 * The levels' tables do not fit the device together: each level runs as
 * the node it is, from where its inner side was loaded, with the
 * partitions its own planning chose (GpuJoinPlanPartitions), the top
 * pulling its rows from the level below as stacked joins do.  For the rest
 * of the query, rescans too.
 */
static void
Unchain(GpuJoinChain *chain)
{
	for (int k = 0; k < chain->nlevels; k++)
	{
		GpuJoinState *level = chain->levels[k];

		GpuJoinDeviceClose(&level->gj_Device);
		level->gj_TableBuilt = false;
		level->gj_JoinState = level->gj_NumParts > 1 ? GJ_PARTITION_OUTER : GJ_BUILD;
		if (chain->share[k] == GJ_CHAIN_PROBES)
		{
			/* it read nothing: as a node it reads (another's chain build is not its) */
			level->gj_Borrowed = false;
			level->gj_JoinState = GJ_LOAD_INNER;
			chain->share[k] = GJ_CHAIN_OWN_BUILD;
		}
		if (k < chain->nlevels - 1)
			level->gj_ChainedInto = NULL;
	}
	if (chain->own_agg_spec != NULL)
		GpuJoinAggSetSpec(chain->levels[chain->nlevels - 1], chain->own_agg_spec);
	chain->unchained = true;
}

/*
 * ExecGpuJoin of a chain's top: the next joined row, or NULL when the
 * chain is done; *handled false when the chain runs as stacked nodes
 * (Unchain), which the caller then runs
 */
TupleTableSlot *
GpuJoinChainExec(GpuJoinState *node, bool *handled)
{
	GpuJoinChain *chain = node->gj_Chain;
	GpuJoinState *bottom = chain->levels[0];
	GpuJoinState *top = node;

	*handled = !chain->unchained;
	if (chain->unchained)
		return NULL;
	for (;;)
	{
		GjError		err;
		GjStatus	status;

		CHECK_FOR_INTERRUPTS();
		memset(&err, 0, sizeof(err));
		switch (chain->state)
		{
			case CHAIN_START:
				{
					instr_time	start;

					if (top->gj_Timing)
						INSTR_TIME_SET_CURRENT(start);
					chain->on_fallback = false;
					chain->instrumented = false;
					chain->chunk.nrows = 0;
					for (int k = 0; k < chain->nlevels; k++)
						chain->run_out[k] = chain->base_out[k] + chain->gj.rows_out[k];
					for (int k = 0; k < chain->nlevels; k++)
					{
						GpuJoinState *level = chain->levels[k];

						/*
						 * in a partial chain, one process builds each
						 * level for all where it can (the others wait,
						 * then probe its table and read nothing)
						 */
						chain->share[k] = GpuJoinChainClaimBuild(level, SharesOk(chain, k),
																 ByTidOk(chain, k),
																 ShareBatch, chain);
						if (chain->share[k] == GJ_CHAIN_PROBES)
							GpuJoinForgetInner(level);
						else if (!level->gj_InnerInParts)
							GpuJoinLoadInner(level);	/* (else the shares are its rows) */
						if (LevelRows(chain, k) == 0 &&
							!gj_outer_match_unmatched(chain->specs[k].outer_match))
							chain->state = CHAIN_DONE;	/* no row can come out */
					}
					if (top->gj_Timing)
						top->gj_LoadMs += GpuJoinElapsedMs(start);
					if (chain->state == CHAIN_DONE)
					{
						PublishUnbuilt(chain);
						continue;
					}

					/*
					 * A level whose table would not fit the device alone
					 * runs partitioned, as the node it is: the chain comes
					 * apart.  Its chunks and rounds are those its planning
					 * chose; a level probing another's table, those its
					 * builder's planning chose, whole.
					 */
					for (int k = 0; k < chain->nlevels; k++)
					{
						GpuJoinState *level = chain->levels[k];

						if (chain->share[k] == GJ_CHAIN_PROBES)
						{
							level->gj_NumParts = 1;
							level->gj_Part = -1;
							level->gj_Spec.max_matches = level->gj_ChainBuild.max_matches;
							level->gj_Outer.max_rows = level->gj_ChainBuild.chunk_rows;
						}
						else
							GpuJoinPlanPartitions(level);
						if (level->gj_NumParts > 1)
							chain->unchained = true;
						chain->specs[k].max_matches = level->gj_Spec.max_matches;
					}
					if (chain->unchained)
					{
						PublishUnbuilt(chain);
						Unchain(chain);
						*handled = false;
						return NULL;
					}
					/* (a builder of shares: each share has its own, in its part) */
					for (int k = 0; k < chain->nlevels; k++)
						if (chain->share[k] != GJ_CHAIN_PROBES && !chain->levels[k]->gj_InnerInParts)
							EncodeExtras(chain, &chain->sides[CHAIN_INNER(k)], false);
					chain->state = CHAIN_LOAD;
					/* the tables do not fit together: the same */
					if (!OpenAndBuild(chain, GpuJoinChooseKernels(), &err))
					{
						PublishUnbuilt(chain);
						Unchain(chain);
						*handled = false;
						return NULL;
					}
					continue;
				}

			case CHAIN_LOAD:
				{
					instr_time	start;
					bool		loaded;

					if (top->gj_Timing)
						INSTR_TIME_SET_CURRENT(start);
					ShowRows(chain);
					chain->chunk.nrows = 0;
					loaded = GpuJoinLoadOuterChunk(bottom);
					if (loaded)
					{
						EncodeExtras(chain, &chain->sides[CHAIN_OUTER], false);
						chain->chunk = ChainBatch(&chain->sides[CHAIN_OUTER],
												  chain->chunk_columns);
					}
					if (top->gj_Timing)
						top->gj_LoadMs += GpuJoinElapsedMs(start);
					if (!loaded)
					{
						chain->state = CHAIN_DONE;
						continue;
					}
					chain->taken = 0;
					chain->state = CHAIN_COUNT;
					continue;
				}

			case CHAIN_COUNT:
				/* gj's counters from here are this chunk's */
				memset(chain->gj.chunks, 0, sizeof(chain->gj.chunks));
				memset(chain->gj.rows_in, 0, sizeof(chain->gj.rows_in));
				memset(chain->gj.rows_out, 0, sizeof(chain->gj.rows_out));
				status = gj_chain_count(&chain->gj, &chain->chunk, &err);
				status = GpuJoinInjectFault(GPUJOIN_FAULT_COUNT, chain->on_fallback, status,
											&err, false);
				if (status == GJ_ERROR_DEVICE_MEMORY && !chain->on_fallback)
				{
					SwitchToCpu(chain, &err);
					continue;
				}
				GpuJoinCheckStatus(status, &err, "could not match an outer chunk of a chain of GPU joins");
				chain->state = CHAIN_NEXT;
				continue;

			case CHAIN_NEXT:
				{
					int64		n;

					status = gj_chain_next(&chain->gj, &n, &err);
					if (status == GJ_ERROR_DEVICE_MEMORY && !chain->on_fallback)
					{
						SwitchToCpu(chain, &err);
						continue;
					}
					GpuJoinCheckStatus(status, &err, "could not match an outer chunk of a chain of GPU joins");
					if (n == 0)
					{
						/* the chunk is done: its counts into the totals */
						for (int k = 0; k < chain->nlevels; k++)
						{
							chain->base_chunks[k] += chain->gj.chunks[k];
							chain->base_in[k] += chain->gj.rows_in[k];
							chain->base_out[k] += chain->gj.rows_out[k];
						}
						memset(chain->gj.chunks, 0, sizeof(chain->gj.chunks));
						memset(chain->gj.rows_in, 0, sizeof(chain->gj.rows_in));
						memset(chain->gj.rows_out, 0, sizeof(chain->gj.rows_out));
						chain->state = CHAIN_LOAD;
						continue;
					}
					chain->last_matches = n;
					chain->next_match = 0;
					chain->state = (top->gj_Agg != NULL) ? CHAIN_FOLD : CHAIN_ROUND;
					continue;
				}

			case CHAIN_ROUND:
				{
					GjContext  *ctx = top->gj_Device.ctx;

					if (chain->next_match >= chain->last_matches)
					{
						chain->state = CHAIN_NEXT;
						continue;
					}
					status = chain->kernels->retrieve(ctx, chain->next_match, &chain->round, &err);
					status = GpuJoinInjectFault(GPUJOIN_FAULT_RETRIEVE, chain->on_fallback, status,
												&err, chain->taken > 0);
					if (status == GJ_ERROR_DEVICE_MEMORY && !chain->on_fallback)
					{
						SwitchToCpu(chain, &err);
						continue;
					}
					GpuJoinCheckStatus(status, &err, "could not fetch the matches of a chain of GPU joins");
					if (chain->round.nmatches <= 0 ||
						chain->round.nmatches > chain->last_matches - chain->next_match)
						elog(ERROR, "gpujoin: a chain of joins returned " INT64_FORMAT " matches where " INT64_FORMAT " were left",
							 chain->round.nmatches, chain->last_matches - chain->next_match);
					chain->next_match += chain->round.nmatches;
					chain->taken += chain->round.nmatches;
					chain->round_pos = 0;
					chain->state = CHAIN_EMIT;
				}
				/* FALL THRU */

			case CHAIN_EMIT:
				{
					instr_time	start;
					TupleTableSlot *slot;

					if (top->gj_Timing)
						INSTR_TIME_SET_CURRENT(start);
					slot = GpuJoinChainEmitNext(top, &chain->round, &chain->round_pos,
												chain->cols, chain->ncols);
					if (top->gj_Timing)
						top->gj_EmitMs += GpuJoinElapsedMs(start);
					if (slot != NULL)
						return slot;
					chain->state = CHAIN_ROUND;
					continue;
				}

			case CHAIN_FOLD:
				{
					int64		n;

					if (chain->next_match >= chain->last_matches)
					{
						chain->state = CHAIN_NEXT;
						continue;
					}
					status = GpuJoinAggFoldRound(top, chain->next_match,
												 chain->last_matches - chain->next_match,
												 chain->taken > 0, !chain->on_fallback, &n, &err);
					if (status != GJ_OK)
					{
						/* out of device memory: nothing of the round folded */
						SwitchToCpu(chain, &err);
						continue;
					}
					chain->next_match += n;
					chain->taken += n;
					continue;
				}

			case CHAIN_DONE:
				ShowRows(chain);
				InstrumentLower(chain);
				/* a GpuPreAgg: its groups */
				return (top->gj_Agg != NULL) ? GpuJoinAggEmitTimed(top) : NULL;

			default:
				elog(ERROR, "unrecognized state of a chain of GPU joins: %d", chain->state);
		}
	}
}

/*
 * A rescan of the chain's top: everything is read and built again (the
 * children of every level are rescanned by ReScanGpuJoin; a level whose
 * parameters changed is rescanned here, since it never runs itself)
 */
void
GpuJoinChainRescan(GpuJoinState *node)
{
	GpuJoinChain *chain = node->gj_Chain;

	if (chain->unchained)
		return;					/* its nodes rescan themselves */
	if (chain->state != CHAIN_START)
		InstrumentLower(chain); /* a run stopped early */

	for (int k = 0; k < chain->nlevels; k++)
	{
		chain->base_chunks[k] += chain->gj.chunks[k];
		chain->base_in[k] += chain->gj.rows_in[k];
		chain->base_out[k] += chain->gj.rows_out[k];
		GpuJoinDeviceClose(&chain->levels[k]->gj_Device);
	}
	memset(chain->gj.chunks, 0, sizeof(chain->gj.chunks));
	memset(chain->gj.rows_in, 0, sizeof(chain->gj.rows_in));
	memset(chain->gj.rows_out, 0, sizeof(chain->gj.rows_out));
	chain->state = CHAIN_START;
	chain->chunk.nrows = 0;
	for (int k = chain->nlevels - 2; k >= 0; k--)
	{
		PlanState  *ps = &chain->levels[k]->css.ss.ps;

		if (ps->chgParam != NULL)
			ExecReScan(ps);
	}
}

/*
 * ShutdownCustomScan of a chain's top (the levels below are shut down
 * before it): a run stopped early still counts for them
 */
void
GpuJoinChainShutdown(GpuJoinState *node)
{
	if (node->gj_Chain->state != CHAIN_START)
		InstrumentLower(node->gj_Chain);
}

/*
 * The levels of the chain node runs as its top, the lowest first, and their
 * number in *nlevels; NULL (and 0) when it runs none or the chain came apart
 */
GpuJoinState **
GpuJoinChainLevels(GpuJoinState *node, int *nlevels)
{
	if (node->gj_Chain == NULL || node->gj_Chain->unchained)
	{
		*nlevels = 0;
		return NULL;
	}
	*nlevels = node->gj_Chain->nlevels;
	return node->gj_Chain->levels;
}

/*
 * EXPLAIN: on the top, the levels it runs; on a level, the top that runs
 * it
 */
void
GpuJoinChainExplain(GpuJoinState *node, ExplainState *es)
{
	if (node->gj_Chain != NULL && node->gj_Chain->unchained)
		ExplainPropertyText("Chain",
							psprintf("%d joins run one by one: their tables did not fit the device together",
									 node->gj_Chain->nlevels),
							es);
	else if (node->gj_Chain != NULL)
	{
		GpuJoinChain *chain = node->gj_Chain;

		ExplainPropertyText("Chain",
							psprintf("%d joins in one pass over the outer side of the lowest, each one's matches handed to the next on the device%s",
									 chain->nlevels,
									 node->gj_Agg != NULL ? ", the last one's folded into groups there" : ""),
							es);
		/* where the keys of the levels above the lowest are made (IntKeyPack) */
		if (es->verbose)
		{
			int			packed = 0;

			for (int k = 1; k < chain->nlevels; k++)
				packed += chain->packs[k].width != 0;
			ExplainPropertyText("Chain Keys",
								psprintf("%d packed on the device for the rows that reach their level, %d encoded on the host for every row of their side",
										 packed, chain->nlevels - 1 - packed),
								es);
		}
	}
	else if (node->gj_ChainedInto != NULL)
		ExplainPropertyText("Chain", "a level of the chain run by the GPU join above: its matches go up on the device",
							es);
}
