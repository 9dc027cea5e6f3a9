import { Hono, type Context } from "hono";
import { z } from "zod";
import { isBase32Secret, newTotpSecret } from "../challenges.js";
import type { SandboxDeps } from "../http.js";
import { CHALLENGE_KINDS, type Post, type User } from "../state.js";

const NewUserBody = z.strictObject({
  handle: z.string().regex(/^[a-z0-9_]{2,30}$/, "2–30 lower-case letters, digits or underscores"),
  name: z.string().trim().min(1).max(80),
  password: z.string().min(1).max(200),
  challenge: z.enum(CHALLENGE_KINDS),
  totp_secret: z.string().refine(isBase32Secret, "a base32 secret of at least 16 characters").optional(),
  headline: z.string().max(200).optional(),
  email: z.email().optional(),
  phone: z.string().regex(/^\+?[0-9 ()-]{6,20}$/).optional(),
  sms_url: z.url({ protocol: /^https?$/ }).max(2000).optional(),
  security_question: z.string().trim().min(1).max(200).optional(),
  security_answer: z.string().trim().min(1).max(200).optional(),
  messaging: z.boolean().optional(),
});

const ApproveBody = z.strictObject({ handle: z.string().min(1) });

const SettingsBody = z.strictObject({
  redesign: z.boolean().optional(),
  rate_limit: z.strictObject({
    max: z.number().int().min(1).max(1_000_000),
    window_seconds: z.number().int().min(1).max(86_400),
  }).optional(),
  response_delay_ms: z.number().int().min(0).max(60_000).optional(),
  profile_reworded: z.boolean().optional(),
});

type JsonError = { status: 400 | 404 | 409 | 413 | 422; code: string; message: string; details?: unknown };

function fail(c: Context, error: JsonError): Response {
  const body = { error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) } };
  return c.json(body, error.status);
}

/** Reads and validates a JSON body: 400 when it is not JSON, 422 when its shape is wrong. */
async function readBody<T>(c: Context, schema: z.ZodType<T>): Promise<T | Response> {
  let json: unknown;
  try {
    json = await c.req.json();
  } catch {
    return fail(c, { status: 400, code: "malformed_request", message: "The body must be valid JSON." });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const details = parsed.error.issues.map((issue) => ({ path: issue.path.join("."), message: issue.message }));
    return fail(c, { status: 422, code: "invalid_request", message: "The body has the wrong shape.", details });
  }
  return parsed.data;
}

function userJson(user: User) {
  return {
    handle: user.handle, name: user.name, headline: user.headline, bio: user.bio, challenge: user.challenge, email: user.email, phone: user.phone,
    ...(user.smsUrl !== undefined ? { sms_url: user.smsUrl } : {}), messaging: user.messaging, ...(user.security ? { security_question: user.security.question } : {}),
  };
}

function postJson(post: Post) {
  return { id: post.id, author: post.author, text: post.text, created_at: post.createdAt.toISOString() };
}

