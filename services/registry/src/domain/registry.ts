import { createHash } from 'node:crypto';
import {
  canonicalJson,
  composeContracts,
  contractHash,
  isRestChange,
  parseContract,
  restChanges,
  schemaChanges,
  usageOf,
  type ChangeUsage,
  type Composition,
  type Contract,
} from '@halo/contracts';
import { badRequest, conflict, forbidden } from '@halo/kit';
import type { Acknowledgement, CompositionRecord, Principal, RegistryStore, UsageReport, VersionRecord } from './model';

/** The check report (docs/registry.md, "Check report"). */
export interface CheckReport {
  ok: boolean;
  service: string;
  composition: { ok: boolean; errors: string[] };
  rest: { ok: boolean; errors: string[] };
  changes: {
    type: string;
    path: string;
    message: string;
    breaking: boolean;
    acknowledged: boolean;
    usage: ChangeUsage;
  }[];
  notes: string[];
}

export type PublishOutcome =
  | { kind: 'published'; version: number; composition: number; report: CheckReport }
  | { kind: 'unchanged'; version: number; composition: number | null }
  | { kind: 'refused'; report: CheckReport };

export interface RegistryOptions {
  usageWindowDays: number;
  usageRetentionDays: number;
  /** The OpenAPI document's version (Halo's). */
  apiVersion?: string;
  now?: () => Date;
}

const DAY_MS = 86_400_000;

/** Who an action is recorded as. */
export const authorOf = (p: Principal): string =>
  p.kind === 'service' ? `service:${p.name}` : p.kind === 'admin' ? `admin:${p.name} (${p.id})` : 'developer (loopback)';

/** Publish, check and roll back: a service only its own contract; an admin key or a local developer any. */
export function authorizePublisher(p: Principal, service: string): void {
  if (p.kind === 'service' && p.name !== service) throw forbidden();
}

/** Usage reports: the gateway (or a local developer). */
export function authorizeUsageReporter(p: Principal): void {
  if (!(p.kind === 'developer' || (p.kind === 'service' && p.name === 'gateway'))) throw forbidden();
}

const compositionHash = (c: Composition) => createHash('sha256').update(canonicalJson(c)).digest('hex');

function contractFrom(body: unknown): Contract {
  const contract = (body as { contract?: unknown } | null)?.contract;
  if (contract === undefined) throw badRequest('contract is required');
  const parsed = parseContract(contract);
  if ('error' in parsed) throw badRequest(parsed.error);
  return parsed.contract;
}

function acknowledgeFrom(body: unknown): string | undefined {
  const a = (body as { acknowledge?: unknown } | null)?.acknowledge;
  if (a === undefined || a === null) return undefined;
  if (typeof a !== 'string' || a.trim() === '' || a.length > 1000)
    throw badRequest('acknowledge must be a non-empty reason (at most 1000 characters)');
  return a.trim();
}

/**
 * The registry's rules: what a contract's check finds, when a publish goes through, what a
 * rollback republishes, and who may do which. Composition runs under the store's lock, so two
 * publishes at once are composed one after the other and neither is lost.
 */
export class Registry {
  private readonly now: () => Date;
  private lastPrune = 0;

  constructor(
    private readonly store: RegistryStore,
    private readonly opts: RegistryOptions,
  ) {
    this.now = opts.now ?? (() => new Date());
  }

  /** The latest composition, or null; `ifNoneMatch` equal to its hash answers `notModified`. */
  async supergraph(ifNoneMatch?: string): Promise<{ notModified: true; composition: number; hash: string } | CompositionRecord | null> {
    const head = await this.store.latestHead();
    if (!head) return null;
    if (ifNoneMatch === head.hash) return { notModified: true, ...head };
    return this.store.composition(head.composition);
  }

  async check(principal: Principal, body: unknown): Promise<CheckReport> {
    const contract = contractFrom(body);
    authorizePublisher(principal, contract.service);
    return (await this.evaluate(this.store, contract, acknowledgeFrom(body))).report;
  }

