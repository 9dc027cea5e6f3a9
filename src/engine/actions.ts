import { z } from "zod";
import { ACTION_TYPES, priceOf } from "../domain/actions.js";
import { isAnswerableByApi } from "../domain/challenges.js";
import type { AnsweredBy } from "../domain/inbox.js";
import { ActionFailure, AppError } from "../domain/errors.js";
import { jsonValueTooDeep } from "../domain/json.js";
import { browserStepSecretPaths, withholdSecrets } from "../domain/secret-params.js";
import { freeFormObject } from "../domain/public.js";
import type { Principal } from "../domain/keys.js";
import { ACTION_STATUSES, isTerminal, type ActionStatus } from "../domain/status.js";
import { actionChange } from "../store/index.js";
import type { AccountRecord, ActionRecord } from "../store/records.js";
import { requirePermission, visibleAccount, visibleAction } from "./access/index.js";
import type { EngineCore } from "./core.js";
import { paramsSchema, type PlatformInfo } from "./execution/index.js";
import { newId } from "./ids.js";
import { nextStep, presentAction, signInUrl, type PacingView, type PublicAction, type Surface } from "./present/index.js";
import { recordActionEvent } from "./outbox/index.js";
import { resolveRoutineParams } from "./routines/routines.js";

/** No action type's params nest anywhere near this deep. */
const MAX_PARAMS_DEPTH = 16;

/** Request shapes for actions: validators, types, MCP input schemas and OpenAPI in one. */
export const CreateActionInput = z.strictObject({
  account_id: z.string().min(1).max(200).describe("The account to act as (`acc_…`)."),
  type: z.enum(ACTION_TYPES).describe("The action type; see GET /v1/platforms for what each platform supports."),
  params: freeFormObject()
    .refine((value) => !jsonValueTooDeep(value, MAX_PARAMS_DEPTH), `must not nest deeper than ${MAX_PARAMS_DEPTH} levels`)
    .default({})
    .describe("The action's params; their shape depends on `type` (see GET /v1/platforms)."),
});
export const AnswerInput = z.strictObject({
  answer: z.string().trim().min(1).max(500).describe("The code or reply the challenge asks for."),
});
export const ListActionsQuery = z.strictObject({
  account_id: z.string().min(1).max(200).optional().describe("Only this account's actions (`acc_…`)."),
  status: z.enum(ACTION_STATUSES).optional().describe("Only actions in this status."),
  limit: z.coerce.number().int().min(1).max(100).default(20).describe("Actions per page, newest first (1–100, default 20)."),
  cursor: z.string().min(1).max(200).optional().describe("`next_cursor` of the previous page."),
});

export type CreateAction = z.infer<typeof CreateActionInput>;
export type ListActions = z.infer<typeof ListActionsQuery>;

/** Checks params against the type's schema (the platform's own, where it has one); a bad shape is a 422 before anything runs. */
export function validateParams(input: CreateAction, platform?: PlatformInfo): Record<string, unknown> {
  const parsed = paramsSchema(input.type, platform).safeParse(input.params);
  if (!parsed.success) {
    throw new AppError("invalid_request", `The params do not fit a ${input.type} action.`, {
      issues: parsed.error.issues.map((issue) => ({ path: ["params", ...issue.path].join("."), message: issue.message })),
    });
  }
  return parsed.data as Record<string, unknown>;
}

/**
 * Creates an action: queued with its price held, or failed at once (nothing held)
 * when the platform lacks the type or the balance is short.
 */
/** What every create checks first, replays included: the key's role, its allow-list, the params. */
export async function authorizeCreate(
  core: EngineCore,
  principal: Principal,
  input: CreateAction,
): Promise<{ account: AccountRecord; params: Record<string, unknown>; secrets?: Record<string, unknown> }> {
  requirePermission(principal, "act");
  const account = await visibleAccount(core.store, principal, input.account_id);
  const params = validateParams(input, core.platforms.find((platform) => platform.name === account.platform));
  // A routine's own params are checked against its saved schema, and the version it will run recorded.
  if (input.type === "routine") return { account, ...(await resolveRoutineParams(core, principal, account, params)) };
  // A fill marked secret is typed, never stored: the action's params show "[secret]" in its place.
  if (input.type === "browser_steps") return { account, ...withholdSecrets(params, browserStepSecretPaths(params)) };
  return { account, params };
}

