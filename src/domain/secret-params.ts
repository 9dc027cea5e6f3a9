/**
 * Secret values in an action's params (DESIGN §14, issue 43 §5): a routine's `writeOnly` params and
 * a `browser_steps` fill marked `secret: true`. At create they are taken out of the params (which
 * show "[secret]" in their place wherever the action is read: its row, events, webhooks, stored
 * idempotent responses, REST and MCP) and sealed beside the action; the run puts them back; they
 * are dropped once the action has ended. One path for both kinds.
 */

/** What an action's params show in a secret's place. */
export const REDACTED = "[secret]";

/** Secret values by their place in the action's params, as a dotted path: `params.password`, `steps.2.value`. */
export type SecretValues = Record<string, unknown>;

function parentOf(params: Record<string, unknown>, path: string): { holder: Record<string, unknown> | unknown[]; key: string } | undefined {
  const keys = path.split(".");
  let holder: unknown = params;
  for (const key of keys.slice(0, -1)) {
    if (typeof holder !== "object" || holder === null) return undefined;
    holder = (holder as Record<string, unknown>)[key];
  }
  if (typeof holder !== "object" || holder === null) return undefined;
  return { holder: holder as Record<string, unknown>, key: keys.at(-1)! };
}

/** The params with the values at `paths` replaced by "[secret]" (a copy), and those values. */
export function withholdSecrets(params: Record<string, unknown>, paths: readonly string[]): { params: Record<string, unknown>; secrets: SecretValues } {
  const shown = structuredClone(params);
  const secrets: SecretValues = {};
  for (const path of paths) {
    const place = parentOf(shown, path);
    if (!place) continue;
    const holder = place.holder as Record<string, unknown>;
    if (holder[place.key] === undefined) continue;
    secrets[path] = holder[place.key];
    holder[place.key] = REDACTED;
  }
  return { params: shown, secrets };
}

/** The params whole again (a copy): each sealed value back at its place. */
export function restoreSecrets(params: Record<string, unknown>, secrets: SecretValues): Record<string, unknown> {
  if (Object.keys(secrets).length === 0) return params;
  const whole = structuredClone(params);
  for (const [path, value] of Object.entries(secrets)) {
    const place = parentOf(whole, path);
    if (place) (place.holder as Record<string, unknown>)[place.key] = value;
  }
  return whole;
}

/** Where a browser_steps action's params hold secrets: the value of each fill step marked `secret: true`. */
export function browserStepSecretPaths(params: Readonly<Record<string, unknown>>): string[] {
  const steps = Array.isArray(params.steps) ? (params.steps as unknown[]) : [];
  return steps.flatMap((step, index) => (typeof step === "object" && step !== null && "fill" in step && (step as { secret?: unknown }).secret === true ? [`steps.${index}.value`] : []));
}

/** Whether an action of this type and params may have secrets sealed beside it (so its run reads them, and its end drops them). */
export function mayHoldSecrets(type: string, params: Readonly<Record<string, unknown>>): boolean {
  if (type === "routine") return true;
  return type === "browser_steps" && browserStepSecretPaths(params).length > 0;
}

/**
 * The places an action's params show "[secret]" for a sealed value: each is asked for again before
 * the params are sent once more (the web app's "Run it again"), never resent as the placeholder.
 */
export function redactedPaths(type: string, params: Readonly<Record<string, unknown>>): string[] {
  if (type === "browser_steps") return browserStepSecretPaths(params);
  if (type !== "routine" || typeof params.params !== "object" || params.params === null) return [];
  return Object.entries(params.params as Record<string, unknown>).flatMap(([name, value]) => (value === REDACTED ? [`params.${name}`] : []));
}
