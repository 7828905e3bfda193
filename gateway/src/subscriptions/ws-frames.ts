import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import type { SharedResult } from './sharing';

/**
 * Bytes that may wait in the gateway (past the kernel's socket buffers, which fill first) for one
 * subscriber of a shared subscription before it is judged too slow and its subscription ends with
 * SLOW_CONSUMER: a client that stops reading cannot make the gateway hold events without bound.
 */
export const MAX_BEHIND_BYTES = 1 << 20;

/** What writing one shared event to one subscriber came to. */
export type Written = 'sent' | 'closed' | 'slow';

/**
 * The `next` messages of one subscription over one client socket, written straight to the socket
 * as whole WebSocket frames (docs/adr/0013): the message is the subscription's own head
 * (`{"id":…,"type":"next","payload":`, serialised once when it subscribes) and the event's payload
 * serialised once for every subscriber, framed here with no per-subscriber work by graphql-ws or
 * `ws`. The bytes are exactly what graphql-ws would have sent; it still sends everything else
 * (`complete`, `error`, pings) through `ws`, after these frames, in the order they happen.
 *
 * Sound because the server's sockets never compress (`perMessageDeflate: false`, ./server.ts) and
 * graphql-ws never fragments a message, so `ws` keeps no framing state between messages.
 */
export class DirectNext {
  private readonly head: Buffer;

  constructor(
    private readonly ws: WebSocket,
    private readonly raw: Duplex,
    id: string,
  ) {
    this.head = Buffer.from(`{"id":${JSON.stringify(id)},"type":"next","payload":`);
  }

  write(result: SharedResult): Written {
    // Closing: no data frame may follow a close frame (graphql-ws skips sends then too).
    if (this.ws.readyState !== WebSocket.OPEN || this.raw.destroyed) return 'closed';
    if (this.raw.writableLength > MAX_BEHIND_BYTES) return 'slow';
    const payload = result.payload();
    const length = this.head.length + payload.length + 1;
    const headerLength = length < 126 ? 2 : length < 65_536 ? 4 : 10;
    const frame = Buffer.allocUnsafe(headerLength + length);
    frame[0] = 0x81; // FIN, text
    if (headerLength === 2) frame[1] = length;
    else if (headerLength === 4) {
      frame[1] = 126;
      frame.writeUInt16BE(length, 2);
    } else {
      frame[1] = 127;
      frame.writeBigUInt64BE(BigInt(length), 2);
    }
    this.head.copy(frame, headerLength);
    payload.copy(frame, headerLength + this.head.length);
    frame[frame.length - 1] = 0x7d; // }
    this.raw.write(frame);
    return 'sent';
  }
}
