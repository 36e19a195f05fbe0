-- test/001_hash_join_matches_postgres.sql
--
-- The GPU hash join returns the same multiset of rows as PostgreSQL's own
-- join: duplicates on both sides, NULL keys on both sides, empty inputs, no
-- matches.  Row counts are asserted from the generators' arithmetic, so a
-- test cannot pass on a reference that is empty by mistake.
BEGIN;
SELECT plan(22);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql

-- o: keys 0..199, 30 rows each, plus 100 NULL keys
-- i: keys 0..299, 5 rows each, plus 50 NULL keys
-- matches: keys 0..199, 30 * 5 each: 200 * 150 = 30000; NULLs never match
CREATE TABLE o (id int, k int4, v text);
INSERT INTO o SELECT g, g % 200, 'o' || g FROM generate_series(1, 6000) g;
INSERT INTO o SELECT g, NULL, 'o-null' || g FROM generate_series(6001, 6100) g;
CREATE TABLE i (id int, k int4, w int);
INSERT INTO i SELECT g, g % 300, g * 7 FROM generate_series(1, 1500) g;
INSERT INTO i SELECT g, NULL, g FROM generate_series(1501, 1550) g;
-- for empty inputs and no matches
CREATE TABLE e1 (k int4, v int);
CREATE TABLE e2 (k int4, w int);
CREATE TABLE ten (k int4, w int);
INSERT INTO ten SELECT g, g FROM generate_series(1, 10) g;
CREATE TABLE nomatch (k int4, w int);
INSERT INTO nomatch SELECT 1000 + g % 1000, g FROM generate_series(1, 1000) g;
-- NULL keys only, on both sides
CREATE TABLE onull (k int4, v int);
INSERT INTO onull SELECT NULL, g FROM generate_series(1, 500) g;
CREATE TABLE inull (k int4, w int);
INSERT INTO inull SELECT NULL, g FROM generate_series(1, 100) g;
ANALYZE o, i, e1, e2, ten, nomatch, onull, inull;

-- many-to-many, with NULL keys on both sides

\set q 'SELECT o.id, o.k, o.v, i.id AS iid, i.w FROM o JOIN i ON o.k = i.k'
:postgres_join
CREATE TEMP TABLE expected AS :q;
SELECT doesnt_match(pg_temp.plan(:'q'), 'GpuHashJoin',
	'the reference is PostgreSQL''s own join');
SELECT is((SELECT count(*) FROM expected), 30000::bigint,
	'the reference has 200 keys * 30 * 5 rows');

:gpu_join
SELECT matches(pg_temp.plan(:'q'), 'Custom Scan \(GpuHashJoin\)',
	'many-to-many: the planner picks the GPU hash join');
SELECT matches(pg_temp.plan(:'q'), 'Hash Cond: \((o\.k = i\.k|i\.k = o\.k)\)',
	'many-to-many: the key clause is evaluated on the device');
SELECT bag_eq(:'q', 'SELECT * FROM expected',
	'many-to-many with NULL keys: the same rows as PostgreSQL');
SELECT is((SELECT count(*) FROM (SELECT o.id FROM o JOIN i ON o.k = i.k WHERE o.k IS NULL OR i.k IS NULL) s),
	0::bigint, 'NULL keys never match');

-- NULL keys only

\set q 'SELECT onull.v, inull.w FROM onull JOIN inull ON onull.k = inull.k'
SELECT matches(pg_temp.plan(:'q'), 'Custom Scan \(GpuHashJoin\)',
	'NULL keys only: the planner picks the GPU hash join');
SELECT is((SELECT count(*) FROM (:q) s), 0::bigint,
	'NULL keys only: no rows (NULL = NULL is not true)');

-- empty inner side (the 1-row estimate of an empty table makes it the inner)

\set q 'SELECT o.id, e1.v FROM o JOIN e1 ON o.k = e1.k'
SELECT matches(pg_temp.plan(:'q'), 'Custom Scan \(GpuHashJoin\)',
	'empty inner: the planner picks the GPU hash join');
SELECT is((SELECT count(*) FROM (:q) s), 0::bigint, 'empty inner: no rows');
SELECT is(pg_temp.plan_number(pg_temp.plan_analyze(:'q'), 'Inner Rows'), 0::bigint,
	'empty inner: the inner side is the empty one');

-- empty outer side: a filter the planner cannot see through (estimated at a
-- third of o) that removes every row; ten is the inner

\set q 'SELECT o.id, ten.w FROM o JOIN ten ON o.k = ten.k WHERE o.id * 2 < 0'
SELECT matches(pg_temp.plan(:'q'), 'Custom Scan \(GpuHashJoin\)',
	'empty outer: the planner picks the GPU hash join');
SELECT is((SELECT count(*) FROM (:q) s), 0::bigint, 'empty outer: no rows');
SELECT matches(pg_temp.plan_analyze(:'q'), 'Inner Rows: \d+  Outer Rows: 0\M',
	'empty outer: the outer side is the empty one');

-- both sides empty

\set q 'SELECT e1.v, e2.w FROM e1 JOIN e2 ON e1.k = e2.k'
SELECT matches(pg_temp.plan(:'q'), 'Custom Scan \(GpuHashJoin\)',
	'both empty: the planner picks the GPU hash join');
SELECT is((SELECT count(*) FROM (:q) s), 0::bigint, 'both empty: no rows');

-- no key in common: o has keys 0..199, nomatch 1000..1999

\set q 'SELECT o.id, nomatch.w FROM o JOIN nomatch ON o.k = nomatch.k'
SELECT matches(pg_temp.plan(:'q'), 'Custom Scan \(GpuHashJoin\)',
	'no matches: the planner picks the GPU hash join');
SELECT is((SELECT count(*) FROM (:q) s), 0::bigint, 'no matches: no rows');
SELECT is(pg_temp.plan_number(pg_temp.plan_analyze(:'q'), 'Matches'), 0::bigint,
	'no matches: the device found no match');

-- the settings that turn the path off

\set q 'SELECT o.id, i.id FROM o JOIN i ON o.k = i.k'
SET LOCAL gpujoin.enable_hashjoin = off;
SELECT doesnt_match(pg_temp.plan(:'q'), 'GpuHashJoin',
	'gpujoin.enable_hashjoin = off: no GPU hash join');
SET LOCAL gpujoin.enable_hashjoin = on;
SET LOCAL gpujoin.enabled = off;
SELECT doesnt_match(pg_temp.plan(:'q'), 'GpuHashJoin',
	'gpujoin.enabled = off: no GPU join');
SET LOCAL gpujoin.enabled = on;
SELECT matches(pg_temp.plan(:'q'), 'Custom Scan \(GpuHashJoin\)',
	'both back on: the GPU hash join again');

SELECT * FROM finish();
ROLLBACK;
