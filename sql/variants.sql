-- The join variants (NPHJ, PHJ, SMJ) and materializations (GFTR, GFUR), each
-- forced, against PostgreSQL's own join; and GpuMergeJoin's sorted output
LOAD 'gpujoin';
SET gpujoin.explain_device = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;

-- payload columns of every kind: fixed-width ones travel to the device
-- (int2/4/8, float4/8, bool, date, timestamp), the others stay on the host
-- (text, numeric); NULLs in keys and payloads; duplicate keys on both sides
CREATE TABLE vo (k int4, a int2, b int8, c float8, d date, e bool, t text, n numeric);
CREATE TABLE vi (k int8, f float4, g timestamp, h int4, u text);
INSERT INTO vo
SELECT CASE WHEN g % 97 = 0 THEN NULL ELSE (g * 7) % 300 END,
	   CASE WHEN g % 13 = 0 THEN NULL ELSE (g % 1000)::int2 END,
	   g::int8 * 1000003,
	   CASE WHEN g % 11 = 0 THEN NULL ELSE g / 7.0 END,
	   date '2020-01-01' + g % 400,
	   g % 3 = 0,
	   'o' || g,
	   g / 3.0
FROM generate_series(1, 3000) g;
INSERT INTO vi
SELECT CASE WHEN g % 89 = 0 THEN NULL ELSE g % 350 END,
	   CASE WHEN g % 17 = 0 THEN NULL ELSE g * 0.5 END,
	   timestamp '2021-06-01 12:00' + g * interval '1 minute',
	   g,
	   CASE WHEN g % 19 = 0 THEN NULL ELSE 'i' || g END
FROM generate_series(1, 1200) g;
ANALYZE vo, vi;

CREATE TEMP VIEW vj AS
SELECT vo.k, vo.a, vo.b, vo.c, vo.d, vo.e, vo.t, vo.n, vi.f, vi.g, vi.h, vi.u
FROM vo JOIN vi ON vo.k = vi.k;
-- a join whose columns all travel to the device (no host columns)
CREATE TEMP VIEW vj_fixed AS
SELECT vo.k, vo.a, vo.b, vo.c, vo.d, vo.e, vi.f, vi.g, vi.h
FROM vo JOIN vi ON vo.k = vi.k;

SET gpujoin.enabled = off;
CREATE TEMP TABLE expected AS SELECT * FROM vj;
CREATE TEMP TABLE expected_fixed AS SELECT * FROM vj_fixed;
SELECT count(*), count(a), count(c), count(f), count(u) FROM expected;
SET gpujoin.enabled = on;

CREATE FUNCTION run_variant(variant text, mat text, chunk int,
							OUT plan_variant text, OUT same boolean, OUT same_fixed boolean)
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('gpujoin.join_variant', variant, true);
	PERFORM set_config('gpujoin.materialize', mat, true);
	PERFORM set_config('gpujoin.chunk_rows', chunk::text, true);
	SELECT substring(l FROM 'Variant: (\S+)') INTO plan_variant
	FROM gpujoin_explain('SELECT * FROM vj') AS l WHERE l LIKE '%Variant:%';
	-- EXECUTE: a fresh plan under these settings, not one PL/pgSQL cached
	EXECUTE 'SELECT NOT EXISTS (SELECT * FROM vj EXCEPT ALL SELECT * FROM expected)
				AND NOT EXISTS (SELECT * FROM expected EXCEPT ALL SELECT * FROM vj)' INTO same;
	EXECUTE 'SELECT NOT EXISTS (SELECT * FROM vj_fixed EXCEPT ALL SELECT * FROM expected_fixed)
				AND NOT EXISTS (SELECT * FROM expected_fixed EXCEPT ALL SELECT * FROM vj_fixed)' INTO same_fixed;
END
$$;

SELECT v, m, c, r.*
FROM unnest(ARRAY['nphj', 'phj', 'smj']) v,
	 unnest(ARRAY['gfur', 'gftr']) m,
	 unnest(ARRAY[1000000, 500]) c,
	 LATERAL run_variant(v, m, c) r
ORDER BY v, m, c;

-- GpuMergeJoin: its output is in key order, so no Sort is needed above it
EXPLAIN (COSTS OFF) SELECT vo.k, vi.h FROM vo JOIN vi ON vo.k = vi.k ORDER BY vo.k;
SELECT count(*) AS matched, count(*) FILTER (WHERE prev > k) AS out_of_order FROM (
	SELECT k, lag(k) OVER () AS prev FROM (SELECT vo.k FROM vo JOIN vi ON vo.k = vi.k ORDER BY vo.k) s
) s;
SELECT vo.k, vo.b, vi.h FROM vo JOIN vi ON vo.k = vi.k ORDER BY vo.k LIMIT 5;
-- two keys packed in 64 bits (int2 + int4): sorted by the first, then the
-- second (the estimate is one row, so here sorting a hash join is cheaper)
SET gpujoin.enable_hashjoin = off;
EXPLAIN (COSTS OFF)
SELECT vo.a, vo.k, vi.h FROM vo JOIN vi ON vo.a = vi.h AND vo.k = vi.h % 300 ORDER BY vo.a, vo.k;
SELECT count(*) AS matched, count(*) FILTER (WHERE (pa, pk) > (a, k)) AS out_of_order FROM (
	SELECT a, k, lag(a) OVER () AS pa, lag(k) OVER () AS pk
	FROM (SELECT vo.a, vo.k FROM vo JOIN vi ON vo.a = vi.h AND vo.k = vi.h % 300 ORDER BY vo.a, vo.k) s
) s;
RESET gpujoin.enable_hashjoin;
-- 64-bit keys and more are hashed: no order, so no merge join
EXPLAIN (COSTS OFF)
SELECT vo.k, vi.h FROM vo JOIN vi ON vo.k = vi.k AND vo.a = vi.h ORDER BY vo.k, vo.a;
SET gpujoin.enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT vo.k, vi.h FROM vo JOIN vi ON vo.k = vi.k ORDER BY vo.k;
RESET gpujoin.enable_mergejoin;

DROP FUNCTION run_variant;
DROP VIEW vj, vj_fixed;
DROP TABLE vo, vi;
