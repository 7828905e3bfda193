/**
 * `NAME=value` pairs separated by spaces: BENCH_GATEWAY_ENV for the system's gateway (A; B starts
 * from A's environment, so both get it), BENCH_B_ENV for B alone. With BENCH_BASELINE set to this
 * checkout they pair one gateway against itself with one setting changed, e.g. the rate limits:
 * `BENCH_B_ENV="RATE_LIMIT_ANONYMOUS=0 RATE_LIMIT_AUTHENTICATED=0 RATE_LIMIT_GRAPHQL_COST=0"`.
 */
export function envList(name: string): Record<string, string> {
  const pairs = (process.env[name] ?? '').split(/\s+/).filter(Boolean);
  return Object.fromEntries(
    pairs.map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 1) throw new Error(`${name}: ${JSON.stringify(pair)} is not NAME=value`);
      return [pair.slice(0, eq), pair.slice(eq + 1)];
    }),
  );
}
