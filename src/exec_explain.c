/*-------------------------------------------------------------------------
 *
 * exec_explain.c
 *	  EXPLAIN of a GpuJoin, and the counters it shows
 *
 * ExplainGpuJoin shows the keys, the rechecked quals, the variant and the
 * device; with ANALYZE, the counters of every run of the node in this
 * process (GpuJoinCollectCounters) and, for a parallel join, those the
 * workers left in shared memory (exec_parallel.c), summed, with the largest
 * device memory one process held.
 *
 * IDENTIFICATION
 *	  src/exec_explain.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/explain.h"
#include "exec.h"
#include "lib/stringinfo.h"
#include "nodes/makefuncs.h"
#include "optimizer/clauses.h"
#include "utils/ruleutils.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "parser/parsetree.h"

/*
 * Show a label's count the way explain.c shows "Rows Removed by ..."
 */
static void
ShowRowsRemoved(const char *qlabel, CustomScanState *css, ExplainState *es)
{
	Instrumentation *instr = css->ss.ps.instrument;
	double		nloops;

	if (instr == NULL)
		return;
	nloops = instr->nloops;
	if (instr->nfiltered2 > 0 || es->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyFloat(qlabel, NULL,
							 nloops > 0 ? instr->nfiltered2 / nloops : 0.0, 0, es);
}

/*
 * Show expressions the way explain.c's show_qual does
 */
static char *
DeparseExprs(List *exprs, List *context, bool useprefix)
{
	return deparse_expression((Node *) make_ands_explicit(exprs), context, useprefix, false);
}

static void
ShowExprs(const char *qlabel, List *exprs, List *context, bool useprefix,
		  ExplainState *es)
{
	if (exprs == NIL)
		return;
	ExplainPropertyText(qlabel, DeparseExprs(exprs, context, useprefix), es);
}

/*
 * The key clauses with the outer side's operand first, as PostgreSQL's own
 * hash and merge joins show theirs (createplan.c's get_switched_clauses),
 * so that EXPLAIN's Hash Cond says which side is which; a clause whose
 * operator has no commutator keeps the query's order
 */
static List *
OuterSideFirst(List *key_clauses, List *outer_is_left)
{
	List	   *shown = NIL;
	ListCell   *lc1;
	ListCell   *lc2;

	forboth(lc1, key_clauses, lc2, outer_is_left)
	{
		Node	   *clause = lfirst(lc1);

		if (lfirst_int(lc2) == 0 && IsA(clause, OpExpr) &&
			list_length(((OpExpr *) clause)->args) == 2 &&
			OidIsValid(get_commutator(((OpExpr *) clause)->opno)))
		{
			clause = copyObject(clause);
			CommuteOpExpr((OpExpr *) clause);
		}
		shown = lappend(shown, clause);
	}
	return shown;
}

/*
 * What this process's run of the node would show in EXPLAIN ANALYZE
 */
void
GpuJoinCollectCounters(GpuJoinState *node, GpuJoinCounters *c)
{
	const char *device;

	memset(c, 0, sizeof(*c));
	c->processes = node->gj_Runs;
	c->num_parts = node->gj_NumParts;
	c->chunks = node->gj_Chunks;
	c->inner_rows = node->gj_InnerRows;
	c->outer_rows = node->gj_OuterRows;
	c->matches = node->gj_Matches;
	c->shared_builds = node->gj_SharedBuilds;
	c->inner_shares = node->gj_InnerSharesRead;
	c->load_ms = node->gj_LoadMs;
	c->emit_ms = node->gj_EmitMs;
	GpuJoinAggCounts(node, &c->agg_groups, &c->agg_spills, &c->agg_host_sorted);
	for (int i = 0; i < 2; i++)
	{
		const GpuJoinHeapReader *reader = (i == 0 ? node->gj_Outer : node->gj_Inner).heap;

		if (reader == NULL)
			continue;
		c->heap_pages[i] = reader->pages_read;
		c->heap_all_visible[i] = reader->pages_all_visible;
		c->heap_in_place[i] = reader->pages_in_place;
		c->heap_kept[i] = reader->pages_cached;
		c->heap_unread[i] = reader->pages_unread;
		c->heap_tuples[i] = reader->tuples_read;
		c->heap_ms[i] = reader->read_ms;
		c->heap_deform_ms[i] = reader->deform_ms;
		c->heap_host_ms[i] = reader->host_ms;
		c->heap_alloc_ms[i] = reader->alloc_ms;
		c->heap_removed[i] = reader->rows_removed;
		c->heap_shipped[i] = reader->bytes_shipped;
		c->heap_numerics[i] = reader->numerics;
		c->heap_texts[i] = reader->texts;
		c->heap_numerics_host[i] = reader->numerics_on_host;
		c->heap_memo_hits[i] = reader->memo_hits;
	}
	GpuJoinDeviceStats(&node->gj_Device, &c->stats);

	if (node->gj_Device.kernels == NULL)
		device = "";			/* not run (yet): see DeviceText */
	else if (node->gj_CpuParts > 0 && node->gj_NumParts > 1)
		device = psprintf("%s; %d partition%s joined on the CPU (out of device memory)",
						  GpuJoinDescribeDevice(NULL), node->gj_CpuParts,
						  node->gj_CpuParts == 1 ? "" : "s");
	else if (node->gj_CpuParts > 0)
		device = psprintf("CPU (fell back from %s: out of device memory)",
						  node->gj_FellBackFrom);
	else
		device = GpuJoinDescribeDevice(node->gj_Device.kernels);
	strlcpy(c->device, device, sizeof(c->device));
}

/*
 * ANALYZE of a join spread over devices: each device's rows (inner and
 * outer) and matches, and the bytes the spread moved
 */
static void
ShowPerDevice(const GjStats *stats, ExplainState *es)
{
	StringInfoData buf;
	int64		kb = (stats->bytes_exchanged + 1023) / 1024;

	initStringInfo(&buf);
	for (int d = 0; d < stats->ndevices && d < GJ_MAX_DEVICES; d++)
		appendStringInfo(&buf, "%s%d: rows=" INT64_FORMAT " matches=" INT64_FORMAT,
						 d > 0 ? "  " : "", d, stats->device_rows[d],
						 stats->device_matches[d]);
	ExplainPropertyText("Per Device", buf.data, es);
	ExplainPropertyInteger("Exchanged", "kB", kb, es);
}

/*
 * The Device line of one process's counters; for one whose node has not
 * opened a device, the device it would use (asked only here, in the leader,
 * which has probed it while planning: a worker must not open the GPU just
 * to describe it)
 */
static const char *
DeviceText(const GpuJoinCounters *c)
{
	return c->device[0] != '\0' ? c->device : GpuJoinDescribeDevice(NULL);
}

/* Add one process's counters to a sum */
static void
AddCounters(GpuJoinCounters *sum, const GpuJoinCounters *add)
{
	sum->processes += add->processes;
	sum->num_parts = Max(sum->num_parts, add->num_parts);
	sum->chunks += add->chunks;
	sum->inner_rows += add->inner_rows;
	sum->outer_rows += add->outer_rows;
	sum->matches += add->matches;
	sum->shared_builds += add->shared_builds;
	sum->inner_shares += add->inner_shares;
	sum->load_ms += add->load_ms;
	sum->emit_ms += add->emit_ms;
	sum->agg_groups += add->agg_groups;
	sum->agg_spills += add->agg_spills;
	sum->agg_host_sorted += add->agg_host_sorted;
	for (int i = 0; i < 2; i++)
	{
		sum->heap_pages[i] += add->heap_pages[i];
		sum->heap_all_visible[i] += add->heap_all_visible[i];
		sum->heap_in_place[i] += add->heap_in_place[i];
		sum->heap_kept[i] += add->heap_kept[i];
		sum->heap_unread[i] += add->heap_unread[i];
		sum->heap_tuples[i] += add->heap_tuples[i];
		sum->heap_ms[i] += add->heap_ms[i];
		sum->heap_deform_ms[i] += add->heap_deform_ms[i];
		sum->heap_host_ms[i] += add->heap_host_ms[i];
		sum->heap_alloc_ms[i] += add->heap_alloc_ms[i];
		sum->heap_removed[i] += add->heap_removed[i];
		sum->heap_shipped[i] += add->heap_shipped[i];
		sum->heap_numerics[i] = Max(sum->heap_numerics[i], add->heap_numerics[i]);
		sum->heap_texts[i] = Max(sum->heap_texts[i], add->heap_texts[i]);
		sum->heap_numerics_host[i] += add->heap_numerics_host[i];
		sum->heap_memo_hits[i] += add->heap_memo_hits[i];
	}
	GpuJoinAddStats(&sum->stats, &add->stats);
}

/*
 * This process's counters (leader) and their sum with those the workers
 * left (total)
 */
static void
SumCounters(GpuJoinState *node, GpuJoinCounters *leader, GpuJoinCounters *total)
{
	ListCell   *lc;

	GpuJoinCollectCounters(node, leader);
	*total = *leader;
	foreach(lc, node->gj_Workers)
		AddCounters(total, lfirst(lc));
}

/* EXPLAIN's Join Type of the joins a GPU join runs */
static const char *const join_type_names[] = {
	[JOIN_INNER] = "Inner", [JOIN_LEFT] = "Left", [JOIN_FULL] = "Full", [JOIN_RIGHT] = "Right",
	[JOIN_SEMI] = "Semi", [JOIN_ANTI] = "Anti",
};

/*
 * A relation a side reads as heap pages, as EXPLAIN names a Seq Scan's:
 * schema-qualified under VERBOSE, its alias after it where it has one
 */
static void
AppendHeapRelation(StringInfo buf, const GpuJoinHeapReader *reader, ExplainState *es)
{
	RangeTblEntry *rte = rt_fetch(reader->rti, es->rtable);
	char	   *relname = get_rel_name(rte->relid);
	char	   *refname = (char *) list_nth(es->rtable_names, reader->rti - 1);

	if (es->verbose)
		appendStringInfo(buf, "%s.", quote_identifier(get_namespace_name(get_rel_namespace(rte->relid))));
	appendStringInfoString(buf, quote_identifier(relname));
	if (refname != NULL && strcmp(refname, relname) != 0)
		appendStringInfo(buf, " %s", quote_identifier(refname));
}

/* A side's relation, or where it is not read as heap pages, other_name */
static void
AppendSideName(StringInfo buf, const GpuJoinSide *side, const char *other_name,
			   ExplainState *es)
{
	if (side->heap != NULL)
		AppendHeapRelation(buf, side->heap, es);
	else
		appendStringInfoString(buf, other_name);
}

/*
 * "Outer Relation: r (heap pages)": a side the join reads itself (with
 * VERBOSE, schema-qualified, as EXPLAIN names a Seq Scan's relation);
 * "(heap pages, parallel)" when the processes of a parallel join share
 * out its blocks; ", host columns fetched per match" when the side's
 * host columns are fetched by tid for its matches (GpuJoinHeapFetch): the
 * outer side's, or the inner side's of a parallel join's shared build
 * (by_tid: as the plan says, for the leader may not have run it)
 */
static void
ShowHeapSide(const char *label, const GpuJoinSide *side, bool by_tid, ExplainState *es)
{
	const GpuJoinHeapReader *reader = side->heap;
	StringInfoData buf;

	initStringInfo(&buf);
	AppendHeapRelation(&buf, reader, es);
	appendStringInfo(&buf, " (heap pages%s%s)", reader->parallel ? ", parallel" : "",
					 by_tid ? ", host columns fetched per match" : "");
	ExplainPropertyText(label, buf.data, es);
}

/*
 * The top of a chain (exec_chain.c) lists its levels, the lowest first, in
 * the order the outer rows pass them: each one's join type, inner relation
 * (for the lowest, its outer relation too), condition and variant, and
 * under ANALYZE the rows that reached the level and those it handed up,
 * summed over the processes.  The levels' own nodes below say the same, a
 * node each, as stacked joins would; this is the chain read in one place.
 * A level's expressions are deparsed against its own plan, its ancestors
 * the levels above it and then the top's.
 */
static void
ShowChainLevels(GpuJoinState *top, List *ancestors, ExplainState *es)
{
	int			nlevels;
	GpuJoinState **levels = GpuJoinChainLevels(top, &nlevels);
	List	   *level_ancestors[GJ_MAX_LEVELS];

	if (nlevels == 0)
		return;
	level_ancestors[nlevels - 1] = ancestors;
	for (int k = nlevels - 2; k >= 0; k--)
		level_ancestors[k] = lcons(levels[k + 1]->css.ss.ps.plan, list_copy(level_ancestors[k + 1]));
	ExplainOpenGroup("Chain Levels", "Chain Levels", false, es);
	for (int k = 0; k < nlevels; k++)
	{
		GpuJoinState *level = levels[k];
		CustomScan *cscan = (CustomScan *) level->css.ss.ps.plan;
		List	   *context;
		List	   *keys;
		char	   *cond;
		char	   *filter = NULL;
		List	   *join_quals = list_nth(cscan->custom_exprs, GpuJoinExprsJoinQuals);
		const char *type = join_type_names[level->gj_JoinType];
		StringInfoData outer_name;
		StringInfoData inner_name;
		const char *variant;
		GpuJoinCounters leader;
		GpuJoinCounters total;

		context = set_deparse_context_plan(es->deparse_cxt, (Plan *) cscan, level_ancestors[k]);
		keys = OuterSideFirst(list_nth(cscan->custom_exprs, GpuJoinExprsKeyClauses),
							  list_nth(cscan->custom_private, GpuJoinPrivateOuterIsLeft));
		cond = DeparseExprs(keys, context, true);
		if (join_quals != NIL)
			filter = DeparseExprs(join_quals, context, true);
		SumCounters(level, &leader, &total);
		initStringInfo(&outer_name);
		if (k == 0)
			AppendSideName(&outer_name, &level->gj_Outer, "its outer plan", es);
		initStringInfo(&inner_name);
		AppendSideName(&inner_name, &level->gj_Inner, "its inner plan", es);
		variant = GpuJoinVariantName(level->gj_Spec.variant, level->gj_Spec.materialize);

		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			StringInfoData buf;

			initStringInfo(&buf);
			if (k == 0)
				appendStringInfo(&buf, "%s ", outer_name.data);
			appendStringInfo(&buf, "%c%s join %s on %s", pg_tolower((unsigned char) type[0]), type + 1,
							 inner_name.data, cond);
			if (filter != NULL)
				appendStringInfo(&buf, " filter %s", filter);
			appendStringInfo(&buf, ", %s", variant);
			if (es->analyze)
				appendStringInfo(&buf, ", rows in " INT64_FORMAT ", out " INT64_FORMAT,
								 total.outer_rows, total.matches);
			ExplainPropertyText(psprintf("Chain Level %d", k + 1), buf.data, es);
			continue;
		}
		ExplainOpenGroup("Chain Level", NULL, true, es);
		ExplainPropertyInteger("Level", NULL, k + 1, es);
		ExplainPropertyText("Join Type", type, es);
		if (k == 0)
			ExplainPropertyText("Outer Relation", outer_name.data, es);
		ExplainPropertyText("Inner Relation", inner_name.data, es);
		ExplainPropertyText("Hash Cond", cond, es);
		if (filter != NULL)
			ExplainPropertyText("Join Filter", filter, es);
		ExplainPropertyText("Variant", variant, es);
		if (es->analyze)
		{
			ExplainPropertyInteger("Rows In", NULL, total.outer_rows, es);
			ExplainPropertyInteger("Rows Out", NULL, total.matches, es);
		}
		ExplainCloseGroup("Chain Level", NULL, true, es);
	}
	ExplainCloseGroup("Chain Levels", "Chain Levels", false, es);
}

