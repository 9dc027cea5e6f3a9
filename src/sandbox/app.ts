import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { createCourier } from "./courier.js";
import type { DkimKey } from "./dkim.js";
import { errorPage, formMiddleware, sessionMiddleware, type SandboxDeps, type SandboxEnv } from "./http.js";
import { registerAuthRoutes } from "./routes/auth.js";
import { controlRoutes } from "./routes/control.js";
import { registerFeedRoutes } from "./routes/feed.js";
import { registerMessageRoutes } from "./routes/messages.js";
import { registerPeopleRoutes } from "./routes/people.js";
import { seedSandbox } from "./seed.js";
import { SessionStore } from "./sessions.js";
import { SandboxState } from "./state.js";

/** Largest request body the sandbox reads (forms and control API): above it, a 413. */
export const MAX_BODY_BYTES = 64 * 1024;
const CONTROL_PREFIX = "/_sandbox";

export interface SandboxAppOptions {
  /** Injected clock; default real time. */
  clock?: () => Date;
  /** Called with any error that reached the 500 page (default: ignored). */
  onError?: (error: unknown) => void;
  /** `smtp://host:port`: also mail each code and sign-in link to the user's e-mail (`SANDBOX_SMTP_URL`); unset, they only reach the outbox. */
  smtpUrl?: string | undefined;
  /** DKIM-signs the mails for sandbox.localhost (`SANDBOX_DKIM_KEY`); unset, they go unsigned. */
  dkim?: DkimKey | undefined;
  /** Called with each mail or text that could not be delivered (default: ignored; the outbox has it anyway). */
  onDeliveryFailure?: (error: unknown, channel: "email" | "sms") => void;
  /** The sandbox's origin, e.g. http://127.0.0.1:8788, for the sign-in links it mails; default the origin each request came to. */
  origin?: string | undefined;
}

const isControl = (path: string) => path === CONTROL_PREFIX || path.startsWith(`${CONTROL_PREFIX}/`);

/** The sandbox web app with freshly seeded in-memory state. */
export function createSandboxApp(options: SandboxAppOptions = {}): Hono<SandboxEnv> {
  const clock = options.clock ?? (() => new Date());
  const state = new SandboxState(clock);
  seedSandbox(state);
  const courier = createCourier({ smtpUrl: options.smtpUrl, dkim: options.dkim, onFailure: options.onDeliveryFailure });
  const deps: SandboxDeps = { state, sessions: new SessionStore(clock), clock, courier, origin: options.origin };

  const app = new Hono<SandboxEnv>();
  app.use("*", bodyLimit({
    maxSize: MAX_BODY_BYTES,
    onError: (c) => isControl(c.req.path)
      ? c.json({ error: { code: "payload_too_large", message: `The body is larger than ${MAX_BODY_BYTES} bytes.` } }, 413)
      : errorPage(c, 413, deps),
  }));
  app.route(CONTROL_PREFIX, controlRoutes(deps));

  const session = sessionMiddleware(deps);
  const form = formMiddleware();
  app.use("*", async (c, next) => (isControl(c.req.path) ? next() : session(c, next)));
  app.use("*", async (c, next) => (isControl(c.req.path) ? next() : form(c, next)));
  // A slow platform: the form has done its work, the answer comes late.
  app.use("*", async (c, next) => {
    await next();
    const delay = deps.state.settings.responseDelayMs;
    if (delay > 0 && c.req.method === "POST" && !isControl(c.req.path)) await new Promise((resolve) => setTimeout(resolve, delay));
  });

  registerFeedRoutes(app, deps);
  registerAuthRoutes(app, deps);
  registerPeopleRoutes(app, deps);
  registerMessageRoutes(app, deps);

  app.notFound((c) => isControl(c.req.path)
    ? c.json({ error: { code: "not_found", message: "No such control endpoint." } }, 404)
    : errorPage(c, 404, deps));
  app.onError((error, c) => {
    options.onError?.(error);
    return isControl(c.req.path)
      ? c.json({ error: { code: "internal_error", message: "Something went wrong." } }, 500)
      : errorPage(c, 500, deps);
  });
  return app;
}
