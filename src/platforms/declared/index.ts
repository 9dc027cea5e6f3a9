import { readFile } from "node:fs/promises";
import type { Driver } from "../driver.js";
import { checkPlatformFile } from "./check.js";
import { driverOfFile } from "./driver.js";
import { describeIssues, PlatformFileError } from "./errors.js";
import { PLATFORM_FILE_VERSION, PlatformFileJson, type PlatformFile } from "./schema.js";

export { PlatformFileError } from "./errors.js";
export { platformJsonSchema, PLATFORM_FILE_VERSION, type PlatformFile } from "./schema.js";

/**
 * A platform file, validated: the schema, then what the schema cannot say (named locators,
 * placeholders, where a goto leads). Throws `PlatformFileError` naming `source` and, for each
 * problem, its JSON path.
 */
export function parsePlatformFile(json: unknown, source: string): PlatformFile {
  if (json === null || typeof json !== "object" || Array.isArray(json)) throw new PlatformFileError(source, ["a platform file is a JSON object"]);
  const version = (json as Record<string, unknown>).schemaVersion;
  if (version === undefined) throw new PlatformFileError(source, [`schemaVersion: missing (required): write "schemaVersion": ${PLATFORM_FILE_VERSION}`]);
  if (version !== PLATFORM_FILE_VERSION) {
    throw new PlatformFileError(source, [`schemaVersion: this service reads platform files of version ${PLATFORM_FILE_VERSION}, not ${JSON.stringify(version)}`]);
  }
  const parsed = PlatformFileJson.safeParse(json);
  if (!parsed.success) throw new PlatformFileError(source, describeIssues(parsed.error.issues, json));
  const problems = checkPlatformFile(parsed.data);
  if (problems.length > 0) throw new PlatformFileError(source, problems);
  return parsed.data;
}

/** A driver declared by a platform file's JSON; `source` names it in errors (its path). A file never runs code. */
export function declaredDriver(json: unknown, source: string): Driver {
  return driverOfFile(parsePlatformFile(json, source));
}

/** Loads a `*.platform.json` file as a driver; its errors name the file. */
export async function loadPlatformFile(path: string): Promise<Driver> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new PlatformFileError(path, [`cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new PlatformFileError(path, [`is not JSON (${(error as Error).message})`]);
  }
  return declaredDriver(json, path);
}
