-- test/021_heap_pages.sql
--
-- Sides read as heap pages (src/exec_heap.c, cuda/scan/heap_deform_cpu.c):
-- a GPU join over plain scans of heap tables reads the pages itself and
-- deforms the visible tuples into its batches (the fixed-width columns on
-- the device, the text and TOAST-ed ones on the host).  Differential: every query
-- returns the same rows with the heap-page path (gpujoin.enable_heapscan)
-- and without it (the Seq Scan children), with the pages read in place in
-- the shared buffers and copied, and as PostgreSQL's own join;
-- over NULLs in every position, varlena and TOAST-ed columns before the
-- ones the join needs, dropped and added columns, every key type the path
-- takes, every join type, rows deleted, updated (HOT or not) and inserted
-- in the transaction, the outer side's host columns taken from every row
-- or fetched by tid per match (gpujoin.heap_fetch), empty tables and pages, chunks that end inside a
-- page, a partitioned join, rescans, a materialized view, unlogged and
-- temporary tables, and a cancel while pages are read.  Sides the path does
-- not take keep their Seq Scan: a scan with a qual the device does not
-- evaluate (test/023 has those it does), a partitioned table, a
-- key that is an expression, SELECT FOR UPDATE.  Keys of a coding the
-- deform does not compute (text, numeric, date = timestamp) are encoded on
-- the host from the staged tuples.
BEGIN;
SELECT plan(45);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;
SET LOCAL max_parallel_workers_per_gather = 0;

-- w: a wide table: varlena columns (short, long and TOAST-ed) and NULLs
-- before and after the columns the join needs; keys with duplicates and
-- NULLs; one column dropped, two added (one with a default, one without)
CREATE TABLE w (pad1 text, k int4, pad2 varchar(40), d int8, big text, junk int, v int2, f float8, tail text);
INSERT INTO w SELECT
	CASE WHEN g % 3 = 0 THEN NULL ELSE repeat('p', g % 17) END,
	CASE WHEN g % 41 = 0 THEN NULL ELSE g % 500 END,
	CASE WHEN g % 5 = 0 THEN NULL ELSE 'x' || g END,
	CASE WHEN g % 7 = 0 THEN NULL ELSE g::int8 * 1000003 END,
	CASE WHEN g % 97 = 0 THEN repeat(md5(g::text), 300)		-- compressed
		 WHEN g % 89 = 0 THEN (SELECT string_agg(md5((g * i)::text), '') FROM generate_series(1, 80) i)	-- toasted out of line
		 ELSE NULL END,
	g,
	CASE WHEN g % 11 = 0 THEN NULL ELSE (g % 300)::int2 END,
	CASE WHEN g % 13 = 0 THEN 'NaN'::float8 WHEN g % 19 = 0 THEN -0.0::float8 ELSE g / 4.0 END,
	repeat('t', g % 3)
FROM generate_series(1, 6000) g;
ALTER TABLE w ALTER COLUMN big SET STORAGE EXTERNAL;
ALTER TABLE w DROP COLUMN junk;
ALTER TABLE w ADD COLUMN added_default int4 DEFAULT 42;
ALTER TABLE w ADD COLUMN added_null int8;
INSERT INTO w (k, d, v, f, added_default, added_null)
	SELECT g % 500, g, (g % 300)::int2, g, g % 3, CASE WHEN g % 2 = 0 THEN g END FROM generate_series(1, 700) g;
-- s: the other side, keys of every kind the path takes
CREATE TABLE s (k int4, k2 int2, k8 int8, ko oid, kb bool, kd date, kt time, kts timestamp,
				ktz timestamptz, kf4 float4, kf8 float8, w int4, kn numeric(8,2), ks text);
