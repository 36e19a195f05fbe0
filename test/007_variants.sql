-- test/007_variants.sql
--
-- Every join variant (NPHJ, PHJ, SMJ) with every materialization (GFTR,
-- GFUR), forced by gpujoin.join_variant and gpujoin.materialize, returns
-- PostgreSQL's rows: many-to-many keys with Zipf-like skew, NULL keys and
-- payloads, device columns of every width and host columns, one chunk and
-- several, one round and many.  And GpuMergeJoin returns them in key order.
BEGIN;
SELECT plan(39);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql

-- o: 20000 rows, keys skewed towards small values (k = floor(1000 * r^3)),
--    1 % NULL keys; i: 20000 rows, keys 0..1999 ten times each, 1 % NULL
CREATE TABLE o (id int, k int4, a int2, b int8, c float8, d date, t text);
INSERT INTO o
SELECT g,
	   CASE WHEN g % 100 = 0 THEN NULL ELSE floor(1000 * ((g * 7919 % 20000) / 20000.0) ^ 3)::int END,
	   CASE WHEN g % 7 = 0 THEN NULL ELSE (g % 15000)::int2 END,
	   g::int8 << 20,
	   g / 3.0,
	   date '2000-01-01' + g % 5000,
	   CASE WHEN g % 5 = 0 THEN NULL ELSE repeat('x', g % 40) END
FROM generate_series(1, 20000) g;
CREATE TABLE i (id int, k int8, f float4, u text);
INSERT INTO i
SELECT g,
	   CASE WHEN g % 100 = 0 THEN NULL ELSE g % 2000 END,
	   CASE WHEN g % 9 = 0 THEN NULL ELSE g * 0.25 END,
	   'i' || g
FROM generate_series(1, 20000) g;
ANALYZE o, i;

\set q 'SELECT o.id, o.k, o.a, o.b, o.c, o.d, o.t, i.id AS iid, i.f, i.u FROM o JOIN i ON o.k = i.k'
\set qfixed 'SELECT o.id, o.a, o.b, o.c, o.d, i.id AS iid, i.f FROM o JOIN i ON o.k = i.k'
:postgres_join
CREATE TEMP TABLE expected AS :q;
CREATE TEMP TABLE expected_fixed AS :qfixed;
SELECT cmp_ok((SELECT count(*) FROM expected), '>', 100000::bigint,
	'the reference is a many-to-many join of over 100000 rows');
SELECT is((SELECT count(*) FROM expected), (SELECT count(*) FROM expected_fixed),
	'both references have the same rows');
SELECT is((SELECT count(*) FROM expected WHERE k IS NULL), 0::bigint,
	'the reference has no NULL keys');

:gpu_join

CREATE FUNCTION pg_temp.check_variant(variant text, mat text, chunk int, q text, qfixed text)
RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	name text := upper(variant) || '-' || CASE mat WHEN 'gftr' THEN 'TR' ELSE 'UR' END;
	label text := format('%s, chunks of %s', name, chunk);
BEGIN
	PERFORM set_config('gpujoin.join_variant', variant, true);
	PERFORM set_config('gpujoin.materialize', mat, true);
	PERFORM set_config('gpujoin.chunk_rows', chunk::text, true);
	RETURN NEXT matches(pg_temp.plan(q), 'Variant: ' || name,
						label || ': EXPLAIN names the variant');
	RETURN NEXT bag_eq(q, 'SELECT * FROM expected',
					   label || ': with host columns, the same rows as PostgreSQL');
	RETURN NEXT bag_eq(qfixed, 'SELECT * FROM expected_fixed',
					   label || ': device columns only, the same rows as PostgreSQL');
END
$$;

SELECT * FROM pg_temp.check_variant('nphj', 'gfur', 1000000, :'q', :'qfixed');
SELECT * FROM pg_temp.check_variant('nphj', 'gftr', 1000000, :'q', :'qfixed');
SELECT * FROM pg_temp.check_variant('phj', 'gfur', 1000000, :'q', :'qfixed');
SELECT * FROM pg_temp.check_variant('phj', 'gftr', 1000000, :'q', :'qfixed');
SELECT * FROM pg_temp.check_variant('smj', 'gfur', 1000000, :'q', :'qfixed');
SELECT * FROM pg_temp.check_variant('smj', 'gftr', 1000000, :'q', :'qfixed');
SELECT * FROM pg_temp.check_variant('nphj', 'gftr', 7000, :'q', :'qfixed');
SELECT * FROM pg_temp.check_variant('phj', 'gfur', 7000, :'q', :'qfixed');
SELECT * FROM pg_temp.check_variant('phj', 'gftr', 7000, :'q', :'qfixed');
SELECT * FROM pg_temp.check_variant('smj', 'gftr', 7000, :'q', :'qfixed');
SET LOCAL gpujoin.join_variant = auto;
SET LOCAL gpujoin.materialize = auto;
RESET gpujoin.chunk_rows;

-- GpuMergeJoin: sorted on the key, no Sort node above it

\set qsorted 'SELECT o.k, o.id, i.id AS iid FROM o JOIN i ON o.k = i.k ORDER BY o.k'
SELECT matches(pg_temp.plan(:'qsorted'), 'Custom Scan \(GpuMergeJoin\)',
	'ORDER BY the join key: the planner picks the GPU merge join');
SELECT doesnt_match(pg_temp.plan(:'qsorted'), 'Sort',
	'ORDER BY the join key: no Sort above the GPU merge join');
SELECT is((SELECT count(*) FROM (SELECT k, lag(k) OVER () AS prev FROM (:qsorted) s) s WHERE prev > k),
	0::bigint, 'GPU merge join: the keys come out in ascending order');
SELECT bag_eq(:'qsorted', 'SELECT k, id, iid FROM expected',
	'GPU merge join: the same rows as PostgreSQL');
SELECT matches(pg_temp.plan(:'qsorted'), 'Variant: SMJ-',
	'GPU merge join: runs SMJ');
SELECT matches(pg_temp.plan(:'qsorted'), 'Merge Cond: \(o\.k = i\.k\)',
	'GPU merge join: EXPLAIN shows the merge condition');

SELECT * FROM finish();
ROLLBACK;