/* ANALYZE: what a heap side read, and the numerics its deform converted */
static void
ShowHeapCounters(const char *label, const GpuJoinCounters *c, int i, ExplainState *es)
{
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		appendStringInfoSpaces(es->str, es->indent * 2);
		appendStringInfo(es->str, "%s Pages: read=" INT64_FORMAT " all-visible=" INT64_FORMAT
						 " in-place=" INT64_FORMAT " tuples=" INT64_FORMAT
						 " shipped=" INT64_FORMAT "kB", label,
						 c->heap_pages[i], c->heap_all_visible[i], c->heap_in_place[i],
						 c->heap_tuples[i], (c->heap_shipped[i] + 1023) / 1024);
		if (c->heap_kept[i] > 0)
			appendStringInfo(es->str, " kept=" INT64_FORMAT, c->heap_kept[i]);
		if (c->heap_unread[i] > 0)
			appendStringInfo(es->str, " unread=" INT64_FORMAT, c->heap_unread[i]);
		if (c->heap_memo_hits[i] > 0)
			appendStringInfo(es->str, " filter-reused=" INT64_FORMAT, c->heap_memo_hits[i]);
		if (es->timing)
			appendStringInfo(es->str, " time=%.3f deform=%.3f host=%.3f alloc=%.3f ms",
							 c->heap_ms[i], c->heap_deform_ms[i], c->heap_host_ms[i],
							 c->heap_alloc_ms[i]);
		appendStringInfoChar(es->str, '\n');
		if (c->heap_numerics[i] > 0 || c->heap_texts[i] > 0)
		{
			/* the host's values are the numerics' and the longer texts' */
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "%s Numerics: %d converted on the device, ", label,
							 c->heap_numerics[i]);
			if (c->heap_texts[i] > 0)
				appendStringInfo(es->str, "%d text%s as words, ", c->heap_texts[i],
								 c->heap_texts[i] == 1 ? "" : "s");
			appendStringInfo(es->str, INT64_FORMAT " values by the host\n",
							 c->heap_numerics_host[i]);
		}
	}
	else
	{
		char	   *prefix = psprintf("%s Heap", label);

		ExplainPropertyInteger(psprintf("%s Pages", prefix), NULL, c->heap_pages[i], es);
		ExplainPropertyInteger(psprintf("%s All-Visible Pages", prefix), NULL,
							   c->heap_all_visible[i], es);
		ExplainPropertyInteger(psprintf("%s Pages In Place", prefix), NULL,
							   c->heap_in_place[i], es);
		if (c->heap_kept[i] > 0)
			ExplainPropertyInteger(psprintf("%s Pages Kept", prefix), NULL, c->heap_kept[i], es);
		if (c->heap_unread[i] > 0)
			ExplainPropertyInteger(psprintf("%s Pages Unread", prefix), NULL, c->heap_unread[i], es);
		if (c->heap_memo_hits[i] > 0)
			ExplainPropertyInteger(psprintf("%s Filter Results Reused", prefix), NULL,
								   c->heap_memo_hits[i], es);
		ExplainPropertyInteger(psprintf("%s Tuples", prefix), NULL, c->heap_tuples[i], es);
		ExplainPropertyInteger(psprintf("%s Shipped", prefix), "kB",
							   (c->heap_shipped[i] + 1023) / 1024, es);
		if (es->timing)
		{
			ExplainPropertyFloat(psprintf("%s Time", prefix), "ms", c->heap_ms[i], 3, es);
			ExplainPropertyFloat(psprintf("%s Deform Time", prefix), "ms",
								 c->heap_deform_ms[i], 3, es);
			ExplainPropertyFloat(psprintf("%s Host Time", prefix), "ms",
								 c->heap_host_ms[i], 3, es);
			ExplainPropertyFloat(psprintf("%s Alloc Time", prefix), "ms",
								 c->heap_alloc_ms[i], 3, es);
		}
		if (c->heap_numerics[i] > 0 || c->heap_texts[i] > 0)
		{
			ExplainPropertyInteger(psprintf("%s Numerics On Device", prefix), NULL,
								   c->heap_numerics[i], es);
			ExplainPropertyInteger(psprintf("%s Texts As Words", prefix), NULL,
								   c->heap_texts[i], es);
			ExplainPropertyInteger(psprintf("%s Numeric Values On Host", prefix), NULL,
								   c->heap_numerics_host[i], es);
		}
	}
}

