// webstreams.mjs - Node's WHATWG streams (node:stream/web) on the workloads
// of Node's own benchmark/webstreams suite, printing the same lines as
// weir-bench's chunk-core suites so the two can be lined up:
//
//   <suite> <params>: <operations per second>
//
// The rate is n operations (chunks, reads, iterations or constructions) over
// the elapsed time of the whole case, the best of `reps` runs (3 by default;
// the first run also warms up the JIT).
//
//   node webstreams.mjs [SUITE...] [reps=N]
//
// SUITE is one of the names below; none means all of them.

import {
  ReadableStream,
  WritableStream,
  TransformStream,
} from 'node:stream/web';

let reps = 3;

function fail(msg) {
  console.error(`webstreams.mjs: ${msg}`);
  process.exit(1);
}

function check(cond, what) {
  if (!cond)
    fail(`check failed: ${what}`);
}

// Runs `body` (an async function returning the number of operations it
// did) `reps` times and prints the best rate.
async function measure(name, body) {
  let best = 0;
  for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint();
    const ops = await body();
    const ns = Number(process.hrtime.bigint() - t0);
    const rate = ns > 0 ? (ops * 1e9) / ns : 0;
    if (rate > best)
      best = rate;
  }
  console.log(`${name}: ${Math.round(best)}`);
}

// pipe-to: a source enqueuing the same 1 KiB buffer n times, piped into a
// sink whose write does nothing; count strategy, hwm H on both sides.
// (Node's benchmark passes highWaterMark inside the underlying source,
// where the spec ignores it; here it goes in the strategy, as intended.)
async function pipeTo(n, hwmR, hwmW) {
  const chunk = Buffer.alloc(1024);
  let pulled = 0;
  let written = 0;
  const rs = new ReadableStream({
    pull(controller) {
      if (pulled++ < n)
        controller.enqueue(chunk);
      else
        controller.close();
    },
  }, { highWaterMark: hwmR });
  const ws = new WritableStream({
    write() {
      written++;
    },
  }, { highWaterMark: hwmW });
  await rs.pipeTo(ws);
  check(written === n, `pipe-to wrote ${written} of ${n}`);
  return n;
}

// readable-read type=normal: an endless source enqueuing a one-byte chunk
// per pull; n awaited reads.
async function readNormal(n) {
  const one = new Uint8Array([0x61]);
  const reader = new ReadableStream({
    pull(controller) {
      controller.enqueue(one);
    },
  }).getReader();
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const { value } = await reader.read();
    bytes += value.length;
  }
  reader.releaseLock();
  check(bytes === n, 'readable-read normal byte count');
  return n;
}

// readable-read type=byob: a byte source answering each one-byte BYOB read
// through byobRequest (the zero-copy path), the reader reusing the buffer
// it gets back.
async function readByob(n) {
  const reader = new ReadableStream({
    type: 'bytes',
    pull(controller) {
      const req = controller.byobRequest;
      req.view[0] = 0x61;
      req.respond(1);
    },
  }).getReader({ mode: 'byob' });
  let view = new Uint8Array(1);
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const { value } = await reader.read(view);
    bytes += value[0] === 0x61 ? value.length : 0;
    view = new Uint8Array(value.buffer, 0, 1);
  }
  reader.releaseLock();
  check(bytes === n, 'readable-read byob byte count');
  return n;
}

// readable-read-buffered: hwm B; start pre-fills B chunks, pull refills up
// to B, the source closes after n chunks.
async function readBuffered(n, size) {
  let enqueued = 0;
  const rs = new ReadableStream({
    start(controller) {
      enqueued += size;
      for (let i = 0; i < size; i++)
        controller.enqueue('a');
    },
    pull(controller) {
      const k = Math.min(size, n - enqueued);
      enqueued += k;
      for (let i = 0; i < k; i++)
        controller.enqueue('a');
      if (enqueued >= n)
        controller.close();
    },
  }, { highWaterMark: size });
  const reader = rs.getReader();
  let reads = 0;
  for (;;) {
    const { done } = await reader.read();
    if (done)
      break;
    reads++;
  }
  check(reads === n, `readable-read-buffered read ${reads} of ${n}`);
  return reads;
}

// tee: n chunks ('a', or a fresh 16-byte array for a byte stream, since
// enqueueing transfers it), both branches read in lockstep.
async function tee(n, bytes) {
  let pulled = 0;
  const source = bytes ? {
    type: 'bytes',
    pull(controller) {
      if (pulled++ < n)
        controller.enqueue(new Uint8Array(16));
      else
        controller.close();
    },
  } : {
    pull(controller) {
      if (pulled++ < n)
        controller.enqueue('a');
      else
        controller.close();
    },
  };
  const [b1, b2] = new ReadableStream(source).tee();
  const r1 = b1.getReader();
  const r2 = b2.getReader();
  let reads = 0;
  for (;;) {
    const [x, y] = await Promise.all([r1.read(), r2.read()]);
    if (x.done || y.done)
      break;
    reads++;
  }
  check(reads === n, `tee read ${reads} of ${n}`);
  return n;
}

