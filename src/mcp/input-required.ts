import { createHash } from "node:crypto";
import { z } from "zod";
import { CLIENT_CAPABILITIES_META_KEY, inputRequired, type ClientCapabilities, type InputRequiredResult, type ServerContext } from "@modelcontextprotocol/server";
import { HOW_TO_ANSWER } from "../domain/challenges.js";
import { AppError } from "../domain/errors.js";
import type { Principal } from "../domain/keys.js";
import type { PublicAction } from "../domain/public.js";
import { isTerminal } from "../domain/status.js";
import type { Engine } from "../engine/engine.js";
import type { ActionRecord } from "../store/records.js";

/**
 * A challenge as a multi-round-trip request (MCP 2026-07-28, DESIGN §6): a tool call that finds its
 * action at needs_input answers `input_required` with a URL-mode elicitation of the challenge's
 * `sign_in_url` (never a form: codes and passwords are typed on our page, not in the client) and a
 * sealed `requestState`; the client retries the same call with the person's response, and the retry
 * returns the outcome, or the next challenge. Declining or cancelling cancels the action (free).
 */

const PURPOSE = "mcp-request-state";

/** What the sealed requestState holds: whose call, which action and challenge, which tool and arguments, until when. */
const ChallengeState = z.strictObject({
  v: z.literal(1),
  workspace: z.string(),
  key: z.string().nullable(),
  action: z.string(),
  challenge: z.string(),
  tool: z.string(),
  args: z.string(),
  expires_at: z.string(),
});
type ChallengeState = z.infer<typeof ChallengeState>;

/** Whether the client said, in this request's envelope, that it takes URL-mode elicitations. */
export function takesUrlElicitation(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined;
  return Boolean(capabilities?.elicitation?.url);
}

/** The input request for the action's open challenge and a requestState to come back with, or undefined when it has none. */
export function askForChallenge(engine: Engine, principal: Principal, toolName: string, args: unknown, action: PublicAction): InputRequiredResult | undefined {
  const challenge = action.status === "needs_input" ? action.challenge : undefined;
  if (!challenge) return undefined;
  const state: ChallengeState = {
    v: 1,
    workspace: principal.workspaceId,
    key: principal.keyId ?? null,
    action: action.id,
    challenge: digest(challenge.sign_in_url),
    tool: toolName,
    args: digest(canonical(withoutWait(args))),
    expires_at: challenge.expires_at,
  };
  return inputRequired({ inputRequests: challengeInputRequests(action), requestState: engine.clientTokens.seal(state, PURPOSE) });
}

/**
 * The URL-mode elicitation of the action's open challenge link, keyed by that link (the same key on
 * every round and in a task's `tasks/get`); empty when the action waits for nothing.
 */
export function challengeInputRequests(action: PublicAction): Record<string, ReturnType<typeof inputRequired.elicitUrl>> {
  const challenge = action.status === "needs_input" ? action.challenge : undefined;
  if (!challenge) return {};
  const message = `The ${action.platform} sign-in for action ${action.id} (${action.type}) needs you: ${challenge.message} ${HOW_TO_ANSWER[challenge.kind]} Answer before ${challenge.expires_at}.`;
  return { [inputKey(digest(challenge.sign_in_url))]: inputRequired.elicitUrl({ message, url: challenge.sign_in_url }) };
}

/**
 * The SDK's `requestState.verify` hook (2026 era), run before the handler: a requestState that is not
 * ours or was changed, belongs to another key, or has expired is refused there, as the JSON-RPC error
 * `-32602` "Invalid or expired requestState"; nothing runs. Returns the state the handler then reads.
 */
