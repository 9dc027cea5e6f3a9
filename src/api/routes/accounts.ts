import { z } from "zod";
import { AccountJson, MessageJson, listOf } from "../../domain/public.js";
import { CreateAccountInput, UpdateAccountInput } from "../../engine/accounts/index.js";
import { PushMessageInput } from "../../engine/inbox/index.js";
import { presentMessage } from "../../engine/present/index.js";
import { defineRoute } from "../route.js";
import { errorResponses } from "./common.js";

const IdParams = z.strictObject({ id: z.string().min(1).max(200) });

export const accountRoutes = [
  defineRoute({
    method: "post",
    path: "/v1/accounts",
    tag: "accounts",
    summary: "Add an account",
    description:
      "Stores the credentials encrypted; they are never returned. Without a password, the owner signs in by hand through a sign-in link. Run a `connect` action to sign in.",
    body: CreateAccountInput,
    responses: { 201: { description: "The account.", schema: AccountJson }, ...errorResponses(400, 401, 403, 422, 429) },
    async handle({ principal, body, engine }) {
      return { status: 201, body: await engine.presentAccount(principal, await engine.accounts.create(principal, body)) };
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/accounts",
    tag: "accounts",
    summary: "List accounts",
    responses: { 200: { description: "Every account the key may see.", schema: listOf(AccountJson) }, ...errorResponses(401, 403, 429) },
    async handle({ principal, engine }) {
      return { status: 200, body: { data: await Promise.all((await engine.accounts.list(principal)).map((account) => engine.presentAccount(principal, account))) } };
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/accounts/{id}",
    tag: "accounts",
    summary: "Get an account",
    params: IdParams,
    responses: { 200: { description: "The account.", schema: AccountJson }, ...errorResponses(401, 403, 404, 429) },
    async handle({ principal, params, engine }) {
      return { status: 200, body: await engine.presentAccount(principal, await engine.accounts.get(principal, params.id)) };
    },
  }),
  defineRoute({
    method: "patch",
    path: "/v1/accounts/{id}",
    tag: "accounts",
    summary: "Fix an account's credentials, or change its pace",
    description:
      'Use after login_failed. `totp_secret: null` removes the stored secret. `pace` overrides the platform\'s default paces field by field (`{"pace": {"post": {"per_hour": 2, "per_day": null}}}`: null restores the default); the account shows the pace it runs at.',
    params: IdParams,
    body: UpdateAccountInput,
    responses: { 200: { description: "The account.", schema: AccountJson }, ...errorResponses(400, 401, 403, 404, 422, 429) },
    async handle({ principal, params, body, engine }) {
      return { status: 200, body: await engine.presentAccount(principal, await engine.accounts.update(principal, params.id, body)) };
    },
  }),
  defineRoute({
    method: "delete",
    path: "/v1/accounts/{id}",
    tag: "accounts",
    summary: "Delete an account",
    description: "Deletes its credentials and browser state; its unfinished actions are canceled. Its past actions stay readable.",
    params: IdParams,
    responses: { 204: { description: "Deleted." }, ...errorResponses(401, 403, 404, 429) },
    async handle({ principal, params, engine }) {
      await engine.accounts.delete(principal, params.id);
      return { status: 204 };
    },
  }),
];

accountRoutes.push(
  defineRoute({
    method: "post",
    path: "/v1/accounts/{id}/sign-in-links",
    tag: "accounts",
    summary: "Create an owner sign-in link",
    description:
      "A live-browser link (valid 30 minutes, no service login) on the platform's sign-in page in the account's own browser context. The owner signs in by hand, challenges included; the session is saved encrypted and the account becomes connected. The password never passes through the service.",
    params: IdParams,
    responses: {
      201: { description: "The link; it is shown only in this response.", schema: z.object({ url: z.url(), expires_at: z.iso.datetime() }) },
      ...errorResponses(401, 403, 404, 429),
    },
    async handle({ principal, params, engine }) {
      return { status: 201, body: await engine.live.createSignInLink(principal, params.id) };
    },
  }),
);

// Health checks (DESIGN §16).
accountRoutes.push(
  defineRoute({
    method: "post",
    path: "/v1/accounts/{id}/check",
    tag: "accounts",
    summary: "Check the account's sign-in now",
    description:
      "Queues a check of the account's saved session (after its running action, if any); free. Signed out, it signs in again by itself when no person is needed (a stored password with a TOTP secret, or an inbox that receives the code); otherwise the account becomes needs_auth, or blocked at a checkpoint. Each change is an account.updated event, and so is the end of this check even when nothing changed; `checked_at` moves when the check is done. 409 for an account that has never signed in.",
    params: IdParams,
    responses: { 202: { description: "The check is queued; the account as it is now.", schema: AccountJson }, ...errorResponses(401, 403, 404, 409, 429) },
    async handle({ principal, params, engine }) {
      return { status: 202, body: await engine.presentAccount(principal, await engine.healthChecks.checkNow(principal, params.id)) };
    },
  }),
);

// The inbox (DESIGN §15).
accountRoutes.push(
  defineRoute({
    method: "post",
    path: "/v1/accounts/{id}/inbox/rotate",
    tag: "accounts",
    summary: "Replace the account's inbox address and SMS URL",
    description: "Both are replaced; the old ones stop working at once (mail to the old address is refused with 550, the old SMS URL answers 404).",
    params: IdParams,
    responses: { 200: { description: "The account, with its new inbox.", schema: AccountJson }, ...errorResponses(401, 403, 404, 429) },
    async handle({ principal, params, engine }) {
      return { status: 200, body: await engine.presentAccount(principal, await engine.inbox.rotate(principal, params.id)) };
    },
  }),
  defineRoute({
    method: "post",
    path: "/v1/accounts/{id}/messages",
    tag: "accounts",
    summary: "Push a message to the account's inbox",
    description:
      "A mail or text a person or agent received elsewhere. It answers the account's waiting email_code (channel email) or sms_code (sms) challenge, or one that starts within 10 minutes, with the code or sign-in link found in it; each message at most once.",
    params: IdParams,
    body: PushMessageInput,
    responses: { 202: { description: "Kept; `used_for` names the action it answered, if it answered one now.", schema: MessageJson }, ...errorResponses(400, 401, 403, 404, 422, 429) },
    async handle({ principal, params, body, engine }) {
      return { status: 202, body: presentMessage(await engine.inbox.push(principal, params.id, body)) };
    },
  }),
  defineRoute({
    method: "get",
    path: "/v1/accounts/{id}/messages",
    tag: "accounts",
    summary: "List the account's recent messages",
    description: "The messages its inbox received in the last 24 hours (never their text), newest first, and the action each answered. Admin keys only.",
    params: IdParams,
    responses: { 200: { description: "Its messages.", schema: listOf(MessageJson) }, ...errorResponses(401, 403, 404, 429) },
    async handle({ principal, params, engine }) {
      return { status: 200, body: { data: (await engine.inbox.list(principal, params.id)).map(presentMessage) } };
    },
  }),
);
