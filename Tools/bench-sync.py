#!/usr/bin/env python3
"""Sync figures for docsync: two mounts (A and B) on one hub, SQLite or (--postgres) PostgreSQL.

- idle CPU: what each daemon uses while nothing happens on the mounts (20 s, --quick 5 s);
- propagation: from the close of an edit on A to the new content being readable on B,
  p50 and p99 over N edits (B polls the file every millisecond, as a reader would);
- conflict: from `docsync resume` of a device with a concurrent edit to both devices listing
  the conflict under .versions/;
- throughput: a large file (1 GiB, --quick 256 MiB) copied into A until A has pushed it
  (`cp` + `docsync sync A`), then until B has pulled and read it back (`docsync sync B` + read),
  against `cp` of the same file to a local folder; and the peak RSS (VmHWM) of both daemons;
- initial sync (SQLite hub only): a new device mounts a hub that holds 10k small files (4 KiB),
  then one that holds a 1 GiB file (--quick: 2k files, 256 MiB), until `docsync sync` returns,
  against `rsync -a` of the same data between two local folders.

With --postgres ADMIN-URL (a superuser URL), the hub is a new database on that server with an
account and a device role made by `docsync hub add-device`; --postgres-ca CA makes the devices
connect with sslmode=verify-full, else sslmode=disable.
Prints a table and writes JSON beside the file-system figures.
"""

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse

ROOT = "/var/tmp/docsync-bench-sync"
TOOLS = os.path.dirname(os.path.abspath(__file__))
ENV = dict(os.environ)


def run(*argv):
    subprocess.run(argv, check=True, env=ENV)


def postgres_hub(docsync, admin_url, ca):
    """A new database, account and device role on the server of admin_url: the device's URL."""
    admin = urllib.parse.urlsplit(admin_url)
    suffix = secrets.token_hex(6)
    database, role, password = f"bench_{suffix}", f"bench_dev_{suffix}", secrets.token_hex(16)
    subprocess.run(["psql", admin_url, "-X", "-q", "-v", "ON_ERROR_STOP=1",
                    "-c", f"CREATE DATABASE {database}"], check=True)
    tls = f"sslmode=verify-full&sslrootcert={ca}" if ca else "sslmode=disable"
    subprocess.run([docsync, "hub", "add-device",
                    admin._replace(path=f"/{database}", query=tls).geturl(), f"bench_{suffix}", role],
                   check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "DOCSYNC_DEVICE_PASSWORD": password})
    ENV["PGPASSWORD"] = password
    return f"postgres://{role}@{admin.hostname}:{admin.port or 5432}/{database}?{tls}"


def peak_rss_mib(state):
    with open(f"{state}/docsync.pid") as f:
        pid = f.read().strip()
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(state):
    """User plus system CPU time the daemon of a state folder has used so far."""
    with open(f"{state}/docsync.pid") as f:
        pid = f.read().strip()
    with open(f"/proc/{pid}/stat") as f:
        # The command name may hold spaces; the fields after it are fixed.
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu_percent(states, seconds):
    """Each daemon's CPU, as a percentage of one CPU, while nothing happens on the mounts."""
    time.sleep(2)  # the mounts' start-up work
    before = {name: cpu_seconds(state) for name, state in states.items()}
    time.sleep(seconds)
    return {name: 100 * (cpu_seconds(state) - before[name]) / seconds
            for name, state in states.items()}


def throughput(docsync, a, b, size_mib):
    """Seconds for cp to a local folder, for cp into A + push, and for B's pull + read."""
    source = f"{ROOT}/large-source.bin"
    write_large_file(source, size_mib)
    local = f"{ROOT}/local"
    os.makedirs(local, exist_ok=True)
    start = time.monotonic()
    run("cp", source, f"{local}/large.bin")
    run("sync")
    local_seconds = time.monotonic() - start
    start = time.monotonic()
    run("cp", source, f"{a}/large.bin")
    run(docsync, "sync", a, "--timeout", "1800")
    upload_seconds = time.monotonic() - start
    start = time.monotonic()
    run(docsync, "sync", b, "--timeout", "1800")
    run("cmp", source, f"{b}/large.bin")
    download_seconds = time.monotonic() - start
    os.remove(source)
    shutil.rmtree(local)
    return local_seconds, upload_seconds, download_seconds


def write_small_files(folder, count):
    os.makedirs(folder, exist_ok=True)
    for index in range(count):
        with open(f"{folder}/f{index:05d}", "wb") as f:
            f.write(os.urandom(4096))


def write_large_file(path, size_mib):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        block = os.urandom(1 << 20)
        for index in range(size_mib):
            f.write(block[:-8] + index.to_bytes(8, "little"))


