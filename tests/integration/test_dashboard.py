#!/usr/bin/env python3
"""test_dashboard.py SOURCE_ROOT - config/dashboard.json imports and
asks for what weir serves.

The file is JSON with Grafana's import inputs; every series a panel's
query names is one weir.conf.md documents (the Metrics table); and
promtool, which parses PromQL as Prometheus does, accepts every query
(as recording rules, with Grafana's variables filled in).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

root = sys.argv[1]
failures = []
dash = json.load(open(os.path.join(root, 'config', 'dashboard.json')))
doc = open(os.path.join(root, 'config', 'weir.conf.md')).read()
documented = set(re.findall(r'^\| `(weir_\w+)` \|', doc, re.M))

if not any(i.get('pluginId') == 'prometheus' for i in dash.get('__inputs', [])):
    failures.append('no prometheus data source among __inputs')
exprs = []
for p in dash['panels']:
    for t in p.get('targets', []):
        exprs.append((p['title'], t['expr']))
if len(exprs) < 20:
    failures.append('only %d queries' % len(exprs))
for title, e in exprs:
    for name in re.findall(r'\b(weir_\w+)', e):
        if name not in documented:
            failures.append('%s: %s is not a documented series' % (title, name))

rules = ['groups:', '  - name: dashboard', '    rules:']
for i, (title, e) in enumerate(exprs):
    e = e.replace('$__rate_interval', '1m').replace('$instance', '.*')
    rules.append('      - record: dashboard:q%d' % i)
    rules.append('        expr: %s' % json.dumps(e))
with tempfile.NamedTemporaryFile('w', suffix='.yml', delete=False) as f:
    f.write('\n'.join(rules) + '\n')
    path = f.name
try:
    r = subprocess.run(['promtool', 'check', 'rules', path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        failures.append('promtool check rules:\n' + r.stdout + r.stderr)
finally:
    os.unlink(path)

print('%d panels, %d queries, %d documented series' %
      (len(dash['panels']), len(exprs), len(documented)))
for f in failures:
    print('FAIL: ' + f)
sys.exit(1 if failures else 0)
