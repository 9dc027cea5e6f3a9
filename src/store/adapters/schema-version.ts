import { readdirSync } from "node:fs";
import { join } from "node:path";
import { PACKAGE_DIR } from "../../package.js";

/** `migrations/<kind>` of this package. */
export function migrationsDir(kind: "sqlite" | "postgres"): string {
  return join(PACKAGE_DIR, "migrations", kind);
}

/** A migrations dir's `NNN_name.sql` files, in the order they apply. */
export function migrationFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => /^\d+_.+\.sql$/.test(name))
    .sort();
}

/** A migration file's version: `007_name.sql` → 7. */
export function versionOf(file: string): number {
  return Number.parseInt(file, 10);
}

/** Of `files`, those `applied` does not list yet, in order. */
export function pendingMigrations(files: string[], applied: { version: number }[]): string[] {
  const done = new Set(applied.map((migration) => migration.version));
  return files.filter((name) => !done.has(versionOf(name)));
}

/**
 * Refuses a database migrated further than this code knows (docs/README, "Upgrading a fleet"): a
 * newer action-service changed its schema (a CHECK, a column's meaning) in ways an older one
 * would break by writing to it. Called before anything is applied, on both dialects.
 */
export function refuseNewerSchema(applied: { version: number; name: string }[], files: string[]): void {
  const known = Math.max(0, ...files.map(versionOf));
  const newer = applied.filter((migration) => migration.version > known).sort((a, b) => b.version - a.version);
  if (newer.length === 0) return;
  const newest = newer[0]!;
  throw new SchemaTooNewError(
    `This database's schema is at version ${newest.version} (${newest.name}), newer than this action-service knows (up to version ${known}): a newer action-service migrated it. ` +
      `Run an action-service release that includes migration ${newest.name} (the release the rest of the fleet runs) here too; this one stops rather than write to a schema it does not know.`,
  );
}

/** Start-up stops: the database's schema is newer than this code's. */
export class SchemaTooNewError extends Error {
  override name = "SchemaTooNewError";
}
