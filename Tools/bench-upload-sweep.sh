#!/usr/bin/env bash
# Times docsync.sweep_uploads(), which a device runs before it puts a blob in chunks, against an
# account's uploads table of N rows, with schema step 8's index and without it (dropped for the
# run): a private cluster on a loopback port (Tools/postgres-cluster.sh), a new database.
#
#   Tools/bench-upload-sweep.sh DOCSYNC-BINARY [ROWS] [SWEEPS]   (as root; default 100000 200)
#
# Two tables: ROWS uploads that started now (a library's first day), and ROWS finished uploads
# that started two days ago, each named by a blob row (inserted with the triggers off).
set -euo pipefail
docsync=${1:?usage: $0 DOCSYNC-BINARY [ROWS] [SWEEPS]}
rows=${2:-100000}
sweeps=${3:-200}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=Tools/postgres-cluster.sh
source "$here/postgres-cluster.sh"
start_postgres
trap stop_postgres EXIT
admin=$DOCSYNC_TEST_POSTGRES
database=sweepbench_$$
psql "$admin" -X -q -c "CREATE DATABASE $database"
admin_db="${admin%/*}/$database"
DOCSYNC_DEVICE_PASSWORD=bench "$docsync" hub add-device "$admin_db?sslmode=disable" bench bench_device >/dev/null
address=${admin#*@}
device="postgresql://bench_device:bench@${address%%/*}/$database"
for age in recent finished-a-day-old; do
  psql "$admin_db" -X -q -c "SET client_min_messages = warning" -c "TRUNCATE docsync.uploads CASCADE"
  psql "$device" -X -q -c "INSERT INTO docsync.uploads (id, hash)
    SELECT gen_random_uuid(), '\\x00'::bytea FROM generate_series(1, $rows)"
  if [[ $age != recent ]]; then
    psql "$admin_db" -X -q -c "SET session_replication_role = replica" \
      -c "UPDATE docsync.uploads SET started = now() - interval '2 days'" \
      -c "INSERT INTO docsync.blobs (account, hash, size, upload)
          SELECT account, decode(md5(id::text), 'hex'), 1, id FROM docsync.uploads"
  fi
  psql "$admin_db" -X -q -c "ANALYZE docsync.uploads" -c "ANALYZE docsync.blobs"
  for index in with without; do
    [[ $index == with ]] || psql "$admin_db" -X -q -c "DROP INDEX docsync.uploads_account_started"
    time=$(psql "$device" -X -q -c '\timing on' \
      -c "SELECT count(docsync.sweep_uploads()) FROM generate_series(1, $sweeps)" | grep '^Time')
    echo "$rows $age uploads, $index the index: $sweeps sweeps, $time"
    [[ $index == with ]] ||
      psql "$admin_db" -X -q -c "CREATE INDEX uploads_account_started ON docsync.uploads (account, started)"
  done
done
