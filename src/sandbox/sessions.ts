import type { Captcha } from "./challenges.js";
import { randomToken, type ChallengeKind } from "./state.js";

export const SESSION_COOKIE = "sbx_session";
export const DEVICE_COOKIE = "sbx_device";
export const SESSION_LIFETIME_SECONDS = 30 * 24 * 3600;
export const DEVICE_LIFETIME_SECONDS = 365 * 24 * 3600;
/** A sign-in waiting at its challenge step is dropped after this long. */
export const PENDING_LIFETIME_MS = 30 * 60 * 1000;
const MAX_SESSIONS = 50_000;

/** A sign-in that passed the password and waits at its challenge step. */
export interface PendingSignIn {
  handle: string;
  kind: Exclude<ChallengeKind, "none">;
  next?: string;
  startedAt: Date;
  attempts: number;
  code?: { value: string; expiresAt: Date };
  /** The one-time sign-in link mailed to a `magic_link` user: the token at its path's end. */
  link?: { token: string; expiresAt: Date };
  /** "Remember this device", ticked on a page whose answer arrives elsewhere (the mailed link). */
  remember?: boolean;
  deviceApproved: boolean;
  captcha?: Captcha;
}

/** A one-time message for the next page: a confirmation, or why the person was sent there. */
export interface Flash { tone: "notice" | "error"; text: string }

/** A browser's session: anonymous until sign-in, then bound to one user. */
export interface Session {
  id: string;
  csrf: string;
  handle?: string;
  createdAt: Date;
  pending?: PendingSignIn;
  /** A one-time notice shown on the next page. */
  flash?: Flash;
}

/** Server-side sessions and remembered devices, in memory. */
export class SessionStore {
  private readonly sessions = new Map<string, Session>();
  /** Device token (the long-lived cookie) → handles that skip their challenge on it. */
  private readonly devices = new Map<string, Set<string>>();

  constructor(private readonly clock: () => Date) {}

  get(id: string | undefined): Session | undefined {
    if (!id) return undefined;
    const session = this.sessions.get(id);
    if (!session) return undefined;
    if (this.clock().getTime() - session.createdAt.getTime() > SESSION_LIFETIME_SECONDS * 1000) {
      this.sessions.delete(id);
      return undefined;
    }
    return session;
  }

  createAnonymous(): Session {
    this.pruneIfFull();
    const session: Session = { id: randomToken(), csrf: randomToken(), createdAt: this.clock() };
    this.sessions.set(session.id, session);
    return session;
  }

  /** Replaces the anonymous session by a signed-in one (a new id, so a planted id is useless). */
  signIn(previous: Session, handle: string): Session {
    this.sessions.delete(previous.id);
    const session: Session = { id: randomToken(), csrf: randomToken(), handle, createdAt: this.clock() };
    this.sessions.set(session.id, session);
    return session;
  }

  end(session: Session): void {
    this.sessions.delete(session.id);
  }

  /** Signs out every session of a user; remembered devices are kept. */
  expireUser(handle: string): number {
    let count = 0;
    for (const [id, session] of this.sessions) {
      if (session.handle === handle) {
        this.sessions.delete(id);
        count++;
      }
    }
    return count;
  }

  /** Forgets every device remembered for the user (its next sign-in meets its challenge again); returns how many. */
  forgetDevices(handle: string): number {
    let count = 0;
    for (const handles of this.devices.values()) if (handles.delete(handle)) count++;
    return count;
  }

  /** Approves every device sign-in of the user that waits for approval; returns how many. */
  approveDevice(handle: string): number {
    let count = 0;
    for (const session of this.sessions.values()) {
      const pending = session.pending;
      if (pending?.handle === handle && pending.kind === "device" && !pending.deviceApproved && this.isLive(pending)) {
        pending.deviceApproved = true;
        count++;
      }
    }
    return count;
  }

  /** Whether some session's sign-in waits for this sign-in link (to tell a link opened elsewhere from a dead one). */
  isWaitingForLink(token: string): boolean {
    for (const session of this.sessions.values()) {
      const pending = session.pending;
      if (pending?.link?.token === token && this.isLive(pending) && pending.link.expiresAt.getTime() >= this.clock().getTime()) return true;
    }
    return false;
  }

  isLive(pending: PendingSignIn): boolean {
    return this.clock().getTime() - pending.startedAt.getTime() <= PENDING_LIFETIME_MS;
  }

  /** Remembers the device for the user; returns the device token to keep in the cookie. */
  remember(token: string | undefined, handle: string): string {
    const known = token !== undefined ? this.devices.get(token) : undefined;
    if (known && token !== undefined) {
      known.add(handle);
      return token;
    }
    const fresh = randomToken();
    this.devices.set(fresh, new Set([handle]));
    return fresh;
  }

  isRemembered(token: string | undefined, handle: string): boolean {
    return token !== undefined && (this.devices.get(token)?.has(handle) ?? false);
  }

  /** Keeps memory bounded when something creates sessions without end: drops the oldest anonymous ones. */
  private pruneIfFull(): void {
    if (this.sessions.size < MAX_SESSIONS) return;
    let toDrop = Math.ceil(MAX_SESSIONS / 10);
    for (const [id, session] of this.sessions) {
      if (toDrop === 0) break;
      if (session.handle === undefined) {
        this.sessions.delete(id);
        toDrop--;
      }
    }
  }
}