def initial_sync(docsync, name, fill):
    """Seconds for `rsync -a` of a local folder that fill() wrote, and for a new device to mount
    a hub that a first device filled the same way, until its `docsync sync` returns."""
    base = f"{ROOT}/initial-{name}"
    source, copy = f"{base}/source", f"{base}/rsync-copy"
    fill(source)
    run("sync")
    start = time.monotonic()
    run("rsync", "-a", f"{source}/", f"{copy}/")
    run("sync")
    rsync_seconds = time.monotonic() - start
    shutil.rmtree(copy)
    hub = f"{base}/hub.sqlite"
    first, second = f"{base}/first", f"{base}/second"
    mounted = []
    try:
        os.makedirs(first)
        run(docsync, "mount", first, "--state", f"{base}/state-first", "--hub", hub,
            "--device", "first")
        mounted.append(first)
        run("cp", "-a", f"{source}/.", first)
        run(docsync, "sync", first, "--timeout", "1800")
        os.makedirs(second)
        start = time.monotonic()
        run(docsync, "mount", second, "--state", f"{base}/state-second", "--hub", hub,
            "--device", "second")
        mounted.append(second)
        run(docsync, "sync", second, "--timeout", "1800")
        docsync_seconds = time.monotonic() - start
        run("diff", "-r", "-q", "--exclude=.versions", source, second)
    finally:
        for mount in mounted:
            subprocess.run([docsync, "unmount", mount])
    shutil.rmtree(base, ignore_errors=True)
    return rsync_seconds, docsync_seconds


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
    parser.add_argument("--postgres", metavar="ADMIN-URL")
    parser.add_argument("--postgres-ca", metavar="CA")
    parser.add_argument("--quick", action="store_true", help="a 256 MiB large file, not 1 GiB")
    parser.add_argument("--large-mib", type=int, help="the large file's size in MiB")
    args = parser.parse_args()
    # SIGTERM ends the run like Ctrl-C does, through the finally blocks that unmount.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    large_mib = args.large_mib or (256 if args.quick else 1024)
    small_count = 2000 if args.quick else 10000

    subprocess.run(["fusermount3", "-uz", f"{ROOT}/a"], stderr=subprocess.DEVNULL)
    subprocess.run(["fusermount3", "-uz", f"{ROOT}/b"], stderr=subprocess.DEVNULL)
    shutil.rmtree(ROOT, ignore_errors=True)
    os.makedirs(ROOT)
    hub = postgres_hub(args.docsync, args.postgres, args.postgres_ca) if args.postgres else f"{ROOT}/hub.sqlite"
    hub_name = "PostgreSQL hub (loopback)" if args.postgres else "SQLite hub"
    mounts = {}
    for name in ("a", "b"):
        mounts[name] = f"{ROOT}/{name}"
        os.makedirs(mounts[name])
        run(args.docsync, "mount", mounts[name], "--state", f"{ROOT}/state-{name}",
            "--hub", hub, "--device", name)
    a, b = mounts["a"], mounts["b"]
    try:
        idle_seconds = 5 if args.quick else 20
        idle = idle_cpu_percent({name: f"{ROOT}/state-{name}" for name in mounts}, idle_seconds)
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

        local_s, upload_s, download_s = throughput(args.docsync, a, b, large_mib)
        rss = {name: peak_rss_mib(f"{ROOT}/state-{name}") for name in ("a", "b")}
    finally:
        for mount in (a, b):
            subprocess.run([args.docsync, "unmount", mount])

    initial = {}
    if not args.postgres:
        initial["small"] = initial_sync(
            args.docsync, "small", lambda folder: write_small_files(folder, small_count))
        initial["large"] = initial_sync(
            args.docsync, "large",
            lambda folder: write_large_file(f"{folder}/large.bin", large_mib))

    figures = {
        "propagation_p50_ms": 1000 * percentile(latencies, 0.5),
        "propagation_p99_ms": 1000 * percentile(latencies, 0.99),
        "propagation_edits": len(latencies),
        "idle_cpu_percent_a": idle["a"],
        "idle_cpu_percent_b": idle["b"],
        "reconnect_to_conflict_p50_ms": 1000 * percentile(conflicts, 0.5),
        "reconnect_to_conflict_max_ms": 1000 * max(conflicts),
        "hub": "postgres" if args.postgres else "sqlite",
        "large_file_mib": large_mib,
        "large_cp_local_mib_s": large_mib / local_s,
        "large_upload_a_mib_s": large_mib / upload_s,
        "large_download_b_mib_s": large_mib / download_s,
        "peak_rss_a_mib": rss["a"],
        "peak_rss_b_mib": rss["b"],
    }
    print(f"\nsync through the {hub_name} (two mounts on one machine)")
    print(f"  idle CPU over {idle_seconds} s: A {idle['a']:.2f}%, B {idle['b']:.2f}% of one CPU")
    print(f"  propagation close-on-A -> readable-on-B, {len(latencies)} edits: "
          f"p50 {figures['propagation_p50_ms']:.0f} ms, p99 {figures['propagation_p99_ms']:.0f} ms")
    print(f"  reconnect -> conflict listed on both, {len(conflicts)} rounds: "
          f"p50 {figures['reconnect_to_conflict_p50_ms']:.0f} ms, "
          f"max {figures['reconnect_to_conflict_max_ms']:.0f} ms")
    print(f"  {large_mib} MiB file: cp to a local folder "
          f"{figures['large_cp_local_mib_s']:.0f} MiB/s; cp into A + push "
          f"{figures['large_upload_a_mib_s']:.0f} MiB/s; B pull + read "
          f"{figures['large_download_b_mib_s']:.0f} MiB/s")
    print(f"  peak RSS (VmHWM): A {rss['a']:.0f} MiB, B {rss['b']:.0f} MiB")
    for kind, what in (("small", f"{small_count} files of 4 KiB"), ("large", f"{large_mib} MiB")):
        if kind not in initial:
            continue
        rsync_s, docsync_s = initial[kind]
        figures[f"initial_{kind}_rsync_s"] = rsync_s
        figures[f"initial_{kind}_docsync_s"] = docsync_s
        print(f"  initial sync of {what} onto a new device: docsync {docsync_s:.2f} s, "
              f"rsync -a {rsync_s:.2f} s, speed {rsync_s / docsync_s:.2f} of rsync's")
    os.makedirs(args.results, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    kind = "sync-postgres" if args.postgres else "sync"
    with open(os.path.join(args.results, f"{kind}-{stamp}.json"), "w") as f:
        json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
