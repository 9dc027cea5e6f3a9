import { z } from "zod";
import { AppError } from "../../domain/errors.js";
import { AccountJson, ActionJson, listOf } from "../../domain/public.js";
import { CreateAccountInput, UpdateAccountInput } from "../../engine/accounts.js";
import { presentAccount } from "../../engine/present.js";
import { describeAccount, describeAction } from "../describe.js";
import { AccountOutput, accountId, waitSeconds } from "../schemas.js";
import { defineTool } from "../tool.js";

export const accountTools = [
  defineTool({
    name: "connect_account",
    title: "Connect an account",
    description:
      "Adds an account on a platform (see list_platforms) and signs it in with a `connect` action, waiting up to wait_seconds. Returns the account and that action. " +
      "The password and totp_secret are stored encrypted and never returned. With a totp_secret the service answers authenticator-code challenges itself. " +
      "If the sign-in asks for something (an emailed code, a device approval …) the action is at needs_input: answer with answer_challenge or open its sign_in_url. " +
      "Without a password the owner signs in by hand through the sign_in_url.",
    input: CreateAccountInput.extend({ wait_seconds: waitSeconds }),
    output: z.object({ account: AccountJson, action: ActionJson }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    async handle({ wait_seconds, ...input }, { engine, principal, waitFor }) {
      const created = engine.createAccount(principal, input);
      const started = engine.createAction(principal, { account_id: created.id, type: "connect", params: {} });
      const action = engine.present(await waitFor(started.id, wait_seconds), "mcp");
      // Re-read: a finished connect marks the account connected and records its profile.
      const account = presentAccount(engine.getAccount(principal, created.id));
      return { structured: { account, action }, text: `${describeAccount(account)}\n${describeAction(action)}`, action };
    },
  }),
  defineTool({
    name: "update_account",
    title: "Fix an account's credentials",
    description:
      "Changes an account's username, password or totp_secret (null removes the stored secret), e.g. after login_failed; then run_action with type connect to sign in again. Give at least one field. Secrets are stored encrypted and never returned.",
    input: z.strictObject({ account_id: accountId, ...UpdateAccountInput.shape }),
    output: AccountOutput,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    handle({ account_id, ...changes }, { engine, principal }) {
      // The REST body schema carries the "at least one field" rule; apply it to the same fields.
      const parsed = UpdateAccountInput.safeParse(changes);
      if (!parsed.success) throw new AppError("invalid_request", parsed.error.issues.map((issue) => issue.message).join("; "));
      const account = presentAccount(engine.updateAccount(principal, account_id, parsed.data));
      return { structured: account, text: `Updated. ${describeAccount(account)}` };
    },
  }),
  defineTool({
    name: "create_sign_in_link",
    title: "Create a sign-in link",
    description:
      "Makes a live-browser link (valid 30 minutes, no login needed) where the account's owner signs in by hand, challenges included; the session is then saved and the account connected. " +
      "Use it for an account without a password, after signed_out, or to clear an account_blocked checkpoint. Free. Give the url to the owner; follow with list_accounts (status connected).",
    input: z.strictObject({ account_id: accountId }),
    output: z.object({ url: z.url(), expires_at: z.iso.datetime() }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    handle({ account_id }, { engine, principal }) {
      const link = engine.createSignInLink(principal, account_id);
      return { structured: link, text: `Sign-in link for account ${account_id} (open it in a browser; valid until ${link.expires_at}): ${link.url}` };
    },
  }),
  defineTool({
    name: "list_accounts",
    title: "List accounts",
    description: "Lists the connected accounts this key may use: id, platform, username, status (new, connected, signed_out) and whether a password or TOTP secret is stored (never the secret).",
    input: z.strictObject({}),
    output: listOf(AccountJson),
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    handle(_args, { engine, principal }) {
      const data = engine.listAccounts(principal).map(presentAccount);
      return { structured: { data }, text: data.length === 0 ? "No accounts yet: add one with connect_account." : data.map(describeAccount).join("\n") };
    },
  }),
];
