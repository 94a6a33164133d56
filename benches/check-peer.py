#!/usr/bin/env python3
"""Checks that the Node peer sends the webview what the bridge sends it: given the envelopes
each wrote (`bb-harness ingest --out A`, `node peer.mjs --out B`), the same messages in the
same order, each equal as JSON (key order and number spelling aside: the bridge writes
`1795306898933.0`, Node `1795306898933`). That covers every topic (`bb/events`, `bb/state`,
`bb/connection`) and everything in them: per message the session, tab and `seq`; per item
its id, type, `ts`, class and payload (coalesced deltas included, so both batch and coalesce
alike); every `bb/state` with each session's title, status, `updatedAt`, queued prompts,
parent and open prompts. Prints the envelope counts per topic and the last `bb/state` per
session; on a difference, the first few with their index. Exit status 1 on a difference.
Usage: check-peer.py BRIDGE.jsonl NODE.jsonl"""
import json
import sys
from collections import Counter


def read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def summary(messages):
    topics = Counter(m.get("topic") for m in messages)
    states = [m for m in messages if m.get("topic") == "bb/state"]
    last = {s["sessionId"]: s for s in states[-1]["payload"]["sessions"]} if states else {}
    items = sum(len(m["payload"]["events"]) for m in messages if m.get("topic") == "bb/events")
    return topics, last, items


bridge, node = read(sys.argv[1]), read(sys.argv[2])
problems = []
for i, (a, b) in enumerate(zip(bridge, node)):
    if a != b:
        problems.append(f"message {i + 1}: bridge {json.dumps(a)[:300]}\n     Node   {json.dumps(b)[:300]}")
if len(bridge) != len(node):
    problems.append(f"the bridge wrote {len(bridge)} messages, Node {len(node)}")
(bt, bs, bi), (nt, ns, ni) = summary(bridge), summary(node)
print(f"bridge: {dict(sorted(bt.items()))}, {bi} items; Node: {dict(sorted(nt.items()))}, {ni} items")
for session in sorted(set(bs) | set(ns)):
    a, b = bs.get(session), ns.get(session)
    mark = "" if a == b else "  DIFFERS: Node " + json.dumps(b)
    print(f"  last bb/state of {session}: {json.dumps(a)}{mark}")
for p in problems[:5]:
    print("DIFF", p)
if problems:
    print(f"{len(problems)} differences")
sys.exit(1 if problems else 0)
