# shellcheck shell=bash
# scripts/lib.sh: shell functions shared by test/run and demo/run
#
# Source it from a bash script that runs with `set -euo pipefail`:
#
#   gj_require_tools            find PostgreSQL 15, pgTAP, pg_prove, make, cc;
#                               apt-get install what is missing (root, Debian)
#   gj_build_install            make && make install against $PG_CONFIG
#   gj_cluster_init [CONF...]   initdb a throwaway cluster, append CONF lines
#                               to postgresql.conf; removed again on exit
#   gj_cluster_start / gj_cluster_stop / gj_cluster_restart
#   gj_psql ARGS...             psql against that cluster, stopping on errors
#   gj_device_info              print gpujoin_device_info() of a new session
#   gj_regress_suite            find or download PostgreSQL's own regression
#                               suite for the server, build its C module
#
# The cluster runs as an unprivileged user (PostgreSQL refuses root): when
# run as root, GJ_PGUSER (default gpujoin_test, created when missing);
# otherwise the current user.  Its data directory, unix socket and log live
# in one mktemp -d directory, so runs never share anything with an installed
# cluster or with each other, and nothing listens on TCP.
#
# Environment:
#   PG_CONFIG          pg_config to build and test against (default: the
#                      Debian PostgreSQL 15 one, else pg_config on PATH)
#   GJ_PG_MAJOR        the major version PG_CONFIG must be (default 15)
#   GJ_DEVICE          cpu | gpu | auto, passed to every test session as
#                      gpujoin.device (default cpu: same results on any host)
#   GJ_SKIP_INSTALL=1  never apt-get (install, or source: gj_regress_suite
#                      then takes the cache as it is); fail if something
#                      is missing
#   GJ_SKIP_BUILD=1    use the installed extension as it is
#   GJ_PGUSER, GJ_PGPORT   cluster owner and port (default gpujoin_test, 55432)
#   LD_LIBRARY_PATH    passed on to the server processes (GPU host: /opt/pglibs)
#   GJ_CACHE           where downloaded sources are kept between runs
#                      (default ${XDG_CACHE_HOME:-~/.cache}/gpujoin)

GJ_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GJ_PG_MAJOR=${GJ_PG_MAJOR:-15}
GJ_NAME=$(basename "$(dirname "$0")")/$(basename "$0")

gj_step() {
	printf '\n==== %s: %s ==== %s\n' "$GJ_NAME" "$*" "$(date +%H:%M:%S)"
}

gj_note() {
	printf '%s: %s\n' "$GJ_NAME" "$*"
}

gj_die() {
	printf '%s: ERROR: %s\n' "$GJ_NAME" "$*" >&2
	exit 1
}

# pg_config to use: $PG_CONFIG, else Debian's PostgreSQL 15, else PATH
gj_find_pg_config() {
	if [ -n "${PG_CONFIG:-}" ]; then
		printf '%s\n' "$PG_CONFIG"
	elif [ -x "/usr/lib/postgresql/$GJ_PG_MAJOR/bin/pg_config" ]; then
		printf '%s\n' "/usr/lib/postgresql/$GJ_PG_MAJOR/bin/pg_config"
	else
		command -v pg_config || true
	fi
}

# Print "package: what is missing" for each requirement that is not met.
# Files and programs are checked, not dpkg records: PostgreSQL may have
# been installed from a tarball or built from source, and then dpkg knows
# nothing of it.
gj_missing_requirements() {
	local pgc bindir sharedir
	pgc=$(gj_find_pg_config)

	if [ -z "$pgc" ] || ! "$pgc" --version >/dev/null 2>&1; then
		echo "postgresql-server-dev-$GJ_PG_MAJOR: pg_config (set PG_CONFIG)"
		echo "postgresql-$GJ_PG_MAJOR: initdb, postgres, pg_ctl"
		echo "postgresql-$GJ_PG_MAJOR-pgtap: the pgtap extension"
	else
		case "$("$pgc" --version)" in
			"PostgreSQL $GJ_PG_MAJOR."*) ;;
			*) echo "postgresql-server-dev-$GJ_PG_MAJOR: $pgc is $("$pgc" --version), not PostgreSQL $GJ_PG_MAJOR (set PG_CONFIG)" ;;
		esac
		[ -f "$("$pgc" --pgxs)" ] ||
			echo "postgresql-server-dev-$GJ_PG_MAJOR: PGXS ($("$pgc" --pgxs))"
		[ -f "$("$pgc" --includedir-server)/postgres.h" ] ||
			echo "postgresql-server-dev-$GJ_PG_MAJOR: server headers ($("$pgc" --includedir-server))"
		bindir=$("$pgc" --bindir)
		sharedir=$("$pgc" --sharedir)
		for prog in initdb postgres pg_ctl psql; do
			[ -x "$bindir/$prog" ] || echo "postgresql-$GJ_PG_MAJOR: $bindir/$prog"
		done
		[ -f "$sharedir/extension/pgtap.control" ] ||
			echo "postgresql-$GJ_PG_MAJOR-pgtap: $sharedir/extension/pgtap.control"
	fi
	command -v pg_prove >/dev/null 2>&1 && pg_prove --version >/dev/null 2>&1 ||
		echo "libtap-parser-sourcehandler-pgtap-perl: pg_prove"
	command -v make >/dev/null 2>&1 || echo "make: make"
	command -v gcc >/dev/null 2>&1 || echo "gcc: gcc"
	[ -f /usr/include/stdio.h ] || echo "libc6-dev: C library headers"
	# nvcc needs a host C++ compiler, and the kernel tests link with it
	if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
		command -v g++ >/dev/null 2>&1 || echo "g++: g++ (for nvcc)"
	fi
	if [ "$(id -u)" = 0 ]; then
		command -v runuser >/dev/null 2>&1 || echo "util-linux: runuser"
	fi
	return 0
}

