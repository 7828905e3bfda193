import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { ConfigError } from '@halo/kit/config';
import { EXIT_CANNOT_START } from '@halo/kit/process';
import { authService } from '../src/service';
import { TEST_JWT_SECRET } from './helpers';

const base = { HALO_ENV: 'test', JWT_SECRET: TEST_JWT_SECRET, DATABASE_URL: 'postgres://auth@db:5432/halo' };
const load = (extra: Record<string, string | undefined> = {}) => authService.loadConfig({ ...base, ...extra });
const fails = (extra: Record<string, string | undefined>, variable: string) => {
  expect(() => load(extra)).toThrow(ConfigError);
  expect(() => load(extra)).toThrow(new RegExp(`^Invalid configuration: ${variable}: `));
};

describe('JWT_SECRET', () => {
  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['short', 'too-short'],
    ['31 bytes', 'x'.repeat(31)],
  ])('%s → a ConfigError naming JWT_SECRET, without the value', (_, secret) => {
    fails({ JWT_SECRET: secret }, 'JWT_SECRET');
    try {
      load({ JWT_SECRET: secret });
    } catch (err) {
      if (secret) expect((err as Error).message).not.toContain(secret);
    }
  });

  it('32 bytes is enough', () => {
    expect(load({ JWT_SECRET: 'x'.repeat(32) }).JWT_SECRET).toBe('x'.repeat(32));
  });

  it('a short secret stops the real process at start-up with one line naming JWT_SECRET', () => {
    const main = resolve(__dirname, '../dist/main.js');
    const run = spawnSync(process.execPath, [main], {
      env: { PATH: process.env.PATH, HALO_ENV: 'test', JWT_SECRET: 'short', LOG_LEVEL: 'silent', DATABASE_URL: base.DATABASE_URL },
      encoding: 'utf8',
      timeout: 20_000,
    });
    // Restarting cannot fix a setting: the exit code says so (kit: EXIT_CANNOT_START).
    expect(run.status).toBe(EXIT_CANNOT_START);
    expect(run.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^auth: Invalid configuration: JWT_SECRET: /)]);
    expect(run.stderr).not.toContain('short');
  });
});

describe('durations', () => {
  it.each([
    [undefined, 900],
    ['900', 900],
    ['15m', 900],
    ['24h', 86_400],
    ['30s', 30],
    ['7d', 604_800],
  ])('ACCESS_TOKEN_TTL=%s → %i s', (value, seconds) => {
    expect(load({ ACCESS_TOKEN_TTL: value }).ACCESS_TOKEN_TTL).toBe(seconds);
  });

  it.each(['0', '-5', '15 minutes', '1.5h', 'abc', '15x'])('ACCESS_TOKEN_TTL=%s is refused', (value) => {
    fails({ ACCESS_TOKEN_TTL: value }, 'ACCESS_TOKEN_TTL');
  });

  it('API_KEY_TOKEN_TTL defaults to 5 minutes and is validated the same way', () => {
    expect(load().API_KEY_TOKEN_TTL).toBe(300);
    fails({ API_KEY_TOKEN_TTL: 'soon' }, 'API_KEY_TOKEN_TTL');
  });

  it('REFRESH_TOKEN_TTL_DAYS defaults to 30 and must be a positive integer', () => {
    expect(load().REFRESH_TOKEN_TTL_DAYS).toBe(30);
    fails({ REFRESH_TOKEN_TTL_DAYS: '0' }, 'REFRESH_TOKEN_TTL_DAYS');
  });
});

describe('COOKIE_SECURE', () => {
  it.each([
    ['production', undefined, true],
    ['test', undefined, true],
    ['development', undefined, false],
    ['development', 'true', true],
    ['production', 'false', false],
  ])('HALO_ENV=%s COOKIE_SECURE=%s → %s', (haloEnv, value, expected) => {
    expect(load({ HALO_ENV: haloEnv, COOKIE_SECURE: value }).COOKIE_SECURE).toBe(expected);
  });
});

describe('CORS_ORIGINS (and its former name ALLOWED_ORIGINS)', () => {
  it('defaults to none, and to loopback on any port in development', () => {
    expect(load().CORS_ORIGINS.entries).toEqual([]);
    expect(load({ HALO_ENV: 'development' }).CORS_ORIGINS.entries).toEqual(['http://localhost:*', 'http://127.0.0.1:*']);
  });

  it('normalises a comma list of origins and patterns; the former name counts too', () => {
    expect(
      load({ CORS_ORIGINS: ' https://App.Example.com , http://localhost:5173/, https://*.halo.example' }).CORS_ORIGINS.entries,
    ).toEqual(['https://app.example.com', 'http://localhost:5173', 'https://*.halo.example']);
    expect(load({ ALLOWED_ORIGINS: 'https://app.example.com' }).CORS_ORIGINS.entries).toEqual(['https://app.example.com']);
    const both = load({ CORS_ORIGINS: 'https://a.example', ALLOWED_ORIGINS: 'https://b.example' }).CORS_ORIGINS;
    expect(both.entries).toEqual(['https://a.example', 'https://b.example']);
  });

  it.each(['app.example.com', 'https://app.example.com/path', 'ftp://x.example', '*', 'https://*.com'])('refuses %s', (value) => {
    fails({ CORS_ORIGINS: value }, 'CORS_ORIGINS');
    fails({ ALLOWED_ORIGINS: value }, 'ALLOWED_ORIGINS');
  });
});

describe('the rest', () => {
  it('has the documented defaults', () => {
    expect(load()).toMatchObject({
      HTTP_PORT: 4001,
      GRPC_PORT: 5001,
      LOGIN_MAX_FAILS_PER_EMAIL: 5,
      LOGIN_MAX_FAILS_PER_IP: 20,
      LOGIN_WINDOW_S: 900,
      CONTENT_GRPC_ADDR: '127.0.0.1:5002',
      SEED_DEMO_DATA: false,
    });
    expect(load().REDIS_URL).toBeUndefined();
  });

  it('validates REDIS_URL and the login limits', () => {
    fails({ REDIS_URL: 'http://127.0.0.1:6379' }, 'REDIS_URL');
    fails({ LOGIN_MAX_FAILS_PER_EMAIL: '0' }, 'LOGIN_MAX_FAILS_PER_EMAIL');
  });

  it('no longer reads TRUST_PROXY: the gateway is known by its service token, not its address', () => {
    expect(load({ TRUST_PROXY: 'loopback, linklocal, uniquelocal' })).not.toHaveProperty('TRUST_PROXY');
  });

  it('SEED_DEMO_DATA: on by default only in development, refused in production', () => {
    expect(load({ HALO_ENV: 'development' }).SEED_DEMO_DATA).toBe(true);
    expect(load({ HALO_ENV: 'test', SEED_DEMO_DATA: 'true' }).SEED_DEMO_DATA).toBe(true);
    fails({ HALO_ENV: 'production', SEED_DEMO_DATA: 'true' }, 'SEED_DEMO_DATA');
  });
});
