import { startSystem, type ProcessName } from './launcher';

/**
 * `npm start`: all of Halo on one machine with nothing but Node. Services use embedded PGlite
 * (data under .data/<service>) unless DATABASE_URL is set, and the demo data is seeded.
 */
const COLORS: Partial<Record<ProcessName, string>> = { gateway: '35', auth: '33', content: '36', oidc: '32' };

function printLine(name: ProcessName, line: string): void {
  const tag = process.stdout.isTTY ? `\x1b[${COLORS[name] ?? '33'}m${name.padEnd(8)}\x1b[0m` : name.padEnd(8);
  process.stdout.write(`${tag}| ${line}\n`);
}

async function main(): Promise<void> {
  const started = Date.now();
  const system = await startSystem({
    env: { HALO_ENV: process.env.HALO_ENV ?? 'development' },
    onLog: printLine,
  });
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  const gw = system.gatewayUrl;
  const lines = [
    '',
    `Halo is ready (${secs} s).`,
    `  Gateway, REST + GraphQL   ${gw}`,
    `  GraphQL endpoint          ${gw}/graphql`,
    ...system.processes
      .filter((p) => p.name !== 'gateway')
      .map((p) => `  ${p.name.padEnd(24)}  ${p.url}${p.grpcAddr ? `  (gRPC ${p.grpcAddr})` : ''}`),
    '',
    `Try:  curl ${gw}/hello`,
    `      curl ${gw}/posts/2`,
    `      curl -H 'content-type: application/json' -d '{"query":"{ users { name posts { title } } }"}' ${gw}/graphql`,
    'Stop with Ctrl+C.',
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');

  let stopping = false;
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('\nStopping Halo…\n');
    void system.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
  for (const p of system.processes) {
    p.child.once('exit', (code) => {
      if (stopping) return;
      process.stderr.write(`${p.name} exited unexpectedly (code ${code}); stopping the rest.\n`);
      stopping = true;
      void system.stop().then(() => process.exit(1));
    });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`Halo failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
