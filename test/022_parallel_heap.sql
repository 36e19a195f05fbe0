-- test/022_parallel_heap.sql
--
-- A parallel GPU join that reads its outer side as heap pages (src/exec_heap.c,
-- src/exec_parallel.c): no Parallel Seq Scan under it; the processes share
-- out the relation's blocks through the join's own parallel block scan.
-- Differential: inner, left, semi and anti joins on int4 and int8 keys, with
-- duplicates, NULL keys and NULL payloads, rows deleted and updated in the
-- transaction, must return PostgreSQL's rows.  EXPLAIN ANALYZE adds up the
-- participants' counters: every block of the outer relation read once, by
-- one process, every visible row once; with and without the leader taking
-- part, over the launches of a rescanned Gather, and in a join partitioned
-- under a device memory limit (whose outer rows go through tuplestores).
-- The plans are priced as on a GPU (gpujoin.cost_as_gpu), so the CPU twin
-- runs the same plans in CI.
BEGIN;
SELECT plan(25);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;

-- po (outer, 90000 rows over about 400 pages) and pi (inner, 4000 rows)
CREATE TABLE po (id int4, k int4, k8 int8, v int4, t text);
INSERT INTO po SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE g % 5000 END,
	CASE WHEN g % 89 = 0 THEN NULL ELSE (g % 3000)::int8 * 1000003 END,
	CASE WHEN g % 7 = 0 THEN NULL ELSE g END,
	CASE WHEN g % 5 = 0 THEN NULL ELSE 't' || g END
FROM generate_series(1, 90000) g;
CREATE TABLE pi (id int4, k int4, k8 int8, w int4);
INSERT INTO pi SELECT g, CASE WHEN g % 53 = 0 THEN NULL ELSE g % 2500 END,
	(g % 1500)::int8 * 1000003, CASE WHEN g % 11 = 0 THEN NULL ELSE g END
FROM generate_series(1, 4000) g;
-- a skewed key
INSERT INTO pi SELECT 4000 + g, 7, 7 * 1000003, g FROM generate_series(1, 40) g;
ANALYZE po, pi;
-- rows this transaction deleted and updated (HOT and not): the workers
-- must see them as the leader does
DELETE FROM po WHERE id % 13 = 0;
UPDATE po SET v = -v WHERE id % 17 = 0;
UPDATE po SET k = k + 1 WHERE id % 19 = 0;

CREATE TEMP TABLE pq (name text PRIMARY KEY, sql text);
INSERT INTO pq VALUES
	('inner int4', 'SELECT po.id, po.v, pi.w FROM po JOIN pi ON po.k = pi.k'),
	('inner int8', 'SELECT po.id, pi.id AS pid FROM po JOIN pi ON po.k8 = pi.k8'),
	('left int4', 'SELECT po.id, po.v, pi.w FROM po LEFT JOIN pi ON po.k = pi.k'),
	('semi int4', 'SELECT po.id, po.v FROM po WHERE EXISTS (SELECT FROM pi WHERE pi.k = po.k)'),
	('anti int8', 'SELECT po.id, po.v FROM po WHERE NOT EXISTS (SELECT FROM pi WHERE pi.k8 = po.k8)'),
	('join filter', 'SELECT po.id, pi.id AS pid FROM po JOIN pi ON po.k = pi.k AND po.v < pi.w * 20'),
	('a text column of the outer side', 'SELECT po.t, pi.w FROM po JOIN pi ON po.k8 = pi.k8 AND pi.id < 50');

-- PostgreSQL's rows
:postgres_join
CREATE TEMP TABLE ref AS SELECT name, pg_temp.rows_digest(sql) AS digest FROM pq;
SELECT count(*) AS outer_rows FROM po \gset
SELECT pg_relation_size('po') / current_setting('block_size')::int AS outer_blocks \gset

-- gpujoin, with parallel plans made cheap and the GPU's pricing
:gpu_join
:parallel_cheap
CREATE TEMP TABLE got AS
SELECT name, pg_temp.rows_digest(sql) AS digest, pg_temp.plan_analyze(sql) AS plan FROM pq;

SELECT is(got.digest, ref.digest, got.name || ': the same rows as PostgreSQL')
FROM got JOIN ref USING (name) ORDER BY name;
SELECT is(string_agg(name, ', ' ORDER BY name), NULL,
	'every join ran as a Parallel Custom Scan whose outer side is read as heap pages, in parallel')
FROM got
WHERE NOT (plan ~ 'Gather' AND plan ~ 'Parallel Custom Scan \(GpuHashJoin\)'
	AND plan ~ 'Outer Relation: po \(heap pages, parallel' AND plan !~ 'Seq Scan on po');

-- the text column fetched by tid for each match, by every participant
SET LOCAL gpujoin.heap_fetch = on;
SELECT is(pg_temp.rows_digest(sql), (SELECT digest FROM ref WHERE name = 'a text column of the outer side'),
	'parallel, the outer side''s host columns fetched per match: the same rows as PostgreSQL')
	FROM pq WHERE name = 'a text column of the outer side';
RESET gpujoin.heap_fetch;

