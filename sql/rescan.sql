-- GpuHashJoin under rescans and cursors
LOAD 'gpujoin';
SET gpujoin.explain_device = off;
-- plans priced as the GPU prices them, so that the CPU twin (CI) shows the
-- plan a GPU host does
SET gpujoin.cost_as_gpu = on;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;

-- group sizes and key spreads differ, so each parameter value has its own answer
CREATE TABLE a AS SELECT g AS id, g % 10 AS grp, g % 37 AS k FROM generate_series(1, 500) g;
CREATE TABLE b AS SELECT g AS id, floor(sqrt(g))::int % 12 AS grp, g % 43 AS k FROM generate_series(1, 300) g;
CREATE TABLE q AS SELECT g AS grp FROM generate_series(0, 11) g;
ANALYZE a, b, q;

-- correlated subqueries: the GPU join is rescanned with a changed parameter,
-- on one side (the other side's table may be kept) or on both
EXPLAIN (COSTS OFF)
SELECT q.grp, (SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE a.grp = q.grp) FROM q;
CREATE TEMP TABLE got AS
SELECT q.grp,
	   (SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE a.grp = q.grp) AS outer_param,
	   (SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE b.grp = q.grp) AS inner_param,
	   (SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE a.grp = q.grp AND b.grp = q.grp) AS both_params
FROM q;
SET gpujoin.enabled = off;
RESET enable_hashjoin;
RESET enable_nestloop;
CREATE TEMP TABLE want AS
SELECT q.grp,
	   (SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE a.grp = q.grp) AS outer_param,
	   (SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE b.grp = q.grp) AS inner_param,
	   (SELECT count(*) FROM a JOIN b ON a.k = b.k WHERE a.grp = q.grp AND b.grp = q.grp) AS both_params
FROM q;
SELECT * FROM want ORDER BY grp;
SELECT count(*) AS differences FROM (SELECT * FROM got EXCEPT SELECT * FROM want) d;
SET gpujoin.enabled = on;
SET enable_hashjoin = off;
SET enable_nestloop = off;

-- an uncorrelated subplan without a Material node is rescanned with no
-- parameter change, often after reading only part of its rows: the table
-- is kept and the outer side starts over
SET enable_material = off;
EXPLAIN (COSTS OFF)
SELECT q.grp FROM q WHERE q.grp > ALL (SELECT a.grp FROM a JOIN b ON a.k = b.k WHERE b.id < 30);
SELECT q.grp FROM q WHERE q.grp > ALL (SELECT a.grp FROM a JOIN b ON a.k = b.k WHERE b.id < 30) ORDER BY 1;
SELECT q.grp FROM q WHERE q.grp + 5 > ALL (SELECT a.grp FROM a JOIN b ON a.k = b.k WHERE b.id < 30) ORDER BY 1;
RESET enable_material;

-- cursors: partial reads, then the rest; rewinding a scroll cursor.  take()
-- reads n rows and returns how many it got and a checksum of them; the
-- checksums of the parts must add up to that of the whole join.
CREATE FUNCTION take(c refcursor, n int, OUT nrows bigint, OUT total bigint)
LANGUAGE plpgsql AS $$
DECLARE
	aid int;
	bid int;
BEGIN
	nrows := 0;
	total := 0;
	FOR i IN 1..n LOOP
		FETCH c INTO aid, bid;
		EXIT WHEN NOT FOUND;
		nrows := nrows + 1;
		total := total + aid * 1000 + bid;
	END LOOP;
END
$$;
SELECT count(*), sum(a.id * 1000 + b.id) FROM a JOIN b ON a.k = b.k;
BEGIN;
DECLARE c CURSOR FOR SELECT a.id, b.id FROM a JOIN b ON a.k = b.k;
CREATE TEMP TABLE parts AS SELECT 1 AS part, * FROM take('c', 7);
INSERT INTO parts SELECT 2, * FROM take('c', 100);
INSERT INTO parts SELECT 3, * FROM take('c', 1000000);
INSERT INTO parts SELECT 4, * FROM take('c', 10);
CLOSE c;
SELECT part, nrows FROM parts ORDER BY part;
SELECT sum(nrows), sum(total) FROM parts;
DROP TABLE parts;
DECLARE s SCROLL CURSOR FOR SELECT a.id, b.id FROM a JOIN b ON a.k = b.k;
SELECT nrows FROM take('s', 1000);
MOVE BACKWARD 400 IN s;
SELECT nrows FROM take('s', 400);
MOVE ABSOLUTE 0 IN s;
SELECT * FROM take('s', 1000000);
COMMIT;
-- chunks of 1 and 7 outer rows, and rounds of matches, under a cursor
SET gpujoin.chunk_rows = 7;
BEGIN;
DECLARE c CURSOR FOR SELECT a.id, b.id FROM a JOIN b ON a.k = b.k;
CREATE TEMP TABLE parts AS SELECT 1 AS part, * FROM take('c', 3);
INSERT INTO parts SELECT 2, * FROM take('c', 1000000);
SELECT part, nrows FROM parts ORDER BY part;
SELECT sum(nrows), sum(total) FROM parts;
COMMIT;
SET gpujoin.chunk_rows = 1;
SELECT count(*), sum(a.id * 1000 + b.id) FROM a JOIN b ON a.k = b.k;
RESET gpujoin.chunk_rows;
SET gpujoin.enabled = off;
SELECT count(*), sum(a.id * 1000 + b.id) FROM a JOIN b ON a.k = b.k;

DROP FUNCTION take;
DROP TABLE a, b, q;
