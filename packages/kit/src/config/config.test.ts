import { ConfigError, env, loadConfig, parseBytes, serviceConfigShape } from './config';

const shape = serviceConfigShape({ httpPort: 4002, grpcPort: 5002 });
const SECRET = 'x'.repeat(32);
/** The one variable without a default. */
const DB = { DATABASE_URL: 'postgres://u@db:5432/halo' };

/** The error loadConfig throws for `vars`, so its message can be inspected. */
function configError(vars: Record<string, string>): ConfigError {
  try {
    loadConfig(shape, { ...DB, ...vars });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected loadConfig to throw');
}

describe('loadConfig', () => {
  it('fills defaults when only the database is set', () => {
    expect(loadConfig(shape, DB)).toEqual({
      HALO_ENV: 'production',
      HTTP_HOST: '0.0.0.0',
      HTTP_HEADERS_TIMEOUT_MS: 10_000,
      HTTP_REQUEST_TIMEOUT_MS: 30_000,
      HTTP_PORT: 4002,
      GRPC_PORT: 5002,
      DATABASE_URL: DB.DATABASE_URL,
      DB_POOL_SIZE: 10,
      LOG_LEVEL: 'info',
      BODY_LIMIT: 1024 * 1024,
      SHUTDOWN_TIMEOUT_MS: 10_000,
      GRPC_DEADLINE_MS: 2_000,
      GRPC_RETRIES: 2,
      GRPC_BREAKER_THRESHOLD: 5,
      GRPC_BREAKER_HALF_OPEN_MS: 5_000,
      JWT_SECRET: undefined,
    });
  });

  it('parses and coerces given values', () => {
    const cfg = loadConfig(shape, {
      HALO_ENV: 'development',
      HTTP_PORT: '8080',
      GRPC_PORT: '0',
      DATABASE_URL: 'postgres://u@db:5432/halo',
      DB_POOL_SIZE: '3',
      LOG_LEVEL: 'debug',
      BODY_LIMIT: '512kb',
      JWT_SECRET: SECRET,
    });
    expect(cfg).toMatchObject({
      HALO_ENV: 'development',
      HTTP_PORT: 8080,
      GRPC_PORT: 0,
      DATABASE_URL: 'postgres://u@db:5432/halo',
      DB_POOL_SIZE: 3,
      LOG_LEVEL: 'debug',
      BODY_LIMIT: 512 * 1024,
      JWT_SECRET: SECRET,
    });
  });

  it('ignores variables that are not in the shape', () => {
    const cfg = loadConfig({ A: env.str('a') }, { A: 'given', UNRELATED: 'x' });
    expect(cfg).toEqual({ A: 'given' });
  });

  it('treats an empty variable as unset', () => {
    const cfg = loadConfig(shape, { ...DB, HTTP_PORT: '', JWT_SECRET: '', BODY_LIMIT: '' });
    expect(cfg.HTTP_PORT).toBe(4002);
    expect(cfg.JWT_SECRET).toBeUndefined();
    expect(cfg.BODY_LIMIT).toBe(1024 * 1024);
  });

  it('requires DATABASE_URL, and says that npm start sets it', () => {
    for (const value of [undefined, '']) {
      const err = configError({ DATABASE_URL: value as unknown as string });
      expect(err.message).toBe('Invalid configuration: DATABASE_URL: is required (npm start sets it for you) (is not set)');
    }
  });

  it('rejects a bad value with one line naming the variable and the value', () => {
    const err = configError({ HTTP_PORT: 'abc' });
    expect(err.name).toBe('ConfigError');
    expect(err.message).not.toContain('\n');
    expect(err.message).toMatch(/^Invalid configuration: HTTP_PORT: /);
    expect(err.message).toContain('"abc"');
  });

  it.each([
    ['HTTP_PORT', '70000'],
    ['HTTP_PORT', '-1'],
    ['HTTP_PORT', '80.5'],
    ['DB_POOL_SIZE', '0'],
    ['GRPC_DEADLINE_MS', '0'],
    ['GRPC_RETRIES', '-1'],
    ['GRPC_BREAKER_THRESHOLD', '0'],
    ['LOG_LEVEL', 'loud'],
    ['HALO_ENV', 'staging'],
    ['DATABASE_URL', 'not a url'],
    ['BODY_LIMIT', 'lots'],
  ])('names %s when it is %p', (name, value) => {
    const err = configError({ [name]: value });
    expect(err.message).not.toContain('\n');
    expect(err.message).toContain(`: ${name}: `);
  });

  it('names the first bad variable when several are wrong', () => {
    const err = configError({ HTTP_PORT: 'abc', LOG_LEVEL: 'loud' });
    expect(err.message).not.toContain('\n');
    expect(err.message).toMatch(/HTTP_PORT|LOG_LEVEL/);
  });

  it('rejects a short JWT_SECRET without printing it', () => {
    const short = 'hunter2-very-secret';
    const err = configError({ JWT_SECRET: short });
    expect(err.message).not.toContain('\n');
    expect(err.message).toContain('JWT_SECRET');
    expect(err.message).toContain('at least 32 bytes');
    expect(err.message).not.toContain(short);
    expect(err.message).toContain('<redacted>');
  });

  it('says "is not set" when a required variable is missing', () => {
    const err = (() => {
      try {
        loadConfig({ REQUIRED_URL: env.url().unwrap() }, {});
      } catch (e) {
        return e as Error;
      }
      throw new Error('expected loadConfig to throw');
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain('REQUIRED_URL');
    expect(err.message).toContain('is not set');
  });

  it('parses booleans from true/false/1/0 only', () => {
    const s = { FLAG: env.bool(false) };
    expect(loadConfig(s, {}).FLAG).toBe(false);
    expect(loadConfig(s, { FLAG: 'true' }).FLAG).toBe(true);
    expect(loadConfig(s, { FLAG: '1' }).FLAG).toBe(true);
    expect(loadConfig(s, { FLAG: '0' }).FLAG).toBe(false);
    expect(() => loadConfig(s, { FLAG: 'yes' })).toThrow(/FLAG: must be true or false/);
  });

  it('reads process.env by default', () => {
    const key = 'HALO_KIT_CONFIG_TEST_VAR';
    process.env[key] = 'from-process';
    try {
      expect(loadConfig({ [key]: env.str('fallback') })[key]).toBe('from-process');
    } finally {
      delete process.env[key];
    }
  });
});

describe('parseBytes', () => {
  it.each([
    ['1mb', 1024 * 1024],
    ['1MB', 1024 * 1024],
    ['512kb', 512 * 1024],
    ['1048576', 1048576],
    ['100b', 100],
    ['2gb', 2 * 1024 ** 3],
    [' 3 kb ', 3 * 1024],
    ['0', 0],
  ])('%p → %p', (input, bytes) => {
    expect(parseBytes(input)).toBe(bytes);
  });

  it.each(['', 'mb', '1.5mb', '-1', '1tb', '10 megabytes', 'abc'])('%p is not a size', (input) => {
    expect(parseBytes(input)).toBeNull();
  });
});
