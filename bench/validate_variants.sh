#!/usr/bin/env bash
# bench/validate_variants.sh: is the planner's variant the fastest?
#
#   bench/validate_variants.sh > results.csv
#
# Against a running server with gpujoin and a GPU (PGHOST/PGPORT/... as psql
# takes them),
# with the cost model's constants as the server has them (defaults, or
# gpujoin_calibrate()'s via ALTER SYSTEM).
#
# A grid of synthetic equi-joins: n = SIZES rows a side (10^5, 10^6,
# 10^7), RATIOS of the outer rows matching (10 % or 100 %), 1 or 4 int4
# payload columns a side, KEYS the key type (int4; int8 keys are spread
# over 2^40, so 8-byte keys really differ), SKEWS the outer keys'
# distribution (uniform: each matching outer row hits one inner row at
# random; zipf: log-uniform over the inner keys, a Zipf-like law of
# exponent 1 where key 1 takes about 1/ln(n) of the rows), SELECT count(*)
# and the sum of every payload column of the join.  Each runs with every
# variant x materialization forced (NPHJ, PHJ, SMJ x GFTR, GFUR) and with
# auto, core joins off so that the GPU join always runs, all in one session
# with the runs interleaved (a warm-up round, then RUNS (3) rounds of every
# setting once: a backend's placement and the host's drifts once made the
# same plan differ by 1.5x between sessions); per setting the median of
# EXPLAIN ANALYZE's Execution Time and of the device time (build + probe +
# materialize from gpujoin's Time line).  Every run must return the
# same row.  Output: CSV, one line per (case, setting), and for auto the
# variant it chose; besides the medians, the fastest run of each setting
# (exec_min_ms, device_min_ms: on the H200 host a query now and then runs
# about 1.5x slower, host and device time alike, whatever its plan, so the
# median of 3 could still land on a slow run and mark a variant slow that
# is not) and the median device time by phase (build, probe,
# materialize).  On stderr, a summary: in how many cases auto was within
# 10 % of the fastest forced setting, by execution and by device time, by
# medians and by fastest runs.
# GJ_DEVICE=cpu runs the same on the CPU twin (a smoke test of the script).
# PAYLOADS ("1 4") and SETTINGS ("auto auto,nphj gfur,...", comma between
# settings) narrow the grid for the largest sizes.  The tables are UNLOGGED
# (they are made again for every case; no WAL to write); KEEP_TABLES=1
# leaves the last case's vr and vs.
#
# Time on the H200 host: the default grid (3 sizes x 2 ratios x 1 key type
# x 1 skew) about 8 minutes; 10^8 rows a side takes about as long alone,
# so run SIZES=100000000 in a call of its own.
set -euo pipefail

runs=${RUNS:-3}
sizes=${SIZES:-"100000 1000000 10000000"}
psql_() { psql -X -q -At -v ON_ERROR_STOP=1 -c "LOAD 'gpujoin'" "$@"; }
psql_ -c "CREATE EXTENSION IF NOT EXISTS gpujoin"
settings=("auto auto" "nphj gfur" "nphj gftr" "phj gfur" "phj gftr" "smj gfur" "smj gftr")
if [ -n "${SETTINGS:-}" ]; then	# "auto auto,nphj gfur,..."
	IFS=, read -r -a settings <<<"$SETTINGS"
fi

csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
echo "rows,match_ratio,payloads,key_type,skew,variant,materialize,chosen,exec_ms,device_ms,exec_min_ms,device_min_ms,build_ms,probe_ms,materialize_ms"
for n in $sizes; do
	for ratio in ${RATIOS:-0.1 1.0}; do
	for keytype in ${KEYS:-int4}; do
	for skew in ${SKEWS:-uniform}; do
		# the inner keys 1..n (int8: times 2^20 + 7, up to about 2^40)
		key="g"
		[ "$keytype" = int8 ] && key="g::int8 * 1048583"
		if [ "$skew" = zipf ]; then
			pick="least($n, floor(exp((((g::int8 * 40503) % 1000003) / 1000003.0) * ln($n)))::int8 + 1)"
		else
			pick="(g::int8 * 7919) % $n + 1"
		fi
		ikey="$key"
		okey="${pick}"
		if [ "$keytype" = int8 ]; then
			okey="(${pick}) * 1048583"
		fi
		psql_ -c "DROP TABLE IF EXISTS vr, vs" \
			-c "CREATE UNLOGGED TABLE vr AS SELECT ($ikey)::$keytype AS k, g AS p1, g + 1 AS p2, g + 2 AS p3, g + 3 AS p4 FROM generate_series(1, $n) g" \
			-c "CREATE UNLOGGED TABLE vs AS SELECT (CASE WHEN (g::int8 * 2654435761) % 1000 < $ratio * 1000 THEN $okey ELSE -g END)::$keytype AS k,
				g AS q1, g + 1 AS q2, g + 2 AS q3, g + 3 AS q4 FROM generate_series(1, $n) g" \
			-c "VACUUM ANALYZE vr, vs"
		for payloads in ${PAYLOADS:-1 4}; do
			sums=$(for c in $(seq 1 "$payloads"); do printf ' + vr.p%d + vs.q%d' "$c" "$c"; done)
			q="SELECT count(*), sum(0::int8$sums) FROM vs JOIN vr ON vs.k = vr.k"
			# one session for every setting of the case, the runs interleaved
			# (round r runs each setting once), so that where the backend
			# runs and drifts of the host weigh on every setting alike; a
			# first round, not counted (the query without EXPLAIN), warms up
			# each and gives its row
			script="SET jit = off; SET work_mem = '1GB'; SET gpujoin.device = ${GJ_DEVICE:-gpu}; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off; SET max_parallel_workers_per_gather = 0;"
			for round in $(seq 0 "$runs"); do
				for s in "${settings[@]}"; do
					read -r variant mat <<<"$s"
					script+=$'\n'"\\echo @@ $round $variant $mat"$'\n'"SET gpujoin.join_variant = $variant; SET gpujoin.materialize = $mat;"
					if [ "$round" = 0 ]; then
						script+=$'\n'"$q;"
					else
						script+=$'\n'"EXPLAIN (ANALYZE) $q;"
					fi
				done
			done
			out=$(printf '%s\n' "$script" | psql_ -f -)
			# per setting: its row (round 0), the variant it ran, and per
			# counted round the execution time and build + probe + materialize
			printf '%s\n' "$out" | awk -v runs="$runs" -v n="$n" -v ratio="$ratio" -v payloads="$payloads" \
				-v keytype="$keytype" -v skew="$skew" '
				/^@@ / { round = $2; key = $3 " " $4; if (!(key in seen)) { seen[key] = 1; order[++nset] = key }
						 if (round == 0) rowpending = 1; next }
				rowpending && /\|/ { row[key] = $0; rowpending = 0; next }
				/^ *Variant: / { sub(/^ *Variant: /, ""); chosen[key] = $0 }
				/Time: load=/ { dev = 0; nf = split($0, f, /[= ]+/)
								for (i = 1; i < nf; i++) if (f[i] == "build" || f[i] == "probe" || f[i] == "materialize") { dev += f[i + 1]; ph[f[i]] = f[i + 1] } }
				/^Execution Time:/ { if (round > 0) { k = ++cnt[key]; ex[key, k] = $3; dv[key, k] = dev
													  bu[key, k] = ph["build"]; pr[key, k] = ph["probe"]; ma[key, k] = ph["materialize"] } }
				function sorted(a, key, m, v,   i, j, t) {
					for (i = 1; i <= m; i++) v[i] = a[key, i]
					for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t } }
				function median(a, key, m,   v) { sorted(a, key, m, v); return v[int((m + 1) / 2)] }
				function fastest(a, key, m,   v) { sorted(a, key, m, v); return v[1] }
				END {
					for (s = 1; s <= nset; s++) {
						key = order[s]; split(key, vm, " ")
						if (row[key] != row[order[1]]) { printf "MISMATCH: %s %s %s %s: %s, not %s\n", n, ratio, payloads, key, row[key], row[order[1]] > "/dev/stderr"; bad = 1 }
						printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%.3f,%s,%.3f,%.3f,%.3f,%.3f\n", n, ratio, payloads, keytype, skew, vm[1], vm[2], chosen[key],
							median(ex, key, cnt[key]), median(dv, key, cnt[key]),
							fastest(ex, key, cnt[key]), fastest(dv, key, cnt[key]),
							median(bu, key, cnt[key]), median(pr, key, cnt[key]), median(ma, key, cnt[key])
					}
					exit bad
				}'
		done
	done
	done
	done
done | tee "$csv"
[ "${KEEP_TABLES:-0}" = 1 ] || psql_ -c "DROP TABLE IF EXISTS vr, vs"

# the summary: auto against the fastest forced setting of its case; and
# the forced run of the variant auto chose (the same plan, timed apart: the
# choice without auto's own run-to-run jitter); by medians (columns 9, 10)
# and by fastest runs (11, 12)
summary() {
	awk -F, -v ce="$1" -v cd="$2" -v what="$3" '
		$1 == "rows" { next }
		{ c = $1 FS $2 FS $3 FS $4 FS $5
		  if ($6 == "auto") { ae[c] = $ce; ad[c] = $cd; ac[c] = $8; cases[c] = 1; next }
		  fe[c, $8] = $ce; fd[c, $8] = $cd
		  if (!(c in be) || $ce + 0 < be[c]) be[c] = $ce + 0
		  if (!(c in bd) || $cd + 0 < bd[c]) bd[c] = $cd + 0 }
		END { for (c in cases) { n++; if (ae[c] <= 1.1 * be[c]) e++; if (ad[c] <= 1.1 * bd[c]) d++
								 if ((c, ac[c]) in fe) { t++; if (fe[c, ac[c]] <= 1.1 * be[c]) te++; if (fd[c, ac[c]] <= 1.1 * bd[c]) td++ } }
			  printf "%s: auto within 10 %% of the fastest: %d of %d cases end to end, %d of %d by device time\n", what, e, n, d, n
			  printf "%s: auto'"'"'s variant, forced, within 10 %% of the fastest: %d of %d cases end to end, %d of %d by device time\n", what, te, t, td, t }
	' "$csv" >&2
}
summary 9 10 "medians"
summary 11 12 "fastest runs"
