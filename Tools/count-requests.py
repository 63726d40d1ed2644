#!/usr/bin/env python3
"""Counts the FUSE requests that each of Tools/bench's workloads makes, at small sizes, in the
--fuse-debug log of a docsync mount (every request on /dev/fuse). Run it as the user whose
figures you want: as root, FUSE passthrough takes reads and writes off the count.

Usage: Tools/count-requests.py DOCSYNC-BINARY FOLDER [mount options...]   (FOLDER must not exist)
Prints one line per workload: name, requests, requests per operation, requests by opcode.
"""

import collections
import os
import re
import subprocess
import sys
import tarfile
import time

FILES = 100
SAVES = 10
SEQ_MIB = 16


def main():
    binary, base, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    root, state = os.path.join(base, "mnt"), os.path.join(base, "state")
    os.makedirs(root)
    os.makedirs(state, mode=0o700)
    tarball = os.path.join(base, "netfilter.tar")
    with tarfile.open(tarball, "w") as tar:
        tar.add("/usr/include/linux/netfilter", arcname="include")
    subprocess.run([binary, "mount", root, "--state", state, "--hub",
                    os.path.join(base, "hub.sqlite"), "--fuse-debug", "--no-io-uring"] + extra,
                   check=True)
    log = os.path.join(state, "docsync.log")
    opcode = re.compile(r"opcode: (\w+) ")

    def opcodes():
        with open(log, errors="replace") as f:
            return [m.group(1) for m in map(opcode.search, f) if m]

    small = os.path.join(root, "small")
    include = os.path.join(root, "include")
    git = ["git", "-C", os.path.join(include, "include"), "-c", "user.name=count",
           "-c", "user.email=count@localhost", "-c", "gc.auto=0"]
    seq = os.path.join(root, "seq.bin")

    def create():
        os.makedirs(small)
        data = os.urandom(4096)
        for i in range(FILES):
            fd = os.open(os.path.join(small, f"f{i:05d}"),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, data)
            os.close(fd)

    def stat():
        for i in range(FILES):
            os.stat(os.path.join(small, f"f{i:05d}"))

    def readdir():
        for _ in range(3):
            with os.scandir(small) as entries:
                sum(1 for entry in entries if entry.is_file(follow_symlinks=False))

    def untar():
        os.makedirs(include)
        subprocess.run(["tar", "-C", include, "-xf", tarball], check=True)

    def git_prepare():
        for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "include"],
                     ["status", "--porcelain"]):
            subprocess.run(git + step, check=True, stdout=subprocess.DEVNULL)

    def git_status():
        subprocess.run(git + ["status", "--porcelain"], check=True, stdout=subprocess.DEVNULL)

    def saves():
        folder = os.path.join(root, "saves")
        os.makedirs(folder)
        data = os.urandom(4096)
        temporary = os.path.join(folder, ".document.txt.tmp")
        for _ in range(SAVES):
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, data)
            os.fsync(fd)
            os.close(fd)
            os.rename(temporary, os.path.join(folder, "document.txt"))

    def seq_write():
        block = os.urandom(1 << 20)
        fd = os.open(seq, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for _ in range(SEQ_MIB):
            os.write(fd, block)
        os.fsync(fd)
        os.close(fd)

    def read_all():
        with open(seq, "rb", buffering=0) as f:
            while f.read(1 << 20):
                pass

    # (name or None for an uncounted step, work, operations it makes)
    workloads = [
        (f"create+write 4 KiB x{FILES}", create, FILES),
        (f"stat x{FILES}", stat, FILES),
        ("readdir x3", readdir, 3),
        ("untar linux/netfilter", untar, None),
        (None, git_prepare, None),
        ("git status", git_status, 1),
        (f"atomic save x{SAVES}", saves, SAVES),
        (f"seq write {SEQ_MIB}x1 MiB+fsync", seq_write, 1),
        (f"seq read {SEQ_MIB} MiB, first", read_all, 1),
        (f"seq read {SEQ_MIB} MiB, cached", read_all, 1),
    ]
    try:
        os.stat(root)
        for name, work, operations in workloads:
            # What the last step left (versions to record) is done before counting, and the
            # kernel's late requests (RELEASE, FORGET) land before the count is taken.
            subprocess.run([binary, "sync", root], check=True, stdout=subprocess.DEVNULL)
            time.sleep(0.5)
            before = len(opcodes())
            work()
            time.sleep(1.0)
            counts = collections.Counter(opcodes()[before:])
            if name is None:
                continue
            total = sum(counts.values())
            each = f"{total / operations:.1f}/op" if operations else ""
            detail = ", ".join(f"{op} {n}" for op, n in counts.most_common())
            print(f"{name:<28}{total:>6}  {each:<10}{detail}")
    finally:
        subprocess.run([binary, "unmount", root])


if __name__ == "__main__":
    main()
