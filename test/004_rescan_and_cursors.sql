-- test/004_rescan_and_cursors.sql
--
-- A GPU join that is run more than once in a query: inside a correlated
-- subquery (rescanned with changed parameters on its outer side, on its
-- inner side, and with unchanged parameters under an aggregate) and on the
-- inner side of a nested loop without Materialize.  Then cursors over a GPU
-- join: FETCH, MOVE, and a SCROLL cursor read backwards and from the start
-- again.
BEGIN;
SELECT plan(22);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql

-- a: 20000 rows, keys 0..999 (20 each), g = k % 4; b: 2000 rows, the same
-- keys (2 each), g = k % 4.  a JOIN b: 1000 * 40 = 40000 rows, 10000 for
-- each value of g.  t: 8 rows, g = id % 4, x = 10 * id.
CREATE TABLE a (id int, k int4, g int, v int);
INSERT INTO a SELECT n, n % 1000, n % 1000 % 4, n % 97 FROM generate_series(1, 20000) n;
CREATE TABLE b (id int, k int4, g int);
INSERT INTO b SELECT n, n % 1000, n % 1000 % 4 FROM generate_series(1, 2000) n;
CREATE TABLE t (id int, g int, x int);
INSERT INTO t SELECT n, n % 4, 10 * n FROM generate_series(1, 8) n;
ANALYZE a, b, t;

-- correlated subqueries: the join is rescanned once per row of t, with the
-- parameter on its outer side (a), on its inner side (b), and above it

\set q 'SELECT t.id, (SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE a.g = t.g) AS c_outer, (SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE b.g = t.g) AS c_inner, (SELECT count(*) FILTER (WHERE a.v < t.x) FROM a JOIN b ON a.k = b.k) AS c_above FROM t'
:postgres_join
CREATE TEMP TABLE expected_sub AS :q;
SELECT doesnt_match(pg_temp.plan(:'q'), 'GpuHashJoin', 'the reference is PostgreSQL''s own join');
SELECT is((SELECT sum(c_outer) + sum(c_inner) FROM expected_sub), 160000::numeric,
	'the reference: 10000 rows for each t row and parameter');
:gpu_join
SELECT matches(pg_temp.plan(:'q'),
	'SubPlan 1[\s\S]*Gpu(HashJoin|PreAgg)[\s\S]*SubPlan 2[\s\S]*Gpu(HashJoin|PreAgg)[\s\S]*SubPlan 3[\s\S]*Gpu(HashJoin|PreAgg)',
	'subqueries: a GPU hash join (GpuHashJoin, or a GpuPreAgg aggregating it) in each SubPlan');
SELECT bag_eq(:'q', 'SELECT * FROM expected_sub', 'subqueries: the same rows as PostgreSQL');
SELECT matches(pg_temp.plan_analyze(:'q'), 'Custom Scan \(GpuHashJoin\) \(actual rows=[\d.]+ loops=8\)',
	'subqueries: the GPU hash join ran once per row of t');
SET LOCAL gpujoin.chunk_rows = 700;
SELECT bag_eq(:'q', 'SELECT * FROM expected_sub', 'subqueries, in chunks: the same rows as PostgreSQL');
RESET gpujoin.chunk_rows;

-- a nested loop rescanning the GPU join for each row of t, with no
-- Materialize in between: with GPU theta joins off, a nested loop is the
-- only way to join on a.v < t.x

\set q 'SELECT t.id, count(b.id) AS c FROM t LEFT JOIN (a JOIN b ON a.k = b.k) ON a.v < t.x WHERE t.id <= 5 GROUP BY t.id'
:postgres_join
CREATE TEMP TABLE expected_nl AS :q;
SELECT ok((SELECT count(*) = 5 AND min(c) > 0 AND max(c) < 40000 FROM expected_nl),
	'the reference: 5 rows of t, each meeting some of the 40000 joined rows');
:gpu_join
SET LOCAL enable_material = off;
SET LOCAL gpujoin.enable_thetajoin = off;
SELECT matches(pg_temp.plan(:'q'), 'Nested Loop Left Join[\s\S]*->  Custom Scan \(GpuHashJoin\)',
	'nested loop: the GPU hash join is its inner side');
SELECT doesnt_match(pg_temp.plan(:'q'), 'Materialize', 'nested loop: no Materialize');
SELECT matches(pg_temp.plan_analyze(:'q'), 'Custom Scan \(GpuHashJoin\) \(actual rows=[\d.]+ loops=5\)',
	'nested loop: the GPU hash join was rescanned for each of the 5 rows');
SELECT bag_eq(:'q', 'SELECT * FROM expected_nl', 'nested loop: the same rows as PostgreSQL');

