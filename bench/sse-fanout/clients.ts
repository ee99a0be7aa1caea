/**
 * The client side of the SSE fan-out benchmark, run as a child process of `sse-fanout.bench.ts`:
 * `node clients.ts <stream url> <connections> <sampleEvery>`. It opens the streams over raw TCP
 * (the lightest client there is, so the servers, not the clients, are what is measured), in waves
 * so the listen backlog never overflows, and reports `ready` once every stream has its headers.
 *
 * Every stream counts its events (`data:` fields, found in the raw bytes); every `sampleEvery`-th
 * stream also parses each event's publish time (`"t":`) and records the latency to its receipt.
 * `expect { perStream, timeoutMs }` waits until every stream has that many events (or the time is
 * up), reports the counts and latencies, and resets them; `stop` closes everything.
 */
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/** Streams opened at once; the rest wait for these to answer. */
const WAVE = 250;
const DATA_FIELD = Buffer.from('data: ');
const PUBLISHED_AT = /"t":([0-9.]+)/g;

/** One stream's tally. */
interface Stream {
  socket: Socket;
  ready: boolean;
  events: number;
  /** The last bytes of the previous chunk, so a field split across chunks is still found once. */
  tail: Buffer;
  /** Unparsed text of a sampled stream; undefined for streams that only count. */
  text?: string;
}

type Command = { type: 'expect'; perStream: number; timeoutMs: number } | { type: 'stop' };

const latencies: number[] = [];
/** Receipt time of the latest chunk that held an event. */
let lastEventAt = 0;

function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

function countFields(stream: Stream, chunk: Buffer, receivedAt: number): void {
  const bytes = stream.tail.length > 0 ? Buffer.concat([stream.tail, chunk]) : chunk;
  for (let at = bytes.indexOf(DATA_FIELD); at >= 0; at = bytes.indexOf(DATA_FIELD, at + DATA_FIELD.length)) {
    stream.events++;
    lastEventAt = receivedAt;
  }
  // Keep fewer bytes than the field's length: a field cannot be counted twice.
  stream.tail = Buffer.from(bytes.subarray(Math.max(0, bytes.length - (DATA_FIELD.length - 1))));
}

function sampleLatencies(stream: Stream, chunk: Buffer, receivedAt: number): void {
  stream.text = (stream.text ?? '') + chunk.toString('latin1');
  let consumed = 0;
  for (const match of stream.text.matchAll(PUBLISHED_AT)) {
    // A number at the very end of the text may still be growing in the next chunk.
    const end = (match.index ?? 0) + match[0].length;
    if (end === stream.text.length) break;
    latencies.push(receivedAt - Number(match[1]));
    consumed = end;
  }
  stream.text = stream.text.slice(consumed);
}

function open(url: URL, sampled: boolean): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const stream: Stream = { socket, ready: false, events: 0, tail: Buffer.alloc(0), text: sampled ? '' : undefined };
    socket.setNoDelay(true);
    socket.on('error', reject);
    socket.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\n\r\n`);
    socket.on('data', (chunk: Buffer) => {
      const receivedAt = nowMs();
      if (!stream.ready) {
        if (!chunk.subarray(0, 12).toString().includes(' 200')) return reject(new Error(`stream refused: ${chunk.toString().split('\r\n')[0]}`));
        stream.ready = true;
        resolve(stream);
      }
      countFields(stream, chunk, receivedAt);
      if (stream.text !== undefined) sampleLatencies(stream, chunk, receivedAt);
    });
  });
}

async function openAll(url: URL, count: number, sampleEvery: number): Promise<Stream[]> {
  const streams: Stream[] = [];
  for (let start = 0; start < count; start += WAVE) {
    const wave = Array.from({ length: Math.min(WAVE, count - start) }, (_, i) => open(url, (start + i) % sampleEvery === 0));
    streams.push(...(await Promise.all(wave)));
  }
  return streams;
}

async function expectEvents(streams: Stream[], perStream: number, timeoutMs: number): Promise<object> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && streams.some((stream) => stream.events < perStream)) await new Promise((resolve) => setTimeout(resolve, 10));
  const received = streams.reduce((sum, stream) => sum + stream.events, 0);
  const complete = streams.filter((stream) => stream.events === perStream).length;
  const result = { type: 'result', received, complete, latencies: [...latencies], lastEventAt };
  latencies.length = 0;
  for (const stream of streams) stream.events = 0;
  return result;
}

async function main(): Promise<void> {
  const [url, count, sampleEvery] = [new URL(process.argv[2]), Number(process.argv[3]), Number(process.argv[4])];
  const started = nowMs();
  const streams = await openAll(url, count, sampleEvery);
  process.send?.({ type: 'ready', streams: streams.length, openMs: nowMs() - started });
  process.on('message', async (command: Command) => {
    if (command.type === 'expect') process.send?.(await expectEvents(streams, command.perStream, command.timeoutMs));
    else {
      for (const stream of streams) stream.socket.destroy();
      process.exit(0);
    }
  });
}

main().catch((err: unknown) => {
  process.send?.({ type: 'error', message: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
