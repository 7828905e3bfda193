/**
 * Durations in configuration: a bare number of seconds (`900`) or a number with one unit
 * (`30s`, `15m`, `24h`, `7d`). Returns whole seconds, or null when the text is not a positive duration.
 */
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3_600, d: 86_400 };

export function parseDuration(text: string): number | null {
  const m = /^(\d{1,9})\s*([smhd])?$/i.exec(text.trim());
  if (!m) return null;
  const seconds = Number(m[1]) * UNIT_SECONDS[(m[2] ?? 's').toLowerCase()]!;
  return seconds > 0 && Number.isSafeInteger(seconds) ? seconds : null;
}
