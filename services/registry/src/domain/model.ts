import type { Composition, Contract, OperationUsage } from '@halo/contracts';
import type { UsageReport } from '@halo/kit';

/** Who is calling (docs/registry.md, "Authentication"). */
export type Principal =
  /** A service's own token: it may publish and roll back only its own contract. */
  | { kind: 'service'; name: string }
  /** An admin's API key with scope `schema:write` (a team's CI). */
  | { kind: 'admin'; id: string; name: string }
  /** HALO_ENV=development, no credentials, from a loopback address (`npm run subgraph` against `npm start`). */
  | { kind: 'developer' };

export interface VersionRecord {
  service: string;
  version: number;
  hash: string;
  url: string;
  contract: Contract;
  author: string;
  createdAt: string;
}

export interface CompositionRecord extends Composition {
  composition: number;
  hash: string;
  /** The version of each service composed. */
  services: Record<string, number>;
  author: string;
  createdAt: string;
}

export interface Acknowledgement {
  service: string;
  version: number | null;
  type: string;
  path: string;
  message: string;
  reason: string;
  author: string;
}

export type { UsageReport };

/** What the domain needs from storage; `locked` runs `fn` in one transaction holding the composition lock. */
export interface RegistryStore {
  locked<T>(fn: (tx: RegistryStore) => Promise<T>): Promise<T>;
  latestHead(): Promise<{ composition: number; hash: string } | null>;
  composition(n: number): Promise<CompositionRecord | null>;
  /** The versions the latest composition holds. */
  currentVersions(): Promise<VersionRecord[]>;
  /** A service's versions, newest first. */
  versions(service: string): Promise<VersionRecord[]>;
  insertVersion(v: Omit<VersionRecord, 'version' | 'createdAt'>): Promise<number>;
  insertComposition(c: Omit<CompositionRecord, 'composition' | 'createdAt'>): Promise<number>;
  insertAcknowledgements(acks: readonly Acknowledgement[]): Promise<void>;
  /** Usage since `since` of operations recording any coordinate at or under one of `paths`. */
  usageOf(paths: readonly string[], since: Date): Promise<OperationUsage[]>;
  addUsage(reports: readonly UsageReport[]): Promise<void>;
  pruneUsage(before: Date): Promise<number>;
  sawGateway(id: string, composition: number | null): Promise<void>;
  gateways(): Promise<{ id: string; composition: number | null; lastSeen: string }[]>;
}
