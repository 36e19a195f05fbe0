#!/usr/bin/env bash
# bench/session_memory.sh: what a session that has run a GPU join holds on
# the device, and how long its first GPU join takes
#
#   bench/session_memory.sh [SESSIONS]
#
# Against a running server with gpujoin on a GPU host (psql's PGHOST/PGPORT/
# PGUSER).  (1) Startup latency: five fresh sessions each run the same small
# GPU join twice (gpujoin forced); the first includes CUDA's initialization
# in the backend, the second does not.  (2) Per-session device memory:
# SESSIONS (8) sessions each run one GPU join and then sleep; while they
# sleep, nvidia-smi gives the device memory of each backend process (the
# CUDA context stays with the backend once created; gpujoin's own device
# buffers are freed when each join ends) and the GPU's total in use against
# before.  (3) After they exit, the memory in use is back to what it was.
# (4) gpujoin.max_gpu_backends = LIMIT (4; needs gpujoin in
# shared_preload_libraries): SESSIONS sessions with gpujoin.device = auto
# each plan and run the join and sleep; LIMIT of them should take the GPU,
# the others PostgreSQL's join, and the device memory in use grow by LIMIT
# contexts only.  (5) SESSIONS sessions that only plan the GPU join (EXPLAIN
# without ANALYZE) and sleep: once a backend has opened the device, they
# should take no slot and no device memory.
set -euo pipefail

n=${1:-8}
limit=${LIMIT:-4}
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION IF NOT EXISTS gpujoin;
DROP TABLE IF EXISTS sm_a, sm_b;
CREATE TABLE sm_a AS SELECT g AS id, g % 1000 AS k FROM generate_series(1, 100000) g;
CREATE TABLE sm_b AS SELECT g AS id, g AS k FROM generate_series(1, 1000) g;
ANALYZE sm_a, sm_b;
SQL
q="SELECT count(*) FROM sm_a JOIN sm_b ON sm_a.k = sm_b.k"
forced="LOAD 'gpujoin'; SET gpujoin.device = gpu; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"
used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; }

echo "== first and second GPU join of a fresh session (ms)"
for i in 1 2 3 4 5; do
	psql -X -q -At -c "$forced" -c '\timing on' -c "$q" -c "$q" |
		sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | paste -sd' ' - |
		awk '{ printf "session %d: first %s ms, second %s ms\n", '"$i"', $1, $2 }'
done

sleep 1	# the sessions above have exited
before=$(used)
echo "== $n sessions holding: device memory in use before: $before MiB"
for i in $(seq 1 "$n"); do
	psql -X -q -At -c "$forced" -c "$q" -c "SELECT pg_sleep(12)" >/dev/null &
done
sleep 8
echo "per backend (pid, MiB):"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits
during=$(used)
echo "in use with $n sessions: $during MiB; per session: $(((during - before) / n)) MiB"
wait
sleep 1
echo "after they exited: $(used) MiB (before: $before MiB)"

echo "== gpujoin.max_gpu_backends = $limit, $n sessions with gpujoin.device = auto"
psql -X -q -At -c "ALTER SYSTEM SET gpujoin.max_gpu_backends = $limit" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
auto="LOAD 'gpujoin'; SET gpujoin.device = auto; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;"
before=$(used)
plans=$(mktemp -d)
for i in $(seq 1 "$n"); do
	psql -X -q -At -c "$auto" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $q" -c "SELECT pg_sleep(12)" >"$plans/$i" &
done
sleep 8
during=$(used)
echo "backends on the GPU (gpujoin_device_info): $(psql -X -q -At -c "SELECT gpu_backends FROM gpujoin_device_info()")"
wait
echo "sessions that ran a GPU join: $(grep -lE 'Gpu(HashJoin|PreAgg)' "$plans"/* | wc -l) of $n; PostgreSQL's join: $(grep -LE 'Gpu(HashJoin|PreAgg)' "$plans"/* | wc -l)"
echo "in use while they held: $during MiB, before: $before MiB ($(((during - before) / limit)) MiB per GPU session)"
rm -rf "$plans"
psql -X -q -At -c "ALTER SYSTEM RESET gpujoin.max_gpu_backends" -c "SELECT pg_reload_conf()" >/dev/null

echo "== $n sessions that only plan a GPU join (EXPLAIN without ANALYZE)"
psql -X -q -At -c "$forced" -c "$q" >/dev/null	# a backend opens the device
sleep 1	# and has exited
before=$(used)
for i in $(seq 1 "$n"); do
	psql -X -q -At -c "$forced" -c "EXPLAIN (COSTS OFF) $q" -c "SELECT pg_sleep(12)" >"$plans.$i" &
done
sleep 8
during=$(used)
wait
echo "sessions whose plan has a GPU join: $(grep -lE 'Gpu(HashJoin|PreAgg)' "$plans".* | wc -l) of $n"
echo "in use while they held: $during MiB, before: $before MiB (should not grow by $n contexts)"
rm -f "$plans".*
