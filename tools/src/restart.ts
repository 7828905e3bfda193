import { resolve } from 'node:path';
import { controlSocketPath, requestRestart } from './launcher-control';

/**
 * `npm run restart -- <service>`: replaces one service (or the gateway) of the Halo this checkout's
 * `npm start` runs, after a rebuild, without stopping the rest (docs/local-development.md). Each
 * process drains (SIGTERM) and a new one starts from the current build; it is not counted as a
 * crash. HALO_PORT_OFFSET and HALO_DATA_DIR name the npm start to ask, as they name it to start.
 * Exit 0 restarted, 1 refused, 2 usage, 3 no npm start running.
 */
const ROOT = resolve(__dirname, '../..');
const USAGE = 'Usage: npm run restart -- <service>   (auth, content, catalog, payments, chat, registry or gateway)';

async function main(): Promise<number> {
  const service = process.argv[2];
  if (!service || process.argv.length > 3 || !/^[a-z]+$/.test(service)) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const offset = Number(process.env.HALO_PORT_OFFSET ?? 0);
  const stateDir = process.env.HALO_DATA_DIR ? resolve(process.env.HALO_DATA_DIR) : resolve(ROOT, '.data');
  const socket = controlSocketPath(stateDir, offset);
  let answer;
  try {
    answer = await requestRestart(socket, service);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ECONNREFUSED') {
      process.stderr.write(`restart: no npm start of this checkout runs with HALO_PORT_OFFSET=${offset} (nothing listens on ${socket})\n`);
      return 3;
    }
    throw err;
  }
  if (answer.status !== 200) {
    process.stderr.write(`restart: ${answer.body.error ?? `refused (${answer.status})`}\n`);
    return 1;
  }
  for (const i of answer.body.instances) {
    const which = answer.body.instances.length > 1 ? ` #${i.instance}` : '';
    process.stdout.write(`${service}${which}: restarted, ready in ${(i.readyMs / 1000).toFixed(1)} s (pid ${i.pid ?? '?'})\n`);
  }
  return 0;
}

main().then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    process.stderr.write(`restart: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
