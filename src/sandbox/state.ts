import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/** How a user's sign-in is challenged after the password. */
export const CHALLENGE_KINDS = ["none", "totp", "email", "sms", "device", "captcha", "question", "checkpoint", "magic_link"] as const;
export type ChallengeKind = (typeof CHALLENGE_KINDS)[number];

/** What a `question` user is asked when created without a question of their own. */
export const DEFAULT_SECURITY_QUESTION = "What was the name of your first pet?";
export const DEFAULT_SECURITY_ANSWER = "biscuit";

export const POST_MAX_LENGTH = 500;
export const MESSAGE_MAX_LENGTH = 2000;
/** The outbox keeps this many entries (oldest dropped first). */
const MAX_OUTBOX = 5000;

/** A member of the sandbox network. */
export interface User {
  handle: string;
  name: string;
  headline: string;
  /** What the person wrote about themselves on their profile page (`/settings/profile`); empty until then. */
  bio: string;
  passwordDigest: Buffer;
  challenge: ChallengeKind;
  totpSecret?: string;
  /** The last TOTP time step accepted for this user: that step and older ones are refused. */
  lastTotpStep?: number;
  /** The security question and its answer (asked by the `question` challenge). */
  security?: { question: string; answer: string };
  /** Whether the account has direct messages; without them every messages page says so. */
  messaging: boolean;
  email: string;
  phone: string;
  /** Where the user's texts are posted, like a phone's forwarding rule (DESIGN §15); without it they only reach the outbox. */
  smsUrl?: string;
  createdAt: Date;
}

export interface NewUser {
  handle: string;
  name: string;
  password: string;
  challenge: ChallengeKind;
  headline?: string;
  totpSecret?: string;
  email?: string;
  phone?: string;
  smsUrl?: string;
  securityQuestion?: string;
  securityAnswer?: string;
  /** Default true. */
  messaging?: boolean;
}

export interface Post { id: string; author: string; text: string; createdAt: Date }
export interface Conversation { id: string; participants: readonly [string, string]; createdAt: Date }
export interface Message { id: string; conversationId: string; from: string; text: string; sentAt: Date }
/** A sign-in code or link "sent" to a user; a mail also has its subject. */
export type OutboxEntry = { channel: "email" | "sms"; to: string; subject?: string; text: string; sentAt: Date }
  & ({ code: string; link?: never } | { link: string; code?: never });
export interface RateLimitSettings { max: number; windowSeconds: number }
/** `responseDelayMs`: a slow platform — every form it handles answers this much later (the change is already made). */
/** `profileReworded`: the profile form's wording changed (heading, label, button), as a redesign of that one page would. */
export interface Settings { redesign: boolean; rateLimit: RateLimitSettings; responseDelayMs: number; profileReworded: boolean }

export type TextRefusal = "empty" | "too_long" | "duplicate";
export type PostResult = { ok: true; post: Post } | { ok: false; reason: TextRefusal };

const ID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/** A random lower-case id (posts, conversations, messages): not guessable, not sequential. */
export function randomId(length = 12): string {
  const bytes = randomBytes(length);
  let id = "";
  for (const byte of bytes) id += ID_ALPHABET[byte % ID_ALPHABET.length];
  return id;
}

/** A random opaque token for cookies and CSRF (192 bits). */
export function randomToken(): string {
  return randomBytes(24).toString("base64url");
}

function digest(password: string): Buffer {
  return createHash("sha256").update(`sandbox:${password}`).digest();
}

/** Everything the sandbox knows except sessions: users, posts, conversations, outbox, settings. */
export class SandboxState {
  readonly users = new Map<string, User>();
  private readonly posts: Post[] = [];
  private readonly conversations = new Map<string, Conversation>();
  private readonly messages: Message[] = [];
  private readonly outbox: OutboxEntry[] = [];
  private readonly actionLog = new Map<string, number[]>();
  settings: Settings = { redesign: false, rateLimit: { max: 1000, windowSeconds: 60 }, responseDelayMs: 0, profileReworded: false };

  constructor(readonly clock: () => Date) {}

  addUser(input: NewUser): User | undefined {
    const handle = input.handle.toLowerCase();
    if (this.users.has(handle)) return undefined;
    const user: User = {
      handle,
      name: input.name,
      headline: input.headline ?? "",
      bio: "",
      passwordDigest: digest(input.password),
      challenge: input.challenge,
      messaging: input.messaging ?? true,
      email: input.email ?? `${handle}@sandbox.example`,
      phone: input.phone ?? fakePhone(handle),
      createdAt: this.clock(),
    };
    if (input.totpSecret !== undefined) user.totpSecret = input.totpSecret;
    if (input.smsUrl !== undefined) user.smsUrl = input.smsUrl;
    if (input.challenge === "question" || input.securityQuestion !== undefined || input.securityAnswer !== undefined) {
      user.security = {
        question: input.securityQuestion ?? DEFAULT_SECURITY_QUESTION,
        answer: input.securityAnswer ?? DEFAULT_SECURITY_ANSWER,
      };
    }
    this.users.set(handle, user);
    return user;
  }

  /** Finds a user by handle (any case), or by e-mail address. */
  findUser(handleOrEmail: string): User | undefined {
    const key = handleOrEmail.trim().toLowerCase();
    const byHandle = this.users.get(key.startsWith("@") ? key.slice(1) : key);
    if (byHandle) return byHandle;
    for (const user of this.users.values()) if (user.email.toLowerCase() === key) return user;
    return undefined;
  }

