import { ConfigError } from './config';

/**
 * Secrets and private keys that are (or were) committed to this repository, for the embedded mode,
 * `deploy/local` and the chart's CI values: anyone can read them, so a production process refuses
 * to start with any of them, in any variable (a JWK's `d`, a password inside a URL…). The chart's
 * CI values carry only `HALO_PLACEHOLDER`, never real-looking keys.
 */
export const DEV_JWT_SECRET = 'halo-dev-only-jwt-secret--never-use-in-production--0001';
export const DEV_OIDC_CLIENT_SECRET = 'halo-dev-only-oidc-client-secret--never-use-in-production';
/** What the chart's CI values put where a secret goes. */
export const HALO_PLACEHOLDER = 'HALO-PLACEHOLDER-NOT-A-SECRET';

export const COMMITTED_DEV_SECRETS: readonly string[] = [
  DEV_JWT_SECRET,
  DEV_OIDC_CLIENT_SECRET,
  HALO_PLACEHOLDER,
  // Once committed for deploy/local (secrets.env): a JWT secret and three private keys' `d`.
  'local-dev-only-jwt-secret-0123456789abcdef',
  'An6SfuwnIdgc-AT6Lh948z-9g0uBYnMvLJb5ba97Fi0',
  'LfhcnxfACQTRgG_JsHkJPifmIfPuEC1Naq--YB1Ed0M',
  'Be9ribCRqJlT2o1eSC3EjBVLyXqeIrwvw5ZtTXMjjKY',
  // Once committed in helm/halo/ci/*.yaml.
  'ci-only-jwt-secret-0123456789abcdef0123456789',
  'KC6SULc3a87trTmbTH8gSdkvsWRvyCQynGmljo4w03k',
  'RKLJ0WNExwXb6MyQwezPNhOSYZqeUYZmC4wEkGMDS_c',
  'bLVw5tJbJAUwJnYKZxi-sFco2Q0uEidx3eqp9LswEu4',
];

/**
 * With `HALO_ENV=production`, a ConfigError naming the first variable of `source` that holds a
 * committed development secret (see above); otherwise nothing. Start-up only: it reads every variable.
 */
export function refuseDevSecrets(source: Record<string, string | undefined>, haloEnv: string): void {
  if (haloEnv !== 'production') return;
  for (const name of Object.keys(source).sort()) {
    const value = source[name];
    if (!value || !COMMITTED_DEV_SECRETS.some((secret) => value.includes(secret))) continue;
    throw new ConfigError(
      `Invalid configuration: ${name}: holds a development secret committed to the Halo repository, refused when HALO_ENV=production (generate your own)`,
    );
  }
}
