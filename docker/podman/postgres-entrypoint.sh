#!/bin/sh
# Entrypoint of the locally built stand-in for the official postgres image: same user, database
# and readiness messages (the server's own on stderr, one on stdout, as the official image's
# init phase prints), same command-line arguments passed to postgres.
set -e
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
DATA=/var/lib/postgresql/data
if [ ! -s "$DATA/PG_VERSION" ]; then
  mkdir -p "$DATA"
  chown postgres:postgres "$DATA"
  su postgres -s /bin/sh -c "$BIN/initdb -D $DATA -U ${POSTGRES_USER:-postgres} -A trust -E UTF8 --no-sync" >/dev/null
  # Clients arrive through the port map from the container network, as with the official
  # image's POSTGRES_HOST_AUTH_METHOD.
  printf 'host all all 0.0.0.0/0 trust\nhost all all ::/0 trust\n' >>"$DATA/pg_hba.conf"
fi
(
  for _ in $(seq 1 600); do
    if su postgres -s /bin/sh -c "$BIN/pg_isready -h 127.0.0.1 -q"; then
      echo "database system is ready to accept connections"
      exit 0
    fi
    sleep 0.1
  done
) &
exec su postgres -s /bin/sh -c "exec $BIN/postgres -D $DATA -c listen_addresses='*' $*"
