-- test/025_service.sql
--
-- The gpujoin service (src/service.c, src/service_client.c): with
-- gpujoin.service = on (and gpujoin preloaded) one background worker runs
-- the kernels of every session.  It shows in pg_stat_activity and in
-- gpujoin_device_info(); joins of every type and the aggregation on the
-- device return PostgreSQL's rows through it, with rounds of a few rows
-- and partitioned joins (answers larger than the first result segment);
-- its contexts are all closed after each query, and after a cancel; when
-- it is terminated, the postmaster starts it again (a new start number),
-- the joins in between run in the session (the CPU twin), and the next
-- joins go through the new service; terminated in the middle of a join,
-- the join fails with 58000 rather than waiting.  Skipped when the
-- service is off.
BEGIN;
SELECT plan(22);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;
-- the service is terminated below while joins run: pgTAP's own queries,
-- which aggregate its tables, must not be in the service then (a GpuPreAgg
-- over a scan); aggregates over one table through the service are
-- test/032's, run through it by test/run's service stage
SET LOCAL gpujoin.enable_preagg_scan = off;

SELECT current_setting('gpujoin.service') = 'on'
	AND (SELECT service FROM gpujoin_device_info()) ~ '^running' AS service_on \gset

\if :service_on
-- the service's start number and its open contexts, now
CREATE FUNCTION pg_temp.service_start() RETURNS int
LANGUAGE sql AS $$
	SELECT substring(service from 'start (\d+)')::int FROM gpujoin_device_info() $$;
-- its pid, now (pg_stat_activity keeps one snapshot per transaction)
CREATE FUNCTION pg_temp.service_pid() RETURNS int
LANGUAGE sql AS $$
	SELECT substring(service from 'pid (\d+)')::int FROM gpujoin_device_info() $$;
CREATE FUNCTION pg_temp.service_contexts() RETURNS bigint
LANGUAGE sql AS $$ SELECT service_contexts FROM gpujoin_device_info() $$;

SELECT is((SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'gpujoin service'), 1::bigint,
	'one gpujoin service in pg_stat_activity');
SELECT matches((SELECT service FROM gpujoin_device_info()), '^running \(pid \d+, start \d+\)',
	'gpujoin_device_info(): the service runs');

SELECT pg_temp.make_join_tables(20000, 4000);
SELECT pg_temp.make_join_queries(ARRAY['inner', 'left', 'right', 'full', 'semi', 'anti']);
INSERT INTO q VALUES
	('grouped aggregates', 'SELECT r.k % 7, count(*), sum(r.k8), min(s.id) FROM r JOIN s ON r.k = s.k GROUP BY 1');
CREATE TEMP TABLE expected AS SELECT name, NULL::text AS digest FROM q;
:postgres_join
UPDATE expected e SET digest = pg_temp.rows_digest(q.sql) FROM q WHERE q.name = e.name;
CREATE FUNCTION pg_temp.failures() RETURNS text
LANGUAGE sql AS $$
	SELECT coalesce(string_agg(q.name, '; ' ORDER BY q.name), '')
	FROM q JOIN expected e USING (name)
	WHERE pg_temp.rows_digest(q.sql) IS DISTINCT FROM e.digest $$;

:gpu_join
SELECT (SELECT service_requests FROM gpujoin_device_info()) AS requests_before \gset
SELECT matches(pg_temp.plan(sql), 'Device: (CPU|GPU 0 \(.*\)), gpujoin service',
	'EXPLAIN: the join runs in the service') FROM q WHERE name = 'inner join on int4';
SELECT is(pg_temp.failures(), '', 'through the service: every join type and the aggregation return PostgreSQL''s rows');
SELECT cmp_ok((SELECT service_requests FROM gpujoin_device_info()), '>', :requests_before::bigint,
	'the service served the requests');
