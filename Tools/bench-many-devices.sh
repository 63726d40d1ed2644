#!/usr/bin/env bash
# Many devices on one PostgreSQL hub (Tools/bench-many-devices.py): a private cluster as
# Tools/test starts it (TLS with sslmode=verify-full, max_connections=400), stopped and started
# again in the middle of the run.
#
#   Tools/bench-many-devices.sh DOCSYNC-BINARY [OPTIONS]   (as root; --devices, --seconds, ...)
#
# Prints the figures; pass --results FOLDER to keep their JSON as well.
set -euo pipefail
docsync=${1:?usage: $0 DOCSYNC-BINARY [OPTIONS]}
shift
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=Tools/postgres-cluster.sh
source "$here/postgres-cluster.sh"
start_postgres
# The run's mounts go first: an unmount needs no server, but a daemon left behind would hold
# the cluster's folder.
cleanup() {
  for mount in $(awk '$5 ~ "^/var/tmp/docsync-bench-many" {print $5}' /proc/self/mountinfo); do
    fusermount3 -uz "$mount" 2>/dev/null || true
  done
  stop_postgres
}
trap cleanup EXIT
# DOCSYNC_BENCH_STATEMENTS=1: pg_stat_statements, and where the server's time went at the end.
if [[ -n ${DOCSYNC_BENCH_STATEMENTS:-} ]]; then
  psql "$DOCSYNC_TEST_POSTGRES" -X -q -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"
  runuser -u postgres -- "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w restart -m fast >/dev/null
  psql "$DOCSYNC_TEST_POSTGRES" -X -q -c "CREATE EXTENSION pg_stat_statements" \
    -c "ALTER SYSTEM SET pg_stat_statements.track = 'all'" \
    -c "ALTER SYSTEM SET log_lock_waits = on" -c "ALTER SYSTEM SET deadlock_timeout = '10ms'" \
    -c "SELECT pg_reload_conf()" >/dev/null
fi
echo "hub: PostgreSQL 15 on ${DOCSYNC_TEST_POSTGRES#*@}, TLS (verify-full)"
python3 "$here/bench-many-devices.py" --docsync "$docsync" --postgres "$DOCSYNC_TEST_POSTGRES" \
  --postgres-ca "$DOCSYNC_TEST_POSTGRES_CA" --pg-data "$pg_dir/data" "$@"
if [[ -n ${DOCSYNC_BENCH_STATEMENTS:-} ]]; then
  psql "$DOCSYNC_TEST_POSTGRES" -X -c "
    SELECT calls, round(total_exec_time) AS total_ms, round(mean_exec_time::numeric, 2) AS mean_ms,
      left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS statement
    FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 15"
  # Every lock wait of 10 ms or more, from the server's log (log_lock_waits: "acquired ... after
  # N ms"); with the head upsert's calls above, the share of appends that waited that long.
  python3 - "$pg_dir" <<'PY'
import glob, re, statistics, sys
waits = []
for path in glob.glob(f"{sys.argv[1]}/log*") + glob.glob(f"{sys.argv[1]}/data/log/*"):
    with open(path, errors="replace") as f:
        waits += [float(m) for m in re.findall(r"acquired \S+ on .*? after ([0-9.]+) ms", f.read())]
if waits:
    waits.sort()
    print(f"lock waits of 10 ms or more: {len(waits)}, mean {statistics.mean(waits):.0f} ms, "
          f"p50 {waits[len(waits) // 2]:.0f} ms, p99 {waits[min(len(waits) - 1, int(0.99 * len(waits)))]:.0f} ms, "
          f"max {waits[-1]:.0f} ms, total {sum(waits) / 1000:.1f} s")
else:
    print("lock waits of 10 ms or more: none")
PY
fi
