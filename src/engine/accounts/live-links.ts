import { LIVE_LINK_TTL_MS } from "../../domain/challenges.js";
import type { Principal } from "../../domain/keys.js";
import { retryWhileBusy, type SignInLinkRecord } from "../../store/index.js";
import { randomToken } from "../../store/crypto.js";
import type { AccountRecord, ActionRecord, ChallengeRecord } from "../../store/records.js";
import { requirePermission, visibleAccount } from "../access/index.js";
import type { EngineCore } from "../core.js";
import { answerAction } from "../actions.js";
import { newId } from "../ids.js";
import { liveUrl } from "../present/index.js";
import { updateAccountStatus } from "../outbox/index.js";

/** What a live-browser token opens. */
export type LiveTarget =
  | { kind: "challenge"; challenge: ChallengeRecord; action: ActionRecord; expiresAt: string }
  | { kind: "sign_in"; link: SignInLinkRecord; account: AccountRecord; expiresAt: string };

/** An owner sign-in link: the URL exists only in this return value; the store keeps a hash. */
export async function createSignInLink(core: EngineCore, principal: Principal, accountId: string): Promise<{ url: string; expires_at: string }> {
  requirePermission(principal, "act");
  const account = await visibleAccount(core.store, principal, accountId);
  const token = randomToken(32);
  const now = core.lifecycle.clock.now();
  const expiresAt = new Date(now.getTime() + LIVE_LINK_TTL_MS).toISOString();
  await core.store.signInLinks.insert({ id: newId("chl"), account_id: account.id, key_id: principal.keyId, expires_at: expiresAt, created_at: now.toISOString() }, token);
  return { url: liveUrl(core.publicUrl, token), expires_at: expiresAt };
}

/**
 * Resolves a live token: undefined when it names nothing (404), `expired` once its
 * 30 minutes are over (410), else the challenge or sign-in it opens.
 */
export async function resolveLiveToken(core: EngineCore, token: string): Promise<LiveTarget | "expired" | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  const { store } = core;
  const now = core.lifecycle.now();
  const challenge = await store.challenges.byLinkToken(token);
  if (challenge) {
    if (challenge.link_expires_at <= now) return "expired";
    return { kind: "challenge", challenge, action: (await store.actions.get(challenge.action_id))!, expiresAt: challenge.link_expires_at };
  }
  const link = await store.signInLinks.byToken(token);
  if (!link) return undefined;
  const account = await store.accounts.get(link.account_id);
  if (link.expires_at <= now || !account) return "expired";
  return { kind: "sign_in", link, account, expiresAt: link.expires_at };
}

/**
 * Where the coordinator holding a live link's page is reached (its internal URL), when that is
 * another coordinator whose lease holds; undefined when the page is here or held by no one. A
 * challenge's page is where its action runs; an owner sign-in page is where the account's sign-in
 * hold was taken (DESIGN §11), so a link opened again on any coordinator reaches the one page.
 */
export async function pageHolder(core: EngineCore, target: LiveTarget): Promise<string | undefined> {
  const now = core.runner.leaseNow();
  // The action as the token was just resolved: no second read.
  const runnerId = target.kind === "challenge" ? target.action.runner_id : await core.store.accountHolds.holder(target.account.id, now);
  if (!runnerId || runnerId === core.runner.runnerId) return undefined;
  return core.store.runners.internalUrl(runnerId, now);
}

/** The owner signed in by hand: keep the session (sealed) and mark the account connected (a locked database is waited out). */
export async function completeSignIn(core: EngineCore, linkId: string, accountId: string, storageState: string): Promise<void> {
  const { store } = core;
  await retryWhileBusy(() =>
    store.transaction(async () => {
      const now = core.lifecycle.now();
      if (!(await store.accounts.get(accountId))) return;
      await store.accounts.setSecret(accountId, "session", storageState, now);
      await updateAccountStatus(store, accountId, { status: "connected" }, now);
      await store.signInLinks.complete(linkId, now);
    }),
  );
}

/** Live links: an account's sign-in page and a paused action's challenge page, wherever they are held. */
export class LiveLinks {
  constructor(private readonly core: EngineCore) {}

  createSignInLink(principal: Principal, accountId: string): Promise<{ url: string; expires_at: string }> {
    return createSignInLink(this.core, principal, accountId);
  }
  resolve(token: string): Promise<LiveTarget | "expired" | undefined> {
    return resolveLiveToken(this.core, token);
  }
  /** Where the coordinator holding a live link's page is reached, when it is another one (DESIGN §11). */
  pageHolder(target: LiveTarget): Promise<string | undefined> {
    return pageHolder(this.core, target);
  }
  completeSignIn(linkId: string, accountId: string, storageState: string): Promise<void> {
    return completeSignIn(this.core, linkId, accountId, storageState);
  }
  /** Answers a challenge from its live page: the link itself is the capability. */
  answer(target: Extract<LiveTarget, { kind: "challenge" }>, answer: string): Promise<ActionRecord> {
    const principal: Principal = { workspaceId: target.action.workspace_id, keyId: undefined, role: "operator", accountIds: [target.action.account_id] };
    return answerAction(this.core, principal, target.action.id, answer, "person");
  }
}
