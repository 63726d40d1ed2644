#!/usr/bin/env python3
"""Runs file-system workloads on several targets and prints ratios against a plain folder.

A target is a folder plus how to set it up, remount it (for cold reads) and tear it down.
Today: (a) a plain folder, (b) libfuse's passthrough_ll (the cost of FUSE itself, through
Tools/passthrough-mount) and (d) a docsync mount. Room is left for (c) rclone: add a Target
subclass and list it in make_targets().
A workload is a function of (target, size) returning seconds: add one to WORKLOADS.
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

BENCH_ROOT = "/var/tmp/docsync-bench"  # not /tmp: often tmpfs, which would flatter plain


class Target:
    name = "plain"
    label = "(a) plain folder"

    def __init__(self, base):
        self.base = base
        self.root = os.path.join(base, "root")

    def setup(self):
        os.makedirs(self.root, exist_ok=True)

    def remount(self):
        pass

    def teardown(self):
        pass


class DocsyncTarget(Target):
    name = "docsync"
    label = "(d) docsync"

    def __init__(self, base, binary):
        super().__init__(base)
        self.binary = binary
        self.state = os.path.join(base, "state")

    def setup(self):
        os.makedirs(self.root, exist_ok=True)
        os.makedirs(self.state, exist_ok=True)
        subprocess.run(self.mount_command(), check=True)

    def mount_command(self):
        # A hub of its own: the default hub is shared by every mount of the user.
        hub = os.path.join(self.base, "hub.sqlite")
        return [self.binary, "mount", self.root, "--state", self.state, "--hub", hub]

    def remount(self):
        subprocess.run([self.binary, "unmount", self.root], check=True)
        subprocess.run(self.mount_command(), check=True)

    def teardown(self):
        if subprocess.run([self.binary, "unmount", self.root]).returncode != 0:
            subprocess.run(["fusermount3", "-uz", self.root])


class PassthroughTarget(DocsyncTarget):
    """Same command-line contract as docsync (Tools/passthrough-mount), so the same mount steps."""

    name = "passthrough_ll"
    label = "(b) passthrough_ll"

    def mount_command(self):
        return [self.binary, "mount", self.root, "--state", self.state]


def drop_caches():
    """Cold reads need the page cache empty; a container may forbid it, which is reported."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def timed(function):
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def seq_write(target, size):
    block = os.urandom(1 << 20)
    path = os.path.join(target.root, "seq.bin")

    def work():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for _ in range(size["seq_mib"]):
            os.write(fd, block)
        os.fsync(fd)
        os.close(fd)

    return timed(work)


def read_all(path):
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass


def seq_read_cached(target, size):
    path = os.path.join(target.root, "seq.bin")
    read_all(path)  # warm
    return timed(lambda: read_all(path))


def seq_read_cold(target, size):
    target.remount()
    if not drop_caches():
        print(f"  note: could not drop caches for {target.name}; cold read is warm", file=sys.stderr)
    return timed(lambda: read_all(os.path.join(target.root, "seq.bin")))


def small_files_create(target, size):
    folder = os.path.join(target.root, "small")
    os.makedirs(folder, exist_ok=True)
    data = os.urandom(4096)

    def work():
        for i in range(size["files"]):
            with open(os.path.join(folder, f"f{i:05d}"), "wb") as f:
                f.write(data)

    return timed(work)


def small_files_stat(target, size):
    folder = os.path.join(target.root, "small")
    return timed(lambda: [os.stat(os.path.join(folder, f"f{i:05d}")) for i in range(size["files"])])


def untar_usr_include(target, size):
    tarball = size["tarball"]
    folder = os.path.join(target.root, "include")
    os.makedirs(folder, exist_ok=True)
    return timed(lambda: subprocess.run(["tar", "-C", folder, "-xf", tarball], check=True))


WORKLOADS = [
    ("seq write (fsync)", seq_write),
    ("seq read cached", seq_read_cached),
    ("seq read cold", seq_read_cold),
    ("create 4 KiB files", small_files_create),
    ("stat files", small_files_stat),
    ("untar /usr/include", untar_usr_include),
]


def make_targets(args):
    targets = [Target(os.path.join(BENCH_ROOT, "plain"))]
    if args.passthrough:
        targets.append(PassthroughTarget(os.path.join(BENCH_ROOT, "passthrough"), args.passthrough))
    if args.docsync:
        targets.append(DocsyncTarget(os.path.join(BENCH_ROOT, "docsync"), args.docsync))
    return targets


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--docsync", help="path of the docsync binary")
    parser.add_argument("--passthrough", help="path of Tools/passthrough-mount (passthrough_ll)")
    parser.add_argument("--results", default="bench-results")
    parser.add_argument("--quick", action="store_true", help="a smaller run")
    args = parser.parse_args()

    if os.path.exists(BENCH_ROOT):
        for leftover in ("docsync", "passthrough"):
            subprocess.run(["fusermount3", "-uz", os.path.join(BENCH_ROOT, leftover, "root")],
                           stderr=subprocess.DEVNULL)
        shutil.rmtree(BENCH_ROOT)
    os.makedirs(BENCH_ROOT)
    tarball = os.path.join(BENCH_ROOT, "usr-include.tar")
    with tarfile.open(tarball, "w") as tar:
        tar.add("/usr/include", arcname="include")
    size = {
        "seq_mib": 64 if args.quick else 1024,
        "files": 1000 if args.quick else 10000,
        "tarball": tarball,
    }

    figures = {}
    for target in make_targets(args):
        print(f"{target.label} ...", file=sys.stderr)
        target.setup()
        try:
            figures[target.name] = {name: work(target, size) for name, work in WORKLOADS}
        finally:
            target.teardown()

    names = list(figures)
    print(f"\n{'workload':<22}" + "".join(f"{n:>16}" for n in names) + "   (time / plain)")
    for workload, _ in WORKLOADS:
        base = figures["plain"][workload]
        cells = "".join(f"{figures[n][workload] / base:>15.2f}x" for n in names)
        print(f"{workload:<22}{cells}   plain {base:.3f} s")

    os.makedirs(args.results, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = os.path.join(args.results, f"{stamp}.json")
    with open(out, "w") as f:
        json.dump({"quick": args.quick, "sizes": {k: v for k, v in size.items() if k != "tarball"},
                   "seconds": figures}, f, indent=2)
    print(f"\nraw figures: {out}")
    shutil.rmtree(BENCH_ROOT, ignore_errors=True)


if __name__ == "__main__":
    main()