-- the counters of every participant, added up
CREATE TEMP TABLE counted AS
SELECT pg_temp.plan_number(plan, 'Participants') AS participants,
	pg_temp.plan_number(plan, 'Workers Launched') AS launched,
	pg_temp.plan_number(plan, 'Outer Rows') AS outer_rows,
	substring(plan FROM 'Outer Pages: read=(\d+)')::bigint AS outer_pages
FROM got WHERE name = 'inner int4';
SELECT cmp_ok(launched, '>=', 1::bigint, 'workers were launched') FROM counted;
SELECT is(participants, launched + 1, 'the leader and every worker took part') FROM counted;
SELECT is(outer_rows, :outer_rows::bigint, 'every visible outer row was read once, by one participant')
FROM counted;
SELECT is(outer_pages, :outer_blocks::bigint, 'every block of the outer relation was read once')
FROM counted;

-- the leader not taking part
SET LOCAL parallel_leader_participation = off;
SELECT pg_temp.plan_analyze(sql) AS noleader_plan, pg_temp.rows_digest(sql) AS noleader_digest
FROM pq WHERE name = 'left int4' \gset
SELECT is(pg_temp.plan_number(:'noleader_plan', 'Participants'),
	pg_temp.plan_number(:'noleader_plan', 'Workers Launched'),
	'without the leader: the workers alone took part');
SELECT is(pg_temp.plan_number(:'noleader_plan', 'Outer Rows'), :outer_rows::bigint,
	'without the leader: every outer row read once');
SELECT is(:'noleader_digest'::text, (SELECT digest FROM ref WHERE name = 'left int4'),
	'without the leader: the same rows');
RESET parallel_leader_participation;

-- a Gather rescanned (a subplan run once per x): the block scan starts over
-- at each launch (a GpuPreAgg, in one process, would aggregate the join)
SET LOCAL gpujoin.enable_preagg = off;
\set qrescan 'SELECT x, (SELECT count(*) + x FROM po JOIN pi ON po.k = pi.k) FROM generate_series(1, 3) x'
SELECT pg_temp.plan_analyze(:'qrescan') AS rescan_plan \gset
SELECT matches(:'rescan_plan'::text, 'Outer Relation: po \(heap pages, parallel\)',
	'rescan: the subplan''s join reads its outer side in parallel');
SELECT is(pg_temp.plan_number(:'rescan_plan', 'Outer Rows'), 3 * :outer_rows::bigint,
	'rescan: every outer row once per run of the subplan');
SELECT is(substring(:'rescan_plan' FROM 'Outer Pages: read=(\d+)')::bigint, 3 * :outer_blocks::bigint,
	'rescan: every block once per run of the subplan');
SELECT is(pg_temp.rows_digest(:'qrescan'),
	(SELECT pg_temp.rows_digest(format('SELECT x, %s + x FROM generate_series(1, 3) x',
		split_part(digest, ':', 1))) FROM ref WHERE name = 'inner int4'),
	'rescan: the same rows');

-- partitioned in every participant under a device memory limit: the outer
-- rows reach the partitions one tuple at a time, still from shared blocks
SET LOCAL gpujoin.device_memory_limit = '64kB';
SELECT pg_temp.plan_analyze(sql) AS part_plan, pg_temp.rows_digest(sql) AS part_digest
FROM pq WHERE name = 'inner int8' \gset
SELECT matches(:'part_plan'::text, 'Outer Relation: po \(heap pages, parallel\)[\s\S]*Partitions: \d+',
	'64 kB of device memory: partitioned, the outer side read as pages in parallel');
SELECT is(:'part_digest'::text, (SELECT digest FROM ref WHERE name = 'inner int8'),
	'partitioned in parallel: the same rows');
RESET gpujoin.device_memory_limit;

-- parallel plans allowed and cheap, but no parallel GPU join: po's
-- cheapest path is then a Gather over a Parallel Seq Scan, which
-- PostgreSQL keeps instead of the plain Seq Scan; the serial GPU join is
-- still offered reading po's pages itself, and wins
SET LOCAL gpujoin.enable_parallel = off;
SELECT pg_temp.plan(sql) AS serial_plan, pg_temp.rows_digest(sql) AS serial_digest
FROM pq WHERE name = 'inner int4' \gset
SELECT ok(:'serial_plan'::text ~ 'Outer Relation: po \(heap pages\)' AND :'serial_plan'::text !~ 'Gather',
	'parallel plans allowed, GPU ones not: a serial GPU join reads po as heap pages, not through a Gather');
SELECT is(:'serial_digest'::text, (SELECT digest FROM ref WHERE name = 'inner int4'),
	'that serial join: the same rows');
RESET gpujoin.enable_parallel;

-- gpujoin.enable_heapscan = off: the Parallel Seq Scan child comes back
SET LOCAL gpujoin.enable_heapscan = off;
SELECT matches(pg_temp.plan(sql), 'Parallel Custom Scan \(GpuHashJoin\)[\s\S]*Parallel Seq Scan on po',
	'enable_heapscan = off: the outer side is a Parallel Seq Scan again')
FROM pq WHERE name = 'inner int4';
RESET gpujoin.enable_heapscan;

SELECT * FROM finish();
ROLLBACK;
