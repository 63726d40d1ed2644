#!/usr/bin/env python3
"""Runs file-system workloads on several targets and prints ratios against a plain folder.

Targets: (a) a plain folder, (b) libfuse's passthrough_ll with its fastest options
(`-o writeback -o cache=always`, through Tools/passthrough-mount), (c) `rclone mount` of a local
folder with `--vfs-cache-mode full`, (d) a docsync mount on its own SQLite hub, with every
request on /dev/fuse, and (e) the same with FUSE over io_uring (`--io-uring`: Linux 6.14 and later;
the column turns the fuse module's enable_uring on while it mounts and restores it).
A target is a folder plus how to set it up, remount it (for cold reads) and tear it down; a
workload is a function of (target, size) returning a Figure. Every mount is taken down on exit,
also after an error or a signal.
"""

import argparse
import datetime
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tarfile
import time

# Off by default; root may turn it on. The kernel reads it when a mount sends INIT and again
# when the daemon's INIT reply asks for io_uring; a connection that has io_uring keeps it.
URING_PARAMETER = "/sys/module/fuse/parameters/enable_uring"

# Not /tmp: often tmpfs, which would flatter plain. Tools/bench gives the ordinary user's run a
# folder of its own (--bench-root).
BENCH_ROOT = "/var/tmp/docsync-bench"


class Figure:
    """One measurement: seconds (lower is better) or a rate (higher is better)."""

    def __init__(self, value, unit):
        self.value = value
        self.unit = unit

    @property
    def is_rate(self):
        return self.unit != "s"

    def ratio(self, plain):
        """How this compares with plain, in the sense the issue's targets use: a rate divided
        by plain's rate (1.0 = as fast, lower is worse), or time divided by plain's time (1.0 =
        as fast, higher is worse)."""
        if plain.value == 0:
            return float("nan")
        return self.value / plain.value


def seconds(value):
    return Figure(value, "s")


def unmount(path):
    subprocess.run(["fusermount3", "-uz", path], stderr=subprocess.DEVNULL)


def is_mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def peak_memory_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class Target:
    name = "plain"
    label = "(a) plain"

    def __init__(self, base):
        self.base = base
        self.root = os.path.join(base, "root")

    def setup(self):
        os.makedirs(self.root, exist_ok=True)

    def remount(self):
        pass

    def pid(self):
        return None

    def settle(self):
        """Finishes what the previous workload left to do in the background, untimed: for
        every target, the disk writes the page cache holds, so that one workload's writeback
        is not timed inside the next."""
        os.sync()

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
        # Private, as docsync makes its own: it warns about a state folder others can read.
        os.makedirs(self.state, mode=0o700, exist_ok=True)
        subprocess.run(self.mount_command(), check=True)

    def mount_command(self):
        # A hub of its own: the default hub is shared by every mount of the user. Every request
        # on /dev/fuse, also where enable_uring is on: the io_uring column is (e).
        hub = os.path.join(self.base, "hub.sqlite")
        return [self.binary, "mount", self.root, "--state", self.state, "--hub", hub,
                "--no-io-uring"]

    def pid(self):
        with open(os.path.join(self.state, "docsync.pid")) as f:
            return int(f.read().strip())

    def remount(self):
        subprocess.run([self.binary, "unmount", self.root], check=True)
        subprocess.run(self.mount_command(), check=True)

    def settle(self):
        # The files a workload wrote become versions (hashed, copied into the blob store,
        # pushed) once they are quiet; `docsync sync` returns when that is done, so that work
        # is not timed inside the next workload. The sync figures are measured on their own.
        subprocess.run([self.binary, "sync", self.root], check=True, stdout=subprocess.DEVNULL)
        super().settle()

    def teardown(self):
        if subprocess.run([self.binary, "unmount", self.root]).returncode != 0:
            unmount(self.root)