  passwordMatches(user: User, password: string): boolean {
    return timingSafeEqual(user.passwordDigest, digest(password));
  }

  createPost(author: string, rawText: string, at: Date = this.clock()): PostResult {
    const text = rawText.trim();
    const refusal = checkText(text, POST_MAX_LENGTH);
    if (refusal) return { ok: false, reason: refusal };
    if (this.posts.some((post) => post.author === author && post.text === text)) return { ok: false, reason: "duplicate" };
    const post: Post = { id: randomId(), author, text, createdAt: at };
    this.posts.push(post);
    return { ok: true, post };
  }

  /** Posts newest first, optionally only one author's. */
  listPosts(author?: string, limit = Infinity): Post[] {
    const posts = this.posts.filter((post) => author === undefined || post.author === author);
    return posts.reverse().slice(0, limit);
  }

  findPost(id: string): Post | undefined {
    return this.posts.find((post) => post.id === id);
  }

  findConversation(id: string): Conversation | undefined {
    return this.conversations.get(id);
  }

  conversationBetween(a: string, b: string): Conversation | undefined {
    for (const conversation of this.conversations.values()) {
      const [x, y] = conversation.participants;
      if ((x === a && y === b) || (x === b && y === a)) return conversation;
    }
    return undefined;
  }

  /** A user's conversations, the one with the latest message first. */
  conversationsOf(handle: string): Conversation[] {
    const latest = (conversation: Conversation) =>
      this.messagesIn(conversation.id).at(-1)?.sentAt.getTime() ?? conversation.createdAt.getTime();
    return [...this.conversations.values()]
      .filter((conversation) => conversation.participants.includes(handle))
      .sort((a, b) => latest(b) - latest(a));
  }

  /** Messages of a conversation, oldest first. */
  messagesIn(conversationId: string): Message[] {
    return this.messages.filter((message) => message.conversationId === conversationId);
  }

  /** Sends a message from one user to another, opening their conversation if there is none. */
  sendMessage(from: string, to: string, rawText: string, at: Date = this.clock()):
    { ok: true; conversation: Conversation; message: Message } | { ok: false; reason: TextRefusal } {
    const text = rawText.trim();
    const refusal = checkText(text, MESSAGE_MAX_LENGTH);
    if (refusal) return { ok: false, reason: refusal };
    let conversation = this.conversationBetween(from, to);
    if (!conversation) {
      conversation = { id: randomId(), participants: [from, to], createdAt: at };
      this.conversations.set(conversation.id, conversation);
    }
    const message: Message = { id: randomId(), conversationId: conversation.id, from, text, sentAt: at };
    this.messages.push(message);
    return { ok: true, conversation, message };
  }

  /** "Sends" a sign-in code by e-mail or text message: it lands in the outbox (and is mailed or texted by the caller). */
  deliverCode(user: User, channel: "email" | "sms", code: string): OutboxEntry {
    const entry: OutboxEntry = channel === "email"
      ? {
        channel, to: user.handle, code, subject: `Your Sandbox Social code is ${code}`, sentAt: this.clock(),
        text: `Your Sandbox Social sign-in code is ${code}. It expires in 10 minutes. If you didn't try to sign in, ignore this email.`,
      }
      : { channel, to: user.handle, code, text: `Your Sandbox Social code is ${code}. It expires in 10 minutes.`, sentAt: this.clock() };
    return this.keep(entry);
  }

  /** "Sends" a one-time sign-in link by e-mail (a `magic_link` user): it lands in the outbox. */
  deliverLink(user: User, link: string): OutboxEntry {
    return this.keep({
      channel: "email", to: user.handle, link, subject: "Sign in to Sandbox Social", sentAt: this.clock(),
      text: `Hi ${user.name},\n\nOpen this link to sign in to Sandbox Social:\n\n${link}\n\n`
        + "It works once, in the browser you signed in from, and expires in 10 minutes. If you didn't try to sign in, ignore this email.",
    });
  }

  private keep(entry: OutboxEntry): OutboxEntry {
    this.outbox.push(entry);
    if (this.outbox.length > MAX_OUTBOX) this.outbox.shift();
    return entry;
  }

  /** Outbox entries newest first, optionally for one user. */
  outboxFor(handle?: string): OutboxEntry[] {
    return this.outbox.filter((entry) => handle === undefined || entry.to === handle).reverse();
  }

  /**
   * Counts one rate-limited action of a user (see docs/sandbox.md for what counts). Refused
   * actions are not counted, so the user can act again once the window has moved on.
   */
  takeAction(handle: string): { ok: true } | { ok: false; retryAfterSeconds: number } {
    const now = this.clock().getTime();
    const { max, windowSeconds } = this.settings.rateLimit;
    const windowStart = now - windowSeconds * 1000;
    const recent = (this.actionLog.get(handle) ?? []).filter((at) => at > windowStart);
    if (recent.length >= max) {
      this.actionLog.set(handle, recent);
      const oldest = recent[0] ?? now;
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((oldest - windowStart) / 1000)) };
    }
    recent.push(now);
    this.actionLog.set(handle, recent);
    return { ok: true };
  }
}

function checkText(text: string, maxLength: number): TextRefusal | undefined {
  if (text.length === 0) return "empty";
  if ([...text].length > maxLength) return "too_long";
  return undefined;
}

function fakePhone(handle: string): string {
  const n = createHash("sha256").update(handle).digest().readUInt16BE(0) % 10000;
  return `+1 202 555 ${String(n).padStart(4, "0")}`;
}
