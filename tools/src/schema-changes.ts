import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { Supergraph } from '@apollo/federation-internals';
import { CriticalityLevel, diff, type Change } from '@graphql-inspector/core';
import type { GraphQLSchema } from 'graphql';

/**
 * Breaking changes between two supergraphs, as clients see them: the API schemas (what
 * `/graphql` serves) compared by @graphql-inspector/core. A service team may release a breaking
 * change only by acknowledging it in `gateway/breaking-changes.json` (with a reason), which
 * `npm run compose -- --acknowledge-breaking "<reason>"` writes; `npm run compose` refuses to
 * write a supergraph with unacknowledged ones and `npm run compose:check` (CI) fails on them.
 */

const ROOT = resolve(__dirname, '../..');
export const ACKNOWLEDGED_FILE = resolve(ROOT, 'gateway/breaking-changes.json');

export interface Acknowledged {
  /** The change's kind and schema coordinate, as @graphql-inspector/core names them. */
  type: string;
  path: string;
  message: string;
  reason: string;
  acknowledgedAt: string;
}

/** The API schema of a supergraph (join/link machinery and inaccessible parts removed). */
export function apiSchemaOf(supergraphSdl: string): GraphQLSchema {
  // The features a gateway must implement (e.g. @authenticated for SECURITY) are not this
  // comparison's business: accept them all.
  return Supergraph.build(supergraphSdl, { supportedFeatures: null }).apiSchema().toGraphQLJSSchema();
}

/** Every change from `before` to `after` that breaks existing clients. */
export async function breakingChanges(before: string, after: string): Promise<Change[]> {
  const changes = await diff(apiSchemaOf(before), apiSchemaOf(after));
  return changes.filter((c) => c.criticality.level === CriticalityLevel.Breaking);
}

const keyOf = (c: { type: string; path?: string | undefined }) => `${c.type} ${c.path ?? ''}`;

/** The changes no entry of `acknowledged` covers. */
export function unacknowledged(changes: Change[], acknowledged: readonly Acknowledged[]): Change[] {
  const known = new Set(acknowledged.map(keyOf));
  return changes.filter((c) => !known.has(keyOf(c)));
}

export function readAcknowledged(path = ACKNOWLEDGED_FILE): Acknowledged[] {
  if (!existsSync(path)) return [];
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as { acknowledged?: Acknowledged[] };
  return parsed.acknowledged ?? [];
}

/** Adds `changes` to the acknowledged ones, with one reason for all. */
export function acknowledge(changes: Change[], reason: string, path = ACKNOWLEDGED_FILE, now = new Date()): Acknowledged[] {
  const entries = [
    ...readAcknowledged(path),
    ...changes.map((c) => ({ type: c.type, path: c.path ?? '', message: c.message, reason, acknowledgedAt: now.toISOString() })),
  ];
  const header = 'Breaking changes to the supergraph, acknowledged by the team releasing them (npm run compose -- --acknowledge-breaking "<reason>").';
  writeFileSync(path, `${JSON.stringify({ $comment: header, acknowledged: entries }, null, 2)}\n`);
  return entries;
}

/**
 * The supergraph to compare with: the one committed at git `ref` (CI sets SCHEMA_BASE_REF to the
 * branch a change goes into), or else the file as it is on disk.
 */
export function baselineSupergraph(file: string, ref: string | undefined): { sdl: string; from: string } | null {
  if (ref) {
    const path = relative(ROOT, file);
    const sdl = execFileSync('git', ['show', `${ref}:${path}`], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { sdl, from: `${ref}:${path}` };
  }
  return existsSync(file) ? { sdl: readFileSync(file, 'utf8'), from: relative(process.cwd(), file) } : null;
}

export function describeChanges(changes: Change[]): string {
  return changes.map((c) => `  - ${c.message} [${c.type} ${c.path ?? ''}]`).join('\n');
}
