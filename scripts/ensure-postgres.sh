#!/usr/bin/env bash
# Makes sure the Postgres server the tests use answers at $PGHOST:$PGPORT (default 127.0.0.1:5432).
# Starts the machine's own cluster with pg_ctlcluster when the binaries are there but the server
# is down; otherwise fails with a message saying what is missing.
set -euo pipefail
host=${PGHOST:-127.0.0.1}
port=${PGPORT:-5432}

ready() { pg_isready -q -h "$host" -p "$port" 2>/dev/null; }

if ! command -v pg_isready >/dev/null 2>&1; then
  echo "error: the PostgreSQL client tools (pg_isready) are not installed; install postgresql" >&2
  exit 1
fi
if ready; then
  exit 0
fi
if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  echo "Postgres is not answering at $host:$port; starting cluster $version/main" >&2
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 30); do
    if ready; then exit 0; fi
    sleep 1
  done
fi
echo "error: no Postgres server answers at $host:$port and none could be started here;" \
     "start one or set HENGE_TEST_PG_URL to a server the tests may create databases on" >&2
exit 1