-- the same with a function scan as the GPU join's outer side: unlike a Seq
-- Scan, it returns nothing more once done unless it is rescanned

\set q 'SELECT t.id, count(b.id) AS c FROM t LEFT JOIN (generate_series(1, 3000) AS s(n) JOIN b ON s.n % 1000 = b.k) ON s.n % 97 < t.x WHERE t.id <= 5 GROUP BY t.id'
:postgres_join
CREATE TEMP TABLE expected_nl2 AS :q;
SELECT ok((SELECT count(*) = 5 AND min(c) > 0 AND max(c) < 6000 FROM expected_nl2),
	'the reference: 5 rows of t, each meeting some of the 6000 joined rows');
:gpu_join
SET LOCAL gpujoin.enable_thetajoin = off;
SELECT matches(pg_temp.plan(:'q'),
	'Nested Loop Left Join[\s\S]*->  Custom Scan \(GpuHashJoin\)[\s\S]*->  Function Scan on generate_series',
	'nested loop over a function scan: the GPU hash join is its inner side');
SELECT bag_eq(:'q', 'SELECT * FROM expected_nl2', 'nested loop over a function scan: the same rows as PostgreSQL');
RESET enable_material;
RESET gpujoin.enable_thetajoin;

-- cursors

\set q 'SELECT a.id, b.id AS bid FROM a JOIN b ON a.k = b.k WHERE a.id <= 1000'
:postgres_join
CREATE TEMP TABLE expected_cur AS :q;
SELECT is((SELECT count(*) FROM expected_cur), 2000::bigint, 'the reference: 1000 rows of a, 2 matches each');
:gpu_join

-- FETCH 100, MOVE 50, FETCH the rest: every row but 50, none twice
SELECT matches(pg_temp.plan('DECLARE x CURSOR FOR ' || :'q'), 'Custom Scan \(GpuHashJoin\)',
	'cursor: GPU hash join');
DECLARE c CURSOR FOR :q;
CREATE TEMP TABLE fetched AS SELECT * FROM pg_temp.fetch_rows('c', 100);
MOVE FORWARD 50 IN c;
INSERT INTO fetched SELECT * FROM pg_temp.fetch_rows('c', NULL);
CLOSE c;
SELECT is((SELECT count(*) FROM fetched), 1950::bigint, 'cursor: FETCH 100, MOVE 50, FETCH ALL read 1950 rows');
SELECT bag_has('SELECT e::text FROM expected_cur e', 'SELECT r FROM fetched',
	'cursor: each of them a row of the join, none twice');

-- SCROLL: FETCH 100 (rows 1-100), MOVE 50, FETCH ALL (151-2000), MOVE
-- ABSOLUTE 100, FETCH 50 (101-150): all rows; then FETCH BACKWARD 30 (149-120)
-- against rows 120-149 read forwards; MOVE ABSOLUTE 0 and read it all again
SELECT matches(pg_temp.plan('DECLARE x SCROLL CURSOR FOR ' || :'q'), 'Custom Scan \(GpuHashJoin\)',
	'scroll cursor: GPU hash join');
DECLARE s SCROLL CURSOR FOR :q;
CREATE TEMP TABLE part_a AS SELECT * FROM pg_temp.fetch_rows('s', 100);
MOVE FORWARD 50 IN s;
CREATE TEMP TABLE part_c AS SELECT * FROM pg_temp.fetch_rows('s', NULL);
MOVE ABSOLUTE 100 IN s;
CREATE TEMP TABLE part_b AS SELECT * FROM pg_temp.fetch_rows('s', 50);
CREATE TEMP TABLE back AS SELECT * FROM pg_temp.fetch_rows('s', 30, backward => true);
SELECT bag_eq('SELECT r FROM part_a UNION ALL SELECT r FROM part_b UNION ALL SELECT r FROM part_c',
	'SELECT e::text FROM expected_cur e',
	'scroll cursor: the rows before, skipped by and after MOVE are the join');
SELECT results_eq('SELECT r FROM back ORDER BY seq',
	'SELECT r FROM part_b WHERE seq BETWEEN 20 AND 49 ORDER BY seq DESC',
	'scroll cursor: FETCH BACKWARD returns the rows read forwards, in reverse');
MOVE ABSOLUTE 0 IN s;
CREATE TEMP TABLE again AS SELECT * FROM pg_temp.fetch_rows('s', NULL);
CLOSE s;
SELECT bag_eq('SELECT r FROM again', 'SELECT e::text FROM expected_cur e',
	'scroll cursor: after MOVE ABSOLUTE 0 the whole join again');

SELECT * FROM finish();
ROLLBACK;