/**
 * How a create's transaction runs: every write it makes is an insert or the ledger's conditional
 * hold, so on PostgreSQL it needs READ COMMITTED, not SERIALIZABLE, and concurrent creates in one
 * workspace wait on the balance row's lock instead of aborting and running again.
 */
export const CREATE = { locksRows: true } as const;

/** Creates an action in one transaction, then starts it (see `insertAction`). */
export async function createAction(core: EngineCore, principal: Principal, input: CreateAction): Promise<ActionRecord> {
  const created = await core.store.transaction(() => insertAction(core, principal, input), CREATE);
  announceCreated(core, created);
  return created.action;
}

/** A create's new action, and whether its account is warm on another live coordinator with a free run slot (which then takes it). */
export interface Created {
  action: ActionRecord;
  warmElsewhere: boolean;
}

/**
 * Writes a new action (call inside a transaction): queued with its price held, or failed
 * at once (nothing held) when the platform lacks the type or the balance is short.
 */
export async function insertAction(core: EngineCore, principal: Principal, input: CreateAction): Promise<Created> {
  const { store, lifecycle } = core;
  const { account, params, secrets } = await authorizeCreate(core, principal, input);
  const platform = core.platforms.find((candidate) => candidate.name === account.platform);
  const id = newId("act");
  const now = lifecycle.now();
  const price = priceOf(input.type, params);
  // Every platform with a driver runs routines: their steps are the shared vocabulary.
  const unsupported = !platform || (input.type !== "routine" && !platform.actions.includes(input.type));
  const failure = unsupported ? new ActionFailure("unsupported", `The ${account.platform} platform has no ${input.type} action.`) : undefined;
  const inserted = await store.actions.insert(
    {
      id,
      workspace_id: principal.workspaceId,
      account_id: account.id,
      platform: account.platform,
      type: input.type,
      params,
      status: failure ? "failed" : "queued",
      error_code: failure?.code,
      error_message: failure?.message,
      result: undefined,
      price,
      cost: 0,
      held: !failure,
      runner_id: undefined,
      lease: 0,
      committed_at: undefined,
      created_at: now,
      updated_at: now,
      finished_at: failure ? now : undefined,
    },
    { runnerId: core.runner.runnerId, leaseNow: core.runner.leaseNow() },
  );
  let created = inserted.action;
  // The price is held by one conditional statement (the ledger refuses a balance below zero), not
  // judged from a balance read earlier: concurrent creates in one workspace wait for each other's
  // hold instead of aborting (decisions: "The balance row").
  if (!failure && !(await store.ledger.append({ workspace_id: principal.workspaceId, kind: "hold", amount: -price, action_id: id, created_at: now }))) {
    const balance = await store.ledger.balance(principal.workspaceId);
    const short = new ActionFailure("insufficient_credits", `This action costs ${price} credits; the balance is ${balance}. Top up with x402: POST /v1/credits/top-ups, or the MCP tool top_up_credits.`);
    await store.actions.update(id, { status: "failed", error_code: short.code, error_message: short.message, held: false, finished_at: now }, now);
    created = (await store.actions.get(id))!;
  }
  // Sealed beside the action, which shows "[secret]" in their place; only one that will run keeps them
  // (a routine's secret params and a browser_steps fill marked secret alike: domain/secret-params.ts).
  if (secrets && Object.keys(secrets).length > 0 && created.status === "queued") await store.routines.putSecretParams(id, secrets);
  // The record as written is the one announced and recorded: no read of it again.
  await recordActionEvent(store, id, now, created);
  core.lifecycle.announce(created);
  return { action: created, warmElsewhere: inserted.warmElsewhere };
}

