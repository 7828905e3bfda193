import { OriginList } from '@halo/kit/config';
import { HaloError } from '@halo/kit/errors';
import {
  apiKeyInput,
  generateApiKey,
  isApiKeyFormat,
  loginInput,
  parseId,
  parseScopes,
  passwordPolicy,
  registration,
} from '../src/domain/rules';
import { isCrossSite, refreshDecision, retryAfterSeconds, sha256Hex, type StoredRefreshToken } from '../src/domain/tokens';
import { clearedRefreshCookie, refreshCookie, refreshTokenFrom } from '../src/rest/cookies';
import { addressKey } from '../src/domain/limits';
import { parseDuration } from '../src/domain/ttl';

/** The HaloError a rule throws, as `kind: message`. */
function failure(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof HaloError) return `${err.kind}: ${err.message}`;
    throw err;
  }
  return 'no error';
}

describe('password policy', () => {
  it.each([
    [undefined, 'BAD_REQUEST: password is required'],
    ['', 'BAD_REQUEST: password is required'],
    [12345678, 'BAD_REQUEST: password is required'],
    ['1234567', 'BAD_REQUEST: password must be at least 8 characters'],
    // Characters, not bytes: seven emoji are seven characters.
    ['😀'.repeat(7), 'BAD_REQUEST: password must be at least 8 characters'],
    ['x'.repeat(1025), 'BAD_REQUEST: password must be at most 1024 characters'],
  ])('%j → %s', (password, expected) => {
    expect(failure(() => passwordPolicy(password))).toBe(expected);
  });

  it('accepts 8 characters and keeps spaces as typed', () => {
    expect(passwordPolicy('12345678')).toBe('12345678');
    expect(passwordPolicy(' pass word ')).toBe(' pass word ');
  });
});

describe('registration', () => {
  it('trims the name and normalises the email', () => {
    expect(registration({ name: ' Ana ', email: ' Ana@Example.COM ', password: 'password123' })).toEqual({
      name: 'Ana',
      email: 'ana@example.com',
      password: 'password123',
    });
  });

  it.each([
    [null, 'name is required'],
    [[], 'name is required'],
    [{ name: 'A' }, 'email is required'],
    [{ name: 'A', email: 'a@b' }, 'email is invalid'],
    [{ name: 'A', email: 'a b@c.de' }, 'email is invalid'],
    [{ name: 'x'.repeat(101), email: 'a@b.cd', password: 'password123' }, 'name must be at most 100 characters'],
    [{ name: 'A', email: 'a@b.cd', password: 'short' }, 'password must be at least 8 characters'],
  ])('%j → 400 %s', (body, message) => {
    expect(failure(() => registration(body))).toBe(`BAD_REQUEST: ${message}`);
  });
});

describe('login input', () => {
  it('does not apply the password policy (a short password simply fails to verify)', () => {
    expect(loginInput({ email: ' A@B.CD ', password: 'x' })).toEqual({ email: 'a@b.cd', password: 'x' });
  });
  it.each([
    [{}, 'email is required'],
    [{ email: 'a@b.cd' }, 'password is required'],
  ])('%j → 400 %s', (body, message) => {
    expect(failure(() => loginInput(body))).toBe(`BAD_REQUEST: ${message}`);
  });
});

