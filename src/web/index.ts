import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { html } from "hono/html";
import { AppError } from "../domain/errors.js";
import type { Logger } from "../engine/logger.js";
import { asAppError } from "../engine/request-errors.js";
import { APP_CSS, APP_JS } from "./assets.js";
import { page } from "./layout.js";
import { accountRoutes } from "./pages/accounts.js";
import { actionRoutes } from "./pages/actions.js";
import { creditRoutes } from "./pages/credits.js";
import { keyRoutes } from "./pages/keys.js";
import { routineRoutes } from "./pages/routines.js";
import { signInRoutes } from "./pages/sign-in.js";
import { eventRoutes } from "./live.js";
import { eventPages } from "./pages/events.js";
import { requireSession, sameOrigin, secureHeaders, wantsJson, type WebEnv, type WebOptions } from "./session.js";

const ERROR_TITLES: Partial<Record<string, string>> = {
  not_found: "Not found",
  forbidden: "Not allowed",
  too_many_requests: "Too many requests",
  malformed_request: "Bad request",
  invalid_request: "Not valid",
  conflict: "Not now",
  service_unavailable: "Busy",
};

/**
 * The web app (DESIGN §12) at `/app`: server-rendered pages over the same engine as REST and MCP,
 * signed in with a session cookie bound to an API key.
 */
export function mountWebApp(app: Hono, options: WebOptions & { logger: Logger }): void {
  const { engine, logger } = options;
  const web = new Hono<WebEnv>();
  web.use("*", secureHeaders, sameOrigin(options.policy));
  web.use("*", bodyLimit({ maxSize: 64 * 1024, onError: () => { throw new AppError("malformed_request", "The form is too large."); } }));
  web.get("/assets/app.css", (c) => asset(c, APP_CSS, "text/css; charset=utf-8"));
  web.get("/assets/app.js", (c) => asset(c, APP_JS, "text/javascript; charset=utf-8"));
  signInRoutes(web, options);

  web.use("*", requireSession(options));
  web.get("/", (c) => c.redirect("/app/actions", 303));
  actionRoutes(web, engine);
  routineRoutes(web, engine);
  accountRoutes(web, engine);
  creditRoutes(web, engine);
  keyRoutes(web, engine);
  eventRoutes(web, engine);
  eventPages(web, engine);
  web.all("*", () => {
    throw new AppError("not_found", "There is no such page.");
  });

  web.onError((error, c) => {
    const known = asAppError(error);
    if (!known) logger.error({ err: error, method: c.req.method, path: c.req.path }, "web app request failed");
    const message = known?.message ?? "Something went wrong on our side; try again.";
    const code = known?.code ?? "internal_error";
    const statusCode = (known?.httpStatus ?? 500) as 500;
    if (known?.code === "too_many_requests" && typeof known.details?.retry_after === "number") c.header("Retry-After", String(known.details.retry_after));
    if (wantsJson(c)) return c.json({ error: { code, message: message, ...(known?.details ? { details: known.details } : {}) } }, statusCode);
    const viewer = c.get("viewer");
    return c.html(
      page({
        title: ERROR_TITLES[code] ?? "Something went wrong",
        viewer,
        body: html`<section class="card"><h1>${ERROR_TITLES[code] ?? "Something went wrong"}</h1><p class="error" role="alert">${message}</p><p><a href="${viewer ? "/app/actions" : "/app/sign-in"}">Back to the app</a></p></section>`,
      }),
      statusCode,
    );
  });

  app.get("/app/", (c) => c.redirect("/app", 301));
  app.route("/app", web);
}

function asset(c: Context, body: string, type: string): Response {
  // Versioned by their hash in the page (`?v=`): safe to keep.
  c.header("Cache-Control", "public, max-age=31536000, immutable");
  return c.body(body, 200, { "Content-Type": type });
}
