import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createGatewayRuntime } from '@graphql-hive/gateway-runtime';
import { unifiedGraphHandler } from '@graphql-hive/router-runtime';

/**
 * A peer for the gateway comparison (`npm run bench`): Hive Gateway's runtime with its defaults
 * on the supergraph the bench gives it (subgraph URLs rewritten to the running services), served
 * by node:http. Two deliberate settings only:
 *
 * - the client's `authorization` goes to every subgraph (`propagateHeaders.fromClientToSubgraphs`),
 *   so the subgraphs verify the caller as they do behind Halo (where the gateway also checks the
 *   token itself);
 * - `HIVE_DEDUPE=false` turns off its in-flight deduplication of identical subgraph requests
 *   (`deduplicateInflightRequests` of its HTTP transport, @graphql-tools/executor-http; on by
 *   default, and the key includes the propagated headers, so it never crosses callers);
 * - `HIVE_ROUTER_RUNTIME=true` runs it on Hive Router's runtime (`@graphql-hive/router-runtime`:
 *   the Rust query planner, a native addon, and its purpose-built executor) instead of the default
 *   stitching runtime, as its documentation configures it (`unifiedGraphHandler`; the same switch
 *   as `hive-gateway supergraph --hive-router-runtime`).
 *
 * No usage reporting (none is configured: the runtime reports only with `reporting` or a
 * Hive/GraphOS supergraph source), no response cache (only with `responseCaching`).
 * Environment: PORT, SUPERGRAPH_FILE, HIVE_DEDUPE, HIVE_ROUTER_RUNTIME.
 */
const port = Number(process.env.PORT);
const supergraph = readFileSync(process.env.SUPERGRAPH_FILE!, 'utf8');
const dedupe = process.env.HIVE_DEDUPE !== 'false';
const routerRuntime = process.env.HIVE_ROUTER_RUNTIME === 'true';

const gateway = createGatewayRuntime({
  supergraph,
  ...(routerRuntime ? { unifiedGraphHandler } : {}),
  propagateHeaders: {
    fromClientToSubgraphs: ({ request }) => {
      const authorization = request.headers.get('authorization');
      return authorization ? { authorization } : {};
    },
  },
  ...(dedupe ? {} : { transportEntries: { '*.http': { options: { deduplicateInflightRequests: false } } } }),
});

// eslint-disable-next-line @typescript-eslint/no-misused-promises -- the runtime answers its own errors; Node ignores the promise, as in Hive's own examples
createServer(gateway).listen(port, '127.0.0.1', () => {
  process.stdout.write(
    `hive gateway (${routerRuntime ? 'router runtime' : 'stitching runtime'}, dedupe ${dedupe ? 'on' : 'off'}) listening on ${port}\n`,
  );
});
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    void Promise.resolve(gateway.dispose()).finally(() => process.exit(0));
  });
}
