import { existsSync } from "node:fs";
import { chromium } from "playwright";

/**
 * System browsers, the lightest first. Chromium's headless shell (Debian's
 * `chromium-headless-shell`, the old headless mode, what Playwright itself runs headless) starts a
 * context, a page, a navigation and a screenshot for about a third of the CPU of the full browser
 * in its new headless mode, with one renderer process where the full browser starts three
 * (measured here; docs/decisions.md). The service never shows a window, so it takes the shell
 * whenever the machine has it.
 */
const SYSTEM_CHROMIUMS = [
  "/usr/bin/chromium-headless-shell",
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome",
  "/usr/bin/google-chrome-stable",
  "/snap/bin/chromium",
  "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
  "/Applications/Chromium.app/Contents/MacOS/Chromium",
];

/** Where Chromium was found, and by which rule (DESIGN §8 order). */
export interface ChromiumLocation {
  path: string;
  source: "BROWSER_EXECUTABLE_PATH" | "playwright" | "system";
}

/**
 * Finds a Chromium in the order of DESIGN §8: an explicit path, Playwright's own
 * download, then a system Chromium or Chrome. Returns undefined when none exists.
 */
export function findChromium(explicitPath?: string): ChromiumLocation | undefined {
  if (explicitPath) {
    return existsSync(explicitPath) ? { path: explicitPath, source: "BROWSER_EXECUTABLE_PATH" } : undefined;
  }
  const bundled = playwrightChromiumPath();
  if (bundled && existsSync(bundled)) return { path: bundled, source: "playwright" };
  const system = SYSTEM_CHROMIUMS.find((candidate) => existsSync(candidate));
  return system ? { path: system, source: "system" } : undefined;
}

function playwrightChromiumPath(): string | undefined {
  try {
    return chromium.executablePath();
  } catch {
    return undefined;
  }
}

/**
 * Chromium flags for a headless server: no sandbox when running as root, and no
 * background traffic to Google's hosts (it only fails, many times, on a closed network).
 */
export const CHROMIUM_ARGS = [
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
  "--no-first-run",
  "--disable-gpu",
  "--disable-dev-shm-usage",
];
