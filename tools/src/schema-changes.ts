import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import type { SchemaChange } from '@halo/contracts';

export { apiSchemaOf, breakingChanges, describeChanges, unacknowledged } from '@halo/contracts';

/**
 * Breaking changes between two supergraphs (computed by @halo/contracts, as the registry's checks
 * do) against the committed files. A service team may release a breaking
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

export function readAcknowledged(path = ACKNOWLEDGED_FILE): Acknowledged[] {
  if (!existsSync(path)) return [];
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as { acknowledged?: Acknowledged[] };
  return parsed.acknowledged ?? [];
}

/** Adds `changes` to the acknowledged ones, with one reason for all. */
export function acknowledge(changes: readonly SchemaChange[], reason: string, path = ACKNOWLEDGED_FILE, now = new Date()): Acknowledged[] {
  const entries = [
    ...readAcknowledged(path),
    ...changes.map((c) => ({ type: c.type, path: c.path, message: c.message, reason, acknowledgedAt: now.toISOString() })),
  ];
  const header =
    'Breaking changes to the supergraph, acknowledged by the team releasing them (npm run compose -- --acknowledge-breaking "<reason>").';
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
