#!/usr/bin/env python3
"""Allocation calls of a heaptrack capture (benches/alloc-wrap.sh), by the innermost project
frame and its caller. Usage: alloc-calls.py CAPTURE.gz [TOP]  (needs heaptrack_print, c++filt)"""
import re, collections, subprocess, sys, os, tempfile
cap = sys.argv[1]; top = int(sys.argv[2]) if len(sys.argv) > 2 else 40
with tempfile.NamedTemporaryFile(suffix='.txt', delete=False) as f:
    fl = f.name
subprocess.run(['heaptrack_print', '-f', cap, '--flamegraph-cost-type', 'allocations', '-F', fl],
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
rows = []
for l in open(fl):
    l = l.rstrip('\n'); stack, n = l.rsplit(' ', 1)
    rows.append((int(n), [re.sub(r' \([^)]*\)$', '', f.strip()) for f in stack.split(';') if f.strip()]))
os.unlink(fl)
syms = sorted({f for _, fr in rows for f in fr})
dem = subprocess.run(['c++filt'], input='\n'.join(syms), capture_output=True, text=True).stdout.split('\n')
m = {a: re.sub(r'\[[0-9a-f]+\]', '', b) for a, b in zip(syms, dem)}
def clean(s):
    s = re.sub(r'::h[0-9a-f]{16}$', '', m.get(s, s)).replace('_$u7b$$u7b$closure$u7d$$u7d$', '{closure}')
    return s.replace('$LT$', '<').replace('$GT$', '>').replace('$u20$', ' ').replace('..', '::').replace('$C$', ',').replace('$RF$', '&')
skip = re.compile(r'(^_?<?alloc::|^_?<?core::|^_?<?std::|__rust|RawVec|hashbrown|memdbg|Counting|GlobalAlloc|^_?<?serde|^_?<&mut serde|^_?<?bytes::|fmt|Clone>::clone|ToOwned|ToString|^0x|^main$|^_?<str as|^_?<\[|^_?<u8|Vec<|String|smallvec|Box<|<T as|^_?<?tokio::runtime|^_?<?tokio::task::coop|^_?<?futures|poll_fn|^_?<?tracing)')
agg = collections.Counter()
for n, fr in rows:
    fr = [clean(x) for x in fr]
    meaningful = [f for f in fr if not skip.search(f)][::-1]   # innermost first
    agg[' <- '.join(x[:90] for x in meaningful[:2]) if meaningful else '?'] += n
print('total allocation calls', sum(agg.values()))
for k, v in agg.most_common(top): print(v, k)
