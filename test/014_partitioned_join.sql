-- test/014_partitioned_join.sql
--
-- A hash join whose inner side does not fit gpujoin.device_memory_limit runs
-- in partitions (src/exec_partition.c): both sides split by a
-- hash of the key, joined one partition at a time.  Differential: every
-- join type on int4, int8, text (hashed) and two-column keys, with duplicate
-- keys, NULL keys on both sides, one skewed key, NULL payloads and an empty
-- side, must return PostgreSQL's rows; EXPLAIN ANALYZE must show the
-- partitions and, on a GPU, no fallback to the CPU.  Also: a rescan that
-- keeps the inner side and one that reloads it, an outer side spilled to
-- temporary files (a small work_mem), a cursor stopped halfway, and the
-- planner's account of the partitions in EXPLAIN (VERBOSE).  The CPU twin
-- partitions under the limit as the GPU does, so this runs in CI too.
BEGIN;
SELECT plan(40);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;

SELECT current_setting('gpujoin.device') = 'gpu' AS on_gpu \gset

-- r (outer, 60000 rows) and s (inner, 40000 rows), e empty (helpers.psql)
SELECT pg_temp.make_join_tables(60000, 40000);

-- the queries: every join type on each key, and a few shapes more
SELECT pg_temp.make_join_queries(ARRAY['inner', 'left', 'right', 'full', 'semi', 'anti']);
INSERT INTO q VALUES
	('inner join with a join filter',
	 'SELECT r.id, s.id AS sid FROM r JOIN s ON r.k8 = s.k8 AND r.id < s.id'),
	('left join, empty inner side',
	 'SELECT r.id, e.id AS eid FROM r LEFT JOIN e ON r.k = e.k'),
	('full join, empty inner side',
	 'SELECT r.id, e.id AS eid FROM r FULL JOIN e ON r.k = e.k');

-- PostgreSQL's rows
:postgres_join
CREATE TEMP TABLE ref AS SELECT name, pg_temp.rows_digest(sql) AS digest FROM q;

-- gpujoin forced, 1 MB of device memory: the inner side (about 3 MB of
-- device structures) takes several partitions
:gpu_join
SET LOCAL gpujoin.device_memory_limit = '1MB';
CREATE TEMP TABLE got AS
SELECT name, pg_temp.rows_digest(sql) AS digest, pg_temp.plan_analyze(sql) AS plan FROM q;

SELECT is(got.digest, ref.digest, got.name || ': the same rows as PostgreSQL')
FROM got JOIN ref USING (name) ORDER BY name;

-- every query but the empty ones ran in partitions, on the GPU where there is one
SELECT is(string_agg(name, ', ' ORDER BY name), NULL,
	'in partitions on the device, no fallback: every query with a non-empty inner side')
FROM got
WHERE name NOT LIKE '%empty%'
	AND NOT (coalesce(pg_temp.plan_number(plan, 'Partitions'), 0) >= 2
			 AND plan ~ 'GpuHashJoin' AND plan !~ 'fell back');
SELECT is(count(*), 2::bigint, 'an empty inner side needs no partitions')
FROM got WHERE name LIKE '%empty%' AND plan !~ 'Partitions';

-- the outer side's chunks were lowered to fit beside a partition
SELECT cmp_ok(pg_temp.plan_number(plan, 'Chunks'), '>', pg_temp.plan_number(plan, 'Partitions'),
	'chunks smaller than gpujoin.chunk_rows: more chunks than partitions')
FROM got WHERE name = 'inner join on int4';
SELECT is(pg_temp.plan_number(plan, 'Inner Rows'), 40000::bigint,
	'every inner row was read once') FROM got WHERE name = 'inner join on int4';
SELECT is(pg_temp.plan_number(plan, 'Outer Rows'), 60000::bigint,
	'every outer row was read once, those with a NULL key included')
FROM got WHERE name = 'inner join on int4';

-- the planner knows: EXPLAIN (VERBOSE) names the partitions
SELECT matches(pg_temp.plan_verbose('SELECT r.id, s.id FROM r JOIN s ON r.k = s.k'),
	'Variants Considered: .*MB available: \d+ partitions',
	'EXPLAIN (VERBOSE): the variants considered end with the partitions');

-- a smaller work_mem: the outer partitions spill to temporary files
SET LOCAL work_mem = '64kB';
SELECT is(pg_temp.rows_digest(sql), (SELECT digest FROM ref WHERE name = 'full join on int4'),
	'outer side spilled to temporary files: the same rows')
FROM q WHERE name = 'full join on int4';
RESET work_mem;

-- rescans: the outer side depends on x (the inner side is kept, its
-- partitions joined again), or the inner side does (read again)
\set qrescan_outer 'SELECT x, (SELECT count(*) || '':'' || coalesce(sum(s.id), 0) FROM r JOIN s ON r.k = s.k WHERE r.id % 3 = x) FROM generate_series(0, 2) x'
\set qrescan_inner 'SELECT x, (SELECT count(*) || '':'' || coalesce(sum(r.id), 0) FROM r LEFT JOIN s ON r.k = s.k AND s.id % 3 = x) FROM generate_series(0, 2) x'
:postgres_join
CREATE TEMP TABLE ref_rescan AS
SELECT 1 AS n, pg_temp.rows_digest(:'qrescan_outer') AS digest
UNION ALL SELECT 2, pg_temp.rows_digest(:'qrescan_inner');
:gpu_join
SET LOCAL gpujoin.device_memory_limit = '1MB';
SELECT matches(pg_temp.plan_analyze(:'qrescan_outer'), 'Partitions: \d+',
	'rescan keeping the inner side: the subplan''s join runs in partitions');
SELECT is(pg_temp.rows_digest(:'qrescan_outer'), (SELECT digest FROM ref_rescan WHERE n = 1),
	'rescan keeping the inner side: the same rows');
SELECT is(pg_temp.rows_digest(:'qrescan_inner'), (SELECT digest FROM ref_rescan WHERE n = 2),
	'rescan reading the inner side again: the same rows');

-- a cursor stopped halfway, then closed; the join runs again after it
DECLARE c NO SCROLL CURSOR FOR SELECT r.id, s.id FROM r JOIN s ON r.k = s.k;
SELECT is(count(*), 1000::bigint, 'a cursor over a partitioned join: 1000 rows fetched')
FROM pg_temp.fetch_rows('c', 1000);
CLOSE c;
SELECT is(pg_temp.rows_digest(sql), (SELECT digest FROM ref WHERE name = 'inner join on int4'),
	'after the cursor: the same rows again')
FROM q WHERE name = 'inner join on int4';

-- without the limit: one piece
RESET gpujoin.device_memory_limit;
SELECT doesnt_match(pg_temp.plan_analyze('SELECT r.id, s.id FROM r JOIN s ON r.k = s.k'),
	'Partitions', 'without the limit the join is not partitioned');

SELECT * FROM finish();
ROLLBACK;
