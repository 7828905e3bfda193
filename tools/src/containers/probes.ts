import { connect } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { Probe } from './k8s';
import { podman } from './podman';

/** Where a probe looks: the pod's address, its named ports, its container (for `exec`). */
export interface ProbeTarget {
  ip: string;
  container: string;
  ports: { name?: string; containerPort: number }[];
}

/** One probe, as a kubelet runs it: true on success within its `timeoutSeconds`. */
export async function runProbe(probe: Probe, target: ProbeTarget): Promise<boolean> {
  const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
  const port = (p: number | string) => (typeof p === 'number' ? p : target.ports.find((x) => x.name === p)?.containerPort);
  try {
    if (probe.httpGet) {
      const res = await fetch(`http://${target.ip}:${port(probe.httpGet.port)}${probe.httpGet.path ?? '/'}`, {
        signal: AbortSignal.timeout(timeoutMs),
      });
      await res.arrayBuffer();
      return res.status >= 200 && res.status < 400;
    }
    if (probe.grpc) return await grpcHealthy(`${target.ip}:${probe.grpc.port}`, probe.grpc.service ?? '', timeoutMs);
    if (probe.tcpSocket) return await tcpOpen(target.ip, port(probe.tcpSocket.port)!, timeoutMs);
    if (probe.exec) return (await podman(['exec', target.container, ...probe.exec.command], { allowFailure: true })).code === 0;
  } catch {
    return false;
  }
  return true;
}

function tcpOpen(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolvePromise) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    socket.once('connect', () => {
      socket.destroy();
      resolvePromise(true);
    });
    socket.once('error', () => resolvePromise(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolvePromise(false);
    });
  });
}

/**
 * `grpc.health.v1.Health/Check`, as the kubelet's `grpc:` probe asks it: SERVING or not. The
 * messages are tiny enough to write by hand: the request is field 1 (string service), the answer
 * field 1 (enum status, SERVING = 1).
 */
function grpcHealthy(address: string, service: string, timeoutMs: number): Promise<boolean> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const request = Buffer.concat([service ? Buffer.from([0x0a, Buffer.byteLength(service)]) : Buffer.alloc(0), Buffer.from(service)]);
  return new Promise((resolvePromise) => {
    client.makeUnaryRequest(
      '/grpc.health.v1.Health/Check',
      (b: Buffer) => b,
      (b: Buffer) => b,
      request,
      new grpc.Metadata(),
      { deadline: Date.now() + timeoutMs },
      (err, answer) => {
        client.close();
        resolvePromise(!err && answer !== undefined && answer[0] === 0x08 && answer[1] === 1);
      },
    );
  });
}
