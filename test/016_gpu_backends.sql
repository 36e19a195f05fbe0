-- test/016_gpu_backends.sql
--
-- gpujoin.max_gpu_backends: a backend takes a slot (shared memory, so the
-- pgTAP suite's preloaded cluster) before it first touches the GPU, and
-- keeps it until it exits.  With the limit at 0, this new session may not
-- start using the GPU: "auto" plans PostgreSQL's joins, "gpu" fails with
-- 53000, the CPU twin still runs.  Raised, the session takes a slot and
-- joins on the GPU; lowered again, it keeps its slot.  On the CPU (CI)
-- there is no GPU to take a slot for: the same statements check that the
-- slots are counted (0) and that nothing but the GPU is refused.  Through
-- the gpujoin service (gpujoin.service = on) no backend takes a slot: the
-- limit does not apply and the GPU joins run at every limit.
--
-- The limit is set before anything else: this session must not have
-- touched the GPU yet (pg_prove runs each file in a session of its own).
SET gpujoin.max_gpu_backends = 0;
BEGIN;
SELECT plan(15);
CREATE EXTENSION IF NOT EXISTS gpujoin;
LOAD 'gpujoin';
\ir helpers.psql
SELECT current_setting('gpujoin.device') = 'gpu' AS on_gpu \gset
SELECT :'on_gpu' AND current_setting('gpujoin.service') = 'on'
	AND (SELECT service FROM gpujoin_device_info()) ~ '^running' AS service_gpu \gset
-- a GPU session that takes slots: on a GPU, without the service
SELECT :'on_gpu' AND NOT :'service_gpu' AS slots \gset

CREATE TABLE ba AS SELECT g AS id, g % 300 AS k FROM generate_series(1, 3000) g;
CREATE TABLE bb AS SELECT g AS id, g % 200 AS k FROM generate_series(1, 1000) g;
ANALYZE ba, bb;
\set q 'SELECT ba.id, bb.id AS bid FROM ba JOIN bb ON ba.k = bb.k'
:postgres_join
CREATE TEMP TABLE want AS :q;
:gpu_join

SELECT is((SELECT context || ' ' || boot_val FROM pg_settings WHERE name = 'gpujoin.max_gpu_backends'),
	'superuser -1', 'gpujoin.max_gpu_backends: superuser only, no limit by default');
SELECT is((SELECT context || ' ' || unit FROM pg_settings WHERE name = 'gpujoin.service_kept_staging'),
	'sighup MB', 'gpujoin.service_kept_staging: set in the server''s configuration, in MB');
-- its default: an eighth of the host's memory (MemTotal, what sysconf counts), at least 1 GB
SELECT is(abs((SELECT boot_val::bigint FROM pg_settings WHERE name = 'gpujoin.service_kept_staging') -
		greatest(1024, substring(pg_read_file('/proc/meminfo') FROM 'MemTotal:\s+(\d+) kB')::bigint / 8 / 1024)) <= 1,
	true, 'gpujoin.service_kept_staging: by default an eighth of the host''s memory, at least 1 GB');
SELECT isnt((SELECT gpu_backends FROM gpujoin_device_info()), NULL,
	'with gpujoin preloaded, gpujoin_device_info() counts the backends on the GPU');

-- the limit reached: this session does not start using the GPU
SET LOCAL gpujoin.device = auto;
SELECT is((SELECT name ~ 'max_gpu_backends \(0\) backends already use the GPU' FROM gpujoin_device_info()), :'slots',
	'limit 0: gpujoin_device_info() says the GPU is taken (on a GPU, without the service)');
SELECT is(pg_temp.plan(:'q') ~ 'Gpu', :'service_gpu',
	'limit 0, device auto: PostgreSQL''s join (through the service: a GPU join)');
SELECT bag_eq(:'q', 'SELECT * FROM want', 'limit 0, device auto: PostgreSQL''s rows');
SET LOCAL gpujoin.device = gpu;
\if :service_gpu
SELECT bag_eq(:'q', 'SELECT * FROM want', 'limit 0, device gpu: through the service, which takes no slot');
\else
SELECT throws_ok(:'q', CASE WHEN :'on_gpu' THEN '53000' ELSE '0A000' END, NULL,
	'limit 0, device gpu: ERROR 53000 on a GPU (0A000, no GPU, elsewhere)');
\endif
SET LOCAL gpujoin.device = cpu;
SELECT bag_eq(:'q', 'SELECT * FROM want', 'limit 0, device cpu: the CPU twin needs no slot');
SELECT is((SELECT gpu_backends >= 0 FROM gpujoin_device_info()), true, 'the count is never negative');
SELECT is((SELECT count(*) FROM pg_stat_activity WHERE pid = pg_backend_pid()), 1::bigint,
	'the refused session is alive');

-- raised: this session takes a slot and joins on the GPU
SET LOCAL gpujoin.max_gpu_backends = -1;
SET LOCAL gpujoin.device = auto;
SELECT is((SELECT gpu_backends >= 1 FROM gpujoin_device_info()), :'slots',
	'no limit: this session holds a slot (on a GPU; none are taken on the CPU or through the service)');
SELECT is(pg_temp.plan(:'q') ~ 'GpuHashJoin', :'on_gpu', 'no limit, device auto: a GPU join (on a GPU)');
SELECT bag_eq(:'q', 'SELECT * FROM want', 'no limit: the same rows');

-- lowered again: a session that holds a slot keeps it
SET LOCAL gpujoin.max_gpu_backends = 0;
SELECT is(pg_temp.plan(:'q') ~ 'GpuHashJoin', :'on_gpu', 'limit 0 again: this session keeps the GPU (on a GPU)');

SELECT * FROM finish();
ROLLBACK;
