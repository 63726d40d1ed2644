#!/usr/bin/env python3
"""Whether a mount stays responsive while a large file syncs: two mounts (A and B) on one SQLite
hub; while B pulls and applies a large file (1 GiB; --quick 256 MiB), and while A takes in and
pushes one, a loop on that mount does `stat` of a small file, a read of it and a listing of the
root, and the same on a plain local folder in the same loop. Prints p50, p99 and max of each
operation, mount against plain folder; the aim is p99 under 50 ms and no operation over 250 ms.
Writes JSON beside the other figures.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

ROOT = "/var/tmp/docsync-bench-responsiveness"


def run(*argv):
    subprocess.run(argv, check=True)


def write_large_file(path, size_mib):
    with open(path, "wb") as f:
        block = os.urandom(1 << 20)
        for index in range(size_mib):
            f.write(block[:-8] + index.to_bytes(8, "little"))


def probe(folders, stop):
    """Until stop is set: stat, read and list in each folder in turn; latencies in seconds."""
    samples = {folder: {"stat": [], "read": [], "ls": []} for folder in folders}
    while not stop.is_set():
        for folder in folders:
            small = f"{folder}/small.txt"
            start = time.monotonic()
            os.stat(small)
            middle = time.monotonic()
            with open(small, "rb") as f:
                f.read()
            read_done = time.monotonic()
            os.listdir(folder)
            end = time.monotonic()
            samples[folder]["stat"].append(middle - start)
            samples[folder]["read"].append(read_done - middle)
            samples[folder]["ls"].append(end - read_done)
        time.sleep(0.005)
    return samples


def percentile(values, fraction):
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(fraction * (len(ordered) - 1)))))
    return ordered[index]


def measured(work, folders):
    """Runs work() while probing folders; returns the probe's samples and work's seconds."""
    stop = threading.Event()
    result = {}
    thread = threading.Thread(target=lambda: result.update(samples=probe(folders, stop)))
    thread.start()
    start = time.monotonic()
    try:
        work()
    finally:
        seconds = time.monotonic() - start
        stop.set()
        thread.join()
    return result["samples"], seconds


def summary(samples):
    figures = {}
    for operation, values in samples.items():
        figures[operation] = {
            "count": len(values),
            "p50_ms": 1000 * percentile(values, 0.5),
            "p99_ms": 1000 * percentile(values, 0.99),
            "max_ms": 1000 * max(values),
        }
    every = [value for values in samples.values() for value in values]
    figures["all"] = {
        "count": len(every),
        "p50_ms": 1000 * percentile(every, 0.5),
        "p99_ms": 1000 * percentile(every, 0.99),
        "max_ms": 1000 * max(every),
        "over_250_ms": sum(1 for value in every if value > 0.25),
    }
    return figures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--docsync", required=True)
    parser.add_argument("--results", default="bench-results")
    parser.add_argument("--quick", action="store_true", help="a 256 MiB file, not 1 GiB")
    parser.add_argument("--large-mib", type=int, help="the large file's size in MiB")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    large_mib = args.large_mib or (256 if args.quick else 1024)

    for name in ("a", "b"):
        subprocess.run(["fusermount3", "-uz", f"{ROOT}/{name}"], stderr=subprocess.DEVNULL)
    shutil.rmtree(ROOT, ignore_errors=True)
    os.makedirs(f"{ROOT}/plain")
    hub = f"{ROOT}/hub.sqlite"
    a, b, plain = f"{ROOT}/a", f"{ROOT}/b", f"{ROOT}/plain"
    mounted = []
    try:
        for name, mount in (("a", a), ("b", b)):
            os.makedirs(mount)
            run(args.docsync, "mount", mount, "--state", f"{ROOT}/state-{name}", "--hub", hub,
                "--device", name)
            mounted.append(mount)
        for folder in (a, plain):
            for index in range(20):
                with open(f"{folder}/note-{index}.txt", "w") as f:
                    f.write(f"note {index}\n")
            with open(f"{folder}/small.txt", "w") as f:
                f.write("a small file\n")
        run(args.docsync, "sync", a)
        run(args.docsync, "sync", b)
        source = f"{ROOT}/large-source.bin"
        write_large_file(source, large_mib)

        def push():
            run("cp", source, f"{a}/large.bin")
            run(args.docsync, "sync", a, "--timeout", "1800")

        def pull():
            run(args.docsync, "resume", b)
            run(args.docsync, "sync", b, "--timeout", "1800")

        # B waits while A pushes, so that each phase has one device at work.
        run(args.docsync, "pause", b)

        push_samples, push_seconds = measured(push, [a, plain])
        pull_samples, pull_seconds = measured(pull, [b, plain])
        run("cmp", source, f"{b}/large.bin")
    finally:
        for mount in mounted:
            subprocess.run([args.docsync, "unmount", mount])

    figures = {
        "large_file_mib": large_mib,
        "push": {"seconds": push_seconds, "mount": summary(push_samples[a]),
                 "plain": summary(push_samples[plain])},
        "pull": {"seconds": pull_seconds, "mount": summary(pull_samples[b]),
                 "plain": summary(pull_samples[plain])},
    }
    print(f"\nresponsiveness while a {large_mib} MiB file syncs (stat, read of a small file, "
          "ls of the root; ms)")
    for phase in ("pull", "push"):
        print(f"  while {'B pulls' if phase == 'pull' else 'A takes in and pushes'} "
              f"({figures[phase]['seconds']:.1f} s):")
        for where in ("mount", "plain"):
            line = ", ".join(
                f"{operation} p50 {values['p50_ms']:.2f} p99 {values['p99_ms']:.1f} "
                f"max {values['max_ms']:.0f}"
                for operation, values in figures[phase][where].items() if operation != "all")
            every = figures[phase][where]["all"]
            print(f"    {where:5}: {line}; all p99 {every['p99_ms']:.1f} max {every['max_ms']:.0f} "
                  f"({every['count']} ops, {every['over_250_ms']} over 250 ms)")
    os.makedirs(args.results, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    with open(os.path.join(args.results, f"responsiveness-{stamp}.json"), "w") as f:
        json.dump(figures, f, indent=2)
    os.remove(source)


if __name__ == "__main__":
    main()
