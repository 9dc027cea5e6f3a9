/** An action's params, as validated by its params schema. */
export type Params = Readonly<Record<string, unknown>>;

const PLACEHOLDER = /\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*\}\}/g;

/** The params a text's {{param}} placeholders name, in order. */
export function placeholdersOf(text: string): string[] {
  return [...text.matchAll(PLACEHOLDER)].map((match) => match[1]!);
}

/** Whether every param `text` names was given (a step naming one that was not is skipped). */
export function hasAll(text: string, params: Params): boolean {
  return placeholdersOf(text).every((name) => params[name] !== undefined);
}

/**
 * `text` with each placeholder replaced by its param's value, as text: nothing in a value is read
 * as a placeholder or anything else. `encode` URL-encodes each value (a path's segment or query).
 */
export function fillTemplate(text: string, params: Params, encode = false): string {
  return text.replace(PLACEHOLDER, (_, name: string) => {
    const value = params[name];
    const written = value === undefined || value === null ? "" : String(value as string | number | boolean);
    return encode ? encodeURIComponent(written) : written;
  });
}
