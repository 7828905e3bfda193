import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { DEV_OIDC_PORT, GATEWAY_METRICS_PORT, GATEWAY_PORT, SERVICE_NAMES, SERVICES } from '@halo/kit/launch';

/**
 * The e2e suites run two at a time, each on its own port offset (every Halo port + offset). A
 * service's gRPC port is its HTTP port + 1000, so two offsets about 1000 apart share ports, and
 * whichever suite starts second fails with "Ports already in use" only when jest happens to run
 * them together (it did: 960 and 1960, 420 and 1420). Every offset written in e2e/ is checked here.
 */
const E2E = resolve(__dirname, '../../e2e');
const OFFSET = /(?:portOffset: |PORT_OFFSET = |npmStart\()(\d+)/g;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

function portsOf(offset: number): number[] {
  const base = [GATEWAY_PORT, GATEWAY_METRICS_PORT, DEV_OIDC_PORT];
  for (const name of SERVICE_NAMES) base.push(SERVICES[name].httpPort, SERVICES[name].grpcPort);
  return base.map((p) => p + offset);
}

it('no two port offsets used by the e2e suites share a port', () => {
  const owners = new Map<number, string>();
  for (const file of files(E2E)) {
    for (const m of readFileSync(file, 'utf8').matchAll(OFFSET)) owners.set(Number(m[1]), relative(E2E, file));
  }
  expect(owners.size).toBeGreaterThan(20);
  const clashes: string[] = [];
  const taken = new Map<number, number>();
  for (const offset of [...owners.keys()].sort((a, b) => a - b)) {
    for (const port of portsOf(offset)) {
      const other = taken.get(port);
      if (other !== undefined && other !== offset) {
        clashes.push(`${owners.get(other)} (${other}) and ${owners.get(offset)} (${offset}) both use port ${port}`);
      }
      taken.set(port, offset);
    }
  }
  expect(clashes).toEqual([]);
});
