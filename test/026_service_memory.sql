-- test/026_service_memory.sql
--
-- gpujoin.service_memory_limit: the device memory all joins run by the
-- gpujoin service may hold together.  Set to 4 MB (ALTER SYSTEM and a
-- reload, so outside a transaction), the service reports at most that as
-- free (gpujoin_device_info), a hash join whose inner side does not fit
-- runs in partitions or on the CPU twin, a merge join falls back to the
-- CPU twin, and both return PostgreSQL's rows; reset, the same join runs
-- whole on the GPU again.  Runs with the service on a GPU only (the CPU
-- twin holds no device memory); skipped otherwise.
SELECT plan(7);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET client_min_messages = warning;

SELECT current_setting('gpujoin.service') = 'on'
	AND (SELECT service FROM gpujoin_device_info()) ~ '^running'
	AND coalesce((SELECT device FROM gpujoin_device_info()) >= 0, false) AS service_gpu \gset

\if :service_gpu

CREATE TEMP TABLE o (id int, k int4);
INSERT INTO o SELECT g, g % 50000 FROM generate_series(1, 200000) g;
CREATE TEMP TABLE big (id int, k int4);
INSERT INTO big SELECT g, g FROM generate_series(1, 100000) g;
ANALYZE o, big;
\set qbig 'SELECT o.id, big.id AS bid FROM o JOIN big ON o.k = big.k'
\set qbig_sorted :qbig ' ORDER BY o.k'
SET gpujoin.enabled = off;
CREATE TEMP TABLE expected_big AS SELECT o.id, big.id AS bid FROM o JOIN big ON o.k = big.k;
RESET gpujoin.enabled;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SET gpujoin.chunk_rows = 200000;

ALTER SYSTEM SET gpujoin.service_memory_limit = '4MB';
SELECT pg_reload_conf() \gset
SELECT ok(pg_temp.wait_until(format('SELECT (SELECT free_memory FROM gpujoin_device_info()) <= %s', 4 * 1024 * 1024), 10),
	'limited to 4 MB: the service reports at most 4 MB free');

SELECT matches(pg_temp.plan_analyze(:'qbig'), 'Partitions: \d+|fell back',
	'pool of 4 MB: the hash join of a 100000-row inner side runs in partitions or falls back');
SELECT bag_eq(:'qbig', 'SELECT * FROM expected_big',
	'pool of 4 MB: the hash join returns PostgreSQL''s rows');

SET gpujoin.enable_hashjoin = off;
SELECT matches(pg_temp.plan_analyze(:'qbig_sorted'), 'Device: CPU \(fell back from the GPU',
	'pool of 4 MB: the merge join falls back to the CPU twin');
SELECT bag_eq(:'qbig_sorted', 'SELECT * FROM expected_big',
	'pool of 4 MB: the merge join returns PostgreSQL''s rows');
RESET gpujoin.enable_hashjoin;

ALTER SYSTEM RESET gpujoin.service_memory_limit;
SELECT pg_reload_conf() \gset
SELECT ok(pg_temp.wait_until(format('SELECT (SELECT free_memory FROM gpujoin_device_info()) > %s', 4 * 1024 * 1024), 10),
	'reset: the service reports the device''s free memory again');
SELECT doesnt_match(pg_temp.plan_analyze(:'qbig'), 'fell back|Partitions',
	'reset: the hash join runs whole on the GPU');
\else
SELECT skip('needs gpujoin.service = on with a GPU', 7);
\endif

SELECT * FROM finish();