INSERT INTO s SELECT g % 600, (g % 600)::int2, g % 600, (g % 600)::oid, g % 2 = 0,
	date '2000-01-01' + g % 600, time '00:00' + (g % 600) * interval '1 minute',
	timestamp '2000-01-01' + (g % 600) * interval '1 hour',
	timestamptz '2000-01-01 00:00+00' + (g % 600) * interval '1 hour',
	(g % 600) / 4.0, CASE WHEN g % 50 = 0 THEN 'NaN' WHEN g % 51 = 0 THEN 0 ELSE (g % 600) / 4.0 END,
	CASE WHEN g % 23 = 0 THEN NULL ELSE g END,
	CASE WHEN g % 31 = 0 THEN NULL ELSE (g % 600) / 4.0 END,
	CASE WHEN g % 29 = 0 THEN NULL ELSE 'x' || (g % 600) * 10 + 1 END
FROM generate_series(1, 3000) g;
-- nm: numerics of declared scale, which a side with no other host column
-- takes to the device as scaled integers (the deform converts them, the
-- emission turns them back): NaN, NULLs, signs, the widest values of each
-- precision, a scale above the precision
CREATE TABLE nm (k int4, a numeric(15, 2), b numeric(18, 0), c numeric(3, 5));
INSERT INTO nm SELECT CASE WHEN g % 53 = 0 THEN NULL ELSE g % 400 END,
	CASE WHEN g % 37 = 0 THEN NULL WHEN g % 41 = 0 THEN 'NaN'
		 WHEN g % 43 = 0 THEN 9999999999999.99 WHEN g % 47 = 0 THEN -9999999999999.99
		 ELSE ((g * 7919) % 100003 - 50000) / 100.0 END,
	CASE WHEN g % 31 = 0 THEN NULL WHEN g % 59 = 0 THEN 999999999999999999
		 WHEN g % 61 = 0 THEN -999999999999999999 ELSE g * 1000003 - 400000000 END,
	CASE WHEN g % 29 = 0 THEN NULL WHEN g % 67 = 0 THEN 'NaN'
		 ELSE ((g * 31) % 1999 - 999) / 100000.0 END
FROM generate_series(1, 800) g;
-- a column added with a default, which the older tuples lack: the deform
-- leaves their values to the host
ALTER TABLE nm ADD COLUMN d numeric(6, 2) DEFAULT -12.5;
INSERT INTO nm (k, a, d) SELECT g % 400, g / 4.0, g / 8.0 FROM generate_series(1, 100) g;
CREATE TABLE empty_t (k int4, v int4);
-- few: a small inner side, so that w is the outer one and few of its rows match
CREATE TABLE few (k int4, t text);
INSERT INTO few SELECT g * 37 % 500, 'x' || g * 50 FROM generate_series(1, 12) g;
ANALYZE w, s, nm, empty_t, few;