describe('scopes', () => {
  it('de-duplicates and orders known scopes', () => {
    expect(parseScopes(['payments:write', 'profile:read', 'payments:write'])).toEqual(['profile:read', 'payments:write']);
    expect(parseScopes(['users:write', 'catalog:write'])).toEqual(['users:write', 'catalog:write']);
  });
  it('keeps per-client operations scopes (a pattern, not a list) after the listed ones, sorted', () => {
    expect(parseScopes(['operations:write:web', 'schema:read', 'operations:write:@halo/client', 'operations:write:web'])).toEqual([
      'schema:read',
      'operations:write:@halo/client',
      'operations:write:web',
    ]);
  });
  it.each([
    [undefined, 'scopes is required'],
    [[], 'scopes is required'],
    ['profile:read', 'scopes must be an array of strings'],
    [[1], 'scopes must be an array of strings'],
    [['profile:read', 'root'], 'unknown scope: root'],
    [['Profile:Read'], 'unknown scope: Profile:Read'],
    [['operations:write:'], 'unknown scope: operations:write:'],
    [['operations:write:a b'], 'unknown scope: operations:write:a b'],
    [[`operations:write:${'x'.repeat(65)}`], `unknown scope: operations:write:${'x'.repeat(65)}`],
  ])('%j → 400 %s', (raw, message) => {
    expect(failure(() => parseScopes(raw))).toBe(`BAD_REQUEST: ${message}`);
  });
});

describe('API keys', () => {
  it('halo_<8 hex>_<32 base64url>, the prefix being its first 13 characters, every key different', () => {
    const keys = Array.from({ length: 50 }, generateApiKey);
    for (const { key, prefix } of keys) {
      expect(key).toMatch(/^halo_[0-9a-f]{8}_[A-Za-z0-9_-]{32}$/);
      expect(isApiKeyFormat(key)).toBe(true);
      expect(prefix).toBe(key.slice(0, 13));
    }
    expect(new Set(keys.map((k) => k.key)).size).toBe(50);
  });

  it.each(['', 'halo_', 'halo_0000000_' + 'a'.repeat(32), 'halo_00000000_' + 'a'.repeat(31), 'HALO_00000000_' + 'a'.repeat(32), 42])(
    '%j is not a key',
    (key) => {
      expect(isApiKeyFormat(key)).toBe(false);
    },
  );

  it('input: name and scopes', () => {
    expect(apiKeyInput({ name: ' CI ', scopes: ['catalog:write'] })).toEqual({ name: 'CI', scopes: ['catalog:write'] });
    expect(failure(() => apiKeyInput({ scopes: ['catalog:write'] }))).toBe('BAD_REQUEST: name is required');
  });
});

describe('ids', () => {
  it.each([
    ['12', 12],
    [7, 7],
  ])('%j → %i', (raw, id) => expect(parseId(raw)).toBe(id));
  it.each(['0', '-1', '1.5', 'abc', '', '1234567890123456'])('%j → 400 Invalid id', (raw) => {
    expect(failure(() => parseId(raw))).toBe('BAD_REQUEST: Invalid id');
  });
});

describe('durations', () => {
  it.each([
    ['900', 900],
    ['15m', 900],
    ['24h', 86_400],
    ['2d', 172_800],
    ['45s', 45],
    [' 10M ', 600],
  ])('%s → %i', (text, seconds) => expect(parseDuration(text)).toBe(seconds));
  it.each(['', '0', '0m', '-1', '1.5h', '15 minutes', 'h', '1w'])('%j → null', (text) => expect(parseDuration(text)).toBeNull());
});

describe('the refresh cookie', () => {
  const token = '0b6d3c2e-2f4c-4f6e-9a51-5d4a3c2b1a09';

  it('is HttpOnly, Secure, SameSite=Strict, Path=/auth with a Max-Age', () => {
    expect(refreshCookie(token, 2_592_000, true)).toBe(
      `refresh_token=${token}; HttpOnly; Secure; SameSite=Strict; Path=/auth; Max-Age=2592000`,
    );
  });
  it('drops only Secure when told to (embedded dev mode over plain http), and floors Max-Age', () => {
    expect(refreshCookie(token, 99.9, false)).toBe(`refresh_token=${token}; HttpOnly; SameSite=Strict; Path=/auth; Max-Age=99`);
  });
  it('clearing it: same attributes, empty value, Max-Age=0', () => {
    expect(clearedRefreshCookie(true)).toBe('refresh_token=; HttpOnly; Secure; SameSite=Strict; Path=/auth; Max-Age=0');
  });
  it.each([
    [undefined, null],
    ['', null],
    [`refresh_token=${token}`, token],
    [`a=1;refresh_token=${token.toUpperCase()}; b=2`, token],
    ['refresh_token=not-a-uuid', null],
    [`xrefresh_token=${token}`, null],
  ])('reads %j → %j', (header, expected) => expect(refreshTokenFrom(header)).toBe(expected));
});

