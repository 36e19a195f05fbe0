-- test/036_page_cache.sql
--
-- Heap pages kept between joins (gpujoin.page_cache) through whichever
-- process runs the deform: this backend in the pgTAP stage, the gpujoin
-- service in the service stage.  A scan asks which of its next blocks are
-- kept and leaves those unread (gpujoin.page_cache_unread); through the
-- service the question about the next stage goes with the deform of the
-- current one and is answered while the device works
-- (GpuJoinServiceAskAhead), so a small gpujoin.heap_stage_pages makes
-- dozens of stages, each asked ahead (a stage reads at most that many
-- pages and holds four times as many kept ones left unread: after the
-- changes below, stages of both).  Differential: inner, left and
-- filtered joins and a parallel one return PostgreSQL's rows, and the
-- second run of a join reads every page of its outer side from the kept
-- copies, none on the host; pages changed in the transaction (their
-- all-visible bits cleared) are read on the host, the others still kept.
-- The pages are made all-visible by COPY FREEZE into a table created in
-- this transaction (VACUUM cannot run in one).  (sql/page_cache.sql tests
-- the cache itself: LSNs, vacuum, truncation, more pages than it holds.)
BEGIN;
SELECT plan(14);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SET LOCAL client_min_messages = warning;
SET LOCAL max_parallel_workers_per_gather = 0;
SET LOCAL gpujoin.cost_as_gpu = on;
SET LOCAL gpujoin.page_cache = '16MB';
SET LOCAL gpujoin.page_cache_unread = on;
SET LOCAL gpujoin.heap_stage_pages = 2;

