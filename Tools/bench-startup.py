#!/usr/bin/env python3
"""Start-up figures for docsync: how long `docsync mount` takes to be ready, and the daemon's
peak memory, for a large library with a long history.

The library (--documents documents, --versions-per-document versions each in one line of
history; 100,000 and 10 by default: a million versions) is written straight into a SQLite hub
and a device's state folder by `library-generator` (Tools/LibraryGenerator, the real schemas
through SQLiteHub and LocalStore): going through FUSE would take hours. The device has pulled
everything and shows every document, so the mount has nothing to do but start.

Reported: the generation time; the time from running `docsync mount` to its return (the mount
is ready); the daemon's peak RSS (VmHWM in /proc/PID/status) then, and again after `docsync
sync` returned (the first loop compares the tree with what it showed: a stat per document);
and that time. The daemon's CPU time at ready is reported too: other load on the machine
stretches the wall-clock time, not that. Run as the user who mounts; writes startup-<user>.json into --results.
"""

import argparse
import json
import os
import pwd
import shutil
import subprocess
import sys
import time


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    """User and system CPU time of a process so far: a figure that other load on the machine
    does not stretch, unlike the wall-clock time to ready."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docsync", required=True)
    parser.add_argument("--generator", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--root", default=f"/var/tmp/docsync-bench-startup-{os.getuid()}")
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--versions-per-document", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="10,000 documents")
    parser.add_argument("--keep", action="store_true", help="keep the generated library")
    args = parser.parse_args()
    if args.quick:
        args.documents = 10_000

    root = args.root
    hub, state, mount = f"{root}/hub.sqlite", f"{root}/state", f"{root}/mnt"
    if os.path.ismount(mount):
        subprocess.run(["fusermount3", "-uz", mount], check=False)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(mount)

    started = time.monotonic()
    subprocess.run([args.generator, hub, state, "--documents", str(args.documents),
                    "--versions-per-document", str(args.versions_per_document)], check=True)
    generated = time.monotonic() - started
    sizes = {"hub_mib": os.path.getsize(hub) / 2**20,
             "state_db_mib": os.path.getsize(f"{state}/state.sqlite") / 2**20}

    started = time.monotonic()
    subprocess.run([args.docsync, "mount", mount, "--hub", hub, "--state", state,
                    "--device", "bench"], check=True)
    ready = time.monotonic() - started
    with open(f"{state}/docsync.pid") as f:
        pid = int(f.read().strip())
    peak_ready = status_kib(pid, "VmHWM") / 1024
    cpu_ready = cpu_seconds(pid)
    try:
        started = time.monotonic()
        subprocess.run([args.docsync, "sync", mount, "--timeout", "1200"], check=True)
        settled = time.monotonic() - started
        peak_settled = status_kib(pid, "VmHWM") / 1024
        rss_settled = status_kib(pid, "VmRSS") / 1024
        shown = len(os.listdir(f"{mount}/d000"))
    finally:
        subprocess.run([args.docsync, "unmount", mount], check=False)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)

    user = pwd.getpwuid(os.getuid()).pw_name
    result = {
        "user": user, "documents": args.documents,
        "versions": args.documents * args.versions_per_document,
        "generate_s": generated, "mount_ready_s": ready, "daemon_cpu_at_ready_s": cpu_ready,
        "peak_rss_ready_mib": peak_ready,
        "first_sync_s": settled, "peak_rss_after_sync_mib": peak_settled,
        "rss_after_sync_mib": rss_settled, "documents_in_d000": shown, **sizes,
    }
    print(f"start-up as {user}: {args.documents} documents, {result['versions']} versions "
          f"(generated in {generated:.0f} s; hub {sizes['hub_mib']:.0f} MiB, "
          f"state database {sizes['state_db_mib']:.0f} MiB)")
    print(f"  mount ready        {ready:8.2f} s   (target < 3 s; daemon CPU {cpu_ready:.2f} s)")
    print(f"  peak RSS at ready  {peak_ready:8.1f} MiB (target < 200 MiB)")
    print(f"  first sync         {settled:8.2f} s   peak RSS then {peak_settled:.1f} MiB, "
          f"RSS {rss_settled:.1f} MiB")
    os.makedirs(args.results, exist_ok=True)
    with open(f"{args.results}/startup-{user}.json", "w") as f:
        json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
