#!/usr/bin/env python3
"""Many devices on one PostgreSQL hub (issue 45): a family's or a team's library.

DEVICES daemons (default 50) mount one new database, each with a device role of its own made by
`docsync hub add-device`. Each device appends a line to a document of its own every EVERY
seconds (default 5), staggered so that the edits spread evenly; a few devices write a new
64 MiB file each; in the middle the server is stopped for OUTAGE seconds (default 30) and
started again. Every device's view of every document is looked at (stat: the line count is the
size) several times a second, which gives:

- propagation: close on the writer -> the new size seen on another device, for every edit and
  each of the first OBSERVERS devices (default 10, looked at every round; the others every
  fifth round), apart for edits made outside the outage (p50, p99, max) and all of them;
- convergence after the outage: from the server's start until every device sees every edit
  made before it;
- final convergence: from the last edit until every device sees every edit;
- each 64 MiB file: close on the writer -> its full size on every device;
- the server: connections (pg_stat_activity, sampled), CPU (every postgres process, children
  that ended included) and the devices' CPU, per phase;
- each device's memory (VmRSS at the end, VmHWM), and the errors their logs hold.

Run it through Tools/bench-many-devices.sh (as root), which starts a private cluster as
Tools/test does and passes --postgres, --postgres-ca and --pg-data. Prints the figures and, with
--results FOLDER, writes them as JSON.
"""

import argparse
import json
import os
import secrets
import shlex
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

LINE = 64  # bytes per edit: a document's size is its number of edits times this
ENV = dict(os.environ)


def percentile(values, fraction):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def postgres_library(docsync, admin_url, ca, devices):
    """A new database, one account and a device role per device: the devices' URLs."""
    admin = urllib.parse.urlsplit(admin_url)
    suffix = secrets.token_hex(4)
    database, password = f"many_{suffix}", secrets.token_hex(16)
    subprocess.run(["psql", admin_url, "-X", "-q", "-v", "ON_ERROR_STOP=1",
                    "-c", f"CREATE DATABASE {database}"], check=True)
    tls = f"sslmode=verify-full&sslrootcert={ca}" if ca else "sslmode=disable"
    urls = []
    for index in range(devices):
        role = f"many_{suffix}_d{index}"
        subprocess.run([docsync, "hub", "add-device",
                        admin._replace(path=f"/{database}", query=tls).geturl(),
                        f"family_{suffix}", role],
                       check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "DOCSYNC_DEVICE_PASSWORD": password})
        urls.append(f"postgres://{role}@{admin.hostname}:{admin.port or 5432}/{database}?{tls}")
    ENV["PGPASSWORD"] = password
    return database, urls


def daemon_pid(state):
    with open(f"{state}/docsync.pid") as f:
        return int(f.read().strip())


def process_memory_mib(pid):
    figures = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                figures[line.split(":")[0]] = int(line.split()[1]) / 1024
    return figures


