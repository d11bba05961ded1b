// pipeline.mjs - Node's file-to-socket path in weir-bench's `e2e` suite:
//
//   node pipeline.mjs FILE PORT
//
// stream.pipeline(fs.createReadStream(FILE), net.connect(PORT, 127.0.0.1))
// with Node's defaults, the way a Node program forwards a file. Exits 0
// when the pipeline finished without error.

import { createReadStream } from 'node:fs';
import { connect } from 'node:net';
import { pipeline } from 'node:stream/promises';

const [file, port] = process.argv.slice(2);
if (!file || !(Number(port) > 0)) {
  console.error('usage: node pipeline.mjs FILE PORT');
  process.exit(2);
}
try {
  await pipeline(createReadStream(file),
    connect({ host: '127.0.0.1', port: Number(port) }));
} catch (err) {
  console.error(`pipeline.mjs: ${err.message}`);
  process.exit(1);
}
