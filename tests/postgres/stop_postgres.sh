#!/usr/bin/env bash
# Stops the server tests/postgres/start_postgres.sh started in a folder (pg_ctl stop -m immediate).
dir=${1:?usage: stop_postgres.sh <folder>}
[ -f "$dir/data/postmaster.pid" ] || exit 0
bin=""
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
  [ -x "$d/pg_ctl" ] && { bin=$d; break; }
done
[ -n "$bin" ] || exit 0
as=()
[ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
"${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1
exit 0
