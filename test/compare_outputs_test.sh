#!/usr/bin/env bash
# test/compare_outputs_test.sh: test/compare_outputs.pl against made-up
# pairs of outputs, each with the verdict it must give: the differences it
# lets pass (plan text, rows or notices in another order where nothing
# orders them, rows with equal sort keys swapped) and those it must fail
# (another row, a row missing, rows out of their ORDER BY, an error or a
# notice in one run only, a lost connection).  test/pg_suite.sh runs it
# first, so that a comparison that could not fail is caught.
#
# Prints one line per case and "N passed, N failed"; exit status 1 when a
# case got the wrong verdict.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# case NAME WANT(pass|fail) BASE_TEXT GPU_TEXT
case_() {
	local name=$1 want=$2 got rc=0
	mkdir -p "$tmp/$name/base" "$tmp/$name/gpu"
	printf '%s' "$3" >"$tmp/$name/base/t.out"
	printf '%s' "$4" >"$tmp/$name/gpu/t.out"
	perl "$here/compare_outputs.pl" "$tmp/$name/base" "$tmp/$name/gpu" >"$tmp/$name/report" 2>&1 || rc=$?
	case "$rc" in
		0) got=pass ;;
		1) got=fail ;;
		*) got="error (exit status $rc)" ;;
	esac
	if [ "$got" = "$want" ]; then
		passed=$((passed + 1))
		printf 'ok: %s (%s)\n' "$name" "$want"
	else
		failed=$((failed + 1))
		printf 'WRONG: %s: want %s, got %s\n' "$name" "$want" "$got"
		sed 's/^/    /' "$tmp/$name/report"
	fi
}

table() {
	# table HEADER ROW... : a psql result table
	local header=$1 n
	shift
	n=$#
	printf '%s\n' "$header" "$(printf '%s' "$header" | sed 's/[^|]/-/g; s/|/+/g')"
	printf '%s\n' "$@"
	if [ "$n" = 1 ]; then printf '(1 row)\n\n'; else printf '(%d rows)\n\n' "$n"; fi
}

q1='SELECT a.x, b.y FROM a JOIN b ON a.k = b.k;
'
q1o='SELECT a.x, b.y FROM a JOIN b ON a.k = b.k ORDER BY a.x;
'
rows_ab=$(table ' x | y ' '  1 | 10' '  2 | 20' '  2 | 21')
rows_ba=$(table ' x | y ' '  2 | 20' '  1 | 10' '  2 | 21')
rows_tie=$(table ' x | y ' '  1 | 10' '  2 | 21' '  2 | 20')
rows_other=$(table ' x | y ' '  1 | 10' '  2 | 20' '  2 | 22')
rows_less=$(table ' x | y ' '  1 | 10' '  2 | 20')

case_ identical pass "$q1$rows_ab" "$q1$rows_ab"
case_ unordered-rows-reordered pass "$q1$rows_ab" "$q1$rows_ba"
case_ ordered-ties-swapped pass "$q1o$rows_ab" "$q1o$rows_tie"
case_ ordered-rows-out-of-order fail "$q1o$rows_ab" "$q1o$rows_ba"
case_ another-row fail "$q1$rows_ab" "$q1$rows_other"
case_ a-row-missing fail "$q1$rows_ab" "$q1$rows_less"
case_ plan-text pass "EXPLAIN (COSTS OFF) $q1$(table '        QUERY PLAN        ' ' Hash Join' '   ->  Seq Scan on a')" \
	"EXPLAIN (COSTS OFF) $q1$(table '        QUERY PLAN        ' ' Custom Scan (GpuHashJoin)')"
case_ explain-function pass "CREATE FUNCTION f(q text) RETURNS SETOF text LANGUAGE plpgsql AS \$\$ BEGIN RETURN QUERY EXECUTE 'EXPLAIN ' || q; END \$\$;
SELECT * FROM f('SELECT 1; SELECT 2');
$(table ' f ' ' Hash Join')" "CREATE FUNCTION f(q text) RETURNS SETOF text LANGUAGE plpgsql AS \$\$ BEGIN RETURN QUERY EXECUTE 'EXPLAIN ' || q; END \$\$;
SELECT * FROM f('SELECT 1; SELECT 2');
$(table ' f ' ' Custom Scan (GpuHashJoin)')"
case_ error-only-with-gpu fail "$q1$rows_ab" "${q1}ERROR:  outer relation of a GPU merge join has more than 2147483647 rows
"
case_ crash fail "$q1$rows_ab" "${q1}server closed the connection unexpectedly
connection to server was lost
"
case_ notices-reordered pass "UPDATE t SET v = 1;
NOTICE:  row 1
NOTICE:  row 2
$q1$rows_ab" "UPDATE t SET v = 1;
NOTICE:  row 2
NOTICE:  row 1
$q1$rows_ab"
case_ notice-only-with-gpu fail "UPDATE t SET v = 1;
NOTICE:  row 1
$q1$rows_ab" "UPDATE t SET v = 1;
NOTICE:  row 1
NOTICE:  row 1
$q1$rows_ab"
case_ order-by-in-a-string pass "SELECT 'z; ORDER BY x' AS s, a.x, b.y FROM a JOIN b ON a.k = b.k;
$rows_ab" "SELECT 'z; ORDER BY x' AS s, a.x, b.y FROM a JOIN b ON a.k = b.k;
$rows_ba"
case_ order-by-in-a-subquery-only pass "SELECT * FROM (SELECT a.x, b.y FROM a JOIN b ON a.k = b.k ORDER BY 1) s JOIN c ON true;
$rows_ab" "SELECT * FROM (SELECT a.x, b.y FROM a JOIN b ON a.k = b.k ORDER BY 1) s JOIN c ON true;
$rows_ba"
# a table right after a statement's notices (MERGE ... RETURNING with row
# triggers): the table is a table, not lines of the notices
q2='MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN DELETE RETURNING t.*;
'
case_ notices-then-table-reordered pass "${q2}NOTICE:  row 1
NOTICE:  row 2
$rows_ab" "${q2}NOTICE:  row 2
NOTICE:  row 1
$rows_ba"
case_ notices-then-table-another-row fail "${q2}NOTICE:  row 1
$rows_ab" "${q2}NOTICE:  row 1
$rows_other"

printf '%d passed, %d failed\n' "$passed" "$failed"
[ "$failed" = 0 ]