describe('refresh decision', () => {
  const now = new Date('2026-01-01T00:00:00Z');
  const row = (over: Partial<StoredRefreshToken> = {}): StoredRefreshToken => ({
    familyId: 'f',
    userId: 1,
    expiresAt: new Date('2026-01-02T00:00:00Z'),
    rotatedAt: null,
    revokedAt: null,
    ...over,
  });
  it.each([
    ['unknown', null, 'invalid'],
    ['live', row(), 'rotate'],
    ['expired', row({ expiresAt: now }), 'invalid'],
    ['revoked', row({ revokedAt: now }), 'invalid'],
    ['rotated', row({ rotatedAt: now }), 'reuse'],
    ['rotated and expired', row({ rotatedAt: now, expiresAt: new Date(0) }), 'reuse'],
    ['rotated and revoked', row({ rotatedAt: now, revokedAt: now }), 'invalid'],
  ])('%s → %s', (_, r, expected) => expect(refreshDecision(r, now)).toBe(expected));
});

describe('cross-site requests', () => {
  const own = 'https://halo.example';
  const check = (secFetchSite?: string, origin?: string, allowed = '') =>
    isCrossSite({ secFetchSite, origin, ownOrigin: own, allowedOrigins: OriginList.parse(allowed) });

  it.each([
    ['nothing (curl, servers)', undefined, undefined, false],
    ['Sec-Fetch-Site: same-origin', 'same-origin', undefined, false],
    ['Sec-Fetch-Site: none', 'none', undefined, false],
    ['Sec-Fetch-Site: cross-site', 'cross-site', undefined, true],
    ['Sec-Fetch-Site: Cross-Site', 'Cross-Site', own, true],
    ['its own origin', undefined, own, false],
    ['its own origin, other case', undefined, 'HTTPS://HALO.EXAMPLE', false],
    ['a foreign origin', undefined, 'https://evil.example', true],
    ['Origin: null', undefined, 'null', true],
    ['http instead of https', undefined, 'http://halo.example', true],
  ])('%s → %s', (_, site, origin, expected) => expect(check(site, origin)).toBe(expected));

  it('an allowed origin passes; the Sec-Fetch-Site verdict still wins', () => {
    expect(check(undefined, 'https://app.example', 'https://app.example')).toBe(false);
    expect(check(undefined, 'https://app.halo.example', 'https://*.halo.example')).toBe(false);
    expect(check(undefined, 'https://evil.example', 'https://*.halo.example')).toBe(true);
    expect(check('cross-site', 'https://app.example', 'https://app.example')).toBe(true);
  });
});

describe('small helpers', () => {
  it('sha256Hex', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
  it('retryAfterSeconds rounds up, at least 1', () => {
    expect([retryAfterSeconds(0), retryAfterSeconds(1), retryAfterSeconds(1000), retryAfterSeconds(1001)]).toEqual([1, 1, 1, 2]);
  });
});

describe('addressKey (the per-address login counter)', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['::FFFF:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    ['64:ff9b::192.0.2.33', '64:ff9b:0:0::/64'],
    // One address written four ways is one counter; a text that is not an address is no counter of its own.
    ['10.66.0.1', '10.66.0.1'],
    ['0:0:0:0:0:ffff:10.66.0.1', '10.66.0.1'],
    ['::ffff:a42:1', '10.66.0.1'],
    ['010.066.000.001', 'unparsed'],
    ['10.66.1', 'unparsed'],
    ['unknown', 'unparsed'],
    ['1:2:3', 'unparsed'],
  ])('%s → %s', (ip, key) => expect(addressKey(ip)).toBe(key));
});
