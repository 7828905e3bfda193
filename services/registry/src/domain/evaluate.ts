import {
  composeContracts,
  isRestChange,
  isTakeoverChange,
  restChanges,
  schemaChanges,
  takeoverChanges,
  usageOf,
  type ChangeUsage,
  type Composition,
  type Contract,
} from '@halo/contracts';
import { registeredNote, registeredUsage } from './client-operations';
import { DAY_MS } from './insight';
import type { CheckOptions, CheckReport, RegistryStore, VersionRecord } from './model';

/** What a check runs at: the time (usage windows, REST sunsets) and the OpenAPI version composed. */
export interface CheckContext {
  now: Date;
  apiVersion: Parameters<typeof composeContracts>[1];
}

/** A service's routing URL is part of its contract: moving it moves every gateway's traffic. */
export function urlChange(from: string, to: string) {
  if (from === to) return [];
  return [{ type: 'SERVICE_URL_CHANGED', path: 'url', message: `Routing URL changed from ${from} to ${to}`, breaking: false }];
}

/**
 * Changes usage cannot judge: a REST route (its calls are not recorded) and a takeover of another
 * service's data (who queries it says nothing about whose it is). They block until acknowledged.
 */
const needsAcknowledgement = (c: { type: string }) => isRestChange(c) || isTakeoverChange(c);

/** The other services' current subgraph SDLs (a REST-only contract has none). */
const othersSdl = (current: readonly VersionRecord[], service: string) =>
  current.flatMap((v) => (v.service !== service && v.contract.sdl ? [{ service: v.service, sdl: v.contract.sdl }] : []));

/**
 * What counted usage says of a breaking change it judges: unused, used within the threshold (a
 * share of every request in the window, `total`), or used enough to block, naming up to five of
 * the operations gateways counted (registered ones have their own note).
 */
function usageVerdict(path: string, used: ChangeUsage, days: number, total: number, thresholdPercent: number) {
  if (used.count === 0) return { blocks: false, note: `${path}: breaking, but unused in the last ${days} days` };
  const share = (used.count / Math.max(total, 1)) * 100;
  if (thresholdPercent > 0 && share <= thresholdPercent) {
    return {
      blocks: false,
      note: `${path}: breaking, used ${used.count} times in the last ${days} days (${share.toFixed(2)} % of requests), within the threshold of ${thresholdPercent} %`,
    };
  }
  const who = used.operations
    .filter((o) => !o.registered)
    .slice(0, 5)
    .map((o) => `${o.name || o.hash} (${o.clientVersion ? `${o.client} ${o.clientVersion}` : o.client}, ${o.count})`)
    .join(', ');
  return { blocks: true, note: `${path}: breaking and used ${used.count} times in the last ${days} days by ${who}` };
}

/**
 * The check: the contract composed with every other service's current one; its changes against
 * the current composition (what gateways serve); each breaking change's usage in the window.
 */
export async function evaluate(
  store: RegistryStore,
  contract: Contract,
  acknowledge: string | undefined,
  options: CheckOptions,
  ctx: CheckContext,
  current?: VersionRecord[],
  head?: { composition: number; hash: string } | null,
): Promise<{ report: CheckReport; composition?: Composition }> {
  current ??= await store.currentVersions();
  head = head === undefined ? await store.latestHead() : head;
  const contracts = [...current.filter((v) => v.service !== contract.service).map((v) => v.contract), contract];
  const result = composeContracts(contracts, ctx.apiVersion);
  const report: CheckReport = {
    ok: false,
    service: contract.service,
    composition: { ok: result.ok || result.errors.composition.length === 0, errors: result.ok ? [] : result.errors.composition },
    rest: { ok: result.ok || result.errors.rest.length === 0, errors: result.ok ? [] : result.errors.rest },
    changes: [],
    notes: [],
    options,
  };
  if (!result.ok) return { report };
  const before = head ? await store.composition(head.composition) : null;
  const mine = current.find((v) => v.service === contract.service);
  const changes = [
    ...(before
      ? [
          ...(await schemaChanges(before.supergraph, result.composition.supergraph)),
          ...restChanges(before.routes.routes, result.composition.routes.routes, ctx.now),
          ...urlChange(mine?.url ?? contract.url, contract.url),
        ]
      : []),
    ...(contract.sdl
      ? takeoverChanges(contract.service, mine?.contract.sdl ?? undefined, contract.sdl, othersSdl(current, contract.service))
      : []),
  ];
  const breakingPaths = changes.filter((c) => c.breaking && !needsAcknowledgement(c)).map((c) => c.path);
  const days = options.windowDays;
  const since = new Date(ctx.now.getTime() - days * DAY_MS);
  const usage = [
    ...(breakingPaths.length ? await store.usageOf(breakingPaths, since, options.excludeClients) : []),
    // Operations client apps registered for versions they ship: any use blocks, whatever the threshold.
    ...(await registeredUsage(store, breakingPaths, options.excludeClients)),
  ];
  // A threshold is a share of every request in the window (of the clients that count).
  const total = breakingPaths.length && options.thresholdPercent > 0 ? await store.requestsSince(since, options.excludeClients) : 0;
  let blocked = false;
  if (breakingPaths.length && options.excludeClients.length) {
    report.notes.push(`usage of ${options.excludeClients.join(', ')} not counted`);
  }
  for (const c of changes) {
    const used = c.breaking ? usageOf(c.path, usage) : { count: 0, operations: [] };
    const acknowledged = c.breaking && acknowledge !== undefined;
    report.changes.push({ ...c, acknowledged, usage: used });
    if (!c.breaking) continue;
    const registered = used.operations.filter((o) => o.registered);
    if (registered.length > 0 && !acknowledged) {
      blocked = true;
      report.notes.push(registeredNote(c.path, registered));
    }
    if (acknowledged) report.notes.push(`${c.path}: breaking, acknowledged: ${acknowledge}`);
    else if (isRestChange(c)) {
      // Gateways report GraphQL usage only: nobody can say a REST route is unused.
      blocked = true;
      report.notes.push(`${c.path}: breaking; REST calls are not recorded, so it needs an acknowledgement`);
    } else if (isTakeoverChange(c)) {
      // Whose data it is, not who queries it, is the question: the team must say why.
      blocked = true;
      report.notes.push(`${c.path}: ${c.message}; it needs an acknowledgement naming why (--acknowledge)`);
    } else if (used.count > 0 || registered.length === 0) {
      const verdict = usageVerdict(c.path, used, days, total, options.thresholdPercent);
      blocked ||= verdict.blocks;
      report.notes.push(verdict.note);
    }
  }
  report.ok = !blocked;
  return { report, composition: result.composition };
}
