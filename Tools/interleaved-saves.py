#!/usr/bin/env python3
"""Atomic saves (temp file, write 4 KiB, fsync, close, rename over) taken in turn on several
folders, one save each at a time, so that the machine's weather falls on all of them alike:
a plain folder and two docsync mounts (the build before a change and after it) compare within
one run, where Tools/bench-filesystems.py's rounds moved several-fold on a shared machine.

Usage: Tools/interleaved-saves.py [--batch N] SAVES FOLDER...   (each FOLDER is made when missing)
Prints, per folder, the median microseconds of each step and of the whole save.

With --batch N each turn is N saves back to back, as an editor's autosave or the bench's row
makes them, where work a save leaves behind (a commit, a flush) meets the next save; it
prints, per folder, the median milliseconds of a turn over SAVES turns, with every turn's.
"""

import os
import statistics
import sys
import time

STEPS = ["open", "write", "fsync", "close", "rename", "save"]


def save(folder, data, times):
    document = os.path.join(folder, "document.txt")
    temporary = os.path.join(folder, ".document.txt.tmp")
    marks = [time.perf_counter()]
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    marks.append(time.perf_counter())
    os.write(fd, data)
    marks.append(time.perf_counter())
    os.fsync(fd)
    marks.append(time.perf_counter())
    os.close(fd)
    marks.append(time.perf_counter())
    os.rename(temporary, document)
    marks.append(time.perf_counter())
    for step, start, end in zip(STEPS, marks, marks[1:]):
        times[step].append((end - start) * 1e6)
    times["save"].append((marks[-1] - marks[0]) * 1e6)


def batches(turns, batch, folders, data):
    """Turns of `batch` saves back to back, the folders' order rotating from turn to turn."""
    times = {folder: [] for folder in folders}
    unused = {step: [] for step in STEPS}
    for turn in range(turns):
        shift = turn % len(folders)
        for folder in folders[shift:] + folders[:shift]:
            start = time.perf_counter()
            for _ in range(batch):
                save(folder, data, unused)
            times[folder].append((time.perf_counter() - start) * 1e3)
    for folder in folders:
        each = " ".join(f"{value:.0f}" for value in times[folder])
        print(f"{folder}: {statistics.median(times[folder]):.1f} ms a turn of {batch} saves "
              f"(median of {turns}: {each})")


def main():
    arguments = sys.argv[1:]
    batch = None
    if arguments[:1] == ["--batch"] and len(arguments) > 1:
        batch, arguments = int(arguments[1]), arguments[2:]
    if len(arguments) < 2:
        sys.exit(__doc__)
    saves, folders = int(arguments[0]), arguments[1:]
    data = os.urandom(4096)
    for folder in folders:
        os.makedirs(folder, exist_ok=True)
    if batch is not None:
        batches(saves, batch, folders, data)
        return
    times = {folder: {step: [] for step in STEPS} for folder in folders}
    for i in range(saves):
        # Alternate the order, so that no folder always goes first after the previous one.
        for folder in folders if i % 2 == 0 else reversed(folders):
            save(folder, data, times[folder])
    for folder in folders:
        medians = ", ".join(f"{step} {statistics.median(times[folder][step]):.0f}" for step in STEPS)
        print(f"{folder}: {medians} (µs, medians of {saves})")


if __name__ == "__main__":
    main()
