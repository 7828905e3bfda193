import type { ChatReport } from './cluster-chat';
import { KINDS, WINDOW_S, type KindTotals, type WindowCounts } from './cluster-load';

/** The report of `npm run bench:cluster` (src/cluster-bench.ts): tables for stdout, docs/benchmarks.md and results/cluster.md. */
export interface KillRecord {
  process: string;
  pid: number;
  /** Seconds since the load started. */
  atS: number;
  /** Until its restart answered ready; null when it did not within 60 s. */
  backAfterS: number | null;
  newPid: number | null;
}

export interface PaymentsCheck {
  /** Idempotency keys the payers started. */
  attempted: number;
  /** Keys answered 201 in the end. */
  succeeded: number;
  /** Keys still failing when their 60 s after the load ran out. */
  neverSucceeded: number;
  /** POSTs sent, first tries and retries. */
  attempts: number;
  /** 201 answers replayed (`Idempotent-Replayed: true`): an earlier try had charged. */
  replayed: number;
  /** The payments table's rows for the run's keys. */
  rows: number;
  /** Keys charged more than once, or whose answers named another payment than the table's. */
  duplicated: number;
  /** Keys answered 201 with no charged row. */
  missing: number;
}

export interface ClusterResult {
  command: string;
  date: string;
  machine: string;
  config: Record<string, number>;
  processes: { name: string; pid: number; url: string }[];
  loadAverage: { start: number[]; end: number[] };
  windows: WindowCounts[];
  totals: KindTotals[];
  failures: Record<string, number>;
  payments: PaymentsCheck;
  chat: ChatReport;
  kills: KillRecord[];
}

const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : '—');
const bold = (v: number, bad: boolean) => (bad ? `**${v}**` : String(v));

function windowTable(r: ClusterResult): string[] {
  const killsIn = (from: number) =>
    r.kills
      .filter((k) => k.atS >= from && k.atS < from + WINDOW_S)
      .map((k) => k.process)
      .join(', ');
  const cell = (ok: number, failed: number) => `${ok}${failed ? ` / **${failed}**` : ''}`;
  return [
    `| window (s) | ${KINDS.join(' | ')} | p99 ms (all ok) | killed |`,
    `|---|${KINDS.map(() => '---:').join('|')}|---:|---|`,
    ...r.windows.map(
      (w) =>
        `| ${w.fromS}–${w.fromS + WINDOW_S} | ${KINDS.map((k) => cell(w.ok[k], w.failed[k])).join(' | ')} | ${ms(w.p99)} | ${killsIn(w.fromS)} |`,
    ),
  ];
}

function totalsTable(r: ClusterResult): string[] {
  return [
    '| kind | requests | failed | p50 ms | p99 ms |',
    '|---|---:|---:|---:|---:|',
    ...r.totals.map((t) => `| ${t.kind} | ${t.requests} | ${t.failed} | ${ms(t.p50)} | ${ms(t.p99)} |`),
  ];
}

function checksTable(r: ClusterResult): string[] {
  const p = r.payments;
  const c = r.chat;
  return [
    '| check | value |',
    '|---|---|',
    `| payments: keys attempted / succeeded / never succeeded | ${p.attempted} / ${p.succeeded} / ${bold(p.neverSucceeded, p.neverSucceeded > 0)} |`,
    `| payments: POSTs (first tries + retries) / 201 replays of an earlier charge | ${p.attempts} / ${p.replayed} |`,
    `| payments: rows in the table / duplicated charges / answered 201 but not charged | ${p.rows} / ${bold(p.duplicated, p.duplicated > 0)} / ${bold(p.missing, p.missing > 0)} |`,
    `| chat: messages sent (stored, id answered) / sends failed | ${c.sent} / ${c.sendFailed} |`,
    ...c.subscribers.map(
      (s) =>
        `| chat: ${s.name}: received / lost / duplicates / resumed | ${s.received} / ${bold(s.lost, s.lost > 0)} / ${s.duplicates} / ${s.resumes} |`,
    ),
  ];
}

function killsTable(r: ClusterResult): string[] {
  return [
    '| killed (SIGKILL) | pid | at s | ready again after s | new pid |',
    '|---|---:|---:|---:|---:|',
    ...r.kills.map(
      (k) =>
        `| ${k.process} | ${k.pid} | ${k.atS.toFixed(1)} | ${k.backAfterS === null ? '**not back**' : k.backAfterS.toFixed(1)} | ${k.newPid ?? '—'} |`,
    ),
  ];
}

export function renderCluster(r: ClusterResult): { table: string; section: string; detail: string } {
  const cfg = r.config;
  const head = [
    `## Cluster: two replicas of each service and two gateways behind nginx, replicas killed under load`,
    '',
    `- \`${r.command}\`, ${r.date}, ${r.machine}; load average ${r.loadAverage.start.map((v) => v.toFixed(2)).join(' / ')} → ${r.loadAverage.end.map((v) => v.toFixed(2)).join(' / ')}`,
    `- ${cfg.seconds} s through the front nginx: ${cfg.readers} readers (GraphQL \`me { orders { id product { name price } user { name } } }\` and REST \`GET /posts/2\` in turn) among ${cfg.callers} distinct callers, ${cfg.payers} payers (\`POST /api/payments\`, a new Idempotency-Key each, retried with the same key until 201), ${cfg.subscribers} chat subscribers over WebSocket and a sender at ${cfg.messagesPerS} msg/s`,
    `- From ${cfg.killAtS} s, every ${cfg.killGapS} s: SIGKILL of the first process of each edge service and of the launcher's gateway; the launcher restarts them. Not pinned: every process shares the machine's CPUs (nice 19 when run as loadtest/README.md says)`,
    "- PostgreSQL and Redis: the machine's own (throwaway schemas and key prefix). nginx balances HTTP and WebSocket only: gRPC between services goes to the first process of each peer, not through nginx (loadtest/README.md)",
    `- Cells: ok / **failed** requests (a failed payment try is retried with its key; a failed chat send is not retried); the last window holds what was in flight when the load stopped and the last payments finishing`,
    '',
  ];
  const body = [...windowTable(r), '', ...totalsTable(r), '', ...checksTable(r), '', ...killsTable(r), ''];
  const failures = Object.entries(r.failures).map(([why, n]) => `- ${n}× ${why}`);
  const processes = r.processes.map((p) => `- ${p.name} (pid ${p.pid}, ${p.url})`);
  return {
    table: [...windowTable(r), '', ...totalsTable(r), '', ...checksTable(r), '', ...killsTable(r), ''].join('\n'),
    section: [...head, ...body].join('\n'),
    detail: [
      ...head,
      ...body,
      '### Failed requests by reason',
      '',
      ...(failures.length ? failures : ['- none']),
      '',
      '### Processes at the start',
      '',
      ...processes,
      '',
    ].join('\n'),
  };
}
