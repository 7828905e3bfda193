import { createHmac } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { HaloError } from '../errors/errors';
import {
  CLOCK_TOLERANCE_S,
  INVALID_TOKEN,
  MIN_SECRET_BYTES,
  assertSigningSecret,
  bearerToken,
  callerFromHeader,
  signAccessToken,
  verifyAccessToken,
} from './jwt';
import { TEST_JWT_SECRET } from '../testing';

const SECRET = TEST_JWT_SECRET;
const CLAIMS = { sub: '42', name: 'Ada', role: 'user' as const };

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

/** A token built by hand, so the header can say anything; signed with HMAC-SHA256 unless `sig` is given. */
function handMade(header: object, payload: object, sig?: string): string {
  const signingInput = `${b64url(header)}.${b64url(payload)}`;
  const signature = sig ?? createHmac('sha256', SECRET).update(signingInput).digest('base64url');
  return `${signingInput}.${signature}`;
}

const fullPayload = () => ({ ...CLAIMS, iat: now(), exp: now() + 600 });
const HS256 = { alg: 'HS256', typ: 'JWT' };
/** A correctly signed HS256 token carrying exactly `payload` (jsonwebtoken's sign would add or drop iat). */
const signed = (payload: object) => handMade(HS256, payload);

function expectInvalid(token: string, secret = SECRET): void {
  let caught: unknown;
  try {
    verifyAccessToken(token, secret);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(HaloError);
  expect((caught as HaloError).kind).toBe('UNAUTHENTICATED');
  expect((caught as HaloError).message).toBe(INVALID_TOKEN);
}

describe('signAccessToken / verifyAccessToken', () => {
  it('round-trips sub, name, role, iat and exp', () => {
    const before = now();
    const token = signAccessToken(CLAIMS, SECRET, 900);
    const claims = verifyAccessToken(token, SECRET);
    expect(claims).toMatchObject(CLAIMS);
    expect(claims.iat).toBeGreaterThanOrEqual(before);
    expect(claims.exp - claims.iat).toBe(900);
  });

  it('signs with header alg HS256 and typ JWT', () => {
    const token = signAccessToken({ ...CLAIMS, role: 'admin' }, SECRET, 60);
    const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString());
    expect(header).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(verifyAccessToken(token, SECRET).role).toBe('admin');
  });

  it('accepts a hand-made HS256 token (the helper itself is right)', () => {
    expect(verifyAccessToken(signed(fullPayload()), SECRET)).toMatchObject(CLAIMS);
  });

  it('refuses to sign with a short secret', () => {
    expect(() => signAccessToken(CLAIMS, 'short', 60)).toThrow(/JWT_SECRET must be at least 32 bytes/);
  });

  it('rejects alg none', () => {
    expectInvalid(handMade({ alg: 'none', typ: 'JWT' }, fullPayload(), ''));
    expectInvalid(handMade({ alg: 'none', typ: 'JWT' }, fullPayload()));
  });

  it('rejects an unsigned token (header.payload.)', () => {
    const [header, payload] = signAccessToken(CLAIMS, SECRET, 60).split('.');
    expectInvalid(`${header}.${payload}.`);
  });

  it('rejects a token signed with another secret', () => {
    expectInvalid(signAccessToken(CLAIMS, 'another-secret-0123456789abcdef0123456789', 60));
  });

  it('rejects a token whose payload was changed after signing', () => {
    const [header, , signature] = signAccessToken(CLAIMS, SECRET, 60).split('.');
    expectInvalid(`${header}.${b64url({ ...fullPayload(), role: 'admin' })}.${signature}`);
  });

  it('rejects other algorithms, even with the right secret', () => {
    expectInvalid(jwt.sign(CLAIMS, SECRET, { algorithm: 'HS512', expiresIn: 60 }));
    expectInvalid(jwt.sign(CLAIMS, SECRET, { algorithm: 'HS384', expiresIn: 60 }));
    // An RS256 header over an HMAC signature: the classic key-confusion attempt.
    expectInvalid(handMade({ alg: 'RS256', typ: 'JWT' }, fullPayload()));
  });

  it('rejects a token expired beyond the 30 s skew', () => {
    expect(CLOCK_TOLERANCE_S).toBe(30);
    const t = now();
    expectInvalid(signed({ ...CLAIMS, iat: t - 600, exp: t - 120 }));
    expectInvalid(jwt.sign({ ...CLAIMS, iat: t - 600, exp: t - 45 }, SECRET, { algorithm: 'HS256' }));
  });

  it('accepts a token expired within the 30 s skew', () => {
    const t = now();
    // An explicit iat is kept by jsonwebtoken (noTimestamp would drop it, and iat is a required claim).
    const token = jwt.sign({ ...CLAIMS, iat: t - 600, exp: t - 10 }, SECRET, { algorithm: 'HS256' });
    expect(verifyAccessToken(token, SECRET)).toMatchObject({ ...CLAIMS, iat: t - 600, exp: t - 10 });
    expect(verifyAccessToken(signed({ ...CLAIMS, iat: t - 600, exp: t - 20 }), SECRET).exp).toBe(t - 20);
  });

  it.each(['sub', 'name', 'role', 'iat', 'exp'])('rejects a token without %s', (claim) => {
    const payload: Record<string, unknown> = fullPayload();
    delete payload[claim];
    expectInvalid(signed(payload));
  });

  it.each([
    ['role', 'superuser'],
    ['sub', 42],
    ['name', null],
    ['exp', '9999999999'],
  ])('rejects a token whose %s is %p', (claim, value) => {
    expectInvalid(signed({ ...fullPayload(), [claim]: value }));
  });

  it.each(['', 'garbage', 'a.b.c', 'a.b'])('rejects the malformed token %p', (token) => {
    expectInvalid(token);
  });
});