/**
 * Once the create has committed (listeners were told as it committed): queued work is started here
 * if a run slot is free, else those who have one are woken — unless its account is warm on another
 * live coordinator with a free slot, which its notification wakes and which takes it (a claim here
 * would only pass it over: a claim transaction for nothing).
 */
export function announceCreated(core: EngineCore, created: Created): void {
  if (created.action.status !== "queued" || created.warmElsewhere) return;
  core.runner.offer();
}

/**
 * Answers the action's open challenge: `by` says who (`agent` through the API or MCP, `person` in the
 * live page or the web app; the inbox answers through `recordAnswer` itself).
 */
export async function answerAction(core: EngineCore, principal: Principal, actionId: string, answer: string, by: "agent" | "person" = "agent"): Promise<ActionRecord> {
  requirePermission(principal, "act");
  const { store } = core;
  const action = await visibleAction(store, principal, actionId);
  if (action.status !== "needs_input") {
    throw new AppError("conflict", `The action is ${action.status}, not needs_input: there is nothing to answer.`, { status: action.status });
  }
  const challenge = (await store.challenges.latestOf(action.id))!;
  if (!isAnswerableByApi(challenge.kind)) {
    throw new AppError("conflict", `A ${challenge.kind} challenge cannot be answered with text: open sign_in_url and complete it in the live browser.`, {
      kind: challenge.kind,
      sign_in_url: await signInUrl(core, challenge.id),
    });
  }
  if (!(await recordAnswer(core, action.id, challenge.id, answer, by))) {
    throw new AppError("conflict", "The action is not waiting for an answer any more.", { status: (await store.actions.get(action.id))?.status });
  }
  await core.runner.deliver(action.id);
  return (await store.actions.get(action.id))!;
}

/**
 * Records an answer to challenge `challengeId` of the action if it is still the open one (false when
 * the action no longer waits for it). Through the store (DESIGN §11): once committed, whichever
 * runner holds the page takes it — here when the caller then calls `runner.deliver`, within ~100 ms
 * on another coordinator.
 */
export async function recordAnswer(core: EngineCore, actionId: string, challengeId: string, answer: string, by: AnsweredBy): Promise<boolean> {
  const { store } = core;
  return store.transaction(async () => {
    // The action's row first, as every writer of a run takes it (the run's finish closes this challenge after it).
    await store.actions.lockForWrite(actionId);
    const current = await store.challenges.latestOf(actionId);
    if (current?.id !== challengeId || current.state !== "open") return false;
    if (!(await store.challenges.recordAnswer(challengeId, answer, by, core.lifecycle.now()))) return false;
    return core.lifecycle.move(actionId, ["needs_input"], "running", { answered_by: by });
  });
}

export async function cancelAction(core: EngineCore, principal: Principal, actionId: string): Promise<ActionRecord> {
  requirePermission(principal, "act");
  const action = await visibleAction(core.store, principal, actionId);
  if (!(await core.lifecycle.finish(action.id, { status: "canceled" }))) {
    const { status } = (await core.store.actions.get(action.id))!;
    throw new AppError("conflict", `The action has already ended (${status}); it cannot be canceled.`, { status });
  }
  core.runner.abort(action.id, new Error("canceled"));
  return (await core.store.actions.get(action.id))!;
}

export async function listActions(core: EngineCore, principal: Principal, query: ListActions): Promise<{ data: ActionRecord[]; next_cursor?: string }> {
  requirePermission(principal, "read");
  if (query.account_id) await visibleAccount(core.store, principal, query.account_id);
  const rows = await core.store.actions.list({
    workspaceId: principal.workspaceId,
    accountIds: principal.accountIds,
    accountId: query.account_id,
    status: query.status,
    beforeSeq: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
    limit: query.limit + 1,
  });
  const page = rows.slice(0, query.limit);
  return rows.length > query.limit ? { data: page, next_cursor: encodeCursor(page.at(-1)!.seq) } : { data: page };
}

function encodeCursor(seq: number): string {
  return Buffer.from(`seq:${seq}`).toString("base64url");
}

function decodeCursor(cursor: string): number {
  const match = /^seq:(\d{1,15})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match) throw new AppError("invalid_request", "The cursor is not one this API gave out.", { cursor });
  return Number(match[1]);
}

