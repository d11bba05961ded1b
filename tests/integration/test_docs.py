#!/usr/bin/env python3
"""test_docs.py WEIR SOURCE_ROOT - every default the docs name is the
code's.

`weir --dump-defaults` prints the defaults as the parser builds them
(daemon/conf/defaults.c). Each place that names a default is read with
its own small reader: the tables of config/weir.conf.md and its prose
("`key` (default X)"), the .TP items of weir.conf(5) and weir(8), and the
option lines of `weir --help` and `weir pipe --help`. A default named
differently from the code fails, and so does a place where a default the
test expects to find is no longer found (the reader would then be
checking nothing).
"""
import re
import subprocess
import sys

SIZE_UNITS = {'': 1, 'b': 1, 'kib': 1 << 10, 'mib': 1 << 20, 'gib': 1 << 30}
TIME_UNITS = {'': 1000, 'ms': 1, 's': 1000, 'min': 60000, 'h': 3600000}
SIZES = {'high_water_mark', 'chunk_size', 'pool_size', 'notsent_lowat',
         'max_record', 'batch_bytes'}
DURATIONS = {'drain_timeout', 'handshake_timeout', 'keepalive_idle',
             'tcp_user_timeout', 'send_timeout', 'connect_timeout',
             'flush_interval', 'checkpoint_interval', 'ignore_older',
             'rotate_wait', 'line_timeout', 'rescan_interval', 'batch_age',
             'timeout', 'header_timeout'}


def norm(key, text):
    """A default as written, in the form --dump-defaults prints."""
    t = text.strip().strip('`').strip().lower()
    if key in SIZES:
        m = re.fullmatch(r'(\d+)\s*(b|kib|mib|gib)?', t)
        return str(int(m[1]) * SIZE_UNITS[m[2] or '']) if m else t
    if key in DURATIONS:
        m = re.fullmatch(r'(\d+)\s*(ms|s|min|h)?', t)
        return '%dms' % (int(m[1]) * TIME_UNITS[m[2] or '']) if m else t
    if key == 'workers' and re.fullmatch(r'(one )?per (online )?cpu|auto', t):
        return 'auto'
    if t in ('no limit', 'none (no limit)'):
        return 'none'
    return t


def from_markdown(text):
    """(key, default) from every table with a 'default' column, and from
    prose written `key` (default X)."""
    found = []
    col = None
    for line in text.splitlines():
        if not line.startswith('|'):
            col = None
            continue
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if col is None:
            col = cells.index('default') if 'default' in cells else -1
            continue
        if col < 0 or set(cells[0]) <= set('-: ') or len(cells) <= col:
            continue
        m = re.fullmatch(r'`(\w+)`', cells[0])
        value = cells[col]
        if m and not value.startswith(('the pipeline', '—')):
            found.append((m[1], value))
    for m in re.finditer(r'`(\w+)` \(default ([^)]+)\)', text):
        found.append((m[1], m[2]))
    return found


def troff_plain(s):
    s = s.replace('\\(en', '-').replace('\\-', '-').replace('\\fI', '')
    s = s.replace('\\fR', '').replace('\\fB', '').replace('"', '')
    return s


def from_man(text):
    """(key, default) from each .TP item: its tag names the key (a config
    key, key=value, or a --long-option), its paragraph the default."""
    found = []
    items = re.split(r'^\.TP\n', text, flags=re.M)[1:]
    for item in items:
        item = re.split(r'^\.(?:SH|PP|TP)\b', item, flags=re.M)[0]
        tag, _, body = item.partition('\n')
        tag = troff_plain(tag)
        m = re.search(r'--([a-z][a-z-]*)', tag) or \
            re.match(r'\.B[IR]?\s+([a-z_]+)', tag)
        if not m:
            continue
        key = m[1].replace('-', '_')
        body = troff_plain(body)
        for pat in (r'(\w+)\s*\(default\)',              # info (default)
                    r'^\.B (\S+)\n\([^)]*the default\)',  # .B auto (..., the default)
                    r'default:?[ \t]*(?:\n\.BR? )?'        # default 5s, default: X
                    r'([^\s:;,)]+(?: (?:KiB|MiB|GiB|B|ms|s)\b)?'
                    r'(?: per (?:online )?CPU)?)'):
            d = re.search(pat, body, re.M)
            if d:
                found.append((key, d[1]))
                break
    return found + prose_defaults(troff_plain(text))


def prose_defaults(text):
    """Prose: ".B key" followed within two lines by "(default X)"."""
    found = []
    for m in re.finditer(r'^\.B (\w+)\n(?:[^\n]*\n){0,2}?\(default ([^)]+)\)',
                         text, re.M):
        found.append((m[1], m[2]))
    return found


def from_help(text):
    """(key, default) from option lines: --long-name ... (default[:] X)."""
    found = []
    for m in re.finditer(r'--([a-z][a-z-]*)[^\n]*\(default:? ([^)]+)\)', text):
        found.append((m[1].replace('-', '_'), m[2]))
    return found


def main():
    weir, root = sys.argv[1], sys.argv[2]
    out = subprocess.run([weir, '--dump-defaults'], check=True,
                         capture_output=True, text=True).stdout
    code = dict(line.split('=', 1) for line in out.splitlines())
    print('code:', ', '.join('%s=%s' % kv for kv in code.items()))

    def read(path):
        with open(root + '/' + path, encoding='utf-8') as f:
            return f.read()

    def run_help(*args):
        r = subprocess.run([weir, *args], capture_output=True, text=True)
        return r.stdout + r.stderr

    places = [
        ('config/weir.conf.md', from_markdown(read('config/weir.conf.md')),
         set(code)),
        ('man/weir.conf.5', from_man(read('man/weir.conf.5')), set(code)),
        ('man/weir.8', from_man(read('man/weir.8')),
         {'workers', 'high_water_mark', 'chunk_size', 'drain_timeout'}),
        ('weir pipe --help', from_help(run_help('pipe', '--help')),
         {'workers', 'high_water_mark', 'chunk_size'}),
        ('weir --help', from_help(run_help('--help')), set()),
    ]
    failures = 0
    for name, found, expected in places:
        seen = set()
        for key, value in found:
            if key not in code:
                continue
            seen.add(key)
            if norm(key, value) != code[key]:
                print('FAIL: %s names %s default %r; the code has %s'
                      % (name, key, value, code[key]))
                failures += 1
        missing = expected - seen
        if missing:
            print('FAIL: %s: no default found for %s'
                  % (name, ', '.join(sorted(missing))))
            failures += 1
        print('%s: %d defaults checked (%s)'
              % (name, len(seen), ', '.join(sorted(seen)) or 'none named'))
    if failures:
        print('%d failure(s)' % failures)
        return 1
    print('docs agree with the code')
    return 0


if __name__ == '__main__':
    sys.exit(main())
