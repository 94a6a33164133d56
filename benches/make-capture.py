#!/usr/bin/env python3
"""Writes the benchmark capture: every event of fixtures/engine/<engine>/*.sse (files in
name order, events split at blank lines), cycled to N events. Usage:
    make-capture.py [--engine kilo] [--events 100000] [--bare] OUT.sse
`--bare` leaves out the events in the `/global/event` wrapper (`{directory, project,
payload}`), which a bridge on `GET /event` never sees: a capture on which bridges that
dropped wrapped events and those that map them do the same work.
The same construction as the SSE parser bench (crates/engine-client/benches/sse.rs)."""
import argparse, pathlib, sys

root = pathlib.Path(__file__).resolve().parent.parent
ap = argparse.ArgumentParser()
ap.add_argument("--engine", default="kilo", choices=["kilo"])
ap.add_argument("--events", type=int, default=100_000)
ap.add_argument("--bare", action="store_true")
ap.add_argument("out")
a = ap.parse_args()
events = []
for f in sorted((root / "fixtures/engine" / a.engine).glob("*.sse")):
    text = f.read_bytes().decode("utf-8", "replace")
    parts = text.split("\n\n")
    # split_inclusive semantics: every piece keeps its terminator; a trailing piece without
    # one is kept as is.
    for i, p in enumerate(parts):
        last = i == len(parts) - 1
        if last and p == "":
            continue
        if a.bare and any(l.startswith("data: {\"directory\"") or l.startswith("data: {\"payload\"")
                          for l in p.split("\n")):
            continue
        events.append((p if last else p + "\n\n").encode())
if not events:
    sys.exit("no captures found")
with open(a.out, "wb") as out:
    for i in range(a.events):
        out.write(events[i % len(events)])
