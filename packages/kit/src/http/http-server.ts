import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';

/** How long a client may take over its request (`HTTP_HEADERS_TIMEOUT_MS`, `HTTP_REQUEST_TIMEOUT_MS`). */
export interface HttpTimeouts {
  /** Until the request's headers are complete. */
  headersTimeoutMs: number;
  /** Until the whole request, body included, is received (not how long the answer may take). */
  requestTimeoutMs: number;
}

/** What a client that broke HTTP gets, as the contract's `{"error": …}` (node answers these itself otherwise). */
const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request Timeout', 'Request timeout'],
  HPE_HEADER_OVERFLOW: [431, 'Request Header Fields Too Large', 'Request headers too large'],
};
const BAD_REQUEST: [number, string, string] = [400, 'Bad Request', 'Bad request'];

function answer(socket: Duplex, [status, reason, message]: [number, string, string]): void {
  const body = JSON.stringify({ error: message });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `cache-control: no-store\r\nconnection: close\r\n\r\n${body}`,
  );
}

/**
 * Slow clients cost one connection each, for a bounded time: a client that has not sent its
 * headers within `headersTimeoutMs`, or its whole request within `requestTimeoutMs`, gets 408
 * `{"error":"Request timeout"}` and its connection is closed (checked every second, so up to a
 * second late). Requests node cannot parse get 400 (headers over node's limit: 431), also as
 * contract errors rather than node's bare status lines. A WebSocket upgrade is not timed after it
 * is accepted, and an answer may take as long as it needs once the request is in.
 */
export function guardHttpServer(server: Server, timeouts: HttpTimeouts): void {
  server.headersTimeout = timeouts.headersTimeoutMs;
  server.requestTimeout = timeouts.requestTimeoutMs;
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // A reset or a half-sent answer: nothing can be written any more.
    if (
      err.code === 'ECONNRESET' ||
      !socket.writable ||
      (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent
    ) {
      socket.destroy();
      return;
    }
    answer(socket, CLIENT_ERRORS[err.code ?? ''] ?? BAD_REQUEST);
  });
}

/**
 * The interval at which node checks those timeouts is fixed when the server is created
 * (`connectionsCheckingInterval`, default 30 s): pass these options to `createServer`.
 */
export const CONNECTIONS_CHECKING = { connectionsCheckingInterval: 1_000 } as const;
