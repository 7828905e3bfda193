import type { Contract } from '@halo/contracts';
import { SERVICE_TOKEN_HEADER } from '@halo/kit/contract';
import { signServiceToken, TEST_SERVICE_KEYS } from '@halo/kit/testing';
import { checkoutContracts } from '../../../tools/src/checkout-contracts';
import { loadManifests, manifestSource } from '../../../tools/src/compose-rest';

/** This checkout's contracts (from the TypeScript sources), as the CLI would send them. */
export const CONTRACTS: readonly Contract[] = checkoutContracts({ manifests: () => loadManifests(manifestSource) });
export const contractOf = (service: string): Contract => structuredClone(CONTRACTS.find((c) => c.service === service)!);

/** catalog's contract with `extra` added inside `type Product { … }`. */
export function catalogWith(extra: string): Contract {
  const c = contractOf('catalog');
  c.sdl = c.sdl!.replace(/(type Product @key[^{]*\{)/, `$1\n  ${extra}`);
  return c;
}

/** A process's own service token for the registry, signed with the test keys the registry trusts. */
export async function serviceToken(process: keyof typeof TEST_SERVICE_KEYS, aud = 'registry'): Promise<Record<string, string>> {
  return { [SERVICE_TOKEN_HEADER]: await signServiceToken(TEST_SERVICE_KEYS[process], { iss: process, aud }) };
}

export async function call<B = any>(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : undefined) as B };
}
