#!/usr/bin/env python3
"""The figures of benches/cg-marginal.sh from two callgrind outputs and their runs' JSON lines:
instructions, allocation calls and socket reads per event, the 20 s run minus the 10 s run."""
import json, re, sys
from collections import Counter

def read(path):
    """Total instructions, and calls per called function name."""
    names, calls, total, callee = {}, Counter(), 0, None
    for line in open(path):
        if line.startswith(('fn=', 'cfn=')):
            key, rest = line.rstrip('\n').split('=', 1)
            # callgrind names a function once, `(id) name`, and by `(id)` after that.
            m = re.match(r'\((\d+)\)(?: (.*))?', rest)
            if m and m.group(2):
                names[m.group(1)] = m.group(2)
            name = names.get(m.group(1), rest) if m else rest
            if key == 'cfn':
                callee = name
        elif line.startswith('calls='):
            calls[callee] += int(line.split()[0][6:])
        elif line.startswith('totals:') or line.startswith('summary:'):
            total = int(line.split()[1])
    return total, calls

def events(path):
    return json.loads(open(path).readline())['events']

(t10, c10), (t20, c20) = read(sys.argv[1]), read(sys.argv[2])
n = events(sys.argv[4]) - events(sys.argv[3])
def per(pattern):
    return (sum(v for k, v in c20.items() if pattern in k) - sum(v for k, v in c10.items() if pattern in k)) / n
print(f'instructions per event: {(t20 - t10) / n:.0f}')
def calls(names):
    return (sum(c20[k] for k in names) - sum(c10[k] for k in names)) / n
# The sidecar's allocator calls mimalloc's plain entries for values that need no alignment.
mallocs = calls(['mi_malloc', 'mi_malloc_aligned', 'mi_zalloc', 'mi_zalloc_aligned'])
print(f'mallocs per event: {mallocs:.2f}, frees {per("mi_free"):.2f}, reallocs {per("mi_realloc_aligned"):.2f}')
print(f'socket reads per event: {per("as tokio::io::async_read::AsyncRead>::poll_read"):.3f}')
