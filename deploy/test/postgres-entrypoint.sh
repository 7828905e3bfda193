#!/bin/sh
# The entrypoint of deploy/test/postgres.Containerfile. Runs as root only to prepare the files
# postgres needs, then execs postgres as user postgres (PID 1, so `podman stop` reaches it).
# First start: initdb into PGDATA, superuser `postgres` with POSTGRES_PASSWORD, scram-sha-256.
set -eu
PGDATA=${PGDATA:-/var/lib/postgresql/data}
if [ -z "${POSTGRES_PASSWORD:-}" ]; then
  echo "halo-postgres: POSTGRES_PASSWORD must be set (the password of the superuser postgres)" >&2
  exit 1
fi
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

install -d -o postgres -g postgres -m 0700 "$PGDATA"
install -d -o postgres -g postgres -m 2775 /var/run/postgresql

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  chown postgres "$pwfile"
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  as_postgres initdb -D "$PGDATA" --username=postgres --pwfile="$pwfile" --auth=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  # Any address with the password; in the container, user postgres without one
  # (`podman exec -u postgres <container> psql`).
  cat > "$PGDATA/pg_hba.conf" <<'HBA'
# TYPE  DATABASE  USER      ADDRESS    METHOD
local   all       postgres             peer
local   all       all                  scram-sha-256
host    all       all       0.0.0.0/0  scram-sha-256
host    all       all       ::/0       scram-sha-256
HBA
  chown postgres:postgres "$PGDATA/pg_hba.conf"
  echo "halo-postgres: initialised $PGDATA" >&2
fi

set -- -c listen_addresses='*' "$@"
tls=/etc/halo/pg-tls
if [ -f "$tls/server.crt" ] && [ -f "$tls/server.key" ]; then
  # postgres refuses a key that others can read or that it does not own: a copy it owns, 0600.
  own=/var/lib/postgresql/tls
  install -d -o postgres -g postgres -m 0700 "$own"
  install -o postgres -g postgres -m 0644 "$tls/server.crt" "$own/server.crt"
  install -o postgres -g postgres -m 0600 "$tls/server.key" "$own/server.key"
  set -- -c ssl=on -c ssl_cert_file="$own/server.crt" -c ssl_key_file="$own/server.key" "$@"
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" "$@"
