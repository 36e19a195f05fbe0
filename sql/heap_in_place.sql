-- Heap pages read in place: the buffers of a side read as heap pages stay
-- pinned while their rows are taken (gpujoin.heap_in_place), instead of
-- being copied.  Every way a scan can end (all rows read, LIMIT, a cursor
-- closed early, an error caught, rescans) must give back every pin when
-- the join ends, not when the statement does: pg_buffercache counts the
-- pins left after joins run inside one function.  And the rows are
-- PostgreSQL's, in place or copied.  (This file expects shared_buffers of
-- 64MB or more: with less, pages are copied, not read in place.)
LOAD 'gpujoin';
SET gpujoin.explain_device = off;
SET gpujoin.cost_as_gpu = on;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SET max_parallel_workers_per_gather = 0;

-- hp_a all-visible but for the pages its updates touched; hp_b never
-- vacuumed (every page through heapgetpage); hp_t temporary (local buffers)
CREATE TABLE hp_a (k int4, v int4, t text) WITH (autovacuum_enabled = off);
INSERT INTO hp_a SELECT g % 3000, g, repeat('a', g % 40) FROM generate_series(1, 40000) g;
VACUUM ANALYZE hp_a;
UPDATE hp_a SET v = -v WHERE v % 1000 = 7;
CREATE TABLE hp_b (k int4, w int4) WITH (autovacuum_enabled = off);
INSERT INTO hp_b SELECT g % 4000, g FROM generate_series(1, 12000) g;
ANALYZE hp_b;
-- hp_v all-visible, every page of it
CREATE TABLE hp_v (k int4, v int4) WITH (autovacuum_enabled = off);
INSERT INTO hp_v SELECT g % 3000, g FROM generate_series(1, 20000) g;
VACUUM ANALYZE hp_v;
CREATE TEMP TABLE hp_t AS SELECT * FROM hp_b;
ANALYZE hp_t;

-- the pages a side read, and those of them read in place, from EXPLAIN ANALYZE
CREATE FUNCTION pg_temp.pages(q text) RETURNS TABLE (side text, in_place text)
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	PERFORM set_config('gpujoin.explain_device', 'on', true);
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
		IF line ~ 'Pages: read=' THEN
			side := substring(line FROM '(Outer|Inner) Pages');
			in_place := CASE WHEN substring(line FROM 'in-place=(\d+)')::int = 0 THEN 'none'
				WHEN substring(line FROM 'in-place=(\d+)') = substring(line FROM 'read=(\d+)') THEN 'all'
				ELSE 'some' END;
			RETURN NEXT;
		END IF;
	END LOOP;
END $$;

-- the buffers of hp_a, hp_b and hp_v still pinned after the statements run, in
-- this function's statement: the pins of a join that forgot them would
-- stay until the statement ends
CREATE EXTENSION IF NOT EXISTS pg_buffercache;
CREATE FUNCTION pg_temp.pins_after(VARIADIC statements text[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	s text;
	n bigint;
BEGIN
	FOREACH s IN ARRAY statements LOOP
		EXECUTE s;
	END LOOP;
	-- the fewest of three looks: a pin the background writer holds for a
	-- moment is not ours
	SELECT min(c) INTO n FROM generate_series(1, 3) i, LATERAL (
		SELECT count(*) AS c, pg_sleep(0.01) FROM pg_buffercache
		WHERE relfilenode IN (pg_relation_filenode('hp_a'), pg_relation_filenode('hp_b'),
							  pg_relation_filenode('hp_v'))
		  AND reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND pinning_backends > 0) l;
	RETURN n;
END $$;
CREATE FUNCTION pg_temp.join_fails() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM sum(a.v / (b.w - 5000)) FROM hp_a a JOIN hp_b b ON a.k = b.k;
	RETURN 'no error';
EXCEPTION WHEN division_by_zero THEN
	RETURN SQLERRM;
END $$;

\set q 'SELECT a.k, a.v, a.t, b.w FROM hp_a a JOIN hp_b b ON a.k = b.k'
-- small stages: many of them, each pinned while it is used
SET gpujoin.heap_stage_pages = 8;
SELECT * FROM pg_temp.pages(:'q');
CREATE TEMP TABLE got_in_place AS :q;
SET gpujoin.heap_in_place = off;
SELECT * FROM pg_temp.pages(:'q');
CREATE TEMP TABLE got_copied AS :q;
RESET gpujoin.heap_in_place;
-- a temporary table's pages are copied
SELECT * FROM pg_temp.pages('SELECT a.k, t.w FROM hp_a a JOIN hp_t t ON a.k = t.k');
SET gpujoin.enabled = off;
RESET enable_hashjoin;
CREATE TEMP TABLE want AS :q;
SET enable_hashjoin = off;
SET gpujoin.enabled = on;
SELECT count(*) AS rows,
	(SELECT count(*) FROM (SELECT * FROM got_in_place EXCEPT ALL SELECT * FROM want) d) AS in_place_differences,
	(SELECT count(*) FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM got_in_place) d) AS in_place_missing,
	(SELECT count(*) FROM (SELECT * FROM got_copied EXCEPT ALL SELECT * FROM want) d) AS copied_differences,
	(SELECT count(*) FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM got_copied) d) AS copied_missing
