-- test/017_child_target_lists.sql
--
-- What the join asks of its children and gives its parent (planner.c,
-- UsePhysicalTargetList and CUSTOMPATH_SUPPORT_PROJECTION): a Seq Scan below
-- a GPU join returns the relation's physical target list (every column, no
-- projection per row), except where that would be wrong or costly (dropped
-- columns, a column added with a default, system columns for row locks, a
-- partitioned join's outer side); the join computes its own output
-- expressions, with no Result node above it.  Every case compares the rows
-- with PostgreSQL's own join.
BEGIN;
SELECT plan(29);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
-- the children's target lists: the sides are their Seq Scans, not heap pages
SET LOCAL gpujoin.enable_heapscan = off;

-- wide: the key and the column the query needs come after text columns
-- (variable offsets), with NULLs; narrow: the other side
CREATE TABLE wide (a text, b int8, c text, k int4, d float8, v int4);
INSERT INTO wide
	SELECT repeat('x', g % 40), g, CASE WHEN g % 5 = 0 THEN NULL ELSE 'c' || g END,
		   CASE WHEN g % 97 = 0 THEN NULL ELSE g % 300 END, g / 7.0,
		   CASE WHEN g % 11 = 0 THEN NULL ELSE g % 1000 END
	FROM generate_series(1, 6000) g;
CREATE TABLE narrow (k int4, w int4, t text);
INSERT INTO narrow SELECT g % 350, g, 't' || g FROM generate_series(1, 1400) g;
ANALYZE wide, narrow;

-- physical target lists on both sides; the join projects an expression

\set q 'SELECT wide.v + narrow.w AS s, wide.c, narrow.t FROM wide JOIN narrow ON wide.k = narrow.k'
:postgres_join
CREATE TEMP TABLE expected AS :q;
SELECT ok((SELECT count(*) FROM expected) > 10000, 'the reference has many matches');
:gpu_join
CREATE TEMP TABLE pv AS SELECT pg_temp.plan_verbose(:'q') AS p;
SELECT matches(p, 'Custom Scan \(GpuHashJoin\)', 'a GPU hash join') FROM pv;
SELECT matches(p, 'Seq Scan on public\.wide\s+Output: wide\.a, wide\.b, wide\.c, wide\.k, wide\.d, wide\.v',
	'the outer Seq Scan returns every column, as stored') FROM pv;
SELECT matches(p, 'Seq Scan on public\.narrow\s+Output: narrow\.k, narrow\.w, narrow\.t',
	'the inner Seq Scan returns every column, as stored') FROM pv;
SELECT matches(p, '^ *Custom Scan \(GpuHashJoin\)\s+Output: \(wide\.v \+ narrow\.w\), wide\.c, narrow\.t',
	'the join computes its output expression itself') FROM pv;
SELECT doesnt_match(p, 'Result', 'no Result node above the join') FROM pv;
SELECT bag_eq(:'q', 'SELECT * FROM expected', 'physical target lists: the same rows as PostgreSQL');

-- outer joins: NULL-extended rows from either side

\set q 'SELECT wide.b, wide.v, narrow.w, narrow.t FROM wide FULL JOIN narrow ON wide.k = narrow.k'
:postgres_join
CREATE TEMP TABLE expectedf AS :q;
:gpu_join
SELECT matches(pg_temp.plan(:'q'), 'GpuHashJoin', 'full join: a GPU hash join');
SELECT bag_eq(:'q', 'SELECT * FROM expectedf', 'full join over physical target lists: the same rows as PostgreSQL');

-- a dropped column: the scan keeps its exact target list

CREATE TABLE dropped (x text, k int4, y int4, w int4);
INSERT INTO dropped SELECT 'x' || g, g % 300, g, g * 3 FROM generate_series(1, 2000) g;
ALTER TABLE dropped DROP COLUMN y;
ANALYZE dropped;
\set q 'SELECT wide.b, dropped.w FROM wide JOIN dropped ON wide.k = dropped.k'
:postgres_join
CREATE TEMP TABLE expectedd AS :q;
:gpu_join
CREATE TEMP TABLE pd AS SELECT pg_temp.plan_verbose(:'q') AS p;
SELECT matches(p, 'Seq Scan on public\.dropped\s+Output: dropped\.w, dropped\.k',
	'dropped column: the Seq Scan returns only what the join needs') FROM pd;
SELECT bag_eq(:'q', 'SELECT * FROM expectedd', 'dropped column: the same rows as PostgreSQL');

-- columns added later, with a default (stored as a "missing" value) and
-- without (older tuples are shorter): the same rows either way

CREATE TABLE added (k int4, w int4);
INSERT INTO added SELECT g % 300, g FROM generate_series(1, 1500) g;
ALTER TABLE added ADD COLUMN z int4;
ALTER TABLE added ADD COLUMN m int4 DEFAULT 42;
INSERT INTO added SELECT g % 300, g, g, g FROM generate_series(1501, 2000) g;
ANALYZE added;
\set q 'SELECT wide.b, added.w, added.z, added.m FROM wide JOIN added ON wide.k = added.k'
:postgres_join
CREATE TEMP TABLE expecteda AS :q;
SELECT ok((SELECT count(*) FROM expecteda WHERE m = 42 AND z IS NULL) > 0
		  AND (SELECT count(*) FROM expecteda WHERE z IS NOT NULL) > 0,
	'added columns: the reference has old rows (missing, NULL) and new ones');
:gpu_join
SELECT matches(pg_temp.plan_verbose(:'q'), 'Seq Scan on public\.added\s+Output: added\.w, added\.z, added\.m, added\.k',
	'column added with a default: the Seq Scan returns only what the join needs');
SELECT bag_eq(:'q', 'SELECT * FROM expecteda', 'added columns: the same rows as PostgreSQL');
\set q 'SELECT wide.b, added.w, added.z FROM wide JOIN added ON wide.k = added.k WHERE added.w > 1000'
:postgres_join
CREATE TEMP TABLE expecteda2 AS :q;
:gpu_join
SELECT bag_eq(:'q', 'SELECT * FROM expecteda2', 'added columns, a filter on the scan: the same rows as PostgreSQL');

-- a key used only by the join (not in the output), and a key expression

\set q 'SELECT narrow.t FROM wide JOIN narrow ON wide.k + 1 = narrow.k + 1'
:postgres_join
CREATE TEMP TABLE expectede AS :q;
:gpu_join
SELECT matches(pg_temp.plan(:'q'), 'GpuHashJoin', 'key expression: a GPU hash join');
SELECT bag_eq(:'q', 'SELECT * FROM expectede', 'key expressions over physical target lists: the same rows as PostgreSQL');

-- row locks need the scans' ctid: the same rows, locked

\set q 'SELECT wide.b, narrow.w FROM wide JOIN narrow ON wide.k = narrow.k'
:postgres_join
CREATE TEMP TABLE expectedl AS :q;
:gpu_join
SELECT matches(pg_temp.plan_verbose(:'q' || ' FOR UPDATE'), 'GpuHashJoin(.|\n)*Seq Scan on public\.wide\s+Output: wide\.b, wide\.ctid, wide\.k',
	'FOR UPDATE: a GPU hash join whose scans keep their exact target lists, ctid included');
SELECT bag_eq(:'q' || ' FOR UPDATE', 'SELECT * FROM expectedl', 'FOR UPDATE: the same rows as PostgreSQL');
SELECT bag_eq(:'q' || ' FOR SHARE OF narrow', 'SELECT * FROM expectedl', 'FOR SHARE OF one side: the same rows as PostgreSQL');

-- a join planned in partitions keeps the outer side's exact target list
-- (its outer tuples go to tuplestores); the inner side is read whole

\set q 'SELECT wide.b, narrow.w FROM wide JOIN narrow ON wide.k = narrow.k'
:gpu_join
SET LOCAL gpujoin.device_memory_limit = '64kB';
CREATE TEMP TABLE pp AS SELECT pg_temp.plan_verbose(:'q') AS p;
SELECT matches(p, 'partitions', 'a 64 kB device memory limit: planned in partitions') FROM pp;
SELECT matches(p, 'Seq Scan on public\.wide\s+Output: wide\.b, wide\.k',
	'partitioned: the outer Seq Scan returns only what the join needs') FROM pp;
SELECT matches(p, 'Seq Scan on public\.narrow\s+Output: narrow\.k, narrow\.w, narrow\.t',
	'partitioned: the inner Seq Scan returns every column') FROM pp;
SELECT bag_eq(:'q', 'SELECT * FROM expectedl', 'partitioned: the same rows as PostgreSQL');
RESET gpujoin.device_memory_limit;

-- planned whole, partitioned when it runs (the limit is read at execution):
-- the outer side's physical tuples go to the tuplestores
PREPARE whole AS SELECT wide.b, narrow.w FROM wide JOIN narrow ON wide.k = narrow.k;
SELECT matches(pg_temp.plan_verbose('EXECUTE whole'), 'Seq Scan on public\.wide\s+Output: wide\.a, wide\.b',
	'a prepared join planned whole: the outer Seq Scan returns every column');
SET LOCAL gpujoin.device_memory_limit = '64kB';
SELECT matches(pg_temp.plan_analyze('EXECUTE whole'), 'Partitions: \d+',
	'run under a 64 kB limit, the same plan is partitioned');
SELECT bag_eq('EXECUTE whole', 'SELECT * FROM expectedl', 'partitioned at run time over physical tuples: the same rows as PostgreSQL');
RESET gpujoin.device_memory_limit;
DEALLOCATE whole;

-- a GPU join over a GPU join: the upper join's child is no Seq Scan

\set q 'SELECT w2.b, narrow.w FROM wide w2 JOIN (SELECT wide.k, narrow.w FROM wide JOIN narrow ON wide.v = narrow.w) narrow ON w2.k = narrow.k'
:postgres_join
CREATE TEMP TABLE expectedn AS :q;
:gpu_join
SELECT matches(pg_temp.plan(:'q'), 'GpuHashJoin(.|\n)*GpuHashJoin', 'nested: two GPU joins');
SELECT bag_eq(:'q', 'SELECT * FROM expectedn', 'nested GPU joins: the same rows as PostgreSQL');

SELECT * FROM finish();
ROLLBACK;