# Make sure everything needed is there, installing Debian packages if allowed;
# then set PG_CONFIG, PG_BINDIR and PATH (PostgreSQL's bindir first, so that
# pg_prove and make find this version's psql).
gj_require_tools() {
	local missing pkgs
	missing=$(gj_missing_requirements)
	if [ -n "$missing" ]; then
		pkgs=$(printf '%s\n' "$missing" | cut -d: -f1 | sort -u | tr '\n' ' ')
		gj_note "missing: $(printf '%s\n' "$missing" | cut -d: -f2- | tr '\n' ';')"
		if [ "${GJ_SKIP_INSTALL:-0}" = 1 ]; then
			gj_die "missing requirements and GJ_SKIP_INSTALL=1; install these packages: $pkgs"
		elif [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
			gj_die "missing requirements; install these packages (as root, Debian/Ubuntu): $pkgs"
		fi
		gj_note "apt-get install $pkgs"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq || gj_die "apt-get update failed"
		# shellcheck disable=SC2086  # $pkgs is a list of package names
		apt-get install -y -qq --no-install-recommends $pkgs || gj_die "apt-get could not install: $pkgs"
		missing=$(gj_missing_requirements)
		[ -z "$missing" ] || gj_die "still missing after apt-get install: $(printf '%s\n' "$missing" | tr '\n' ';')"
	fi

	PG_CONFIG=$(gj_find_pg_config)
	PG_BINDIR=$("$PG_CONFIG" --bindir)
	PATH=$PG_BINDIR:$PATH
	export PG_CONFIG PG_BINDIR PATH
	# a server of its own prefix (scripts/build-postgres) runs with its own
	# libpq, before any other one LD_LIBRARY_PATH names (a GPU host's
	# bundle of 15's libraries): its psql needs functions 15's lacks
	case "$("$PG_CONFIG" --libdir)" in
		/usr/lib | /usr/lib/* | /lib | /lib/*) ;;
		*) export LD_LIBRARY_PATH="$("$PG_CONFIG" --libdir)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
	esac
	gj_note "$("$PG_CONFIG" --version) at $PG_BINDIR; pgTAP $(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$("$PG_CONFIG" --sharedir)/extension/pgtap.control"); $(pg_prove --version)"
}

# Build the extension and install it into $PG_CONFIG's installation
gj_build_install() {
	if [ "${GJ_SKIP_BUILD:-0}" = 1 ]; then
		gj_note "GJ_SKIP_BUILD=1: using the installed extension as it is"
		return 0
	fi
	make -C "$GJ_ROOT" -j"$(nproc)" PG_CONFIG="$PG_CONFIG" ||
		gj_die "the build failed (make)"
	if [ -w "$("$PG_CONFIG" --pkglibdir)" ]; then
		make -C "$GJ_ROOT" install PG_CONFIG="$PG_CONFIG" ||
			gj_die "make install failed"
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo -n make -C "$GJ_ROOT" install PG_CONFIG="$PG_CONFIG" ||
			gj_die "sudo make install failed"
	else
		gj_die "cannot write to $("$PG_CONFIG" --pkglibdir): run as root, or set PG_CONFIG to a PostgreSQL installation of your own"
	fi
}

# GJ_DEVICE, validated, and PGOPTIONS that pass it to every session
gj_device_options() {
	GJ_DEVICE=${GJ_DEVICE:-cpu}
	case "$GJ_DEVICE" in
		cpu | gpu | auto) ;;
		*) gj_die "GJ_DEVICE must be cpu, gpu or auto, not '$GJ_DEVICE'" ;;
	esac
	export GJ_DEVICE
	export PGOPTIONS="-c gpujoin.device=$GJ_DEVICE${PGOPTIONS:+ $PGOPTIONS}"
}

#
# The throwaway cluster
#

# set by test/run for the scripts it runs (test/pg_suite.sh)
GJ_WORK=${GJ_WORK:-}
GJ_CLUSTER_DIR=${GJ_CLUSTER_DIR:-}

# A scratch directory for this run (logs, the cluster), removed on exit
# together with the cluster: call it first, it installs the EXIT trap
gj_workdir() {
	[ -z "$GJ_WORK" ] || return 0
	GJ_WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpujoin.XXXXXX")
	trap gj_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# Run a command as the cluster owner, from a directory it can read
gj_as_owner() {
	if [ "$(id -u)" = 0 ]; then
		(cd "$GJ_CLUSTER_DIR" && runuser -u "$GJ_PGUSER" -- \
			env PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" "$@")
	else
		(cd "$GJ_CLUSTER_DIR" && "$@")
	fi
}

gj_cluster_start() {
	gj_as_owner "$PG_BINDIR/pg_ctl" -D "$PGDATA" -l "$GJ_CLUSTER_DIR/server.log" -w -t 120 start >/dev/null || {
		tail -n 40 "$GJ_CLUSTER_DIR/server.log" >&2 || true
		gj_die "the cluster did not start (server log above)"
	}
	gj_note "cluster up: PGHOST=$PGHOST PGPORT=$PGPORT PGUSER=$PGUSER"
}

gj_cluster_stop() {
	[ -f "$PGDATA/postmaster.pid" ] || return 0
	gj_as_owner "$PG_BINDIR/pg_ctl" -D "$PGDATA" -m fast -w -t 60 stop >/dev/null
}

gj_cluster_restart() {
	gj_cluster_stop
	gj_cluster_start
}

# Append settings to postgresql.conf (takes effect at the next start)
gj_cluster_conf() {
	printf '%s\n' "$@" >>"$PGDATA/postgresql.conf"
}

# Trap handler: stop the server we started, whatever state it is in, and
# remove the scratch directory
gj_cleanup() {
	local rc=$? pid
	trap - EXIT
	if [ -n "$GJ_WORK" ] && [ -d "$GJ_WORK" ]; then
		if [ -n "$GJ_CLUSTER_DIR" ] && [ -f "$PGDATA/postmaster.pid" ]; then
			if ! gj_cluster_stop 2>/dev/null; then
				pid=$(head -n 1 "$PGDATA/postmaster.pid" 2>/dev/null || true)
				if [ -n "$pid" ]; then
					kill -QUIT "$pid" 2>/dev/null || true # immediate shutdown
					sleep 2
				fi
			fi
		fi
		if [ "${GJ_KEEP:-0}" = 1 ]; then
			gj_note "GJ_KEEP=1: left $GJ_WORK"
		else
			rm -rf "$GJ_WORK"
		fi
	fi
	exit "$rc"
}

# Create the cluster: gj_cluster_init [postgresql.conf line ...]
gj_cluster_init() {
	if [ "$(id -u)" = 0 ]; then
		GJ_PGUSER=${GJ_PGUSER:-gpujoin_test}
		if ! id "$GJ_PGUSER" >/dev/null 2>&1; then
			gj_note "creating system user $GJ_PGUSER to own the cluster (PostgreSQL refuses root)"
			useradd --system --no-create-home --shell /usr/sbin/nologin "$GJ_PGUSER" ||
				gj_die "could not create user $GJ_PGUSER"
		fi
	else
		GJ_PGUSER=$(id -un)
	fi

	gj_workdir
	GJ_CLUSTER_DIR=$GJ_WORK/cluster
	mkdir "$GJ_CLUSTER_DIR"
	if [ "$(id -u)" = 0 ]; then
		chown "$GJ_PGUSER" "$GJ_WORK" "$GJ_CLUSTER_DIR"
	fi

	export PGDATA=$GJ_CLUSTER_DIR/data
	export PGHOST=$GJ_CLUSTER_DIR
	export PGPORT=${GJ_PGPORT:-55432}
	export PGUSER=$GJ_PGUSER
	export PGDATABASE=postgres
	unset PGSERVICE PGPASSWORD PGHOSTADDR

	gj_as_owner "$PG_BINDIR/initdb" -D "$PGDATA" -U "$GJ_PGUSER" -A trust \
		-E UTF8 --locale=C --no-sync >"$GJ_CLUSTER_DIR/initdb.log" 2>&1 || {
		cat "$GJ_CLUSTER_DIR/initdb.log" >&2
		gj_die "initdb failed"
	}
	gj_cluster_conf \
		"# gpujoin throwaway cluster ($GJ_NAME)" \
		"listen_addresses = ''" \
		"unix_socket_directories = '$GJ_CLUSTER_DIR'" \
		"port = $PGPORT" \
		"fsync = off" \
		"synchronous_commit = off" \
		"full_page_writes = off" \
		"log_min_messages = warning" \
		"$@"
}

# psql against the cluster: no psqlrc, stop at the first error
gj_psql() {
	psql -X -v ON_ERROR_STOP=1 "$@"
}

# Print gpujoin_device_info() as a session with the current PGOPTIONS sees it;
# the extension is created in a transaction that is rolled back
gj_device_info() {
	gj_psql -q -d "${1:-postgres}" -x <<-'SQL'
		BEGIN;
		CREATE EXTENSION IF NOT EXISTS gpujoin;
		SELECT * FROM gpujoin_device_info();
		ROLLBACK;
	SQL
}

#
# PostgreSQL's own regression suite, from Debian's source package
#

# The cache of downloaded sources
gj_cache_dir() {
	printf '%s\n' "${GJ_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpujoin}"
}

# apt-get and apt-cache with a private configuration under $GJ_CACHE/apt
# (or GJ_APT_DIR) whose source entries are the deb-src twins of this
# machine's own deb entries (or, scripts/build-postgres, of other Debian
# suites): the system's apt configuration and package lists stay as they are
gj_apt_private() {
	local tool=$1 dir
	shift
	dir=${GJ_APT_DIR:-$(gj_cache_dir)/apt}
	"$tool" -q -o Dir::Etc::SourceList="$dir/sources.list" \
		-o Dir::Etc::SourceParts="$dir/sources.list.d" \
		-o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" \
		-o Debug::NoLocking=true "$@"
}

# Write the private deb-src entries and fetch their indexes
gj_apt_source_update() {
	local dir f
	dir=$(gj_cache_dir)/apt
	rm -rf "$dir/sources.list.d"
	mkdir -p "$dir/sources.list.d" "$dir/lists/partial" "$dir/cache/archives/partial"
	: >"$dir/sources.list"
	# one-line format: "deb [options] URI suite components" -> "deb-src ..."
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		sed -n -E 's/^[[:space:]]*deb[[:space:]]+/deb-src /p' "$f" >>"$dir/sources.list"
	done
	# deb822 format: every stanza's Types become deb-src
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		sed -E 's/^Types:.*/Types: deb-src/' "$f" >"$dir/sources.list.d/$(basename "$f")"
	done
	if [ ! -s "$dir/sources.list" ] && [ -z "$(ls -A "$dir/sources.list.d")" ]; then
		gj_note "no apt sources on this machine to derive source entries from"
		return 1
	fi
	gj_apt_private apt-get update >"$dir/update.log" 2>&1 || {
		tail -n 5 "$dir/update.log" >&2
		return 1
	}
}

# The upstream version of the server, e.g. 15.18
gj_server_version() {
	"$PG_CONFIG" --version | sed -n -E 's/^PostgreSQL ([0-9]+\.[0-9]+).*/\1/p'
}

# Download Debian's source package postgresql-MAJOR=DEBVERSION and unpack its
# src/test/regress into the cache as postgresql-UPSTREAM; false when apt
# cannot get it
gj_fetch_regress_source() {
	local debver=$1 major=$2 cache upstream tarball
	cache=$(gj_cache_dir)
	upstream=$(printf '%s\n' "$debver" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
	[ -f "$cache/postgresql-$upstream/.complete" ] && return 0
	gj_note "downloading Debian's source package postgresql-$major=$debver"
	rm -rf "$cache/download"
	mkdir -p "$cache/download"
	if ! (cd "$cache/download" && gj_apt_private apt-get source --download-only \
		"postgresql-$major=$debver" >"$cache/download/get.log" 2>&1); then
		gj_note "apt-get source postgresql-$major=$debver failed: $(grep -m 1 -E '^E:' "$cache/download/get.log" || tail -n 1 "$cache/download/get.log")"
		return 1
	fi
	tarball=$(ls "$cache/download/postgresql-${major}_$upstream.orig.tar."* 2>/dev/null | head -n 1)
	[ -n "$tarball" ] || { gj_note "no upstream tarball in postgresql-$major=$debver"; return 1; }
	rm -rf "$cache/postgresql-$upstream"
	mkdir -p "$cache/postgresql-$upstream"
	tar xf "$tarball" -C "$cache/postgresql-$upstream" --strip-components=1 \
		"postgresql-$upstream/src/test/regress" || { gj_note "cannot unpack $tarball"; return 1; }
	rm -rf "$cache/download"
	touch "$cache/postgresql-$upstream/.complete"
}

# Find PostgreSQL's regression suite for the server's version in the cache,
# or download it from Debian's source package (the nearest version of the
# same major when that exact one is not served; it says which); then build
# the suite's C module (regress.so) against the server.  Sets GJ_REGRESS_SRC
# (src/test/regress of that source) and GJ_REGRESS_DLPATH (regress.so, with
# the server's autoinc.so and refint.so beside it, as the suite expects).
gj_regress_suite() {
	local cache want major minor have candidates debver dir f
	cache=$(gj_cache_dir)
	# the server's own version (its package may differ from pg_config's)
	want=$("$PG_BINDIR/postgres" --version | sed -n -E 's/.*\(PostgreSQL\) ([0-9]+\.[0-9]+).*/\1/p')
	[ -n "$want" ] || gj_die "cannot tell the server's version from $PG_BINDIR/postgres --version"
	major=${want%%.*}
	minor=${want#*.}

	have=
	if [ -f "$cache/postgresql-$want/.complete" ]; then
		have=$want
	elif [ "${GJ_SKIP_INSTALL:-0}" != 1 ] && command -v apt-get >/dev/null 2>&1 &&
		gj_apt_source_update; then
		# the versions apt can get, nearest minor release first
		candidates=$(gj_apt_private apt-cache showsrc "postgresql-$major" 2>/dev/null |
			sed -n 's/^Version: //p' | sort -u |
			awk -F'[.-]' -v minor="$minor" '{ d = $2 - minor; if (d < 0) d = -d; print d, $0 }' |
			sort -k1,1n -k2,2r | cut -d' ' -f2)
		for debver in $candidates; do
			if gj_fetch_regress_source "$debver" "$major"; then
				have=$(printf '%s\n' "$debver" | sed -E 's/^([0-9]+\.[0-9]+).*/\1/')
				break
			fi
		done
	fi
	if [ -z "$have" ]; then
		# no network (a GPU host): the nearest cached version of the same major
		have=$(for d in "$cache/postgresql-$major".*/.complete; do
			[ -f "$d" ] || continue
			v=$(basename "$(dirname "$d")")
			v=${v#postgresql-}
			m=${v#*.}
			echo "$(( m > minor ? m - minor : minor - m )) $v"
		done | sort -n | head -n 1 | cut -d' ' -f2)
		[ -n "$have" ] || gj_die "PostgreSQL $want's regression suite is neither in $cache nor downloadable (Debian's source package postgresql-$major, through apt-get source)"
	fi
	[ "$have" = "$want" ] ||
		gj_note "the server is PostgreSQL $want; using the regression suite of $have, the nearest version whose source could be had"

	dir=$cache/postgresql-$have/src/test/regress
	GJ_REGRESS_SRC=$dir
	GJ_REGRESS_DLPATH=$cache/postgresql-$have/dlpath-$want
	if [ ! -f "$GJ_REGRESS_DLPATH/regress.so" ]; then
		mkdir -p "$GJ_REGRESS_DLPATH"
		printf 'MODULES = regress\noverride with_llvm = no\nPGXS := $(shell $(PG_CONFIG) --pgxs)\ninclude $(PGXS)\n' >"$GJ_REGRESS_DLPATH/Makefile"
		cp "$dir/regress.c" "$GJ_REGRESS_DLPATH/"
		make -C "$GJ_REGRESS_DLPATH" PG_CONFIG="$PG_CONFIG" >"$GJ_REGRESS_DLPATH/build.log" 2>&1 || {
			tail -n 20 "$GJ_REGRESS_DLPATH/build.log" >&2
			gj_die "cannot build the regression suite's regress.so"
		}
	fi
	for f in autoinc refint; do
		ln -sf "$("$PG_CONFIG" --pkglibdir)/$f.so" "$GJ_REGRESS_DLPATH/$f.so"
	done
	export GJ_REGRESS_SRC GJ_REGRESS_DLPATH
	gj_note "PostgreSQL $have's regression suite: $GJ_REGRESS_SRC"
}
