-- test/005_device_setting.sql
--
-- gpujoin.device, the one test that sets it (the others take it from
-- test/run): cpu always offers the GPU paths and runs the CPU twin; auto uses
-- a GPU when there is one and otherwise offers no GPU path at all; gpu
-- requires one.  The branches for hosts with and without a GPU have the same
-- number of tests.
BEGIN;
SELECT plan(10);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql

CREATE TABLE o (id int, k int4);
INSERT INTO o SELECT g, g % 100 FROM generate_series(1, 3000) g;
CREATE TABLE i (id int, k int8);
INSERT INTO i SELECT g, g % 150 FROM generate_series(1, 600) g;
ANALYZE o, i;

\set q 'SELECT o.id, i.id AS iid FROM o JOIN i ON o.k = i.k'
:postgres_join
CREATE TEMP TABLE expected AS :q;
:gpu_join

SET LOCAL gpujoin.device = auto;
SELECT device IS NOT NULL AS has_gpu FROM gpujoin_device_info() \gset

-- cpu

SET LOCAL gpujoin.device = cpu;
SELECT matches(pg_temp.plan(:'q'), 'Custom Scan \(GpuHashJoin\)', 'cpu: GPU hash join, run by the CPU twin');
SELECT matches(pg_temp.plan(:'q'), 'Device: CPU', 'cpu: EXPLAIN says the CPU runs it');
SELECT bag_eq(:'q', 'SELECT * FROM expected', 'cpu: the same rows as PostgreSQL');
SELECT is((SELECT kernels FROM gpujoin_device_info()), 'cpu', 'cpu: gpujoin_device_info() names the CPU kernels');
SET LOCAL gpujoin.explain_device = off;
SELECT doesnt_match(pg_temp.plan(:'q'), 'Device:', 'gpujoin.explain_device = off hides the device');
SET LOCAL gpujoin.explain_device = on;

-- auto

SET LOCAL gpujoin.device = auto;
\if :has_gpu
SELECT matches(pg_temp.plan(:'q'), 'Custom Scan \(GpuHashJoin\)', 'auto with a GPU: GPU hash join');
SELECT matches(pg_temp.plan(:'q'), 'Device: GPU', 'auto with a GPU: EXPLAIN says the GPU runs it');
SELECT bag_eq(:'q', 'SELECT * FROM expected', 'auto with a GPU: the same rows as PostgreSQL');
\else
SELECT doesnt_match(pg_temp.plan(:'q'), 'GpuHashJoin', 'auto without a GPU: no GPU path at all');
SELECT matches((SELECT name FROM gpujoin_device_info()), '^no GPU', 'auto without a GPU: gpujoin_device_info() says why');
SELECT bag_eq(:'q', 'SELECT * FROM expected', 'auto without a GPU: PostgreSQL''s join, the same rows');
\endif

-- gpu

SET LOCAL gpujoin.device = gpu;
SELECT matches(pg_temp.plan(:'q'), 'Custom Scan \(GpuHashJoin\)', 'gpu: GPU hash join');
\if :has_gpu
SELECT bag_eq(:'q', 'SELECT * FROM expected', 'gpu with a GPU: the same rows as PostgreSQL');
\else
SELECT throws_ok(:'q', '0A000', NULL, 'gpu without a GPU: the join fails (feature not supported)');
\endif

SELECT * FROM finish();
ROLLBACK;
