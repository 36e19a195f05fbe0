-- test/011_cost_model.sql
--
-- The cost model (planner_cost.c, ModelDeviceMs) and its calibration: the
-- settings and their defaults; gpujoin_calibrate() measures every constant
-- on the device of the session (the CPU twin here, the GPU on a GPU host)
-- and is superuser only; the planner's decisions, on tables whose
-- statistics are set (gpujoin.cost_as_gpu prices the paths as the GPU would
-- run them, so these need no GPU): small joins stay on PostgreSQL's joins,
-- large ones go to the GPU, the variant chosen is the cheapest the model
-- lists, and the choice moves with the constants, the match ratio and the
-- payload columns the way the model says; a join that will not fit the
-- device memory is priced as the CPU twin it falls back to.
BEGIN;
SELECT plan(45);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql

-- the settings, with the defaults measured on the H200
SELECT is(current_setting('gpujoin.nphj_row_ns'), '0.1', 'gpujoin.nphj_row_ns defaults to 0.1 ns');
SELECT is(current_setting('gpujoin.transfer_gbps'), '14', 'gpujoin.transfer_gbps defaults to 14 GB/s');
SELECT is(current_setting('gpujoin.cost_per_ms'), '80', 'gpujoin.cost_per_ms defaults to 80');

-- calibration: every constant measured, positive
CREATE TEMP TABLE calib AS SELECT * FROM gpujoin_calibrate(4096);
SELECT is((SELECT count(*) FROM calib), 25::bigint, 'gpujoin_calibrate() returns one row per constant');
SELECT is((SELECT string_agg(setting, ', ' ORDER BY setting) FROM calib
	WHERE setting NOT IN (SELECT name FROM pg_settings)), NULL,
	'every row names a gpujoin.* setting');
SELECT is((SELECT string_agg(setting, ', ') FROM calib
	WHERE setting LIKE '%row_ns' AND setting NOT LIKE 'gpujoin.preagg%' AND NOT value > 0), NULL,
	'every variant''s row time is measured and positive');
