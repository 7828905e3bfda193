import { Counter, Gauge, type Registry } from 'prom-client';
import { SUBSCRIPTIONS_GAUGE } from '@halo/kit/graphql';

export interface WatchedSources {
  subscriptions?: () => number;
  /** Subscriptions open to the subgraphs: one shared by many subscribers counts once (docs/adr/0011). */
  upstreamSubscriptions?: () => number;
  dedupe?: { inFlight(): number; waiting(): number; shared(): number } | null;
  responseCache?: { entries(): number; bytes(): number; hits(): number; misses(): number } | null;
  /** What is served and whether the registry answers (src/supergraph); up is null without one. */
  composition?: () => { composition: string; source: string; registryUp: boolean | null };
  /** Usage recording (src/usage): cumulative counters. */
  usage?: () => { dropped: number; reports: { sent: number; retried: number; dropped: number } } | null;
}

/** The sources read at every scrape; `watch` replaces them as the gateway's parts are made. */
export interface Watched {
  current: WatchedSources;
  registryUp: Gauge | null;
}

/**
 * The metrics read at scrape time from the gateway's parts: open subscriptions, the in-flight
 * dedupe, the response cache, the composition served and usage recording (zeros until watched).
 */
export function registerWatchedMetrics(registry: Registry, watched: Watched): void {
  graphqlEdgeMetrics(registry, watched);
  responseCacheMetrics(registry, watched);
  compositionMetrics(registry, watched);
}

/** Open subscriptions and the in-flight dedupe of subgraph fetches. */
function graphqlEdgeMetrics(registry: Registry, watched: Watched): void {
  new Gauge({
    name: SUBSCRIPTIONS_GAUGE,
    help: 'GraphQL subscriptions open at the gateway (operations, not sockets)',
    registers: [registry],
    collect() {
      this.set(watched.current.subscriptions?.() ?? 0);
    },
  });
  new Gauge({
    name: 'halo_gateway_upstream_subscriptions',
    help: 'Subscriptions the gateway holds open to the subgraphs (one shared by many subscribers counts once)',
    registers: [registry],
    collect() {
      this.set(watched.current.upstreamSubscriptions?.() ?? 0);
    },
  });
  new Gauge({
    name: 'halo_graphql_dedupe_in_flight',
    help: 'Distinct subgraph fetches in flight that identical ones may share',
    registers: [registry],
    collect() {
      this.set(watched.current.dedupe?.inFlight() ?? 0);
    },
  });
  new Gauge({
    name: 'halo_graphql_dedupe_waiting',
    help: "Subgraph fetches waiting for an identical one's answer",
    registers: [registry],
    collect() {
      this.set(watched.current.dedupe?.waiting() ?? 0);
    },
  });
  new Counter({
    name: 'halo_graphql_dedupe_shared_total',
    help: "Subgraph fetches answered by an identical in-flight one's answer",
    registers: [registry],
    collect() {
      this.reset();
      this.inc(watched.current.dedupe?.shared() ?? 0);
    },
  });
}

/** The edge response cache of this process. */
function responseCacheMetrics(registry: Registry, watched: Watched): void {
  new Gauge({
    name: 'halo_graphql_response_cache_entries',
    help: 'Answers held by the edge response cache of this process',
    registers: [registry],
    collect() {
      this.set(watched.current.responseCache?.entries() ?? 0);
    },
  });
  new Gauge({
    name: 'halo_graphql_response_cache_bytes',
    help: 'Approximate bytes held by the edge response cache of this process',
    registers: [registry],
    collect() {
      this.set(watched.current.responseCache?.bytes() ?? 0);
    },
  });
  new Counter({
    name: 'halo_graphql_response_cache_lookups_total',
    help: 'Anonymous queries looked up in the edge response cache, by result (hit: answered from it)',
    labelNames: ['result'] as const,
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ result: 'hit' }, watched.current.responseCache?.hits() ?? 0);
      this.inc({ result: 'miss' }, watched.current.responseCache?.misses() ?? 0);
    },
  });
}

/** The composition served and usage recording. */
function compositionMetrics(registry: Registry, watched: Watched): void {
  new Gauge({
    name: 'halo_gateway_composition_info',
    help: 'The composition served (the registry number, or file:<hash> for the committed files) and where it came from; always 1',
    labelNames: ['composition', 'source'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const served = watched.current.composition?.();
      if (served) this.set({ composition: served.composition, source: served.source }, 1);
    },
  });
  new Counter({
    name: 'halo_gateway_usage_dropped_operations_total',
    help: 'Executed operations not recorded for usage because USAGE_MAX_OPERATIONS distinct (operation, client, client version) triples were held',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(watched.current.usage?.()?.dropped ?? 0);
    },
  });
  new Counter({
    name: 'halo_gateway_usage_reports_total',
    help: 'Usage reports (one per hour, operation, client and client version) by what became of them: sent, retried (failed once), dropped (failed twice)',
    labelNames: ['outcome'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const reports = watched.current.usage?.()?.reports;
      for (const outcome of ['sent', 'retried', 'dropped'] as const) this.inc({ outcome }, reports?.[outcome] ?? 0);
    },
  });
}

/** New sources to read; the registry's gauge appears once there is a registry to report on. */
export function watch(registry: Registry, watched: Watched, next: WatchedSources): void {
  watched.current = { ...watched.current, ...next };
  // Only with a registry: a 0 would read as "registry down" where there is none.
  if (!watched.registryUp && next.composition && next.composition().registryUp !== null) {
    watched.registryUp = new Gauge({
      name: 'halo_gateway_registry_up',
      help: 'Whether the last poll of the schema registry got an answer (1) or not (0)',
      registers: [registry],
      collect() {
        this.set(watched.current.composition?.().registryUp ? 1 : 0);
      },
    });
  }
}
