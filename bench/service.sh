#!/usr/bin/env bash
# bench/service.sh: gpujoin without and with the gpujoin service, side by
# side, on a GPU host
#
#   PGDATA=... SERVER_LOG=... bench/service.sh [SESSIONS [SECONDS]]
#
# Restarts the server (pg_ctl -D "$PGDATA"; gpujoin must be in
# shared_preload_libraries) with gpujoin.service = off, then on (ALTER
# SYSTEM), and for each runs:
#	bench/session_memory.sh SESSIONS	a fresh session's first and second
#		GPU join (ms), and the device memory SESSIONS sessions hold after
#		each ran a GPU join (per-backend contexts: about 0.5 GB each;
#		with the service: the service's context only)
#	bench/concurrency.sh SESSIONS SECONDS	SESSIONS clients running GPU
#		joins for SECONDS (pgbench): throughput, aborted clients, crashed
#		backends, device memory before and after
# SESSIONS: 64, SECONDS: 60.  Leaves gpujoin.service as it found it (ALTER
# SYSTEM RESET, one more restart).  Everything on stdout, each part under a
# heading; gpujoin_device_info() after each.
set -euo pipefail

sessions=${1:-64}
seconds=${2:-60}
: "${PGDATA:?set PGDATA to the data directory of the server}"
: "${SERVER_LOG:?set SERVER_LOG to the server log file}"
here=$(cd "$(dirname "$0")" && pwd)

restart_with() {
	psql -X -q -v ON_ERROR_STOP=1 -c "ALTER SYSTEM SET gpujoin.service = $1"
	pg_ctl -D "$PGDATA" -l "$SERVER_LOG" -w restart >/dev/null
	sleep 2	# the service starts once the server is consistent
	psql -X -q -At -c "SHOW gpujoin.service" |
		grep -qx "$1" || { echo "gpujoin.service did not become $1" >&2; exit 1; }
}

info() {
	psql -X -q -c "CREATE EXTENSION IF NOT EXISTS gpujoin" \
		-c "SELECT name, kernels, gpu_backends, service, service_requests, service_contexts FROM gpujoin_device_info()"
}

for mode in off on; do
	echo "######## gpujoin.service = $mode"
	restart_with "$mode"
	info
	echo "#### bench/session_memory.sh $sessions"
	"$here/session_memory.sh" "$sessions" || echo "(session_memory.sh exited with $?)"
	echo "#### bench/concurrency.sh $sessions $seconds"
	"$here/concurrency.sh" "$sessions" "$seconds" || echo "(concurrency.sh exited with $?)"
	info
done

psql -X -q -v ON_ERROR_STOP=1 -c "ALTER SYSTEM RESET gpujoin.service"
pg_ctl -D "$PGDATA" -l "$SERVER_LOG" -w restart >/dev/null
