/**
 * A process exits with this when it can never start as configured (a bad setting, a database that
 * does not exist or refuses the login, a port taken): restarting it cannot help, so the launcher
 * stops instead of retrying. 78 is sysexits' EX_CONFIG.
 */
export const EXIT_CANNOT_START = 78;
