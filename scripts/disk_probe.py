#!/usr/bin/env python3
"""What the disk under the data directory gives to the write patterns the
partition log can use, so server figures can be compared with the device.

    python3 scripts/disk_probe.py [directory] [writes]

Each line: MB/s and p50 latency of `writes` 1,000,037-byte appends, one
writer, then two concurrent writers on separate files. Direct variants
rewrite the partial last 4 KiB block like the server does.
"""
import mmap
import os
import sys
import threading
import time

ALIGN = 4096
SIZE = 1_000_037


def appends(path, flags, fsync, direct, writes, buf):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | flags, 0o644)
    latencies, end = [], 0
    started = time.perf_counter()
    for _ in range(writes):
        began = time.perf_counter()
        if direct:
            start = end & ~(ALIGN - 1)
            length = ((end + SIZE + ALIGN - 1) & ~(ALIGN - 1)) - start
            os.pwrite(fd, memoryview(buf)[:length], start)
        else:
            os.pwrite(fd, memoryview(buf)[:SIZE], end)
        end += SIZE
        if fsync:
            os.fdatasync(fd)
        latencies.append(time.perf_counter() - began)
    elapsed = time.perf_counter() - started
    os.close(fd)
    os.unlink(path)
    latencies.sort()
    return writes * SIZE / elapsed / 1e6, latencies[len(latencies) // 2] * 1e3


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "."
    writes = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    buf = mmap.mmap(-1, SIZE + 2 * ALIGN)  # page-aligned, as O_DIRECT needs
    buf.write(b"x" * (SIZE + 2 * ALIGN))
    variants = [
        ("buffered write + fdatasync", 0, True, False),
        ("direct write + fdatasync", os.O_DIRECT, True, True),
        ("direct O_DSYNC write", os.O_DIRECT | os.O_DSYNC, False, True),
    ]
    for name, flags, fsync, direct in variants:
        path = os.path.join(directory, "disk_probe.0")
        mbps, p50 = appends(path, flags, fsync, direct, writes, buf)
        print(f"1 writer   {name:28} {mbps:7.0f} MB/s  p50 {p50:.3f} ms")
        results = {}

        def writer(k):
            path = os.path.join(directory, f"disk_probe.{k}")
            results[k] = appends(path, flags, fsync, direct, writes, buf)

        threads = [threading.Thread(target=writer, args=(k,)) for k in range(2)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        total = 2 * writes * SIZE / (time.perf_counter() - started) / 1e6
        p50 = max(r[1] for r in results.values())
        print(f"2 writers  {name:28} {total:7.0f} MB/s  p50 {p50:.3f} ms")


if __name__ == "__main__":
    main()
