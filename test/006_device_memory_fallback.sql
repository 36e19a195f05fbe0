-- test/006_device_memory_fallback.sql
--
-- A GPU join that does not fit gpujoin.device_memory_limit continues on the
-- CPU twin with one NOTICE, and returns the same rows: when the inner table
-- does not fit (the build fails), and when the table fits but an outer
-- chunk does not (the probe fails mid-query).  The CPU twin ignores the
-- limit, so there the same queries simply run on the CPU.
BEGIN;
SELECT plan(7);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql

-- o: k = g % 50000, so keys 0..49999, 4 rows each
-- big: keys 1..100000 once each; small: keys 1..1000 once each
CREATE TABLE o (id int, k int4);
INSERT INTO o SELECT g, g % 50000 FROM generate_series(1, 200000) g;
CREATE TABLE big (id int, k int4);
INSERT INTO big SELECT g, g FROM generate_series(1, 100000) g;
CREATE TABLE small (id int, k int4);
INSERT INTO small SELECT g, g FROM generate_series(1, 1000) g;
ANALYZE o, big, small;

SELECT current_setting('gpujoin.device') = 'gpu' AS on_gpu \gset

\set qbig 'SELECT o.id, big.id AS bid FROM o JOIN big ON o.k = big.k'
\set qsmall 'SELECT o.id, small.id AS sid FROM o JOIN small ON o.k = small.k'
:postgres_join
CREATE TEMP TABLE expected_big AS :qbig;
CREATE TEMP TABLE expected_small AS :qsmall;
SELECT is((SELECT count(*) FROM expected_big), 199996::bigint,
	'the reference: keys 1..49999 match 4 rows each');
SELECT is((SELECT count(*) FROM expected_small), 4000::bigint,
	'the reference: keys 1..1000 match 4 rows each');

:gpu_join
SET LOCAL gpujoin.device_memory_limit = '1MB';
SET LOCAL gpujoin.chunk_rows = 200000;

-- the inner table (100000 rows, about 4 MB while built) does not fit
\if :on_gpu
SELECT matches(pg_temp.plan_analyze(:'qbig'), 'Device: CPU \(fell back from the GPU',
	'inner over the limit: EXPLAIN ANALYZE says the join fell back to the CPU');
\else
SELECT matches(pg_temp.plan_analyze(:'qbig'), 'Device: CPU',
	'CPU twin: the device memory limit does not apply');
\endif
SELECT bag_eq(:'qbig', 'SELECT * FROM expected_big',
	'inner over the limit: the same rows as PostgreSQL');

-- the table of 1000 rows fits; the outer chunk of 200000 rows does not
\if :on_gpu
SELECT matches(pg_temp.plan_analyze(:'qsmall'), 'Device: CPU \(fell back from the GPU',
	'outer chunk over the limit: the join falls back mid-query');
\else
SELECT matches(pg_temp.plan_analyze(:'qsmall'), 'Device: CPU',
	'CPU twin: the device memory limit does not apply');
\endif
SELECT bag_eq(:'qsmall', 'SELECT * FROM expected_small',
	'outer chunk over the limit: the same rows as PostgreSQL');

-- without the limit the GPU keeps the join
RESET gpujoin.device_memory_limit;
SELECT doesnt_match(pg_temp.plan_analyze(:'qbig'), 'fell back',
	'without the limit: no fallback');

SELECT * FROM finish();
ROLLBACK;