/** The control API of DESIGN §9 (JSON, no auth); mounted at /_sandbox and never linked from pages. */
export function controlRoutes(deps: SandboxDeps): Hono {
  const { state, sessions } = deps;
  const app = new Hono();
  const unknownUser = (c: Context, handle: string) =>
    fail(c, { status: 404, code: "not_found", message: `No user with the handle ${handle}.` });
  const settingsJson = () => ({
    redesign: state.settings.redesign,
    rate_limit: { max: state.settings.rateLimit.max, window_seconds: state.settings.rateLimit.windowSeconds },
    response_delay_ms: state.settings.responseDelayMs,
    profile_reworded: state.settings.profileReworded,
  });

  app.post("/users", async (c) => {
    const body = await readBody(c, NewUserBody);
    if (body instanceof Response) return body;
    const totpSecret = body.challenge === "totp" ? (body.totp_secret ?? newTotpSecret()) : body.totp_secret;
    const user = state.addUser({
      handle: body.handle, name: body.name, password: body.password, challenge: body.challenge,
      ...(body.headline !== undefined ? { headline: body.headline } : {}),
      ...(totpSecret !== undefined ? { totpSecret: totpSecret.replace(/\s+/g, "").toUpperCase() } : {}),
      ...(body.email !== undefined ? { email: body.email } : {}),
      ...(body.phone !== undefined ? { phone: body.phone } : {}),
      ...(body.sms_url !== undefined ? { smsUrl: body.sms_url } : {}),
      ...(body.security_question !== undefined ? { securityQuestion: body.security_question } : {}),
      ...(body.security_answer !== undefined ? { securityAnswer: body.security_answer } : {}),
      ...(body.messaging !== undefined ? { messaging: body.messaging } : {}),
    });
    if (!user) return fail(c, { status: 409, code: "conflict", message: `The handle ${body.handle} is taken.` });
    return c.json({ ...userJson(user), ...(user.totpSecret ? { totp_secret: user.totpSecret } : {}) }, 201);
  });

  app.get("/outbox", (c) => {
    const to = c.req.query("to");
    if (to !== undefined && !state.users.has(to.toLowerCase())) return unknownUser(c, to);
    // A mailed sign-in link carries `link` where a code carries `code`.
    const entries = state.outboxFor(to?.toLowerCase()).map((entry) => ({
      channel: entry.channel, to: entry.to,
      ...(entry.link !== undefined ? { link: entry.link } : { code: entry.code }),
      ...(entry.subject !== undefined ? { subject: entry.subject } : {}),
      text: entry.text, sent_at: entry.sentAt.toISOString(),
    }));
    return c.json(entries);
  });

  app.post("/devices/approve", async (c) => {
    const body = await readBody(c, ApproveBody);
    if (body instanceof Response) return body;
    const handle = body.handle.toLowerCase();
    if (!state.users.has(handle)) return unknownUser(c, body.handle);
    const approved = sessions.approveDevice(handle);
    if (approved === 0) return fail(c, { status: 404, code: "not_found", message: `No device sign-in of ${handle} is waiting for approval.` });
    return c.json({ handle, approved });
  });

  app.get("/settings", (c) => c.json(settingsJson()));

  app.post("/settings", async (c) => {
    const body = await readBody(c, SettingsBody);
    if (body instanceof Response) return body;
    if (body.redesign !== undefined) state.settings.redesign = body.redesign;
    if (body.rate_limit) state.settings.rateLimit = { max: body.rate_limit.max, windowSeconds: body.rate_limit.window_seconds };
    if (body.response_delay_ms !== undefined) state.settings.responseDelayMs = body.response_delay_ms;
    if (body.profile_reworded !== undefined) state.settings.profileReworded = body.profile_reworded;
    return c.json(settingsJson());
  });

  app.post("/users/:handle/sessions/expire", (c) => {
    const handle = c.req.param("handle").toLowerCase();
    if (!state.users.has(handle)) return unknownUser(c, handle);
    return c.json({ handle, expired: sessions.expireUser(handle) });
  });

  // The platform restricts a user the way a real one does mid-life: its sessions end and every later sign-in meets the checkpoint.
  app.post("/users/:handle/restrict", (c) => {
    const handle = c.req.param("handle").toLowerCase();
    const user = state.users.get(handle);
    if (!user) return unknownUser(c, handle);
    user.challenge = "checkpoint";
    return c.json({ handle, challenge: user.challenge, expired: sessions.expireUser(handle) });
  });

  app.post("/users/:handle/devices/forget", (c) => {
    const handle = c.req.param("handle").toLowerCase();
    if (!state.users.has(handle)) return unknownUser(c, handle);
    return c.json({ handle, forgotten: sessions.forgetDevices(handle) });
  });

  app.get("/posts", (c) => {
    const author = c.req.query("author");
    if (author !== undefined && !state.users.has(author.toLowerCase())) return unknownUser(c, author);
    return c.json(state.listPosts(author?.toLowerCase()).map(postJson));
  });

  return app;
}