-- the queries, each with the sides the heap path takes
CREATE TEMP TABLE hq (name text PRIMARY KEY, sql text, heap_sides int, filters int DEFAULT 0);
INSERT INTO hq VALUES
	('inner, int4 keys', 'SELECT w.k, w.d, w.v, s.w FROM w JOIN s ON w.k = s.k', 2),
	('int2 = int4', 'SELECT w.v, s.w FROM w JOIN s ON w.v = s.k', 2),
	('int8 = int4', 'SELECT w.d, s.w FROM w JOIN s ON w.d % 1000 = s.k', 1),
	('int8 keys', 'SELECT w.k, s.w FROM w JOIN s ON w.added_null = s.k8', 2),
	('added column with a default', 'SELECT w.added_default, s.w FROM w JOIN s ON w.added_default = s.k', 2),
	('float8 keys, NaN and -0', 'SELECT w.f, s.w FROM w JOIN s ON w.f = s.kf8', 2),
	('float4 = float8', 'SELECT s.kf4, s.w FROM w JOIN s ON w.f = s.kf4', 2),
	('two keys', 'SELECT w.k, w.v, s.w FROM w JOIN s ON w.k = s.k AND w.v = s.k2', 2),
	('left join', 'SELECT w.k, w.d, s.w FROM w LEFT JOIN s ON w.k = s.k', 2),
	('right join', 'SELECT w.k, s.w FROM w RIGHT JOIN s ON w.k = s.k', 2),
	('full join', 'SELECT w.k, s.w FROM w FULL JOIN s ON w.k = s.k', 2),
	('semi join', 'SELECT w.k, w.d FROM w WHERE EXISTS (SELECT 1 FROM s WHERE s.k = w.k)', 2),
	('anti join', 'SELECT w.k, w.d FROM w WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.k = w.k)', 2),
	('oid, bool and date keys', 'SELECT a.k, b.w FROM s a JOIN s b ON a.ko = b.ko AND a.kb = b.kb AND a.kd = b.kd', 2),
	('time and timestamp keys', 'SELECT a.w, b.k FROM s a JOIN s b ON a.kt = b.kt AND a.kts = b.kts', 2),
	('timestamptz keys', 'SELECT a.k + 1, b.w FROM s a JOIN s b ON a.ktz = b.ktz', 2),
	('an empty side', 'SELECT w.k, e.v FROM w LEFT JOIN empty_t e ON w.k = e.k', 2),
	('text, varchar and TOAST-ed columns', 'SELECT w.pad1, w.k, w.pad2, md5(w.big), length(w.big), w.tail, w.v, s.w FROM w JOIN s ON w.k = s.k', 2),
	('host columns, a left join', 'SELECT w.pad2, w.tail, s.w, s.kf8::text FROM w LEFT JOIN s ON w.v = s.k2', 2),
	('a text column after the added ones', 'SELECT w.added_null, w.pad1 || w.tail, s.w FROM w JOIN s ON w.added_default = s.k', 2),
	('a qual the device does not take: the host''s, on the pages', 'SELECT w.k, s.w FROM w JOIN s ON w.k = s.k WHERE s.w::text LIKE ''1%''', 2),
	('text keys, encoded on the host', 'SELECT w.k, w.pad2, s.w FROM w JOIN s ON w.pad2 = s.ks', 2),
	('text keys, a left join', 'SELECT w.k, w.d, s.w FROM w LEFT JOIN s ON w.pad2 = s.ks', 2),
	('text keys, an anti join', 'SELECT w.k, w.d FROM w WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.ks = w.pad2)', 2),
	('varchar = text and int4 keys together', 'SELECT a.k, a.d, b.v FROM w a JOIN w b ON a.pad2 = b.pad2 AND a.k = b.k', 2),
	('numeric keys', 'SELECT a.k, b.w, a.kn FROM s a JOIN s b ON a.kn = b.kn', 2),
	('date = timestamp keys', 'SELECT a.k, b.w FROM s a JOIN s b ON a.kd = b.kts', 2),
	('a key expression keeps the Seq Scan', 'SELECT w.k, s.w FROM w JOIN s ON w.pad2 = ''x'' || s.k', 1),
	('few matches of a large outer side''s host columns', 'SELECT w.pad1, w.pad2, md5(w.big), w.tail, w.k, f.k FROM w JOIN few f ON w.k = f.k', 2),
	('few matches, a left join', 'SELECT w.pad2, w.tail, w.d, f.t FROM w LEFT JOIN few f ON w.k = f.k', 2),
	('few matches, an anti join', 'SELECT w.pad1, w.d FROM w WHERE NOT EXISTS (SELECT 1 FROM few f WHERE f.k = w.k)', 2),
	('few matches, a join filter on host columns', 'SELECT w.pad2, w.v, f.t FROM w JOIN few f ON w.k = f.k AND w.pad2 > f.t', 2),
	('numerics of declared scale on the device', 'SELECT w.k, nm.a, nm.b, nm.c FROM w JOIN nm ON w.k = nm.k', 2),
	('numerics, a left join', 'SELECT w.d, nm.a, nm.c FROM w LEFT JOIN nm ON w.v = nm.k', 2),
	('numerics, a join filter on them', 'SELECT nm.a, nm.b, s.kn FROM nm JOIN s ON nm.k = s.k AND nm.a > s.kn', 2),
	('numerics, a full join', 'SELECT nm.c, nm.b, s.kn, s.w FROM nm FULL JOIN s ON nm.k = s.k2', 2),
	('numerics beside a text column stay on the host', 'SELECT a.ks, a.kn, b.kn FROM s a JOIN s b ON a.k = b.k8', 2),
	('numerics, a column added with a default', 'SELECT w.k, nm.d, nm.a FROM w JOIN nm ON w.k = nm.k', 2);

