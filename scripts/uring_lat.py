#!/usr/bin/env python3
"""Latency of io_uring operations, per opcode, from a perf trace.

    perf record -e io_uring:io_uring_submit_req -e io_uring:io_uring_complete \
        -a -o uring.data -- sleep 1
    perf script -i uring.data > uring.txt
    python3 scripts/uring_lat.py uring.txt

Pairs each submission with its completion (same ring and user_data) and
prints count, p50, p90 and max in microseconds for every opcode.
"""
import collections
import re
import sys

EVENT = re.compile(
    r"\s([\d.]+):\s+io_uring:io_uring_(submit_req|complete): ring ([^,]+), "
    r"req [^,]+, user_data ([^,]+)(?:, opcode (\w+))?"
)


def main(path):
    submitted = {}
    latencies = collections.defaultdict(list)
    with open(path) as trace:
        for line in trace:
            event = EVENT.search(line)
            if not event:
                continue
            at, kind, ring, user_data, opcode = event.groups()
            key = (ring, user_data)
            if kind == "submit_req":
                submitted[key] = (float(at), opcode)
            elif key in submitted:
                start, opcode = submitted.pop(key)
                latencies[opcode].append((float(at) - start) * 1e6)
    for opcode, values in sorted(latencies.items()):
        values.sort()
        n = len(values)
        print(f"{opcode:12} {n:6}  p50 {values[n // 2]:7.0f}  "
              f"p90 {values[n * 9 // 10]:7.0f}  max {values[-1]:7.0f} us")


if __name__ == "__main__":
    main(sys.argv[1])