class IoUringTarget(DocsyncTarget):
    """docsync serving requests from io_uring queues: enable_uring is on only while it mounts
    (when this process may write it, as root; the ordinary user's run has Tools/bench turn it
    on around the whole run, which changes nothing for the columns that do not ask for it)."""

    name = "docsync io_uring"
    label = "(e) docsync io_uring"

    def mount_command(self):
        return DocsyncTarget.mount_command(self)[:-1]

    def mount(self):
        writable = os.access(URING_PARAMETER, os.W_OK)
        before = read_parameter()
        if writable:
            write_parameter("Y")
        try:
            if read_parameter() != "Y":
                raise RuntimeError(f"{URING_PARAMETER} is off and this user cannot turn it on")
            subprocess.run(self.mount_command(), check=True)
            # `docsync mount` returns before the kernel's INIT is answered; the first request
            # waits for INIT and for the rings, so after it the connection has io_uring.
            os.stat(self.root)
            with open(os.path.join(self.state, "docsync.log")) as f:
                if "serving requests from" not in f.read():
                    raise RuntimeError("docsync did not serve from io_uring: see its log")
        finally:
            if writable:
                write_parameter(before)

    def setup(self):
        os.makedirs(self.root, exist_ok=True)
        os.makedirs(self.state, mode=0o700, exist_ok=True)
        self.mount()

    def remount(self):
        subprocess.run([self.binary, "unmount", self.root], check=True)
        self.mount()


def read_parameter():
    with open(URING_PARAMETER) as f:
        return f.read().strip()


def write_parameter(value):
    with open(URING_PARAMETER, "w") as f:
        f.write(value)


class PassthroughTarget(DocsyncTarget):
    """Same command-line contract as docsync (Tools/passthrough-mount), so the same mount steps."""

    name = "passthrough_ll"
    label = "(b) passthrough_ll"

    def mount_command(self):
        return [self.binary, "mount", self.root, "--state", self.state, "--fast"]

    def settle(self):
        Target.settle(self)


class RcloneTarget(Target):
    """`rclone mount` of a local folder (a plain path is a local remote: no config needed)."""

    name = "rclone"
    label = "(c) rclone"

    def __init__(self, base):
        super().__init__(base)
        self.source = os.path.join(base, "source")
        self.cache = os.path.join(base, "cache")
        self.process = None

    def setup(self):
        for path in (self.root, self.source, self.cache):
            os.makedirs(path, exist_ok=True)
        self.process = subprocess.Popen(
            ["rclone", "mount", self.source, self.root, "--vfs-cache-mode", "full",
             "--cache-dir", self.cache, "--config", "/dev/null"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.base, "rclone.log"), "w"))
        deadline = time.monotonic() + 30
        while not is_mounted(self.root):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"rclone mount did not come up; see {self.base}/rclone.log")
            time.sleep(0.05)

    def pid(self):
        return self.process.pid if self.process else None

    def remount(self):
        self.teardown()
        self.setup()

    def teardown(self):
        if self.process is None:
            return
        unmount(self.root)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


def drop_caches():
    """Cold reads need the page cache empty; a container, or an ordinary user, may not empty it,
    which is reported."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def host_steal_ms():
    """Processor time the hypervisor gave to others while this machine's processors wanted it
    (the steal column of /proc/stat), in ms, summed over the processors."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) * 1000 / os.sysconf("SC_CLK_TCK")


def process_cpu_ms(pid):
    """User and system processor time of a process so far, in ms; 0 when it cannot be read."""
    if not pid:
        return 0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


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

    return Figure(size["seq_mib"] / timed(work), "MiB/s")


def read_all(path):
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass


def seq_read_cached(target, size):
    path = os.path.join(target.root, "seq.bin")
    read_all(path)  # warm
    return Figure(size["seq_mib"] / timed(lambda: read_all(path)), "MiB/s")


def random_read_cached(target, size):
    """4 KiB random reads of the (cached) 1 GiB file with fio, one job, psync."""
    path = os.path.join(target.root, "seq.bin")
    read_all(path)  # warm
    result = subprocess.run(
        ["fio", "--name=randread", f"--filename={path}", "--rw=randread", "--bs=4k",
         "--ioengine=psync", "--invalidate=0", f"--size={size['seq_mib']}M", "--time_based",
         f"--runtime={size['fio_seconds']}", "--output-format=json"],
        check=True, capture_output=True, text=True)
    return Figure(json.loads(result.stdout)["jobs"][0]["read"]["iops"], "IOPS")


