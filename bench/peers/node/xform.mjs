// xform.mjs - Node's side of weir-bench's `xform` suite, the workload of
// Node's bench-filehandle-pull-vs-webstream in its classic-streams form:
//
//   node xform.mjs FILE PORT
//
// createReadStream(FILE) -> a Transform that uppercases ASCII ->
// zlib.createGzip({ level: 1 }) -> net.Socket to 127.0.0.1:PORT, joined by
// stream.pipeline with Node's defaults. Exits 0 when it finished.

import { createReadStream } from 'node:fs';
import { connect } from 'node:net';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

const [file, port] = process.argv.slice(2);
if (!file || !(Number(port) > 0)) {
  console.error('usage: node xform.mjs FILE PORT');
  process.exit(2);
}

// a-z (0x61-0x7a) to A-Z in a new buffer, as a Transform would.
const upper = new Transform({
  transform(chunk, _enc, done) {
    const out = Buffer.allocUnsafe(chunk.length);
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      out[i] = c >= 0x61 && c <= 0x7a ? c - 32 : c;
    }
    done(null, out);
  },
});

try {
  await pipeline(createReadStream(file), upper, createGzip({ level: 1 }),
    connect({ host: '127.0.0.1', port: Number(port) }));
} catch (err) {
  console.error(`xform.mjs: ${err.message}`);
  process.exit(1);
}
