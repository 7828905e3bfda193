import { SERVICE_TOKEN_METADATA, type ServiceIdentity } from '@halo/kit/auth';
import type { UsageRequest } from '@halo/contracts/wire';
import type { Logger } from '@halo/kit/logging';
import type { UsageRecorder, UsageReport } from './recorder';

/** The registry accepts bodies up to 1 MiB and 10,000 reports; batches stay under both. */
export const MAX_BATCH_BYTES = 900 * 1024;
export const MAX_BATCH_REPORTS = 10_000;
const SEND_TIMEOUT_MS = 5_000;

export interface ReporterOptions {
  url: string;
  identity: ServiceIdentity;
  gatewayId: string;
  /** The registry's composition served now (null: the boot files), sent with every batch. */
  served(): number | null;
  /** At most this many reports are kept for a retry (USAGE_MAX_OPERATIONS). */
  maxReports: number;
  logger: Logger;
}

export interface ReportStats {
  sent: number;
  retried: number;
  dropped: number;
}

/** Splits reports into bodies under `maxBytes` (JSON length, close enough for a bound). */
export function batches(reports: UsageReport[], maxBytes = MAX_BATCH_BYTES, maxReports = MAX_BATCH_REPORTS): UsageReport[][] {
  const out: UsageReport[][] = [];
  let batch: UsageReport[] = [];
  let bytes = 0;
  for (const report of reports) {
    const size = JSON.stringify(report).length + 1;
    if (batch.length > 0 && (bytes + size > maxBytes || batch.length >= maxReports)) {
      out.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(report);
    bytes += size;
  }
  if (batch.length > 0) out.push(batch);
  return out;
}

/**
 * Sends what the recorder counted to `POST /v1/usage`, failing open: nothing here can reach a
 * request. A batch that fails is kept and sent again with the next flush (once, within the same
 * bound as the recorder); failing again, it is dropped and counted.
 */
export function createUsageSender(recorder: UsageRecorder, opts: ReporterOptions) {
  const log = opts.logger.child({ component: 'usage' });
  const stats: ReportStats = { sent: 0, retried: 0, dropped: 0 };
  let retry: UsageReport[] = [];
  let failing = false;

  const send = async (reports: UsageReport[]): Promise<boolean> => {
    try {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (opts.identity.canCall) headers[SERVICE_TOKEN_METADATA] = await opts.identity.tokenFor('registry');
      const body = JSON.stringify({ gateway: { id: opts.gatewayId, composition: opts.served() }, reports } satisfies UsageRequest);
      const res = await fetch(`${opts.url}/v1/usage`, { method: 'POST', headers, body, signal: AbortSignal.timeout(SEND_TIMEOUT_MS) });
      await res.body?.cancel();
      if (res.ok) return true;
      if (!failing) log.warn({ status: res.status }, 'usage refused by the registry');
    } catch (err) {
      if (!failing) log.warn({ message: (err as Error).message }, 'usage not sent: registry unreachable');
    }
    return false;
  };

  return {
    stats: () => stats,
    async flush(): Promise<void> {
      const fresh = recorder.drain();
      // The retry shares the bound: the newest usage wins over the oldest.
      const room = Math.max(0, opts.maxReports - fresh.length);
      if (retry.length > room) {
        stats.dropped += retry.length - room;
        retry = retry.slice(retry.length - room);
      }
      const again = new Set(retry);
      const all = [...retry, ...fresh];
      retry = [];
      for (const batch of batches(all)) {
        if (await send(batch)) {
          stats.sent += batch.length;
          if (failing) log.info('usage sent again');
          failing = false;
          continue;
        }
        failing = true;
        for (const report of batch) {
          if (again.has(report)) stats.dropped++;
          else {
            retry.push(report);
            stats.retried++;
          }
        }
      }
    },
  };
}