def cpu_of(pid, children=False):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def server_cpu_seconds(pg_data):
    """CPU of the postmaster, its live children and the children it has reaped."""
    try:
        with open(f"{pg_data}/postmaster.pid") as f:
            postmaster = int(f.readline())
    except OSError:
        return 0.0
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(entry) == postmaster:
                total += cpu_of(postmaster, children=True)
            elif int(fields[1]) == postmaster:
                total += cpu_of(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return total


class Server:
    """The cluster of Tools/bench-many-devices.sh: stopped and started again with the options
    it was started with (postmaster.opts)."""

    def __init__(self, pg_data, admin_url, database):
        self.data = pg_data
        self.admin = admin_url
        self.database = database
        with open(f"{pg_data}/postmaster.opts") as f:
            words = shlex.split(f.read())
        self.binary = os.path.dirname(words[0])
        # pg_ctl passes -D itself.
        options, skip = [], False
        for word in words[1:]:
            if skip:
                skip = False
                continue
            if word == "-D":
                skip = True
                continue
            options.append(word)
        self.options = " ".join(shlex.quote(word) for word in options)
        self.cpu_before_stop = 0.0

    def pg_ctl(self, *arguments):
        subprocess.run(["runuser", "-u", "postgres", "--", f"{self.binary}/pg_ctl", "-D",
                        self.data, *arguments], check=True, stdout=subprocess.DEVNULL)

    def stop(self):
        self.cpu_before_stop = server_cpu_seconds(self.data)
        self.pg_ctl("-m", "fast", "-w", "stop")

    def start(self):
        self.pg_ctl("-l", f"{self.data}/../log", "-w", "-t", "60", "-o", self.options, "start")

    def connections(self):
        result = subprocess.run(
            ["psql", self.admin, "-X", "-A", "-t", "-c",
             f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{self.database}'"],
            capture_output=True, text=True, timeout=20)
        return int(result.stdout.strip()) if result.returncode == 0 else None


class Observer(threading.Thread):
    """Looks at every device's view of every document and big file, and notes when each edit
    first shows on each device."""

    def __init__(self, mounts, writes, big_files, observers):
        super().__init__(daemon=True)
        self.mounts = mounts
        # Devices looked at in every round, for propagation; the others every fifth round
        # (convergence): 2,500 stats a round took two seconds on a busy machine.
        self.observers = observers
        self.writes = writes  # writes[w][seq] = monotonic time its close returned
        self.big_files = big_files  # name -> (size, time closed or None, writer)
        self.seen = [[0] * len(mounts) for _ in mounts]  # seen[observer][writer] = edits seen
        self.first_seen = {}  # (observer, writer, seq) -> time
        self.big_seen = {}  # (observer, name) -> time
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.rounds = 0

    def run(self):
        count = len(self.mounts)
        while not self.stopping.is_set():
            everyone = self.rounds % 5 == 0
            for observer, mount in enumerate(self.mounts):
                if observer >= self.observers and not everyone:
                    continue
                for writer in range(count):
                    if writer == observer:
                        continue
                    try:
                        edits = os.stat(f"{mount}/doc-{writer}.txt").st_size // LINE
                    except OSError:
                        continue
                    if edits > self.seen[observer][writer]:
                        now = time.monotonic()
                        with self.lock:
                            for seq in range(self.seen[observer][writer] + 1, edits + 1):
                                self.first_seen[(observer, writer, seq)] = now
                            self.seen[observer][writer] = edits
                for name, (size, _, writer) in list(self.big_files.items()):
                    if writer == observer or (observer, name) in self.big_seen:
                        continue
                    try:
                        if os.stat(f"{mount}/{name}").st_size == size:
                            self.big_seen[(observer, name)] = time.monotonic()
                    except OSError:
                        pass
            self.rounds += 1
            self.stopping.wait(0.2)

    def all_see(self, targets):
        """Whether every device sees, of each writer w, at least targets[w] edits."""
        with self.lock:
            return all(self.seen[o][w] >= targets[w] for o in range(len(self.mounts))
                       for w in range(len(self.mounts)) if o != w)


def write_big_file(path, size):
    with open(path, "wb") as f:
        left = size
        while left:
            block = os.urandom(min(left, 1 << 20))
            f.write(block)
            left -= len(block)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docsync", required=True)
    parser.add_argument("--postgres", required=True, help="a superuser URL of the cluster")
    parser.add_argument("--postgres-ca")
    parser.add_argument("--pg-data", required=True, help="the cluster's data folder")
    parser.add_argument("--devices", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=300, help="how long devices edit")
    parser.add_argument("--every", type=float, default=5, help="seconds between a device's edits")
    parser.add_argument("--outage", type=float, default=30)
    parser.add_argument("--big-files", type=int, default=3, help="how many 64 MiB files")
    parser.add_argument("--big-mib", type=int, default=64)
    parser.add_argument("--observers", type=int, default=10,
                        help="devices whose view is looked at in every round (propagation)")
    parser.add_argument("--root", default="/var/tmp/docsync-bench-many")
    parser.add_argument("--results")
    args = parser.parse_args()

    subprocess.run(["rm", "-rf", args.root], check=True)
    os.makedirs(args.root)
    database, urls = postgres_library(args.docsync, args.postgres, args.postgres_ca,
                                      args.devices)
    server = Server(args.pg_data, args.postgres, database)
    mounts, states = [], []
    figures = {"devices": args.devices, "edit_every_s": args.every, "seconds": args.seconds,
               "outage_s": args.outage, "big_files": args.big_files, "big_mib": args.big_mib}
    try:
        started = time.monotonic()
        for index, url in enumerate(urls):
            mount, state = f"{args.root}/m{index}", f"{args.root}/s{index}"
            os.makedirs(mount)
            subprocess.run([args.docsync, "mount", mount, "--state", state, "--hub", url,
                            "--device", f"d{index}", "--no-notify"], check=True, env=ENV)
            mounts.append(mount)
            states.append(state)
        figures["mount_all_s"] = time.monotonic() - started
        print(f"  {args.devices} devices mounted in {figures['mount_all_s']:.1f} s", flush=True)
        pids = [daemon_pid(state) for state in states]

        writes = [dict() for _ in mounts]
        big_files = {}
        observer = Observer(mounts, writes, big_files, args.observers)
        observer.start()
        connections = []  # (phase, count)
        loads = []  # the machine's 1-minute load average, sampled with the connections
        phase = ["before"]

        def sample_connections():
            while not observer.stopping.is_set():
                count = server.connections() if phase[0] != "outage" else None
                if count is not None:
                    connections.append((phase[0], count))
                loads.append(os.getloadavg()[0])
                observer.stopping.wait(5)

        sampler = threading.Thread(target=sample_connections, daemon=True)
        sampler.start()

        outage_at = args.seconds / 2 - args.outage / 2
        # The big files: before the outage, just before it (its push meets the stop), after it.
        big_at = sorted([args.seconds * 0.15, max(0.0, outage_at - 5),
                         outage_at + args.outage + 30][:args.big_files])
        big_threads = []
        server_cpu = {"start": server_cpu_seconds(args.pg_data)}
        device_cpu_start = sum(cpu_of(pid) for pid in pids)
        t0 = time.monotonic()
        step = args.every / args.devices
        tick = 0
        stopped_at = started_at = None
        while True:
            at = t0 + tick * step
            if at - t0 >= args.seconds:
                break
            now = time.monotonic()
            if at > now:
                time.sleep(at - now)
            elapsed = time.monotonic() - t0
            if stopped_at is None and elapsed >= outage_at:
                phase[0] = "outage"
                server.stop()
                server_cpu["before_outage"] = server.cpu_before_stop
                stopped_at = time.monotonic()
                print(f"  server stopped at {elapsed:.0f} s", flush=True)
            if started_at is None and stopped_at is not None and \
                    time.monotonic() - stopped_at >= args.outage:
                server.start()
                started_at = time.monotonic()
                server_cpu["after_restart"] = server_cpu_seconds(args.pg_data)
                phase[0] = "after"
                targets_at_restart = [len(w) for w in writes]
                print(f"  server started again at {started_at - t0:.0f} s", flush=True)
            while big_at and elapsed >= big_at[0]:
                big_at.pop(0)
                index = len(big_files)
                name = f"big-{index}.bin"
                size = args.big_mib << 20
                big_files[name] = (size, None, index)

                def push(writer=index, name=name, size=size):
                    write_big_file(f"{mounts[writer]}/{name}", size)
                    big_files[name] = (size, time.monotonic(), writer)

                thread = threading.Thread(target=push)
                thread.start()
                big_threads.append(thread)
            writer = tick % args.devices
            seq = len(writes[writer]) + 1
            line = f"d{writer} edit {seq} at {time.time():.3f}".ljust(LINE - 1) + "\n"
            with open(f"{mounts[writer]}/doc-{writer}.txt", "a") as f:
                f.write(line)
            writes[writer][seq] = time.monotonic()
            tick += 1
        last_edit = time.monotonic()
        for thread in big_threads:
            thread.join()
        targets_final = [len(w) for w in writes]
        print(f"  {sum(targets_final)} edits made; waiting for every device to see them",
              flush=True)

        # Convergence after the outage, from the polls' first sightings.
        def converged_at(targets, since):
            latest = since
            for o in range(len(mounts)):
                for w in range(len(mounts)):
                    if o == w:
                        continue
                    for seq in range(1, targets[w] + 1):
                        seen = observer.first_seen.get((o, w, seq))
                        if seen is None:
                            return None
                        latest = max(latest, seen)
            return latest - since

        deadline = time.monotonic() + 600
        while not observer.all_see(targets_final) or \
                len(observer.big_seen) < len(big_files) * (len(mounts) - 1):
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        final = converged_at(targets_final, last_edit)
        observer.stopping.set()
        observer.join()
        device_cpu = sum(cpu_of(pid) for pid in pids) - device_cpu_start
        server_cpu["end"] = server_cpu_seconds(args.pg_data)
        run_seconds = time.monotonic() - t0

        # Convergence after the outage: every edit made before the server came back is seen.
        after = None
        if started_at is not None:
            after = converged_at(targets_at_restart, started_at)
            figures["convergence_after_outage_s"] = after
        # Propagation: each edit to each other device. Steady: closed and seen before the
        # stop, or closed once every device had caught up after it.
        caught_up = started_at + after if after is not None else None
        steady, overall = [], []
        for (o, w, seq), seen in observer.first_seen.items():
            closed = writes[w].get(seq)
            if closed is None or o >= args.observers:
                continue
            latency = seen - closed
            overall.append(latency)
            if stopped_at is None or seen < stopped_at or \
                    (caught_up is not None and closed > caught_up):
                steady.append(latency)
        figures.update({
            "edits": sum(targets_final),
            "propagation_pairs": len(overall),
            "propagation_steady_pairs": len(steady),
            "propagation_p50_ms": 1000 * percentile(steady, 0.5),
            "propagation_p99_ms": 1000 * percentile(steady, 0.99),
            "propagation_max_ms": 1000 * max(steady, default=float("nan")),
            "propagation_with_outage_p50_ms": 1000 * percentile(overall, 0.5),
            "propagation_with_outage_p99_ms": 1000 * percentile(overall, 0.99),
            "observer_rounds_per_s": observer.rounds / run_seconds,
        })
        figures["final_convergence_s"] = final
        big = {}
        for name, (size, closed, _) in big_files.items():
            sightings = [t for (o, n), t in observer.big_seen.items() if n == name]
            if closed is not None and len(sightings) == len(mounts) - 1:
                big[name] = max(sightings) - closed
            else:
                big[name] = None
        figures["big_file_to_all_devices_s"] = big
        by_phase = {}
        for name, count in connections:
            by_phase.setdefault(name, []).append(count)
        figures["server_connections"] = {
            name: {"max": max(counts), "median": statistics.median(counts)}
            for name, counts in by_phase.items()}
        server_seconds = (server_cpu.get("before_outage", server_cpu["end"]) - server_cpu["start"]
                          + (server_cpu["end"] - server_cpu.get("after_restart", server_cpu["end"]))
                          if stopped_at else server_cpu["end"] - server_cpu["start"])
        up_seconds = run_seconds - (args.outage if stopped_at else 0)
        figures["machine_load_median"] = statistics.median(loads) if loads else None
        figures["machine_cpus"] = os.cpu_count()
        figures["server_cpu_percent_of_one_cpu"] = 100 * server_seconds / up_seconds
        figures["devices_cpu_percent_of_one_cpu"] = 100 * device_cpu / run_seconds
        memory = [process_memory_mib(pid) for pid in pids]
        rss = [m["VmRSS"] for m in memory]
        hwm = [m["VmHWM"] for m in memory]
        figures["device_rss_mib"] = {"median": statistics.median(rss), "max": max(rss),
                                     "min": min(rss)}
        figures["device_peak_rss_mib"] = {"median": statistics.median(hwm), "max": max(hwm)}
        errors = {}
        for index, state in enumerate(states):
            with open(f"{state}/docsync.log", errors="replace") as f:
                lines = [line.strip() for line in f if " error " in line or " critical " in line]
            if lines:
                errors[f"d{index}"] = lines[:5] + ([f"... {len(lines)} in all"]
                                                   if len(lines) > 5 else [])
        figures["devices_with_errors"] = errors
        conflicts = sum(1 for m in mounts if os.path.isdir(f"{m}/.versions")
                        and any(os.scandir(f"{m}/.versions")))
        figures["devices_with_conflicts"] = conflicts
    finally:
        for mount in mounts:
            subprocess.run([args.docsync, "unmount", mount], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)

    print(json.dumps(figures, indent=2))
    if args.results:
        os.makedirs(args.results, exist_ok=True)
        name = time.strftime("%Y%m%dT%H%M%S") + "-many-devices.json"
        with open(os.path.join(args.results, name), "w") as f:
            json.dump(figures, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
