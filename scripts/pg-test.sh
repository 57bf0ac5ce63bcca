#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster on loopback for the scale-out tests
# (internal/store/pgstore, internal/engine's replica tests) and prints the
# URL they read from CONTEXTD_TEST_PG.
#
#   eval "$(scripts/pg-test.sh start)"   # exports CONTEXTD_TEST_PG
#   go test -race ./internal/store/...
#   scripts/pg-test.sh stop
#
# Needs Debian's postgresql package (apt-get install -y postgresql). Run as
# root, it runs the cluster as the "postgres" user. PGTEST_DIR (default
# /tmp/contextd-pgtest) holds the cluster; PGTEST_PORT (default 15432) is
# its port: below Linux's ephemeral range (32768-60999), which the tests'
# many client connections draw from, so that a restart mid-test does not
# find its port taken by one of them ("Address already in use").
set -euo pipefail
dir=${PGTEST_DIR:-/tmp/contextd-pgtest}
port=${PGTEST_PORT:-15432}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "PostgreSQL binaries not found under /usr/lib/postgresql/*/bin: apt-get install -y postgresql" >&2
  exit 1
fi
as() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
url="postgres://contextd@127.0.0.1:$port/contextd?sslmode=disable"
case "${1:-start}" in
start)
  if [ ! -f "$dir/PG_VERSION" ]; then
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as "$bin/initdb" -D "$dir" -U contextd --auth=trust -E UTF8 >/dev/null
  fi
  # A few tries: a port just freed may be taken for a moment.
  for try in 1 2 3 4 5; do
    as "$bin/pg_ctl" -D "$dir" status >/dev/null 2>&1 && break
    if as "$bin/pg_ctl" -D "$dir" -l "$dir/log" -w -o "-k /tmp -p $port -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null; then
      break
    fi
    [ "$try" = 5 ] && exit 1
    sleep 1
  done
  as "$bin/psql" -h 127.0.0.1 -p "$port" -U contextd -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='contextd'" | grep -q 1 ||
    as "$bin/createdb" -h 127.0.0.1 -p "$port" -U contextd contextd
  echo "export CONTEXTD_TEST_PG='$url'"
  ;;
stop)
  as "$bin/pg_ctl" -D "$dir" -w -m fast stop >/dev/null 2>&1 || true
  ;;
restart)
  as "$bin/pg_ctl" -D "$dir" -w -m fast restart -o "-k /tmp -p $port -c listen_addresses=127.0.0.1 -c fsync=off" >/dev/null
  ;;
*)
  echo "usage: $0 start|stop|restart" >&2
  exit 2
  ;;
esac
