import { importJWK, SignJWT, type JWK } from 'jose';
import { ConfigError } from '../config/config';
import { HaloError } from '../errors/errors';
import { authorizeCaller, generateServiceKey, parseServiceKeys, ServiceIdentity, serviceOfKid } from './service-identity';

const authKey = generateServiceKey('auth', 'k1');
const gatewayKey = generateServiceKey('gateway', 'k1');
const trustedByContent = { keys: [authKey.publicJwk, gatewayKey.publicJwk] };

const content = new ServiceIdentity('content', { trusted: trustedByContent });
const auth = new ServiceIdentity('auth', { signingKey: authKey.privateJwk });

async function refusal(p: Promise<unknown>): Promise<HaloError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(HaloError);
    return err as HaloError;
  }
  throw new Error('expected a refusal');
}

/** A token made by hand, for the cases the client never mints (expired, foreign audience…). */
async function handMade(key: JWK & { kid: string }, claims: { iss: string; aud: string; exp: number; iat?: number; kid?: string }) {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'EdDSA', kid: claims.kid ?? key.kid })
    .setIssuer(claims.iss)
    .setAudience(claims.aud)
    .setIssuedAt(claims.iat ?? Math.floor(Date.now() / 1000) - 10)
    .setExpirationTime(claims.exp)
    .setJti('j-1')
    .sign(await importJWK(key, 'EdDSA'));
}

const inSeconds = (s: number) => Math.floor(Date.now() / 1000) + s;

it('a token minted by the caller verifies at the callee as the caller', async () => {
  const token = await auth.tokenFor('content');
  expect(await content.verify(token)).toBe('auth');
  const [, payload] = token.split('.');
  const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
  expect(claims).toMatchObject({ iss: 'auth', aud: 'content', jti: expect.any(String) });
  expect((claims.exp as number) - (claims.iat as number)).toBe(120);
});

it('reuses a minted token per audience, and mints another audience its own', async () => {
  const a = await auth.tokenFor('content');
  expect(await auth.tokenFor('content')).toBe(a);
  const b = await auth.tokenFor('catalog');
  expect(b).not.toBe(a);
  expect((await refusal(content.verify(b))).message).toBe('Invalid service token');
});

it('a single-use token is new every time (its own jti), and verifies with the id and expiry a callee remembers', async () => {
  const [a, b] = [await auth.singleUseToken('content'), await auth.singleUseToken('content')];
  expect(a).not.toBe(b);
  const [va, vb] = [await content.verifyToken(a), await content.verifyToken(b)];
  expect(va).toEqual({ caller: 'auth', jti: expect.any(String), exp: expect.any(Number) });
  expect(va.jti).not.toBe(vb.jti);
  expect(va.exp).toBeGreaterThan(Date.now() / 1000);
  // Neither is the cached one tokenFor hands out.
  expect([a, b]).not.toContain(await auth.tokenFor('content'));
});

it.each([
  ['no token at all', async () => undefined, 'Service token required'],
  [
    'a token signed by a key nobody trusts',
    async () => new ServiceIdentity('auth', { signingKey: generateServiceKey('auth', 'rogue').privateJwk }).tokenFor('content'),
    'Invalid service token',
  ],
  [
    'a forged token: a trusted kid, another key',
    async () => handMade(generateServiceKey('auth', 'k1').privateJwk, { iss: 'auth', aud: 'content', exp: inSeconds(60) }),
    'Invalid service token',
  ],
  [
    'another service audience',
    async () => handMade(authKey.privateJwk, { iss: 'auth', aud: 'catalog', exp: inSeconds(60) }),
    'Invalid service token',
  ],
  [
    'an expired token',
    async () => handMade(authKey.privateJwk, { iss: 'auth', aud: 'content', iat: inSeconds(-300), exp: inSeconds(-60) }),
    'Invalid service token',
  ],
  [
    'an issuer that does not own the key',
    async () => handMade(authKey.privateJwk, { iss: 'gateway', aud: 'content', exp: inSeconds(60) }),
    'Invalid service token',
  ],
  ['garbage', async () => 'not.a.token', 'Invalid service token'],
])('refuses %s with UNAUTHENTICATED', async (_, token, message) => {
  const err = await refusal(content.verify(await token()));
  expect(err.kind).toBe('UNAUTHENTICATED');
  expect(err.message).toBe(message);
});

