-- test/003_chunks_and_size.sql
--
-- The outer side in several chunks (gpujoin.chunk_rows), down to one row per
-- chunk; a join filter that removes rows across chunks; a million rows a
-- side (compared through aggregates, to keep the suite fast); a GPU join
-- over a GPU join.  EXPLAIN ANALYZE's "Chunks: N  Inner Rows: N  Outer Rows: N
-- Matches: N" line says the chunking really happened.
BEGIN;
SELECT plan(26);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql

-- o: keys 0..499, 20 rows each; i: the same keys, 4 rows each: 500 * 80 = 40000
CREATE TABLE o (id int, k int4, v int);
INSERT INTO o SELECT g, g % 500, g % 7 FROM generate_series(1, 10000) g;
CREATE TABLE i (id int, k int4, w int);
INSERT INTO i SELECT g, g % 500, g % 5 FROM generate_series(1, 2000) g;
-- 50 rows, keys 0..9: 5 rows each
CREATE TABLE few (id int, k int4);
INSERT INTO few SELECT g, g % 10 FROM generate_series(1, 50) g;
-- a million rows a side: big has keys 0..499999 twice, big2 the even keys
-- 2..2000000 once; matches: even keys 2..499998, 249999 * 2 = 499998
CREATE TABLE big (id int, k int4, v int);
INSERT INTO big SELECT g, g % 500000, g % 1000 FROM generate_series(1, 1000000) g;
CREATE TABLE big2 (id int, k int4, w int);
INSERT INTO big2 SELECT g, 2 * g, g % 997 FROM generate_series(1, 1000000) g;
-- three tables: ta - tb on k (100 keys, 10 * 5 each: 5000), then tb - tc on j
-- (each tb row meets 4 tc rows): 20000
CREATE TABLE ta (id int, k int4);
INSERT INTO ta SELECT g, g % 100 FROM generate_series(1, 1000) g;
CREATE TABLE tb (id int, k int4, j int8);
INSERT INTO tb SELECT g, g % 100, g % 50 FROM generate_series(1, 500) g;
CREATE TABLE tc (id int, j int8);
INSERT INTO tc SELECT g, g % 50 FROM generate_series(1, 200) g;
ANALYZE o, i, few, big, big2, ta, tb, tc;

-- chunks of 1000 outer rows

\set q 'SELECT o.id, o.v, i.id AS iid, i.w FROM o JOIN i ON o.k = i.k'
:postgres_join
CREATE TEMP TABLE expected AS :q;
SELECT doesnt_match(pg_temp.plan(:'q'), 'GpuHashJoin', 'the reference is PostgreSQL''s own join');
SELECT is((SELECT count(*) FROM expected), 40000::bigint, 'the reference has 500 keys * 20 * 4 rows');
:gpu_join
SET LOCAL gpujoin.chunk_rows = 1000;
SELECT matches(pg_temp.plan(:'q'), 'Custom Scan \(GpuHashJoin\)', 'chunks: GPU hash join');
SELECT bag_eq(:'q', 'SELECT * FROM expected', 'chunks of 1000 rows: the same rows as PostgreSQL');
CREATE TEMP TABLE pa AS SELECT pg_temp.plan_analyze(:'q') AS p;
SELECT cmp_ok(pg_temp.plan_number(p, 'Chunks'), '>=', 10::bigint,
	'chunks of 1000 rows: 10000 outer rows take 10 chunks or more') FROM pa;
SELECT is(pg_temp.plan_number(p, 'Outer Rows'), 10000::bigint, 'chunks: every outer row was read') FROM pa;
SELECT is(pg_temp.plan_number(p, 'Inner Rows'), 2000::bigint, 'chunks: every inner row was read') FROM pa;
SELECT is(pg_temp.plan_number(p, 'Matches'), 40000::bigint, 'chunks: the device found every match') FROM pa;

-- one row per chunk

\set q 'SELECT few.id, i.id AS iid FROM few JOIN i ON few.k = i.k'
:postgres_join
CREATE TEMP TABLE expected1 AS :q;
SELECT is((SELECT count(*) FROM expected1), 200::bigint, 'the reference has 10 keys * 5 * 4 rows');
:gpu_join
SET LOCAL gpujoin.chunk_rows = 1;
SELECT bag_eq(:'q', 'SELECT * FROM expected1', 'chunks of 1 row: the same rows as PostgreSQL');
SELECT ok(pg_temp.plan_number(p, 'Chunks') >= pg_temp.plan_number(p, 'Outer Rows')
		  AND pg_temp.plan_number(p, 'Outer Rows') >= 50,
	'chunks of 1 row: one chunk per outer row')
	FROM (SELECT pg_temp.plan_analyze(:'q') AS p) s;

