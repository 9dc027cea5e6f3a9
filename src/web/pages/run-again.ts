import { html } from "hono/html";
import { AppError } from "../../domain/errors.js";
import type { PublicAction } from "../../domain/public.js";
import { redactedPaths, restoreSecrets } from "../../domain/secret-params.js";
import { csrfField, typeTitle, type Html, type Viewer } from "../layout.js";

/** Form field names of the secrets "Run it again" asks for: `secret.<place in the params>`. */
const SECRET_FIELD = "secret.";

/** What a secret field of "Run it again" is called: the routine's param, or the step it was typed at. */
function secretName(path: string): string {
  const step = /^steps\.(\d+)\.value$/.exec(path);
  return step ? `Secret typed at step ${Number(step[1]) + 1}` : typeTitle(path.replace(/^params\./, ""));
}

/**
 * "Run it again": the same account, type and params, except the secrets, which were never kept:
 * each is an empty password field to type again (required), so "[secret]" is never sent as a value.
 */
export function runAgainForm(action: PublicAction, viewer: Viewer): Html {
  const secrets = redactedPaths(action.type, action.params);
  return html`<form method="post" action="/app/actions" aria-label="Run it again">${csrfField(viewer)}<input type="hidden" name="account_id" value="${action.account_id}"><input type="hidden" name="type" value="${action.type}"><input type="hidden" name="params_json" value="${JSON.stringify(action.params)}">
    ${secrets.length > 0
      ? html`<p class="note" id="again-secrets-note">Its secret values were never kept: type ${secrets.length === 1 ? "it" : "them"} again to run it again.</p>
    ${secrets.map((path, index) => html`<div class="field"><label for="again-secret-${index}">${secretName(path)}</label><input type="password" id="again-secret-${index}" name="${SECRET_FIELD}${path}" required autocomplete="off" aria-describedby="again-secrets-note"></div>`)}`
      : ""}
    <button type="submit" class="secondary">Run it again</button></form>`;
}

/** Params sent again with their secrets typed again (a field each): one left empty is refused, never sent as "[secret]". */
function withSecretsTypedAgain(type: string, params: Record<string, unknown>, get: (name: string) => string): Record<string, unknown> {
  const paths = redactedPaths(type, params);
  const missing = paths.filter((path) => get(SECRET_FIELD + path) === "");
  if (missing.length > 0) {
    throw new AppError("invalid_request", `Its secret values were never kept: type ${missing.map(secretName).join(", ")} again to run it again.`, {
      issues: missing.map((path) => ({ path: `body.params.${path}`, message: "type the secret again" })),
    });
  }
  return restoreSecrets(params, Object.fromEntries(paths.map((path) => [path, get(SECRET_FIELD + path)])));
}

/** The params of "Run it again", their secrets typed again. */
export function againParams(type: string, params: unknown, get: (name: string) => string): unknown {
  return typeof params === "object" && params !== null && !Array.isArray(params) ? withSecretsTypedAgain(type, params as Record<string, unknown>, get) : params;
}
