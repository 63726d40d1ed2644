#!/usr/bin/env python3
"""What content in chunks moves and stores (issue 39): two mounts (A writes, B reads) on one hub.

Rows, each from `docsync status --json` (contentBytesSent on A, contentBytesReceived on B:
bytes of content as stored on the hub, chunks compressed, blobs whole) and `du`:

- edits: one byte overwritten, and one byte inserted, at random offsets of a large file
  (1 GiB, --quick 256 MiB), 20 times each (--quick 5): bytes up and down per edit, median and
  worst;
- history: 100 versions (--quick 20) of a 100 MiB file, 4 KiB changed in place each time, then
  as many with 4 KiB inserted: the hub's size and B's state folder against 100 MiB;
- copy, rename and revert of the large file: bytes moved for each;
- text: a corpus of text documents (100 MiB, --quick 20 MiB; from /usr/share and /usr/include,
  each file once) copied into A: bytes pushed against the corpus's size.

The hub is a SQLite file, or with --postgres ADMIN-URL a new database on that server (its size
is pg_database_size). Prints a table and writes JSON into --results.
"""

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROOT = "/var/tmp/docsync-bench-chunks"


def run(*argv, **kwargs):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kwargs).stdout


def du_bytes(path):
    return int(run("du", "-sb", path).split()[0])


class Mounts:
    def __init__(self, docsync, hub, env):
        self.docsync = docsync
        self.hub = hub
        self.env = env
        self.points = {}

    def mount(self, name):
        point = f"{ROOT}/{name}"
        os.makedirs(point)
        run(self.docsync, "mount", point, "--state", f"{ROOT}/state-{name}", "--hub", self.hub,
            "--device", name, env=self.env)
        self.points[name] = point
        return point

    def sync(self, *names):
        for name in names:
            run(self.docsync, "sync", self.points[name], "--timeout", "600", env=self.env)

    def moved(self):
        """Bytes A has sent and B has received so far."""
        sent = json.loads(run(self.docsync, "status", self.points["a"], "--json",
                              env=self.env)).get("contentBytesSent", 0)
        received = json.loads(run(self.docsync, "status", self.points["b"], "--json",
                                  env=self.env)).get("contentBytesReceived", 0)
        return sent, received

    def unmount_all(self):
        for point in self.points.values():
            subprocess.run([self.docsync, "unmount", point], env=self.env)


def write_random(path, size):
    with open("/dev/urandom", "rb") as source, open(path, "wb") as target:
        left = size
        while left:
            block = source.read(min(left, 8 << 20))
            target.write(block)
            left -= len(block)


