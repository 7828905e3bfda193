import { resolve } from 'node:path';
import { prettyFactory } from 'pino-pretty';
import { startSystem, type ProcessName, type RunningSystem } from './launcher';
import { loadLauncherConfig } from './launcher-config';
import { SYSTEM_READY_EVENT } from './code-cache';

/** The process this one started under (npm's shell under `npm start`), read before anything can end it. */
const PARENT = process.ppid;

/**
 * `npm start`: all of Halo on one machine with nothing but Node. Without DATABASE_URL one embedded
 * PostgreSQL server runs too (data under .data/postgres), and the demo data is seeded.
 */
const COLORS: Partial<Record<ProcessName, string>> = {
  gateway: '35',
  auth: '33',
  content: '36',
  catalog: '34',
  payments: '92',
  chat: '96',
  oidc: '32',
  postgres: '90',
  launcher: '1',
};

// Services write JSON logs everywhere; only this terminal turns them into one readable line each.
const tty = process.stdout.isTTY === true;
const pretty = prettyFactory({
  colorize: tty,
  singleLine: true,
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname,name',
});

function printLine(name: ProcessName, line: string): void {
  const tag = tty ? `\x1b[${COLORS[name] ?? '33'}m${name.padEnd(8)}\x1b[0m` : name.padEnd(8);
  const text = line.startsWith('{') ? pretty(line).trimEnd() : line;
  process.stdout.write(`${tag}| ${text}\n`);
}

async function main(): Promise<void> {
  const started = Date.now();
  const running = stopOnSignals();
  // Two checkouts on one machine: each has its own .data; HALO_PORT_OFFSET moves every port.
  const { HALO_PORT_OFFSET: offset, HALO_DATA_DIR: dataDir } = loadLauncherConfig();
  const system = await startSystem({
    env: { HALO_ENV: process.env.HALO_ENV ?? 'development' },
    portOffset: offset,
    compactWhenIdle: true,
    ...(dataDir ? { postgresDataDir: resolve(dataDir, 'postgres') } : {}),
    onLog: printLine,
    // A crashed service is restarted by the launcher; only a crash loop (or a lost database) ends it.
    onGiveUp: (_name, message) => {
      process.stderr.write(`\n${message}\n`);
      process.exit(1);
    },
  });
  running(system);
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  const gw = system.gatewayUrl;
  const lines = [
    '',
    `Halo is ready (${secs} s).`,
    `  Gateway, REST + GraphQL   ${gw}`,
    `  GraphQL endpoint          ${gw}/graphql`,
    `  Gateway metrics           ${system.gatewayMetricsUrl}`,
    ...(system.postgres ? [`  PostgreSQL (embedded)     127.0.0.1:${system.postgres.port}, data in ${system.postgres.dataDir}`] : []),
    ...system.processes
      .filter((p) => p.name !== 'gateway')
      .map((p) => `  ${p.name.padEnd(24)}  ${p.url}${p.grpcAddr ? `  (gRPC ${p.grpcAddr})` : ''}`),
    ...(system.devOidcUrl ? [`  ${'oidc'.padEnd(24)}  ${system.devOidcUrl}  (dev OpenID provider, starts on first use)`] : []),
    ...system.processes
      .filter((p) => p.name === 'registry' && !p.replica)
      .map((p) => `  ${'Studio'.padEnd(24)}  ${p.url}/studio  (the registry as web pages: schema, history, checks, usage)`),
    '',
    `Try:  curl ${gw}/hello`,
    `      curl ${gw}/posts/2`,
    `      curl -H 'content-type: application/json' -d '{"query":"{ users { name posts { title } } }"}' ${gw}/graphql`,
    'Stop with Ctrl+C.',
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
  // tools/bin/start.js writes the launcher's code cache (ADR 0012).
  (process as NodeJS.EventEmitter).emit(SYSTEM_READY_EVENT);
}

/**
 * Ctrl+C, a SIGTERM, or (under `npm start`) the end of npm's shell stop Halo: gracefully once it
 * runs, at once while it starts (each service then drains for at most LAUNCHER_GONE_DRAIN_MS and
 * PostgreSQL's watchdog stops it). Installed before anything starts: a signal that came between
 * "Halo is ready" and its handlers once went unheard, and the system ran on orphaned.
 */
function stopOnSignals(): (running: RunningSystem) => void {
  let system: RunningSystem | undefined;
  let stopping = false;
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    if (!system) process.exit(130);
    process.stdout.write('\nStopping Halo…\n');
    void system.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
  // Under `npm start`, a SIGTERM to npm ends npm and its shell but not this process: it is then
  // reparented, and stops with them instead of running on orphaned. (Run directly, e.g. under
  // nohup, it outlives its shell as asked.) The parent is the one this process started under.
  if (process.env.npm_lifecycle_event) {
    setInterval(() => {
      if (process.ppid !== PARENT) shutdown();
    }, 500).unref();
  }
  return (running) => {
    system = running;
  };
}

main().catch((err: unknown) => {
  process.stderr.write(`Halo failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
