import { z } from "zod";
import { AppError } from "../../domain/errors.js";
import { AccountJson, ActionJson, MessageJson, listOf } from "../../domain/public.js";
import { CreateAccountInput, UpdateAccountInput } from "../../engine/accounts/index.js";
import { PushMessageInput } from "../../engine/inbox/index.js";
import { presentMessage } from "../../engine/present/index.js";
import { describeAccount, describeAction } from "../describe.js";
import { AccountOutput, SignInLinkOutput, accountId, waitSeconds } from "../schemas.js";
import { defineTool } from "../tool.js";

function describeLink(link: { url: string; expires_at: string }, why: string): string {
  return `${why} Give the owner this sign-in link (open it in a browser, no login needed, valid until ${link.expires_at}): ${link.url}\nOnce they are in, the account is connected; check with list_accounts.`;
}

export const accountTools = [
  defineTool({
    name: "connect_account",
    title: "Connect an account",
    description:
      "Adds an account on a platform (see list_platforms), or reuses the one this workspace already has for that platform and username (updating the password or totp_secret given), then signs it in with a `connect` action (1 credit), waiting up to wait_seconds. " +
      "The password and totp_secret are stored encrypted and never returned. With a totp_secret the service answers authenticator-code challenges itself. " +
      "If the sign-in asks for something (an emailed code, a device approval …) the action is at needs_input: answer with answer_challenge or open its sign_in_url. " +
      "Without a password (and no saved session), nothing is run or charged: the result carries a sign_in_link where the owner signs in by hand; so does a connect the platform blocks (account_blocked).",
    input: CreateAccountInput.extend({ wait_seconds: waitSeconds }),
    output: z.object({
      account: AccountJson.describe("The account, new or reused."),
      action: ActionJson.optional().describe("The connect action, when one was run."),
      sign_in_link: SignInLinkOutput.optional().describe("Where the owner signs in by hand: present when no password is stored, or the platform blocked the account."),
    }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    async resume(action, { engine, principal }) {
      const account = await engine.presentAccount(principal, await engine.accounts.get(principal, action.account_id));
      return { structured: { account, action }, text: `${describeAccount(account)}\n${describeAction(action)}`, action };
    },
    async handle({ wait_seconds, ...input }, { engine, principal, waitFor, offerLink }) {
      const existing = await engine.accounts.find(principal, input.platform, input.username);
      const changes = { ...(input.password !== undefined ? { password: input.password } : {}), ...(input.totp_secret !== undefined ? { totp_secret: input.totp_secret } : {}) };
      const record = existing ? (Object.keys(changes).length > 0 ? await engine.accounts.update(principal, existing.id, changes) : existing) : await engine.accounts.create(principal, input);
      const reused = existing ? `This workspace already had ${record.username} on ${record.platform}: reused account ${record.id}.\n` : "";
      if (!record.has_password && !record.has_session) {
        const link = await engine.live.createSignInLink(principal, record.id);
        offerLink(link.url, `Sign in to ${record.username} on ${record.platform} by hand, so the account can be connected.`);
        const account = await engine.presentAccount(principal, record);
        return { structured: { account, sign_in_link: link }, text: `${reused}${describeAccount(account)}\n${describeLink(link, "No password is stored, so nothing was run and nothing was charged.")}` };
      }
      const started = await engine.createAction(principal, { account_id: record.id, type: "connect", params: {} });
      const action = await engine.present(await waitFor(started.id, wait_seconds), "mcp");
      // Re-read: a finished connect marks the account connected and records its profile.
      const account = await engine.presentAccount(principal, await engine.accounts.get(principal, record.id));
      const text = `${reused}${describeAccount(account)}\n${describeAction(action)}`;
      if (action.status === "failed" && (action.error?.code === "account_blocked" || action.error?.code === "signed_out")) {
        const link = await engine.live.createSignInLink(principal, record.id);
        offerLink(link.url, `The platform needs ${record.username} to sign in by hand (${action.error.code}).`);
        return { structured: { account, action, sign_in_link: link }, text: `${text}\n${describeLink(link, "The link costs nothing.")}`, action };
      }
      return { structured: { account, action }, text, action };
    },
  }),
  defineTool({
    name: "update_account",
    title: "Fix an account's credentials, or change its pace",
    description:
      'Changes an account\'s username, password or totp_secret (null removes the stored secret), e.g. after login_failed; then run_action with type connect to sign in again. `pace` overrides the platform\'s default paces per action type, field by field (e.g. {"post": {"per_hour": 2, "per_day": null}}: null restores the default). Give at least one field. Secrets are stored encrypted and never returned.',
    input: z.strictObject({ account_id: accountId, ...UpdateAccountInput.shape }),
    output: AccountOutput,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async handle({ account_id, ...changes }, { engine, principal }) {
      // The REST body schema carries the "at least one field" rule; apply it to the same fields.
      const parsed = UpdateAccountInput.safeParse(changes);
      if (!parsed.success) throw new AppError("invalid_request", parsed.error.issues.map((issue) => issue.message).join("; "));
      const account = await engine.presentAccount(principal, await engine.accounts.update(principal, account_id, parsed.data));
      return { structured: account, text: `Updated. ${describeAccount(account)}` };
    },
  }),
  defineTool({
    name: "remove_account",
    title: "Remove an account",
    description:
      "Removes an account (as DELETE /v1/accounts/{id}): its unfinished actions are canceled (nothing charged for them), its password, TOTP secret and browser session are deleted. Its past actions stay readable.",
    input: z.strictObject({ account_id: accountId }),
    output: z.object({ removed: z.literal(true).describe("The account is gone."), account_id: z.string().describe("The removed account's id.") }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    async handle({ account_id }, { engine, principal }) {
      await engine.accounts.delete(principal, account_id);
      return { structured: { removed: true as const, account_id }, text: `Removed account ${account_id}: its credentials and browser session are deleted.` };
    },
  }),
  defineTool({
    name: "create_sign_in_link",
    title: "Create a sign-in link",
    description:
      "Makes a live-browser link (valid 30 minutes, no login needed) where the account's owner signs in by hand, challenges included; the session is then saved and the account connected. " +
      "Use it for an account without a password, after signed_out, or to clear an account_blocked checkpoint. Free. Give the url to the owner; follow with list_accounts (status connected).",
    input: z.strictObject({ account_id: accountId }),
    output: SignInLinkOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    async handle({ account_id }, { engine, principal, offerLink }) {
      const link = await engine.live.createSignInLink(principal, account_id);
      offerLink(link.url, `Sign in to account ${account_id} by hand.`);
      return { structured: link, text: describeLink(link, `Sign-in link for account ${account_id}.`) };
    },
  }),
  defineTool({
    name: "list_accounts",
    title: "List accounts",
    description: "Lists the connected accounts this key may use: id, platform, username, status (new, connected, needs_auth, blocked) with status_reason and checked_at and whether a password or TOTP secret is stored (never the secret).",
    input: z.strictObject({}),
    output: listOf(AccountJson),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async handle(_args, { engine, principal }) {
      const data = await Promise.all((await engine.accounts.list(principal)).map((account) => engine.presentAccount(principal, account)));
      return { structured: { data }, text: data.length === 0 ? "No accounts yet: add one with connect_account." : data.map(describeAccount).join("\n") };
    },
  }),
  defineTool({
    name: "check_account",
    title: "Check an account's sign-in",
    description:
      "Checks now whether the account's saved session is still signed in (after its running action, if any); free. Signed out, it signs in again by itself when no person is needed " +
      "(a stored password with a TOTP secret, or an inbox that receives the code); otherwise the account becomes needs_auth (send a sign-in link), or blocked at a checkpoint. " +
      "Returns at once; checked_at moves when the check is done, and its end is an account.updated event (webhooks, the event stream) even when nothing changed.",
    input: z.strictObject({ account_id: accountId }),
    output: AccountJson,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    async handle({ account_id }, { engine, principal }) {
      const account = await engine.presentAccount(principal, await engine.healthChecks.checkNow(principal, account_id));
      return { structured: account, text: `A check of account ${account_id} is queued: ${describeAccount(account)}` };
    },
  }),
  defineTool({
    name: "forward_message",
    title: "Forward a code message",
    description:
      "Gives an account's inbox a mail (channel email) or text message (sms) that you received elsewhere, e.g. a sign-in code the platform sent to the owner. " +
      "It answers the account's action waiting at an email_code or sms_code challenge (or one that starts within 10 minutes) with the code or sign-in link found in it, each message once; the action's answered_by then says inbox. Free.",
    input: z.strictObject({ account_id: accountId, ...PushMessageInput.shape }),
    output: MessageJson,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async handle({ account_id, channel, text }, { engine, principal }) {
      const message = presentMessage(await engine.inbox.push(principal, account_id, { channel, text }));
      const used = message.used_for ? `It answered the challenge of action ${message.used_for}.` : "No challenge waits for it now: it answers one of its channel that starts within 10 minutes.";
      return { structured: message, text: `The inbox of account ${account_id} received the ${channel} message ${message.id}. ${used}` };
    },
  }),
];