/*
 * The Device line of a parallel run: each distinct device description of
 * the participants, with how many had it
 */
static const char *
DescribeParticipants(const GpuJoinCounters *leader, List *workers)
{
	List	   *all = NIL;
	List	   *names = NIL;
	List	   *counts = NIL;
	StringInfoData out;
	ListCell   *lc;

	if (leader->processes > 0)
		all = lappend(all, (void *) leader);
	all = list_concat(all, workers);
	foreach(lc, all)
	{
		const GpuJoinCounters *c = lfirst(lc);
		int			i = 0;
		ListCell   *ln;

		foreach(ln, names)
		{
			if (strcmp(lfirst(ln), DeviceText(c)) == 0)
				break;
			i++;
		}
		if (i < list_length(names))
			list_nth_cell(counts, i)->int_value++;
		else
		{
			names = lappend(names, (void *) DeviceText(c));
			counts = lappend_int(counts, 1);
		}
	}
	if (list_length(names) == 1)
		return linitial(names);

	initStringInfo(&out);
	for (int i = 0; i < list_length(names); i++)
		appendStringInfo(&out, "%s%s (%d participant%s)", i > 0 ? "; " : "",
						 (char *) list_nth(names, i), list_nth_int(counts, i),
						 list_nth_int(counts, i) == 1 ? "" : "s");
	return out.data;
}

