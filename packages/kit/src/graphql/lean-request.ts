import type { IncomingMessage } from 'node:http';
import { HaloError } from '../errors/errors';
import { repeatedHeader } from '../http/single-headers';

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Whether the lean path takes this request, from its headers alone (the body is still unread):
 * POST to exactly `/graphql`, `application/json` in UTF-8, a known `Content-Length` within the
 * limit, no `Content-Encoding`, an `Accept` that picks `application/json`, no repeated single
 * header. Anything else goes to the express app, as before.
 */
export function leanAdmits(req: IncomingMessage, bodyLimit: number): boolean {
  if (req.method !== 'POST' || req.url !== '/graphql') return false;
  const h = req.headers;
  if (h['content-encoding'] !== undefined || h['transfer-encoding'] !== undefined) return false;
  const length = h['content-length'];
  if (length === undefined || !/^\d{1,15}$/.test(length) || Number(length) > bodyLimit) return false;
  if (!isJsonUtf8(h['content-type'])) return false;
  const accept = h.accept;
  if (accept !== undefined && accept !== '*/*' && accept !== 'application/json') return false;
  return repeatedHeader(req.rawHeaders) === null;
}

/** `application/json`, in UTF-8 (no charset or `utf-8`): the type express.json reads without a 415. */
function isJsonUtf8(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const lower = contentType.toLowerCase();
  if (lower === 'application/json') return true;
  const semi = lower.indexOf(';');
  if (semi < 0 || lower.slice(0, semi).trim() !== 'application/json') return false;
  const params = lower.slice(semi + 1).trim();
  return params === 'charset=utf-8' || params === 'charset="utf-8"';
}

/** The body as body-parser reads it here: the bytes of `Content-Length`, strict UTF-8, any JSON. */
export function readBody(req: IncomingMessage, done: (err: unknown, body?: unknown) => void): void {
  const chunks: Buffer[] = [];
  let settled = false;
  const finish = (err: unknown, body?: unknown) => {
    if (settled) return;
    settled = true;
    done(err, body);
  };
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('error', () => finish(new HaloError('BAD_REQUEST', 'Bad request')));
  req.on('aborted', () => finish(new HaloError('BAD_REQUEST', 'Bad request')));
  req.on('end', () => {
    const buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    if (buf.length === 0) return finish(null, {});
    let text: string;
    try {
      text = STRICT_UTF8.decode(buf);
    } catch {
      return finish(new HaloError('BAD_REQUEST', 'Invalid JSON'));
    }
    // iconv-lite (under body-parser) drops a leading byte order mark.
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    try {
      finish(null, JSON.parse(text));
    } catch {
      finish(new HaloError('BAD_REQUEST', 'Invalid JSON'));
    }
  });
}

/** One plain GraphQL operation as a POST body carries it (the subgraphs' and the gateway's lean paths). */
export interface LeanRequest {
  query: string;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
}

/**
 * `extensions` that only name the client library (Apollo Client 4 sends
 * `{"clientLibrary":{"name":"@apollo/client","version":…}}` with every operation): nothing to act
 * on (usage reporting, which reads it, is off; Halo reads the client's name from its headers).
 */
function onlyClientLibrary(extensions: unknown): boolean {
  if (typeof extensions !== 'object' || extensions === null || Array.isArray(extensions)) return false;
  for (const key in extensions) if (key !== 'clientLibrary') return false;
  return true;
}

/** The body as one plain operation, or null when Apollo must read it (batches, extensions other than the client library's, odd fields). */
export function leanRequest(body: unknown): LeanRequest | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const b = body as Record<string, unknown>;
  for (const key in b) {
    if (key === 'query' || key === 'variables' || key === 'operationName') continue;
    if (key === 'extensions' && onlyClientLibrary(b.extensions)) continue;
    return null;
  }
  const { query, variables, operationName } = b;
  if (typeof query !== 'string' || query === '') return null;
  if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return null;
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return null;
  return {
    query,
    variables: (variables ?? undefined) as Record<string, unknown> | undefined,
    operationName: operationName ?? undefined,
  };
}
