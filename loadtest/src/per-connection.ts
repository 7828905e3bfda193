import type autocannon from 'autocannon';

/**
 * Distinct callers under load: autocannon's `setupClient` hook runs once per connection (each
 * connection is one `Client` with its own copy of the request), and `client.setHeaders` changes
 * that connection's request for the whole run, reconnects included. Connection i sends
 * `headers[i % headers.length]` on top of the run's own headers (content-type, body stay), so with
 * as many header sets as connections every connection is its own caller: no two connections share
 * credentials, and a gateway's per-caller work (token verification, in-flight dedupe, which never
 * crosses callers) is exercised as with real users.
 *
 * A fresh function per autocannon run: the counter starts at the first header set every run.
 */
export function perConnectionHeaders(headers: readonly Record<string, string>[]): (client: autocannon.Client) => void {
  if (headers.length === 0) throw new Error('perConnectionHeaders: no header sets');
  let next = 0;
  return (client) => {
    client.setHeaders({ ...headers[next++ % headers.length]! });
  };
}