  async publish(principal: Principal, body: unknown): Promise<PublishOutcome> {
    const contract = contractFrom(body);
    authorizePublisher(principal, contract.service);
    return this.store.locked((tx) => this.publishLocked(tx, contract, acknowledgeFrom(body), authorOf(principal)));
  }

  /** Republishes the service's version before its current one, after the same checks, as a new version. */
  async rollback(principal: Principal, body: unknown): Promise<PublishOutcome> {
    const service = (body as { service?: unknown } | null)?.service;
    if (typeof service !== 'string' || service === '') throw badRequest('service is required');
    authorizePublisher(principal, service);
    const acknowledge = acknowledgeFrom(body);
    return this.store.locked(async (tx) => {
      const current = (await tx.currentVersions()).find((v) => v.service === service);
      const previous = current && (await tx.versions(service)).find((v) => v.version < current.version && v.hash !== current.hash);
      if (!previous) throw conflict(`${service} has no previous version`);
      return this.publishLocked(tx, previous.contract, acknowledge, authorOf(principal));
    });
  }

  async services(): Promise<{ service: string; version: number; url: string; hash: string; author: string; publishedAt: string }[]> {
    return (await this.store.currentVersions())
      .map((v) => ({ service: v.service, version: v.version, url: v.url, hash: v.hash, author: v.author, publishedAt: v.createdAt }))
      .sort((a, b) => a.service.localeCompare(b.service));
  }

  async versions(service: string): Promise<{ version: number; hash: string; url: string; author: string; createdAt: string }[]> {
    return (await this.store.versions(service)).map((v) => ({
      version: v.version,
      hash: v.hash,
      url: v.url,
      author: v.author,
      createdAt: v.createdAt,
    }));
  }

  gateways() {
    return this.store.gateways();
  }

  /** A gateway polled: remember which composition it serves now. */
  async sawGateway(id: string | undefined, composition: number | null): Promise<void> {
    if (id) await this.store.sawGateway(id.slice(0, 200), composition);
  }

  /** Adds a gateway's counts (summed per hour, operation and client); old rows are pruned at most hourly. */
  async recordUsage(
    principal: Principal,
    gateway: { id: string; composition: number | null },
    reports: readonly UsageReport[],
  ): Promise<void> {
    authorizeUsageReporter(principal);
    const summed = new Map<string, UsageReport>();
    for (const r of reports) {
      const hour = new Date(r.hour);
      hour.setUTCMinutes(0, 0, 0);
      const key = `${hour.toISOString()} ${r.operation.hash} ${r.client}`;
      const seen = summed.get(key);
      if (seen) seen.count += r.count;
      else summed.set(key, { ...r, hour: hour.toISOString() });
    }
    await this.store.addUsage([...summed.values()]);
    await this.store.sawGateway(gateway.id, gateway.composition);
    const now = this.now().getTime();
    if (now - this.lastPrune > 3_600_000) {
      this.lastPrune = now;
      await this.store.pruneUsage(new Date(now - this.opts.usageRetentionDays * DAY_MS));
    }
  }

  /**
   * First start: the committed files as version 1 of each service (author `bootstrap`), so the
   * first team publish composes against everyone else. Nothing happens when a composition exists.
   */
  async bootstrap(
    contracts: readonly Contract[],
    acknowledged: readonly Omit<Acknowledgement, 'author' | 'version'>[],
  ): Promise<number | null> {
    if (await this.store.latestHead()) return null;
    return this.store.locked(async (tx) => {
      if (await tx.latestHead()) return null;
      const result = composeContracts(contracts, this.apiVersion());
      if (!result.ok) throw new Error(`Bootstrap: the committed files do not compose: ${JSON.stringify(result.errors)}`);
      const services: Record<string, number> = {};
      for (const c of contracts) {
        services[c.service] = await tx.insertVersion({
          service: c.service,
          hash: contractHash(c),
          url: c.url,
          contract: c,
          author: 'bootstrap',
        });
      }
      await tx.insertAcknowledgements(acknowledged.map((a) => ({ ...a, version: null, author: 'bootstrap' })));
      return tx.insertComposition({ ...result.composition, hash: compositionHash(result.composition), services, author: 'bootstrap' });
    });
  }

