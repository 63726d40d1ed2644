#!/usr/bin/env python3
"""A PostgreSQL hub's cost of content objects at scale (issue 39's row "hub metadata per unique
chunk; prune of 1 M chunks"), as `bench-objects` measures the SQLite hub's.

Makes a new database and device on the server of --postgres (as Tools/bench-sync.py does),
fills it with `bench-objects fill` (CHUNKS chunks under nodes of 64, one record per node),
measures every table of the docsync schema, indexes and TOAST included, against the objects'
own bytes, ages the objects past their grace period, and times `bench-objects prune` of every
other record under `/usr/bin/time -v`. Prints the figures and writes them as JSON.
"""

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
bench_sync = importlib.import_module("bench-sync")


def psql(url, sql):
    return subprocess.run(["psql", url, "-X", "-Atq", "-v", "ON_ERROR_STOP=1", "-c", sql],
                          check=True, capture_output=True, text=True).stdout.strip()


def timed(argv, env):
    """Runs argv under /usr/bin/time -v: its output, and its peak memory in MiB."""
    result = subprocess.run(["/usr/bin/time", "-v"] + argv, env=env, capture_output=True,
                            text=True)
    if result.returncode != 0:
        sys.exit(f"{argv[1]} failed: {result.stdout}{result.stderr}")
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr)
    return result.stdout.strip(), int(peak.group(1)) / 1024 if peak else float("nan")


class BackendMemory:
    """Samples the private memory (RssAnon, which leaves out the shared buffers a backend maps)
    of the server processes that serve `database`, every 0.1 s, while it runs: their peak."""

    def __init__(self, database):
        self.marker = f" {database} ".encode()
        self.peak_kib = 0
        self.running = True
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def sample(self):
        while self.running:
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    # A backend's title: "postgres: ROLE DATABASE HOST(PORT) STATE".
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        title = f.read()
                    if not title.startswith(b"postgres: ") or self.marker not in title:
                        continue
                    with open(f"/proc/{pid}/status") as f:
                        for line in f:
                            if line.startswith("RssAnon:"):
                                self.peak_kib = max(self.peak_kib, int(line.split()[1]))
                except OSError:
                    continue
            time.sleep(0.1)

    def stop(self):
        self.running = False
        self.thread.join()
        return self.peak_kib / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench-objects", required=True)
    parser.add_argument("--docsync", required=True)
    parser.add_argument("--postgres", metavar="ADMIN-URL", required=True)
    parser.add_argument("--postgres-ca", metavar="CA")
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--results", default="bench-results")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = parser.parse_args()
    hub = bench_sync.postgres_hub(args.docsync, args.postgres, args.postgres_ca)
    env = dict(os.environ, **bench_sync.ENV)
    database = urllib.parse.urlsplit(hub).path.lstrip("/")
    admin = urllib.parse.urlsplit(args.postgres)._replace(path=f"/{database}").geturl()

    started = time.monotonic()
    filled, fill_peak = timed([args.bench_objects, "fill", hub, str(args.chunks)], env)
    fill_seconds = time.monotonic() - started
    tables = psql(admin, """
        SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'docsync' AND c.relkind = 'r'""")
    objects, data = psql(admin, "SELECT count(*), sum(length(data)) FROM docsync.objects").split("|")
    total, objects, data = int(tables), int(objects), int(data)
    per_object = (total - data) / objects
    print(f"{filled}\nPostgreSQL hub: {objects} objects, tables {total >> 20} MiB, objects' "
          f"bytes {data >> 20} MiB: {per_object:.0f} bytes of metadata an object (records, "
          f"indexes and TOAST included); fill peak {fill_peak:.0f} MiB")
    # Where the bytes go: each table's heap, indexes and TOAST (with its index), an object.
    breakdown = psql(admin, """
        SELECT c.relname, pg_relation_size(c.oid), pg_indexes_size(c.oid),
          coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'docsync' AND c.relkind = 'r' AND pg_total_relation_size(c.oid) > 8192
        ORDER BY pg_total_relation_size(c.oid) DESC""")
    for line in breakdown.splitlines():
        name, heap, indexes, toast = line.split("|")
        print(f"  {name}: heap {int(heap) / objects:.1f}, indexes {int(indexes) / objects:.1f}, "
              f"TOAST {int(toast) / objects:.1f} bytes an object")

    psql(admin, "UPDATE docsync.objects SET touched = touched - interval '2 days'")
    psql(admin, "VACUUM ANALYZE")
    started = time.monotonic()
    server = BackendMemory(database)
    pruned, prune_peak = timed([args.bench_objects, "prune", hub, str(args.chunks)], env)
    prune_seconds = time.monotonic() - started
    server_peak = server.stop()
    load = os.getloadavg()
    left = int(psql(admin, "SELECT count(*) FROM docsync.objects"))
    print(f"{pruned}; {left} objects left; {prune_seconds:.1f} s, client peak "
          f"{prune_peak:.0f} MiB, server backend peak {server_peak:.0f} MiB (RssAnon); load "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    figures = {"hub": "postgres", "chunks": args.chunks, "objects": objects,
               "tables_bytes": total, "data_bytes": data, "metadata_per_object": per_object,
               "fill_seconds": fill_seconds, "prune_seconds": prune_seconds,
               "prune_client_peak_mib": prune_peak,
               "prune_server_peak_mib": server_peak, "load_average": load, "objects_left": left}
    os.makedirs(args.results, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    with open(os.path.join(args.results, f"objects-postgres-{stamp}.json"), "w") as f:
        json.dump(figures, f, indent=2)
    if args.keep:
        print(f"kept database {database}")
    else:
        subprocess.run(["psql", args.postgres, "-X", "-q", "-c", f"DROP DATABASE {database}"])


if __name__ == "__main__":
    main()
