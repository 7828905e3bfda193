import type { ServerResponse } from 'node:http';
import type { FormattedExecutionResult, GraphQLFormattedError } from 'graphql';
import { itemsAt, removePlaceholders, type DeferPlan, type DeferredPart, type IncrementalItem, type PartOperation } from './defer';

/**
 * One payload of an incrementally delivered answer, in the format Apollo Client and the Router
 * speak (`deferSpec=20220824`): the first has `data` (and `errors`), each later one `incremental`
 * items; `hasNext` is false on the last.
 */
export interface IncrementalPayload {
  hasNext: boolean;
  data?: FormattedExecutionResult['data'];
  errors?: readonly GraphQLFormattedError[];
  incremental?: IncrementalItem[];
  extensions?: FormattedExecutionResult['extensions'];
}

/** Runs one operation (the primary part, or one deferred part's own operation). */
export type PartRunner = (part: PartOperation) => Promise<FormattedExecutionResult>;

/**
 * The parts of a deferred operation, each run as its own operation at once and in parallel: the
 * primary part is yielded as soon as its own fetches are done, each deferred part as soon as its
 * own are (after the primary, and after the deferred fragment it sits in), several that are ready
 * together in one payload. Nothing waits for the slowest part before the first. A part whose
 * place was nulled in the primary part brings nothing; its errors arrive in its own items.
 */
