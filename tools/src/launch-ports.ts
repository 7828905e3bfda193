import { randomBytes } from 'node:crypto';
import {
  DEV_OIDC_PORT,
  freePorts,
  GATEWAY_METRICS_PORT,
  GATEWAY_PORT,
  portIsFree,
  SERVICE_NAMES,
  SERVICES,
  type ServiceName,
} from '@halo/kit/launch';
import { LaunchError } from './launch-error';

/**
 * Where one system's processes listen, decided before any of them starts: every process is spawned
 * knowing every peer's address (a service reads its configuration once, at start), and a process
 * restarted after a crash comes back on the same address, which its peers and the tests hold.
 *
 * - Fixed (`npm start`, the benchmarks): the defaults of the topology table plus an offset.
 * - Auto (the tests): every port the OS's choice (`listen(0)`), so any number of systems, and of
 *   test runs, share a machine. The OS hands out a port that is free now; until the process binds
 *   it, another program's `listen(0)` may be handed the same one. The process then cannot start
 *   (EADDRINUSE), and the launcher starts the system again on new ports (`PortTakenError`).
 */
export interface SystemPorts {
  /** Names this launcher's record and control socket in its state directory (`launcher-<key>.json`). */
  key: string;
  gateway: number;
  gatewayMetrics: number;
  /** The dev OpenID provider's public port; 0: the launcher listens on a port of the OS's choice. */
  devOidc: number;
  services: Record<ServiceName, { http: number; grpc: number }>;
  /** HTTP ports of the extra processes of a service (`replicas`), chosen with the others in auto mode. */
  replicas: Partial<Record<ServiceName, number[]>>;
  /** Another free port the OS gives, never one of this system's (Postgres, the dev provider's process). */
  readonly another: () => Promise<number>;
}

/** Every address of a system, as tests and people use them: no port to compute. */
export interface SystemAddresses {
  gatewayUrl: string;
  /** The gateway's Prometheus endpoint (its METRICS_PORT, never its public port). */
  gatewayMetricsUrl: string;
  /** Each service's first process: its HTTP base URL and gRPC address. */
  services: Record<ServiceName, { url: string; grpcAddr: string }>;
  /** The dev OpenID provider's issuer, when it runs. */
  devOidcUrl?: string;
}

/** A process of the system could not bind the port chosen for it: another program holds it. */
export class PortTakenError extends Error {}

/**
 * Why a process that exited with the kit's "cannot start" code could not start: the one line it
 * wrote for that (`<name>: <reason>`, kit: runService), even when a log line came after it while it
 * stopped; else its last line.
 */
export function cannotStartLine(lines: readonly string[], name: string): string {
  for (let i = lines.length - 1; i >= 0; i--) if (lines[i]!.startsWith(`${name}: `)) return lines[i]!;
  return lines.at(-1) ?? '';
}

const LOOPBACK = '127.0.0.1';

/** `npm start`'s ports: the topology table's defaults plus `offset` (HALO_PORT_OFFSET). */
export function fixedPorts(offset: number, replicas: Partial<Record<ServiceName, number>> = {}): Promise<SystemPorts> {
  const services = Object.fromEntries(
    SERVICE_NAMES.map((name) => [name, { http: SERVICES[name].httpPort + offset, grpc: SERVICES[name].grpcPort + offset }]),
  ) as SystemPorts['services'];
  const ports = {
    key: String(offset),
    gateway: GATEWAY_PORT + offset,
    gatewayMetrics: GATEWAY_METRICS_PORT + offset,
    devOidc: DEV_OIDC_PORT + offset,
    services,
  };
  const fixed = [ports.gateway, ports.gatewayMetrics, ports.devOidc, ...Object.values(services).flatMap((s) => [s.http, s.grpc])];
  return withReplicaPorts(ports, replicas, new Set(fixed));
}

/** Every port the OS's choice, all distinct; the record's key unique to this system. */
export async function autoPorts(replicas: Partial<Record<ServiceName, number>> = {}): Promise<SystemPorts> {
  const given = new Set<number>();
  const [gateway, gatewayMetrics, ...rest] = await take(given, 2 + 2 * SERVICE_NAMES.length);
  const services = Object.fromEntries(SERVICE_NAMES.map((name, i) => [name, { http: rest[2 * i]!, grpc: rest[2 * i + 1]! }]));
  return withReplicaPorts(
    {
      key: `auto-${process.pid}-${randomBytes(4).toString('hex')}`,
      gateway: gateway!,
      gatewayMetrics: gatewayMetrics!,
      devOidc: 0,
      services: services as SystemPorts['services'],
    },
    replicas,
    given,
  );
}

/** `count` free ports, none handed out before by this system (`given`, which they join). */
async function take(given: Set<number>, count: number): Promise<number[]> {
  const ports = await freePorts(count, given);
  for (const port of ports) given.add(port);
  return ports;
}

async function withReplicaPorts(
  ports: Omit<SystemPorts, 'replicas' | 'another'>,
  replicas: Partial<Record<ServiceName, number>>,
  given: Set<number>,
): Promise<SystemPorts> {
  const extra: SystemPorts['replicas'] = {};
  for (const name of SERVICE_NAMES) {
    const count = (replicas[name] ?? 1) - 1;
    if (count > 0) extra[name] = await take(given, count);
  }
  return { ...ports, replicas: extra, another: async () => (await take(given, 1))[0]! };
}

export function addressesOf(ports: SystemPorts, devOidcPort: number | undefined): SystemAddresses {
  return {
    gatewayUrl: `http://${LOOPBACK}:${ports.gateway}`,
    gatewayMetricsUrl: `http://${LOOPBACK}:${ports.gatewayMetrics}/metrics`,
    services: Object.fromEntries(
      SERVICE_NAMES.map((name) => {
        const { http, grpc } = ports.services[name];
        return [name, { url: `http://${LOOPBACK}:${http}`, grpcAddr: `${LOOPBACK}:${grpc}` }];
      }),
    ) as SystemAddresses['services'],
    ...(devOidcPort ? { devOidcUrl: `http://${LOOPBACK}:${devOidcPort}` } : {}),
  };
}

interface PlannedPort {
  port: number;
  owner: string;
}

/**
 * Fixed ports only: all of them that are taken named in one line, with the way out, before a single
 * process is started. `settleMs`: how long ports a reaped process held may take to be released.
 */
export async function checkFixedPorts(ports: SystemPorts, devOidc: boolean, settleMs = 0): Promise<void> {
  const planned: PlannedPort[] = [
    { port: ports.gateway, owner: 'gateway' },
    { port: ports.gatewayMetrics, owner: 'gateway metrics' },
    ...(devOidc ? [{ port: ports.devOidc, owner: 'dev OpenID provider' }] : []),
    ...SERVICE_NAMES.flatMap((name) => [
      { port: ports.services[name].http, owner: `${name} HTTP` },
      { port: ports.services[name].grpc, owner: `${name} gRPC` },
    ]),
  ];
  let taken: PlannedPort[] = [];
  const deadline = Date.now() + settleMs;
  for (;;) {
    taken = [];
    for (const p of planned) if (!(await portIsFree(p.port))) taken.push(p);
    if (!taken.length) return;
    if (Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const list = taken.map((p) => `${p.port} (${p.owner})`).join(', ');
  throw new LaunchError(
    `Port${taken.length > 1 ? 's' : ''} already in use: ${list} — another Halo or another program holds ${taken.length > 1 ? 'them' : 'it'}; stop it, or move every port: HALO_PORT_OFFSET=100 npm start`,
  );
}