CREATE TEMP TABLE hq_expected (name text, digest text);
:postgres_join
INSERT INTO hq_expected SELECT name, pg_temp.rows_digest(sql) FROM hq;
SELECT is((SELECT string_agg(name, ', ' ORDER BY name) FROM hq_expected e
		   WHERE (SELECT count(*) FROM hq_expected f WHERE f.digest = e.digest) > 1), NULL,
	'the reference: each query has rows of its own');

:gpu_join
SELECT is(pg_temp.heap_failures('hq', 'hq_expected'), '', 'heap pages: every query, default settings');
SELECT matches(pg_temp.plan(sql), 'Outer Relation: w \(heap pages\)[\s\S]*Inner Relation: s \(heap pages\)', 'EXPLAIN names the relations read as heap pages')
	FROM hq WHERE name = 'inner, int4 keys';
SELECT doesnt_match(pg_temp.plan(sql), 'Seq Scan', 'no Seq Scan node under a join that reads both sides as pages')
	FROM hq WHERE name = 'inner, int4 keys';
SELECT matches(pg_temp.plan_analyze(sql), 'Outer Pages: read=\d+ all-visible=\d+ in-place=\d+ tuples=6700', 'EXPLAIN ANALYZE counts the pages and the visible tuples')
	FROM hq WHERE name = 'inner, int4 keys';
