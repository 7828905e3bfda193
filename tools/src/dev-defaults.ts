/**
 * DEV-ONLY defaults for the embedded mode (`npm start`). Only the launcher passes these, and only
 * when HALO_ENV=development; no service has a default secret of its own, so production without
 * real secrets stops at start-up instead of running with these.
 */
export const DEV_JWT_SECRET = 'halo-dev-only-jwt-secret--never-use-in-production--0001';
export const DEV_OIDC_CLIENT_ID = 'halo-dev';
export const DEV_OIDC_CLIENT_SECRET = 'halo-dev-only-oidc-client-secret--never-use-in-production';
