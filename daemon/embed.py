#!/usr/bin/env python3
# Turns a text file into a C file defining `const char NAME[]`, so the
# binary carries the file (config/demo.conf) without reading it at run time.
import sys

src, dst, name = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(src, 'rb').read()
with open(dst, 'w') as out:
    out.write('/* From %s by daemon/embed.py; edit the source, not this. */\n'
              % src.split('/')[-1])
    out.write('const char %s[] = {\n' % name)
    for i in range(0, len(data), 12):
        out.write('    ' + ' '.join('0x%02x,' % b for b in data[i:i + 12])
                  + '\n')
    out.write('    0x00,\n};\n')
