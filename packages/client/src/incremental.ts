import type { GraphQLErrorEntry } from './errors.js';

/**
 * Incremental delivery (`@defer`) as the gateway sends it: `multipart/mixed; deferSpec=20220824`
 * (Apollo's format). The first part carries `data`, each later one `incremental` items placed at
 * their `path`; `hasNext` is false on the last. Pure functions: the client's `deferred()` feeds
 * them the body as it arrives.
 */

/** What a client that takes parts sends (and still takes a whole answer). */
export const INCREMENTAL_ACCEPT = 'multipart/mixed;deferSpec=20220824,application/graphql-response+json,application/json;q=0.9';

export interface IncrementalItem {
  data?: Record<string, unknown> | null;
  path: (string | number)[];
  label?: string;
  errors?: GraphQLErrorEntry[];
}

export interface IncrementalPayload {
  hasNext: boolean;
  data?: Record<string, unknown> | null;
  errors?: GraphQLErrorEntry[];
  incremental?: IncrementalItem[];
  extensions?: Record<string, unknown>;
}

/** The boundary a multipart Content-Type names (`-` when it names none, as the gateway's does). */
export function boundaryOf(contentType: string): string {
  const match = /;\s*boundary=(?:"([^"]+)"|([^;,\s]+))/i.exec(contentType);
  return match?.[1] ?? match?.[2] ?? '-';
}

/**
 * Splits a multipart/mixed body into the JSON of its parts as the text arrives: `push` returns
 * the parts completed by this chunk; `done` says whether the closing delimiter was seen.
 */
export class MultipartReader {
  private buffer = '';
  private closed = false;
  private readonly delimiter: string;

  constructor(boundary: string) {
    this.delimiter = `--${boundary}`;
  }

  get done(): boolean {
    return this.closed;
  }

  push(text: string): IncrementalPayload[] {
    if (this.closed) return [];
    this.buffer += text;
    const parts: IncrementalPayload[] = [];
    for (;;) {
      const start = this.buffer.indexOf(this.delimiter);
      if (start === -1) break;
      // What precedes the first delimiter is a preamble; between two, a part.
      const next = this.buffer.indexOf(`\r\n${this.delimiter}`, start + this.delimiter.length);
      const afterDelimiter = this.buffer.slice(start + this.delimiter.length, start + this.delimiter.length + 2);
      if (afterDelimiter === '--') {
        this.closed = true;
        this.buffer = '';
        break;
      }
      if (next === -1) break;
      const part = this.buffer.slice(start + this.delimiter.length, next);
      this.buffer = this.buffer.slice(next + 2);
      const bodyAt = part.indexOf('\r\n\r\n');
      if (bodyAt === -1) continue;
      const body = part.slice(bodyAt + 4).trim();
      if (body !== '') parts.push(JSON.parse(body) as IncrementalPayload);
    }
    return parts;
  }
}

/**
 * The answer so far with one more payload merged in (a new object: earlier snapshots stay as they
 * were). Items land at their path; their errors join the answer's.
 */
export function mergePayload(
  so: { data?: Record<string, unknown> | null; errors?: GraphQLErrorEntry[] } | null,
  payload: IncrementalPayload,
): { data?: Record<string, unknown> | null; errors?: GraphQLErrorEntry[] } {
  if (so === null) {
    return { ...(payload.errors ? { errors: payload.errors } : {}), ...('data' in payload ? { data: payload.data ?? null } : {}) };
  }
  const data = so.data ? structuredClone<Record<string, unknown>>(so.data) : (so.data ?? null);
  const errors = [...(so.errors ?? []), ...(payload.errors ?? [])];
  for (const item of payload.incremental ?? []) {
    if (item.errors) errors.push(...item.errors);
    if (!item.data || !data) continue;
    const target = objectAt(data, item.path);
    if (target) deepMerge(target, item.data);
  }
  return { ...(errors.length ? { errors } : {}), data };
}

function objectAt(data: unknown, path: readonly (string | number)[]): Record<string, unknown> | null {
  let value = data;
  for (const p of path) {
    if (value === null || typeof value !== 'object') return null;
    value = (value as Record<string | number, unknown>)[p];
  }
  return isRecord(value) ? value : null;
}

function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const key of Object.keys(source)) {
    const was = target[key];
    const now = source[key];
    if (isRecord(was) && isRecord(now)) deepMerge(was, now);
    else if (Array.isArray(was) && Array.isArray(now) && was.length === now.length) {
      now.forEach((v: unknown, i) => {
        const w: unknown = was[i];
        if (isRecord(w) && isRecord(v)) deepMerge(w, v);
        else was[i] = v;
      });
    } else target[key] = now;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
