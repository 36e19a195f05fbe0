-- test/027_preagg_order.sql
--
-- A GpuPreAgg that returns its groups in the order of the group keys
-- (planner_agg.c GroupOrdering, exec_agg.c GatherOrdered): with GROUP BY
-- and an ORDER BY of the same keys, the plan is a Finalize GroupAggregate
-- straight over the GpuPreAgg (EXPLAIN says "Output Order"; the kernels'
-- agg_result sorts the groups, and only several sets of them are merged on
-- the host), no Sort, and
-- the rows come in PostgreSQL's order, row by row: ascending and
-- descending, NULLs first and last, one key and two, int4, int8 (negative
-- and past 2^32), date, bool, numeric and float keys (NaN the largest), groups
-- spilled under a small gpujoin.device_memory_limit and matches in chunks
-- (the same group in several sets of rows), three logical devices (their
-- groups combined, then sorted), an empty join, and a rescanned
-- GpuPreAgg under a SubPlan, and a parallel plan (a Gather Merge of each
-- process's ordered groups).  An ORDER BY of something else gets the
-- same rows, an ordered GpuPreAgg or not as the costs decide.
BEGIN;
SELECT plan(18);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL gpujoin.cost_as_gpu = on;

CREATE TABLE po (k int4, g int4, g8 int8, d date, b bool, n numeric(8,2), f float8, v int4);
INSERT INTO po SELECT i % 2500,
	CASE WHEN i % 19 = 0 THEN NULL ELSE (i * 11) % 301 - 150 END,
	CASE WHEN i % 23 = 0 THEN NULL ELSE ((i % 97) - 48) * 100000000003 END,
	CASE WHEN i % 29 = 0 THEN NULL ELSE date '2020-02-28' + (i % 40) - 20 END,
	CASE WHEN i % 31 = 0 THEN NULL ELSE i % 3 = 0 END,
	CASE WHEN i % 37 = 0 THEN NULL WHEN i % 41 = 0 THEN 'NaN' ELSE ((i % 201) - 100) / 4.0 END,
	CASE WHEN i % 43 = 0 THEN 'NaN' WHEN i % 47 = 0 THEN NULL ELSE ((i % 50) - 25) / 3.0 END,
	i % 1000
FROM generate_series(1, 20000) i;
CREATE TABLE pi (k int4, w int4);
INSERT INTO pi SELECT i % 3000, i FROM generate_series(1, 6000) i;
CREATE TABLE pempty (k int4, w int4);
ANALYZE po, pi, pempty;

-- each query, its ordered GpuPreAgg expected (true), not possible (false)
-- or up to the planner (NULL), and PostgreSQL's rows in PostgreSQL's order
-- (numbered)
CREATE TEMP TABLE oq (name text PRIMARY KEY, sql text, ordered boolean);
INSERT INTO oq VALUES
	('int4 key, ascending', 'SELECT po.g, count(*), sum(pi.w) FROM po JOIN pi ON po.k = pi.k GROUP BY po.g ORDER BY po.g', true),
	('int4 key, descending', 'SELECT po.g, count(*), sum(pi.w) FROM po JOIN pi ON po.k = pi.k GROUP BY po.g ORDER BY po.g DESC', true),
	('int4 key, NULLs first', 'SELECT po.g, count(*) FROM po JOIN pi ON po.k = pi.k GROUP BY po.g ORDER BY po.g NULLS FIRST', true),
	('int4 key, descending, NULLs last', 'SELECT po.g, min(pi.w) FROM po JOIN pi ON po.k = pi.k GROUP BY po.g ORDER BY po.g DESC NULLS LAST', true),
	('int8 key', 'SELECT po.g8, count(*), max(po.v) FROM po JOIN pi ON po.k = pi.k GROUP BY po.g8 ORDER BY po.g8', true),
	('date key, descending', 'SELECT po.d, count(*) FROM po JOIN pi ON po.k = pi.k GROUP BY po.d ORDER BY po.d DESC', true),
	('bool key', 'SELECT po.b, count(*), sum(po.v) FROM po JOIN pi ON po.k = pi.k GROUP BY po.b ORDER BY po.b', true),
	('numeric key, NaN the largest', 'SELECT po.n, count(*) FROM po JOIN pi ON po.k = pi.k GROUP BY po.n ORDER BY po.n', true),
	('two keys, mixed directions', 'SELECT po.b, po.g, count(*), sum(pi.w) FROM po JOIN pi ON po.k = pi.k GROUP BY po.b, po.g ORDER BY po.b DESC, po.g', true),
	('a key expression', 'SELECT po.v % 7, count(*) FROM po JOIN pi ON po.k = pi.k GROUP BY po.v % 7 ORDER BY po.v % 7', true),
	('an empty join', 'SELECT po.g, count(*) FROM po JOIN pempty ON po.k = pempty.k GROUP BY po.g ORDER BY po.g', true),
	('ordered by an aggregate', 'SELECT po.g, count(*) AS c FROM po JOIN pi ON po.k = pi.k GROUP BY po.g ORDER BY c, po.g', NULL),
	('float8 key, NaN the largest', 'SELECT po.f, count(*) FROM po JOIN pi ON po.k = pi.k GROUP BY po.f ORDER BY po.f', true),
	('float4 key expression, descending', 'SELECT po.f::float4 * 2, sum(pi.w) FROM po JOIN pi ON po.k = pi.k GROUP BY 1 ORDER BY 1 DESC', true);

CREATE TEMP TABLE oq_expected (name text, rn bigint, r text);
CREATE FUNCTION pg_temp.numbered(q text) RETURNS TABLE (rn bigint, r text)
LANGUAGE plpgsql AS $$
DECLARE
	rec record;
BEGIN
	rn := 0;
	FOR rec IN EXECUTE q LOOP
		rn := rn + 1;
		r := rec::text;
		RETURN NEXT;
	END LOOP;
END $$;
:postgres_join
SET LOCAL gpujoin.enabled = off;
INSERT INTO oq_expected SELECT q.name, n.rn, n.r FROM oq q, pg_temp.numbered(q.sql) n;
SELECT cmp_ok((SELECT count(*) FROM oq_expected WHERE name = 'int4 key, ascending'), '>', 100::bigint,
	'the reference: the int4 key has over 100 groups');

-- every query under the GPU settings given: its rows in order, and with
-- check_plans its plan (an ordered GpuPreAgg and no Sort where expected,
-- none where it cannot be)
CREATE FUNCTION pg_temp.order_failures(check_plans boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	q record;
	p text;
	bad text := '';
BEGIN
	FOR q IN SELECT * FROM oq ORDER BY name LOOP
		p := pg_temp.plan(q.sql);
		IF check_plans AND
			((q.ordered AND (p !~ 'Output Order' OR p ~ '(^|\n)\s*(->  )?Sort\M')) OR
			 (NOT q.ordered AND p ~ 'Output Order')) THEN
			bad := bad || q.name || ' (plan); ';
		ELSIF EXISTS (
			(SELECT rn, r FROM pg_temp.numbered(q.sql)
			 EXCEPT ALL SELECT rn, r FROM oq_expected WHERE name = q.name)
			UNION ALL
			(SELECT rn, r FROM oq_expected WHERE name = q.name
			 EXCEPT ALL SELECT rn, r FROM pg_temp.numbered(q.sql))) THEN
			bad := bad || q.name || ' (rows); ';
		END IF;
	END LOOP;
	RETURN bad;
END $$;

:gpu_join
SELECT matches(pg_temp.plan((SELECT sql FROM oq WHERE name = 'int4 key, ascending')),
	'GroupAggregate[\s\S]*Custom Scan \(GpuPreAgg\)[\s\S]*Output Order: by the group keys',
	'GROUP BY g ORDER BY g: a Finalize GroupAggregate over an ordered GpuPreAgg');
SELECT doesnt_match(pg_temp.plan((SELECT sql FROM oq WHERE name = 'int4 key, ascending')),
	'Sort', 'GROUP BY g ORDER BY g: no Sort');
SELECT is(pg_temp.order_failures(true), '', 'default settings: every query, its plan and its rows in order');
SELECT pg_temp.plan_analyze((SELECT sql FROM oq WHERE name = 'two keys, mixed directions')) AS mixed_plan \gset
SELECT matches(:'mixed_plan'::text,
	'Output Order: by the group keys, sorted on the device[\s\S]*Groups Returned: \d+',
	'EXPLAIN ANALYZE shows the ordered GpuPreAgg and its groups');
SELECT doesnt_match(:'mixed_plan'::text, 'Groups Sorted on the Host',
	'one set of groups: in order as the kernels returned them, nothing sorted on the host');

-- the same group in several sets of rows: chunks, and spills under a limit
SET LOCAL gpujoin.chunk_rows = 3000;
SELECT is(pg_temp.order_failures(), '', 'chunks of 3000 outer rows: every query in order');
SET LOCAL gpujoin.device_memory_limit = '256kB';
SET LOCAL gpujoin.preagg_table_matches = 700;
SELECT is(pg_temp.order_failures(), '', 'a 256 kB device limit, tables of 700 matches: every query in order');
SELECT matches(pg_temp.plan_analyze((SELECT sql FROM oq WHERE name = 'int4 key, ascending')),
	'Groups Returned: \d+\s+Groups Sorted on the Host: \d+',
	'a 256 kB device limit, tables of 700 matches: several sets of groups, merged on the host');
RESET gpujoin.device_memory_limit;
RESET gpujoin.preagg_table_matches;
RESET gpujoin.chunk_rows;

-- each group-by variant
SET LOCAL gpujoin.groupby_variant = 'hash';
SELECT is(pg_temp.order_failures(), '', 'group-by hash: every query in order');
SET LOCAL gpujoin.groupby_variant = 'shared';
SELECT is(pg_temp.order_failures(), '', 'group-by shared: every query in order');
SET LOCAL gpujoin.groupby_variant = 'sort';
SELECT is(pg_temp.order_failures(), '', 'group-by sort: every query in order');
SET LOCAL gpujoin.groupby_variant = 'sort_tr';
SELECT is(pg_temp.order_failures(), '', 'group-by sort_tr: every query in order');
RESET gpujoin.groupby_variant;

-- spread over three logical devices, partitioned: the devices' groups
-- combined and sorted on the host by the spread's kernels
SET LOCAL gpujoin.devices = '0';
SET LOCAL gpujoin.logical_devices = 3;
SET LOCAL gpujoin.multi_device = 'partition';
SELECT is(pg_temp.order_failures(), '', 'three logical devices, partitioned: every query in order');
RESET gpujoin.multi_device;
RESET gpujoin.logical_devices;
RESET gpujoin.devices;

-- a parallel plan: each process's groups in key order, merged by a Gather
-- Merge under the Finalize GroupAggregate
:parallel_cheap
SELECT matches(pg_temp.plan((SELECT sql FROM oq WHERE name = 'int4 key, ascending')),
	'GroupAggregate[\s\S]*Gather Merge[\s\S]*Parallel Custom Scan \(GpuPreAgg\)[\s\S]*Output Order: by the group keys',
	'parallel: a Finalize GroupAggregate over a Gather Merge of ordered GpuPreAggs');
SELECT is(pg_temp.order_failures(), '', 'parallel plans: every query in order');
SET LOCAL max_parallel_workers_per_gather = 0;

-- a rescanned GpuPreAgg (under a SubPlan): each scan in order
\set qsub 'SELECT x, (SELECT string_agg(s.g::text || '':'' || s.c, '','') FROM (SELECT po.g, count(*) AS c FROM po JOIN pi ON po.k = pi.k WHERE po.v < x * 300 GROUP BY po.g ORDER BY po.g DESC) s) FROM generate_series(1, 3) x'
SELECT matches(pg_temp.plan(:'qsub'), 'SubPlan[\s\S]*Output Order', 'a SubPlan with an ordered GpuPreAgg');
CREATE TEMP TABLE sub_gpu AS :qsub;
:postgres_join
SET LOCAL gpujoin.enabled = off;
SELECT set_eq('SELECT * FROM sub_gpu', :'qsub', 'rescanned: each scan''s groups in PostgreSQL''s order');
SELECT * FROM finish();
ROLLBACK;
