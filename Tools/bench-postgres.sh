#!/usr/bin/env bash
# Tools/bench-sync.py against a PostgreSQL hub: a private cluster on a loopback port
# (Tools/postgres-cluster.sh, TLS with sslmode=verify-full as the tests use); bench-sync.py makes a
# new database, account and device role for each hub with `docsync hub add-device`.
#
#   Tools/bench-postgres.sh DOCSYNC-BINARY [BENCH-SYNC-OPTIONS]   (as root; default --only small)
#
# Prints the figures; pass --results FOLDER to keep their JSON as well.
#
# DOCSYNC_BENCH_USER=docsync-user runs bench-sync.py as that user (Tools/test-users.sh makes it
# and opens /dev/fuse to it). DOCSYNC_BENCH_STATEMENTS=1 loads pg_stat_statements and prints
# where the server's time went (how the row triggers' whole-table scans of schema steps 1-6
# were found).
set -euo pipefail
docsync=${1:?usage: $0 DOCSYNC-BINARY [BENCH-SYNC-OPTIONS]}
shift
options=("$@")
[[ ${#options[@]} -gt 0 ]] || options=(--only small)
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=Tools/postgres-cluster.sh
source "$here/postgres-cluster.sh"
start_postgres
trap stop_postgres EXIT
admin=$DOCSYNC_TEST_POSTGRES
if [[ -n ${DOCSYNC_BENCH_STATEMENTS:-} ]]; then
  psql "$admin" -X -q -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"
  runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pg_dir/data" -w restart -m fast >/dev/null
  psql "$admin" -X -q -c "CREATE EXTENSION pg_stat_statements" \
    -c "ALTER SYSTEM SET pg_stat_statements.track = 'all'" -c "SELECT pg_reload_conf()" >/dev/null
fi
echo "hub: PostgreSQL 15 on ${admin#*@}, TLS (verify-full)"
user=${DOCSYNC_BENCH_USER:-$(id -un)}
run=()
[[ $user == "$(id -un)" ]] || run=(runuser -u "$user" -- env -u TMPDIR)
results=$(mktemp -d /var/tmp/docsync-bench-results.XXXXXX)
chmod 0777 "$results"
"${run[@]}" python3 "$here/bench-sync.py" --docsync "$docsync" --postgres "$admin" \
  --postgres-ca "$DOCSYNC_TEST_POSTGRES_CA" --root "/var/tmp/docsync-bench-postgres-$user" \
  --results "$results" "${options[@]}"
rm -rf "$results"
if [[ -n ${DOCSYNC_BENCH_STATEMENTS:-} ]]; then
  psql "$admin" -X -c "
    SELECT calls, round(total_exec_time) AS total_ms, round(mean_exec_time::numeric, 2) AS mean_ms,
      left(regexp_replace(query, '\s+', ' ', 'g'), 100) AS statement
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 15"
fi
