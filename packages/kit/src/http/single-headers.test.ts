import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { repeatedHeader } from './single-headers';

describe('single-valued headers', () => {
  it('finds Authorization, X-API-Key or Idempotency-Key sent twice, whatever the case', () => {
    expect(repeatedHeader(['Host', 'h', 'Idempotency-Key', 'a', 'idempotency-key', 'b'])).toBe('Idempotency-Key');
    expect(repeatedHeader(['authorization', 'Bearer a', 'AUTHORIZATION', 'Bearer b'])).toBe('Authorization');
    expect(repeatedHeader(['X-Api-Key', 'k', 'x-api-key', 'k'])).toBe('X-API-Key');
    // Once each, other repeated headers: nothing to refuse.
    expect(
      repeatedHeader(['Idempotency-Key', 'a', 'Authorization', 'Bearer x', 'X-API-Key', 'k', 'Accept', 'a', 'Accept', 'b']),
    ).toBeNull();
  });

  it('takes an Idempotency-Key line holding a comma for two keys folded into one line', () => {
    expect(repeatedHeader(['Idempotency-Key', 'k1, k2'])).toBe('Idempotency-Key');
    expect(repeatedHeader(['idempotency-key', 'k1,k2'])).toBe('Idempotency-Key');
    expect(repeatedHeader(['Idempotency-Key', 'k1,'])).toBe('Idempotency-Key');
    // Authorization's own syntax has commas (auth-params): only a second line is a repeat there.
    expect(repeatedHeader(['Authorization', 'Digest a="1", b="2"'])).toBeNull();
    expect(repeatedHeader(['x-api-kez', 'a', 'x-api-key', 'b'])).toBeNull();
  });

  it('reads what Node joins (Idempotency-Key) or drops (a second Authorization) from the raw headers', async () => {
    let seen: IncomingMessage | undefined;
    const server: Server = createServer((req, res) => {
      seen = req;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest({ port, host: '127.0.0.1' }, (res) => {
        res.resume();
        res.on('end', resolve);
      });
      // An array value is sent as one header line per value.
      req.setHeader('Idempotency-Key', ['a', 'b']);
      req.setHeader('Authorization', ['Bearer 1', 'Bearer 2']);
      req.on('error', reject);
      req.end();
    });
    server.close();
    expect(seen!.headers['idempotency-key']).toBe('a, b');
    expect(seen!.headers.authorization).toBe('Bearer 1');
    expect(repeatedHeader(seen!.rawHeaders)).toBe('Idempotency-Key');
  });
});
