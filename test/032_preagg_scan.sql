-- test/032_preagg_scan.sql
--
-- GpuPreAgg over one relation, not a join (planner_agg.c's ScanAggPath,
-- the kernels' SCAN variant: every row one match, no inner side, no key).
-- Differential: every query returns PostgreSQL's own rows, with the GPU
-- plan made cheap (its fixed and per-row costs set to 0) so that the
-- planner takes it: grouped and not, a count(*) alone (a scan tuple with
-- no column), NULL keys and arguments, floats with NaN, text keys, an
-- expression key, HAVING, quals the device evaluates on heap pages and a
-- qual it cannot (the Seq Scan stays the node's child), an empty table
-- and a WHERE that keeps no row (one row with count 0; no group),
-- chunks and rounds of a few rows, groups spilled under a tiny device
-- memory limit, a correlated subquery (rescans), a parallel plan, and
-- gpujoin.enable_preagg_scan = off (PostgreSQL's plan), and so with
-- gpujoin.enable_preagg = off.  (The empty table's rows are compared
-- whatever plan it gets: its estimates may tie with PostgreSQL's; the
-- device meets empty input where the WHERE keeps no row.)  A
-- materialized view, ONLY a parent, a volatile qual (the Seq Scan keeps
-- it), a window over the groups and a UNION ALL of groupings are SCANs;
-- an inherited or partitioned table is not (its rows are an Append's).
-- Numerics of declared scale (NaN, NULL, 18 digits, a column added by
-- ALTER TABLE whose default the host converts for the older tuples) with
-- the deform converting them and with the host (gpujoin.deform_numeric).
-- Text, varchar and char(n) keys the deform makes words of (values of at
-- most 7 bytes; the longer ones coded by the host): the empty string,
-- values of 7 and 8 bytes, ones that differ in their last byte, multibyte
-- characters, NULL, compressed values, char(n)'s blanks, and a column
-- added by ALTER TABLE whose default the host codes for the older tuples
-- (its word must be the one the deform makes of the newer tuples' value).
BEGIN;
SELECT plan(19);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;
SET LOCAL max_parallel_workers_per_gather = 0;

CREATE TABLE s (g int4, h int8, x int4, y float8, t text, d date, n numeric(10, 2));
INSERT INTO s SELECT
	CASE WHEN i % 17 = 0 THEN NULL ELSE i % 9 END,
	i % 1000,
	CASE WHEN i % 7 = 0 THEN NULL ELSE i - 5000 END,
	CASE WHEN i % 101 = 0 THEN 'NaN'::float8 ELSE i * 0.25 END,
	CASE WHEN i % 13 = 0 THEN NULL ELSE 'k' || (i % 4) END,
	date '2024-01-01' + i % 300,
	(i % 1000) * 0.05
	FROM generate_series(1, 20000) i;
-- numerics of declared scale, which the deform converts (gpujoin.deform_numeric):
-- negative, zero, NaN, NULL, 18 digits; q added by ALTER TABLE after the
-- first rows, whose tuples lack it (the host converts its default there)
CREATE TABLE sn (g int4, h int8, m numeric(18, 2), p numeric(6, 3));
INSERT INTO sn SELECT i % 5, i % 1000,
	CASE WHEN i % 97 = 0 THEN NULL WHEN i % 89 = 0 THEN 'NaN'
		 WHEN i % 83 = 0 THEN 9999999999999999.99 WHEN i % 79 = 0 THEN -9999999999999999.99
		 ELSE (i - 6000) * 1.01 END,
	(i % 1000) * 0.001 - 0.5
	FROM generate_series(1, 12000) i;
ALTER TABLE sn ADD COLUMN q numeric(10, 2) DEFAULT 2.50;
INSERT INTO sn SELECT i % 5, i % 1000, i * -0.01, NULL, CASE WHEN i % 3 = 0 THEN NULL ELSE i * 0.25 END
	FROM generate_series(1, 3000) i;
-- text keys: a of lengths 0 .. 9 bytes (a 7- and an 8-byte pair that
-- differ in the last byte), b varchar with multibyte characters, c char(4)
-- (blank-padded), a compressed value; e added with a default after the
-- first 6000 rows
CREATE TABLE st (x int4, a text, b varchar(12), c char(4));
INSERT INTO st SELECT i,
	CASE WHEN i % 11 = 0 THEN NULL ELSE (ARRAY['', 'a', 'ab', 'abcdefg', 'abcdefh', 'abcdefgh',
		'abcdefgi', 'Z', 'zz', 'abcdefghi'])[1 + i % 10] END,
	(ARRAY['é', 'éé', 'ééé', 'éééé', 'e', 'E', 'x y'])[1 + i % 7],
	(ARRAY['ab', 'ab  ', 'abcd', '', 'q'])[1 + i % 5]
	FROM generate_series(1, 6000) i;
INSERT INTO st SELECT 7000 + i, repeat('long value ', 400 + i % 2), 'éééé', 'ab' FROM generate_series(1, 40) i;
ALTER TABLE st ADD COLUMN e text DEFAULT 'dflt';
INSERT INTO st SELECT 8000 + i, 'a', 'e', 'q', (ARRAY['dflt', 'new', NULL, 'a longer one'])[1 + i % 4]
	FROM generate_series(1, 1000) i;
CREATE TABLE s_empty (LIKE s);
-- a partitioned table and an inherited one (no SCAN: their rows are an
-- Append's), a materialized view (a SCAN)
CREATE TABLE sp (a int, b int) PARTITION BY RANGE (a);
CREATE TABLE sp1 PARTITION OF sp FOR VALUES FROM (0) TO (50);
CREATE TABLE sp2 PARTITION OF sp FOR VALUES FROM (50) TO (100);
INSERT INTO sp SELECT i % 100, i FROM generate_series(1, 5000) i;
CREATE TABLE si (a int, b int);
CREATE TABLE sic () INHERITS (si);
INSERT INTO si SELECT i % 10, i FROM generate_series(1, 1000) i;
INSERT INTO sic SELECT i % 10, i FROM generate_series(1, 1000) i;
CREATE MATERIALIZED VIEW smv AS SELECT g, x FROM s;
ANALYZE s, sn, st, s_empty, sp, si, sic, smv;

CREATE TEMP TABLE sq (name text PRIMARY KEY, sql text);
INSERT INTO sq VALUES
	('count alone', 'SELECT count(*) FROM s'),
	('one group, every kind', 'SELECT count(*), count(x), sum(x), avg(x), min(x), max(x), sum(h), min(d), max(d), sum(n), avg(n) FROM s'),
	('a key with NULLs', 'SELECT g, count(*), sum(x), max(y) FROM s GROUP BY g'),
	('two keys, one of them text', 'SELECT g, t, count(x), min(h) FROM s GROUP BY g, t'),
	('an expression key, HAVING', 'SELECT h % 7, count(*), sum(x) FROM s GROUP BY 1 HAVING count(*) > 2800'),
	('float aggregates with NaN', 'SELECT g, min(y), max(y), count(y) FROM s GROUP BY g'),
	('FILTER', 'SELECT g, count(*) FILTER (WHERE x > 0), sum(x) FILTER (WHERE h < 500) FROM s GROUP BY g'),
	('a qual on the device', 'SELECT g, count(*), sum(x) FROM s WHERE x > 100 AND h < 900 GROUP BY g'),
	('a qual on the host', 'SELECT g, count(*), sum(x) FROM s WHERE t LIKE ''k1%'' GROUP BY g'),
	('no row kept', 'SELECT count(*), sum(x), max(y) FROM s WHERE x > 1000000'),
	('no row kept, grouped', 'SELECT g, count(*) FROM s WHERE x > 1000000 GROUP BY g'),
	('an empty table', 'SELECT count(*), sum(x), min(d) FROM s_empty'),
	('an empty table, grouped', 'SELECT g, count(*) FROM s_empty GROUP BY g'),
	('correlated', 'SELECT i, (SELECT count(*) FROM s WHERE s.g = i) FROM generate_series(0, 4) i'),
	('ordered, LIMIT', 'SELECT g, count(*) FROM s GROUP BY g ORDER BY g LIMIT 4'),
	('a volatile qual', 'SELECT g, count(*) FROM s WHERE random() < 2 GROUP BY g'),
	('a window over the groups', 'SELECT g, sum(count(*)) OVER () FROM s GROUP BY g'),
	('UNION ALL of two groupings', 'SELECT g, count(*) FROM s GROUP BY g UNION ALL SELECT a, count(*) FROM ONLY si GROUP BY a'),
	('a materialized view', 'SELECT g, count(*), sum(x) FROM smv GROUP BY g'),
	('ONLY a parent', 'SELECT a, count(*), sum(b) FROM ONLY si GROUP BY a'),
	('an inherited table', 'SELECT a, count(*), sum(b) FROM si GROUP BY a'),
	('a partitioned table', 'SELECT a, count(*), sum(b) FROM sp GROUP BY a'),
	('numerics', 'SELECT g, count(m), sum(m), avg(m), min(m), max(m), sum(p), min(p), sum(q), max(q) FROM sn GROUP BY g'),
	('numerics, a qual, one group', 'SELECT sum(m), max(p), sum(q), avg(q) FROM sn WHERE h < 900'),
	('text words', 'SELECT a, b, c, e, count(*), sum(x) FROM st GROUP BY a, b, c, e'),
	('a text word key alone', 'SELECT a, count(*), min(x) FROM st GROUP BY a');

-- PostgreSQL's rows
SET LOCAL gpujoin.enabled = off;
CREATE TEMP TABLE sq_expected AS SELECT name, pg_temp.rows_digest(sql) AS digest FROM sq;
RESET gpujoin.enabled;
CREATE FUNCTION pg_temp.scan_failures() RETURNS text
LANGUAGE sql AS $$
	SELECT coalesce(string_agg(q.name, '; ' ORDER BY q.name), '')
	FROM sq q JOIN sq_expected e USING (name)
	WHERE pg_temp.rows_digest(q.sql) IS DISTINCT FROM e.digest $$;

-- GpuPreAgg switched off: PostgreSQL's aggregate
SET LOCAL gpujoin.enable_preagg = off;
SELECT ok(pg_temp.plan(sql) !~ 'GpuPreAgg', 'gpujoin.enable_preagg = off: PostgreSQL''s aggregate')
	FROM sq WHERE name = 'a key with NULLs';
RESET gpujoin.enable_preagg;

-- the GPU plan made cheap
SET LOCAL gpujoin.setup_cost = 0;
SET LOCAL gpujoin.cost_per_ms = 0;
SET LOCAL gpujoin.emit_cost = 0;
SET LOCAL gpujoin.extract_cost = 0;
SET LOCAL gpujoin.heap_page_cost = 0;
SET LOCAL gpujoin.heap_tuple_cost = 0;
SELECT is((SELECT string_agg(name, '; ' ORDER BY name) FROM sq
		   WHERE name NOT IN ('correlated', 'an empty table', 'an empty table, grouped',
							  'an inherited table', 'a partitioned table') AND
				 pg_temp.plan(sql) !~ 'Custom Scan \(GpuPreAgg\)[\s\S]*Variant: SCAN'),
	NULL, 'every query over a relation with rows: a GpuPreAgg over a SCAN');
SELECT is(pg_temp.scan_failures(), '', 'every query returns PostgreSQL''s rows');
SELECT is((SELECT count(*) FROM sq WHERE name IN ('an inherited table', 'a partitioned table') AND
		   pg_temp.plan(sql) ~ 'GpuPreAgg'), 0::bigint,
	'an inherited or partitioned table: no SCAN (its rows come from an Append)');
SELECT matches(pg_temp.plan(sql), 'Finalize Aggregate\s+->  Custom Scan \(GpuPreAgg\)\s+Variant: SCAN\s+Outer Relation: s \(heap pages\)\s+Device Aggregation: one group, 1 aggregate',
	'EXPLAIN: a count(*) alone reads the heap pages, no column')
	FROM sq WHERE name = 'count alone';
SELECT matches(pg_temp.plan(sql), 'Outer Device Filter: \(\((s\.)?x > 100\) AND \((s\.)?h < 900\)\)',
	'EXPLAIN: the quals the device evaluates (18 names the relation)')
	FROM sq WHERE name = 'a qual on the device';
SELECT matches(pg_temp.plan(sql), 'Variant: SCAN\s+Outer Relation: s \(heap pages\)\s+Outer Host Filter: \((s\.)?t ~~ ''k1%''::text\)',
	'EXPLAIN: a qual the device cannot evaluate is the host''s, on the pages the SCAN reads')
	FROM sq WHERE name = 'a qual on the host';
SELECT is(pg_temp.plan_number(pg_temp.plan_analyze(sql), 'Outer Rows'), 20000::bigint,
	'EXPLAIN ANALYZE: every row of the relation is a match')
	FROM sq WHERE name = 'a key with NULLs';
-- the deform converting the numerics: m, p and q; q's default, which the
-- 12000 tuples older than the column lack, by the host
SELECT matches(pg_temp.plan_analyze(sql),
	'Outer Numerics: 3 converted on the device, 12000 values by the host',
	'EXPLAIN ANALYZE: the numerics converted on the device, the values left to the host')
	FROM sq WHERE name = 'numerics';
-- the deform making words of the short texts; the host codes the longer
-- ones, and e's default in the tuples older than the column
SELECT matches(pg_temp.plan_analyze(sql),
	'Outer Numerics: 0 converted on the device, 4 texts as words, ' ||
	(SELECT count(*) FILTER (WHERE octet_length(a) > 7) + count(*) FILTER (WHERE octet_length(b) > 7) +
			count(*) FILTER (WHERE octet_length(e) > 7) + 6040 FROM st) || ' values by the host',
	'EXPLAIN ANALYZE: short texts made words on the device, the other values coded by the host')
	FROM sq WHERE name = 'text words';
-- the host converting the numerics the deform would
SET LOCAL gpujoin.deform_numeric = off;
SELECT is(pg_temp.scan_failures(), '', 'gpujoin.deform_numeric = off: every query');
SELECT ok(pg_temp.plan_analyze(sql) !~ 'Numerics:',
	'gpujoin.deform_numeric = off: no numeric converted on the device')
	FROM sq WHERE name = 'numerics';
RESET gpujoin.deform_numeric;
-- every group-by variant
SELECT is(pg_temp.scan_failures(), '', 'gpujoin.groupby_variant = ' || v || ': every query')
	FROM unnest(ARRAY['hash', 'sort_tr']) v, LATERAL (SELECT set_config('gpujoin.groupby_variant', v, true)) c;
RESET gpujoin.groupby_variant;
-- chunks and rounds of a few rows, heap pages staged a few at a time
SET LOCAL gpujoin.chunk_rows = 700;
SELECT is(pg_temp.scan_failures(), '', 'chunks of 700 rows: every query');
RESET gpujoin.chunk_rows;
-- groups past a tiny device memory limit: spilled to the host
SET LOCAL gpujoin.device_memory_limit = '256kB';
SELECT is(pg_temp.scan_failures(), '', 'a 256 kB device memory limit: every query');
RESET gpujoin.device_memory_limit;
-- parallel: each process folds its share of the blocks
:parallel_cheap
SELECT matches(pg_temp.plan(sql), 'Gather[\s\S]*Parallel Custom Scan \(GpuPreAgg\)[\s\S]*heap pages, parallel',
	'a parallel plan: a GpuPreAgg per process')
	FROM sq WHERE name = 'a key with NULLs';
SELECT is(pg_temp.scan_failures(), '', 'parallel: every query');
RESET max_parallel_workers_per_gather;
-- switched off: PostgreSQL's aggregate
SET LOCAL gpujoin.enable_preagg_scan = off;
SELECT is((SELECT count(*) FROM sq WHERE pg_temp.plan(sql) ~ 'GpuPreAgg'), 0::bigint,
	'gpujoin.enable_preagg_scan = off: no GpuPreAgg over one relation');

SELECT * FROM finish();
ROLLBACK;
