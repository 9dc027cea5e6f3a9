import type { Page } from "playwright";

/** How much of a page's accessibility snapshot an error, a result or an event carries. */
export const SNAPSHOT_MAX_BYTES = 8 * 1024;

/** What stands where a value was taken out. */
export const REDACTED = "[redacted]";

/** Roles whose value (after the colon) is what someone typed, never the page's own words. */
const FIELD = /^(\s*- (?:textbox|searchbox|combobox|spinbutton)(?: "(?:[^"\\]|\\.)*")?(?: \[[^\]]*\])*): .*$/;

/** The page's accessibility snapshot with one `redact` pass and the size cap; undefined when the page cannot give one. */
export async function snapshotOf(page: Page, redact: (text: string) => string, maxBytes = SNAPSHOT_MAX_BYTES): Promise<string | undefined> {
  if (page.isClosed()) return undefined;
  try {
    return bounded(redact(withoutFieldValues(await page.locator("body").ariaSnapshot({ timeout: 5_000 }))), maxBytes);
  } catch {
    return undefined;
  }
}

/**
 * Every field's value taken out: it is what the steps, the sign-in or a person typed there (a
 * password field shows its value in the snapshot). The field, its name and its state stay.
 */
export function withoutFieldValues(snapshot: string): string {
  return snapshot
    .split("\n")
    .map((line) => line.replace(FIELD, `$1: ${REDACTED}`))
    .join("\n");
}

/**
 * `texts` taken out wherever they show (typed values, secret params, the account's password); each
 * also as the snapshot writes it inside quotes. Texts of fewer than 3 characters would take
 * ordinary words with them and are left (they still never show as a field's value).
 */
export function redactor(texts: readonly (string | undefined)[]): (text: string) => string {
  const kept = [...new Set(texts.filter((text): text is string => text !== undefined && text.trim().length >= 3))];
  const forms = [...new Set(kept.flatMap((text) => [text, JSON.stringify(text).slice(1, -1), text.replace(/\s+/g, " ").trim()]))];
  // Longest first, so a value is never half-taken by a shorter one inside it.
  forms.sort((one, other) => other.length - one.length);
  return (text) => forms.reduce((redacted, form) => redacted.split(form).join(REDACTED), text);
}

/** The snapshot cut at a line so that it fits `maxBytes`, with a marker saying how much was left out. */
export function bounded(snapshot: string, maxBytes = SNAPSHOT_MAX_BYTES): string {
  if (Buffer.byteLength(snapshot) <= maxBytes) return snapshot;
  const lines = snapshot.split("\n");
  const kept: string[] = [];
  let size = 0;
  const room = maxBytes - 100; // for the marker
  for (const line of lines) {
    const bytes = Buffer.byteLength(line) + 1;
    if (size + bytes > room) break;
    kept.push(line);
    size += bytes;
  }
  return `${kept.join("\n")}\n- … (cut at ${Math.round(maxBytes / 1024)} KB: ${lines.length - kept.length} more lines)`;
}
