-- test/012_device_faults.sql
--
-- Device errors, made on demand with gpujoin.inject_fault (superuser only):
-- a failure while creating the device context, in the build, the count or
-- the retrieve of a GPU join is an ERROR with SQLSTATE 58000 (system_error),
-- the CUDA error in its detail and a hint; the session survives and the
-- next join returns PostgreSQL's rows.  Running out of device memory in the
-- build, the count or a retrieve (after a chunk's first round, so that the
-- CPU twin resumes mid-chunk) falls back to the CPU twin, rows unchanged; the fault
-- applies to the context the join chose, so without a GPU the CPU twin
-- falls back to a CPU twin context of its own and the same path runs.
-- A partitioned join falls back one partition at a time: each partition
-- starts on its chosen device again, and EXPLAIN ANALYZE counts those that
-- did not.
BEGIN;
SELECT plan(24);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql

CREATE TABLE fa (id int, k int, v int);
INSERT INTO fa SELECT g, g % 500, g % 7 FROM generate_series(1, 20000) g;
CREATE TABLE fb (id int, k int, w int);
INSERT INTO fb SELECT g, g % 700, g % 5 FROM generate_series(1, 5000) g;
ANALYZE fa, fb;
\set q 'SELECT fa.id, fb.id AS bid, fa.v + fb.w AS s FROM fa JOIN fb ON fa.k = fb.k'
:postgres_join
CREATE TEMP TABLE want AS :q;
\set qleft 'SELECT fa.id, fb.w FROM fa LEFT JOIN fb ON fa.k = fb.k'
CREATE TEMP TABLE wantleft AS :qleft;
:gpu_join
-- several rounds of matches, so that a retrieve fault comes after some rows
SET LOCAL gpujoin.chunk_rows = 4096;
-- the faults are the joins': pgTAP's own queries, which aggregate its
-- tables, must not meet them in a GpuPreAgg over a scan
SET LOCAL gpujoin.enable_preagg_scan = off;

-- runs q inside a savepoint: the SQLSTATE and detail of its error, or 'ok'
CREATE FUNCTION pg_temp.outcome(q text) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
	state text;
	detail text;
	hint text;
BEGIN
	EXECUTE 'SELECT count(*) FROM (' || q || ') s';
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
	RETURN state || ': ' || coalesce(detail, '') || ' / ' || coalesce(hint, '');
END
$f$;

SELECT matches(pg_temp.plan(:'q'), 'GpuHashJoin', 'the join runs as a GPU join');

SET LOCAL gpujoin.inject_fault = 'create';
SELECT matches(pg_temp.outcome(:'q'), '^58000: gpujoin.inject_fault made creating the device context fail. \(cudaErrorLaunchFailure \(injected\)\) / Set gpujoin.device',
	'a failed context creation is an ERROR 58000 with the CUDA error and a hint');
SET LOCAL gpujoin.inject_fault = 'build';
SELECT matches(pg_temp.outcome(:'q'), '^58000: gpujoin.inject_fault made the build fail', 'a failed build is an ERROR 58000');
SET LOCAL gpujoin.inject_fault = 'count';
SELECT matches(pg_temp.outcome(:'q'), '^58000: gpujoin.inject_fault made the count fail', 'a failed count is an ERROR 58000');
SET LOCAL gpujoin.inject_fault = 'retrieve';
SELECT matches(pg_temp.outcome(:'q'), '^58000: gpujoin.inject_fault made the retrieve fail', 'a failed retrieve is an ERROR 58000');
SELECT throws_ok(:'q', '58000', NULL, 'the error reaches the client as such');
SET LOCAL gpujoin.inject_fault = 'none';
SELECT bag_eq(:'q', 'SELECT * FROM want', 'after the errors, the same session joins correctly');

