-- test/018_parallel_join.sql
--
-- Parallel GPU joins (src/planner.c; src/exec_parallel.c): below a
-- Gather, every process joins its part of the outer side (a Parallel Seq
-- Scan, or its blocks read as heap pages: test/022) against the whole
-- inner side.  Differential: inner, left, semi and
-- anti joins on int4, int8, text (hashed) and two-column keys, with
-- duplicate keys, NULL keys on both sides, a skewed key and NULL payloads,
-- plus a join filter, an empty inner side and a band join, each planned as
-- a Parallel Custom Scan, must return PostgreSQL's rows.  Right and full
-- joins run that way only with their inner side read as heap pages, whose
-- unmatched rows the last participant emits (test/030).  EXPLAIN ANALYZE adds up the participants' counters (every
-- outer row once, the inner side once per participant), with and without
-- the leader taking part and over the launches of a rescanned Gather.
-- gpujoin.enable_parallel = off and gpujoin.worker_setup_cost take the path
-- away; that setup is priced once a process, on the lowest of stacked
-- parallel GPU joins.  The plans are priced as on a GPU (gpujoin.cost_as_gpu), so the CPU
-- twin runs the same plans in CI.
BEGIN;
SELECT plan(49);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;

SELECT current_setting('gpujoin.device') = 'gpu' AS on_gpu \gset

-- r (outer, 120000 rows) and s (inner, 20000 rows), e empty (helpers.psql)
SELECT pg_temp.make_join_tables(120000, 20000);

-- the queries: the join types that can run in parallel on each key, and a
-- few shapes more; right and full joins, which can with their inner side
-- read as heap pages (a right join also as a left join, sides swapped)
SELECT pg_temp.make_join_queries(ARRAY['inner', 'left', 'semi', 'anti']);
INSERT INTO q VALUES
	('inner join with a join filter',
	 'SELECT r.id, s.id AS sid FROM r JOIN s ON r.k8 = s.k8 AND r.id < s.id'),
	('left join, empty inner side',
	 'SELECT r.id, e.id AS eid FROM r LEFT JOIN e ON r.k = e.k'),
	('band join',
	 'SELECT r.id, s.id AS sid FROM r JOIN s ON r.k BETWEEN s.k AND s.k + 1 WHERE s.id % 20 = 0'),
	('right join on int4',
	 'SELECT r.id, s.id AS sid FROM r RIGHT JOIN s ON r.k = s.k'),
	('full join on int4',
	 'SELECT r.id, s.id AS sid FROM r FULL JOIN s ON r.k = s.k');

-- PostgreSQL's rows
:postgres_join
CREATE TEMP TABLE ref AS SELECT name, pg_temp.rows_digest(sql) AS digest FROM q;

-- gpujoin, with parallel plans made cheap and the GPU's pricing
:gpu_join
:parallel_cheap
CREATE TEMP TABLE got AS
SELECT name, pg_temp.rows_digest(sql) AS digest, pg_temp.plan_analyze(sql) AS plan FROM q;

SELECT is(got.digest, ref.digest, got.name || ': the same rows as PostgreSQL')
FROM got JOIN ref USING (name) ORDER BY name;

SELECT is(string_agg(name, ', ' ORDER BY name), NULL,
	'every join ran as a Parallel Custom Scan under a Gather')
FROM got
WHERE NOT (plan ~ 'Gather' AND plan ~ 'Parallel Custom Scan \(Gpu(Hash|Theta)Join\)');
SELECT ok(plan ~ 'Join Type: Left' OR plan ~ 'Join Type: Right\n(\s+\S[^\n]*\n)*?\s+Inner Relation: \w+ \(heap pages\)',
	'a right join runs in parallel as a left join, its sides swapped, or with its inner side read as heap pages')
FROM got WHERE name = 'right join on int4';
SELECT ok(plan ~ 'Join Type: Full\n(\s+\S[^\n]*\n)*?\s+Inner Relation: \w+ \(heap pages\)',
	'a full join runs in parallel with its inner side read as heap pages (test/030)')
FROM got WHERE name = 'full join on int4';

-- the counters of every participant, added up.  The planner may take
-- either table as the partial outer side (the sides are priced close when
-- the inner one is read as heap pages), so the expected counts follow the
-- plan: the relation under the Parallel Seq Scan, or the one read as heap
-- pages in parallel, is the outer one.
CREATE FUNCTION pg_temp.outer_size(plan text) RETURNS bigint
LANGUAGE sql AS $$
	SELECT CASE substring(plan FROM '(?:Parallel Seq Scan on|Outer Relation:) (\w+)')
		WHEN 'r' THEN 120000 WHEN 's' THEN 20000 END::bigint $$;
