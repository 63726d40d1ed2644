#!/usr/bin/env bash
# Tools/bench-small-files.sh against a PostgreSQL hub: a private cluster on a loopback port
# (Tools/postgres-cluster.sh, TLS with sslmode=verify-full as the tests use), a new database,
# and one account whose device role both devices use, made with `docsync hub add-device`.
#
#   Tools/bench-small-files-postgres.sh DOCSYNC-BINARY [COUNT]   (as root)
#
# DOCSYNC_BENCH_USER=docsync-user runs the devices as that user (Tools/test-users.sh makes it
# and opens /dev/fuse to it); DOCSYNC_BENCH_ROOT is then a folder that user may create.
# DOCSYNC_BENCH_STATEMENTS=1 loads pg_stat_statements and prints where the server's time went
# (how the row triggers' whole-table scans of schema steps 1-6 were found).
set -euo pipefail
docsync=${1:?usage: $0 DOCSYNC-BINARY [COUNT]}
count=${2:-10000}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=Tools/postgres-cluster.sh
source "$here/postgres-cluster.sh"
start_postgres
trap stop_postgres EXIT
admin=$DOCSYNC_TEST_POSTGRES
database=bench_$(openssl rand -hex 4)
psql "$admin" -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $database"
if [[ -n ${DOCSYNC_BENCH_STATEMENTS:-} ]]; then
  psql "$admin" -X -q -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"
  runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pg_dir/data" -w restart -m fast >/dev/null
  psql "${admin%/postgres}/$database" -X -q -c "CREATE EXTENSION pg_stat_statements" \
    -c "ALTER SYSTEM SET pg_stat_statements.track = 'all'" -c "SELECT pg_reload_conf()" >/dev/null
fi
tls="sslmode=verify-full&sslrootcert=$DOCSYNC_TEST_POSTGRES_CA"
password=$(openssl rand -hex 16)
DOCSYNC_DEVICE_PASSWORD=$password "$docsync" hub add-device \
  "${admin%/postgres}/$database?$tls" bench bench_device >/dev/null
address=${admin#*@}
hub="postgres://bench_device@${address%/postgres}/$database?$tls"
echo "hub: PostgreSQL 15 on ${address%/postgres}, TLS (verify-full)"
run=()
[[ -z ${DOCSYNC_BENCH_USER:-} ]] || run=(runuser -u "$DOCSYNC_BENCH_USER" -- env -u TMPDIR)
"${run[@]}" env PGPASSWORD="$password" DOCSYNC_BENCH_HUB="$hub" \
  "$here/bench-small-files.sh" "$docsync" "$count"
if [[ -n ${DOCSYNC_BENCH_STATEMENTS:-} ]]; then
  psql "${admin%/postgres}/$database" -X -c "
    SELECT calls, round(total_exec_time) AS total_ms, round(mean_exec_time::numeric, 2) AS mean_ms,
      left(regexp_replace(query, '\s+', ' ', 'g'), 100) AS statement
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 15"
fi
