#!/bin/bash
# Daemon CPU of a 1 GiB push and pull through a SQLite hub, as docsync-user, run as root:
# two mounts A and B, cp of 1 GiB into A, docsync sync A, docsync sync B and cmp through B.
# With HOW=perf, perf records daemon A through the push (in /var/tmp); strace counts its calls;
# pull-perf records daemon B through the pull and the read.
# Tools/bench-push-cpu.sh BIN chunks|blobs TAG [none|perf|strace|pull-perf]
cd "$(dirname "$0")/.."
source Tools/test-users.sh
setup_test_users >/dev/null
BIN=$1; MODE=$2; TAG=$3; HOW=${4:-none}
open_search_path "$(dirname $BIN)"
R=/var/tmp/docsync-bench-push-cpu
U="runuser -u docsync-user --"
$U fusermount3 -u $R/a 2>/dev/null; $U fusermount3 -u $R/b 2>/dev/null
rm -rf $R; mkdir -p $R; chown docsync-user $R
$U mkdir $R/a $R/b
$U bash -c "head -c 1073741824 /dev/urandom > $R/src.bin"
for m in a b; do $U env DOCSYNC_CONTENT=$MODE $BIN mount $R/$m --state $R/state-$m --hub $R/hub.sqlite --device $m; done
PID=$(pgrep -u docsync-user -f "mount $R/a " | head -1)
sync
echo "== $TAG $MODE $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) pid $PID"
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
PIDB=$(pgrep -u docsync-user -f "mount $R/b " | head -1)
ca=$(cpu $PID)
s=$(date +%s.%N); $U cp $R/src.bin $R/a/f.bin; e=$(date +%s.%N); echo "cp into A: $(echo "$e - $s" | bc) s"
if [ $HOW = none ] || [ $HOW = pull-perf ]; then TR=""
elif [ $HOW = strace ]; then
  strace -f -c -w -p $PID -o $R/strace.txt & TR=$!
else
  perf record -g -F 999 -p $PID -o /var/tmp/perf-push-$TAG.data & TR=$!
fi
sleep 1
s=$(date +%s.%N); $U $BIN sync $R/a --timeout 1800; e=$(date +%s.%N); echo "sync A: $(echo "$e - $s" | bc) s"
[ -n "$TR" ] && { kill -INT $TR; wait $TR 2>/dev/null; }
echo "daemon A CPU from the cp to the push's end: $(( $(cpu $PID) - ca )) ticks"
TR=""
if [ $HOW = pull-perf ]; then
  perf record -g -F 999 -p $PIDB -o /var/tmp/perf-pull-$TAG.data & TR=$!
  sleep 1
fi
s=$(date +%s.%N); $U $BIN sync $R/b --timeout 1800; $U cmp $R/src.bin $R/b/f.bin; e=$(date +%s.%N); echo "sync B + cmp: $(echo "$e - $s" | bc) s"
[ -n "$TR" ] && { kill -INT $TR; wait $TR 2>/dev/null; }
echo "daemon B CPU from its mount to the read's end: $(cpu $PIDB) ticks"
du -sh $R/hub.sqlite*
sqlite3 $R/hub.sqlite "SELECT length(\"check\"), count(*) FROM objects GROUP BY 1" 2>&1
for m in a b; do $U $BIN unmount $R/$m; done
[ $HOW = strace ] && head -30 $R/strace.txt
