import { createHash, timingSafeEqual } from "node:crypto";
import type { Principal } from "../../domain/keys.js";
import { randomToken } from "../../store/crypto.js";
import type { EngineCore } from "../core.js";
import { authenticate } from "./keys.js";

/** A session ends after this long unused… */
export const SESSION_IDLE_MS = 60 * 60 * 1000;
/** …and at the latest this long after sign-in, however much it is used. */
export const SESSION_MAX_MS = 12 * 60 * 60 * 1000;
/** Use is written at most this often, so reading pages does not write on every request. */
const TOUCH_EVERY_MS = 60 * 1000;

/** A signed-in web app session (DESIGN §12): the key's principal as it is now, and the form token. */
export interface WebSession {
  principal: Principal;
  /** Sent back in every form and script request that changes something (CSRF). */
  csrfToken: string;
  keyPrefix: string;
  workspaceName: string;
  expiresAt: string;
}

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/**
 * Exchanges an API key for a session token (the cookie's value); the key itself is not kept.
 * Undefined when the key is not valid.
 */
export async function openWebSession(core: EngineCore, key: string): Promise<{ token: string; expiresAt: string } | undefined> {
  const principal = await authenticate(core.store, key.trim());
  if (!principal?.keyId) return undefined;
  const token = randomToken(32);
  const now = core.lifecycle.clock.now();
  const expiresAt = new Date(now.getTime() + SESSION_IDLE_MS).toISOString();
  await core.store.webSessions.insert(token, { key_id: principal.keyId, created_at: now.toISOString(), expires_at: expiresAt });
  return { token, expiresAt };
}

/** The session a cookie names, while it is unexpired and its key unrevoked; using it extends its idle deadline. */
export async function webSession(core: EngineCore, token: string): Promise<WebSession | undefined> {
  if (!TOKEN_SHAPE.test(token)) return undefined;
  const now = core.lifecycle.clock.now();
  const record = await core.store.webSessions.byToken(token, now.toISOString());
  if (!record) return undefined;
  const end = Math.min(now.getTime() + SESSION_IDLE_MS, Date.parse(record.created_at) + SESSION_MAX_MS);
  let expiresAt = record.expires_at;
  if (now.getTime() - Date.parse(record.last_seen_at) >= TOUCH_EVERY_MS) {
    expiresAt = new Date(end).toISOString();
    await core.store.webSessions.touch(token, now.toISOString(), expiresAt);
  }
  return {
    principal: { workspaceId: record.workspace_id, keyId: record.key_id, role: record.role, accountIds: record.account_ids },
    csrfToken: csrfTokenOf(token),
    keyPrefix: record.key_prefix,
    workspaceName: record.workspace_name,
    expiresAt,
  };
}

export async function closeWebSession(core: EngineCore, token: string): Promise<void> {
  if (TOKEN_SHAPE.test(token)) await core.store.webSessions.delete(token);
}

/** Whether `given` is the form token of the session `token`. */
export function csrfTokenMatches(token: string, given: string): boolean {
  const expected = Buffer.from(csrfTokenOf(token));
  const actual = Buffer.from(given);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Derived from the session token (which never leaves the HttpOnly cookie), so nothing more is stored. */
function csrfTokenOf(token: string): string {
  return createHash("sha256").update(`csrf\0${token}`).digest("base64url");
}

/** Web app sessions (DESIGN §12): an API key exchanged for a cookie's token. */
export class WebSessions {
  constructor(private readonly core: EngineCore) {}

  /** Exchanges an API key for a web session token; undefined when the key is not valid. */
  open(key: string): Promise<{ token: string; expiresAt: string } | undefined> {
    return openWebSession(this.core, key);
  }
  get(token: string): Promise<WebSession | undefined> {
    return webSession(this.core, token);
  }
  close(token: string): Promise<void> {
    return closeWebSession(this.core, token);
  }
  csrfTokenMatches(sessionToken: string, given: string): boolean {
    return csrfTokenMatches(sessionToken, given);
  }
}
