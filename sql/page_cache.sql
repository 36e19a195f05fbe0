-- Heap pages kept between joins (gpujoin.page_cache, cuda/scan/page_cache.h):
-- an all-visible page read in place is kept, under the LSN it had when its
-- items were listed, by the process that runs the deform (the device, or
-- the CPU twin), and a later join whose page has the same LSN reads the
-- kept copy.  The rows must be PostgreSQL's whatever happened to the
-- tables in between: rows updated, deleted and inserted into freed space
-- (then vacuumed: all-visible again, under new LSNs), pages changed and not
-- vacuumed, a table truncated and filled again (a new file), two tables of
-- the same shape and different rows kept at once, more pages than the
-- cache holds; an unlogged table's pages, whose changes move no LSN, are
-- never kept.  Each join runs twice in a row: the second reads every page
-- it read in place from the kept copies ("all").  (Outside a transaction:
-- VACUUM makes the pages all-visible.  Expects shared_buffers of 64MB or
-- more, as heap_in_place does, and gpujoin not preloaded, as test/run's
-- regress stage has it: the pages are then kept by this backend alone, and
-- which of them a join finds kept does not depend on what the gpujoin
-- service kept for earlier sessions.)
LOAD 'gpujoin';
SET gpujoin.explain_device = off;
SET gpujoin.cost_as_gpu = on;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SET max_parallel_workers_per_gather = 0;
-- 16 MB: 2048 pages, more than pc_a, pc_b and pc_c together, fewer than pc_big
SET gpujoin.page_cache = '16MB';

CREATE TABLE pc_a (k int4, v int8, pad text) WITH (autovacuum_enabled = off);
INSERT INTO pc_a SELECT g % 5000, g, repeat('a', g % 30) FROM generate_series(1, 30000) g;
CREATE TABLE pc_b (k int4, w int8, pad text) WITH (autovacuum_enabled = off);
INSERT INTO pc_b SELECT g % 6000, g * 3, repeat('b', g % 30) FROM generate_series(1, 30000) g;
-- pc_c: pc_b's shape and size, other rows: the same blocks of another file
CREATE TABLE pc_c (k int4, w int8, pad text) WITH (autovacuum_enabled = off);
INSERT INTO pc_c SELECT g % 6000, g * 7 + 1, repeat('b', g % 30) FROM generate_series(1, 30000) g;
CREATE TABLE pc_big (k int4, w int8, pad text) WITH (autovacuum_enabled = off);
INSERT INTO pc_big SELECT g % 6000, g, repeat('c', 60) FROM generate_series(1, 200000) g;
CREATE UNLOGGED TABLE pc_u (k int4, w int8) WITH (autovacuum_enabled = off);
INSERT INTO pc_u SELECT g % 6000, g FROM generate_series(1, 30000) g;
-- VACUUM makes a page all-visible only when no other session's snapshot
-- may still miss its rows (an autovacuum worker's, say): wait for none;
-- and only when its rows' commits are known (hint bits), which under
-- asynchronous commit the first VACUUM may not see: each VACUUM twice
CREATE FUNCTION pg_temp.quiet() RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. 600 LOOP
		PERFORM pg_stat_clear_snapshot();
		IF NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid <> pg_backend_pid()
					   AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)) THEN
			RETURN true;
		END IF;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RETURN false;
END $$;
CHECKPOINT;
SELECT pg_temp.quiet();
VACUUM (FREEZE, ANALYZE) pc_a, pc_b, pc_c, pc_big, pc_u;
VACUUM pc_a, pc_b, pc_c, pc_big, pc_u;
SELECT (pg_relation_size('pc_a') + pg_relation_size('pc_b') + pg_relation_size('pc_c')) / 8192 < 2048
		AS a_b_c_fit,
	pg_relation_size('pc_big') / 8192 > 2048 AS big_does_not;

-- per side: how many of the pages q's EXPLAIN ANALYZE counts as whole
-- (read=, all-visible=) it counts as part of them (kept=: kept copies,
-- unread=: left unread): none, some, all; which pages VACUUM leaves
-- all-visible depends on the pins others hold on them then (the
-- checkpointer's, writing), so the counts are not shown
CREATE FUNCTION pg_temp.pages(q text, part text, whole text)
RETURNS TABLE (side text, pages text)
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	n bigint;
BEGIN
	PERFORM set_config('gpujoin.explain_device', 'on', true);
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) ' || q LOOP
		IF line ~ 'Pages: read=' THEN
			side := substring(line FROM '(Outer|Inner) Pages');
			n := coalesce(substring(line FROM ' ' || part || '=(\d+)')::bigint, 0);
			pages := CASE WHEN n = 0 THEN 'none'
				WHEN n = substring(line FROM ' ' || whole || '=(\d+)')::bigint THEN 'all'
				ELSE 'some' END;
			RETURN NEXT;
		END IF;
	END LOOP;
