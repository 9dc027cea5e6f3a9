import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/** What `scripts/platforms/install.mjs` installed, as it wrote it into `platforms.json`. */
export interface PlatformInstall {
  /** Debian's MediaWiki (`/usr/share/mediawiki`). */
  mediawiki: string;
  /** The Node 22 binary Ghost runs on. */
  node: string;
  /** Ghost's installed package (the cache's `ghost/current`). */
  ghost: string;
  ghostVersion: string;
}

/** The cache directory; the same rule as `platformCacheDir()` in scripts/platforms/install.mjs. */
export function platformCacheDir(): string {
  return process.env.ACTION_SERVICE_PLATFORM_CACHE || join(homedir(), ".cache", "action-service", "platforms");
}

/** Reads the install's manifest, or says how to make one. */
export function platformInstall(): PlatformInstall {
  const file = join(platformCacheDir(), "platforms.json");
  if (!existsSync(file)) {
    throw new Error(`The real platforms are not installed (no ${file}): run \`npm run test:platforms\` or \`node scripts/platforms/install.mjs\`.`);
  }
  return JSON.parse(readFileSync(file, "utf8")) as PlatformInstall;
}
