#!/usr/bin/env python3
"""Checks that the Node peer forwards what the bridge forwards: given the envelopes each wrote
(`bb-harness ingest --out A`, `node peer.mjs --out B`), per session the same non-delta events
(id and type, in order), the same delta text per message + part + field (coalescing may split
it differently: the batches differ), and every envelope a `v: 1` `bb/events` event naming its
session. `bb/state` and the bridge's own fields (tabId, seq, class, ts, messageId) are the
bridge's extra work and are not compared. Exit status 1 on a difference.
Usage: check-peer.py BRIDGE.jsonl NODE.jsonl"""
import json, sys
from collections import defaultdict


def read(path):
    events, text, envelopes = defaultdict(list), defaultdict(str), 0
    for line in open(path, encoding="utf-8"):
        msg = json.loads(line)
        if msg.get("topic") != "bb/events":
            continue
        assert msg["v"] == 1 and msg["kind"] == "evt", line[:200]
        envelopes += 1
        session = msg["payload"]["sessionId"]
        for item in msg["payload"]["events"]:
            p = item["payload"]
            if item["type"] == "message.part.delta":
                text[(session, p.get("messageID"), p.get("partID"), p.get("field"))] += p.get("delta", "")
            else:
                assert p.get("sessionID", session) == session, item["id"]
                events[session].append((item["id"], item["type"]))
    return events, text, envelopes


bridge, node = read(sys.argv[1]), read(sys.argv[2])
problems = []
for session in sorted(set(bridge[0]) | set(node[0])):
    a, b = bridge[0].get(session, []), node[0].get(session, [])
    if a != b:
        only_a = [e for e in a if e not in b][:3]
        only_b = [e for e in b if e not in a][:3]
        problems.append(f"session {session}: {len(a)} events from the bridge, {len(b)} from Node; "
                        f"only the bridge's: {only_a}; only Node's: {only_b}")
for key in sorted(set(bridge[1]) | set(node[1]), key=str):
    if bridge[1].get(key) != node[1].get(key):
        problems.append(f"delta text of {key} differs")
events = sum(len(v) for v in bridge[0].values())
print(f"bridge: {bridge[2]} bb/events envelopes; Node: {node[2]}; "
      f"{events} non-delta events and {len(bridge[1])} delta streams compared")
for p in problems[:20]:
    print("DIFF", p)
sys.exit(1 if problems else 0)
