import { randomBytes } from 'node:crypto';
import type { PaymentProcessor } from '../../domain/payments';

export interface SimulatedProcessorSettings {
  /** How long each charge takes. */
  latencyMs: number;
  /** Share of charges that fail (0–1), after the latency and before anything is charged. */
  failureRate: number;
}

/** How many keys the simulated processor remembers (a real one keeps them for about a day). */
const REMEMBERED_KEYS = 100_000;
/** How many calls `keysSeen` keeps (tests read the last few). */
const LOGGED_CALLS = 1_000;

/**
 * A payment processor in this process, for development, tests and benchmarks — Halo has no real
 * one yet. It behaves as processors with idempotency keys do (Stripe's `Idempotency-Key` header):
 * one charge per key, a repeated key answering the first charge (even while it is still under
 * way); a failed charge charges nothing and leaves the key free. Latency and failures are
 * settings (PAYMENTS_PROCESSOR_*), and tests may change them on a running service.
 */
export class SimulatedProcessor implements PaymentProcessor {
  /** Charges really made (distinct keys that succeeded). */
  charged = 0;
  /** Calls received, repeats included. */
  calls = 0;
  /** The keys of the last calls, in order: what a processor's logs would show. */
  readonly keysSeen: string[] = [];
  private readonly byKey = new Map<string, Promise<{ id: string }>>();

  constructor(public settings: SimulatedProcessorSettings) {}

  charge(req: { idempotencyKey: string; amountCents: number; currency: string }): Promise<{ id: string }> {
    this.calls++;
    this.keysSeen.push(req.idempotencyKey);
    if (this.keysSeen.length > LOGGED_CALLS) this.keysSeen.shift();
    const known = this.byKey.get(req.idempotencyKey);
    if (known) return known;
    const { latencyMs, failureRate } = this.settings;
    const attempt = (async () => {
      if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs));
      if (failureRate > 0 && Math.random() < failureRate) throw new Error('simulated processor failure');
      this.charged++;
      return { id: `ch_${randomBytes(12).toString('hex')}` };
    })();
    this.byKey.set(req.idempotencyKey, attempt);
    if (this.byKey.size > REMEMBERED_KEYS) this.byKey.delete(this.byKey.keys().next().value!);
    // Nothing was charged: the key may be used again.
    attempt.catch(() => this.byKey.delete(req.idempotencyKey));
    return attempt;
  }
}
