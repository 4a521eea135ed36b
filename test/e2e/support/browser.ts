import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Debian's Chromium unless MORDN_TEST_CHROMIUM names another binary. */
export const CHROMIUM_PATH = process.env.MORDN_TEST_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Why the browser tests cannot run here, or undefined when they can. With
 * MORDN_TEST_BROWSER=require (as in CI) a missing browser is a failure, not a skip.
 */
export function browserUnavailableReason(): string | undefined {
  if (existsSync(CHROMIUM_PATH)) return undefined;
  const reason = `no Chromium at ${CHROMIUM_PATH} (apt-get install chromium, or set MORDN_TEST_CHROMIUM)`;
  if (process.env.MORDN_TEST_BROWSER === 'require') {
    throw new Error(`MORDN_TEST_BROWSER=require, but there is ${reason}.`);
  }
  return reason;
}

/** Headless Chromium that stays off the network it is not asked to reach. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
