// Debian's chromium driven by playwright-core; a browser is never downloaded.
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { bins } from './paths.js';

export function chromiumPath(): string {
  if (!existsSync(bins.chromium)) {
    throw new Error(`no chromium at ${bins.chromium}: run \`bash test/harness/install.sh apt\``);
  }
  return bins.chromium;
}

/** Flags for a quiet, hermetic headless run (no GPU, no background traffic, no sandbox in CI). */
export const chromiumArgs = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Launches chromium. Playwright gives every launch a fresh temporary --user-data-dir and deletes
 * it on close(); always close the browser in afterAll.
 */
export async function launchChromium(): Promise<Browser> {
  // Loaded lazily: only browser tests pay for playwright.
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: chromiumArgs });
}
