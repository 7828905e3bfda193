import type { Logger } from '../logging/logger';

/**
 * Idle memory of the embedded mode. A process grows V8's young generation to 16 MB per semi-space
 * while it loads its code and starts, and keeps it for as long as it then idles: V8 shrinks it
 * only in a garbage collection that finds the allocation rate since the collection before low
 * (Heap::ReduceNewSpaceSize), and an idle process allocates too little to ever trigger one. Under
 * `npm start`, once the whole system is ready, the launcher asks every process it started (with
 * `--expose-gc`) over the IPC channel to compact: one full collection now, which also frees the start's garbage and
 * marks the point the rate is measured from, and a second one SECOND_GC_MS later, which finds the
 * idle rate and gives the young generation back (less resident memory per process;
 * docs/benchmarks/startup-and-memory.md). V8
 * alone judges the rate: in some runs a process or two keep theirs (the debug line says). Under
 * load the young generation grows again as V8 sees fit; nothing changes outside the launcher.
 */
export interface CompactMessage {
  halo: 'compact';
}

export const COMPACT_MESSAGE: CompactMessage = { halo: 'compact' };

export function isCompactMessage(message: unknown): message is CompactMessage {
  const m = message as Partial<CompactMessage> | null;
  return typeof m === 'object' && m !== null && m.halo === 'compact';
}

/** Longer than V8's 5 s allocation-throughput window, so the second collection sees only the idle rate. */
const SECOND_GC_MS = 6_000;

/**
 * Compacts when the launcher asks, and logs (debug) the resident size before and after. Only in a
 * process with an IPC channel and a `gc` (the launcher passes `--expose-gc`); elsewhere nothing is
 * installed.
 */
export function compactOnRequest(logger?: Logger): void {
  const gc = globalThis.gc;
  if (!process.channel || typeof gc !== 'function') return;
  process.on('message', (message: unknown) => {
    if (!isCompactMessage(message)) return;
    const before = process.memoryUsage.rss();
    gc();
    setTimeout(() => {
      const mb = (bytes: number) => Math.round(bytes / 2 ** 20);
      const heap = process.memoryUsage();
      gc();
      logger?.debug(
        { rssMbBefore: mb(before), rssMbAfter: mb(process.memoryUsage.rss()), heapMbBefore: mb(heap.heapTotal) },
        'idle heap compacted',
      );
    }, SECOND_GC_MS).unref();
  });
}
