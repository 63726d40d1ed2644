#!/usr/bin/env python3
"""Large-file sync figures for docsync, alone and quicker than bench-sync.py.

- push: a large file (1 GiB by default) copied into mount A until `docsync sync A` returns;
- pull: then until `docsync sync B` returns and B's copy reads back equal (`cmp`);
- peak RSS (VmHWM) of both daemons;
- initial sync: a new device mounts a hub that holds the same large file, until its
  `docsync sync` returns, against `rsync -a` of the same file between two local folders.

Runs in its own folder (--root), so it can run beside other benches and tests. Prints one line
per figure and, with --json, writes them to a file.
"""

import argparse
import json
import os
import shutil
import subprocess
import time


def run(*argv):
    subprocess.run(argv, check=True)


def write_large_file(path, size_mib):
    with open(path, "wb") as f:
        block = os.urandom(1 << 20)
        for index in range(size_mib):
            f.write(block[:-8] + index.to_bytes(8, "little"))


def peak_rss_mib(state):
    with open(f"{state}/docsync.pid") as f:
        pid = f.read().strip()
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def timed(*commands):
    run("sync")
    start = time.monotonic()
    for command in commands:
        run(*command)
    return time.monotonic() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--docsync", required=True)
    parser.add_argument("--root", default="/var/tmp/docsync-bench-large")
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--json")
    args = parser.parse_args()
    docsync, root, mib = args.docsync, args.root, args.mib

    for name in ("a", "b", "c"):
        subprocess.run(["fusermount3", "-uz", f"{root}/{name}"], stderr=subprocess.DEVNULL)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    source = f"{root}/source/large.bin"
    os.makedirs(os.path.dirname(source))
    write_large_file(source, mib)
    hub = f"{root}/hub.sqlite"
    figures = {"mib": mib}
    mounted = []
    try:
        for name in ("a", "b"):
            os.makedirs(f"{root}/{name}")
            run(docsync, "mount", f"{root}/{name}", "--state", f"{root}/state-{name}",
                "--hub", hub, "--device", name)
            mounted.append(f"{root}/{name}")
        push = timed(["cp", source, f"{root}/a/large.bin"],
                     [docsync, "sync", f"{root}/a", "--timeout", "1800"])
        pull = timed([docsync, "sync", f"{root}/b", "--timeout", "1800"],
                     ["cmp", source, f"{root}/b/large.bin"])
        figures["push_mib_s"] = mib / push
        figures["pull_mib_s"] = mib / pull
        figures["rss_a_mib"] = peak_rss_mib(f"{root}/state-a")
        figures["rss_b_mib"] = peak_rss_mib(f"{root}/state-b")

        rsync = timed(["rsync", "-a", f"{root}/source/", f"{root}/rsync-copy/"], ["sync"])
        shutil.rmtree(f"{root}/rsync-copy")
        os.makedirs(f"{root}/c")
        run("sync")
        start = time.monotonic()
        run(docsync, "mount", f"{root}/c", "--state", f"{root}/state-c", "--hub", hub,
            "--device", "c")
        mounted.append(f"{root}/c")
        run(docsync, "sync", f"{root}/c", "--timeout", "1800")
        initial = time.monotonic() - start
        run("cmp", source, f"{root}/c/large.bin")
        figures["rsync_s"] = rsync
        figures["initial_s"] = initial
        figures["initial_ratio"] = rsync / initial
        figures["rss_c_mib"] = peak_rss_mib(f"{root}/state-c")
    finally:
        for mount in mounted:
            subprocess.run([docsync, "unmount", mount])
    shutil.rmtree(root, ignore_errors=True)
    print(f"{mib} MiB: push {figures['push_mib_s']:.0f} MiB/s, pull {figures['pull_mib_s']:.0f} "
          f"MiB/s, initial sync {figures['initial_s']:.2f} s vs rsync -a {figures['rsync_s']:.2f} s "
          f"= {figures['initial_ratio']:.2f} of its speed; VmHWM A {figures['rss_a_mib']:.0f} MiB, "
          f"B {figures['rss_b_mib']:.0f} MiB, C {figures['rss_c_mib']:.0f} MiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
