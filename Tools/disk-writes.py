#!/usr/bin/env python3
"""Counts what atomic saves in FOLDER ask of the disk under BACKING (a path on the disk that
holds the folder's bytes: for a mount, its state folder), from the kernel's counters of that
block device (/sys/dev/block/MAJOR:MINOR/stat): write requests, kibibytes written, flushes and
discards per save. A save is the bench's: a temporary file created, 4 KiB written, fsync, close,
rename over the document. Nothing else should write to that disk during the run.

Usage: Tools/disk-writes.py FOLDER BACKING [SAVES]   (default 2,000 saves after 600 unmeasured)
"""

import os
import sys
import time

WARM = 600


def counters(device):
    with open(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}/stat") as f:
        fields = [int(x) for x in f.read().split()]
    # Documentation/admin-guide/iostats.rst: writes completed, sectors written, discards
    # completed, flushes completed.
    return {"writes": fields[4], "KiB": fields[6] / 2, "discards": fields[11],
            "flushes": fields[15]}


def saves(folder, count):
    document = os.path.join(folder, "document.txt")
    temporary = os.path.join(folder, ".document.txt.tmp")
    data = os.urandom(4096)
    for _ in range(count):
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        os.rename(temporary, document)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.strip())
    folder, backing = os.path.join(sys.argv[1], "disk-writes"), sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) == 4 else 2000
    device = os.stat(backing).st_dev
    os.makedirs(folder, exist_ok=True)
    saves(folder, WARM)
    # What the warm-up left dirty goes to the disk before the count starts.
    os.sync()
    time.sleep(1)
    before = counters(device)
    start = time.perf_counter()
    saves(folder, count)
    seconds = time.perf_counter() - start
    after = counters(device)
    per_save = {key: (after[key] - before[key]) / count for key in before}
    print(f"{sys.argv[1]}: {seconds / count * 1e6:.0f} µs a save; per save "
          + ", ".join(f"{key} {value:.2f}" for key, value in per_save.items()))


if __name__ == "__main__":
    main()