FROM want;

-- pins left after joins read to the end, stopped by LIMIT, caught in an
-- error, and in a cursor closed after a few rows
SELECT pg_temp.pins_after('SELECT count(*), sum(b.w) FROM hp_a a JOIN hp_b b ON a.k = b.k') AS after_join;
SELECT pg_temp.pins_after('SELECT * FROM hp_a a JOIN hp_b b ON a.k = b.k LIMIT 5') AS after_limit;
-- the outer side read chunk by chunk and left in the middle (the page read
-- ahead of the stage, pinned, is given back too)
SET gpujoin.chunk_rows = 1000;
SELECT pg_temp.pins_after('SELECT * FROM hp_v a JOIN hp_v b ON a.k = b.k LIMIT 5') AS after_limit_in_chunks;
SELECT pg_temp.pins_after('DECLARE c3 CURSOR FOR SELECT a.k, b.v FROM hp_v a JOIN hp_v b ON a.k = b.k',
						  'FETCH 3 FROM c3', 'CLOSE c3') AS after_cursor_in_chunks;
RESET gpujoin.chunk_rows;
SELECT pg_temp.pins_after('SELECT pg_temp.join_fails()') AS after_error;
SELECT pg_temp.pins_after('DECLARE c2 CURSOR FOR SELECT a.k, b.w FROM hp_a a JOIN hp_b b ON a.k = b.k',
						  'FETCH 3 FROM c2', 'CLOSE c2') AS after_cursor;
SELECT pg_temp.pins_after('SELECT t.g, ss.* FROM generate_series(1, 3) t(g), LATERAL (SELECT count(*) FROM hp_a a JOIN hp_b b ON a.k = b.k + t.g) ss') AS after_rescans;
SELECT pg_temp.join_fails();

-- scans that end early: LIMIT, and a cursor closed after a few rows
SELECT count(*) FROM (SELECT a.k, b.w FROM hp_a a JOIN hp_b b ON a.k = b.k LIMIT 5) l;
BEGIN;
DECLARE c CURSOR FOR SELECT a.k, b.w FROM hp_a a JOIN hp_b b ON a.k = b.k;
MOVE 3 IN c;
CLOSE c;
COMMIT;
BEGIN;
DECLARE c CURSOR FOR SELECT a.k, b.w FROM hp_a a JOIN hp_b b ON a.k = b.k;
MOVE 100 IN c;
COMMIT;

-- an error in the middle of the join, at the top level and caught in a
-- subtransaction; the next join reads the same pages
SELECT sum(a.v / (b.w - 5000)) FROM hp_a a JOIN hp_b b ON a.k = b.k;
DO $$
BEGIN
	PERFORM sum(a.v / (b.w - 5000)) FROM hp_a a JOIN hp_b b ON a.k = b.k;
EXCEPTION WHEN division_by_zero THEN
	RAISE NOTICE 'caught: %', SQLERRM;
END $$;
SELECT count(*), sum(a.v::int8 * b.w) FROM hp_a a JOIN hp_b b ON a.k = b.k;

-- rescans: a lateral join reads its sides again for each value
SET enable_memoize = off;
SELECT t.g, ss.* FROM (VALUES (1), (2), (3)) t(g),
	LATERAL (SELECT count(*), sum(b.w) FROM hp_a a JOIN hp_b b ON a.k = b.k + t.g) ss
ORDER BY t.g;
RESET enable_memoize;

-- stages of the default size (1024 pages, or 1/128 of shared_buffers when
-- that is fewer): all rows PostgreSQL's
RESET gpujoin.heap_stage_pages;
SELECT * FROM pg_temp.pages(:'q');
SELECT count(*) AS differences FROM (
	(SELECT a.k, a.v, a.t, b.w FROM hp_a a JOIN hp_b b ON a.k = b.k EXCEPT ALL SELECT * FROM want)
	UNION ALL
	(SELECT * FROM want EXCEPT ALL SELECT a.k, a.v, a.t, b.w FROM hp_a a JOIN hp_b b ON a.k = b.k)) d;

DROP TABLE hp_a, hp_b, hp_v;