/*
 * ExplainCustomScan callback
 *
 * Plain EXPLAIN: the keys, the rechecked quals and the device.  ANALYZE adds
 * chunks, rows and matches; the bus traffic (hardware-specific, hidden with
 * gpujoin.explain_device = off); and, with TIMING, the time per phase.  A
 * parallel join shows the sums over its processes (Participants), the
 * largest device memory one of them held, and the most partitions one made.
 */
void
ExplainGpuJoin(CustomScanState *css, List *ancestors, ExplainState *es)
{
	GpuJoinState *node = (GpuJoinState *) css;
	CustomScan *cscan = (CustomScan *) css->ss.ps.plan;
	List	   *join_quals = list_nth(cscan->custom_exprs, GpuJoinExprsJoinQuals);
	bool		parallel = cscan->scan.plan.parallel_aware && es->analyze;
	GpuJoinCounters leader;
	GpuJoinCounters total;
	List	   *context;
	bool		useprefix;

	context = set_deparse_context_plan(es->deparse_cxt, (Plan *) cscan, ancestors);
	useprefix = list_length(es->rtable) > 1 || es->verbose;

	SumCounters(node, &leader, &total);

	/* a theta join's conditions as written, like a nested loop's Join Filter */
	if (node->gj_Strategy == GPUJOIN_STRATEGY_THETA)
		ShowExprs("Join Cond", list_nth(cscan->custom_exprs, GpuJoinExprsKeyClauses),
				  context, useprefix, es);
	else
		ShowExprs(node->gj_Strategy == GPUJOIN_STRATEGY_MERGE ? "Merge Cond" : "Hash Cond",
				  OuterSideFirst(list_nth(cscan->custom_exprs, GpuJoinExprsKeyClauses),
								 list_nth(cscan->custom_private, GpuJoinPrivateOuterIsLeft)),
				  context, useprefix, es);
	if (node->gj_JoinType != JOIN_INNER)
		ExplainPropertyText("Join Type", join_type_names[node->gj_JoinType], es);
	ExplainPropertyText("Variant", GpuJoinVariantName(node->gj_Spec.variant,
													  node->gj_Spec.materialize), es);
	GpuJoinChainExplain(node, es);
	ShowChainLevels(node, ancestors, es);
	for (int i = 0; i < 2; i++)
	{
		const GpuJoinHeapReader *reader = (i == 0 ? node->gj_Outer : node->gj_Inner).heap;
		Instrumentation *instr = css->ss.ps.instrument;

		if (reader == NULL)
			continue;
		ShowHeapSide(i == 0 ? "Outer Relation" : "Inner Relation",
					 i == 0 ? &node->gj_Outer : &node->gj_Inner,
					 i == 0 ? node->gj_Outer.host_by_tid : node->gj_InnerByTid, es);
		ShowExprs(i == 0 ? "Outer Device Filter" : "Inner Device Filter",
				  list_difference_ptr(reader->quals, reader->host_quals), context, useprefix, es);
		ShowExprs(i == 0 ? "Outer Host Filter" : "Inner Host Filter", reader->host_quals,
				  context, useprefix, es);
		/* per loop, as explain.c shows a Seq Scan's "Rows Removed by Filter" */
		if (reader->quals != NIL && es->analyze && instr != NULL &&
			(total.heap_removed[i] > 0 || es->format != EXPLAIN_FORMAT_TEXT))
		{
			static const char *const labels[2][2] = {
				{"Rows Removed by Outer Device Filter", "Rows Removed by Outer Device and Host Filters"},
				{"Rows Removed by Inner Device Filter", "Rows Removed by Inner Device and Host Filters"},
			};

			ExplainPropertyFloat(labels[i][reader->host_quals != NIL], NULL,
								 instr->nloops > 0 ? total.heap_removed[i] / instr->nloops : 0.0,
								 0, es);
		}
	}
	if (es->verbose)
		ExplainPropertyText("Variants Considered",
							strVal(list_nth(cscan->custom_private, GpuJoinPrivateConsidered)),
							es);
	ShowExprs("Join Filter", join_quals, context, useprefix, es);
	if (join_quals != NIL && es->analyze)
		ShowRowsRemoved("Rows Removed by Join Filter", css, es);
	GpuJoinAggExplain(node, total.agg_groups, total.agg_spills, total.agg_host_sorted, es);

	if (gpujoin_explain_device)
		ExplainPropertyText("Device", node->gj_Workers != NIL ?
							DescribeParticipants(&leader, node->gj_Workers) :
							DeviceText(&leader), es);
	if (gpujoin_explain_device && node->gj_Spec.ndevices > 1)
		ExplainPropertyText("Spread", GpuJoinDescribeSpread(&node->gj_Spec,
															node->gj_Device.kernels), es);
	if (gpujoin_explain_device && es->verbose && node->gj_SpreadConsidered != NULL)
		ExplainPropertyText("Spread Considered", node->gj_SpreadConsidered, es);

	if (!es->analyze)
		return;

	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		appendStringInfoSpaces(es->str, es->indent * 2);
		if (parallel)
			appendStringInfo(es->str, "Participants: %d  ", total.processes);
		if (parallel && total.shared_builds > 0)
			appendStringInfo(es->str, "Shared Builds: " INT64_FORMAT "  ", total.shared_builds);
		if (parallel && total.inner_shares > 0)
			appendStringInfo(es->str, "Inner Shares: " INT64_FORMAT "  ", total.inner_shares);
		if (total.num_parts > 1)
			appendStringInfo(es->str, "Partitions: %d  ", total.num_parts);
		appendStringInfo(es->str,
						 "Chunks: " INT64_FORMAT "  Inner Rows: " INT64_FORMAT
						 "  Outer Rows: " INT64_FORMAT "  Matches: " INT64_FORMAT "\n",
						 total.chunks, total.inner_rows,
						 total.outer_rows, total.matches);
	}
	else
	{
		if (parallel)
		{
			ExplainPropertyInteger("Participants", NULL, total.processes, es);
			ExplainPropertyInteger("Shared Builds", NULL, total.shared_builds, es);
			ExplainPropertyInteger("Inner Shares", NULL, total.inner_shares, es);
		}
		ExplainPropertyInteger("Partitions", NULL, total.num_parts, es);
		ExplainPropertyInteger("Chunks", NULL, total.chunks, es);
		ExplainPropertyInteger("Inner Rows", NULL, total.inner_rows, es);
		ExplainPropertyInteger("Outer Rows", NULL, total.outer_rows, es);
		ExplainPropertyInteger("Matches", NULL, total.matches, es);
	}

	/* what the pages held depends on vacuum and the run (hidden in tests) */
	if (node->gj_Outer.heap && gpujoin_explain_device)
		ShowHeapCounters("Outer", &total, 0, es);
	if (node->gj_Inner.heap && gpujoin_explain_device)
		ShowHeapCounters("Inner", &total, 1, es);

	if (total.stats.detail[0] != '\0')
		ExplainPropertyText("Kernels", total.stats.detail, es);
	if (gpujoin_explain_device && total.stats.ndevices > 1)
		ShowPerDevice(&total.stats, es);

	if (gpujoin_explain_device)
	{
		int64		to_kb = (total.stats.bytes_to_device + 1023) / 1024;
		int64		from_kb = (total.stats.bytes_from_device + 1023) / 1024;
		int64		peak_kb = (total.stats.device_memory_peak + 1023) / 1024;

		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str,
							 "Transfer: to device " INT64_FORMAT "kB  from device " INT64_FORMAT
							 "kB  Device Memory: " INT64_FORMAT "kB\n",
							 to_kb, from_kb, peak_kb);
		}
		else
		{
			ExplainPropertyInteger("Transfer To Device", "kB", to_kb, es);
			ExplainPropertyInteger("Transfer From Device", "kB", from_kb, es);
			ExplainPropertyInteger("Device Memory", "kB", peak_kb, es);
		}
	}

	if (es->timing)
	{
		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str,
							 "Time: load=%.3f transfer=%.3f build=%.3f probe=%.3f materialize=%.3f emit=%.3f ms\n",
							 total.load_ms, total.stats.transfer_ms, total.stats.build_ms,
							 total.stats.probe_ms, total.stats.materialize_ms, total.emit_ms);
		}
		else
		{
			ExplainPropertyFloat("Load Time", "ms", total.load_ms, 3, es);
			ExplainPropertyFloat("Transfer Time", "ms", total.stats.transfer_ms, 3, es);
			ExplainPropertyFloat("Build Time", "ms", total.stats.build_ms, 3, es);
			ExplainPropertyFloat("Probe Time", "ms", total.stats.probe_ms, 3, es);
			ExplainPropertyFloat("Materialize Time", "ms", total.stats.materialize_ms, 3, es);
			ExplainPropertyFloat("Emit Time", "ms", total.emit_ms, 3, es);
		}
	}
}
