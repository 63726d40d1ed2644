#!/usr/bin/env bash
# Many small files through sync, against rsync: one round, quicker than bench-sync.py's.
#
#   Tools/bench-small-files.sh DOCSYNC-BINARY [COUNT]   (default 10000 files of 4 KiB)
#
# DOCSYNC_BENCH_HUB names another hub for both devices (Tools/bench-small-files-postgres.sh
# gives a PostgreSQL one); by default they share a new SQLite hub under ROOT.
#
# Writes COUNT random 4 KiB files into 100 folders, then times `rsync -a` of them to a local
# folder plus `sync`; `cp -a` into mount A and A's `docsync sync` (the push); and a new device
# B's `docsync mount` plus `docsync sync` on the same hub (the initial sync), with the
# CPU B's daemon used. Checks that B shows the same tree. Everything lives under ROOT.
set -euo pipefail
docsync=${1:?usage: $0 DOCSYNC-BINARY [COUNT]}
count=${2:-10000}
root=${DOCSYNC_BENCH_ROOT:-/var/tmp/docsync-bench-small-files}
hub=${DOCSYNC_BENCH_HUB:-$root/hub.sqlite}
for mount in "$root/a" "$root/b"; do fusermount3 -u "$mount" 2>/dev/null || true; done
rm -rf "$root"
mkdir -p "$root/source" "$root/a" "$root/b"
python3 - "$root/source" "$count" <<'PY'
import os, sys
root, count = sys.argv[1], int(sys.argv[2])
for index in range(count):
    folder = f"{root}/d{index % 100:02d}"
    os.makedirs(folder, exist_ok=True)
    with open(f"{folder}/f{index:05d}", "wb") as f:
        f.write(os.urandom(4096))
PY
sync
now() { date +%s.%N; }
seconds() { echo "$2 - $1" | bc; }
start=$(now); rsync -a "$root/source/" "$root/rsync-copy/"; sync; end=$(now)
echo "rsync -a + sync:      $(seconds "$start" "$end") s"
"$docsync" mount "$root/a" --state "$root/state-a" --hub "$hub" --device a
start=$(now); cp -a "$root/source/." "$root/a/"; copied=$(now)
"$docsync" sync "$root/a" --timeout 1800; end=$(now)
echo "push: cp -a           $(seconds "$start" "$copied") s, docsync sync $(seconds "$copied" "$end") s"
sync
start=$(now)
"$docsync" mount "$root/b" --state "$root/state-b" --hub "$hub" --device b
"$docsync" sync "$root/b" --timeout 1800; end=$(now)
read -r user system < <(awk '{print $14, $15}' "/proc/$(cat "$root/state-b/docsync.pid")/stat")
ticks=$(getconf CLK_TCK)
echo "initial sync:         $(seconds "$start" "$end") s (daemon CPU: user $(echo "scale=2; $user / $ticks" | bc) s, system $(echo "scale=2; $system / $ticks" | bc) s)"
if diff -r -x .versions "$root/source" "$root/b" >/dev/null; then echo "B shows the same tree"; else echo "B DIFFERS"; fi
"$docsync" unmount "$root/a"
"$docsync" unmount "$root/b"
