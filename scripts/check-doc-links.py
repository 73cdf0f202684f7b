#!/usr/bin/env python3
"""Checks that every relative markdown link in the given files resolves: the file
exists and, for FILE.md#anchor, the anchor is one of FILE's headings (GitHub slugs)."""
import re, sys, os
def slugs(path):
    out=set(); seen={}; fence=False
    for l in open(path, encoding='utf-8'):
        if l.startswith('```'): fence=not fence; continue
        m=re.match(r'^#{1,6} (.*)', l)
        if m and not fence:
            s=re.sub(r'[^\w\- ]','',m.group(1).strip().lower()).replace(' ','-')
            if s in seen: seen[s]+=1; s=f"{s}-{seen[s]}"
            else: seen[s]=0
            out.add(s)
    return out
bad=0
for f in sys.argv[1:]:
    text=open(f, encoding='utf-8').read()
    text=re.sub(r'```.*?```', '', text, flags=re.S)
    for m in re.finditer(r'\]\(([^)\s]+)\)', text):
        target=m.group(1)
        if re.match(r'[a-z]+:', target): continue
        path, _, anchor = target.partition('#')
        full=os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(full):
            print(f"{f}: {target}: no such file"); bad+=1; continue
        if anchor and full.endswith('.md') and anchor not in slugs(full):
            print(f"{f}: {target}: no such heading"); bad+=1
sys.exit(1 if bad else 0)