-- with TIMING, the heap lines' times: the page reads, the deform, the
-- host's time per row and the batch's growth; the same four in JSON
CREATE FUNCTION pg_temp.explain_timed(q text, fmt text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	l text;
	r text := '';
BEGIN
	FOR l IN EXECUTE format('EXPLAIN (ANALYZE, TIMING, COSTS OFF, FORMAT %s) %s', fmt, q) LOOP
		r := r || l || E'\n';
	END LOOP;
	RETURN r;
END $$;
SELECT ok(pg_temp.explain_timed(sql, 'TEXT') ~ 'Outer Pages: read=\d+ [^\n]* time=[0-9.]+ deform=[0-9.]+ host=[0-9.]+ alloc=[0-9.]+ ms' AND
		  (SELECT count(*) FROM regexp_matches(pg_temp.explain_timed(sql, 'JSON'),
			  '"(Outer|Inner) Heap (Time|Deform Time|Host Time|Alloc Time)": [0-9.]+', 'g')) = 8,
	'EXPLAIN ANALYZE with TIMING: the heap sides'' read, deform, host and alloc times (text and JSON)')
	FROM hq WHERE name = 'inner, int4 keys';
SET LOCAL gpujoin.chunk_rows = 7;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected'), '', 'heap pages: chunks of 7 rows, ending inside pages');
RESET gpujoin.chunk_rows;
-- a side whose host columns would all be numerics of declared scale takes
-- them to the device, scaled by the deform; beside a text column they stay
-- on the host; gpujoin.deform_numeric off keeps them there
SELECT matches(pg_temp.plan_analyze(sql), 'Inner Numerics: 3 converted on the device, 0 values by the host',
	'numerics of declared scale: the deform converts them for a join')
	FROM hq WHERE name = 'numerics of declared scale on the device';
SELECT doesnt_match(pg_temp.plan_analyze(sql), 'Outer Numerics:', 'numerics beside a text column: on the host (the other side''s alone: on the device)')
	FROM hq WHERE name = 'numerics beside a text column stay on the host';
SELECT matches(pg_temp.plan_analyze(sql), 'Inner Numerics: 2 converted on the device, 800 values by the host',
	'a numeric column added with a default: the older tuples'' values converted by the host')
	FROM hq WHERE name = 'numerics, a column added with a default';
SET LOCAL gpujoin.deform_numeric = off;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected'), '', 'gpujoin.deform_numeric = off: every query');
SELECT doesnt_match(pg_temp.plan_analyze(sql), 'Numerics:', 'gpujoin.deform_numeric = off: the numerics on the host')
	FROM hq WHERE name = 'numerics of declared scale on the device';
RESET gpujoin.deform_numeric;
-- the outer side's host columns fetched by tid for each match, or taken
-- from every row as its page is read
SET LOCAL gpujoin.heap_fetch = on;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected'), '', 'host columns fetched per match (gpujoin.heap_fetch = on): every query');
SELECT matches(pg_temp.plan(sql), 'Outer Relation: w \(heap pages, host columns fetched per match\)',
	'EXPLAIN: the outer side''s host columns fetched per match')
	FROM hq WHERE name = 'few matches of a large outer side''s host columns';
SET LOCAL gpujoin.chunk_rows = 7;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected'), '', 'host columns fetched per match, chunks of 7 rows: every query');
RESET gpujoin.chunk_rows;
SET LOCAL gpujoin.heap_fetch = off;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected'), '', 'host columns taken from every row (gpujoin.heap_fetch = off): every query');
RESET gpujoin.heap_fetch;
-- two keys that go together: their selectivities multiplied promise 800
-- matches where every one of cf's 40,000 rows has one, so its host column
-- is taken from every row, not fetched per match (MatchesBound; priced on
-- the 800, the plan fetched them per match)
CREATE TABLE cf (a int4, b int4, pad text);
INSERT INTO cf SELECT g % 2000, (g % 2000) % 50, repeat('c', g % 20) FROM generate_series(1, 40000) g;
CREATE TABLE cp (a int4, b int4, v int4);
INSERT INTO cp SELECT g, g % 50, g FROM generate_series(0, 1999) g;
ANALYZE cf;
ANALYZE cp;
SELECT matches(pg_temp.plan('SELECT cf.pad, cp.v FROM cf JOIN cp ON cf.a = cp.a AND cf.b = cp.b'),
	'Outer Relation: cf \(heap pages\)\n',
	'two correlated keys: the outer side''s host column taken from every row, not fetched per match');
SELECT is((SELECT count(*) FROM cf JOIN cp ON cf.a = cp.a AND cf.b = cp.b), 40000::bigint,
	'two correlated keys: every outer row matches');
SET LOCAL gpujoin.heap_stage_pages = 1;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected'), '', 'heap pages staged one at a time: every query');
SET LOCAL gpujoin.chunk_rows = 50;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected'), '', 'one page at a time, chunks of 50 rows');
RESET gpujoin.chunk_rows;
RESET gpujoin.heap_stage_pages;
-- the staging and batch memory one join frees, the next one takes (and its
-- flags must be zeroed again); with no room kept, or room for small blocks
-- only, each join allocates its own
SET LOCAL gpujoin.heap_in_place = off;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected', false), '', 'pages copied, not read in place (gpujoin.heap_in_place = off): every query');
RESET gpujoin.heap_in_place;
SET LOCAL gpujoin.pinned_cache = 0;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected', false), '', 'no page-locked memory kept between joins: every query');
SET LOCAL gpujoin.pinned_cache = '48kB';
SET LOCAL gpujoin.chunk_rows = 100;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected', false), '', '48 kB of it kept, chunks of 100 rows: every query');
RESET gpujoin.chunk_rows;
RESET gpujoin.pinned_cache;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected', false), '', 'heap pages, ' || v || ': every query')
	FROM unnest(ARRAY['nphj', 'phj', 'smj']) v, LATERAL (SELECT set_config('gpujoin.join_variant', v, true)) c;
RESET gpujoin.join_variant;
-- (where no GPU merge join applies, PostgreSQL's merge join rather than
-- a nested loop of millions of comparisons)
SET LOCAL gpujoin.enable_hashjoin = off;
SET LOCAL enable_mergejoin = on;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected', false), '', 'heap pages as GPU merge joins: every query');
SET LOCAL enable_mergejoin = off;
RESET gpujoin.enable_hashjoin;
SET LOCAL gpujoin.enable_heapscan = off;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected', false), '', 'the Seq Scan children (gpujoin.enable_heapscan = off): every query');
SELECT doesnt_match(pg_temp.plan(sql), 'heap pages', 'enable_heapscan = off: no side read as pages')
	FROM hq WHERE name = 'inner, int4 keys';
RESET gpujoin.enable_heapscan;

-- a partitioned join: the outer side read as pages into the partitions'
-- tuplestores
SET LOCAL gpujoin.device_memory_limit = 64;
SELECT matches(pg_temp.plan_analyze(sql), 'Outer Relation: w \(heap pages\)[\s\S]*Partitions: \d+', 'partitioned: the outer side read as pages')
	FROM hq WHERE name = 'left join';
SELECT is(pg_temp.heap_failures('hq', 'hq_expected', false), '', 'partitioned joins over heap pages: every query');
RESET gpujoin.device_memory_limit;

-- MVCC in the transaction: rows deleted, updated (HOT and not), inserted,
-- and inserted in a subtransaction rolled back
:postgres_join
DELETE FROM w WHERE k % 10 = 3;
UPDATE w SET v = v + 1 WHERE k % 10 = 4;					-- HOT where it fits
UPDATE w SET k = k + 1, pad1 = repeat('u', 300) WHERE k % 10 = 5;	-- wider: not HOT
INSERT INTO w (k, d, v) SELECT g % 500, g, 7 FROM generate_series(1, 300) g;
SAVEPOINT sp;
INSERT INTO w (k, d, v) SELECT g % 500, -g, -7 FROM generate_series(1, 300) g;
DELETE FROM s WHERE k % 7 = 0;
ROLLBACK TO sp;
DELETE FROM s WHERE k % 9 = 0;
TRUNCATE hq_expected;
INSERT INTO hq_expected SELECT name, pg_temp.rows_digest(sql) FROM hq;
:gpu_join
SELECT is(pg_temp.heap_failures('hq', 'hq_expected'), '', 'heap pages after deletes, updates and inserts in the transaction');
SET LOCAL gpujoin.heap_fetch = on;
SELECT is(pg_temp.heap_failures('hq', 'hq_expected'), '', 'host columns fetched per match after them (heap-only tuples, rows of this transaction)');
RESET gpujoin.heap_fetch;

-- empty pages: every row of a range deleted and the table vacuumed is not
-- possible in a transaction; a table whose rows are all deleted is
CREATE TABLE gone AS SELECT g AS k, g AS v FROM generate_series(1, 3000) g;
DELETE FROM gone;
ANALYZE gone;
\set q 'SELECT w.k, gone.v FROM w LEFT JOIN gone ON w.k = gone.k'
:postgres_join
CREATE TEMP TABLE gone_expected AS :q;
:gpu_join
SELECT matches(pg_temp.plan(:'q'), 'Inner Relation: gone \(heap pages\)', 'a table of deleted rows: read as pages');
SELECT bag_eq(:'q', 'SELECT * FROM gone_expected', 'a table of deleted rows: no row of it');

-- rescans: the heap inner side is kept; the heap outer side read again
\set q 'SELECT t.g, (SELECT count(*) FROM w JOIN s ON w.k = s.k WHERE s.w < 0 OR t.g > 0) FROM generate_series(1, 3) t(g)'
:postgres_join
CREATE TEMP TABLE rescan_expected AS :q;
:gpu_join
SELECT bag_eq(:'q', 'SELECT * FROM rescan_expected', 'rescanned: the same rows each time');
\set q 'SELECT t.g, ss.* FROM (VALUES (1), (2), (3)) t(g), LATERAL (SELECT count(*), sum(s.w) FROM w JOIN s ON w.k = s.k + t.g) ss'
:postgres_join
CREATE TEMP TABLE rescan2_expected AS :q;
:gpu_join
SET LOCAL enable_memoize = off;
SELECT matches(pg_temp.plan(:'q'), 'heap pages', 'lateral: a heap side under a rescanned join');
SELECT bag_eq(:'q', 'SELECT * FROM rescan2_expected', 'lateral: each value its own rows');

-- a materialized view, an unlogged table, a temporary table
CREATE MATERIALIZED VIEW mv AS SELECT k, w FROM s;
CREATE UNLOGGED TABLE ul AS SELECT k, w FROM s;
CREATE TEMP TABLE tt AS SELECT k, w FROM s;
ANALYZE mv, ul, tt;
\set q 'SELECT w.k, mv.w AS a, ul.w AS b, tt.w AS c FROM w JOIN mv ON w.k = mv.k JOIN ul ON mv.k = ul.k AND mv.w = ul.w JOIN tt ON ul.k = tt.k AND ul.w = tt.w'
:postgres_join
CREATE TEMP TABLE kinds_expected AS :q;
:gpu_join
SELECT matches(pg_temp.plan(:'q'), 'Relation: (mv|ul|tt) \(heap pages\)', 'materialized view, unlogged and temporary tables: read as pages');
SELECT bag_eq(:'q', 'SELECT * FROM kinds_expected', 'materialized view, unlogged and temporary tables: PostgreSQL''s rows');

-- a partitioned table side keeps its Append; FOR UPDATE keeps the Seq Scans
CREATE TABLE pt (k int4, v int4) PARTITION BY RANGE (k);
CREATE TABLE pt1 PARTITION OF pt FOR VALUES FROM (0) TO (300);
CREATE TABLE pt2 PARTITION OF pt FOR VALUES FROM (300) TO (1000);
INSERT INTO pt SELECT g % 1000, g FROM generate_series(1, 4000) g;
ANALYZE pt;
\set q 'SELECT pt.v, s.w FROM pt JOIN s ON pt.k = s.k'
:postgres_join
CREATE TEMP TABLE pt_expected AS :q;
:gpu_join
SELECT matches(pg_temp.plan(:'q'), 'GpuHashJoin[\s\S]*Append', 'a partitioned table: its Append stays');
SELECT bag_eq(:'q', 'SELECT * FROM pt_expected', 'a partitioned table: PostgreSQL''s rows');
SELECT doesnt_match(pg_temp.plan('SELECT w.k, s.w FROM w JOIN s ON w.k = s.k FOR UPDATE OF w'), 'heap pages',
	'FOR UPDATE: the Seq Scans stay');

-- cancel while pages are read: a 2M-row self-join reads about 9,000 pages a
-- side (about 100 ms for the inner side on the CPU twin); statement_timeout
-- fires during the read, which checks for interrupts at every page
CREATE TABLE big (k int4, v int4);
INSERT INTO big SELECT g % 1000, g FROM generate_series(1, 2000000) g;
ANALYZE big;
\set q 'SELECT count(*) FROM big a JOIN big b ON a.k = b.k'
SELECT matches(pg_temp.plan(:'q'), 'Outer Relation: big a \(heap pages\)[\s\S]*Inner Relation: big b \(heap pages\)',
	'a 2M-row self-join reads both sides as heap pages');
SET LOCAL statement_timeout = '40ms';
SELECT cmp_ok(pg_temp.time_to_cancel(:'q'), '<', interval '1040 ms',
	'statement_timeout of 40 ms ends it while it reads pages, within a second of firing');
SET LOCAL statement_timeout = 0;

SELECT * FROM finish();
ROLLBACK;