CREATE FUNCTION pg_temp.inner_size(plan text) RETURNS bigint
LANGUAGE sql AS $$
	SELECT CASE substring(plan FROM '(?:Parallel Seq Scan on|Outer Relation:) (\w+)')
		WHEN 'r' THEN 20000 WHEN 's' THEN 120000 END::bigint $$;
CREATE TEMP TABLE counted AS
SELECT pg_temp.plan_number(plan, 'Participants') AS participants,
	pg_temp.plan_number(plan, 'Workers Launched') AS launched,
	pg_temp.plan_number(plan, 'Outer Rows') AS outer_rows,
	pg_temp.plan_number(plan, 'Inner Rows') AS inner_rows,
	coalesce(pg_temp.plan_number(plan, 'Shared Builds'), 0) AS shared,
	pg_temp.plan_number(plan, 'Matches') AS matches,
	substring(plan FROM 'Parallel Custom Scan \(GpuHashJoin\) \(actual rows=[\d.]+ loops=(\d+)\)')::bigint AS loops,
	pg_temp.outer_size(plan) AS outer_size,
	pg_temp.inner_size(plan) AS inner_size
FROM got WHERE name = 'inner join on int4';
SELECT cmp_ok(launched, '>=', 1::bigint, 'workers were launched') FROM counted;
SELECT is(participants, launched + 1, 'the leader and every worker took part')
FROM counted;
SELECT is(participants, loops, 'Participants: as many as the node''s loops')
FROM counted;
SELECT is(outer_rows, outer_size, 'every outer row was read once, by one participant')
FROM counted;
SELECT is(inner_rows, (participants - shared) * inner_size,
	'every participant read the whole inner side (but those that probed another''s build: test/028)')
FROM counted;
SELECT is(matches, split_part((SELECT digest FROM ref WHERE name = 'inner join on int4'), ':', 1)::bigint,
	'the participants'' matches add up to the join''s rows')
FROM counted;

-- the device each participant used
SET LOCAL gpujoin.explain_device = on;
SELECT matches(pg_temp.plan_analyze(sql),
	CASE WHEN :'on_gpu'::boolean THEN 'Device: GPU 0 \([^)]*\)(, gpujoin service)?\n' ELSE 'Device: CPU(, gpujoin service)?\n' END,
	'Device: one device, for every participant')
FROM q WHERE name = 'left join on int8';
RESET gpujoin.explain_device;

-- the leader not taking part: the workers' counters alone
SET LOCAL parallel_leader_participation = off;
CREATE TEMP TABLE counted_workers AS
SELECT pg_temp.plan_number(plan, 'Participants') AS participants,
	pg_temp.plan_number(plan, 'Workers Launched') AS launched,
	pg_temp.plan_number(plan, 'Outer Rows') AS outer_rows,
	pg_temp.plan_number(plan, 'Inner Rows') AS inner_rows,
	coalesce(pg_temp.plan_number(plan, 'Shared Builds'), 0) AS shared,
	pg_temp.outer_size(plan) AS outer_size,
	pg_temp.inner_size(plan) AS inner_size,
	pg_temp.rows_digest(sql) AS digest
FROM (SELECT sql, pg_temp.plan_analyze(sql) AS plan FROM q WHERE name = 'anti join on text') x;
SELECT is(participants, launched, 'without the leader: the workers alone took part')
FROM counted_workers;
SELECT is(outer_rows, outer_size, 'without the leader: every outer row read once')
FROM counted_workers;
SELECT is(inner_rows, (participants - shared) * inner_size,
	'without the leader: the inner side once per worker (that built)')
FROM counted_workers;
SELECT is(digest, (SELECT digest FROM ref WHERE name = 'anti join on text'),
	'without the leader: the same rows') FROM counted_workers;
RESET parallel_leader_participation;

