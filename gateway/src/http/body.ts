import type { IncomingMessage, ServerResponse } from 'node:http';
import { badRequest, HaloError, toRestError } from '@halo/kit/errors';
import { sendJson } from '@halo/kit/http';
import type { Logger } from '@halo/kit/logging';

/**
 * Request bodies at the gateway: the ones it checks (GraphQL's, and REST JSON bodies) are read
 * once, into memory, with the contract's limit, so a body that is too large or not JSON is
 * refused here with the same answers every service gives. Other REST bodies stream through the
 * proxy, counted against the same limit (src/rest/proxy.ts). Requests without a body never come here.
 */

/** The client went away before its body arrived: nobody is left to answer. */
export class ClientGoneError extends Error {
  override readonly name = 'ClientGoneError';
}

/** 413 `Payload too large`, as every service answers it. */
export const payloadTooLarge = () => new HaloError('PAYLOAD_TOO_LARGE', 'Payload too large');

/** True when the request announces a body (a non-zero Content-Length or any Transfer-Encoding). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined) return length !== '0';
  return req.headers['transfer-encoding'] !== undefined;
}

/**
 * Reads the whole body. A declared Content-Length over the limit is refused before a byte is
 * read; a chunked body is counted as it arrives and refused the moment it passes the limit.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(payloadTooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        // Stop keeping it: the 413 goes out with `Connection: close` and the rest is discarded.
        req.pause();
        reject(payloadTooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onGone = () => {
      cleanup();
      reject(new ClientGoneError('client closed the request before its body ended'));
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('close', onGone);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onGone);
    req.on('close', onGone);
  });
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** `application/json`, `application/problem+json`, … with or without parameters. */
export function isJsonType(contentType: string | undefined): boolean {
  return contentType !== undefined && JSON_TYPE.test(contentType);
}

/** A body that is neither absent nor `identity`-encoded cannot be checked (or parsed) here. */
export function isEncoded(req: IncomingMessage): boolean {
  const encoding = req.headers['content-encoding'];
  return encoding !== undefined && encoding.toLowerCase() !== 'identity';
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

export function parseJson(body: Buffer): unknown {
  try {
    // Strict UTF-8 (RFC 8259): bytes that are not would reach the service as U+FFFD.
    return JSON.parse(STRICT_UTF8.decode(body));
  } catch {
    throw badRequest('Invalid JSON');
  }
}

/** How much of a refused body is read and thrown away, and for how long, before the socket closes. */
export const LINGER_BYTES = 16 * 1024 * 1024;
export const LINGER_MS = 10_000;

/**
 * A lingering close, as nginx's `lingering_close`: the 413 goes out at once, then the rest of the
 * body is read and discarded (at most LINGER_BYTES, for at most LINGER_MS) before the socket is
 * closed. Closing at once would reset a connection the client is still writing to, and most
 * clients (fetch, curl, k6) then report the reset (EPIPE, ECONNRESET) and never read the 413.
 *
 * Node closes a `Connection: close` socket through `socket.destroySoon()` once the answer is
 * written; for this one socket that becomes "end our side, keep reading", and the socket closes
 * when the body has ended, the client closes, or a bound is reached.
 */
export function lingerThenClose(req: IncomingMessage): void {
  if (req.complete) return;
  const socket = req.socket;
  const destroySoon = socket.destroySoon.bind(socket);
  let drained = 0;
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    req.off('data', discard);
    socket.destroySoon = destroySoon;
    destroySoon();
  };
  const discard = (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > LINGER_BYTES) close();
  };
  const timer = setTimeout(close, LINGER_MS).unref();
  socket.destroySoon = () => {
    if (closed || req.complete) return close();
    socket.end();
  };
  req.on('data', discard);
  req.once('end', close);
  socket.once('close', close);
  req.resume();
}

/**
 * Answers a failed body read: 413/400 with the contract's `{error}`; nothing when the client is
 * gone. A 413 closes the connection after discarding the rest of that body (lingerThenClose).
 */
export function sendBodyError(res: ServerResponse, err: unknown, logger: Logger): void {
  if (err instanceof ClientGoneError || res.destroyed) return;
  const { status, body } = toRestError(err);
  if (status >= 500) logger.error({ err }, 'reading the request body failed');
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (status === 413) lingerThenClose(res.req);
  sendJson(res, status, body, status === 413 ? { connection: 'close' } : undefined);
}
