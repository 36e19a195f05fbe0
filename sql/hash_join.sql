-- GpuHashJoin: inner equi-joins, against PostgreSQL's own join on the same data
LOAD 'gpujoin';
SET gpujoin.explain_device = off;		-- same output with or without a GPU
-- leave the GPU path as the only cheap one, as pgvector does with enable_seqscan
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;

-- duplicates on both sides and NULL keys

CREATE TABLE o (k int4, v text);
CREATE TABLE i (k int4, w text);
INSERT INTO o VALUES (1, 'a'), (2, 'b'), (2, 'c'), (NULL, 'd'), (5, 'e');
INSERT INTO i VALUES (2, 'x'), (2, 'y'), (3, 'z'), (NULL, 'n'), (5, 'q');
ANALYZE o, i;

EXPLAIN (COSTS OFF) SELECT * FROM o JOIN i USING (k);
SELECT * FROM o JOIN i USING (k) ORDER BY v, w;
-- NULL = NULL is not a match
SELECT count(*) FROM o JOIN i ON o.k = i.k WHERE o.k IS NULL;

-- an extra join clause is rechecked on the CPU
EXPLAIN (COSTS OFF) SELECT * FROM o JOIN i ON o.k = i.k AND o.v < i.w;
SELECT * FROM o JOIN i ON o.k = i.k AND o.v < i.w ORDER BY v, w;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT * FROM o JOIN i ON o.k = i.k AND i.w ~ '^[y-z]';

-- empty inner, empty outer, no matches
CREATE TABLE e (k int4, z text);
SELECT * FROM o JOIN e USING (k);
SELECT * FROM e JOIN i USING (k);
SELECT * FROM o JOIN i ON o.k = i.k + 100;

DROP TABLE o, i, e;

-- key types: int2, int4, int8, date, and integer cross-type equality

CREATE TABLE kt (id int, a int2, b int4, c int8, d date, e int8);
INSERT INTO kt
SELECT g, (g % 7)::int2, g % 11, (g % 13)::int8 * 1000000000000, date '2024-01-01' + g % 17, g % 5
FROM generate_series(1, 200) g;
INSERT INTO kt VALUES (201, NULL, NULL, NULL, NULL, NULL);
INSERT INTO kt VALUES (202, -32768, -2147483648, -9223372036854775808, '4713-01-01 BC', 0);
INSERT INTO kt VALUES (203, 32767, 2147483647, 9223372036854775807, '5874897-12-31', 4);
CREATE TABLE kt2 AS SELECT * FROM kt;
-- rows with NULL keys only (they join nothing) make kt2 the larger table, so
-- the planner never faces a tie between the two sides
INSERT INTO kt2 SELECT 300 + g, NULL, NULL, NULL, NULL, NULL FROM generate_series(1, 20) g;
ANALYZE kt, kt2;

-- one view, planned anew by each query: first with PostgreSQL's own joins
-- (the reference), then with gpujoin
CREATE TEMP VIEW joins AS
SELECT 'int2' AS t, count(*) AS n, sum(x.id * 1000 + y.id) AS s FROM kt x JOIN kt2 y ON x.a = y.a
UNION ALL SELECT 'int4', count(*), sum(x.id * 1000 + y.id) FROM kt x JOIN kt2 y ON x.b = y.b
UNION ALL SELECT 'int8', count(*), sum(x.id * 1000 + y.id) FROM kt x JOIN kt2 y ON x.c = y.c
UNION ALL SELECT 'date', count(*), sum(x.id * 1000 + y.id) FROM kt x JOIN kt2 y ON x.d = y.d
UNION ALL SELECT 'int2=int4', count(*), sum(x.id * 1000 + y.id) FROM kt x JOIN kt2 y ON x.a = y.b
UNION ALL SELECT 'int4=int8', count(*), sum(x.id * 1000 + y.id) FROM kt x JOIN kt2 y ON x.b = y.c
UNION ALL SELECT 'int2,int4', count(*), sum(x.id * 1000 + y.id) FROM kt x JOIN kt2 y ON x.a = y.a AND x.b = y.b
UNION ALL SELECT 'int8,int8', count(*), sum(x.id * 1000 + y.id) FROM kt x JOIN kt2 y ON x.c = y.c AND x.e = y.e
UNION ALL SELECT 'expr', count(*), sum(x.id * 1000 + y.id) FROM kt x JOIN kt2 y ON x.b % 1000 + 1 = y.b;
SET gpujoin.enabled = off;
CREATE TEMP TABLE expected AS SELECT * FROM joins;
SELECT t, n, s FROM expected ORDER BY t;
SET gpujoin.enabled = on;
CREATE TEMP TABLE got AS SELECT * FROM joins;
SELECT e.t, e.n = g.n AND e.s = g.s AS same FROM expected e JOIN got g USING (t) ORDER BY t;
-- every one of those joins ran on the GPU path: as a GpuPreAgg where the
-- device also aggregates, as a GpuHashJoin where the keys are rechecked
SELECT count(*) AS gpu_joins
FROM gpujoin_explain('SELECT * FROM joins') AS line
WHERE line LIKE '%Custom Scan (GpuHashJoin)%' OR line LIKE '%Custom Scan (GpuPreAgg)%';

-- packed keys (int2 + int4) need no recheck; two int8 keys are hashed and rechecked
EXPLAIN (COSTS OFF) SELECT x.id, y.id FROM kt x JOIN kt2 y ON x.a = y.a AND x.b = y.b;
EXPLAIN (COSTS OFF) SELECT x.id, y.id FROM kt x JOIN kt2 y ON x.c = y.c AND x.e = y.e;
-- an expression key; a text key is hashed on the device, and then every key
-- clause is rechecked on the CPU
EXPLAIN (COSTS OFF) SELECT x.id, y.id FROM kt x JOIN kt2 y ON x.b % 1000 + 1 = y.b;
EXPLAIN (COSTS OFF) SELECT x.id, y.id FROM kt x JOIN kt2 y ON x.b = y.b AND x.id::text = y.id::text;
EXPLAIN (COSTS OFF) SELECT x.id, y.id FROM kt x JOIN kt2 y ON x.id::text = y.id::text;
-- no equality clause the device can evaluate (an OR): no GPU join
EXPLAIN (COSTS OFF) SELECT x.id, y.id FROM kt x JOIN kt2 y ON x.id = y.id OR x.b = y.b;

-- three-way join: a GPU join over a GPU join (the joins alone: aggregated
-- on the device, which side of the upper join is outer depends on the
-- device's costs)
SET gpujoin.enable_preagg = off;
EXPLAIN (COSTS OFF)
SELECT count(*) FROM kt x JOIN kt2 y ON x.b = y.b JOIN kt z ON y.a = z.a;
RESET gpujoin.enable_preagg;
SELECT count(*), sum(x.id + y.id + z.id) FROM kt x JOIN kt2 y ON x.b = y.b JOIN kt z ON y.a = z.a;
SET gpujoin.enabled = off;
RESET enable_hashjoin;
SELECT count(*), sum(x.id + y.id + z.id) FROM kt x JOIN kt2 y ON x.b = y.b JOIN kt z ON y.a = z.a;

DROP VIEW joins;
DROP TABLE kt, kt2;
