-- test/030_parallel_fill.sql
--
-- Parallel right and full GPU joins (src/exec_parallel.c, GpuJoinFillDetach):
-- each participant joins its share of the outer side against the whole
-- inner side, which it reads as heap pages, and marks the inner rows it
-- matched; when its outer side is done it ORs its marks into flags in the
-- query's shared memory, and the last participant to finish emits the inner
-- rows that no participant matched, once.  Differential: right and full
-- joins on int4 and int8 keys, with duplicates, a skewed key, NULL keys on
-- both sides, a join filter that decides which pairs match, a pushed-down
-- filter, an inner text column, an empty inner side and no outer row,
-- must return PostgreSQL's rows; with and without the leader taking part,
-- with more workers, over the launches of a rescanned Gather, and
-- partitioned under a device memory limit (the inner batch reordered by
-- partition, its flags mapped back to the rows as read; the workers with
-- less memory than the leader, gpujoin.inject_fault = worker_memory, so
-- that their partitions differ).  A join whose
-- inner side is not read as heap pages (gpujoin.enable_heapscan = off)
-- gets no parallel GPU path: its participants could read the inner rows
-- in different orders.  The plans are priced as on a GPU
-- (gpujoin.cost_as_gpu), so the CPU twin runs the same plans in CI.
BEGIN;
SELECT plan(21);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;

-- fo (outer, 90000 rows over about 500 pages), fi (inner, 12000 rows):
-- most inner keys match outer rows of one block only, so a participant
-- that emitted its own unmatched rows would emit rows another matched
CREATE TABLE fo (id int4, k int4, k8 int8, v int4);
INSERT INTO fo SELECT g,
	CASE WHEN g % 97 = 0 THEN NULL WHEN g % 60 = 0 THEN 7 ELSE g / 3 END,
	CASE WHEN g % 89 = 0 THEN NULL ELSE (g % 20000)::int8 * 1000003 END,
	CASE WHEN g % 7 = 0 THEN NULL ELSE g END
FROM generate_series(1, 90000) g;
CREATE TABLE fi (id int4, k int4, k8 int8, w int4, t text);
INSERT INTO fi SELECT g,
	CASE WHEN g % 53 = 0 THEN NULL WHEN g % 400 = 0 THEN 7 ELSE (g * 5) % 40000 END,
	(g % 30000)::int8 * 1000003,
	CASE WHEN g % 11 = 0 THEN NULL ELSE g % 1000 END,
	CASE WHEN g % 5 = 0 THEN NULL ELSE 't' || g END
FROM generate_series(1, 12000) g;
CREATE TABLE fe (LIKE fi);
ANALYZE fo, fi, fe;

CREATE TEMP TABLE fq (name text PRIMARY KEY, sql text);
INSERT INTO fq VALUES
	('full int4', 'SELECT fo.id, fo.v, fi.id AS iid, fi.w FROM fo FULL JOIN fi ON fo.k = fi.k'),
	('right int4', 'SELECT fo.id, fi.id AS iid, fi.w FROM fo RIGHT JOIN fi ON fo.k = fi.k'),
	('full int8', 'SELECT fo.id, fi.id AS iid FROM fo FULL JOIN fi ON fo.k8 = fi.k8'),
	('right join filter', 'SELECT fo.id, fi.id AS iid FROM fo RIGHT JOIN fi ON fo.k = fi.k AND fo.v < fi.w * 40'),
	('full pushed-down filter', 'SELECT fo.id, fi.id AS iid FROM fo FULL JOIN fi ON fo.k = fi.k WHERE coalesce(fo.v, 0) % 3 <> 1'),
	('right inner text', 'SELECT fo.id, fi.t FROM fo RIGHT JOIN fi ON fo.k8 = fi.k8'),
	('full empty inner', 'SELECT fo.id, fe.id AS eid FROM fo FULL JOIN fe ON fo.k = fe.k'),
	('right no outer row', 'SELECT fo.id, fi.id AS iid FROM fo RIGHT JOIN fi ON fo.k = fi.k AND fo.id < 0');

-- PostgreSQL's rows
:postgres_join
CREATE TEMP TABLE ref AS SELECT name, pg_temp.rows_digest(sql) AS digest FROM fq;

