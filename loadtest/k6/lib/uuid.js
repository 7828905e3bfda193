// @ts-check
// A random (version 4) UUID, RFC 4122 §4.4, from k6's own cryptographic random bytes: what the
// suites used to import from k6's jslib over the network at run time, now local so a run needs
// nothing but k6 (v0.48 and later) and works offline.
import crypto from 'k6/crypto';

/** @returns {string} e.g. `3f0c8a52-9d1e-4b7a-8c2f-0e6d5a4b3c21` */
export function uuidv4() {
  const b = new Uint8Array(crypto.randomBytes(16));
  b[6] = (b[6] & 0x0f) | 0x40; // version 4
  b[8] = (b[8] & 0x3f) | 0x80; // variant 10xx (RFC 4122)
  let hex = '';
  for (let i = 0; i < 16; i++) hex += (b[i] + 0x100).toString(16).slice(1);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