-- a Gather rescanned (a subplan run once per x): each launch's workers count
-- (a GpuPreAgg, in one process, would aggregate the join: not this test's)
SET LOCAL gpujoin.enable_preagg = off;
\set qrescan 'SELECT x, (SELECT count(*) + x FROM r JOIN s ON r.k = s.k) FROM generate_series(1, 3) x'
SELECT pg_temp.plan_analyze(:'qrescan') AS rescan_plan \gset
SELECT matches(:'rescan_plan'::text, 'Parallel Custom Scan \(GpuHashJoin\) \(actual rows=[\d.]+ loops=(\d+)\)',
	'rescan: the subplan''s join runs in parallel');
SELECT is(pg_temp.plan_number(:'rescan_plan', 'Participants'),
	substring(:'rescan_plan' FROM 'Parallel Custom Scan \(GpuHashJoin\) \(actual rows=[\d.]+ loops=(\d+)\)')::bigint,
	'rescan: Participants counts the runs of every launch');
SELECT is(pg_temp.plan_number(:'rescan_plan', 'Outer Rows'), 3 * pg_temp.outer_size(:'rescan_plan'),
	'rescan: every outer row once per run of the subplan');
SELECT is(pg_temp.rows_digest(:'qrescan'),
	(SELECT pg_temp.rows_digest(format('SELECT x, %s + x FROM generate_series(1, 3) x',
		split_part(digest, ':', 1))) FROM ref WHERE name = 'inner join on int4'),
	'rescan: the same rows');

-- partitioned in every participant under a device memory limit
SET LOCAL gpujoin.device_memory_limit = '1MB';
SELECT pg_temp.plan_analyze(sql) AS part_plan FROM q WHERE name = 'left join on int4' \gset
SELECT matches(:'part_plan'::text, 'Parallel Custom Scan .*Partitions: \d+',
	'1 MB of device memory: each participant joins in partitions');
SELECT is(pg_temp.rows_digest(sql), (SELECT digest FROM ref WHERE name = 'left join on int4'),
	'partitioned in parallel: the same rows') FROM q WHERE name = 'left join on int4';
RESET gpujoin.device_memory_limit;

-- the planner's account
-- (through the service, one build the processes share, where it qualifies)
SELECT current_setting('gpujoin.service') = 'on'
	AND (SELECT service FROM gpujoin_device_info()) ~ '^running' AS service \gset
SELECT matches(pg_temp.plan_verbose(sql),
	CASE WHEN :'service'::boolean
		THEN 'Variants Considered: .*; run by (each of 3 processes on all inner rows|3 processes on one build of the inner rows)'
		ELSE 'Variants Considered: .*; run by each of 3 processes on all inner rows' END,
	'EXPLAIN (VERBOSE): the variants considered say how many processes run the join')
FROM q WHERE name = 'inner join on int4';
SELECT is((SELECT count(*) FROM gpujoin_explain_choice(sql) WHERE chosen), 1::bigint,
	'gpujoin_explain_choice reads a parallel join''s variants')
FROM q WHERE name = 'inner join on int4';

-- what takes the parallel path away
SET LOCAL gpujoin.enable_parallel = off;
SELECT matches(pg_temp.plan(sql), '^(?!.*Parallel Custom Scan).*Custom Scan \(GpuHashJoin\)',
	'gpujoin.enable_parallel = off: a GPU join, not a parallel one')
FROM q WHERE name = 'inner join on int4';
RESET gpujoin.enable_parallel;
SET LOCAL gpujoin.worker_setup_cost = 1e9;
SELECT doesnt_match(pg_temp.plan(sql), 'Parallel Custom Scan',
	'gpujoin.worker_setup_cost priced high: no parallel GPU join')
FROM q WHERE name = 'inner join on int4';
RESET gpujoin.worker_setup_cost;
SET LOCAL max_parallel_workers_per_gather = 0;
SELECT doesnt_match(pg_temp.plan(sql), 'Parallel|Gather',
	'max_parallel_workers_per_gather = 0: no parallel plan')
FROM q WHERE name = 'inner join on int4';
RESET max_parallel_workers_per_gather;

-- A process opens the GPU (or becomes a client of the gpujoin service)
-- once: of two parallel GPU joins stacked in the same processes only the
-- lower one's price carries gpujoin.worker_setup_cost, so the upper one
-- costs as much more than the lower one at any setting
CREATE FUNCTION pg_temp.parallel_gpu_costs(q text) RETURNS float8[] LANGUAGE plpgsql AS $$
DECLARE
	j jsonb;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN (SELECT array_agg(c::text::float8 ORDER BY c::text::float8 DESC)
			FROM jsonb_path_query(j, 'strict $.** ? (@."Node Type" == "Custom Scan" && @."Parallel Aware" == true)."Total Cost"') c);
END $$;
SET LOCAL gpujoin.enable_chain = off;
CREATE TEMP TABLE stacked AS
SELECT setup, pg_temp.parallel_gpu_costs(
	'SELECT r.id, s.id AS sid, s2.id AS s2id FROM r JOIN s ON r.k = s.k JOIN s s2 ON r.k8 = s2.k8') AS costs
FROM (VALUES (0), (100)) AS v(setup),
	LATERAL (SELECT set_config('gpujoin.worker_setup_cost', setup::text, true)) AS c;
SELECT is(array_agg(cardinality(costs) ORDER BY setup), ARRAY[2, 2],
	'three tables: two parallel GPU joins stacked, at both worker setup costs')
FROM stacked;
SELECT cmp_ok(b.costs[2] - a.costs[2], '>', 10::float8,
	'the lower parallel GPU join is charged the worker setup')
FROM stacked a, stacked b WHERE a.setup = 0 AND b.setup = 100;
SELECT cmp_ok(abs((b.costs[1] - b.costs[2]) - (a.costs[1] - a.costs[2])), '<', 0.01::float8,
	'the upper one, in the same processes, is not charged it again')
FROM stacked a, stacked b WHERE a.setup = 0 AND b.setup = 100;

SELECT * FROM finish();
ROLLBACK;
