import { existsSync } from 'node:fs';
import { launch, type Browser } from 'puppeteer-core';

/** Debian's Chromium (`apt-get install chromium`; .ci/run installs it). `CHROMIUM_PATH` points elsewhere. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** CI must run the browser tests: there a missing Chromium fails them instead of skipping them. */
const required = () => process.env.CI === 'true' || !!process.env.HALO_REQUIRE_BROWSER_TESTS;

/** Why the browser tests cannot run here, or undefined when Chromium is installed. */
export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM_PATH) ? undefined : `no Chromium at ${CHROMIUM_PATH}; run apt-get install chromium (or set CHROMIUM_PATH)`;
}

/**
 * Jest's `describe` for a file whose tests need Chromium. Without it they are skipped, saying so
 * in one line — unless CI=true or HALO_REQUIRE_BROWSER_TESTS is set, where `launchChromium`
 * fails them with that line instead.
 */
export function describeWithChromium(what: string): jest.Describe {
  const missing = chromiumMissing();
  if (!missing || required()) return describe;
  process.stderr.write(`${what}: skipped, ${missing}\n`);
  return describe.skip;
}

/** Headless Chromium (the new headless mode); `--no-sandbox` because CI and this machine run as root. */
export async function launchChromium(): Promise<Browser> {
  const missing = chromiumMissing();
  if (missing) throw new Error(`The browser tests need Chromium: ${missing}`);
  return launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--headless=new',
      ...(process.getuid?.() === 0 ? ['--no-sandbox'] : []),
      '--disable-dev-shm-usage',
      '--disable-gpu',
      '--no-first-run',
      '--disable-extensions',
    ],
  });
}
