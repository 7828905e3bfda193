import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

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
  return `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
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
  mkdirSync(dir, { recursive: true });
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, clusterNginxConfig(dir, upstreams));
  const fd = openSync(join(logDir, 'nginx.log'), 'w');
  const child = spawn(bin, ['-p', dir, '-e', join(dir, 'error.log'), '-c', conf], { stdio: ['ignore', fd, fd] });
  closeSync(fd);
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
