import type { RequestHandler } from 'express';
import { badRequest } from '../errors/errors';

/**
 * Headers that carry exactly one value: credentials and the payment key. Sent twice, Node joins
 * `Idempotency-Key: a` and `Idempotency-Key: b` into one key `a, b` and keeps only the first
 * `Authorization`: either way a guess. They are refused instead, 400 `<Header> must be sent once`
 * (docs/api/conventions.md), judged from the raw headers.
 *
 * `folded`: a comma in the value is two values on one line. RFC 9110 §5.3 lets an intermediary
 * fold repeated lines into one comma-separated line, and fetch's `Headers.append` sends them so;
 * a key is never meant to hold a comma (docs/api/resources.md), so such a line is a repeat too.
 * An `Authorization` value may hold commas of its own (auth-params), so it is judged by lines only.
 */
const SINGLE: readonly { lower: string; name: string; folded: boolean }[] = [
  { lower: 'authorization', name: 'Authorization', folded: false },
  { lower: 'x-api-key', name: 'X-API-Key', folded: false },
  { lower: 'idempotency-key', name: 'Idempotency-Key', folded: true },
];

/** `name` equals `lower` (ASCII letters and `-`) whatever its case, without allocating a string. */
function sameName(name: string, lower: string): boolean {
  if (name.length !== lower.length) return false;
  // `| 0x20` lower-cases an ASCII letter and leaves `-` (0x2d) as it is.
  for (let i = 0; i < lower.length; i++) if ((name.charCodeAt(i) | 0x20) !== lower.charCodeAt(i)) return false;
  return true;
}

/**
 * The display name of the first single-valued header present more than once in `rawHeaders`
 * (`req.rawHeaders`: name, value, name, value…), on two lines or folded into one, or null. One
 * pass, no allocation.
 */
export function repeatedHeader(rawHeaders: readonly string[]): string | null {
  let seen = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    for (let h = 0; h < SINGLE.length; h++) {
      if (!sameName(name, SINGLE[h]!.lower)) continue;
      if (seen & (1 << h) || (SINGLE[h]!.folded && rawHeaders[i + 1]!.includes(','))) return SINGLE[h]!.name;
      seen |= 1 << h;
      break;
    }
  }
  return null;
}

export const repeatedHeaderMessage = (name: string) => `${name} must be sent once`;

/** Every service's HTTP app: a repeated single-valued header is 400 before any route runs. */
export function refuseRepeatedHeaders(): RequestHandler {
  return (req, _res, next) => {
    const repeated = repeatedHeader(req.rawHeaders);
    next(repeated === null ? undefined : badRequest(repeatedHeaderMessage(repeated)));
  };
}