-- pco: 60000 rows over about 330 pages (about 40 stages of 8 kept ones),
-- keys with duplicates, NULLs and no partner; pci: the inner side
CREATE TABLE pco (id int4, k int4, v int8);
CREATE TABLE pci (k int4, w int8);
INSERT INTO pci SELECT g, g * 10 FROM generate_series(1, 600) g;
-- fill tbl, created in this transaction, with q's rows by COPY FREEZE
-- (through a file in the data directory)
CREATE FUNCTION pg_temp.copy_frozen(tbl text, q text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	f text := current_setting('data_directory') || '/gpujoin_036_' || tbl || '.copy';
BEGIN
	EXECUTE format('COPY (%s) TO %L', q, f);
	EXECUTE format('COPY %I FROM %L WITH (FREEZE)', tbl, f);
END $$;
SELECT pg_temp.copy_frozen('pco', 'SELECT g, CASE WHEN g % 53 = 0 THEN NULL ELSE g % 700 END, g * 3
	FROM generate_series(1, 60000) g');

-- the outer side's pages: read, all-visible, kept copies read, left unread
CREATE FUNCTION pg_temp.outer_pages(q text) RETURNS int8[]
LANGUAGE sql AS $$
	SELECT ARRAY[substring(l FROM 'read=(\d+)')::int8, substring(l FROM 'all-visible=(\d+)')::int8,
				 coalesce(substring(l FROM 'kept=(\d+)')::int8, 0),
				 coalesce(substring(l FROM 'unread=(\d+)')::int8, 0)]
	FROM substring(pg_temp.plan_analyze(q) FROM 'Outer Pages: [^\n]*') AS l
$$;
CREATE FUNCTION pg_temp.same(q text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	gpu text;
	pg text;
BEGIN
	PERFORM pg_temp.use_gpu(true);
	gpu := pg_temp.rows_digest(q);
	PERFORM pg_temp.use_gpu(false);
	pg := pg_temp.rows_digest(q);
	PERFORM pg_temp.use_gpu(true);
	RETURN gpu = pg;
END $$;
SELECT pg_temp.use_gpu(true);

\set qin 'SELECT o.k, count(*), sum(o.v), sum(i.w) FROM pco o JOIN pci i ON o.k = i.k GROUP BY o.k'
\set qleft 'SELECT o.id, o.v, i.w FROM pco o LEFT JOIN pci i ON o.k = i.k WHERE o.v % 7 <> 0'
\set qfilt 'SELECT o.id, i.w FROM pco o JOIN pci i ON o.k = i.k WHERE o.v > 90000 AND o.id % 5 = 1'

SELECT ok(pg_temp.plan(:'qin') ~ 'Outer Relation: pco o \(heap pages\)',
	'the outer side is read as heap pages');
CREATE TEMP TABLE first_run AS SELECT pg_temp.outer_pages(:'qin') AS p;
-- (PostgreSQL 15 sets every page's bit, 18 leaves some of a COPY's pages
-- without it: those are read on the host, and never kept)
SELECT ok((SELECT p[2] > 300 AND p[2] >= p[1] * 0.9 FROM first_run),
	'nearly every page COPY FREEZE wrote is all-visible');
SELECT is(pg_temp.outer_pages(:'qin'), (SELECT ARRAY[p[1], p[2], p[2], p[2]] FROM first_run),
	'the second run reads every all-visible outer page from its kept copy, none on the host');
SELECT ok(pg_temp.same(:'qin'), 'inner join over kept pages: PostgreSQL''s rows');
SELECT is((pg_temp.outer_pages(:'qleft'))[4], (SELECT p[2] FROM first_run),
	'a left join with a device filter leaves every kept page unread');
SELECT ok(pg_temp.same(:'qleft'), 'left join with a device filter over kept pages: PostgreSQL''s rows');
SELECT ok(pg_temp.same(:'qfilt'), 'a filter that keeps few rows: PostgreSQL''s rows');

-- rows the device's filter leaves undecided (a guarded division), one of
-- them on the first page: the host reads the tuples of the stage it meets
-- them in, and every page after that (none left unread from then on).
-- With one page in 8 kept (the first tuple of each other page updated), a
-- stage reads 2 of the 8 pages it asked about and leaves the rest for the
-- next, which is staged while the first is deformed: the pages neither
-- took must still be read once the host reads them all.  (They were not,
-- once: 3 of the table's 109 pages lost, on the CPU twin.)
CREATE TABLE pcu (id int4, k int4);
SELECT pg_temp.copy_frozen('pcu', 'SELECT g, g % 700 FROM generate_series(1, 20000) g');
\set qund 'SELECT u.id, i.w FROM pcu u JOIN pci i ON u.k = i.k WHERE u.k <> 5 AND u.id / (u.k - 5) > 2'
SELECT ok(pg_temp.same(:'qund'), 'rows left undecided, nothing kept yet: PostgreSQL''s rows');
SELECT ok(pg_temp.same(:'qund'), 'rows left undecided, every page kept: PostgreSQL''s rows');
UPDATE pcu SET k = k
	WHERE (ctid::text::point)[0]::int % 8 <> 0 AND (ctid::text::point)[1] = 1;
SELECT ok(pg_temp.same(:'qund'),
	'rows left undecided, one page in 8 kept: PostgreSQL''s rows');

-- rows changed in this transaction: their pages are no longer all-visible
-- and are read on the host (this transaction's rows); the others stay kept
-- on PostgreSQL 15, while on 18 none is found kept after these changes
-- and every page is read again (2026-12-02, the CPU twin: on 18 one UPDATE
-- made the next scan find none of the table's 324 all-visible pages kept,
-- the scan after it 323; 15, with data checksums or without, kept the 323
-- unchanged ones throughout: 18 writes the map page into the WAL records
-- of changes that clear its bits, which moves its LSN, the pages' key)
UPDATE pco SET v = v + 1 WHERE id % 4000 = 0;
DELETE FROM pco WHERE id % 9000 = 1;
INSERT INTO pco SELECT g, g % 700, g FROM generate_series(70001, 70100) g;
CREATE TEMP TABLE changed AS SELECT pg_temp.outer_pages(:'qin') AS p;
SELECT ok((SELECT c.p[4] < f.p[2] AND c.p[3] = c.p[4] FROM changed c, first_run f),
	'after changes, the changed pages are read on the host, none of them left unread');
SELECT ok(pg_temp.same(:'qin'), 'inner join over changed and kept pages: PostgreSQL''s rows');
SELECT ok(pg_temp.same(:'qleft'), 'left join over changed and kept pages: PostgreSQL''s rows');

-- in parallel: each process asks about its own blocks (kept by the service
-- for all of them; a backend's own cache is empty in a new worker)
SET LOCAL max_parallel_workers_per_gather = 2;
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SELECT ok(pg_temp.same(:'qin'), 'parallel inner join over kept pages: PostgreSQL''s rows');

SELECT * FROM finish();
ROLLBACK;
