-- gpujoin.* settings and functions
LOAD 'gpujoin';
SET gpujoin.explain_device = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;

CREATE TABLE s1 AS SELECT g AS k, g AS v FROM generate_series(1, 1000) g;
CREATE TABLE s2 AS SELECT g % 500 AS k, g AS w FROM generate_series(1, 2000) g;
ANALYZE s1, s2;

-- gpujoin.enabled and gpujoin.enable_hashjoin take the GPU path away
EXPLAIN (COSTS OFF) SELECT * FROM s1 JOIN s2 USING (k);
SET gpujoin.enabled = off;
EXPLAIN (COSTS OFF) SELECT * FROM s1 JOIN s2 USING (k);
RESET gpujoin.enabled;
SET gpujoin.enable_hashjoin = off;
EXPLAIN (COSTS OFF) SELECT * FROM s1 JOIN s2 USING (k);
RESET gpujoin.enable_hashjoin;

-- gpujoin.chunk_rows: chunks and matches as EXPLAIN ANALYZE reports them
SET gpujoin.chunk_rows = 300;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)
SELECT * FROM s2 JOIN s1 USING (k);
SET gpujoin.chunk_rows = 0;
SET gpujoin.chunk_rows = 2147483648;
RESET gpujoin.chunk_rows;

-- gpujoin.device: the CPU twin answers every setting's question the same way
SET gpujoin.device = 'cpu';
SELECT count(*), sum(v + w) FROM s1 JOIN s2 USING (k);
SELECT device, name, kernels FROM gpujoin_device_info();
SET gpujoin.device = 'tpu';
RESET gpujoin.device;

-- gpujoin.device_memory_limit is for superusers
CREATE ROLE gpujoin_regress_user;
SET ROLE gpujoin_regress_user;
SET gpujoin.device_memory_limit = '1GB';
RESET ROLE;
SET gpujoin.device_memory_limit = '1GB';
SHOW gpujoin.device_memory_limit;
RESET gpujoin.device_memory_limit;
DROP ROLE gpujoin_regress_user;

-- the prefix is reserved: typos are errors, not silent placeholders
SET gpujoin.chunk_size = 10;

-- EXPLAIN in other formats
SET gpujoin.chunk_rows = 600;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF, FORMAT YAML)
SELECT * FROM s1 JOIN s2 ON s1.k = s2.k AND s1.v * 3 > s2.w;
RESET gpujoin.chunk_rows;

DROP TABLE s1, s2;
