import { createHash } from 'node:crypto';
import {
  canonicalJson,
  composeContracts,
  contractHash,
  restChanges,
  schemaChanges,
  type Composition,
  type Contract,
} from '@halo/contracts';
import { notFound } from '@halo/kit/errors';
import { authorizeChecker, authorizePublisher, authorizeUsageReporter, authorOf, spendWriteToken } from './access';
import { ClientOperations } from './client-operations';
import { evaluate, urlChange, type CheckContext } from './evaluate';
import {
  checkDetail,
  checkOf,
  checkSummary,
  coordinateFrom,
  DAY_MS,
  daysFrom,
  serviceFrom,
  operationOrderFrom,
  seriesOf,
  wholeNumber,
  windowHours,
} from './insight';
import type {
  Acknowledgement,
  CheckDetail,
  CheckKind,
  CheckOptions,
  CheckReport,
  CheckSummary,
  ClientUsage,
  CompositionRecord,
  CoordinateUsage,
  NewCheck,
  Principal,
  RecordedChange,
  RegistryStore,
  TopOperation,
  UsageReport,
  UsageSeries,
  VersionRecord,
} from './model';
import { checkOptions, type CheckInput, type CheckOptionsInput, type RollbackInput } from './requests';

export { authorizeChecker, authorizePublisher, authorizeReader, authorizeUsageReporter, authorOf } from './access';
export type { CheckOptions, CheckReport } from './model';
export type { CheckInput, RollbackInput } from './requests';

export type PublishOutcome =
  | { kind: 'published'; version: number; composition: number; report: CheckReport }
  | { kind: 'unchanged'; version: number; composition: number | null }
  | { kind: 'refused'; report: CheckReport };

export interface RegistryOptions {
  usageWindowDays: number;
  usageRetentionDays: number;
  /** Default check options (REGISTRY_CHECK_THRESHOLD_PERCENT, REGISTRY_CHECK_EXCLUDE_CLIENTS). */
  thresholdPercent?: number;
  excludeClients?: readonly string[];
  /** The OpenAPI document's version (Halo's). */
  apiVersion?: string;
  /** The largest estimated cost of a pushed client operation (OPERATIONS_MAX_COST). */
  operationsMaxCost?: number;
  now?: () => Date;
}

/** One entry of a service's history (`GET /v1/services/:service/versions`). */
export interface VersionSummary {
  version: number;
  hash: string;
  url: string;
  author: string;
  createdAt: string;
  changes: RecordedChange[] | null;
  acknowledgement: string | null;
  rollbackOf: number | null;
}

/** Two versions of a service compared (`GET /v1/services/:service/diff`). */
export interface VersionDiff {
  service: string;
  from: number;
  to: number;
  changes: { type: string; path: string; message: string; breaking: boolean }[];
  /** Why the change list is empty although the versions differ: one of them no longer composes. */
  errors: string[];
  /** The two versions compared, whole (the HTTP layer writes their text diff). */
  versions: [VersionRecord, VersionRecord];
}

const compositionHash = (c: Composition) => createHash('sha256').update(canonicalJson(c)).digest('hex');

/**
 * The registry's rules: what a contract's check finds, when a publish goes through, what a
 * rollback republishes, and who may do which. Composition runs under the store's lock, so two
 * publishes at once are composed one after the other and neither is lost.
 */
export class Registry {
  private readonly now: () => Date;
  private lastPrune = 0;
  /** Client apps' operation lists (client-operations.ts), which checks hold changes against too. */
  readonly operations: ClientOperations;

  constructor(
    private readonly store: RegistryStore,
    private readonly opts: RegistryOptions,
  ) {
    this.now = opts.now ?? (() => new Date());
    this.operations = new ClientOperations(store, { maxCost: opts.operationsMaxCost });
  }

  /** The latest composition, or null; `ifNoneMatch` equal to its hash answers `notModified`. */
  async supergraph(ifNoneMatch?: string): Promise<{ notModified: true; composition: number; hash: string } | CompositionRecord | null> {
    const head = await this.store.latestHead();
    if (!head) return null;
    if (ifNoneMatch === head.hash) return { notModified: true, ...head };
    return this.store.composition(head.composition);
  }

  /**
   * A check changes nothing but its own record (table `checks`), written once it has answered.
   * Who may check which service is answered first (`authorizeChecker`, which the HTTP layer also
   * asks before it reads the body).
   */
  async check(principal: Principal, { contract, options: given, acknowledge }: CheckInput): Promise<CheckReport> {
    authorizeChecker(principal, contract.service);
    const options = this.checkOptions(given);
    const { report } = await evaluate(this.store, contract, acknowledge, options, this.context());
    await this.store.insertCheck({
      ...checkOf('check', { kind: 'checked', report }, contract.service, options),
      author: authorOf(principal),
      acknowledgement: acknowledge ?? null,
    });
    return report;
  }

