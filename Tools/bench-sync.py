#!/usr/bin/env python3
"""Sync figures for docsync: two mounts (A and B) on one SQLite hub.

- propagation: from the close of an edit on A to the new content being readable on B,
  p50 and p99 over N edits (B polls the file every millisecond, as a reader would);
- conflict: from `docsync resume` of a device with a concurrent edit to both devices listing
  the conflict under .versions/.
Prints a table and writes JSON beside the file-system figures.
"""

import argparse
import json
import os
import shutil
import subprocess
import time

ROOT = "/var/tmp/docsync-bench-sync"


def run(*argv):
    subprocess.run(argv, check=True)


def wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return time.monotonic()
        time.sleep(0.001)
    raise TimeoutError("timed out")


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def percentile(values, fraction):
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(fraction * (len(ordered) - 1)))))
    return ordered[index]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--docsync", required=True)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--results", default="bench-results")
    args = parser.parse_args()

    subprocess.run(["fusermount3", "-uz", f"{ROOT}/a"], stderr=subprocess.DEVNULL)
    subprocess.run(["fusermount3", "-uz", f"{ROOT}/b"], stderr=subprocess.DEVNULL)
    shutil.rmtree(ROOT, ignore_errors=True)
    mounts = {}
    for name in ("a", "b"):
        mounts[name] = f"{ROOT}/{name}"
        os.makedirs(mounts[name])
        run(args.docsync, "mount", mounts[name], "--state", f"{ROOT}/state-{name}",
            "--hub", f"{ROOT}/hub.sqlite", "--device", name)
    a, b = mounts["a"], mounts["b"]
    try:
        latencies = []
        for edit in range(args.edits):
            content = f"edit {edit} {time.time()}\n".encode()
            with open(f"{a}/doc.txt", "wb") as f:
                f.write(content)
            closed = time.monotonic()
            arrived = wait_for(lambda: read(f"{b}/doc.txt") == content)
            latencies.append(arrived - closed)

        conflicts = []
        for round_ in range(5):
            run(args.docsync, "pause", b)
            with open(f"{a}/conflict-{round_}.txt", "w") as f:
                f.write("base\n")
            run(args.docsync, "resume", b)
            run(args.docsync, "sync", a)
            run(args.docsync, "sync", b)
            run(args.docsync, "pause", b)
            with open(f"{a}/conflict-{round_}.txt", "w") as f:
                f.write("from a\n")
            run(args.docsync, "sync", a)
            with open(f"{b}/conflict-{round_}.txt", "w") as f:
                f.write("from b\n")
            time.sleep(0.5)  # B records its edit locally after the quiet moment
            resumed = time.monotonic()
            run(args.docsync, "resume", b)
            folder = f".versions/conflict-{round_}.txt"
            done = wait_for(
                lambda: all(os.path.isdir(f"{m}/{folder}") and os.listdir(f"{m}/{folder}")
                            for m in (a, b)))
            conflicts.append(done - resumed)
    finally:
        for mount in (a, b):
            subprocess.run([args.docsync, "unmount", mount])

    figures = {
        "propagation_p50_ms": 1000 * percentile(latencies, 0.5),
        "propagation_p99_ms": 1000 * percentile(latencies, 0.99),
        "propagation_edits": len(latencies),
        "reconnect_to_conflict_p50_ms": 1000 * percentile(conflicts, 0.5),
        "reconnect_to_conflict_max_ms": 1000 * max(conflicts),
    }
    print("\nsync through the SQLite hub (two mounts on one machine)")
    print(f"  propagation close-on-A -> readable-on-B, {len(latencies)} edits: "
          f"p50 {figures['propagation_p50_ms']:.0f} ms, p99 {figures['propagation_p99_ms']:.0f} ms")
    print(f"  reconnect -> conflict listed on both, {len(conflicts)} rounds: "
          f"p50 {figures['reconnect_to_conflict_p50_ms']:.0f} ms, "
          f"max {figures['reconnect_to_conflict_max_ms']:.0f} ms")
    os.makedirs(args.results, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    with open(os.path.join(args.results, f"sync-{stamp}.json"), "w") as f:
        json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