describe('callerFromHeader: a verified token is reused until it expires', () => {
  afterEach(() => jest.useRealTimers());
  const refused = (header: string, secret = SECRET) => {
    expect(() => callerFromHeader(header, secret)).toThrow(expect.objectContaining({ kind: 'UNAUTHENTICATED', message: INVALID_TOKEN }));
  };

  it('accepts a token up to the second before exp + 30 s, and refuses it from then on, however often it was seen', () => {
    const t = 2_000_000_000;
    jest.useFakeTimers({ now: t * 1000 });
    const header = `Bearer ${signed({ ...CLAIMS, scope: 'profile:read', iat: t, exp: t + 60 })}`;
    for (let i = 0; i < 3; i++) expect(callerFromHeader(header, SECRET)).toMatchObject({ id: 42, name: 'Ada', scopes: ['profile:read'] });
    jest.setSystemTime((t + 60 + CLOCK_TOLERANCE_S - 1) * 1000 + 999);
    expect(callerFromHeader(header, SECRET)?.id).toBe(42);
    jest.setSystemTime((t + 60 + CLOCK_TOLERANCE_S) * 1000);
    refused(header);
    refused(header);
  });

  it('refuses a token it accepted once when the secret is another (rotation), and accepts it again with the first', () => {
    const header = `Bearer ${signAccessToken(CLAIMS, SECRET, 600)}`;
    expect(callerFromHeader(header, SECRET)?.id).toBe(42);
    refused(header, `${SECRET}-rotated`);
    expect(callerFromHeader(header, SECRET)?.id).toBe(42);
  });

  it('never keeps a token that did not verify', () => {
    const good = signAccessToken(CLAIMS, SECRET, 600);
    const [h, p] = good.split('.');
    refused(`Bearer ${h}.${p}.${'A'.repeat(43)}`);
    expect(callerFromHeader(`Bearer ${good}`, SECRET)?.id).toBe(42);
    refused(`Bearer ${h}.${p}.${'A'.repeat(43)}`);
  });

  it('checks a not-before claim every time', () => {
    const t = 2_000_000_000;
    jest.useFakeTimers({ now: t * 1000 });
    const header = `Bearer ${signed({ ...CLAIMS, iat: t, nbf: t, exp: t + 600 })}`;
    expect(callerFromHeader(header, SECRET)?.id).toBe(42);
    jest.setSystemTime((t - CLOCK_TOLERANCE_S - 5) * 1000);
    refused(header);
  });

  it('hands every call a caller of its own', () => {
    const header = `Bearer ${signAccessToken({ ...CLAIMS, scope: 'profile:read' }, SECRET, 600)}`;
    const first = callerFromHeader(header, SECRET)!;
    first.scopes!.push('catalog:write');
    first.name = 'Mallory';
    expect(callerFromHeader(header, SECRET)).toMatchObject({ name: 'Ada', scopes: ['profile:read'] });
  });
});

describe('bearerToken', () => {
  it.each([
    [undefined, null],
    ['', null],
    ['   ', null],
    ['Bearer', null],
    ['Bearer ', null],
    ['Bearer    ', null],
    ['bearer ', null],
    ['Bearer abc.def.ghi', 'abc.def.ghi'],
    ['bearer abc.def.ghi', 'abc.def.ghi'],
    ['BEARER abc.def.ghi', 'abc.def.ghi'],
    ['  Bearer   abc.def.ghi  ', 'abc.def.ghi'],
  ])('%p → %p', (header, expected) => {
    expect(bearerToken(header)).toBe(expected);
  });
});

describe('assertSigningSecret', () => {
  it(`refuses ${MIN_SECRET_BYTES - 1} bytes and accepts ${MIN_SECRET_BYTES}`, () => {
    expect(MIN_SECRET_BYTES).toBe(32);
    expect(() => assertSigningSecret('a'.repeat(31))).toThrow('JWT_SECRET must be at least 32 bytes');
    expect(assertSigningSecret('a'.repeat(32))).toBe('a'.repeat(32));
  });

  it('counts bytes, not characters', () => {
    // 16 two-byte characters are 32 bytes; 15 are 30.
    expect(assertSigningSecret('é'.repeat(16))).toBe('é'.repeat(16));
    expect(() => assertSigningSecret('é'.repeat(15))).toThrow();
  });

  it('refuses a missing secret and names the variable it was given', () => {
    expect(() => assertSigningSecret(undefined)).toThrow(/^JWT_SECRET /);
    expect(() => assertSigningSecret('', 'AUTH_SIGNING_KEY')).toThrow(/^AUTH_SIGNING_KEY must be/);
  });

  it('does not put the secret in the message', () => {
    expect(() => assertSigningSecret('my-short-secret')).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('my-short-secret') }),
    );
  });
});