def overwrite_byte(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        old = f.read(1)
        f.seek(offset)
        f.write(bytes([old[0] ^ 0xFF]))


def insert_bytes(path, offset, data):
    """An editor's save: a new file with the bytes inserted, renamed over the old one."""
    temporary = path + ".new"
    with open(path, "rb") as source, open(temporary, "wb") as target:
        left = offset
        while left:
            block = source.read(min(left, 8 << 20))
            target.write(block)
            left -= len(block)
        target.write(data)
        shutil.copyfileobj(source, target, 8 << 20)
    os.rename(temporary, path)


def edit_rows(mounts, size, count, figures):
    a, b = mounts.points["a"], mounts.points["b"]
    path = f"{a}/large.bin"
    write_random(path, size)
    mounts.sync("a", "b")
    rng = random.Random(39)
    for kind in ("overwrite", "insert"):
        ups, downs = [], []
        for _ in range(count):
            before = mounts.moved()
            offset = rng.randrange(size)
            if kind == "overwrite":
                overwrite_byte(path, offset)
            else:
                insert_bytes(path, offset, b"+")
            mounts.sync("a", "b")
            after = mounts.moved()
            ups.append(after[0] - before[0])
            downs.append(after[1] - before[1])
        run("cmp", path, f"{b}/large.bin")
        figures[f"edit_{kind}"] = {
            "up_median": statistics.median(ups), "up_worst": max(ups),
            "down_median": statistics.median(downs), "down_worst": max(downs), "edits": count}
        print(f"  1-byte {kind} of {size >> 20} MiB, {count} edits: up median "
              f"{statistics.median(ups) / 1024:.0f} KiB, worst {max(ups) / 1024:.0f} KiB; "
              f"down median {statistics.median(downs) / 1024:.0f} KiB, worst "
              f"{max(downs) / 1024:.0f} KiB")


def copy_rename_revert(mounts, figures):
    a, b = mounts.points["a"], mounts.points["b"]
    path = f"{a}/large.bin"
    rows = {}
    kept = f"{ROOT}/kept.bin"
    shutil.copyfile(path, kept)
    for kind in ("copy", "rename", "revert"):
        before = mounts.moved()
        if kind == "copy":
            shutil.copyfile(path, f"{a}/copy.bin")
        elif kind == "rename":
            os.rename(f"{a}/copy.bin", f"{a}/renamed.bin")
        else:
            overwrite_byte(path, 12345)
            mounts.sync("a", "b")
            before = mounts.moved()
            shutil.copyfile(kept, path)
        mounts.sync("a", "b")
        after = mounts.moved()
        rows[kind] = {"up": after[0] - before[0], "down": after[1] - before[1]}
    run("cmp", path, f"{b}/large.bin")
    figures["copy_rename_revert"] = rows
    print("  " + "; ".join(f"{kind}: up {row['up'] / 1024:.1f} KiB, down "
                           f"{row['down'] / 1024:.1f} KiB" for kind, row in rows.items()))


def history_rows(mounts, versions, hub_size, figures):
    a, b = mounts.points["a"], mounts.points["b"]
    size = 100 << 20
    rng = random.Random(100)
    for kind in ("in place", "inserted"):
        path = f"{a}/history-{kind.replace(' ', '-')}.bin"
        hub_before = hub_size()
        state_before = du_bytes(f"{ROOT}/state-b")
        write_random(path, size)
        for _ in range(versions - 1):
            mounts.sync("a", "b")
            offset = rng.randrange(size - 4096)
            if kind == "in place":
                with open(path, "r+b") as f:
                    f.seek(offset)
                    f.write(os.urandom(4096))
            else:
                insert_bytes(path, offset, os.urandom(4096))
        mounts.sync("a", "b")
        hub = hub_size() - hub_before
        state = du_bytes(f"{ROOT}/state-b") - state_before
        figures[f"history_{kind.replace(' ', '_')}"] = {
            "versions": versions, "hub_bytes": hub, "hub_ratio": hub / size,
            "state_b_bytes": state, "state_b_ratio": state / size}
        print(f"  {versions} versions of 100 MiB, 4 KiB {kind} each: hub grew "
              f"{hub / size:.2f}x 100 MiB, B's state {state / size:.2f}x")


def text_corpus(limit):
    """Text files from the system, each once, up to `limit` bytes."""
    files, total = [], 0
    for top in ("/usr/share/doc", "/usr/include", "/usr/share/perl", "/usr/lib/python3",
                "/usr/share/man"):
        for folder, _, names in os.walk(top):
            for name in sorted(names):
                path = os.path.join(folder, name)
                if not os.path.isfile(path) or os.path.islink(path):
                    continue
                if not name.endswith((".h", ".txt", ".py", ".pm", ".pl", ".html", ".md",
                                      "copyright", "changelog", ".c", ".rst")):
                    continue
                size = os.path.getsize(path)
                if size == 0 or total + size > limit:
                    continue
                files.append((path, size))
                total += size
                if total >= limit * 0.98:
                    return files, total
    return files, total


def text_row(mounts, limit, figures):
    a = mounts.points["a"]
    files, total = text_corpus(limit)
    before = mounts.moved()
    for index, (path, _) in enumerate(files):
        folder = f"{a}/text/{index // 500}"
        os.makedirs(folder, exist_ok=True)
        shutil.copyfile(path, f"{folder}/{index}-{os.path.basename(path)}")
    mounts.sync("a", "b")
    after = mounts.moved()
    pushed = after[0] - before[0]
    figures["text_corpus"] = {"files": len(files), "bytes": total, "pushed": pushed,
                              "ratio": pushed / total}
    print(f"  text corpus of {len(files)} files, {total / (1 << 20):.0f} MiB: pushed "
          f"{pushed / (1 << 20):.1f} MiB ({100 * pushed / total:.0f} %)")


def main():
    global ROOT
    parser = argparse.ArgumentParser()
    parser.add_argument("--docsync", required=True)
    parser.add_argument("--results", default="bench-results")
    parser.add_argument("--root", default=ROOT)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--postgres", metavar="ADMIN-URL")
    parser.add_argument("--postgres-ca", metavar="CA")
    args = parser.parse_args()
    ROOT = args.root
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    large = (256 if args.quick else 1024) << 20
    edits = 5 if args.quick else 20
    versions = 20 if args.quick else 100
    text = (20 if args.quick else 100) << 20
    for name in ("a", "b"):
        subprocess.run(["fusermount3", "-uz", f"{ROOT}/{name}"], stderr=subprocess.DEVNULL)
    shutil.rmtree(ROOT, ignore_errors=True)
    os.makedirs(ROOT)
    env = dict(os.environ)
    if args.postgres:
        import importlib
        sync = importlib.import_module("bench-sync")
        hub = sync.postgres_hub(args.docsync, args.postgres, args.postgres_ca)
        env = sync.ENV
        database = urllib.parse.urlsplit(hub).path.lstrip("/")

        def hub_size():
            return int(run("psql", args.postgres, "-Atc",
                           f"SELECT pg_database_size('{database}')").strip())
    else:
        hub = f"{ROOT}/hub/hub.sqlite"
        os.makedirs(f"{ROOT}/hub")

        def hub_size():
            return du_bytes(f"{ROOT}/hub")
    figures = {"hub": "postgres" if args.postgres else "sqlite",
               "user": run("id", "-un").strip()}
    print(f"\ncontent in chunks through the {figures['hub']} hub, as {figures['user']}")
    mounts = Mounts(args.docsync, hub, env)
    try:
        mounts.mount("a")
        mounts.mount("b")
        edit_rows(mounts, large, edits, figures)
        copy_rename_revert(mounts, figures)
        history_rows(mounts, versions, hub_size, figures)
        text_row(mounts, text, figures)
    finally:
        mounts.unmount_all()
    os.makedirs(args.results, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    with open(os.path.join(args.results,
                           f"chunks-{figures['hub']}-{stamp}-{figures['user']}.json"), "w") as f:
        json.dump(figures, f, indent=2)
    shutil.rmtree(ROOT, ignore_errors=True)


if __name__ == "__main__":
    main()
