import { randomUUID } from 'node:crypto';

export const REQUEST_ID_HEADER = 'x-request-id';
const SANE_REQUEST_ID = /^[\w.:-]{1,128}$/;

/** Keeps a caller's request id when it looks like one (so ids trace across services), else a new UUID. */
export function saneRequestId(given: unknown): string {
  return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
}
