import { write, writeSync } from 'node:fs';
import pino, { type DestinationStream, type Logger } from 'pino';
import { currentRequestId } from './request-context';

export type { Logger };

/** Returned outside a request, so the merge below can skip the copy. */
const OUTSIDE: Record<string, never> = Object.freeze({});

/**
 * Structured JSON logs; secrets are redacted wherever they could appear. Inside a request every
 * line gets its `requestId` from the request context (a per-line mixin: one small object per line
 * inside a request, nothing outside one), so no code passes the id or makes a child logger for it.
 */
export function createLogger(name: string, level: string = process.env.LOG_LEVEL ?? 'info', destination?: DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    name,
    level,
    base: { service: name },
    timestamp: isoTime,
    mixin: () => {
      const requestId = currentRequestId();
      return requestId === undefined ? OUTSIDE : { requestId };
    },
    // A field the line sets itself wins; the frozen OUTSIDE object is never written to.
    mixinMergeStrategy: (fields: object, mixed: object) => (mixed === OUTSIDE ? fields : Object.assign(mixed, fields)),
    // An error is its message, code and stack, never the object graph a library hangs on it
    // (node-postgres attaches its whole client to an idle client's error: connection settings,
    // the backend's cancel key). `err` is where every log call puts an error.
    serializers: { err: errorForLog },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["x-api-key"]',
        '*.password',
        '*.token',
        '*.accessToken',
        '*.refreshToken',
      ],
      censor: '[redacted]',
    },
  };
  return pino(options, destination ?? bufferedStdout());
}

let isoMs = NaN;
let isoField = '';

/**
 * pino's `stdTimeFunctions.isoTime` (`,"time":"<ISO 8601>"`), formatted once per millisecond:
 * under load many lines share one, and formatting a Date per line showed in the gateway's profile.
 */
export function isoTime(): string {
  const now = Date.now();
  if (now !== isoMs) {
    isoMs = now;
    isoField = `,"time":"${new Date(now).toISOString()}"`;
  }
  return isoField;
}

/** The most stack frames a logged error keeps: where it was thrown and how it got there. */
const STACK_FRAMES = 12;
const MAX_MESSAGE = 1_000;
/** `cause` chains (and an AggregateError's errors) are followed this far. */
const MAX_NESTING = 3;

export interface LoggedError {
  type: string;
  message: string;
  code?: string | number;
  stack?: string;
  cause?: LoggedError | string;
  errors?: (LoggedError | string)[];
}

/**
 * What a log line keeps of an error: its type, message, `code` (a SQLSTATE, an errno, a gRPC
 * status) and a bounded stack, with its `cause` chain. No other property is copied: a library's
 * error may carry its client, socket or request, and those hold credentials and keys.
 */
export function errorForLog(err: unknown, nesting = 0): LoggedError | string {
  if (!(err instanceof Error)) {
    if (typeof err === 'string') return err.slice(0, MAX_MESSAGE);
    const message = (err as { message?: unknown } | null)?.message;
    return { type: typeof err, message: typeof message === 'string' ? message.slice(0, MAX_MESSAGE) : String(err).slice(0, MAX_MESSAGE) };
  }
  const out: LoggedError = { type: err.constructor?.name || err.name, message: String(err.message).slice(0, MAX_MESSAGE) };
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') out.code = typeof code === 'string' ? code.slice(0, 100) : code;
  if (typeof err.stack === 'string')
    out.stack = err.stack
      .split('\n', STACK_FRAMES + 1)
      .join('\n')
      .slice(0, 4_000);
  if (nesting < MAX_NESTING) {
    if (err.cause !== undefined) out.cause = errorForLog(err.cause, nesting + 1);
    if (err instanceof AggregateError) out.errors = err.errors.slice(0, 5).map((e: unknown) => errorForLog(e, nesting + 1));
  }
  return out;
}

/** How long a log line may wait in the buffer before it is written. */
const FLUSH_EVERY_MS = 250;
/** Buffered lines are written once they reach this, else at the next tick of FLUSH_EVERY_MS. */
const FLUSH_AT_BYTES = 64 * 1024;
/** Lines beyond this, while the reader does not keep up, are dropped rather than held. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
let stdout: DestinationStream | undefined;

/**
 * Standard output through one buffer per process: lines are written in batches of up to 64 KiB,
 * and at least every 250 ms, instead of one write system call per line (at the gateway's
 * per-request access log those writes showed in its profile under load, and smaller batches still
 * did on a proxied GET; docs/benchmarks/rest-proxy.md). What is buffered is written synchronously when
 * the process exits; only a SIGKILL can lose the last 250 ms of lines.
 */
function bufferedStdout(): DestinationStream {
  if (stdout) return stdout;
  const dest = new LineBuffer(1, FLUSH_AT_BYTES);
  setInterval(() => dest.flush(), FLUSH_EVERY_MS).unref();
  process.on('exit', () => dest.flushSync());
  return (stdout = dest);
}

/**
 * The buffer behind `bufferedStdout`. Not sonic-boom (pino.destination): its synchronous flush at
 * exit retries every failed write forever, so a service whose reader was gone (the launcher killed,
 * EPIPE) spun at exit and ignored SIGTERM. Here a closed output drops the lines and logging stops;
 * a full pipe (EAGAIN) is retried briefly at exit, then dropped: exiting matters more.
 */
export class LineBuffer implements DestinationStream {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private inFlight: Buffer | undefined;
  private closed = false;

  constructor(
    private readonly fd: number,
    private readonly minLength = 4096,
  ) {}

  write(line: string): void {
    if (this.closed) return;
    if (this.pendingBytes > MAX_BUFFERED_BYTES) return;
    const buf = Buffer.from(line);
    this.pending.push(buf);
    this.pendingBytes += buf.length;
    if (this.pendingBytes >= this.minLength) this.flush();
  }

  /** Writes what is buffered without blocking; one write at a time. */
  flush(done?: () => void): void {
    if (this.closed || this.inFlight || !this.pendingBytes) return void done?.();
    const chunk = this.take();
    this.inFlight = chunk;
    writeAll(this.fd, chunk, (err, rest) => {
      this.inFlight = undefined;
      if (err?.code === 'EAGAIN') {
        // The reader is slow: keep the lines (bounded above) for the next flush.
        this.pending.unshift(rest);
        this.pendingBytes += rest.length;
      } else if (err) this.close();
      done?.();
    });
  }

  /** At exit: what is in flight and buffered, written once; any failure drops it. */
  flushSync(): void {
    if (this.closed) return;
    const chunks = [...(this.inFlight ? [this.inFlight] : []), this.take()];
    this.inFlight = undefined;
    let retries = 100; // ~100 ms of a full pipe, then the rest is dropped
    for (let chunk of chunks) {
      while (chunk.length) {
        try {
          chunk = chunk.subarray(writeSync(this.fd, chunk));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || retries-- <= 0) return this.close();
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
        }
      }
    }
  }

  private take(): Buffer {
    const chunk = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    return chunk;
  }

  private close(): void {
    this.closed = true;
    this.pending = [];
    this.pendingBytes = 0;
  }
}

/** Writes `chunk` in as many writes as it takes; on an error, `rest` is what was not written. */
function writeAll(fd: number, chunk: Buffer, done: (err: NodeJS.ErrnoException | null, rest: Buffer) => void): void {
  write(fd, chunk, (err, n) => {
    if (err) return done(err, chunk);
    if (n < chunk.length) return writeAll(fd, chunk.subarray(n), done);
    done(null, chunk.subarray(n));
  });
}