  private apiVersion() {
    return this.opts.apiVersion ? { version: this.opts.apiVersion } : {};
  }

  private async publishLocked(
    tx: RegistryStore,
    contract: Contract,
    acknowledge: string | undefined,
    author: string,
  ): Promise<PublishOutcome> {
    const current = await tx.currentVersions();
    const head = await tx.latestHead();
    const hash = contractHash(contract);
    const mine = current.find((v) => v.service === contract.service);
    if (mine?.hash === hash) return { kind: 'unchanged', version: mine.version, composition: head?.composition ?? null };
    const { report, composition } = await this.evaluate(tx, contract, acknowledge, current, head);
    if (!report.ok || !composition) return { kind: 'refused', report };
    const version = await tx.insertVersion({ service: contract.service, hash, url: contract.url, contract, author });
    const services = Object.fromEntries(current.map((v) => [v.service, v.version]));
    services[contract.service] = version;
    const n = await tx.insertComposition({ ...composition, hash: compositionHash(composition), services, author });
    const acked = report.changes.filter((c) => c.breaking && c.acknowledged);
    if (acknowledge && acked.length > 0) {
      await tx.insertAcknowledgements(
        acked.map((c) => ({
          service: contract.service,
          version,
          type: c.type,
          path: c.path,
          message: c.message,
          reason: acknowledge,
          author,
        })),
      );
    }
    return { kind: 'published', version, composition: n, report };
  }

  /**
   * The check: the contract composed with every other service's current one; its changes against
   * the current composition (what gateways serve); each breaking change's usage in the window.
   */
  private async evaluate(
    store: RegistryStore,
    contract: Contract,
    acknowledge: string | undefined,
    current?: VersionRecord[],
    head?: { composition: number; hash: string } | null,
  ): Promise<{ report: CheckReport; composition?: Composition }> {
    current ??= await store.currentVersions();
    head = head === undefined ? await store.latestHead() : head;
    const contracts = [...current.filter((v) => v.service !== contract.service).map((v) => v.contract), contract];
    const result = composeContracts(contracts, this.apiVersion());
    const report: CheckReport = {
      ok: false,
      service: contract.service,
      composition: { ok: result.ok || result.errors.composition.length === 0, errors: result.ok ? [] : result.errors.composition },
      rest: { ok: result.ok || result.errors.rest.length === 0, errors: result.ok ? [] : result.errors.rest },
      changes: [],
      notes: [],
    };
    if (!result.ok) return { report };
    const before = head ? await store.composition(head.composition) : null;
    const changes = before
      ? [
          ...(await schemaChanges(before.supergraph, result.composition.supergraph)),
          ...restChanges(before.routes.routes, result.composition.routes.routes, this.now()),
        ]
      : [];
    const breakingPaths = changes.filter((c) => c.breaking && !isRestChange(c)).map((c) => c.path);
    const days = this.opts.usageWindowDays;
    const usage = breakingPaths.length ? await store.usageOf(breakingPaths, new Date(this.now().getTime() - days * DAY_MS)) : [];
    let blocked = false;
    for (const c of changes) {
      const used = c.breaking ? usageOf(c.path, usage) : { count: 0, operations: [] };
      const acknowledged = c.breaking && acknowledge !== undefined;
      report.changes.push({ ...c, acknowledged, usage: used });
      if (!c.breaking) continue;
      if (acknowledged) report.notes.push(`${c.path}: breaking, acknowledged: ${acknowledge}`);
      else if (isRestChange(c)) {
        // Gateways report GraphQL usage only: nobody can say a REST route is unused.
        blocked = true;
        report.notes.push(`${c.path}: breaking; REST calls are not recorded, so it needs an acknowledgement`);
      } else if (used.count === 0) report.notes.push(`${c.path}: breaking, but unused in the last ${days} days`);
      else {
        blocked = true;
        const who = used.operations
          .slice(0, 5)
          .map((o) => `${o.name || o.hash} (${o.client}, ${o.count})`)
          .join(', ');
        report.notes.push(`${c.path}: breaking and used ${used.count} times in the last ${days} days by ${who}`);
      }
    }
    report.ok = !blocked;
    return { report, composition: result.composition };
  }
}