-- a join filter removing rows, over several chunks

\set q 'SELECT o.id, o.v, i.id AS iid, i.w FROM o JOIN i ON o.k = i.k AND o.v < i.w'
:postgres_join
CREATE TEMP TABLE expectedf AS :q;
SELECT ok((SELECT count(*) FROM expectedf) BETWEEN 1 AND 39999,
	'join filter: the reference keeps some of the 40000 key matches, not all');
:gpu_join
SET LOCAL gpujoin.chunk_rows = 1000;
SELECT matches(pg_temp.plan(:'q'), 'Join Filter: \(o\.v < i\.w\)', 'join filter: rechecked on the CPU');
SELECT bag_eq(:'q', 'SELECT * FROM expectedf', 'join filter over chunks: the same rows as PostgreSQL');
CREATE TEMP TABLE pf AS SELECT pg_temp.plan_analyze(:'q') AS p;
SELECT is(pg_temp.plan_number(p, 'Rows Removed by Join Filter'), 40000 - (SELECT count(*) FROM expectedf),
	'join filter: rows removed = key matches - rows kept') FROM pf;
SELECT ok(pg_temp.plan_number(p, 'Chunks') > 1 AND pg_temp.plan_number(p, 'Matches') = 40000,
	'join filter: several chunks, and the device matched on the key alone') FROM pf;

-- a million rows a side

\set q 'SELECT count(*) AS n, sum(big.v + big2.w) AS sum_v, sum(big.id::int8 * big2.id) AS sum_ids FROM big JOIN big2 ON big.k = big2.k'
:postgres_join
CREATE TEMP TABLE expectedb AS :q;
SELECT is((SELECT n FROM expectedb), 499998::bigint, 'a million rows: the reference has 499998 matches');
:gpu_join
RESET gpujoin.chunk_rows;
SELECT matches(pg_temp.plan(:'q'), 'Custom Scan \(Gpu(HashJoin|PreAgg)\)', 'a million rows: GPU hash join (aggregated on the device, GpuPreAgg)');
SELECT results_eq(:'q', 'SELECT * FROM expectedb', 'a million rows: the same count and sums as PostgreSQL');
SET LOCAL gpujoin.chunk_rows = 100000;
SELECT results_eq(:'q', 'SELECT * FROM expectedb',
	'a million rows in chunks of 100000: the same count and sums as PostgreSQL');
-- (a parallel plan's participants each read the whole inner side, but
-- those that probed another's build through the gpujoin service: test/028)
SELECT ok(pg_temp.plan_number(p, 'Chunks') >= 10 AND pg_temp.plan_number(p, 'Outer Rows') = 1000000
		  AND pg_temp.plan_number(p, 'Inner Rows') =
		  1000000 * (coalesce(pg_temp.plan_number(p, 'Participants'), 1) -
					 coalesce(pg_temp.plan_number(p, 'Shared Builds'), 0)),
	'a million rows in chunks of 100000: 10 chunks or more')
	FROM (SELECT pg_temp.plan_analyze(:'q') AS p) s;

-- three tables: a GPU join over a GPU join

\set q 'SELECT ta.id, tb.id AS bid, tc.id AS cid FROM ta JOIN tb ON ta.k = tb.k JOIN tc ON tb.j = tc.j'
:postgres_join
CREATE TEMP TABLE expected3 AS :q;
SELECT is((SELECT count(*) FROM expected3), 20000::bigint, 'three tables: the reference has 20000 rows');
:gpu_join
RESET gpujoin.chunk_rows;
SELECT matches(pg_temp.plan(:'q'), 'GpuHashJoin[\s\S]*->  Custom Scan \(GpuHashJoin\)',
	'three tables: a GPU hash join over a GPU hash join');
SELECT bag_eq(:'q', 'SELECT * FROM expected3', 'three tables: the same rows as PostgreSQL');
SET LOCAL gpujoin.chunk_rows = 500;
SELECT bag_eq(:'q', 'SELECT * FROM expected3', 'three tables in chunks of 500: the same rows as PostgreSQL');
SELECT ok(pg_temp.plan_number(pg_temp.plan_analyze(:'q'), 'Chunks') > 1,
	'three tables in chunks of 500: the upper join took several chunks');

SELECT * FROM finish();
ROLLBACK;
