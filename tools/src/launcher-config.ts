import { loadConfig, z } from '@halo/kit/config';

/** `0` or `1`, as tools/bin/start.js reads the switch before anything is loaded. */
const switch01 = (fallback: '0' | '1') => z.enum(['0', '1'], { message: 'must be 0 or 1' }).default(fallback);

const OFFSET = 'must be an integer from 0 to 50000';

/**
 * The variables only `npm start` reads (tools/src/start.ts, tools/src/launcher.ts, tools/bin/start.js
 * and the code-cache runner); the processes it starts read theirs. Validated once by tools/src/start.ts,
 * so a bad value stops it with one line naming the variable.
 */
export const launcherConfigShape = {
  HALO_PORT_OFFSET: z.coerce
    .number({ message: OFFSET })
    .int(OFFSET)
    .min(0, OFFSET)
    .max(50_000, OFFSET)
    .default(0)
    .describe('added to every port `npm start` uses, for a second checkout (or a second system) on one machine'),
  HALO_DATA_DIR: z
    .string()
    .optional()
    .describe(
      'where `npm start` keeps its state, the embedded PostgreSQL cluster in `<dir>/postgres` among it; unset: `.data` in the checkout',
    ),
  HALO_BUNDLES: switch01('1').describe(
    '`0` starts each process from its compiled `dist/main.js` instead of the one-file bundle `npm run build` makes for a faster ' +
      'start ([ADR 0010](docs/adr/0010-start-up-bundles.md)); tracing on (`OTEL_*`) does the same',
  ),
  HALO_CODE_CACHE: switch01('1').describe(
    '`0` compiles each bundle from scratch at every start instead of from the V8 code cache (`dist/*.v8cache`) the start ' +
      'before wrote once ready ([ADR 0012](docs/adr/0012-v8-code-cache.md))',
  ),
  HALO_CODE_CACHE_DIR: z
    .string()
    .min(1)
    .optional()
    .describe(
      'where the V8 code caches live (one file per bundle, named after its path); unset: beside each bundle in `dist/`. ' +
        'Systems started side by side from one checkout (tests) keep theirs apart with it',
    ),
  HALO_SOURCE_MAPS: switch01('0').describe(
    '`1`: stack traces from a bundled process point at the TypeScript sources (`--enable-source-maps`, no code cache; slower start)',
  ),
};

export type LauncherConfig = z.infer<z.ZodObject<typeof launcherConfigShape>>;

/** `npm start`'s own settings; a bad value throws the kit's one-line ConfigError. */
export function loadLauncherConfig(source: Record<string, string | undefined> = process.env): LauncherConfig {
  return loadConfig(launcherConfigShape, source);
}