def seq_read_cold(target, size):
    target.remount()
    if not drop_caches():
        print(f"  note: could not drop caches for {target.name}; cold read is warm", file=sys.stderr)
    path = os.path.join(target.root, "seq.bin")
    return Figure(size["seq_mib"] / timed(lambda: read_all(path)), "MiB/s")


def small_files_create(target, size):
    folder = os.path.join(target.root, "small")
    os.makedirs(folder, exist_ok=True)
    data = os.urandom(4096)

    # The system calls themselves, as fs_mark makes them: Python's open() would add an isatty
    # ioctl per file, one more FUSE request that is Python's, not the workload's.
    def work():
        for i in range(size["files"]):
            fd = os.open(os.path.join(folder, f"f{i:05d}"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                         0o644)
            os.write(fd, data)
            os.close(fd)

    return seconds(timed(work))


def small_files_stat(target, size):
    folder = os.path.join(target.root, "small")
    return seconds(
        timed(lambda: [os.stat(os.path.join(folder, f"f{i:05d}")) for i in range(size["files"])]))


def small_files_readdir(target, size):
    """Three listings of the folder of small files, names and types (as `ls` does)."""
    folder = os.path.join(target.root, "small")

    def work():
        for _ in range(3):
            with os.scandir(folder) as entries:
                count = sum(1 for entry in entries if entry.is_file(follow_symlinks=False))
            assert count == size["files"], count

    return seconds(timed(work))


def untar_usr_include(target, size):
    tarball = size["tarball"]
    folder = os.path.join(target.root, "include")
    os.makedirs(folder, exist_ok=True)
    return seconds(timed(lambda: subprocess.run(["tar", "-C", folder, "-xf", tarball], check=True)))


def git_status(target, size):
    """`git status` in a repository of the untarred tree, after one untimed run (which
    refreshes the index's stat data, as a person's second `git status` would find it)."""
    folder = os.path.join(target.root, "include")
    git = ["git", "-C", folder, "-c", "user.name=bench", "-c", "user.email=bench@localhost",
           "-c", "gc.auto=0"]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "include"],
                 ["status", "--porcelain"]):
        subprocess.run(git + step, check=True, stdout=subprocess.DEVNULL)
    return seconds(timed(
        lambda: subprocess.run(git + ["status", "--porcelain"], check=True,
                               stdout=subprocess.DEVNULL)))


def atomic_saves(target, size):
    """Saves of one document as careful programs do: temp file, write, fsync, rename over."""
    folder = os.path.join(target.root, "saves")
    os.makedirs(folder, exist_ok=True)
    document = os.path.join(folder, "document.txt")
    temporary = os.path.join(folder, ".document.txt.tmp")
    data = os.urandom(4096)

    def work():
        for _ in range(size["saves"]):
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, data)
            os.fsync(fd)
            os.close(fd)
            os.rename(temporary, document)

    return seconds(timed(work))


# (name, function, the target as docsync / plain, or None)
WORKLOADS = [
    ("seq write 1 MiB+fsync", seq_write, ">= 0.70"),
    ("seq read cached", seq_read_cached, ">= 0.75"),
    ("seq read cold", seq_read_cold, None),
    ("4 KiB rand read cached", random_read_cached, ">= 0.70"),
    ("create+write 4 KiB", small_files_create, "<= 5x"),
    ("stat", small_files_stat, "<= 3x"),
    ("readdir x3", small_files_readdir, None),
    ("untar /usr/include", untar_usr_include, "<= 10x"),
    ("git status", git_status, "<= 10x"),
    ("atomic saves", atomic_saves, "<= 2x"),
]


def make_targets(args, folder):
    targets = [Target(os.path.join(folder, "plain"))]
    if args.passthrough:
        targets.append(PassthroughTarget(os.path.join(folder, "passthrough"), args.passthrough))
    if args.rclone:
        targets.append(RcloneTarget(os.path.join(folder, "rclone")))
    if args.docsync:
        targets.append(DocsyncTarget(os.path.join(folder, "docsync"), args.docsync))
    if args.docsync and args.io_uring:
        targets.append(IoUringTarget(os.path.join(folder, "io_uring"), args.docsync))
    return targets


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def set_bench_root(path):
    global BENCH_ROOT
    BENCH_ROOT = path