END $$;
CREATE FUNCTION pg_temp.kept(q text) RETURNS TABLE (side text, kept text)
LANGUAGE sql AS $$ SELECT * FROM pg_temp.pages(q, 'kept', 'all-visible') $$;
-- q's rows through the GPU join and through PostgreSQL's: equal or not
CREATE FUNCTION pg_temp.same(q text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	gpu text;
	pg text;
BEGIN
	EXECUTE 'SELECT string_agg(r::text, '','' ORDER BY r::text) FROM (' || q || ') r' INTO gpu;
	PERFORM set_config('gpujoin.enabled', 'off', true);
	PERFORM set_config('enable_hashjoin', 'on', true);
	EXECUTE 'SELECT string_agg(r::text, '','' ORDER BY r::text) FROM (' || q || ') r' INTO pg;
	PERFORM set_config('gpujoin.enabled', 'on', true);
	PERFORM set_config('enable_hashjoin', 'off', true);
	RETURN gpu IS NOT DISTINCT FROM pg AND gpu IS NOT NULL;
END $$;

\set qab 'SELECT a.k, count(*), sum(a.v), sum(b.w) FROM pc_a a JOIN pc_b b ON a.k = b.k GROUP BY a.k'
\set qac 'SELECT a.k, count(*), sum(a.v), sum(c.w) FROM pc_a a JOIN pc_c c ON a.k = c.k GROUP BY a.k'
-- the first time nothing is kept; the second time every page is
SELECT * FROM pg_temp.kept(:'qab');
SELECT * FROM pg_temp.kept(:'qab');
SELECT pg_temp.same(:'qab') AS same_rows;
-- pc_c's blocks are pc_b's numbers in another file: kept apart
SELECT * FROM pg_temp.kept(:'qac');
SELECT pg_temp.same(:'qac') AS same_rows;
SELECT * FROM pg_temp.kept(:'qac');
SELECT pg_temp.same(:'qac') AS same_rows;

-- rows updated, then vacuumed: those pages all-visible again under new
-- LSNs, kept again from their new state
UPDATE pc_a SET v = v + 1000000 WHERE k % 7 = 0;
CHECKPOINT;
SELECT pg_temp.quiet();
VACUUM pc_a;
VACUUM pc_a;
SELECT * FROM pg_temp.kept(:'qab');
SELECT pg_temp.same(:'qab') AS same_rows;
SELECT * FROM pg_temp.kept(:'qab');
SELECT pg_temp.same(:'qab') AS same_rows;

-- rows deleted and others inserted into the space they freed, vacuumed
DELETE FROM pc_b WHERE w % 9 = 0;
VACUUM pc_b;
INSERT INTO pc_b SELECT g % 6000, -g, 'new' FROM generate_series(1, 2000) g;
CHECKPOINT;
SELECT pg_temp.quiet();
VACUUM pc_b;
VACUUM pc_b;
SELECT pg_temp.same(:'qab') AS same_rows;
SELECT * FROM pg_temp.kept(:'qab');
SELECT pg_temp.same(:'qab') AS same_rows;

-- pages changed and not vacuumed: read tuple by tuple, never from a copy
UPDATE pc_a SET v = -v WHERE k % 11 = 0;
SELECT pg_temp.same(:'qab') AS same_rows;
SELECT * FROM pg_temp.kept(:'qab');

-- truncated and filled again: a new file, nothing of the old kept
TRUNCATE pc_c;
INSERT INTO pc_c SELECT g % 6000, g * 5, repeat('b', g % 30) FROM generate_series(1, 30000) g;
CHECKPOINT;
SELECT pg_temp.quiet();
VACUUM (FREEZE, ANALYZE) pc_c;
VACUUM pc_c;
SELECT * FROM pg_temp.kept(:'qac');
SELECT pg_temp.same(:'qac') AS same_rows;

-- pages left unread (gpujoin.page_cache_unread, here before the cache is
-- full, so that every page is kept): a page the visibility
-- map vouches for, under the LSN its map page had when the copy was made,
-- is not read at all; every other page is.  Kept and unread once more after
-- a vacuum that sets no bit; after changes, their pages are read (their
-- bits cleared), the others left unread; after the vacuum that sets their
-- bits again, the map page's new LSN has every page of it read and kept
-- again, then unread.  The host reads the unread pages after all where it
-- reads tuples itself: a column of the table taken through the join
-- (pad), numerics the deform leaves to the host (more than 18 digits).
CREATE FUNCTION pg_temp.unread(q text) RETURNS TABLE (side text, unread text)
LANGUAGE sql AS $$ SELECT * FROM pg_temp.pages(q, 'unread', 'read') $$;
CREATE TABLE pc_n (k int4, n numeric(30, 2), pad text) WITH (autovacuum_enabled = off);
INSERT INTO pc_n SELECT g % 5000, CASE WHEN g % 97 = 0 THEN 1e25 + g ELSE g / 4.0 END,
	'n' || g FROM generate_series(1, 30000) g;
CHECKPOINT;
SELECT pg_temp.quiet();
VACUUM (FREEZE, ANALYZE) pc_a, pc_n;
VACUUM pc_a, pc_n;
\set qan 'SELECT a.k, count(*), sum(a.v), sum(n.n) FROM pc_a a JOIN pc_n n ON a.k = n.k GROUP BY a.k'
\set qpad 'SELECT a.k, a.v, n.pad FROM pc_a a JOIN pc_n n ON a.k = n.k WHERE a.v % 13 = 0'
SET gpujoin.page_cache_unread = on;
SELECT * FROM pg_temp.kept(:'qab');
SELECT * FROM pg_temp.unread(:'qab');
SELECT pg_temp.same(:'qab') AS same_rows;
SET gpujoin.page_cache_unread = off;
SELECT * FROM pg_temp.unread(:'qab');
SELECT * FROM pg_temp.kept(:'qab');
SELECT pg_temp.same(:'qab') AS same_rows;
SET gpujoin.page_cache_unread = on;
SELECT pg_temp.same(:'qan') AS same_rows;
SELECT * FROM pg_temp.unread(:'qan');
SELECT pg_temp.same(:'qan') AS same_rows;
SELECT pg_temp.same(:'qpad') AS same_rows;
SELECT pg_temp.same(:'qpad') AS same_rows;
UPDATE pc_a SET v = v + 7 WHERE k % 500 = 3;
SELECT pg_temp.same(:'qab') AS same_rows;
SELECT pg_temp.same(:'qan') AS same_rows;
SELECT * FROM pg_temp.unread(:'qab');
CHECKPOINT;
SELECT pg_temp.quiet();
VACUUM pc_a;
VACUUM pc_a;
SELECT pg_temp.same(:'qab') AS same_rows;
SELECT * FROM pg_temp.unread(:'qab');
SELECT pg_temp.same(:'qab') AS same_rows;
-- a numeric column ALTER TABLE ... ADD COLUMN gave: the deform leaves the
-- older rows' values to the host, which then reads their pages after all
-- (the GpuPreAgg made cheap, so that it is chosen): none of the outer
-- side's kept pages is left unread, the inner side's all are
CREATE TABLE pc_m (k int4, pad text) WITH (autovacuum_enabled = off);
INSERT INTO pc_m SELECT g % 5000, 'm' || g FROM generate_series(1, 30000) g;
ALTER TABLE pc_m ADD COLUMN m numeric(12, 2) DEFAULT 2.25;
INSERT INTO pc_m SELECT g % 5000, 'x', g / 8.0 FROM generate_series(1, 3000) g;
CHECKPOINT;
SELECT pg_temp.quiet();
VACUUM (FREEZE, ANALYZE) pc_m;
VACUUM pc_m;
SET gpujoin.setup_cost = 0;
SET gpujoin.cost_per_ms = 0;
SET gpujoin.emit_cost = 0;
SET gpujoin.extract_cost = 0;
SET gpujoin.heap_page_cost = 0;
SET gpujoin.heap_tuple_cost = 0;
\set qm 'SELECT m.k % 10 AS d, count(*), sum(m.m) FROM pc_m m JOIN pc_a a ON a.k = m.k GROUP BY 1'
SELECT pg_temp.same(:'qm') AS same_rows;
SELECT pg_temp.same(:'qm') AS same_rows;
SELECT * FROM pg_temp.unread(:'qm');
RESET gpujoin.setup_cost;
RESET gpujoin.cost_per_ms;
RESET gpujoin.emit_cost;
RESET gpujoin.extract_cost;
RESET gpujoin.heap_page_cost;
RESET gpujoin.heap_tuple_cost;
RESET gpujoin.page_cache_unread;
DROP TABLE pc_n, pc_m;

-- more pages than the cache holds: some kept, the rest read in place
\set qbig 'SELECT b.k, count(*), sum(b.w), sum(c.w) FROM pc_big b JOIN pc_c c ON b.k = c.k GROUP BY b.k'
SELECT pg_temp.same(:'qbig') AS same_rows;
SELECT pg_temp.same(:'qbig') AS same_rows;
SELECT pg_temp.same(:'qab') AS same_rows;

-- an unlogged table: its pages never kept
\set qu 'SELECT u.k, count(*), sum(u.w), sum(a.v) FROM pc_u u JOIN pc_a a ON u.k = a.k GROUP BY u.k'
SELECT pg_temp.same(:'qu') AS same_rows;
SELECT * FROM pg_temp.kept(:'qu');

-- gpujoin.page_cache = 0: nothing read from the copies
SET gpujoin.page_cache = 0;
CHECKPOINT;
SELECT pg_temp.quiet();
VACUUM pc_a;
VACUUM pc_a;
SELECT * FROM pg_temp.kept(:'qab');
SELECT pg_temp.same(:'qab') AS same_rows;

DROP TABLE pc_a, pc_b, pc_c, pc_big, pc_u;
