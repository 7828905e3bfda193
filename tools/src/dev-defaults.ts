/**
 * DEV-ONLY defaults for the embedded mode (`npm start`). Only the launcher passes these, and only
 * when HALO_ENV=development; no service has a default secret of its own, so production without
 * real secrets stops at start-up instead of running with these.
 */
export const DEV_OIDC_CLIENT_ID = 'halo-dev';
// The secrets live in the kit, beside the list a production process refuses (kit/src/config/dev-secrets.ts).
export { DEV_JWT_SECRET, DEV_OIDC_CLIENT_SECRET } from '@halo/kit/launch';