-- the group-by's are differences of times that the CPU twin's tiny runs
-- can leave at zero: present (calibration checked each case's groups)
SELECT is((SELECT count(*) FROM calib WHERE setting LIKE 'gpujoin.preagg%' AND value >= 0), 7::bigint,
	'the seven group-by constants are measured');
-- (each names the settings not measured, or not positive)
SELECT is((SELECT string_agg(s, ', ') FROM unnest(ARRAY['gpujoin.nlj_compare_ns',
		'gpujoin.extract_cost', 'gpujoin.cost_per_ms']) s
	WHERE NOT coalesce((SELECT value > 0 FROM calib WHERE setting = s), false)), NULL,
	'the NLJ comparison time, the host extraction cost and the planner units per ms are measured and positive');
SELECT is((SELECT string_agg(s, ', ') FROM unnest(ARRAY['gpujoin.emit_cost',
		'gpujoin.scan_cost_scale', 'gpujoin.heap_tuple_cost', 'gpujoin.heap_page_cost']) s
	WHERE NOT coalesce((SELECT value > 0 FROM calib WHERE setting = s), false)), NULL,
	'the cost of forming a joined row, the Seq Scans'' share and a heap side''s costs per tuple and per page are measured and positive');
SELECT is((SELECT count(*) FROM pg_class WHERE relname LIKE 'gpujoin\_calibrate\_%'), 0::bigint,
	'calibration leaves none of its tables behind');
SELECT ok((SELECT value > 0 FROM calib WHERE setting = 'gpujoin.setup_cost'),
	'the fixed cost of a GPU join is measured and positive');
-- the link between two GPUs: measured where gpujoin.devices names two
-- (and no service holds the GPUs), NULL otherwise
SELECT ok((SELECT CASE WHEN value IS NULL THEN true ELSE value > 0 END
	FROM calib WHERE setting = 'gpujoin.peer_gbps'),
	'the bandwidth between two GPUs is positive where it is measured');
SELECT is(current_setting('enable_hashjoin'), 'on', 'calibration leaves the session''s settings as they were');
SELECT ok((SELECT bool_and(value >= 0 OR value IS NULL) FROM calib), 'no constant is negative');
SELECT throws_ok('SELECT * FROM gpujoin_calibrate(10)', '22023', NULL,
	'gpujoin_calibrate() refuses fewer than 1024 rows');
CREATE ROLE gpujoin_test_plain;
SET LOCAL ROLE gpujoin_test_plain;
SELECT throws_ok('SELECT * FROM gpujoin_calibrate(4096)', '42501', NULL,
	'gpujoin_calibrate() is for superusers only');
RESET ROLE;

-- tables of 100 rows each whose statistics say 10^8 rows (relpages 1,
-- reltuples 10^8: the planner scales the density by the pages it finds)
CREATE TABLE big_r (k int, a int, b int);
CREATE TABLE big_s (k int, c int, d int);
INSERT INTO big_r SELECT g, g, g FROM generate_series(1, 100) g;
INSERT INTO big_s SELECT g, g, g FROM generate_series(1, 100) g;
CREATE TABLE small_r (k int, a int);
CREATE TABLE small_s (k int, c int);
INSERT INTO small_r SELECT g, g FROM generate_series(1, 100) g;
INSERT INTO small_s SELECT g, g FROM generate_series(1, 100) g;
ANALYZE big_r, big_s, small_r, small_s;
UPDATE pg_class SET reltuples = 1e8, relpages = 1 WHERE relname IN ('big_r', 'big_s');

SET LOCAL gpujoin.cost_as_gpu = on;
SET LOCAL max_parallel_workers_per_gather = 8;
SELECT doesnt_match(pg_temp.plan('SELECT small_r.a, small_s.c FROM small_r JOIN small_s ON small_r.k = small_s.k'),
	'Gpu', 'a 100 x 100 join stays on PostgreSQL''s join');
SELECT matches(pg_temp.plan('SELECT big_r.a, big_s.c FROM big_r JOIN big_s ON big_r.k = big_s.k'),
	'GpuHashJoin', 'a 10^8 x 10^8 join goes to the GPU');

\set q 'SELECT big_r.a, big_r.b, big_s.c, big_s.d FROM big_r JOIN big_s ON big_r.k = big_s.k'
:gpu_join
SELECT is((SELECT count(*) FROM gpujoin_explain_choice(:'q')), 6::bigint,
	'a hash join prices NPHJ, PHJ and SMJ, each with GFTR and GFUR');
SELECT is((SELECT count(*) FROM gpujoin_explain_choice(:'q') WHERE chosen), 1::bigint,
	'exactly one is chosen');
SELECT ok((SELECT estimated_ms FROM gpujoin_explain_choice(:'q') WHERE chosen) =
	(SELECT min(estimated_ms) FROM gpujoin_explain_choice(:'q')),
	'the chosen variant is the cheapest the model lists');
SELECT matches(pg_temp.plan(:'q'), 'Variant: ' || (SELECT variant FROM gpujoin_explain_choice(:'q') WHERE chosen),
	'the plan runs the variant chosen');

-- the constants move the choice
SET LOCAL gpujoin.nphj_row_ns = 10;
SELECT unalike((SELECT variant FROM gpujoin_explain_choice(:'q') WHERE chosen), 'NPHJ%',
	'a slow NPHJ is not chosen');
SET LOCAL gpujoin.phj_row_ns = 10;
SELECT alike((SELECT variant FROM gpujoin_explain_choice(:'q') WHERE chosen), 'SMJ%',
	'with NPHJ and PHJ slow, SMJ');
RESET gpujoin.nphj_row_ns;
RESET gpujoin.phj_row_ns;

-- GFTR against GFUR: random gathers priced high make GFTR pay off when most
-- outer rows match, not when few do (wu-2025-gftr.md §6.4)
SET LOCAL gpujoin.gather_ns = 0.3;
SELECT alike((SELECT variant FROM gpujoin_explain_choice(:'q') WHERE chosen), '%-TR',
	'every outer row matching, 4 payload columns: GFTR');
-- 10^6 distinct keys against 10^8: the planner expects 10^6 matches
CREATE TABLE few_s (k int, c int, d int);
INSERT INTO few_s SELECT g, g, g FROM generate_series(1, 100) g;
ANALYZE few_s;
UPDATE pg_class SET reltuples = 1e6, relpages = 1 WHERE relname = 'few_s';
\set q2 'SELECT big_r.a, big_r.b, few_s.c, few_s.d FROM big_r JOIN few_s ON big_r.k = few_s.k'
SELECT alike((SELECT variant FROM gpujoin_explain_choice(:'q2') WHERE chosen), '%-UR',
	'about 1 % of the outer rows matching: GFUR');
RESET gpujoin.gather_ns;

-- the host's part: a Seq Scan child's cost times gpujoin.scan_cost_scale,
-- every row formed at gpujoin.emit_cost
CREATE FUNCTION pg_temp.costs(q text, OUT join_cost float8, OUT scans_cost float8, OUT join_rows float8)
LANGUAGE plpgsql AS $f$
DECLARE
	p jsonb;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO p;
	SELECT (n->>'Total Cost')::float8, (n->>'Plan Rows')::float8 INTO join_cost, join_rows
		FROM jsonb_path_query(p, 'strict $.**?(@."Custom Plan Provider" == "GpuHashJoin")') n;
	SELECT sum((n->>'Total Cost')::float8) INTO scans_cost
		FROM jsonb_path_query(p, 'strict $.**?(@."Node Type" == "Seq Scan")') n;
END
$f$;
CREATE TABLE mid_r (k int, a int);
CREATE TABLE mid_s (k int, c int);
INSERT INTO mid_r SELECT g, g FROM generate_series(1, 100) g;
INSERT INTO mid_s SELECT g, g FROM generate_series(1, 100) g;
ANALYZE mid_r, mid_s;
UPDATE pg_class SET reltuples = 3e4, relpages = 1 WHERE relname IN ('mid_r', 'mid_s');
\set qmid 'SELECT mid_r.a, mid_s.c FROM mid_r JOIN mid_s ON mid_r.k = mid_s.k'
-- the Seq Scan children's share (sides read as heap pages have none)
SET LOCAL gpujoin.enable_heapscan = off;
SELECT is(current_setting('gpujoin.scan_cost_scale'), '0.2', 'gpujoin.scan_cost_scale defaults to the H200 host''s 0.2');
SELECT is(current_setting('gpujoin.emit_cost'), '0.003', 'gpujoin.emit_cost defaults to the H200 host''s 0.003');
SELECT is(current_setting('gpujoin.setup_cost'), '750', 'gpujoin.setup_cost defaults to the H200 host''s 750');
CREATE TEMP TABLE c02 AS SELECT * FROM pg_temp.costs(:'qmid');
SET LOCAL gpujoin.scan_cost_scale = 1;
CREATE TEMP TABLE c1 AS SELECT * FROM pg_temp.costs(:'qmid');
SET LOCAL gpujoin.scan_cost_scale = 0;
SELECT ok(abs(c1.join_cost - c0.join_cost - c1.scans_cost) < 0.01,
	'gpujoin.scan_cost_scale = 0 takes the Seq Scans'' whole cost off the GPU join, 1 charges all of it')
	FROM c1, pg_temp.costs(:'qmid') c0;
SELECT ok(abs(c02.join_cost - c0.join_cost - 0.2 * c02.scans_cost) < 0.01,
	'at 0.2, a fifth of it')
	FROM c02, pg_temp.costs(:'qmid') c0;
RESET gpujoin.scan_cost_scale;
SET LOCAL gpujoin.emit_cost = 0.103;
SELECT ok(abs(c2.join_cost - c02.join_cost - 0.1 * c02.join_rows) < 0.01,
	'gpujoin.emit_cost is paid once per row the join returns')
	FROM c02, pg_temp.costs(:'qmid') c2;
RESET gpujoin.emit_cost;
-- sides read as heap pages: gpujoin.heap_page_cost per page,
-- gpujoin.heap_tuple_cost per tuple, and per tuple on a page that is not
-- all-visible its check against the snapshot (cpu_operator_cost at
-- gpujoin.scan_cost_scale); the two tables have a page and 3 x 10^4 tuples each
SET LOCAL gpujoin.enable_heapscan = on;
SET LOCAL max_parallel_workers_per_gather = 0;
SELECT matches(pg_temp.plan(:'qmid'), 'Outer Relation: mid_\w \(heap pages\).*Inner Relation: mid_\w \(heap pages\)',
	'both sides of the 3 x 10^4 join are read as heap pages');
CREATE TEMP TABLE h0 AS SELECT * FROM pg_temp.costs(:'qmid');
SET LOCAL gpujoin.heap_page_cost = 1.0;
CREATE TEMP TABLE h1 AS SELECT * FROM pg_temp.costs(:'qmid');
SET LOCAL gpujoin.heap_page_cost = 2.0;
SELECT ok(abs(h.join_cost - h1.join_cost - 2 * 1.0) < 0.01,
	'gpujoin.heap_page_cost is paid once per page of each heap side')
	FROM h1, pg_temp.costs(:'qmid') h;
RESET gpujoin.heap_page_cost;
SET LOCAL gpujoin.heap_tuple_cost = 0.01;
CREATE TEMP TABLE h2 AS SELECT * FROM pg_temp.costs(:'qmid');
SET LOCAL gpujoin.heap_tuple_cost = 0.02;
SELECT ok(abs(h.join_cost - h2.join_cost - 2 * 3e4 * 0.01) < 0.01,
	'gpujoin.heap_tuple_cost is paid once per tuple of each heap side')
	FROM h2, pg_temp.costs(:'qmid') h;
RESET gpujoin.heap_tuple_cost;
UPDATE pg_class SET relallvisible = 1 WHERE relname IN ('mid_r', 'mid_s');
SELECT ok(abs(h0.join_cost - h.join_cost - 2 * 3e4 * 0.0025 * 0.2) < 0.01,
	'tuples on all-visible pages are not checked against the snapshot')
	FROM h0, pg_temp.costs(:'qmid') h;
UPDATE pg_class SET relallvisible = 0 WHERE relname IN ('mid_r', 'mid_s');
SET LOCAL gpujoin.enable_heapscan = off;
:postgres_join
SET LOCAL gpujoin.enabled = on;
SET LOCAL max_parallel_workers_per_gather = 0;
SELECT matches(pg_temp.plan(:'qmid'), 'GpuHashJoin',
	'a 3 x 10^4 join with the default host costs (the H200 host''s): the GPU join');
SET LOCAL gpujoin.scan_cost_scale = 1;
SET LOCAL gpujoin.emit_cost = 0.01;
SET LOCAL gpujoin.extract_cost = 0.002;
SELECT doesnt_match(pg_temp.plan(:'qmid'), 'Gpu',
	'the same join with the Seq Scans and the rows at PostgreSQL''s prices: PostgreSQL''s hash join');
RESET gpujoin.scan_cost_scale;
RESET gpujoin.emit_cost;
RESET gpujoin.extract_cost;
:gpu_join

-- a join that will not fit the device is priced as what it then does: the
-- CPU twin, which it falls back to
SET LOCAL gpujoin.device_memory_limit = '1MB';
SELECT matches(pg_temp.plan_verbose(:'q'), 'needs about \d+ MB of device memory, 1 MB available: costed as the CPU twin',
	'a join needing more device memory than the limit is costed as the CPU twin');
-- a 100-row inner side fits beside a smaller outer chunk: a hash join takes
-- smaller chunks and stays on the GPU, but a merge join, which reads its
-- outer side whole, does not fit
\set qsmall 'SELECT big_r.a, small_s.c FROM big_r JOIN small_s ON big_r.k = small_s.k ORDER BY big_r.k'
SELECT doesnt_match(pg_temp.plan_verbose(:'qsmall'), 'costed as the CPU twin|partitions',
	'a small inner side under the limit: the hash join, in smaller chunks, as the GPU');
SET LOCAL gpujoin.enable_hashjoin = off;
SELECT matches(pg_temp.plan_verbose(:'qsmall'), 'GpuMergeJoin(.|\n)*costed as the CPU twin',
	'the same join as a merge join does not fit: costed as the CPU twin');
RESET gpujoin.enable_hashjoin;
RESET gpujoin.device_memory_limit;
SELECT doesnt_match(pg_temp.plan_verbose(:'q'), 'costed as the CPU twin', 'without the limit, as the GPU');

-- forcing a variant still lists what was priced, and says so
SET LOCAL gpujoin.join_variant = phj;
SELECT is((SELECT string_agg(variant, ',' ORDER BY variant) FROM gpujoin_explain_choice(:'q')), 'PHJ-TR,PHJ-UR',
	'gpujoin.join_variant = phj prices PHJ alone');
SELECT matches(pg_temp.plan_verbose(:'q'), 'Variants Considered: PHJ-\w\w [0-9.]+ ms( \(chosen; forced by a setting\))?, PHJ-\w\w [0-9.]+ ms',
	'EXPLAIN (VERBOSE) lists them and says the choice was forced');
SELECT matches(pg_temp.plan(:'q'), 'Variant: PHJ', 'the forced variant runs');
RESET gpujoin.join_variant;

SELECT * FROM finish();
ROLLBACK;