export function verifyRequestState(engine: Engine, principal: Principal, token: string): ChallengeState {
  const parsed = ChallengeState.safeParse(engine.clientTokens.open(token, PURPOSE));
  if (!parsed.success) throw new Error("the requestState was not made by this service, or was changed");
  const state = parsed.data;
  if (state.workspace !== principal.workspaceId || state.key !== (principal.keyId ?? null)) throw new Error("the requestState belongs to another API key");
  if (Date.parse(state.expires_at) <= engine.core.lifecycle.clock.now().getTime()) throw new Error("the requestState has expired with its challenge");
  return state;
}

/**
 * A retried call: the action its (verified) requestState names, once the person's response is acted
 * on — canceled when they declined, else waited for as `get_action` waits (up to `waitMs`).
 * Undefined for a first call. A state made for another tool or other arguments is a request error
 * (`invalid_request`); nothing changes.
 */
export async function resumeChallenge(engine: Engine, principal: Principal, toolName: string, args: unknown, ctx: ServerContext, waitMs: number): Promise<PublicAction | undefined> {
  const verified = ctx.mcpReq.requestState<unknown>();
  if (verified === undefined) return undefined;
  const parsed = ChallengeState.safeParse(verified);
  if (!parsed.success) throw refused("The requestState was not made by this service, or was changed: retry the call without it.");
  const state = parsed.data;
  if (state.tool !== toolName || state.args !== digest(canonical(withoutWait(args)))) throw refused("The requestState was made for another tool call: retry the same tool with the same arguments.");
  const response = ctx.mcpReq.inputResponses?.[inputKey(state.challenge)] as { action?: string } | undefined;
  const current = await engine.getAction(principal, state.action);
  if ((response?.action === "decline" || response?.action === "cancel") && !isTerminal(current.status)) {
    return engine.present(await engine.cancel(principal, state.action), "mcp");
  }
  return engine.present(await pastChallenge(engine, principal, state, waitMs, ctx.mcpReq.signal), "mcp");
}

/**
 * Resolves with the action as `get_action` waits for it (DESIGN §6): once it has ended, or is at a
 * challenge again after leaving the one `state` names (a refused answer, the next challenge) or at
 * another — or when `waitMs` pass.
 */
async function pastChallenge(engine: Engine, principal: Principal, state: ChallengeState, waitMs: number, signal: AbortSignal): Promise<ActionRecord> {
  // Seen running (or queued) since the call: the answer was taken, whatever challenge comes next.
  let left = false;
  const settled = async (): Promise<boolean> => {
    const action = await engine.present(await engine.getAction(principal, state.action), "mcp");
    if (action.status !== "needs_input") {
      left = true;
      return isTerminal(action.status);
    }
    return left || !action.challenge || digest(action.challenge.sign_in_url) !== state.challenge;
  };
  return new Promise<ActionRecord>((resolve, reject) => {
    let finished = false;
    const done = (): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      stop();
      signal.removeEventListener("abort", done);
      engine.getAction(principal, state.action).then(resolve, reject);
    };
    const stop = engine.onChange(
      (action) => {
        if (action.id !== state.action) return;
        if (action.status !== "needs_input") left = true;
        void settled().then((yes) => yes && done(), () => undefined);
      },
      { actionId: state.action },
    );
    const timer = setTimeout(done, waitMs);
    signal.addEventListener("abort", done, { once: true });
    // Looked at once listening: a change between the two is not missed.
    void settled().then((yes) => yes && done(), () => undefined);
  });
}

/** A request error like any other over MCP (a tool result with `isError` and the code, as REST's 400). */
function refused(message: string): AppError {
  return new AppError("invalid_request", message);
}

/** The input request's key: one per challenge link, unique for the call's life. */
function inputKey(challengeDigest: string): string {
  return `sign_in_${challengeDigest.slice(0, 16)}`;
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("base64url");
}

/** How long to wait is the caller's to change between rounds; what to do is not. */
function withoutWait(args: unknown): unknown {
  if (!args || typeof args !== "object") return args;
  const { wait_seconds: _wait, ...rest } = args as Record<string, unknown>;
  return rest;
}

/** JSON with object keys sorted, so the same arguments always digest alike. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
