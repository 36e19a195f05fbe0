#!/usr/bin/env bash
# test/pg_suite.sh: PostgreSQL's own regression suite, run with gpujoin off
# and then with GPU joins forced, the outputs compared run against run
#
#   test/pg_suite.sh [SETTING...]       (test/run calls it: --only pgsuite)
#
# SETTINGs (all of them by default), each a run with GPU joins forced:
#
#   default   gpujoin's defaults
#   smj       gpujoin.join_variant = smj
#   phj_gftr  gpujoin.join_variant = phj, gpujoin.materialize = gftr
#   chunk2    gpujoin.chunk_rows = 2 (every outer side in many chunks)
#   no_hash   gpujoin.enable_hashjoin = off (GpuMergeJoin and GpuThetaJoin)
#   fetch     gpujoin.heap_fetch = on (an outer side read as heap pages
#             fetches its host columns by tid for each match)
#   service   gpujoin's defaults, every join run by the gpujoin service: the
#             cluster restarted with gpujoin.service = on for this run (and
#             off again after it), which must then have served requests
#
# Every run, the one with gpujoin off included, has enable_hashjoin and
# enable_mergejoin off, so that PostgreSQL's nested loop is the only join
# left to compete; the forced runs also price GPU joins at no fixed cost
# (gpujoin.setup_cost, worker_setup_cost, cost_per_ms, extract_cost and
# emit_cost 0), so that small joins go to the GPU too.  The suite is that of
# the server's version, from Debian's source package (gj_regress_suite in
# scripts/lib.sh, cached between runs), its full parallel_schedule.
#
# test/compare_outputs.pl compares each forced run with the one with
# gpujoin off: it passes plan text and the order of rows (and of notices)
# where the statement does not order them, and fails on any other
# difference: a row, an error or notice only one run shows, a crash.  The
# server's log (auto_explain, every executed plan) gives the number of
# executed plans with a GPU node, printed per run; the default run must
# have at least GJ_SUITE_MIN_GPU_PLANS (3000) of them, so that a suite
# that stopped forcing GPU joins fails.  test/compare_outputs_test.sh runs
# first: the comparison must pass and fail made-up outputs as it should.
# Closing line: "N passed, N failed", one for that and one per setting.
#
# Needs a running cluster (PGHOST, PGPORT, PGUSER) with
#   shared_preload_libraries = 'gpujoin,auto_explain'
#   auto_explain.log_min_duration = 0, auto_explain.log_nested_statements = on
# and GJ_SERVER_LOG (its log file), PG_CONFIG, PG_BINDIR, GJ_WORK (a scratch
# directory the cluster's owner can write), GJ_DEVICE (cpu|gpu|auto); for
# the service setting also PGDATA, GJ_CLUSTER_DIR and GJ_PGUSER, to restart
# the cluster.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../scripts/lib.sh
source "$(dirname "$0")/../scripts/lib.sh"

all_settings="default smj phj_gftr chunk2 no_hash fetch service"
settings=${*:-$all_settings}
min_gpu_plans=${GJ_SUITE_MIN_GPU_PLANS:-3000}
for v in PG_CONFIG PG_BINDIR GJ_WORK GJ_SERVER_LOG PGHOST PGPORT PGUSER GJ_DEVICE; do
	[ -n "${!v:-}" ] || gj_die "$v is not set (test/run sets it: test/run --only pgsuite)"
done
for s in $settings; do
	[[ " $all_settings " == *" $s "* ]] || gj_die "unknown setting: $s (one of: $all_settings)"
done

# the options of each run
base_options="-c gpujoin.device=$GJ_DEVICE -c enable_hashjoin=off -c enable_mergejoin=off"
forced="-c gpujoin.setup_cost=0 -c gpujoin.worker_setup_cost=0 -c gpujoin.cost_per_ms=0"
forced="$forced -c gpujoin.extract_cost=0 -c gpujoin.emit_cost=0"
options_of() {
	case "$1" in
		off) echo "-c gpujoin.enabled=off" ;;
		default) echo "$forced" ;;
		smj) echo "$forced -c gpujoin.join_variant=smj" ;;
		phj_gftr) echo "$forced -c gpujoin.join_variant=phj -c gpujoin.materialize=gftr" ;;
		chunk2) echo "$forced -c gpujoin.chunk_rows=2" ;;
		no_hash) echo "$forced -c gpujoin.enable_hashjoin=off" ;;
		fetch) echo "$forced -c gpujoin.heap_fetch=on" ;;
		service) echo "$forced" ;;
	esac
}

# A column of gpujoin_device_info() (the extension made in the database
# psql connects to, which the suite does not use)
service_info() {
	psql -X -q -At -c "SET client_min_messages = warning" \
		-c "CREATE EXTENSION IF NOT EXISTS gpujoin" -c "SELECT $1 FROM gpujoin_device_info()"
}

# The cluster restarted with gpujoin.service = $1; with on, until the
# service takes requests (at most 10 s)
restart_service() {
	local i
	gj_cluster_conf "gpujoin.service = $1"
	gj_cluster_restart
	[ "$1" = on ] || return 0
	for i in $(seq 1 100); do
		[ "$(service_info "service ~ '^running'" 2>/dev/null)" = t ] && return 0
		sleep 0.1
	done
	gj_note "the gpujoin service did not start"
	return 1
}

gj_regress_suite

