#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server in a folder, for the monitor database's tests against the
# PostgreSQL backend (tests/unit/web_database_test.cpp) and by hand:
#
#   eval "$(tests/postgres/start_postgres.sh /tmp/pg-x)"   # exports CROQ_TEST_POSTGRES=postgresql://...
#   tests/postgres/stop_postgres.sh /tmp/pg-x
#
# initdb and pg_ctl from Debian's postgresql package (/usr/lib/postgresql/<version>/bin), trust
# authentication, listening only on a Unix socket in the folder (no TCP port), fsync off: about
# 1.5 s. PostgreSQL refuses to run as root: as root the server runs as the `postgres` user the
# package creates (the folder is handed to it). Prints `export CROQ_TEST_POSTGRES=<url>` on stdout
# once the server accepts connections; exits 77 with the reason on stderr where it cannot run here
# (the package is not installed: scripts/setup.sh installs postgresql).
set -uo pipefail
dir=${1:?usage: start_postgres.sh <folder>}
mkdir -p "$dir" && dir=$(cd "$dir" && pwd)
skip() { echo "start_postgres: $*" >&2; exit 77; }

bin=""
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
  [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { bin=$d; break; }
done
[ -n "$bin" ] || skip "initdb/pg_ctl are not installed (Debian: postgresql; scripts/setup.sh installs it)"

as=()
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || skip "running as root and there is no postgres user to run the server as"
  chown postgres "$dir" || skip "cannot hand $dir to the postgres user"
  chmod 755 "$dir"
  as=(runuser -u postgres --)
  # The server's user must reach the folder: every folder above it must be searchable.
  "${as[@]}" test -w "$dir" || skip "the postgres user cannot write $dir (a folder above it is not searchable)"
fi
"${as[@]}" "$bin/initdb" -D "$dir/data" -U croq -A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 ||
  "${as[@]}" "$bin/initdb" -D "$dir/data" -U croq -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
  skip "initdb failed: $(tail -n 3 "$dir/initdb.log")"
"${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
  -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
  start >/dev/null 2>"$dir/pg_ctl.err" ||
  skip "the server did not start: $(tail -n 3 "$dir/server.log" "$dir/pg_ctl.err" 2>/dev/null)"
"${as[@]}" "$bin/createdb" -h "$dir" -U croq croq_test >/dev/null 2>"$dir/createdb.err" ||
  skip "createdb failed: $(cat "$dir/createdb.err")"
echo "export CROQ_TEST_POSTGRES='postgresql://croq@/croq_test?host=$dir'"
