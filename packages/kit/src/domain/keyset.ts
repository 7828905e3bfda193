import { badRequest } from '../errors/errors';
import { isIdText } from './ids';

/**
 * Relay-style connections over keyset pagination, the same for every service: `first` (default
 * 10, 0–100) rows strictly after an opaque cursor, one extra row fetched to know whether there is
 * a next page. A cursor is base64url of a prefixed position, never a bare offset, and only a
 * cursor this codec could have issued is accepted (400 `Invalid cursor`).
 */
export interface CursorCodec<K> {
  encode(position: K): string;
  decode(cursor: string): K;
}

export interface Connection<T> {
  edges: { cursor: string; node: T }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

export interface ConnectionArgs {
  first?: number | null;
  after?: string | null;
}

export const DEFAULT_FIRST = 10;
export const MAX_FIRST = 100;

function cursorCodec<K>(prefix: string, format: (position: K) => string, parse: (text: string) => K | null): CursorCodec<K> {
  const encode = (position: K) => Buffer.from(prefix + format(position), 'utf8').toString('base64url');
  return {
    encode,
    decode(cursor) {
      const text = Buffer.from(cursor, 'base64url').toString('utf8');
      const position = text.startsWith(prefix) ? parse(text.slice(prefix.length)) : null;
      // Buffer decoding forgives padding and stray characters: compare with what we would issue.
      if (position === null || encode(position) !== cursor) throw badRequest('Invalid cursor');
      return position;
    },
  };
}

/** Rows in id order: the position is the last id seen. */
export function idCursor(prefix: string): CursorCodec<{ id: number }> {
  return cursorCodec(
    prefix,
    (p) => String(p.id),
    (text) => (isIdText(text) ? { id: Number(text) } : null),
  );
}

const TIME_AND_ID = /^(.+)\|(\d{1,15})$/;
const isCanonicalIso = (s: string) => {
  const ms = Date.parse(s);
  return !Number.isNaN(ms) && new Date(ms).toISOString() === s;
};

/** Rows in (createdAt, id) order, e.g. newest first: the position is both of the last row seen. */
export function timeIdCursor(prefix: string): CursorCodec<{ createdAt: string; id: number }> {
  return cursorCodec(
    prefix,
    (p) => `${p.createdAt}|${p.id}`,
    (text) => {
      const m = TIME_AND_ID.exec(text);
      // Only the canonical timestamp we issue: Date.parse accepts strings Postgres rejects ('1', '2026-02-30…').
      return m && isCanonicalIso(m[1]!) ? { createdAt: m[1]!, id: Number(m[2]) } : null;
    },
  );
}

/** `first` defaults to 10 and must be 0–100; `after` must be a cursor this codec issued. */
export function connectionArgs<K>(codec: CursorCodec<K>, args: ConnectionArgs): { first: number; after: K | null } {
  const first = args.first ?? DEFAULT_FIRST;
  if (!Number.isInteger(first) || first < 0 || first > MAX_FIRST) throw badRequest(`first must be between 0 and ${MAX_FIRST}`);
  return { first, after: args.after ? codec.decode(args.after) : null };
}

/** A connection from `first + 1` rows fetched past the cursor (the extra row means "more"). */
export function toConnection<K, T extends K>(codec: CursorCodec<K>, rows: readonly T[], first: number): Connection<T> {
  const edges = rows.slice(0, first).map((node) => ({ cursor: codec.encode(node), node }));
  return { edges, pageInfo: { hasNextPage: rows.length > first, endCursor: edges.at(-1)?.cursor ?? null } };
}

/** The whole read: validate the arguments, fetch `first + 1` rows after the position (none for first: 0), build the connection. */
export async function keysetConnection<K, T extends K>(
  codec: CursorCodec<K>,
  args: ConnectionArgs,
  fetchAfter: (limit: number, after: K | null) => Promise<T[]>,
): Promise<Connection<T>> {
  const { first, after } = connectionArgs(codec, args);
  const rows = first === 0 ? [] : await fetchAfter(first + 1, after);
  return toConnection(codec, rows, first);
}
