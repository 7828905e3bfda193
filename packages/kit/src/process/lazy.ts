/**
 * Libraries only some processes call, loaded on first use. `@halo/kit` is one import for every
 * process, and without this the gateway and the dev OpenID provider would load express, pg,
 * umzug, ioredis and Apollo Server at start (about 0.4 s of CPU each, on a start where eight
 * processes share two cores) and never call them. Types come from `import type`, so the only
 * thing deferred is the `require`. Each loader keeps what it loaded: pg's type parser asks for the
 * module on every column of every result, and a `require` call, even cached, resolves the path.
 */
const once = <T>(loader: () => T): (() => T) => {
  let loaded: T | undefined;
  return () => (loaded ??= loader());
};

/* eslint-disable @typescript-eslint/no-require-imports -- deferring `require` to first use is this module's purpose */
export const load = {
  pg: once(() => require('pg') as typeof import('pg')),
  umzug: once(() => require('umzug') as typeof import('umzug')),
  express: once(() => require('express') as typeof import('express')),
  ioredis: once(() => (require('ioredis') as typeof import('ioredis')).default),
  apolloServer: once(() => require('@apollo/server') as typeof import('@apollo/server')),
  apolloDisabledPlugins: once(() => require('@apollo/server/plugin/disabled') as typeof import('@apollo/server/plugin/disabled')),
  expressIntegration: once(() => require('@as-integrations/express5') as typeof import('@as-integrations/express5')),
};
/* eslint-enable @typescript-eslint/no-require-imports */

/** What every service process uses (all but ioredis, which only a REDIS_URL needs). */
export function preloadServiceLibraries(): void {
  load.pg();
  load.umzug();
  load.express();
  load.apolloServer();
  load.apolloDisabledPlugins();
  load.expressIntegration();
}