  /** The request's `options`, each defaulting to the registry's settings; 400 for a window beyond the usage kept. */
  private checkOptions(given: CheckOptionsInput): CheckOptions {
    const defaults = {
      windowDays: this.opts.usageWindowDays,
      thresholdPercent: this.opts.thresholdPercent ?? 0,
      excludeClients: [...(this.opts.excludeClients ?? [])],
    };
    return checkOptions(given, defaults, this.opts.usageRetentionDays);
  }

  async publish(principal: Principal, { contract, options: given, acknowledge }: CheckInput): Promise<PublishOutcome> {
    authorizePublisher(principal, contract.service);
    const options = this.checkOptions(given);
    await this.spend(principal);
    return this.store.locked(async (tx) => {
      const outcome = await this.publishLocked(tx, contract, acknowledge, authorOf(principal), undefined, options);
      return this.recorded(tx, 'publish', principal, contract.service, acknowledge, options, outcome);
    });
  }

  /**
   * A publish or rollback is recorded in its own transaction, refused ones too (the transaction
   * commits: a refusal changes nothing else), so the record and what it says happened agree.
   */
  private async recorded(
    tx: RegistryStore,
    kind: CheckKind,
    principal: Principal,
    service: string,
    acknowledge: string | undefined,
    options: CheckOptions,
    outcome: PublishOutcome,
  ): Promise<PublishOutcome> {
    const row: NewCheck = {
      ...checkOf(kind, outcome, service, options),
      author: authorOf(principal),
      acknowledgement: acknowledge ?? null,
    };
    await tx.insertCheck(row);
    return outcome;
  }

  /** A signed token is good for one write: sent again (a retry, a copy), it is refused. */
  private spend(principal: Principal): Promise<void> {
    return spendWriteToken(this.store, principal);
  }

  /**
   * Republishes the contract of an explicit earlier version (`to`), after the same checks as a
   * publish, as a new version that records which it rolled back to. Never a toggle: two rollbacks
   * to the same version leave it current.
   */
  async rollback(principal: Principal, { service, to, options: given, acknowledge }: RollbackInput): Promise<PublishOutcome> {
    authorizePublisher(principal, service);
    const options = this.checkOptions(given);
    await this.spend(principal);
    return this.store.locked(async (tx) => {
      const target = await tx.version(service, to);
      if (!target) throw notFound(`${service} has no version ${to}`);
      const outcome = await this.publishLocked(tx, target.contract, acknowledge, authorOf(principal), to, options);
      return this.recorded(tx, 'rollback', principal, service, acknowledge, options, outcome);
    });
  }

  /** One version of a service, with its contract (SDL, REST part, URL). */
  async version(service: string, version: number): Promise<VersionRecord> {
    const found = await this.store.version(service, version);
    if (!found) throw notFound(`${service} has no version ${version}`);
    return found;
  }

  /**
   * What changes between two versions of a service: each composed with every other service's
   * current contract, the change list a check would print from one to the other, and both
   * versions whole.
   */
  async diff(service: string, from: number, to: number): Promise<VersionDiff> {
    const [a, b] = [await this.version(service, from), await this.version(service, to)];
    const others = (await this.store.currentVersions()).filter((v) => v.service !== service).map((v) => v.contract);
    const composed = [a, b].map((v) => composeContracts([...others, v.contract], this.apiVersion()));
    const errors = composed.flatMap((c, i) =>
      c.ok ? [] : [...c.errors.composition, ...c.errors.rest].map((e) => `v${i === 0 ? from : to} does not compose today: ${e}`),
    );
    const [ca, cb] = composed;
    const changes =
      ca!.ok && cb!.ok
        ? [
            ...(await schemaChanges(ca!.composition.supergraph, cb!.composition.supergraph)),
            ...restChanges(ca!.composition.routes.routes, cb!.composition.routes.routes, this.now()),
            ...urlChange(a.url, b.url),
          ].map(({ type, path, message, breaking }) => ({ type, path, message, breaking }))
        : [];
    return { service, from, to, changes, errors, versions: [a, b] };
  }

  async services(): Promise<{ service: string; version: number; url: string; hash: string; author: string; publishedAt: string }[]> {
    return (await this.store.currentVersions())
      .map((v) => ({ service: v.service, version: v.version, url: v.url, hash: v.hash, author: v.author, publishedAt: v.createdAt }))
      .sort((a, b) => a.service.localeCompare(b.service));
  }

  /** A service's history, newest first: who published each version, when, what it changed and why. */
  async versions(service: string): Promise<VersionSummary[]> {
    return (await this.store.versions(service)).map((v) => ({
      version: v.version,
      hash: v.hash,
      url: v.url,
      author: v.author,
      createdAt: v.createdAt,
      changes: v.changes ?? null,
      acknowledgement: v.acknowledgement ?? null,
      rollbackOf: v.rollbackOf ?? null,
    }));
  }

  gateways() {
    return this.store.gateways();
  }

  /** A gateway polled: remember which composition it serves now. */
  async sawGateway(id: string | undefined, composition: number | null): Promise<void> {
    if (id) await this.store.sawGateway(id.slice(0, 200), composition);
  }

