import { ConfigError } from '@halo/kit/config';
import { HaloError } from '@halo/kit/errors';
import { identityFromClaims } from '../src/domain/identities';
import { clearedStateCookie, cookieValue, stateCookie } from '../src/rest/cookies';
import { parseOAuthProviders } from '../src/adapters/oidc/providers';

const dev = {
  OAUTH_PROVIDERS: 'dev',
  OAUTH_DEV_ISSUER: 'http://127.0.0.1:4009',
  OAUTH_DEV_CLIENT_ID: 'halo-dev',
  OAUTH_DEV_CLIENT_SECRET: 'secret',
  OAUTH_DEV_REDIRECT_URI: 'http://127.0.0.1:4000/auth/oauth/dev/callback',
};

describe('OAuth provider settings', () => {
  it('is empty without OAUTH_PROVIDERS', () => {
    expect(parseOAuthProviders({})).toEqual([]);
    expect(parseOAuthProviders({ OAUTH_PROVIDERS: ' , ' })).toEqual([]);
  });

  it('reads each listed provider', () => {
    const google = {
      OAUTH_GOOGLE_ISSUER: 'https://accounts.google.com',
      OAUTH_GOOGLE_CLIENT_ID: 'id',
      OAUTH_GOOGLE_CLIENT_SECRET: 'shh',
      OAUTH_GOOGLE_REDIRECT_URI: 'https://halo.example.com/auth/oauth/google/callback',
    };
    const settings = parseOAuthProviders({ ...dev, ...google, OAUTH_PROVIDERS: 'dev, Google' });
    expect(settings.map((s) => [s.name, s.issuer.href, s.clientId, s.redirectUri.href])).toEqual([
      ['dev', 'http://127.0.0.1:4009/', 'halo-dev', 'http://127.0.0.1:4000/auth/oauth/dev/callback'],
      ['google', 'https://accounts.google.com/', 'id', 'https://halo.example.com/auth/oauth/google/callback'],
    ]);
  });

  it.each([
    [{ OAUTH_DEV_CLIENT_SECRET: undefined }, 'OAUTH_DEV_CLIENT_SECRET: is required (is not set)'],
    [{ OAUTH_DEV_CLIENT_ID: '' }, 'OAUTH_DEV_CLIENT_ID: is required'],
    [{ OAUTH_DEV_ISSUER: 'not a url' }, 'OAUTH_DEV_ISSUER: must be a URL'],
    [{ OAUTH_DEV_ISSUER: 'http://idp.example.com' }, 'OAUTH_DEV_ISSUER: must be an https URL (plain http only on loopback)'],
    [{ OAUTH_DEV_REDIRECT_URI: undefined }, 'OAUTH_DEV_REDIRECT_URI'],
    [{ OAUTH_PROVIDERS: 'dev,dev' }, 'OAUTH_PROVIDERS: "dev" is listed twice'],
    [{ OAUTH_PROVIDERS: 'my_idp' }, 'OAUTH_PROVIDERS: "my_idp" must be letters and digits'],
  ])('names the bad variable (%o)', (override, message) => {
    const read = () => parseOAuthProviders({ ...dev, ...override });
    expect(read).toThrow(ConfigError);
    expect(read).toThrow(message);
  });

  it('never shows a secret in its message', () => {
    expect(() => parseOAuthProviders({ ...dev, OAUTH_DEV_CLIENT_SECRET: '' })).toThrow(/is not set/);
  });
});

describe('OAuth identity from verified claims', () => {
  const claims = { sub: 'u-1', email: 'Alice@Example.COM', email_verified: true, name: ' Alice A. ' };

  it('keeps sub, lower-cases the email and trims the name', () => {
    expect(identityFromClaims('dev', claims)).toEqual({ provider: 'dev', subject: 'u-1', email: 'alice@example.com', name: 'Alice A.' });
    expect(identityFromClaims('dev', { ...claims, name: undefined, email_verified: 'true' }).name).toBe('alice');
  });

  it.each([[{ email_verified: false }], [{ email_verified: undefined }], [{ email: undefined }], [{ email: 'not-an-email' }]])(
    'answers 403 Email not verified (%o)',
    (override) => {
      const read = () => identityFromClaims('dev', { ...claims, ...override });
      expect(read).toThrow(HaloError);
      expect(read).toThrow('Email not verified');
      try {
        read();
      } catch (err) {
        expect((err as HaloError).httpStatus).toBe(403);
      }
    },
  );

  it('answers 401 without a subject', () => {
    expect(() => identityFromClaims('dev', { ...claims, sub: undefined })).toThrow('Invalid id_token');
  });
});

describe('OAuth state cookie', () => {
  it('is HttpOnly, SameSite=Lax, scoped to /auth/oauth for 10 minutes, Secure unless told otherwise', () => {
    expect(stateCookie('abc')).toBe('oauth_state=abc; HttpOnly; Secure; SameSite=Lax; Path=/auth/oauth; Max-Age=600');
    expect(stateCookie('abc', false)).toBe('oauth_state=abc; HttpOnly; SameSite=Lax; Path=/auth/oauth; Max-Age=600');
    expect(clearedStateCookie()).toBe('oauth_state=; HttpOnly; Secure; SameSite=Lax; Path=/auth/oauth; Max-Age=0');
  });

  it('is read from a Cookie header', () => {
    expect(cookieValue('a=1; oauth_state=xyz; b=2', 'oauth_state')).toBe('xyz');
    expect(cookieValue('oauth_state=first; oauth_state=second', 'oauth_state')).toBe('first');
    expect(cookieValue('xoauth_state=1', 'oauth_state')).toBeUndefined();
    expect(cookieValue('oauth_state=', 'oauth_state')).toBeUndefined();
    expect(cookieValue(undefined, 'oauth_state')).toBeUndefined();
  });
});