# the suite and its C module where the server (the cluster's owner) can
# read them, and the outputs where it can write (COPY TO writes files)
dir=$GJ_WORK/pgsuite
rm -rf "$dir"
mkdir -p "$dir"
cp -r "$GJ_REGRESS_SRC" "$dir/regress"
cp -r "$GJ_REGRESS_DLPATH" "$dir/lib"
if [ "$(id -u)" = 0 ]; then
	chown -R "$PGUSER" "$dir"
fi

# Run the suite once with the given options; its outputs go to
# $dir/SETTING, and the part of the server log it wrote to $dir/SETTING.log
run_suite() {
	local setting=$1 start rc=0 t0
	start=$(stat -c %s "$GJ_SERVER_LOG")
	t0=$SECONDS
	# a tablespace is the cluster's, not the test database's: one that an
	# earlier run left (16 and later's test_setup makes regress_tblspace,
	# the tablespace test drops it) would fail this run's test_setup
	gj_psql -q -At -d postgres -c "SELECT format('DROP TABLESPACE %I', spcname) FROM pg_tablespace WHERE spcname LIKE 'regress\_%'" |
		while read -r drop; do gj_psql -q -d postgres -c "$drop" || true; done
	mkdir -p "$dir/$setting"
	[ "$(id -u)" != 0 ] || chown "$PGUSER" "$dir/$setting"
	PGOPTIONS="$base_options $(options_of "$setting")" gj_as_owner \
		"$("$PG_CONFIG" --pkglibdir)/pgxs/src/test/regress/pg_regress" \
		--inputdir="$dir/regress" --outputdir="$dir/$setting" --bindir="$PG_BINDIR" \
		--dlpath="$dir/lib" --schedule="$dir/regress/parallel_schedule" \
		--max-concurrent-tests=20 --host="$PGHOST" --port="$PGPORT" --user="$PGUSER" \
		>"$dir/$setting/pg_regress.log" 2>&1 || rc=$?
	tail -c +"$((start + 1))" "$GJ_SERVER_LOG" >"$dir/$setting.log"
	# pg_regress fails on any difference from PostgreSQL's expected files,
	# which these settings change; only a run that did not finish counts
	if ! grep -q -E '^[ #]*(All [0-9]+ tests passed|[0-9]+ of [0-9]+ tests (failed|passed))' "$dir/$setting/pg_regress.log"; then
		gj_note "$setting: pg_regress did not finish (exit status $rc):"
		tail -n 20 "$dir/$setting/pg_regress.log"
		return 1
	fi
	gj_note "$setting: $(ls "$dir/$setting/results" | wc -l) test outputs in $((SECONDS - t0)) s"
}

# Executed plans in a run's log (auto_explain entries), and those with a
# GPU node; server crashes and assertion failures in it
count_plans() {
	perl -e '
		my ($n, $g, $in, $gpu) = (0, 0, 0, 0);
		while (<>)
		{
			if (/^\S/)
			{
				# a new log entry: count the one it ends
				if ($in) { $n++; $g++ if $gpu; }
				$in = /duration: [0-9.]+ ms\s+plan:/ ? 1 : 0;
				$gpu = 0;
			}
			$gpu = 1 if $in && /Custom Scan \(Gpu/;
		}
		if ($in) { $n++; $g++ if $gpu; }
		print "$n $g\n";' "$1"
}
crashes() {
	grep -c -E 'terminated by signal|TRAP: |PANIC: ' "$1" || true
}

passed=0
failed=0
gj_step "the comparison itself (test/compare_outputs_test.sh)"
if "$GJ_ROOT/test/compare_outputs_test.sh"; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
fi

gj_step "PostgreSQL's regression suite: gpujoin off"
run_suite off || gj_die "the run with gpujoin off did not finish; nothing to compare against"
read -r nplans _ < <(count_plans "$dir/off.log")
gj_note "off: $nplans executed plans"

for s in $settings; do
	gj_step "PostgreSQL's regression suite: GPU joins forced, $s ($(options_of "$s"))"
	ok=1
	if [ "$s" = service ]; then
		restart_service on || ok=0
		requests=$(service_info service_requests || echo 0)
	fi
	run_suite "$s" || ok=0
	if [ "$s" = service ]; then
		requests=$(($(service_info service_requests || echo 0) - requests))
		gj_note "service: the gpujoin service served $requests requests"
		[ "$requests" -ge 1000 ] || ok=0
		restart_service off || ok=0
	fi
	read -r nplans ngpu < <(count_plans "$dir/$s.log")
	ncrash=$(crashes "$dir/$s.log")
	gj_note "$s: $nplans executed plans, $ngpu of them with a GPU node; $ncrash crashes"
	if [ "$ncrash" != 0 ]; then
		grep -A1 -E 'terminated by signal|TRAP: |PANIC: ' "$dir/$s.log" | head -n 10
		ok=0
	fi
	if [[ "$s" = default || "$s" = service ]] && [ "$ngpu" -lt "$min_gpu_plans" ]; then
		gj_note "$s: only $ngpu executed plans with a GPU node, fewer than $min_gpu_plans"
		ok=0
	fi
	if [ -d "$dir/$s/results" ]; then
		perl "$GJ_ROOT/test/compare_outputs.pl" "$dir/off/results" "$dir/$s/results" || ok=0
	fi
	if [ "$ok" = 1 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
done
printf '%d passed, %d failed\n' "$passed" "$failed"
[ "$failed" = 0 ]