  /** Adds a gateway's counts (summed per hour, operation, client and client version); old rows are pruned at most hourly. */
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
      const clientVersion = r.clientVersion ?? '';
      const key = `${hour.toISOString()}\n${r.operation.hash}\n${r.client}\n${clientVersion}`;
      const seen = summed.get(key);
      if (seen) {
        seen.count += r.count;
        if (r.cost) seen.cost = { sum: (seen.cost?.sum ?? 0) + r.cost.sum, requests: (seen.cost?.requests ?? 0) + r.cost.requests };
      } else summed.set(key, { ...r, hour: hour.toISOString(), clientVersion, ...(r.cost ? { cost: { ...r.cost } } : {}) });
    }
    await this.store.addUsage([...summed.values()]);
    await this.store.sawGateway(gateway.id, gateway.composition);
    const now = this.now().getTime();
    if (now - this.lastPrune > 3_600_000) {
      this.lastPrune = now;
      // Checks are kept as long as the usage they were decided on.
      const before = new Date(now - this.opts.usageRetentionDays * DAY_MS);
      await this.store.pruneUsage(before);
      await this.store.pruneChecks(before);
    }
  }

  /** The latest checks, publishes and rollbacks (of one service, or all), newest first: `limit` 1 to 200, default 50. */
  async checks(query: { service?: string; limit?: number } = {}): Promise<CheckSummary[]> {
    const limit = wholeNumber('limit', query.limit, 50, 1, 200);
    return (await this.store.checks(serviceFrom(query.service), limit)).map(checkSummary);
  }

  /** One check whole, its report as answered; 404 when there is none (or it was pruned). */
  async checkById(id: number): Promise<CheckDetail> {
    const found = await this.store.checkById(wholeNumber('id', id, 0, 1, Number.MAX_SAFE_INTEGER));
    if (!found) throw notFound(`No check ${id}`);
    return checkDetail(found);
  }

  /** Requests per schema coordinate in the last `days` (default the check window; at most the retention). */
  async usageByCoordinate(days?: number): Promise<CoordinateUsage> {
    const since = this.since(days);
    return { since: since.toISOString(), coordinates: await this.store.coordinateCounts(since) };
  }

  /** One coordinate's requests per hour and client version over the last `days`, zero-filled, and the operations that used it. */
  async usageSeries(coordinate: string, days?: number): Promise<UsageSeries> {
    const c = coordinateFrom(coordinate);
    const since = this.since(days);
    const [counts, operations] = await Promise.all([this.store.coordinateHours(c, since), this.store.coordinateOperations(c, since)]);
    const hours = windowHours(since, this.now());
    return { coordinate: c, since: since.toISOString(), hours, series: seriesOf(hours, counts), operations };
  }

  /**
   * The top operations of the last `days` by `by` (requests, the default; `cost` per request;
   * `totalCost`): `limit` 1 to 200, default 50.
   */
  async topOperations(days?: number, limit?: number, by?: string): Promise<TopOperation[]> {
    const since = this.since(days);
    return this.store.topOperations(since, wholeNumber('limit', limit, 50, 1, 200), operationOrderFrom(by));
  }

  /** Requests per client version in the last `days`, busiest first. */
  async usageClients(days?: number): Promise<ClientUsage[]> {
    return this.store.clientCounts(this.since(days));
  }

  /** A read's window, as a check's: from `days` × 24 h ago (400 outside 1 to the retention). */
  private since(days: number | undefined): Date {
    const d = daysFrom(days, this.opts.usageWindowDays, this.opts.usageRetentionDays);
    return new Date(this.now().getTime() - d * DAY_MS);
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

  private context(): CheckContext {
    return { now: this.now(), apiVersion: this.apiVersion() };
  }

  private async publishLocked(
    tx: RegistryStore,
    contract: Contract,
    acknowledge: string | undefined,
    author: string,
    rollbackOf: number | undefined,
    options: CheckOptions,
  ): Promise<PublishOutcome> {
    const current = await tx.currentVersions();
    const head = await tx.latestHead();
    const hash = contractHash(contract);
    const mine = current.find((v) => v.service === contract.service);
    if (mine?.hash === hash) return { kind: 'unchanged', version: mine.version, composition: head?.composition ?? null };
    const { report, composition } = await evaluate(tx, contract, acknowledge, options, this.context(), current, head);
    if (!report.ok || !composition) return { kind: 'refused', report };
    const acked = report.changes.filter((c) => c.breaking && c.acknowledged);
    const version = await tx.insertVersion({
      service: contract.service,
      hash,
      url: contract.url,
      contract,
      author,
      changes: report.changes.map(({ type, path, message, breaking, acknowledged }) => ({ type, path, message, breaking, acknowledged })),
      acknowledgement: acknowledge && acked.length > 0 ? acknowledge : null,
      rollbackOf: rollbackOf ?? null,
    });
    const services = Object.fromEntries(current.map((v) => [v.service, v.version]));
    services[contract.service] = version;
    const n = await tx.insertComposition({ ...composition, hash: compositionHash(composition), services, author });
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
}