// readable-async-iterator: for-await over an endless source of 1s, summing
// until the sum passes n.
async function asyncIterator(n) {
  const rs = new ReadableStream({
    pull(controller) {
      controller.enqueue(1);
    },
  });
  let sum = 0;
  for await (const x of rs) {
    sum += x;
    if (sum > n)
      break;
  }
  check(sum === n + 1, 'async iterator sum');
  return n;
}

// lifecycle: per iteration a new stream emits four 1 KiB chunks and closes;
// it is consumed by a reader, the iterator, a pipe into a counting sink, or
// through an identity TransformStream.
const lifecycleChunk = Buffer.alloc(1024);

function fourChunks() {
  let i = 0;
  return {
    pull(controller) {
      if (i++ < 4)
        controller.enqueue(lifecycleChunk);
      else
        controller.close();
    },
  };
}

async function lifecycle(n, kind) {
  let chunks = 0;
  for (let i = 0; i < n; i++) {
    switch (kind) {
    case 'readable': {
      const reader = new ReadableStream(fourChunks()).getReader();
      while (!(await reader.read()).done)
        chunks++;
      break;
    }
    case 'async-iterator':
      for await (const c of new ReadableStream(fourChunks()))
        chunks += c.length === 1024 ? 1 : 0;
      break;
    case 'pipe-to':
      await new ReadableStream(fourChunks()).pipeTo(new WritableStream({
        write() {
          chunks++;
        },
      }));
      break;
    case 'pipe-through': {
      const reader = new ReadableStream(fourChunks())
        .pipeThrough(new TransformStream())
        .getReader();
      while (!(await reader.read()).done)
        chunks++;
      break;
    }
    }
  }
  check(chunks === 4 * n, `lifecycle ${kind}: ${chunks} chunks`);
  return n;
}

// creation: construction cost alone. The newest object goes to a
// module-level variable so the work cannot be optimised away (Node's
// benchmark does the same).
let lastCreated = null;

async function creation(n, kind) {
  const ctor = { ReadableStream, WritableStream, TransformStream }[kind];
  for (let i = 0; i < n; i++)
    lastCreated = new ctor();
  check(lastCreated instanceof ctor, 'creation');
  return n;
}

// tee-memory: one fast branch that reads every chunk and one slow branch
// that reads one chunk per `every` chunks the fast one reads, then drains.
// Every chunk the fast branch has received is already queued in the slow
// branch (the tee enqueues into both at once), so fast - slow, in bytes, is
// the slow branch's queue to within one chunk. Prints the peak.
async function teeMemory(n, size, every) {
  const chunk = new Uint8Array(size);
  let pulled = 0;
  const [fast, slow] = new ReadableStream({
    pull(controller) {
      if (pulled++ < n)
        controller.enqueue(chunk);
      else
        controller.close();
    },
  }).tee();
  const rf = fast.getReader();
  const rs = slow.getReader();
  let nf = 0;
  let ns = 0;
  let peak = 0;
  for (;;) {
    const { done } = await rf.read();
    if (done)
      break;
    nf++;
    if (nf % every === 0) {
      await rs.read();
      ns++;
    }
    peak = Math.max(peak, (nf - ns) * size);
  }
  while (!(await rs.read()).done)
    ns++;
  check(nf === n && ns === n, 'tee-memory chunk counts');
  return peak;
}

const suites = {
  'pipe-to': async () => {
    for (const h of [1, 1024, 4096])
      await measure(
        `pipe-to highWaterMarkR=${h} highWaterMarkW=${h} n=500000`,
        () => pipeTo(500000, h, h));
  },
  'readable-read': async () => {
    await measure('readable-read type=normal n=100000',
      () => readNormal(100000));
    await measure('readable-read type=byob n=100000', () => readByob(100000));
  },
  'readable-read-buffered': async () => {
    for (const b of [1, 10, 100, 1000])
      await measure(`readable-read-buffered bufferSize=${b} n=100000`,
        () => readBuffered(100000, b));
  },
  'tee': async () => {
    await measure('tee type=normal n=100000', () => tee(100000, false));
    await measure('tee type=bytes n=100000', () => tee(100000, true));
  },
  'readable-async-iterator': async () => {
    await measure('readable-async-iterator n=100000',
      () => asyncIterator(100000));
  },
  'lifecycle': async () => {
    for (const k of ['readable', 'async-iterator', 'pipe-to', 'pipe-through'])
      await measure(`lifecycle kind=${k} n=50000`, () => lifecycle(50000, k));
  },
  'creation': async () => {
    for (const k of ['ReadableStream', 'WritableStream', 'TransformStream'])
      await measure(`creation kind=${k} n=50000`, () => creation(50000, k));
  },
  'tee-memory': async () => {
    const peak = await teeMemory(100000, 1024, 100);
    console.log(`tee-memory n=100000 chunkSize=1024 slowEvery=100: ${peak}`);
  },
};

const wanted = [];
for (const arg of process.argv.slice(2)) {
  if (arg.startsWith('reps=')) {
    reps = Number(arg.slice(5));
    if (!Number.isInteger(reps) || reps < 1)
      fail(`bad ${arg}`);
  } else if (arg in suites) {
    wanted.push(arg);
  } else {
    fail(`unknown suite '${arg}'; suites: ${Object.keys(suites).join(' ')}`);
  }
}
for (const name of wanted.length ? wanted : Object.keys(suites))
  await suites[name]();