export async function* deliverIncrementally(plan: DeferPlan, run: PartRunner): AsyncGenerator<IncrementalPayload> {
  const settle = (p: Promise<FormattedExecutionResult>) =>
    p.then(
      (result) => result,
      // A runner formats its own failures; one that throws anyway says nothing of why.
      (): FormattedExecutionResult => ({
        data: null,
        errors: [{ message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }],
      }),
    );
  const primary = settle(run(plan.primary));
  // Each part's items once its answer is in; `wake` tells the loop below.
  const done = new Map<number, IncrementalItem[]>();
  let remaining = plan.parts.length;
  let wake: (() => void) | null = null;
  plan.parts.forEach((part, index) => {
    void settle(run(part)).then((result) => {
      done.set(index, itemsOf(part, result));
      remaining--;
      wake?.();
    });
  });

  const first = await primary;
  if (plan.primary.placeholder) removePlaceholders(first.data);
  const hasNext = remaining + done.size > 0 && first.data !== null && first.data !== undefined;
  yield {
    ...(first.errors ? { errors: first.errors } : {}),
    data: first.data,
    ...(first.extensions ? { extensions: first.extensions } : {}),
    hasNext,
  };
  if (!hasNext) return;

  const sent = new Set<number>();
  for (;;) {
    const items: IncrementalItem[] = [];
    // A part goes once the fragment it sits in has gone (its place exists for the client).
    for (let progressed = true; progressed;) {
      progressed = false;
      for (const [index, its] of done) {
        const parent = plan.parts[index]!.parent;
        if (parent !== null && !sent.has(parent)) continue;
        items.push(...its);
        done.delete(index);
        sent.add(index);
        progressed = true;
      }
    }
    const last = remaining === 0 && done.size === 0;
    if (items.length > 0 || last) yield { hasNext: !last, ...(items.length > 0 ? { incremental: items } : {}) };
    if (last) return;
    // Nothing to send yet: until the next part's answer (no await between the check and here).
    if (items.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    wake = null;
  }
}

/** A deferred part's items from its answer, each with the errors under its path; errors on the way to it are the primary part's. */
function itemsOf(part: DeferredPart, result: FormattedExecutionResult): IncrementalItem[] {
  if (part.placeholder) removePlaceholders(result.data);
  const items = itemsAt(result.data, part.path);
  for (const item of items) if (part.label !== undefined) item.label = part.label;
  for (const error of result.errors ?? []) {
    const path = error.path;
    const owner = path ? items.find((item) => isPrefix(item.path, path)) : items[0];
    if (owner) {
      owner.errors = [...(owner.errors ?? []), error];
      continue;
    }
    // On the way to the fragment: the primary part reported it already.
    if (path && onTheWay(path, part.path)) continue;
    // Its place was nulled by the error itself (a non-null field inside it): an item of its own.
    items.push({
      data: null,
      path: path ? placeOf(path, part.path) : [...part.path],
      ...(part.label !== undefined ? { label: part.label } : {}),
      errors: [error],
    });
  }
  return items;
}

const isPrefix = (prefix: readonly (string | number)[], path: readonly (string | number)[]) =>
  prefix.length <= path.length && prefix.every((p, i) => path[i] === p);

/** Whether an error's path ends before the fragment's place (its keys a prefix of the fragment's, not longer). */
function onTheWay(errorPath: readonly (string | number)[], keys: readonly string[]): boolean {
  const errorKeys = errorPath.filter((p): p is string => typeof p === 'string');
  return errorKeys.length <= keys.length && errorKeys.every((k, i) => keys[i] === k);
}

/** The start of an error's path up to the fragment's place (its indices kept). */
function placeOf(errorPath: readonly (string | number)[], keys: readonly string[]): (string | number)[] {
  const place: (string | number)[] = [];
  let seen = 0;
  for (const p of errorPath) {
    if (seen === keys.length && typeof p === 'string') break;
    place.push(p);
    if (typeof p === 'string') seen++;
  }
  return place;
}

/**
 * The payloads merged into one answer, as a client assembles them: what the edge's observers
 * (metrics, usage) are told once, and what tests compare with the answer sent whole.
 */
export function assemble(payloads: readonly IncrementalPayload[]): FormattedExecutionResult {
  const [first, ...rest] = payloads;
  const data = first?.data ? structuredClone(first.data) : (first?.data ?? null);
  const errors = [...(first?.errors ?? [])];
  for (const payload of rest) {
    for (const item of payload.incremental ?? []) {
      errors.push(...((item.errors ?? []) as GraphQLFormattedError[]));
      if (!item.data || !data) continue;
      const target = at(data, item.path);
      if (target) deepMerge(target, item.data);
    }
  }
  return { ...(errors.length ? { errors } : {}), data };
}

function at(data: unknown, path: readonly (string | number)[]): Record<string, unknown> | null {
  let value = data;
  for (const p of path) {
    if (value === null || typeof value !== 'object') return null;
    value = (value as Record<string | number, unknown>)[p];
  }
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

function deepMerge(target: Record<string, unknown>, source: Record<string, unknown>): void {
  for (const key of Object.keys(source)) {
    const t = target[key];
    const s = source[key];
    if (isRecord(t) && isRecord(s)) deepMerge(t, s);
    else if (Array.isArray(t) && Array.isArray(s) && t.length === s.length) {
      const into = t as unknown[];
      (s as unknown[]).forEach((v, i) => {
        const was = into[i];
        if (isRecord(was) && isRecord(v)) deepMerge(was, v);
        else into[i] = v;
      });
    } else target[key] = s;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The multipart type of an incremental answer (Apollo Server's and the Router's framing: boundary `-`). */
export const MULTIPART_TYPE = 'multipart/mixed; boundary="-"; deferSpec=20220824';

/**
 * Writes payloads as multipart/mixed parts, each flushed as it comes; stops reading them once the
 * client has gone (the parts already running finish; nothing more is written).
 */
export async function writeMultipart(res: ServerResponse, payloads: AsyncIterable<IncrementalPayload>): Promise<void> {
  res.statusCode = 200;
  res.setHeader('content-type', MULTIPART_TYPE);
  res.setHeader('cache-control', 'no-store');
  let first = true;
  for await (const payload of payloads) {
    if (res.destroyed) return;
    const json = JSON.stringify(ordered(payload));
    res.write(
      `${first ? '\r\n---\r\n' : ''}content-type: application/json; charset=utf-8\r\n\r\n${json}\r\n---${payload.hasNext ? '' : '--'}\r\n`,
    );
    first = false;
  }
  if (!res.destroyed) res.end();
}

/** Field order as Apollo Server writes it: `hasNext` first, then errors, data, incremental, extensions. */
function ordered(p: IncrementalPayload): IncrementalPayload {
  return {
    hasNext: p.hasNext,
    ...(p.errors ? { errors: p.errors } : {}),
    ...('data' in p ? { data: p.data } : {}),
    ...(p.incremental
      ? {
          incremental: p.incremental.map(({ errors, data, path, label }) => ({
            ...(errors ? { errors } : {}),
            data,
            path,
            ...(label !== undefined ? { label } : {}),
          })),
        }
      : {}),
    ...(p.extensions ? { extensions: p.extensions } : {}),
  };
}
