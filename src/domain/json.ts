/**
 * Bounds on client JSON. Anything that walks a body (hashing, validation, storing) is
 * recursive somewhere; checking depth first, without recursion, keeps a 10 KB body of
 * `[[[[…` from exhausting the stack.
 */
export const MAX_JSON_DEPTH = 32;

/** True when JSON text nests arrays or objects deeper than `max` (strings are skipped; no parse, no recursion). */
export function jsonTextTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index);
    if (inString) {
      if (char === 0x5c /* \ */) index += 1;
      else if (char === 0x22 /* " */) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x5b /* [ */ || char === 0x7b /* { */) {
      depth += 1;
      if (depth > max) return true;
    } else if (char === 0x5d /* ] */ || char === 0x7d /* } */) depth -= 1;
  }
  return false;
}

/** True when a parsed value nests arrays or objects deeper than `max` (iterative). */
export function jsonValueTooDeep(value: unknown, max = MAX_JSON_DEPTH): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [current, depth] = next;
    if (current === null || typeof current !== "object") continue;
    if (depth + 1 > max) return true;
    for (const inner of Object.values(current)) pending.push([inner, depth + 1]);
  }
  return false;
}
