import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../config/config';
import type { ServiceName } from '../config/topology';
import { ServiceIdentity } from '../auth/service-identity';
import { PublishError, publishContract, serviceContract, type ServiceContract } from '../contract/contract';
import type { Lifecycle } from '../process/lifecycle';
import type { Logger } from '../logging/logger';
import type { RestManifest } from '../rest/rest-manifest';
import type { KitConfig, PublishConfig } from './service-config';

/** What a contract is made of: the service's name, its folder (`schema.graphql`), whether it has a subgraph, its REST part. */
type ContractSource = { name: ServiceName; root: string; graphql?: object | undefined; restManifest?: RestManifest | undefined };

/** The service's contract (docs/registry.md): its subgraph, its REST part, its routing URL; null when it has neither. */
export function serviceContractOf(
  def: ContractSource,
  config: Pick<KitConfig, 'SERVICE_PUBLIC_URL' | 'HTTP_PORT'>,
  httpPort?: number,
): ServiceContract | null {
  if (!def.graphql && !def.restManifest) return null;
  return serviceContract({
    service: def.name,
    url: config.SERVICE_PUBLIC_URL ?? `http://127.0.0.1:${httpPort ?? config.HTTP_PORT}`,
    sdl: def.graphql ? readFileSync(resolve(def.root, 'schema.graphql'), 'utf8') : null,
    manifest: def.restManifest,
  });
}

/** A publish refusal in one line: the registry's answer, then the check's errors and notes. */
function refusalOf(err: PublishError): string {
  const report = (
    err.body as { report?: { notes?: string[]; composition?: { errors?: string[] }; rest?: { errors?: string[] } } } | undefined
  )?.report;
  const why = [...(report?.composition?.errors ?? []), ...(report?.rest?.errors ?? []), ...(report?.notes ?? [])].join('; ');
  return `${err.message}${why ? ` — ${why}` : ''}`;
}

/** Publishing at start waits for the registry this long at most (it may start beside the service). */
const PUBLISH_RETRY_MS = { first: 250, max: 5_000, giveUpAfter: 120_000 };

/**
 * Publishes after start without delaying it: retried with backoff while the registry is
 * unreachable (under `npm start` it boots beside the services), given up when refused.
 */
export function publishAfterStart(opts: {
  contract: ServiceContract | null;
  config: KitConfig;
  logger: Logger;
  identity: ServiceIdentity;
  lifecycle: Lifecycle;
  refused: (why: string) => void;
}): void {
  const { contract: c, config, logger, identity, lifecycle, refused } = opts;
  if (!c || !config.REGISTRY_URL) return;
  const registryUrl = config.REGISTRY_URL;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  lifecycle.register('contract publish', () => {
    stopped = true;
    clearTimeout(timer);
  });
  const started = Date.now();
  const attempt = async (delay: number): Promise<void> => {
    if (stopped) return;
    try {
      const acknowledge = (config as { REGISTRY_PUBLISH_ACKNOWLEDGE?: string }).REGISTRY_PUBLISH_ACKNOWLEDGE;
      const { body } = await publishContract(c, { registryUrl, identity, ...(acknowledge ? { acknowledge } : {}) });
      logger.info(
        { version: body.version, composition: body.composition, unchanged: body.unchanged ?? false },
        'contract published to the registry',
      );
    } catch (err) {
      if (err instanceof PublishError && err.kind === 'unreachable' && Date.now() - started < PUBLISH_RETRY_MS.giveUpAfter) {
        timer = setTimeout(() => void attempt(Math.min(delay * 2, PUBLISH_RETRY_MS.max)), delay);
        timer.unref();
        return;
      }
      logger.error({ err: (err as Error).message, report: err instanceof PublishError ? err.body : undefined }, 'contract not published');
      // Refused by the check: the gateways keep the previous contract, which this process no
      // longer serves as published; not ready until that is fixed (an unreachable registry is not this service's fault).
      if (err instanceof PublishError && err.kind === 'refused') refused(`contract refused by the registry: ${refusalOf(err)}`);
    }
  };
  void attempt(PUBLISH_RETRY_MS.first);
}

/** HALO_PUBLISH_CONTRACT_ONLY: one publish, then exit 0; refused (1) or unreachable (3) with one line. */
export async function publishOnly(name: ServiceName, contract: ServiceContract | null, config: PublishConfig): Promise<void> {
  if (!contract) {
    process.stdout.write(`${name}: no contract to publish (no subgraph, no REST routes)\n`);
    return;
  }
  const identity = ServiceIdentity.fromConfig(name, config);
  if (!identity.canCall)
    throw new ConfigError(
      'Invalid configuration: SERVICE_SIGNING_KEY: is required to publish the contract (its token authenticates the service to the registry)',
    );
  try {
    const { body } = await publishContract(contract, {
      registryUrl: config.REGISTRY_URL!,
      identity,
      ...(config.REGISTRY_PUBLISH_ACKNOWLEDGE ? { acknowledge: config.REGISTRY_PUBLISH_ACKNOWLEDGE } : {}),
    });
    process.stdout.write(
      `${name}: contract ${body.unchanged ? 'unchanged at' : 'published as'} version ${body.version} (composition ${body.composition})\n`,
    );
  } catch (err) {
    if (!(err instanceof PublishError)) throw err;
    process.stderr.write(`${name}: contract not published: ${refusalOf(err)}\n`);
    process.exitCode = err.kind === 'unreachable' ? 3 : 1;
  }
}
