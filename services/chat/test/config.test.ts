import { ConfigError } from '@halo/kit/config';
import { chatService } from '../src/service';
import { testConfig } from './helpers';

/** chat's variables: REDIS_URL, and what production refuses. */

it('defaults: no Redis (the in-process pub/sub), the kit’s variables as every service reads them', () => {
  const config = testConfig();
  expect(config.REDIS_URL).toBeUndefined();
  expect(chatService.name).toBe('chat');
  expect(chatService.loadConfig({ DATABASE_URL: 'postgres://x@h/db', HALO_ENV: 'test' })).toMatchObject({
    HTTP_PORT: 4005,
    GRPC_PORT: 5005,
  });
});

it('REDIS_URL must be a redis:// or rediss:// URL', () => {
  expect(() => testConfig({ REDIS_URL: 'http://r' })).toThrow(ConfigError);
  expect(() => testConfig({ REDIS_URL: 'http://r' })).toThrow(/^Invalid configuration: REDIS_URL: must be a redis:\/\/ or rediss:\/\/ URL/);
  expect(testConfig({ REDIS_URL: 'rediss://r:6380' }).REDIS_URL).toBe('rediss://r:6380');
});

it('production refuses to serve without Redis (replicas would not hear each other); a migration Job needs none', () => {
  expect(() => testConfig({ HALO_ENV: 'production' })).toThrow(/^Invalid configuration: REDIS_URL: is required when HALO_ENV=production/);
  expect(() => testConfig({ HALO_ENV: 'production', HALO_MIGRATE_ONLY: 'true' })).not.toThrow();
  expect(() => testConfig({ HALO_ENV: 'production', REDIS_URL: 'redis://r:6379' })).not.toThrow();
});
