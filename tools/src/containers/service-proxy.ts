import { readFileSync, watchFile } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A Kubernetes Service for the container runner (./cluster.ts): this process runs in a container
 * of its own whose network aliases are the Service's DNS names, listens on the Service's ports and
 * forwards each TCP connection to one of the Service's ready endpoints, round-robin — what
 * kube-proxy does for a ClusterIP. The runner rewrites the endpoints file as pods become ready or
 * leave; a connection already open stays on its pod until either side closes it, and a connection
 * made while no endpoint is ready is refused, both as in a cluster.
 *
 *   node service-proxy.js <endpoints.json>
 *
 * endpoints.json: { "ports": [{ "port": 4003, "name": "http" }], "endpoints": { "4003": ["10.89.0.7:4003"] } }
 */
interface Endpoints {
  ports: { port: number; name?: string }[];
  endpoints: Record<string, string[]>;
}

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node service-proxy.js <endpoints.json>\n');
  process.exit(2);
}

let current: Endpoints = { ports: [], endpoints: {} };
const next = new Map<number, number>();
const servers = new Map<number, Server>();

function read(): void {
  try {
    current = JSON.parse(readFileSync(file!, 'utf8')) as Endpoints;
  } catch {
    return; // a file being replaced: the next change event reads it whole
  }
  for (const { port } of current.ports) if (!servers.has(port)) servers.set(port, listen(port));
}

function listen(port: number): Server {
  const server = createServer((client: Socket) => {
    const targets = current.endpoints[String(port)] ?? [];
    if (targets.length === 0) return client.resetAndDestroy();
    const i = (next.get(port) ?? 0) % targets.length;
    next.set(port, i + 1);
    const [host, targetPort] = targets[i]!.split(':');
    const upstream = connect({ host: host!, port: Number(targetPort) });
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close);
    upstream.on('error', () => client.resetAndDestroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  server.listen(port, '0.0.0.0');
  return server;
}

read();
watchFile(file, { interval: 100 }, read);
process.on('SIGTERM', () => process.exit(0));
