import { Secret } from "otpauth";
import { z } from "zod";
import { AppError } from "../../domain/errors.js";
import type { Principal } from "../../domain/keys.js";
import type { AccountRecord } from "../../store/records.js";
import { requirePermission, visibleAccount } from "../access/index.js";
import type { EngineCore } from "../core.js";
import type { PaceHold } from "../execution/index.js";
import { newId } from "../ids.js";
import { recordAccountEvent, recordActionEvent } from "../outbox/index.js";
import type { ActionType } from "../../domain/actions.js";
import { PaceOverrides, mergeOverrides, type PaceOverridesInput, type Paces } from "../../domain/pace.js";

const secretText = z.string().min(1).max(1_000);
const totpSecret = z
  .string()
  .trim()
  .min(16)
  .max(256)
  .refine((value) => isBase32(value), "must be a base32 TOTP secret (letters A–Z and digits 2–7)")
  .describe("Base32 TOTP secret; the service then answers two_factor_code challenges itself.");

/** Request shapes for accounts: validators, types, MCP input schemas and OpenAPI in one. */
export const CreateAccountInput = z.strictObject({
  platform: z.string().min(1).max(50).describe("Platform name from GET /v1/platforms, e.g. `sandbox`."),
  username: z.string().trim().min(1).max(200).describe("The sign-in name on the platform."),
  password: secretText.optional().describe("Stored encrypted; leave out to sign in by hand through a sign-in link."),
  totp_secret: totpSecret.optional(),
});
export const UpdateAccountInput = z
  .strictObject({
    username: z.string().trim().min(1).max(200).optional().describe("A corrected sign-in name on the platform."),
    password: secretText.optional().describe("A new password; stored encrypted, never returned."),
    totp_secret: totpSecret.nullable().optional().describe("A new secret, or null to remove the stored one."),
    pace: PaceOverrides.optional(),
  })
  .refine((value) => Object.keys(value).length > 0, "give at least one of username, password, totp_secret, pace");

export type CreateAccount = z.infer<typeof CreateAccountInput>;
export type UpdateAccount = z.infer<typeof UpdateAccountInput>;

function isBase32(value: string): boolean {
  if (!/^[A-Z2-7]+=*$/i.test(value.replace(/\s+/g, ""))) return false;
  try {
    Secret.fromBase32(value.replace(/\s+/g, "").toUpperCase());
    return true;
  } catch {
    return false;
  }
}

export async function createAccount(core: EngineCore, principal: Principal, input: CreateAccount): Promise<AccountRecord> {
  requirePermission(principal, "manage_accounts");
  if (principal.accountIds) throw new AppError("forbidden", "A key limited to some accounts may not add accounts.");
  if (!core.platforms.some((platform) => platform.name === input.platform)) {
    throw new AppError("invalid_request", `Unknown platform "${input.platform}".`, { platforms: core.platforms.map((platform) => platform.name) });
  }
  const { store } = core;
  return store.transaction(async () => {
    const now = core.lifecycle.now();
    const id = newId("acc");
    await store.accounts.insert({ id, workspace_id: principal.workspaceId, platform: input.platform, username: input.username, created_at: now });
    if (input.password !== undefined) await store.accounts.setSecret(id, "password", input.password, now);
    if (input.totp_secret !== undefined) await store.accounts.setSecret(id, "totp_secret", normalizeSecret(input.totp_secret), now);
    // Its inbox's address and SMS URL (DESIGN §15); accounts made before the inbox get theirs on first use.
    await store.inbox.tokens(id, now);
    await recordAccountEvent(store, id, now);
    return (await store.accounts.get(id))!;
  });
}

export async function updateAccount(core: EngineCore, principal: Principal, accountId: string, input: UpdateAccount): Promise<AccountRecord> {
  requirePermission(principal, "manage_accounts");
  const { store } = core;
  const account = await visibleAccount(store, principal, accountId);
  if (input.pace !== undefined) checkPacedTypes(core, account, input.pace);
  const updated = await store.transaction(async () => {
    const now = core.lifecycle.now();
    if (input.pace !== undefined) await changePace(core, accountId, input.pace, now);
    if (input.username !== undefined) await store.accounts.update(accountId, { username: input.username }, now);
    if (input.password !== undefined) await store.accounts.setSecret(accountId, "password", input.password, now);
    if (input.totp_secret !== undefined) {
      await store.accounts.setSecret(accountId, "totp_secret", input.totp_secret === null ? undefined : normalizeSecret(input.totp_secret), now);
    }
    return (await store.accounts.get(accountId))!;
  });
  // Its queued actions are weighed against the new pace at once.
  if (input.pace !== undefined) core.runner.pump();
  return updated;
}

