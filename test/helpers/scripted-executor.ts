import type { ActionType } from "../../src/domain/actions.js";
import type { ActionExecutor, ExecutionContext, PlatformInfo } from "../../src/engine/execution/index.js";

/** A platform step scripted by the test: it gets the real ExecutionContext the engine hands a driver. */
export type Script = (context: ExecutionContext) => Promise<Record<string, unknown>>;

/**
 * Runs actions by script instead of a browser: the engine under test is real, only
 * the platform is scripted. Scripts are looked up by action type, then by param `script`.
 */
export class ScriptedExecutor implements ActionExecutor {
  readonly scripts = new Map<string, Script>();
  readonly started: string[] = [];

  constructor(readonly fallback: Script = async () => ({ ok: true })) {}

  on(name: ActionType | string, script: Script): this {
    this.scripts.set(name, script);
    return this;
  }

  async execute(context: ExecutionContext): Promise<Record<string, unknown>> {
    this.started.push(context.action.id);
    const byParam = typeof context.action.params.text === "string" ? this.scripts.get(context.action.params.text) : undefined;
    const script = byParam ?? this.scripts.get(context.action.type) ?? this.fallback;
    return script(context);
  }
}

export const SCRIPTED_PLATFORM: PlatformInfo = {
  name: "sandbox",
  title: "Sandbox",
  description: "Scripted stand-in for the sandbox platform.",
  actions: ["connect", "post", "lookup_person", "lookup_conversation", "send_message"],
};

/** Resolves after `ms`, or rejects when `signal` aborts. */
/** A promise the test resolves by hand (`open`), to hold a run (or a read) until the test lets it go. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });
}

/** The suite's one wait (test/helpers/wait.ts), here too for the engine's tests that import it with the executor. */
export { eventually } from "./wait.js";