it('rotates keys: both keys valid at once, then the old one removed', async () => {
  const oldKey = generateServiceKey('payments', 'old');
  const newKey = generateServiceKey('payments', 'new');
  const oldCaller = new ServiceIdentity('payments', { signingKey: oldKey.privateJwk });
  const newCaller = new ServiceIdentity('payments', { signingKey: newKey.privateJwk });
  const oldToken = await oldCaller.tokenFor('catalog');
  const newToken = await newCaller.tokenFor('catalog');

  const during = new ServiceIdentity('catalog', { trusted: { keys: [oldKey.publicJwk, newKey.publicJwk] } });
  expect(await during.verify(oldToken)).toBe('payments');
  expect(await during.verify(newToken)).toBe('payments');

  const after = new ServiceIdentity('catalog', { trusted: { keys: [newKey.publicJwk] } });
  expect(await after.verify(newToken)).toBe('payments');
  expect((await refusal(after.verify(oldToken))).kind).toBe('UNAUTHENTICATED');
});

it('names the service of a key id', () => {
  expect(serviceOfKid('content:2026-11-22-ab')).toBe('content');
  expect(serviceOfKid(undefined)).toBe('');
});

describe('per-method access', () => {
  const access = { CreateUser: ['auth'], GetUser: ['auth', 'payments'] };
  it('lets listed callers through', () => {
    expect(() => authorizeCaller(access, 'GetUser', 'payments')).not.toThrow();
  });
  it.each([
    ['CreateUser', 'payments'],
    ['DeleteUser', 'auth'], // not in the table: closed
  ])('refuses %s by %s with PERMISSION_DENIED', (method, caller) => {
    try {
      authorizeCaller(access, method, caller);
      throw new Error('expected a refusal');
    } catch (err) {
      expect((err as HaloError).kind).toBe('FORBIDDEN');
      expect((err as HaloError).message).toBe(`${caller} may not call ${method}`);
    }
  });
});

describe('configuration', () => {
  it('parses a signing key and a trusted key set', () => {
    const keys = parseServiceKeys({
      SERVICE_SIGNING_KEY: JSON.stringify(authKey.privateJwk),
      SERVICE_TRUSTED_KEYS: JSON.stringify(trustedByContent),
    });
    expect(keys.signingKey?.kid).toBe('auth:k1');
    expect(keys.trusted?.keys).toHaveLength(2);
  });
  it.each([
    [{ SERVICE_SIGNING_KEY: 'not json' }, 'Invalid configuration: SERVICE_SIGNING_KEY: must be JSON (a JWK)'],
    [{ SERVICE_SIGNING_KEY: JSON.stringify(authKey.publicJwk) }, 'Invalid configuration: SERVICE_SIGNING_KEY: '],
    [{ SERVICE_TRUSTED_KEYS: JSON.stringify({ keys: [{ ...authKey.publicJwk, kid: 'nokid' }] }) }, 'kid must be <service>:<id>'],
  ])('refuses %p with one line naming the variable', (cfg, message) => {
    expect(() => parseServiceKeys(cfg)).toThrow(ConfigError);
    expect(() => parseServiceKeys(cfg)).toThrow(message);
  });
  it('refuses a signing key made for another service', () => {
    expect(() => new ServiceIdentity('content', { signingKey: authKey.privateJwk })).toThrow(/its kid names "auth", not content/);
  });
  it('never puts a private key into an error message', () => {
    const bad = JSON.stringify({ ...authKey.privateJwk, crv: 'P-256' });
    expect(() => parseServiceKeys({ SERVICE_SIGNING_KEY: bad })).toThrow(/^Invalid configuration: SERVICE_SIGNING_KEY: /);
    expect(() => parseServiceKeys({ SERVICE_SIGNING_KEY: bad })).not.toThrow(String(authKey.privateJwk.d));
  });
});
