/**
 * Environment that arrives after the process started. `npm start` spawns every service while the
 * embedded PostgreSQL server is still starting, so the services load their code (most of a
 * start's CPU) meanwhile; their DATABASE_URL, with a role password made for this start, exists
 * only once PostgreSQL runs. The launcher then sends it over the IPC channel it already holds.
 *
 * Only a process spawned with `HALO_LATE_ENV=ipc` and an IPC channel waits; everywhere else
 * (production, tests, a restart once the values are known) this resolves at once.
 */
export interface LateEnvMessage {
  halo: 'env';
  env: Record<string, string>;
}

/** The variable that tells a process to wait for the rest of its environment. */
export const LATE_ENV_VAR = 'HALO_LATE_ENV';

/** How long a process waits for the launcher before giving up. */
const LATE_ENV_TIMEOUT_MS = 180_000;

export function isLateEnvMessage(message: unknown): message is LateEnvMessage {
  const m = message as Partial<LateEnvMessage> | null;
  return typeof m === 'object' && m !== null && m.halo === 'env' && typeof m.env === 'object' && m.env !== null;
}

export function receiveLateEnv(timeoutMs = LATE_ENV_TIMEOUT_MS): Promise<void> {
  if (process.env[LATE_ENV_VAR] !== 'ipc' || typeof process.send !== 'function') return Promise.resolve();
  return new Promise((resolve) => {
    const cleanup = () => {
      clearTimeout(timer);
      process.off('message', onMessage);
      process.off('disconnect', onGone);
    };
    const onMessage = (message: unknown) => {
      if (!isLateEnvMessage(message)) return;
      cleanup();
      for (const [key, value] of Object.entries(message.env)) if (typeof value === 'string') process.env[key] = value;
      delete process.env[LATE_ENV_VAR];
      resolve();
    };
    // The launcher died (or stopped) before it could say: nothing is left to start for.
    const onGone = () => process.exit(1);
    const timer = setTimeout(() => {
      process.stderr.write(`the launcher did not send the rest of the environment within ${timeoutMs / 1000} s\n`);
      process.exit(1);
    }, timeoutMs);
    process.on('message', onMessage);
    process.once('disconnect', onGone);
  });
}