def clean_root():
    if os.path.exists(BENCH_ROOT):
        with open("/proc/self/mountinfo") as f:
            points = [line.split()[4] for line in f]
        for point in points:
            if point.startswith(BENCH_ROOT + "/"):
                unmount(point)
        shutil.rmtree(BENCH_ROOT)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--docsync", help="path of the docsync binary")
    parser.add_argument("--passthrough", help="path of Tools/passthrough-mount (passthrough_ll)")
    parser.add_argument("--rclone", action="store_true", help="also measure `rclone mount`")
    parser.add_argument("--io-uring", action="store_true",
                        help="also measure docsync over FUSE io_uring (needs enable_uring; root "
                        "turns it on for the column)")
    parser.add_argument("--only", help="comma-separated workloads to run (default: all)")
    parser.add_argument("--results", default="bench-results")
    parser.add_argument("--quick", action="store_true", help="a smaller run")
    parser.add_argument("--rounds", type=int,
                        help="rounds over every target, medians reported (default: 3; 1 quick)")
    parser.add_argument("--bench-root", default=BENCH_ROOT,
                        help=f"the folder every target lives in (default: {BENCH_ROOT})")
    args = parser.parse_args()
    set_bench_root(args.bench_root)
    # Root's mounts get FUSE passthrough (the kernel reads and writes docsync's working files
    # itself); an ordinary user's do not, and that is what a person at their desk sees.
    user = pwd.getpwuid(os.geteuid()).pw_name
    rounds = args.rounds or (1 if args.quick else 3)
    # A workload may need an earlier one's files: stat and readdir the creates', git status the
    # untar's, the reads the sequential write's.
    only = set(args.only.split(",")) if args.only else None
    workloads = [w for w in WORKLOADS if only is None or w[0] in only]
    # SIGTERM ends the run like Ctrl-C does, through the finally blocks that unmount.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    clean_root()
    os.makedirs(BENCH_ROOT)
    tarball = os.path.join(BENCH_ROOT, "usr-include.tar")
    with tarfile.open(tarball, "w") as tar:
        tar.add("/usr/include", arcname="include")
    size = {
        "seq_mib": 256 if args.quick else 1024,
        "files": 2000 if args.quick else 10000,
        "saves": 200 if args.quick else 1000,
        "fio_seconds": 3 if args.quick else 10,
        "tarball": tarball,
    }

    # This machine's disk and CPUs vary several-fold within minutes, so one pass puts each
    # target in a different weather. Rounds, each in its own folders (nothing is deleted until
    # the end: mass deletions slow ext4's next creates), with the order of targets rotated,
    # and the median per target.
    runs = {}
    memory = {}
    # Per target, workload and round: the processor time the hypervisor took from this machine
    # while the figure was measured, and the daemon's own processor time. A slow round with
    # steal was the host's weather; a slow round with more daemon time was the daemon's.
    conditions = {}
    try:
        for round_number in range(rounds):
            targets = make_targets(args, os.path.join(BENCH_ROOT, f"round{round_number}"))
            shift = round_number % len(targets)
            for target in targets[shift:] + targets[:shift]:
                print(f"round {round_number + 1}/{rounds}: {target.label} ...", file=sys.stderr)
                target.setup()
                try:
                    row = runs.setdefault(target.name, {})
                    for name, work, _ in workloads:
                        # A target that cannot do a workload (rclone 1.60 makes no symlinks, so
                        # tar fails on /usr/include) gets no figure for it, and the run goes on.
                        try:
                            target.settle()
                            pid = target.pid()
                            steal, cpu = host_steal_ms(), process_cpu_ms(pid)
                            figure = work(target, size)
                            # A remount (cold reads) starts a new daemon: no figure for it.
                            spent = (round(process_cpu_ms(pid) - cpu) if target.pid() == pid
                                     else None)
                            condition = {"steal_ms": round(host_steal_ms() - steal),
                                         "daemon_cpu_ms": spent}
                        except (subprocess.CalledProcessError, OSError, AssertionError) as error:
                            print(f"  {target.name}: {name} failed: {error}", file=sys.stderr)
                            figure, condition = None, None
                        row.setdefault(name, []).append(figure)
                        conditions.setdefault(target.name, {}).setdefault(name, []).append(
                            condition)
                    pid = target.pid()
                    if pid:
                        peak = peak_memory_mib(pid)
                        if peak:
                            memory[target.name] = max(memory.get(target.name, 0), peak)
                finally:
                    target.teardown()
    finally:
        clean_root()

    figures = {}
    for target_name, row in runs.items():
        figures[target_name] = {}
        for name, measured in row.items():
            # A workload that failed in any round is reported as failed: a median of the
            # rounds that worked would hide it.
            if any(figure is None for figure in measured):
                figures[target_name][name] = None
            else:
                figures[target_name][name] = Figure(median([f.value for f in measured]),
                                                    measured[0].unit)

    names = list(figures)
    print(f"\nfile systems as {user}, {'quick' if args.quick else 'full'} run, median of {rounds} "
          f"round{'s' if rounds > 1 else ''}: ratio to (a) plain; "
          "rates (MiB/s, IOPS) as docsync/plain (higher is better), times as a multiple "
          "(lower is better)")
    print(f"{'workload':<24}" + "".join(f"{n:>16}" for n in names[1:])
          + f"{'target':>10}   plain")
    for workload, _, goal in workloads:
        base = figures["plain"][workload]
        cells = ""
        for n in names[1:]:
            figure = figures[n][workload]
            if figure is None or base is None:
                cells += f"{'failed':>16}"
                continue
            cells += f"{figure.ratio(base):>15.2f}" + (" " if figure.is_rate else "x")
        plain = f"{base.value:.3f} {base.unit}" if base else "failed"
        print(f"{workload:<24}{cells}{goal or '':>10}   {plain}")
    print(f"{'peak memory (VmHWM)':<24}"
          + "".join(f"{memory[n]:>12.0f} MiB" if memory.get(n) else f"{'':>16}"
                    for n in names[1:]))
    if rounds > 1 and "docsync" in runs:
        # How much the weather moved: docsync against plain of the same round, round by round.
        print("\ndocsync / plain in each round")
        for workload, _, _ in workloads:
            pairs = zip(runs["docsync"][workload], runs["plain"][workload])
            cells = ["failed" if d is None or p is None else f"{d.ratio(p):.2f}" for d, p in pairs]
            print(f"{workload:<24}" + "  ".join(f"{c:>7}" for c in cells))
        shown = [n for n in ("docsync", "passthrough_ll") if n in conditions]
        print("\nin each round, ms: processor time the host took (steal) / the daemon's processor "
              "time, for " + " and ".join(shown))
        for workload, _, _ in workloads:
            for n in shown:
                cells = ["failed" if c is None
                         else f"{c['steal_ms']}/{'-' if c['daemon_cpu_ms'] is None else c['daemon_cpu_ms']}"
                         for c in conditions[n].get(workload, [])]
                label = f"{workload} ({'pt' if n == 'passthrough_ll' else 'ds'})"
                print(f"{label:<29}" + " ".join(f"{c:>8}" for c in cells))

    os.makedirs(args.results, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = os.path.join(args.results, f"{stamp}-{user}.json")
    with open(out, "w") as f:
        json.dump({"quick": args.quick, "rounds": rounds, "user": user,
                   "sizes": {k: v for k, v in size.items() if k != "tarball"},
                   "figures": {t: {w: fig and {"value": fig.value, "unit": fig.unit}
                                   for w, fig in row.items()} for t, row in figures.items()},
                   "rounds_figures": {t: {w: [fig and fig.value for fig in measured]
                                          for w, measured in row.items()}
                                      for t, row in runs.items()},
                   "rounds_conditions": conditions,
                   "peak_memory_mib": memory}, f, indent=2)
    print(f"\nraw figures: {out}")


if __name__ == "__main__":
    main()
