#!/usr/bin/env bash
# A throw-away PostgreSQL server for the collector's tests, from Debian's `postgresql` package:
#   scripts/postgres.sh start    initdb + start in a new temporary directory on a free 127.0.0.1 port;
#                                prints "<directory> <url>" (url: postgres://collector@127.0.0.1:<port>/postgres)
#   scripts/postgres.sh stop DIR stops that server and deletes DIR
#   scripts/postgres.sh pause DIR  stops that server (pg_ctl -m fast stop), keeping DIR
#   scripts/postgres.sh resume DIR starts it again on the same port
# Runs the server as the unprivileged user `postgres` when started as root (PostgreSQL refuses root).
export DEBIAN_FRONTEND=noninteractive
set -euo pipefail
bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
    apt-get install -y postgresql >&2 || { apt-get update -qq >&2 && apt-get install -y postgresql >&2; }
    bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
fi
as_server_user() {
    if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$1"; else sh -c "$1"; fi
}
case "${1:-}" in
start)
    dir="$(mktemp -d /tmp/collector-pg.XXXXXX)"
    [ "$(id -u)" = 0 ] && chown postgres: "$dir"
    chmod 700 "$dir"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
    as_server_user "'$bin/initdb' -D '$dir/data' -A trust -U collector --no-sync >'$dir/initdb.log' 2>&1"
    # fsync off: a test database need not survive a power cut, and the tests run faster. 2,000
    # connections: the Swift tests run in parallel, nearly all at once, and each store holds five
    # (writer, two readers, two page readers); the suite peaked above 600.
    echo "-p $port -k '$dir' -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=2000" >"$dir/options"
    as_server_user "'$bin/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w -o \"$(cat "$dir/options")\" start >/dev/null"
    echo "$dir postgres://collector@127.0.0.1:$port/postgres"
    ;;
stop)
    dir="${2:?usage: postgres.sh stop DIR}"
    as_server_user "'$bin/pg_ctl' -D '$dir/data' -m fast -w stop >/dev/null" || true
    rm -rf "$dir"
    ;;
pause)
    dir="${2:?usage: postgres.sh pause DIR}"
    as_server_user "'$bin/pg_ctl' -D '$dir/data' -m fast -w stop >/dev/null"
    ;;
resume)
    dir="${2:?usage: postgres.sh resume DIR}"
    as_server_user "'$bin/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w -o \"$(cat "$dir/options")\" start >/dev/null"
    ;;
*)
    echo "usage: postgres.sh start | stop DIR | pause DIR | resume DIR" >&2
    exit 2
    ;;
esac
