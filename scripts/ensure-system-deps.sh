#!/usr/bin/env bash
# Make sure this machine has what `make test` needs beyond Python: the PostgreSQL server
# binaries, pgTAP, pg_prove, plpgsql_check, and chromium (the dashboard's browser tests drive
# /usr/bin/chromium through Playwright). As root on Debian/Ubuntu it installs what
# is missing with apt-get; otherwise it names the packages and fails.
set -euo pipefail

newest_bindir() {
    local dir
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -V -r); do
        if [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ]; then echo "$dir"; return 0; fi
    done
    return 1
}

missing_packages() {
    local version="$1" sharedir
    local bindir="/usr/lib/postgresql/$version/bin"
    if [ ! -x "$bindir/initdb" ]; then echo "postgresql-$version"; fi
    sharedir=$("$bindir/pg_config" --sharedir 2>/dev/null || echo "/usr/share/postgresql/$version")
    [ -f "$sharedir/extension/pgtap.control" ] || echo "postgresql-$version-pgtap"
    [ -f "$sharedir/extension/plpgsql_check.control" ] || echo "postgresql-$version-plpgsql-check"
    command -v pg_prove >/dev/null || echo "libtap-parser-sourcehandler-pgtap-perl"
    [ -x /usr/bin/chromium ] || echo "chromium"
}

if [ -n "${PGRUN_PG_BINDIR:-}" ]; then
    bindir="$PGRUN_PG_BINDIR"
else
    bindir=$(newest_bindir || true)
fi
if [ -n "$bindir" ]; then
    version=$(basename "$(dirname "$bindir")")
else
    version=""
fi

apt_ok=false
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then apt_ok=true; fi

if [ -z "$version" ]; then
    if ! $apt_ok; then
        echo "PostgreSQL server binaries are missing. Install them (Debian/Ubuntu:" \
             "apt-get install postgresql postgresql-15-pgtap postgresql-15-plpgsql-check" \
             "libtap-parser-sourcehandler-pgtap-perl chromium) or run as root to let make do it." >&2
        exit 1
    fi
    apt-get update -qq
    version=$(apt-cache depends postgresql 2>/dev/null | sed -n 's/.*Depends: postgresql-\([0-9][0-9]*\)$/\1/p' | head -n1)
    version=${version:-15}
fi

mapfile -t need < <(missing_packages "$version")
# ip(8) for the partition test (tests_py/test_worker_partition.py, which needs root and skips
# without it): installed when apt may be used; without apt its absence fails nothing
if $apt_ok && ! command -v ip >/dev/null; then need+=("iproute2"); fi
if [ "${#need[@]}" -eq 0 ]; then
    exit 0
fi
if ! $apt_ok; then
    echo "missing system packages: ${need[*]}" >&2
    echo "install them (e.g. sudo apt-get install ${need[*]}) and run make again" >&2
    exit 1
fi
echo "installing ${need[*]}"
# Keep package scripts from starting a system PostgreSQL service: pgrun runs its own.
policy=/usr/sbin/policy-rc.d
made_policy=false
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; made_policy=true
fi
trap '$made_policy && rm -f "$policy"' EXIT
[ -n "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -print -quit 2>/dev/null)" ] || apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null || {
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
}
mapfile -t still < <(missing_packages "$version")
if [ "${#still[@]}" -ne 0 ]; then
    echo "still missing after apt-get install: ${still[*]}" >&2
    exit 1
fi