-- out of device memory: the CPU twin takes over, rows unchanged; EXPLAIN
-- says what it took over from (the GPU, or on a machine without one the CPU
-- twin's first context, under the injected fault)
SELECT CASE WHEN current_setting('gpujoin.device') = 'cpu' THEN 'the CPU twin, gpujoin.inject_fault' ELSE 'the GPU' END AS from \gset
SET LOCAL gpujoin.inject_fault = 'build_oom';
SELECT bag_eq(:'q', 'SELECT * FROM want', 'out of device memory in the build: PostgreSQL''s rows');
SELECT matches(pg_temp.plan_analyze(:'q'), 'Device: CPU \(fell back from ' || :'from' || ': out of device memory\)',
	'out of device memory in the build: EXPLAIN shows the fall back');
SET LOCAL gpujoin.inject_fault = 'count_oom';
SELECT bag_eq(:'q', 'SELECT * FROM want', 'out of device memory in the count: PostgreSQL''s rows');
SELECT matches(pg_temp.plan_analyze(:'q'), 'Device: CPU \(fell back from ' || :'from' || ': out of device memory\)',
	'out of device memory in the count: EXPLAIN shows the fall back');
SELECT matches(pg_temp.plan_analyze(:'qleft'), 'fell back from ' || :'from', 'a left join falls back too');
SELECT bag_eq(:'qleft', 'SELECT * FROM wantleft', 'a left join that fell back: PostgreSQL''s rows');
-- in a retrieve after a chunk's first round: the CPU twin counts the
-- chunk again and goes on from the next match, none twice or lost
SET LOCAL gpujoin.inject_fault = 'retrieve_oom';
-- chunks of 1000 rows, rounds of 1024 matches: several rounds a chunk
SET LOCAL gpujoin.chunk_rows = 1000;
SELECT bag_eq(:'q', 'SELECT * FROM want', 'out of device memory in a retrieve mid-chunk: PostgreSQL''s rows');
SELECT matches(pg_temp.plan_analyze(:'q'), 'Device: CPU \(fell back from ' || :'from' || ': out of device memory\)',
	'out of device memory in a retrieve mid-chunk: EXPLAIN shows the fall back');
RESET gpujoin.chunk_rows;

-- partitioned: every partition tries its chosen device, runs out and goes
-- on on the CPU twin
SET LOCAL gpujoin.device_memory_limit = '256kB';
SELECT matches(pg_temp.plan_analyze(:'q'), 'Partitions: \d+', 'under 256kB the join runs in partitions');
SET LOCAL gpujoin.inject_fault = 'build_oom';
SELECT bag_eq(:'q', 'SELECT * FROM want', 'partitioned, out of device memory in every build: PostgreSQL''s rows');
SELECT is(coalesce(substring(plan from '(\d+) partitions? joined on the CPU') =
				   substring(plan from 'Partitions: (\d+)'), false), true,
	'partitioned, out of device memory in every build: EXPLAIN counts every partition as joined on the CPU')
	FROM (SELECT pg_temp.plan_analyze(:'q') AS plan) p;
RESET gpujoin.device_memory_limit;
SET LOCAL gpujoin.inject_fault = 'none';

-- every join type and the theta join go through the same paths
SET LOCAL gpujoin.inject_fault = 'retrieve';
SELECT matches(pg_temp.outcome('SELECT fa.id FROM fa LEFT JOIN fb ON fa.k = fb.k'), '^58000: ', 'a left join: ERROR 58000');
SELECT matches(pg_temp.outcome('SELECT fa.id FROM fa JOIN fb ON fa.k < fb.k - 690'), '^58000: ', 'a theta join: ERROR 58000');
SET LOCAL gpujoin.inject_fault = 'none';
SELECT is(pg_temp.outcome('SELECT fa.id FROM fa JOIN fb ON fa.k < fb.k - 690'), 'ok', 'and then they run again');

-- a test aid for superusers only
SELECT is((SELECT context FROM pg_settings WHERE name = 'gpujoin.inject_fault'), 'superuser',
	'gpujoin.inject_fault is a superuser setting');
CREATE ROLE gpujoin_test_faults;
SET LOCAL ROLE gpujoin_test_faults;
SELECT throws_ok('SET gpujoin.inject_fault = build', '42501', NULL, 'an ordinary user cannot set it');
RESET ROLE;
SELECT is(current_setting('gpujoin.inject_fault'), 'none', 'it is none by default');

SELECT * FROM finish();
ROLLBACK;
