-- test/020_output_order.sql
--
-- The order a GPU join returns its rows in, where SQL promises none but
-- users may rely on it (README, "Row order"): NPHJ, BAND and NLJ return the
-- matches of each outer row together, in the order of the outer side, and
-- the unmatched outer rows of a left, full or anti join in their place (as
-- PostgreSQL's hash and nested-loop joins do), in one chunk or many;
-- GpuMergeJoin in key order, unmatched rows in their place.  The rows
-- themselves must be PostgreSQL's.
--
-- The order is read with array_agg over the join, which aggregates its
-- input in the order it comes; the outer side is a Seq Scan of a table
-- written in id order.
BEGIN;
SELECT plan(18);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;

-- r: 3000 rows in id order, keys with duplicates and NULLs, a third of
-- them without a match; s: 400 rows
CREATE TABLE r (id int, k int, v int);
INSERT INTO r SELECT g, CASE WHEN g % 53 = 0 THEN NULL ELSE (g * 7) % 600 END, g % 10
	FROM generate_series(1, 3000) g;
CREATE TABLE s (id int, k int);
INSERT INTO s SELECT g, (g * 3) % 400 FROM generate_series(1, 400) g;
ANALYZE r, s;

-- Is the join's output in outer (r.id) order, and are its rows PostgreSQL's?
CREATE FUNCTION pg_temp.outer_order(q text) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
	ids int[];
BEGIN
	EXECUTE format('SELECT array_agg(rid) FROM (%s) j', q) INTO ids;
	IF ids IS DISTINCT FROM (SELECT array_agg(x ORDER BY x) FROM unnest(ids) x) THEN
		RETURN 'not in outer order';
	END IF;
	RETURN 'in outer order';
END
$f$;

-- q, after setting gpujoin.join_variant (evaluated before the call it is
-- an argument of)
CREATE FUNCTION pg_temp.with_variant(v text, q text) RETURNS text
LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM set_config('gpujoin.join_variant', v, true);
	RETURN q;
END
$f$;

CREATE TEMP TABLE oq (name text, sql text, variant text);
INSERT INTO oq VALUES
	('inner join', 'SELECT r.id AS rid, s.id AS sid FROM r JOIN s ON r.k = s.k', 'NPHJ'),
	('left join', 'SELECT r.id AS rid, s.id AS sid FROM r LEFT JOIN s ON r.k = s.k', 'NPHJ'),
	('left join with a join filter', 'SELECT r.id AS rid, s.id AS sid FROM r LEFT JOIN s ON r.k = s.k AND s.id % 3 <> r.v % 3', 'NPHJ'),
	('anti join', 'SELECT r.id AS rid FROM r WHERE NOT EXISTS (SELECT 1 FROM s WHERE r.k = s.k)', 'NPHJ'),
	('semi join', 'SELECT r.id AS rid FROM r WHERE EXISTS (SELECT 1 FROM s WHERE r.k = s.k AND s.id > 200)', 'NPHJ'),
	('left band join', 'SELECT r.id AS rid, s.id AS sid FROM r LEFT JOIN s ON s.k BETWEEN r.k - 2 AND r.k', 'BAND'),
	('left nested-loop join', 'SELECT r.id AS rid, s.id AS sid FROM r LEFT JOIN s ON r.k > s.k + 390 AND r.v < s.id % 10', 'NLJ');

CREATE TEMP TABLE oq_expected AS SELECT name, NULL::text AS digest FROM oq;
:postgres_join
UPDATE oq_expected e SET digest = pg_temp.rows_digest(q.sql) FROM oq q WHERE q.name = e.name;

:gpu_join
-- each query with its variant (gpujoin.join_variant)
SELECT matches(pg_temp.plan(pg_temp.with_variant(lower(variant), sql)),
	'Gpu(Hash|Theta)Join[\s\S]*Variant: ' || variant || '[\s\S]*(Outer Relation: r \(heap pages\)|Seq Scan on r[\s\S]*Seq Scan on s)',
	name || ': ' || variant || ' with r as its outer side') FROM oq ORDER BY name;
SELECT is(pg_temp.outer_order(pg_temp.with_variant(lower(variant), sql)), 'in outer order', name || ': in outer order')
FROM oq ORDER BY name;
SET LOCAL gpujoin.chunk_rows = 7;
SELECT is(string_agg(name || ': ' || pg_temp.outer_order(pg_temp.with_variant(lower(variant), sql)), '; ' ORDER BY name),
	string_agg(name || ': in outer order', '; ' ORDER BY name), 'chunks of 7 outer rows: in outer order')
FROM oq;
RESET gpujoin.chunk_rows;
SELECT is(string_agg(q.name, ', ' ORDER BY q.name)
		  FILTER (WHERE pg_temp.rows_digest(pg_temp.with_variant(lower(variant), q.sql)) <> e.digest), NULL,
	'every query: PostgreSQL''s rows')
FROM oq q JOIN oq_expected e USING (name);
RESET gpujoin.join_variant;

-- GpuMergeJoin: key order, the unmatched rows in their place (NULL keys last)
SET LOCAL gpujoin.enable_hashjoin = off;
\set q 'SELECT r.k, r.id AS rid, s.id AS sid FROM r LEFT JOIN s ON r.k = s.k ORDER BY r.k'
SELECT matches(pg_temp.plan(:'q'), 'GpuMergeJoin[\s\S]*Join Type: Left', 'merge join: a GPU merge join, no Sort');
SELECT is((SELECT array_agg(k) FROM (SELECT k FROM (:q) j) x) =
		  (SELECT array_agg(k ORDER BY k) FROM r LEFT JOIN s USING (k)), true, 'merge join: in key order');
RESET gpujoin.enable_hashjoin;

SELECT * FROM finish();
ROLLBACK;