/** Resolves once the action is at needs_input or has ended, or after `seconds`. */
export async function waitForAction(core: EngineCore, actionId: string, seconds: number, signal?: AbortSignal): Promise<ActionRecord> {
  const settledAt = (status: string): boolean => status === "needs_input" || isTerminal(status as ActionStatus);
  const settled = (action: ActionRecord): boolean => settledAt(action.status);
  if (seconds <= 0 || signal?.aborted) return (await core.store.actions.get(actionId))!;
  return new Promise((resolve, reject) => {
    let finished = false;
    /** Ends the wait with `found`, the settled record in hand (a committed change, or a look), else with the action read now. */
    const done = (found?: ActionRecord): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      core.lifecycle.events.off("change", onChange);
      unfollow();
      signal?.removeEventListener("abort", stop);
      if (found) resolve(found);
      else core.store.actions.get(actionId).then((action) => resolve(action!), reject);
    };
    const stop = (): void => done();
    const onChange = (action: ActionRecord): void => {
      if (action.id === actionId && settled(action)) done(action);
    };
    const timer = setTimeout(stop, seconds * 1000);
    const look = (): Promise<void> =>
      core.store.actions.get(actionId).then((action) => {
        if (!action) done();
        else if (settled(action)) done(action);
      });
    // Listening before the first look: a change between the two is not missed.
    core.lifecycle.events.on("change", onChange);
    const unfollow = hearElsewhere(core, actionId, settledAt, stop, look);
    signal?.addEventListener("abort", stop, { once: true });
    look().catch(reject);
  });
}

/**
 * How a wait hears of another coordinator's change of its action (this process's own changes come
 * from the lifecycle as they commit). On PostgreSQL from the change feed itself: a notification
 * names the action and its status (migrations/postgres 011), so the one saying it is at a status
 * the wait is for ends it, with one read of the action, and the others cost nothing — no read of
 * the outbox (DESIGN §11, "Scaling out adds capacity": a post created through one coordinator and
 * run on another cost its creator two outbox reads and the action's reads for each of its changes).
 * A call without a notification (the feed listened again after a gap, its slow poll) looks once.
 * On SQLite (no payloads) it follows the action as before (engine/execution/changes-elsewhere.ts).
 * Returns the unsubscribe.
 */
function hearElsewhere(core: EngineCore, actionId: string, awaited: (status: string) => boolean, done: () => void, look: () => Promise<void>): () => void {
  const { store } = core;
  if (store.dialect !== "postgres") return core.lifecycle.follows.follow({ actionId });
  // A look that fails (a busy database) is tried again at the next call without a notification.
  const lookAgain = (): void => void look().catch(() => undefined);
  return store.changes.on((change) => {
    if (change === undefined) return lookAgain();
    if (change.origin === store.origin) return;
    const notified = actionChange(change.subject);
    if (notified?.actionId !== actionId) return;
    // A payload without a status (a trigger older than 011) says only that it changed.
    if (notified.status === undefined) lookAgain();
    else if (awaited(notified.status)) done();
  });
}

/** The public JSON, with the open challenge and its live link when at needs_input. */
export async function present(core: EngineCore, action: ActionRecord, surface: Surface = "rest"): Promise<PublicAction> {
  const challenge = action.status === "needs_input" ? await core.store.challenges.latestOf(action.id) : undefined;
  const step = await nextStep(core.store, action, surface, challenge, pacingView(core));
  return challenge ? presentAction(action, { record: challenge, signInUrl: await signInUrl(core, challenge.id) }, step) : presentAction(action, undefined, step);
}

/** What next steps say of pacing, read through the engine's clock and the accounts' paces. */
export function pacingView(core: EngineCore): PacingView {
  const { lifecycle, store } = core;
  return {
    now: lifecycle.clock.now(),
    paceOf: async (accountId, type) => {
      const account = await store.accounts.get(accountId);
      return account && lifecycle.pacing.pacesOf(account)[type];
    },
  };
}
