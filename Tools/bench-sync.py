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
- initial sync: a new device mounts a hub that holds 10k small files (4 KiB,
  in 100 folders), then one that holds a 1 GiB file (--quick: 2k files, 256 MiB), until
  `docsync sync` returns, against `rsync -a` of the same data between two local folders plus
  `sync`, with the CPU the new device's daemon used; and the first device's push of the same
  data (`cp -a` into its mount until `docsync sync` returns);
- unmount after many changes: from `docsync unmount` to the daemon's exit right after one
  quiet window of 10,000 renames, of a move of those files' folder, and of a git checkout that
  rewrites them (--quick: 2,000), each on a mount of its own with a SQLite hub.

Throughput and initial sync are medians of --rounds rounds (3 by default, as the targets are
stated); each round's figures are printed and kept in the JSON. Every initial-sync round of small
files gets a folder of its own, deleted only at the end: on a file system without a journal,
inode allocation is slow for minutes after thousands of files were deleted, and a round that
follows a deletion measures that. --only large, --only small or --only unmount runs just those
rows. --root puts everything in a folder of one's own, so an ordinary user can run it
(Tools/bench does, as the user people mount as). The daemons inherit the environment:
DOCSYNC_CONTENT=blobs (content as whole blobs, as before chunks) and DOCSYNC_ANNOUNCE=off (no
file notifications for sync's changes) measure those against the default.

With --postgres ADMIN-URL (a superuser URL), the hub is a new database on that server with an
account and a device role made by `docsync hub add-device` (each initial-sync round gets a
database of its own); --postgres-ca CA makes the devices
connect with sslmode=verify-full, else sslmode=disable.
Prints a table and writes JSON beside the file-system figures.
"""

import argparse
import json
import os
import pwd
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse

ROOT = "/var/tmp/docsync-bench-sync"  # --root replaces it
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


def throughput(docsync, a, b, size_mib, round_):
    """Seconds for cp to a local folder, for cp into A + push, and for B's pull + read. Each
    round copies a new file (new content), so nothing of an earlier round is reused."""
    source = f"{ROOT}/large-source.bin"
    write_large_file(source, size_mib)
    local = f"{ROOT}/local"
    os.makedirs(local, exist_ok=True)
    run("sync")
    start = time.monotonic()
    run("cp", source, f"{local}/large.bin")
    run("sync")
    local_seconds = time.monotonic() - start
    name = f"large-{round_}.bin"
    start = time.monotonic()
    run("cp", source, f"{a}/{name}")
    run(docsync, "sync", a, "--timeout", "1800")
    upload_seconds = time.monotonic() - start
    start = time.monotonic()
    run(docsync, "sync", b, "--timeout", "1800")
    run("cmp", source, f"{b}/{name}")
    download_seconds = time.monotonic() - start
    os.remove(source)
    shutil.rmtree(local)
    return local_seconds, upload_seconds, download_seconds


def write_small_files(folder, count):
    for index in range(count):
        sub = f"{folder}/d{index % 100:02d}"
        os.makedirs(sub, exist_ok=True)
        with open(f"{sub}/f{index:05d}", "wb") as f:
            f.write(os.urandom(4096))


def write_large_file(path, size_mib):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        block = os.urandom(1 << 20)
        for index in range(size_mib):
            f.write(block[:-8] + index.to_bytes(8, "little"))


def initial_sync(docsync, name, fill, keep, make_hub):
    """Seconds for `rsync -a` of a local folder that fill() wrote, for a new device to mount a
    hub that a first device filled the same way until its `docsync sync` returns, the CPU
    seconds the new device's daemon used, and the first device's push (`cp -a` into its mount
    until its `docsync sync` returns). make_hub(folder) gives the round's new hub. The folder
    stays when keep is true."""
    base = f"{ROOT}/initial-{name}"
    source, copy = f"{base}/source", f"{base}/rsync-copy"
    fill(source)
    run("sync")
    start = time.monotonic()
    run("rsync", "-a", f"{source}/", f"{copy}/")
    run("sync")
    rsync_seconds = time.monotonic() - start
    shutil.rmtree(copy)
    hub = make_hub(base)
    first, second = f"{base}/first", f"{base}/second"
    mounted = []
    try:
        os.makedirs(first)
        run(docsync, "mount", first, "--state", f"{base}/state-first", "--hub", hub,
            "--device", "first")
        mounted.append(first)
        run("sync")
        start = time.monotonic()
        run("cp", "-a", f"{source}/.", first)
        run(docsync, "sync", first, "--timeout", "1800")
        push_seconds = time.monotonic() - start
        run("sync")
        os.makedirs(second)
        start = time.monotonic()
        run(docsync, "mount", second, "--state", f"{base}/state-second", "--hub", hub,
            "--device", "second")
        mounted.append(second)
        run(docsync, "sync", second, "--timeout", "1800")
        docsync_seconds = time.monotonic() - start
        daemon_cpu = cpu_seconds(f"{base}/state-second")
        run("diff", "-r", "-q", "--exclude=.versions", source, second)
    finally:
        for mount in mounted:
            subprocess.run([docsync, "unmount", mount])
    if not keep:
        shutil.rmtree(base, ignore_errors=True)
    return rsync_seconds, docsync_seconds, daemon_cpu, push_seconds


def user_name():
    return pwd.getpwuid(os.getuid()).pw_name


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


def latencies_and_conflicts(docsync, a, b, edits):
    """Close-on-A to readable-on-B for each edit, and resume-to-conflict-listed rounds."""
    latencies = []
    for edit in range(edits):
        content = f"edit {edit} {time.time()}\n".encode()
        with open(f"{a}/doc.txt", "wb") as f:
            f.write(content)
        closed = time.monotonic()
        arrived = wait_for(lambda: read(f"{b}/doc.txt") == content)
        latencies.append(arrived - closed)

    conflicts = []
    for round_ in range(5):
        run(docsync, "pause", b)
        with open(f"{a}/conflict-{round_}.txt", "w") as f:
            f.write("base\n")
        run(docsync, "resume", b)
        run(docsync, "sync", a)
        run(docsync, "sync", b)
        run(docsync, "pause", b)
        with open(f"{a}/conflict-{round_}.txt", "w") as f:
            f.write("from a\n")
        run(docsync, "sync", a)
        with open(f"{b}/conflict-{round_}.txt", "w") as f:
            f.write("from b\n")
        time.sleep(0.5)  # B records its edit locally after the quiet moment
        resumed = time.monotonic()
        run(docsync, "resume", b)
        folder = f".versions/conflict-{round_}.txt"
        done = wait_for(
            lambda: all(os.path.isdir(f"{m}/{folder}") and os.listdir(f"{m}/{folder}")
                        for m in (a, b)))
        conflicts.append(done - resumed)
    return latencies, conflicts


def two_mounts(args, large_mib, figures):
    """Idle CPU, propagation, conflicts (unless --only) and large-file throughput on mounts A
    and B of one hub."""
    hub = (postgres_hub(args.docsync, args.postgres, args.postgres_ca) if args.postgres
           else f"{ROOT}/hub.sqlite")
    mounts = {}
    try:
        for name in ("a", "b"):
            mounts[name] = f"{ROOT}/{name}"
            os.makedirs(mounts[name])
            run(args.docsync, "mount", mounts[name], "--state", f"{ROOT}/state-{name}",
                "--hub", hub, "--device", name)
        a, b = mounts["a"], mounts["b"]
        if not args.only:
            idle_seconds = 5 if args.quick else 20
            idle = idle_cpu_percent({name: f"{ROOT}/state-{name}" for name in mounts},
                                    idle_seconds)
            latencies, conflicts = latencies_and_conflicts(args.docsync, a, b, args.edits)
            figures.update({
                "propagation_p50_ms": 1000 * percentile(latencies, 0.5),
                "propagation_p99_ms": 1000 * percentile(latencies, 0.99),
                "propagation_edits": len(latencies),
                "idle_cpu_percent_a": idle["a"],
                "idle_cpu_percent_b": idle["b"],
                "reconnect_to_conflict_p50_ms": 1000 * percentile(conflicts, 0.5),
                "reconnect_to_conflict_max_ms": 1000 * max(conflicts),
            })
            print(f"  idle CPU over {idle_seconds} s: A {idle['a']:.2f}%, B {idle['b']:.2f}% "
                  "of one CPU")
            print(f"  propagation close-on-A -> readable-on-B, {len(latencies)} edits: "
                  f"p50 {figures['propagation_p50_ms']:.0f} ms, "
                  f"p99 {figures['propagation_p99_ms']:.0f} ms")
            print(f"  reconnect -> conflict listed on both, {len(conflicts)} rounds: "
                  f"p50 {figures['reconnect_to_conflict_p50_ms']:.0f} ms, "
                  f"max {figures['reconnect_to_conflict_max_ms']:.0f} ms")
        if args.only in (None, "large"):
            transfers = [throughput(args.docsync, a, b, large_mib, round_)
                         for round_ in range(args.rounds)]
            rss = {name: peak_rss_mib(f"{ROOT}/state-{name}") for name in ("a", "b")}
            upload = [large_mib / t[1] for t in transfers]
            download = [large_mib / t[2] for t in transfers]
            figures.update({
                "large_file_mib": large_mib,
                "large_cp_local_mib_s": statistics.median(large_mib / t[0] for t in transfers),
                "large_upload_a_mib_s": statistics.median(upload),
                "large_download_b_mib_s": statistics.median(download),
                "large_upload_a_rounds_mib_s": upload,
                "large_download_b_rounds_mib_s": download,
                "peak_rss_a_mib": rss["a"],
                "peak_rss_b_mib": rss["b"],
            })
            print(f"  {large_mib} MiB file, medians of {args.rounds} rounds: cp to a local folder "
                  f"{figures['large_cp_local_mib_s']:.0f} MiB/s; cp into A + push "
                  f"{figures['large_upload_a_mib_s']:.0f} MiB/s ({rates_text(upload)}); "
                  f"B pull + read {figures['large_download_b_mib_s']:.0f} MiB/s "
                  f"({rates_text(download)})")
            print(f"  peak RSS (VmHWM): A {rss['a']:.0f} MiB, B {rss['b']:.0f} MiB")
    finally:
        for mount in mounts.values():
            subprocess.run([args.docsync, "unmount", mount])


def rates_text(rates):
    return ", ".join(f"{rate:.0f}" for rate in rates) + " MiB/s"


def initial_syncs(args, kind, what, fill, figures):
    """The initial-sync rounds of one kind, their medians into figures."""
    def make_hub(folder):
        if args.postgres:
            return postgres_hub(args.docsync, args.postgres, args.postgres_ca)
        return f"{folder}/hub.sqlite"

    # Small-file rounds keep their folders until all are done (see the module's comment).
    rounds = [initial_sync(args.docsync, f"{kind}-{round_}", fill, kind == "small", make_hub)
              for round_ in range(args.rounds)]
    if not args.keep:
        for round_ in range(args.rounds):
            shutil.rmtree(f"{ROOT}/initial-{kind}-{round_}", ignore_errors=True)
    ratios = [r[1] / r[0] for r in rounds]
    figures.update({
        f"initial_{kind}_rsync_s": statistics.median(r[0] for r in rounds),
        f"initial_{kind}_docsync_s": statistics.median(r[1] for r in rounds),
        f"initial_{kind}_time_ratio": statistics.median(ratios),
        f"initial_{kind}_speed_of_rsync": statistics.median(1 / r for r in ratios),
        f"initial_{kind}_daemon_cpu_s": statistics.median(r[2] for r in rounds),
        f"initial_{kind}_push_s": statistics.median(r[3] for r in rounds),
        f"initial_{kind}_rounds": [
            {"rsync_s": r[0], "docsync_s": r[1], "daemon_cpu_s": r[2], "push_s": r[3]}
            for r in rounds],
    })
    print(f"  initial sync of {what} onto a new device, medians of {len(rounds)} rounds: "
          f"docsync {figures[f'initial_{kind}_docsync_s']:.2f} s "
          f"(daemon CPU {figures[f'initial_{kind}_daemon_cpu_s']:.2f} s), "
          f"rsync -a {figures[f'initial_{kind}_rsync_s']:.2f} s: "
          f"{figures[f'initial_{kind}_time_ratio']:.2f}x its time, "
          f"speed {figures[f'initial_{kind}_speed_of_rsync']:.2f} of rsync's "
          f"(rounds: {', '.join(f'{r:.2f}x' for r in ratios)}); the first device's push "
          f"(cp -a + docsync sync) {figures[f'initial_{kind}_push_s']:.2f} s")


def unmount_after(args, shape, count):
    """Seconds from `docsync unmount` to the daemon's exit, right after one quiet window of
    work on `count` files that were synced before it (issue 45): `rename` renames each file,
    `folder` moves their folder, `checkout` is a git checkout that rewrites each one."""
    base = f"{ROOT}/unmount-{shape}"
    mount, state = f"{base}/mount", f"{base}/state"
    os.makedirs(mount)
    run(args.docsync, "mount", mount, "--state", state, "--hub", f"{base}/hub.sqlite",
        "--device", "a")
    try:
        work = f"{mount}/work"
        git = ["git", "-C", work, "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
        if shape == "checkout":
            run("git", "init", "-q", "-b", "one", work)
        for index in range(count):
            folder = f"{work}/d{index // 1000}"
            os.makedirs(folder, exist_ok=True)
            with open(f"{folder}/f{index}.txt", "w") as f:
                f.write(f"file {index}\n")
        if shape == "checkout":
            run(*git, "add", "-A")
            run(*git, "commit", "-q", "-m", "one")
            run(*git, "checkout", "-q", "-b", "two")
            for index in range(count):
                with open(f"{work}/d{index // 1000}/f{index}.txt", "a") as f:
                    f.write("two\n")
            run(*git, "commit", "-q", "-am", "two")
        run(args.docsync, "sync", mount, "--timeout", "1800")
        if shape == "rename":
            for index in range(count):
                folder = f"{work}/d{index // 1000}"
                os.rename(f"{folder}/f{index}.txt", f"{folder}/g{index}.txt")
        elif shape == "folder":
            os.rename(work, f"{mount}/moved")
        else:
            run(*git, "checkout", "-q", "one")
        with open(f"{state}/docsync.pid") as f:
            pid = f.read().strip()
        start = time.monotonic()
        run(args.docsync, "unmount", mount)
        while os.path.exists(f"/proc/{pid}"):
            time.sleep(0.01)
        return time.monotonic() - start
    finally:
        subprocess.run(["fusermount3", "-uz", mount], stderr=subprocess.DEVNULL)
        shutil.rmtree(base, ignore_errors=True)


def unmounts_after_many_changes(args, figures):
    count = 2000 if args.quick else 10000
    for shape, what in (("rename", f"{count} renames"), ("folder", f"a move of {count} files' "
                        "folder"), ("checkout", f"a git checkout of {count} changed files")):
        seconds = unmount_after(args, shape, count)
        figures[f"unmount_after_{shape}_s"] = seconds
        figures[f"unmount_after_{shape}_files"] = count
        print(f"  unmount right after {what}: the daemon exits in {seconds:.1f} s")


def main():
    global ROOT
    parser = argparse.ArgumentParser()
    parser.add_argument("--docsync", required=True)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--results", default="bench-results")
    parser.add_argument("--postgres", metavar="ADMIN-URL")
    parser.add_argument("--postgres-ca", metavar="CA")
    parser.add_argument("--quick", action="store_true", help="a 256 MiB large file, not 1 GiB")
    parser.add_argument("--large-mib", type=int, help="the large file's size in MiB")
    parser.add_argument("--small-count", type=int, help="how many small files (default 10,000)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of throughput and initial sync; figures are their medians")
    parser.add_argument("--root", default=ROOT, help="the folder everything lives in")
    parser.add_argument("--only", choices=("large", "small", "unmount"),
                        help="large: push, pull and initial sync of the large file; "
                             "small: the initial sync of small files; "
                             "unmount: unmount right after many changes")
    parser.add_argument("--keep", action="store_true",
                        help="leave the small-file rounds' folders, so that the next bench does "
                             "not meet a file system busy with their deletion")
    args = parser.parse_args()
    ROOT = args.root
    # SIGTERM ends the run like Ctrl-C does, through the finally blocks that unmount.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    large_mib = args.large_mib or (256 if args.quick else 1024)
    small_count = args.small_count or (2000 if args.quick else 10000)

    subprocess.run(["fusermount3", "-uz", f"{ROOT}/a"], stderr=subprocess.DEVNULL)
    subprocess.run(["fusermount3", "-uz", f"{ROOT}/b"], stderr=subprocess.DEVNULL)
    shutil.rmtree(ROOT, ignore_errors=True)
    os.makedirs(ROOT)
    figures = {"user": user_name(), "rounds": args.rounds,
               "hub": "postgres" if args.postgres else "sqlite"}
    hub_name = "PostgreSQL hub (loopback)" if args.postgres else "SQLite hub"
    print(f"\nsync through the {hub_name} (two mounts on one machine), as {figures['user']}")
    if args.only in (None, "large"):
        two_mounts(args, large_mib, figures)
    if args.only in (None, "unmount"):
        unmounts_after_many_changes(args, figures)
    if args.only in (None, "small"):
        initial_syncs(args, "small", f"{small_count} files of 4 KiB",
                      lambda folder: write_small_files(folder, small_count), figures)
    if args.only in (None, "large"):
        initial_syncs(args, "large", f"{large_mib} MiB",
                      lambda folder: write_large_file(f"{folder}/large.bin", large_mib), figures)
    os.makedirs(args.results, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    kind = "sync-postgres" if args.postgres else "sync"
    if args.only:
        kind += f"-{args.only}"
    with open(os.path.join(args.results, f"{kind}-{stamp}-{figures['user']}.json"), "w") as f:
        json.dump(figures, f, indent=2)
    # The mounts' folders, hub and large files go (gigabytes); with --keep, the small-file
    # rounds' folders stay for a later cleanup.
    for name in os.listdir(ROOT):
        if not (args.keep and name.startswith("initial-small-")):
            shutil.rmtree(os.path.join(ROOT, name), ignore_errors=True)
            if os.path.exists(os.path.join(ROOT, name)):
                os.remove(os.path.join(ROOT, name))


if __name__ == "__main__":
    main()
