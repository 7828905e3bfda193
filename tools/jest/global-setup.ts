import { startTestServers, TestServersError, type TestServers } from './test-servers';

/** Jest's global setup: PostgreSQL and Redis for the run (tools/jest/test-servers.ts). */
export default async function globalSetup(): Promise<void> {
  try {
    (globalThis as { haloTestServers?: TestServers }).haloTestServers = await startTestServers(process.env, (line) =>
      process.stderr.write(`${line}\n`),
    );
  } catch (err) {
    if (!(err instanceof TestServersError)) throw err;
    process.stderr.write(`\n${err.message}\n`);
    process.exit(1);
  }
}