-- gpujoin, with parallel plans made cheap and the GPU's pricing; no shared
-- builds, which the planner could price a left join with the sides swapped
-- by (a right or full join's are not shared), and this test is of the
-- right and full joins
:gpu_join
:parallel_cheap
SET LOCAL gpujoin.parallel_shared_build = off;
CREATE TEMP TABLE got AS
SELECT name, pg_temp.rows_digest(sql) AS digest, pg_temp.plan_analyze(sql) AS plan FROM fq;

SELECT is(got.digest, ref.digest, got.name || ': the same rows as PostgreSQL')
FROM got JOIN ref USING (name) ORDER BY name;
SELECT is(string_agg(name, ', ' ORDER BY name), NULL,
	'every right and full join ran in parallel, its inner side read as heap pages')
FROM got
WHERE NOT (plan ~ 'Gather' AND plan ~ 'Parallel Custom Scan \(GpuHashJoin\)'
	AND plan ~ 'Join Type: (Right|Full)' AND plan ~ 'Inner Relation: \w+ \(heap pages\)');
SELECT cmp_ok(pg_temp.plan_number(plan, 'Workers Launched'), '>=', 1::bigint,
	'workers were launched') FROM got WHERE name = 'full int4';
SELECT matches(pg_temp.plan_verbose(sql), 'the last to finish emitting those none matched',
	'EXPLAIN VERBOSE: the last participant emits the unmatched inner rows')
FROM fq WHERE name = 'right int4';

-- the leader not taking part
SET LOCAL parallel_leader_participation = off;
SELECT is(pg_temp.rows_digest(sql), (SELECT digest FROM ref WHERE name = 'full int4'),
	'without the leader: the same rows') FROM fq WHERE name = 'full int4';
RESET parallel_leader_participation;

-- more participants than blocks to go round at the end
SET LOCAL max_parallel_workers_per_gather = 6;
SELECT is(pg_temp.rows_digest(sql), (SELECT digest FROM ref WHERE name = 'right int4'),
	'six workers: the same rows') FROM fq WHERE name = 'right int4';
RESET max_parallel_workers_per_gather;
SET LOCAL max_parallel_workers_per_gather = 2;

-- a Gather rescanned (a subplan run once per x): the flags start over at
-- each launch
SET LOCAL gpujoin.enable_preagg = off;
\set qrescan 'SELECT x, (SELECT count(*) + x FROM fo FULL JOIN fi ON fo.k = fi.k) FROM generate_series(1, 3) x'
SELECT matches(pg_temp.plan(:'qrescan'), 'Parallel Custom Scan \(GpuHashJoin\)',
	'rescan: the subplan''s full join runs in parallel');
SELECT is(pg_temp.rows_digest(:'qrescan'),
	(SELECT pg_temp.rows_digest(format('SELECT x, %s + x FROM generate_series(1, 3) x',
		split_part(digest, ':', 1))) FROM ref WHERE name = 'full int4'),
	'rescan: the same rows at every launch');

-- partitioned in every participant under a device memory limit: the inner
-- rows reordered by partition, the flags by the rows as read
SET LOCAL gpujoin.device_memory_limit = '64kB';
SELECT pg_temp.plan_analyze(sql) AS part_plan, pg_temp.rows_digest(sql) AS part_digest
FROM fq WHERE name = 'full int4' \gset
SELECT matches(:'part_plan'::text, 'Parallel Custom Scan[\s\S]*Partitions: \d+',
	'64 kB of device memory: the parallel full join is partitioned');
SELECT is(:'part_digest'::text, (SELECT digest FROM ref WHERE name = 'full int4'),
	'partitioned in parallel: the same rows');
SELECT is(pg_temp.rows_digest(sql), (SELECT digest FROM ref WHERE name = 'right join filter'),
	'partitioned in parallel, with a join filter: the same rows') FROM fq WHERE name = 'right join filter';
-- the workers with a quarter of the leader's room: partitions of their own,
-- the flags still by the rows as read
SET LOCAL gpujoin.inject_fault = worker_memory;
SELECT is(pg_temp.rows_digest(sql), (SELECT digest FROM ref WHERE name = 'full int4'),
	'partitioned unlike the leader in the workers: the same rows') FROM fq WHERE name = 'full int4';
RESET gpujoin.inject_fault;
RESET gpujoin.device_memory_limit;

-- the inner side not read as heap pages: no parallel right or full GPU
-- join (a serial one, or PostgreSQL's own)
SET LOCAL gpujoin.enable_heapscan = off;
SELECT is(pg_temp.plan(sql) ~ 'Parallel Custom Scan', false,
	'enable_heapscan = off: no parallel GPU full join') FROM fq WHERE name = 'full int4';
SELECT is(pg_temp.rows_digest(sql), (SELECT digest FROM ref WHERE name = 'full int4'),
	'enable_heapscan = off: the same rows') FROM fq WHERE name = 'full int4';
RESET gpujoin.enable_heapscan;

SELECT * FROM finish();
ROLLBACK;
