import type { TestServers } from './test-servers';

/** Stops what the global setup started (tools/jest/test-servers.ts). */
export default async function globalTeardown(): Promise<void> {
  await (globalThis as { haloTestServers?: TestServers }).haloTestServers?.stop();
}
