import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { nginxHead, spawnNginx } from './peers/nginx';

/**
 * The load balancer of `npm run bench:cluster` (src/cluster-bench.ts): ONE nginx (Debian's, one
 * worker, from a config generated into the run's temp dir, as src/peers/nginx.ts) with one
 * listener per upstream: `front` (the two gateways, the clients' entry point) and one per
 * service (its replicas, where the gateways' `<SERVICE>_URL` point). HTTP/1.1 keep-alive pools,
 * WebSocket upgrades passed through (the clients' subscriptions to the gateways, the gateways'
 * to chat), a refused or timed-out connection tried on the next server (`proxy_next_upstream`;
 * nginx never resends a POST it has sent), and a dead server left alone for 2 s after one failure.
 */
export interface Balanced {
  /** The upstream's name in the config, e.g. `front` or `content`. */
  name: string;
  /** Where nginx listens for it. */
  port: number;
  /** Its servers, `http://127.0.0.1:<port>`. */
  servers: string[];
}

export function clusterNginxConfig(dir: string, upstreams: readonly Balanced[]): string {
  const blocks = upstreams.map(
    (u) => `  upstream ${u.name} {
${u.servers.map((s) => `    server ${new URL(s).host} max_fails=1 fail_timeout=2s;`).join('\n')}
    keepalive 32;
  }
  server {
    listen 127.0.0.1:${u.port};
    location / {
      proxy_pass http://${u.name};
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $remote_addr;
      proxy_connect_timeout 1s;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
      proxy_buffering off;
      proxy_next_upstream error timeout http_502 http_503;
      proxy_next_upstream_tries 2;
    }
  }`,
  );
  return `${nginxHead(dir, 4096)}  access_log off;
  # A WebSocket upgrade is passed on; any other request keeps the upstream connection alive.
  map $http_upgrade $connection_upgrade {
    default upgrade;
    '' '';
  }
${blocks.join('\n')}
}
`;
}

export interface ClusterNginx {
  child: ChildProcess;
  /** Writes the new config and reloads it (SIGHUP: new workers, the old ones finish their connections). */
  reload(upstreams: readonly Balanced[]): Promise<void>;
}

/** Starts nginx in the foreground on `upstreams`, its output into `<logDir>/nginx.log`. */
export function startClusterNginx(bin: string, dir: string, logDir: string, upstreams: readonly Balanced[]): ClusterNginx {
  const { child, conf } = spawnNginx(bin, dir, clusterNginxConfig(dir, upstreams), logDir);
  return {
    child,
    async reload(next) {
      writeFileSync(conf, clusterNginxConfig(dir, next));
      child.kill('SIGHUP');
      // nginx starts the new worker within milliseconds; a moment for it to listen.
      await new Promise((r) => setTimeout(r, 500));
    },
  };
}