/** Pace overrides only for the action types the account's platform offers. */
function checkPacedTypes(core: EngineCore, account: AccountRecord, pace: PaceOverridesInput): void {
  const offered = core.platforms.find((platform) => platform.name === account.platform)?.actions ?? [];
  const unknown = Object.keys(pace).filter((type) => !offered.includes(type as ActionType));
  if (unknown.length > 0) {
    throw new AppError("invalid_request", `The ${account.platform} platform has no action type ${unknown.join(", ")} to pace.`, { types: [...offered] });
  }
}

/**
 * Merges pace overrides into the account's, field by field (DESIGN §16), and lets its queued
 * actions be weighed again at their next claim: a looser pace may start them sooner (a cool-down
 * still holds them, being checked there too).
 */
async function changePace(core: EngineCore, accountId: string, pace: PaceOverridesInput, now: string): Promise<void> {
  const { store } = core;
  const account = (await store.accounts.get(accountId))!;
  await store.accounts.update(accountId, { pace: mergeOverrides(account.pace, pace) }, now);
  for (const id of await store.actions.undeferQueued(accountId, now)) await recordActionEvent(store, id, now);
  await recordAccountEvent(store, accountId, now);
}

/** Deletes credentials and browser state; unfinished actions of the account are canceled first. */
export async function deleteAccount(core: EngineCore, principal: Principal, accountId: string): Promise<void> {
  requirePermission(principal, "manage_accounts");
  const { store, lifecycle } = core;
  await visibleAccount(store, principal, accountId);
  const unfinished = (await store.actions.withStatus(["queued", "running", "needs_input"])).filter((action) => action.account_id === accountId);
  for (const action of unfinished) {
    if (await lifecycle.finish(action.id, { status: "canceled" })) core.runner.abort(action.id, new Error("account deleted"));
  }
  await store.accounts.softDelete(accountId, lifecycle.now());
  await core.executor.forgetAccount?.(accountId);
}

function normalizeSecret(secret: string): string {
  return secret.replace(/\s+/g, "").toUpperCase();
}

/** The platform accounts a workspace connects (DESIGN §16), as a key may see them. */
export class Accounts {
  constructor(private readonly core: EngineCore) {}

  create(principal: Principal, input: CreateAccount): Promise<AccountRecord> {
    return createAccount(this.core, principal, input);
  }
  update(principal: Principal, accountId: string, input: UpdateAccount): Promise<AccountRecord> {
    return updateAccount(this.core, principal, accountId, input);
  }
  delete(principal: Principal, accountId: string): Promise<void> {
    return deleteAccount(this.core, principal, accountId);
  }
  get(principal: Principal, accountId: string): Promise<AccountRecord> {
    requirePermission(principal, "read");
    return visibleAccount(this.core.store, principal, accountId);
  }
  /** The account this key may see with that sign-in name on that platform (case-insensitive), if any. */
  async find(principal: Principal, platform: string, username: string): Promise<AccountRecord | undefined> {
    return (await this.list(principal)).find((account) => account.platform === platform && account.username.toLowerCase() === username.trim().toLowerCase());
  }
  /** The pace the account runs at: its platform's defaults with its overrides. */
  pacesOf(account: AccountRecord): Paces {
    return this.core.lifecycle.pacing.pacesOf(account);
  }
  /**
   * What would hold an action of `type` on the account back if it were queued now (its pace or a
   * cool-down, DESIGN §16), without jitter; undefined when it would run now (the run form says so).
   */
  async paceHold(principal: Principal, accountId: string, type: ActionType): Promise<PaceHold | undefined> {
    requirePermission(principal, "read");
    await visibleAccount(this.core.store, principal, accountId);
    return this.core.lifecycle.pacing.holdOf(accountId, type, this.core.lifecycle.clock.now(), { jitter: false });
  }
  list(principal: Principal): Promise<AccountRecord[]> {
    requirePermission(principal, "read");
    return this.core.store.accounts.list(principal.workspaceId, principal.accountIds);
  }
}
