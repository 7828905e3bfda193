import { createHash } from 'node:crypto';
import { SERVICE_NAMES, type ServiceName } from '@halo/kit/config';
import type { ServiceContract } from '@halo/kit/contract';
import { composedRouteSchema } from '@halo/kit/rest';
import { z } from 'zod';

/** A service's contract, as published (docs/registry.md, "The contract"). */
export type Contract = ServiceContract;

const jsonObject = z.record(z.string(), z.unknown());

/**
 * The JSON a publisher sends, checked at the registry's door. The REST part's route entries are
 * checked as strictly as the gateway checks its route table; OpenAPI operations are kept as given
 * (they were built by the kit from the service's manifest) but must each have an operationId.
 */
export const contractSchema = z.strictObject({
  service: z.enum(SERVICE_NAMES as [ServiceName, ...ServiceName[]], { error: 'service must be a service of the topology' }),
  url: z.url({ protocol: /^https?$/, error: 'url must be an http(s) URL' }).max(2048),
  sdl: z.string().max(1_000_000).nullable(),
  rest: z
    .strictObject({
      routes: z.array(composedRouteSchema).max(10_000),
      openapi: z.strictObject({
        tag: z.strictObject({ name: z.string(), description: z.string() }),
        paths: z.record(
          z.string().startsWith('/'),
          z.partialRecord(z.enum(['get', 'post', 'put', 'patch', 'delete']), jsonObject.and(z.object({ operationId: z.string().min(1) }))),
        ),
      }),
    })
    .nullable(),
}) satisfies z.ZodType<Contract>;

/** Parses a contract: the contract, or the first problem as one line naming the field. */
export function parseContract(value: unknown): { contract: Contract } | { error: string } {
  const result = contractSchema.safeParse(value);
  if (result.success) {
    const c = result.data;
    if (c.rest) {
      const stray = c.rest.routes.find((r) => r.service !== c.service);
      if (stray) return { error: `contract.rest.routes: ${stray.method} ${stray.path} names service ${stray.service}, not ${c.service}` };
      if (c.rest.openapi.tag.name !== c.service) return { error: `contract.rest.openapi.tag.name must be ${c.service}` };
    }
    return { contract: c };
  }
  const issue = result.error.issues[0]!;
  return { error: `contract.${issue.path.map(String).join('.') || '(root)'}: ${issue.message}` };
}

/** JSON with every object's keys sorted: one text per value, whatever order it was built in. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** sha256 (hex) of the canonical JSON of `{sdl, url, rest}`: equal contracts, equal hashes. */
export function contractHash(c: Pick<Contract, 'sdl' | 'url' | 'rest'>): string {
  return createHash('sha256')
    .update(canonicalJson({ sdl: c.sdl, url: c.url, rest: c.rest }))
    .digest('hex');
}