SELECT is(pg_temp.service_contexts(), 0::bigint, 'no context left open after the queries');
SET LOCAL gpujoin.chunk_rows = 100;
SELECT is(pg_temp.failures(), '', 'chunks and rounds of 100 rows: PostgreSQL''s rows');
RESET gpujoin.chunk_rows;
SET LOCAL gpujoin.device_memory_limit = 64;
SELECT is(pg_temp.failures(), '', 'partitioned joins: PostgreSQL''s rows');
RESET gpujoin.device_memory_limit;

-- a cancel while the service works on the join: within a second, and its
-- context is closed with the query
CREATE TABLE ha AS SELECT g AS id, 1 AS k FROM generate_series(1, 100000) g;
ANALYZE ha;
SET LOCAL statement_timeout = '300ms';
SELECT cmp_ok(pg_temp.time_to_cancel('SELECT count(*) FROM (SELECT a.id + b.id FROM ha a JOIN ha b ON a.k = b.k) x'),
	'<', interval '1300 ms', 'a cancel of a join through the service: within a second');
RESET statement_timeout;
SELECT is(pg_temp.failures(), '', 'after the cancel: PostgreSQL''s rows');
SELECT is(pg_temp.service_contexts(), 0::bigint, 'after the cancel: no context left open');

-- the service terminated: the postmaster starts it again
SELECT pg_temp.service_start() AS start_before, pg_temp.service_pid() AS pid_before \gset
SELECT ok(pg_terminate_backend(:pid_before), 'the service is terminated');
SELECT ok(pg_temp.wait_until(format('SELECT pg_temp.service_pid() IS DISTINCT FROM %s', :pid_before), 5, 0.01), 'it exits');
SELECT is(pg_temp.failures(), '', 'while the service restarts: PostgreSQL''s rows');
SELECT ok(pg_temp.wait_until(format('SELECT coalesce(pg_temp.service_start(), %1$s) <> %1$s', :start_before), 20), 'the postmaster starts the service again');
SELECT matches(pg_temp.plan(sql), 'gpujoin service', 'the next join runs in the new service')
	FROM q WHERE name = 'inner join on int4';
SELECT is(pg_temp.failures(), '', 'through the new service: PostgreSQL''s rows');
SELECT is(pg_temp.service_contexts(), 0::bigint, 'the new service: no context left open');

-- terminated in the middle of a join (the outer side's 500th row, chunks of
-- 100 rows, so that chunks went through it before): the join fails with
-- 58000 instead of waiting, and the service comes back once more.  A semi
-- join, so that the side that terminates it is the outer side whatever the
-- costs: as the inner side of an inner join (PostgreSQL 18 with a GPU chose
-- that) it is read whole before the join's first request, and the join
-- rightly runs in the next service or in the session
CREATE FUNCTION pg_temp.terminate_service_at(i int, at int) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	IF i = at THEN
		PERFORM pg_terminate_backend(pg_temp.service_pid());
		PERFORM pg_sleep(0.2);
	END IF;
	RETURN i;
END $$;
SELECT pg_temp.service_start() AS start_mid \gset
SET LOCAL gpujoin.chunk_rows = 100;
\set qmid 'SELECT count(*) FROM (SELECT pg_temp.terminate_service_at(g, 500) % 4000 AS k FROM generate_series(1, 30000) g) o WHERE EXISTS (SELECT FROM s WHERE s.k = o.k)'
SELECT matches(pg_temp.plan(:'qmid'), 'Inner Relation: s \(heap pages\)',
	's is the inner side: the outer side, read in chunks, is the one that terminates the service');
SELECT throws_ok(:'qmid', '58000', NULL, 'the service terminated in the middle of a join: the join fails with 58000');
RESET gpujoin.chunk_rows;
SELECT ok(pg_temp.wait_until(format('SELECT coalesce(pg_temp.service_start(), %1$s) <> %1$s', :start_mid), 20), 'the postmaster starts the service again');
SELECT is(pg_temp.failures(), '', 'after that: PostgreSQL''s rows');
\else
SELECT skip('gpujoin.service is off (or gpujoin is not preloaded)', 22);
\endif

SELECT * FROM finish();
ROLLBACK;
