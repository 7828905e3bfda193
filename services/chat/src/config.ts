import { ConfigError, defaultGrpcAddr, env, z } from '@halo/kit/config';
import type { ServiceConfig } from '@halo/kit/service';

/** chat's own variables; the kit adds the ones every service reads (ports, DATABASE_URL, JWT_SECRET…). */
export const chatConfigShape = {
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional()
    .describe(
      'Redis pub/sub carrying `newMessage` events between replicas (channel `halo:<DB_SCHEMA>:chat:<chatId>`); required when ' +
        '`HALO_ENV=production`; unset: in this process (one replica). While it is down `sendMessage` answers ' +
        '`SERVICE_UNAVAILABLE` and stores nothing, new subscriptions to a chat the replica does not already carry are refused, ' +
        '`/readyz` fails; open subscriptions resume when it is back',
    ),
  CONTENT_GRPC_ADDR: env.str(defaultGrpcAddr('content')).describe("content's gRPC address (private chats' member ids)"),
};

export type ChatConfig = ReturnType<typeof refineChatConfig>;

/**
 * Without REDIS_URL messages reach only the subscribers of this process: right for the embedded
 * mode (one replica), silently wrong for several. So a serving production replica needs Redis.
 */
export function refineChatConfig(config: ServiceConfig<typeof chatConfigShape>) {
  if (config.HALO_ENV === 'production' && !config.HALO_MIGRATE_ONLY && !config.REDIS_URL) {
    throw new ConfigError(
      'Invalid configuration: REDIS_URL: is required when HALO_ENV=production (replicas must share the pub/sub of subscriptions) (is not set)',
    );
  }
  return config;
}
