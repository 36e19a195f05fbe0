-- test/019_rescan_parameters.sql
--
-- What a GPU join keeps from one scan to the next (exec.c, ReScanGpuJoin),
-- against what may change in between; found by PostgreSQL's own regression
-- suite with GPU joins forced (join_hash.sql, merge.sql, rules.sql):
--
--  * a lateral reference in the inner side's join key, which the inner
--    child knows nothing of: the inner side must be built again for each
--    value, in every variant, materialization, join type and chunking, and
--    in GpuMergeJoin and GpuThetaJoin; references only in the outer key,
--    only in a join filter and only in the inner side's scan, as controls;
--  * GpuMergeJoin rescanned: each scan reads its outer side in one chunk
--    (the count of chunks over all scans once raised a spurious "outer
--    relation of a GPU merge join has more than 2147483647 rows");
--  * an inner side that a parameter empties, and then a rescan that
--    changes only the outer side's parameter: the table built for the last
--    non-empty inner side must not be used again;
--  * UPDATE, DELETE and MERGE whose target is partitioned: the join that
--    carries the target's row identity stays PostgreSQL's (EXPLAIN VERBOSE
--    once failed with "bogus varno: -4"), a join below it may still run on
--    the GPU, and the statements change the rows PostgreSQL changes.
--
-- Differential: every query's rows against PostgreSQL's own join.
BEGIN;
SELECT plan(40);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;
-- every outer row rescans the subquery, repeated values too
SET LOCAL enable_memoize = off;

-- o: the outer rows the lateral subquery runs for (its values repeat, and
-- 5 reaches past the end of t's keys); t: keys 0..999 twice, and NULLs;
-- i4: 0, 1 and NULL
CREATE TABLE o (q2 int8);
INSERT INTO o VALUES (456), (123), (789), (123), (998), (-5), (NULL);
CREATE TABLE t (k int, v text);
INSERT INTO t SELECT CASE WHEN g % 101 = 0 THEN NULL ELSE g % 1000 END, 'v' || g
	FROM generate_series(1, 2000) g;
CREATE TABLE i4 (f1 int);
INSERT INTO i4 VALUES (0), (1), (NULL);
ANALYZE o, t, i4;

-- the lateral queries, and PostgreSQL's rows for each; {order} is empty,
-- or an ORDER BY that makes a merge join's order useful
CREATE TEMP TABLE lq (name text PRIMARY KEY, sql text, plan_re text);
INSERT INTO lq VALUES
	('inner key', 'SELECT o.q2, ss.* FROM o, LATERAL (SELECT t.k, t.v, i4.f1 FROM t JOIN i4 ON t.k = i4.f1 + o.q2 {order}) ss', 'Gpu(Hash|Merge)Join'),
	('inner key, left join', 'SELECT o.q2, ss.* FROM o, LATERAL (SELECT t.k, t.v, i4.f1 FROM t LEFT JOIN i4 ON t.k = i4.f1 + o.q2 {order}) ss', 'Gpu(Hash|Merge)Join'),
	('inner key, right join', 'SELECT o.q2, ss.* FROM o, LATERAL (SELECT t.k, t.v, i4.f1 FROM t RIGHT JOIN i4 ON t.k = i4.f1 + o.q2 {order}) ss', 'GpuHashJoin'),
	('inner key, full join', 'SELECT o.q2, ss.* FROM o, LATERAL (SELECT t.k, t.v, i4.f1 FROM t FULL JOIN i4 ON t.k = i4.f1 + o.q2 {order}) ss', 'GpuHashJoin'),
	('inner key, semi join', 'SELECT o.q2, ss.* FROM o, LATERAL (SELECT t.k, t.v FROM t WHERE EXISTS (SELECT 1 FROM i4 WHERE t.k = i4.f1 + o.q2) {order}) ss', 'Gpu(Hash|Merge)Join'),
	('inner key, anti join', 'SELECT o.q2, ss.* FROM o, LATERAL (SELECT t.k, t.v FROM t WHERE NOT EXISTS (SELECT 1 FROM i4 WHERE t.k = i4.f1 + o.q2) {order}) ss', 'Gpu(Hash|Merge)Join'),
	('inner key, band join', 'SELECT o.q2, ss.* FROM o, LATERAL (SELECT t.k, t.v, i4.f1 FROM t JOIN i4 ON t.k >= i4.f1 + o.q2 AND t.k < i4.f1 + o.q2 + 2 {order}) ss', 'GpuThetaJoin'),
	('outer key', 'SELECT o.q2, ss.* FROM o, LATERAL (SELECT t.k, t.v, i4.f1 FROM t JOIN i4 ON t.k - o.q2 = i4.f1 * 3 {order}) ss', 'Gpu(Hash|Merge)Join'),
	('join filter', 'SELECT o.q2, ss.* FROM o, LATERAL (SELECT t.k, t.v, i4.f1 FROM t JOIN i4 ON t.k % 2 = i4.f1 AND t.k + i4.f1 < o.q2 + 3 {order}) ss', 'Gpu(Hash|Merge)Join'),
	('inner scan', 'SELECT o.q2, ss.* FROM o, LATERAL (SELECT t.k, t.v, i4.f1 FROM t JOIN i4 ON t.k % 2 = i4.f1 WHERE i4.f1 < o.q2 - 400 {order}) ss', 'Gpu(Hash|Merge)Join');
UPDATE lq SET sql = replace(sql, '{order}', '');

CREATE TEMP TABLE lq_expected (name text, digest text);
:postgres_join
INSERT INTO lq_expected SELECT name, pg_temp.rows_digest(sql) FROM lq;
SELECT ok((SELECT count(DISTINCT digest) FROM lq_expected) = (SELECT count(*) FROM lq),
	'the reference: each lateral query has rows of its own');

-- Run every lateral query with the current settings: the names of those
-- whose plan is not a GPU join as expected, and of those whose rows differ
CREATE FUNCTION pg_temp.lateral_failures(variant text DEFAULT NULL, materialize text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
	q record;
	bad text := '';
BEGIN
	IF variant IS NOT NULL THEN
		PERFORM set_config('gpujoin.join_variant', variant, true);
		PERFORM set_config('gpujoin.materialize', materialize, true);
	END IF;
	FOR q IN SELECT * FROM lq ORDER BY name LOOP
		IF variant IS NOT NULL AND q.plan_re <> 'GpuThetaJoin' AND
			pg_temp.plan(q.sql) !~ ('Variant: ' || upper(variant) || '-' || CASE materialize WHEN 'gftr' THEN 'TR' ELSE 'UR' END) THEN
			bad := bad || q.name || ' (variant); ';
			CONTINUE;
		END IF;
		IF pg_temp.plan(q.sql) !~ q.plan_re THEN
			bad := bad || q.name || ' (plan); ';
		ELSIF pg_temp.rows_digest(q.sql) <> (SELECT digest FROM lq_expected e WHERE e.name = q.name) THEN
			bad := bad || q.name || ' (rows); ';
		END IF;
	END LOOP;
	RETURN bad;
END
$f$;

:gpu_join
-- theta joins stay out of the equi-joins' way; the band join has its own
SELECT is(pg_temp.lateral_failures(), '', 'lateral references: every query, default settings');
SET LOCAL gpujoin.chunk_rows = 3;
SELECT is(pg_temp.lateral_failures(), '', 'lateral references: every query, chunks of 3 outer rows');
RESET gpujoin.chunk_rows;

SELECT is(pg_temp.lateral_failures(v, m), '',
		  format('lateral references: every query, %s with %s', v, m))
FROM unnest(ARRAY['nphj', 'phj', 'smj']) AS v, unnest(ARRAY['gfur', 'gftr']) AS m;
RESET gpujoin.join_variant;
RESET gpujoin.materialize;

-- GpuMergeJoin: hash joins off, and an order the merge join gives, so the
-- equi-joins are merge joins (the right and full joins, which it cannot
-- run, are left out)
SET LOCAL gpujoin.enable_hashjoin = off;
UPDATE lq SET plan_re = 'GpuMergeJoin',
	sql = regexp_replace(sql, '\) ss$', CASE name WHEN 'outer key' THEN ' ORDER BY t.k - o.q2' WHEN 'join filter' THEN ' ORDER BY t.k % 2'
		WHEN 'inner scan' THEN ' ORDER BY t.k % 2' ELSE ' ORDER BY t.k, t.v' END || ') ss')
	WHERE plan_re = 'Gpu(Hash|Merge)Join';
DELETE FROM lq WHERE name IN ('inner key, right join', 'inner key, full join');
SELECT is(pg_temp.lateral_failures(), '', 'lateral references: every query as a GPU merge join');
SELECT matches(pg_temp.plan_analyze(sql),
	'Custom Scan \(GpuMergeJoin\) \(actual rows=[\d.]+ loops=7\)[\s\S]*Chunks: 7 ',
	'GPU merge join: 7 scans of one chunk each') FROM lq WHERE name = 'inner key';
RESET gpujoin.enable_hashjoin;

-- BAND and NLJ: the band join in each variant
SET LOCAL gpujoin.join_variant = nlj;
SELECT matches(pg_temp.plan(sql), 'Variant: NLJ', 'lateral band join: NLJ') FROM lq WHERE name = 'inner key, band join';
SELECT is(pg_temp.rows_digest(sql), (SELECT digest FROM lq_expected WHERE name = 'inner key, band join'),
	'lateral band join: NLJ returns PostgreSQL''s rows') FROM lq WHERE name = 'inner key, band join';
RESET gpujoin.join_variant;

-- the issue's own reproduction, with its ORDER BY: PostgreSQL's rows, in order
\set q 'SELECT o.q2, ss.* FROM o, LATERAL (SELECT t.k, i4.f1 FROM t JOIN i4 ON t.k = i4.f1 + o.q2 ORDER BY 1, 2) ss WHERE o.q2 IN (456, 123, 789)'
:postgres_join
CREATE TEMP TABLE repro_expected AS :q;
:gpu_join
SELECT results_eq(:'q', 'SELECT * FROM repro_expected', 'the reproduction: PostgreSQL''s rows as a GPU hash join');
SET LOCAL gpujoin.enable_hashjoin = off;
SELECT results_eq(:'q', 'SELECT * FROM repro_expected', 'the reproduction: PostgreSQL''s rows as a GPU merge join');
RESET gpujoin.enable_hashjoin;

-- GpuMergeJoin in a correlated subquery, rescanned once per row of o
\set q 'SELECT o.q2, (SELECT string_agg(v, '','') FROM (SELECT t.v FROM t JOIN i4 ON t.k = i4.f1 WHERE t.k < o.q2 ORDER BY t.k, t.v) s) AS c FROM o'
:postgres_join
CREATE TEMP TABLE sub_expected AS :q;
:gpu_join
SET LOCAL gpujoin.enable_hashjoin = off;
SELECT matches(pg_temp.plan(:'q'), 'SubPlan 1[\s\S]*GpuMergeJoin', 'subquery: a GPU merge join');
SELECT bag_eq(:'q', 'SELECT * FROM sub_expected', 'subquery: a rescanned GPU merge join returns PostgreSQL''s rows');
RESET gpujoin.enable_hashjoin;

-- An inner side emptied by its parameter, then a rescan that changes only
-- the outer side's: t1.x is the inner side's parameter (b.grp = 99 finds
-- nothing), t2.y the outer side's; the nested loop over t2 rescans the GPU
-- join with only t2.y changed
CREATE TABLE a AS SELECT g AS id, g % 10 AS grp, g % 37 AS k FROM generate_series(1, 500) g;
CREATE TABLE b AS SELECT g AS id, g % 12 AS grp, g % 43 AS k FROM generate_series(1, 300) g;
CREATE TABLE t1 (x int);
INSERT INTO t1 VALUES (1), (99), (2), (99), (99), (3);
CREATE TABLE t2 (y int);
INSERT INTO t2 VALUES (0), (1), (2);
ANALYZE a, b, t1, t2;
\set q 'SELECT t1.x, s2.y, s2.aid, s2.bid FROM t1 CROSS JOIN LATERAL (SELECT t2.y, ss.* FROM t2 CROSS JOIN LATERAL (SELECT a.id AS aid, b.id AS bid FROM a JOIN b ON a.k = b.k WHERE b.grp = t1.x AND a.grp = t2.y OFFSET 0) ss OFFSET 0) s2'
:postgres_join
CREATE TEMP TABLE empty_expected AS :q;
SELECT is((SELECT count(*) FROM empty_expected WHERE x = 99), 0::bigint, 'the reference: no rows for the empty inner side');
:gpu_join
SELECT matches(pg_temp.plan(:'q'),
	'Nested Loop[\s\S]*Nested Loop[\s\S]*GpuHashJoin[\s\S]*Filter: \(grp = t2.y\)[\s\S]*Filter: \(grp = t1.x\)',
	'empty inner side: the GPU join under two nested loops, a parameter on each side');
SELECT bag_eq(:'q', 'SELECT * FROM empty_expected', 'empty inner side, then an outer parameter: PostgreSQL''s rows');
SET LOCAL gpujoin.join_variant = phj;
SELECT bag_eq(:'q', 'SELECT * FROM empty_expected', 'empty inner side, then an outer parameter: PHJ');
RESET gpujoin.join_variant;
SET LOCAL gpujoin.enable_hashjoin = off;
SELECT bag_eq(:'q', 'SELECT * FROM empty_expected', 'empty inner side, then an outer parameter: GPU merge join');
RESET gpujoin.enable_hashjoin;
-- a left join keeps the outer rows of the empty-inner scans
\set q 'SELECT t1.x, s2.y, s2.aid, s2.bid FROM t1 CROSS JOIN LATERAL (SELECT t2.y, ss.* FROM t2 CROSS JOIN LATERAL (SELECT a.id AS aid, b.id AS bid FROM a LEFT JOIN (SELECT * FROM b WHERE b.grp = t1.x OFFSET 0) b ON a.k = b.k WHERE a.grp = t2.y OFFSET 0) ss OFFSET 0) s2'
:postgres_join
CREATE TEMP TABLE empty_left_expected AS :q;
:gpu_join
SELECT matches(pg_temp.plan(:'q'), 'GpuHashJoin[\s\S]*Join Type: (Left|Right)', 'empty inner side, left join: a GPU join');
SELECT bag_eq(:'q', 'SELECT * FROM empty_left_expected', 'empty inner side, left join: PostgreSQL''s rows');
-- the partitioned join (a device memory limit the inner side exceeds)
SET LOCAL gpujoin.device_memory_limit = 64;
SELECT bag_eq(:'q', 'SELECT * FROM empty_left_expected', 'empty inner side, left join, partitioned: PostgreSQL''s rows');
RESET gpujoin.device_memory_limit;

-- UPDATE, DELETE and MERGE on a partitioned target
CREATE TABLE pa_target (tid int PRIMARY KEY, val text) PARTITION BY LIST (tid);
CREATE TABLE pa_target_1 PARTITION OF pa_target FOR VALUES IN (1, 2, 3, 4);
CREATE TABLE pa_target_d PARTITION OF pa_target DEFAULT;
INSERT INTO pa_target SELECT g, 'initial' FROM generate_series(1, 40, 3) g;
CREATE TABLE pa_source (sid int, delta int);
INSERT INTO pa_source SELECT g, g * 10 FROM generate_series(1, 30) g;
CREATE TABLE pa_other (oid_ int, w text);
INSERT INTO pa_other SELECT g, 'w' || g FROM generate_series(1, 30, 2) g;
ANALYZE pa_target, pa_source, pa_other;

\set merge 'MERGE INTO pa_target t USING pa_source s ON t.tid = s.sid WHEN MATCHED AND s.delta > 150 THEN DELETE WHEN MATCHED THEN UPDATE SET val = t.val || s.delta WHEN NOT MATCHED THEN INSERT VALUES (s.sid, ''new'' || s.delta)'
\set update 'UPDATE pa_target t SET val = t.val || ''+'' || s.delta FROM pa_source s WHERE t.tid = s.sid'
\set delete 'DELETE FROM pa_target t USING pa_source s WHERE t.tid = s.sid AND s.delta > 100'
\set update3 'UPDATE pa_target t SET val = t.val || p.w FROM pa_source s JOIN pa_other p ON s.sid = p.oid_ WHERE t.tid = s.sid'

-- each statement's effect with PostgreSQL's joins, then with GPU joins
CREATE FUNCTION pg_temp.effect(stmt text) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
	r text;
BEGIN
	EXECUTE stmt;
	r := pg_temp.rows_digest('SELECT tableoid::regclass::text, * FROM pa_target');
	RAISE EXCEPTION USING MESSAGE = r, ERRCODE = 'P0001';
EXCEPTION WHEN raise_exception THEN
	RETURN SQLERRM;				/* the change is rolled back */
END
$f$;
CREATE TEMP TABLE dml_expected (name text, digest text);
:postgres_join
INSERT INTO dml_expected VALUES ('merge', pg_temp.effect(:'merge')), ('update', pg_temp.effect(:'update')),
	('delete', pg_temp.effect(:'delete')), ('update3', pg_temp.effect(:'update3'));
SELECT ok((SELECT count(DISTINCT digest) FROM dml_expected) = 4, 'the reference: four different effects');

:gpu_join
SELECT lives_ok('EXPLAIN (VERBOSE, COSTS OFF) ' || :'merge', 'MERGE, partitioned target: EXPLAIN VERBOSE');
SELECT lives_ok('EXPLAIN (VERBOSE, COSTS OFF) ' || :'update', 'UPDATE ... FROM, partitioned target: EXPLAIN VERBOSE');
SELECT lives_ok('EXPLAIN (VERBOSE, COSTS OFF) ' || :'delete', 'DELETE ... USING, partitioned target: EXPLAIN VERBOSE');
SELECT lives_ok('EXPLAIN (VERBOSE, COSTS OFF) ' || :'update3', 'UPDATE ... FROM a join, partitioned target: EXPLAIN VERBOSE');
SELECT matches(pg_temp.plan_verbose(:'merge'), 'Output: .*t_1\.tableoid, t_1\.ctid',
	'MERGE: EXPLAIN VERBOSE names the row identity');
SELECT doesnt_match(pg_temp.plan(:'merge'), 'Gpu', 'MERGE: the join carrying the row identity is PostgreSQL''s');
SELECT matches(pg_temp.plan_verbose(:'update3'), 'Custom Scan \(Gpu(Hash|Merge)Join\)[\s\S]*(Hash|Merge) Cond: \(s\.sid = p\.oid_\)',
	'UPDATE ... FROM a join: that join runs on the GPU');
SELECT is(pg_temp.effect(:'merge'), (SELECT digest FROM dml_expected WHERE name = 'merge'), 'MERGE: PostgreSQL''s effect');
SELECT is(pg_temp.effect(:'update'), (SELECT digest FROM dml_expected WHERE name = 'update'), 'UPDATE ... FROM: PostgreSQL''s effect');
SELECT is(pg_temp.effect(:'delete'), (SELECT digest FROM dml_expected WHERE name = 'delete'), 'DELETE ... USING: PostgreSQL''s effect');
SELECT is(pg_temp.effect(:'update3'), (SELECT digest FROM dml_expected WHERE name = 'update3'), 'UPDATE ... FROM a join: PostgreSQL''s effect');
SET LOCAL gpujoin.enable_hashjoin = off;
SELECT is(pg_temp.effect(:'update3'), (SELECT digest FROM dml_expected WHERE name = 'update3'), 'UPDATE ... FROM a join, GPU merge join: PostgreSQL''s effect');
RESET gpujoin.enable_hashjoin;

-- a plain (not partitioned) target: its row identity is an ordinary
-- column, and the join to it may run on the GPU
CREATE TABLE plain_target AS SELECT * FROM pa_target;
ANALYZE plain_target;
\set q 'UPDATE plain_target t SET val = t.val || s.delta FROM pa_source s WHERE t.tid = s.sid'
SELECT matches(pg_temp.plan_verbose(:'q'), 'Custom Scan \(GpuHashJoin\)[\s\S]*Output: .*t\.ctid',
	'plain target: the GPU join carries its ctid');
:postgres_join
CREATE TEMP TABLE plain_expected AS SELECT t.tid, t.val || s.delta AS val FROM plain_target t JOIN pa_source s ON t.tid = s.sid
	UNION ALL SELECT t.tid, t.val FROM plain_target t WHERE NOT EXISTS (SELECT 1 FROM pa_source s WHERE t.tid = s.sid);
:gpu_join
UPDATE plain_target t SET val = t.val || s.delta FROM pa_source s WHERE t.tid = s.sid;
SELECT bag_eq('SELECT tid, val FROM plain_target', 'SELECT * FROM plain_expected', 'plain target: PostgreSQL''s effect');

SELECT * FROM finish();
ROLLBACK;
