/**
 * A fresh Ghost site per start: its own SQLite content dir (copied from a migrated pristine one
 * kept in the platform cache), the cached Node 22, 127.0.0.1 on a free port, mail to a local
 * catcher (or to a port given, e.g. the service's inbox), staff device verification on, Ghost's own pings off. The owner is set up through the
 * Admin API and signed in once there, so every later sign-in from a new browser is challenged.
 *
 * What a person sees (observed on this install; screenshots in the findings notes):
 * - `/ghost/` redirects to `/ghost/#/signin`: "Email address" (`identification`) and "Password"
 *   (`password`), submit button "Sign in →". A wrong password answers "Your password is incorrect."
 *   and the submit button then reads "Retry".
 * - A new browser then lands on `/ghost/#/signin/verify`: heading "Verify it's really you", field
 *   "Verification code" (`token`), "Resend", submit "Verify →". A wrong code answers "Your
 *   verification code is incorrect." (the button reads "Retry"); the right one opens `/ghost/#/`.
 * - The mail: subject "NNNNNN is your Ghost sign in verification code", HTML only; setup also sends
 *   "Your New Ghost Site" to the owner.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, cpSync, existsSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { platformCacheDir, platformInstall, type PlatformInstall } from "./install.js";
import { startMailCatcher, type CaughtMail, type MailCatcher } from "./mail-catcher.js";
import { freePort, killGroupOnExit, killProcessGroup, treeRssMiB, waitUntil } from "./processes.js";

/** A mail Ghost sent, as the catcher received it. */
export interface GhostMail { to: string; subject: string; text: string; receivedAt: Date }

/** The staff user who owns the site. */
export interface GhostOwner { name: string; email: string; password: string; slug: string }

/** One running site. */
export interface Ghost {
  /** `http://127.0.0.1:<port>`, no trailing slash; the admin at `${url}/ghost/`. */
  url: string;
  owner: GhostOwner;
  /** Temp dir holding config.production.json, content/ and ghost.log. */
  dir: string;
  /** Every mail the site sent, oldest first. */
  mails(): GhostMail[];
  /**
   * The code of the newest "NNNNNN is your Ghost sign in verification code" mail to `to` (the
   * owner by default) received at or after `after`, waiting up to `timeoutMs` (30 s) for one.
   */
  waitForSignInCode(options: { to?: string; after: Date; timeoutMs?: number }): Promise<string>;
  /**
   * An Admin API call as the owner (a verified session made at setup). `path` is relative to
   * `/ghost/api/admin/` (`posts/?limit=all`) unless it starts with `/ghost/`.
   */
  adminApi(path: string, init?: RequestInit): Promise<Response>;
  /**
   * Changes the owner's e-mail (the address Ghost signs in with and mails its codes to) through the
   * Admin API, as the owner would in their profile; `owner.email` follows.
   */
  setOwnerEmail(email: string): Promise<void>;
  /** Resident memory of the Ghost process, in MiB. */
  rssMiB(): Promise<number | undefined>;
  /** Kills Ghost, closes the mail catcher and removes the temp dir. */
  stop(): Promise<void>;
}

export const GHOST_OWNER: Omit<GhostOwner, "slug"> = { name: "Olive Owner", email: "owner@example.com", password: "Owner-Secret-2468" };
export const SIGN_IN_CODE_SUBJECT = /^(\d{6}) is your Ghost sign in verification code$/;
const BOOT_TIMEOUT_MS = 180_000;

export interface GhostOptions {
  /**
   * Where the site sends its mail instead of the suite's catcher: an SMTP port on 127.0.0.1 chosen
   * up front, e.g. the service's inbox listener (`ACTION_SERVICE_SMTP_PORT`), which may start after
   * the site. The catcher then receives nothing: `mails()` is empty and `waitForSignInCode` times out.
   */
  smtpPort?: number;
}

/** Starts a fresh site with its owner set up. */
export async function startGhost(options: GhostOptions = {}): Promise<Ghost> {
  const install = platformInstall();
  const pristine = await pristineContent(install);
  const catcher = await startMailCatcher();
  const dir = mkdtempSync(join(tmpdir(), "action-service-ghost-"));
  let child: ChildProcess | undefined;
  try {
    cpSync(pristine, join(dir, "content"), { recursive: true });
    const site = await bootGhost(install, dir, options.smtpPort ?? catcher.port);
    child = site.child;
    const url = site.url;
    const origin = { origin: url };
    const setup = await fetch(`${url}/ghost/api/admin/authentication/setup/`, {
      method: "POST",
      headers: { ...origin, "content-type": "application/json" },
      body: JSON.stringify({ setup: [{ ...GHOST_OWNER, blogTitle: "Test Ghost" }] }),
    });
    if (!setup.ok) throw new Error(`Ghost setup answered ${setup.status}: ${await setup.text()}`);
    // The owner's first sign-in skips device verification; every later one is challenged.
    const session = await fetch(`${url}/ghost/api/admin/session/`, {
      method: "POST",
      headers: { ...origin, "content-type": "application/json" },
      body: JSON.stringify({ username: GHOST_OWNER.email, password: GHOST_OWNER.password }),
    });
    const cookie = session.headers.getSetCookie().map((value) => value.split(";")[0]).join("; ");
    if (session.status !== 201 || !cookie) throw new Error(`Ghost's first session answered ${session.status}: ${await session.text()}`);

    const adminApi = (path: string, init: RequestInit = {}) => {
      const headers = new Headers(init.headers);
      headers.set("cookie", cookie);
      headers.set("origin", url);
      if (typeof init.body === "string" && !headers.has("content-type")) headers.set("content-type", "application/json");
      const target = path.startsWith("/ghost/") ? path : `/ghost/api/admin/${path.replace(/^\//, "")}`;
      return fetch(`${url}${target}`, { ...init, headers });
    };
    // Right after that first sign-in, users/me answers 403 for a moment (once in a few starts).
    let me = await adminApi("users/me/");
    for (let attempt = 0; attempt < 25 && me.status === 403; attempt++) {
      await me.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, 200));
      me = await adminApi("users/me/");
    }
    if (!me.ok) throw new Error(`Ghost users/me answered ${me.status}: ${await me.text()}`);
    const { id: ownerId, slug } = ((await me.json()) as { users: { id: string; slug: string }[] }).users[0]!;
    const owner: GhostOwner = { ...GHOST_OWNER, slug };

    let stopped: Promise<void> | undefined;
    const ghostChild = child;
    return {
      url,
      owner,
      dir,
      mails: () => catcher.mails().map(toGhostMail),
      waitForSignInCode: (options) => waitForSignInCode(catcher, options.to ?? owner.email, options.after, options.timeoutMs ?? 30_000),
      adminApi,
      async setOwnerEmail(email) {
        const response = await adminApi(`users/${ownerId}/`, { method: "PUT", body: JSON.stringify({ users: [{ email }] }) });
        if (!response.ok) throw new Error(`Ghost's user edit answered ${response.status}: ${await response.text()}`);
        const saved = ((await response.json()) as { users: { email: string }[] }).users[0]!.email;
        if (saved !== email) throw new Error(`Ghost kept the owner's e-mail ${saved}, not ${email}`);
        owner.email = email;
      },
      rssMiB: () => treeRssMiB(ghostChild.pid!),
      stop() {
        stopped ??= (async () => {
          await killProcessGroup(ghostChild, 10_000);
          await catcher.close();
          rmSync(dir, { recursive: true, force: true });
        })();
        return stopped;
      },
    };
  } catch (error) {
    if (child) await killProcessGroup(child, 10_000);
    await catcher.close();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

function toGhostMail(mail: CaughtMail): GhostMail {
  return { to: mail.to.join(", "), subject: mail.subject, text: mail.text, receivedAt: mail.receivedAt };
}

async function waitForSignInCode(catcher: MailCatcher, to: string, after: Date, timeoutMs: number): Promise<string> {
  const matches = (mail: CaughtMail) =>
    SIGN_IN_CODE_SUBJECT.test(mail.subject) && mail.to.some((address) => address.toLowerCase() === to.toLowerCase()) && mail.receivedAt >= after;
  await catcher.waitFor(matches, timeoutMs);
  const newest = catcher.mails().filter(matches).at(-1)!;
  return SIGN_IN_CODE_SUBJECT.exec(newest.subject)![1]!;
}

/**
 * Lays `dir` out as Ghost-CLI does and runs Ghost there until it answers: Ghost reads
 * config.production.json from its cwd and finds its package.json through `cwd/current`.
 */
async function bootGhost(install: PlatformInstall, dir: string, smtpPort: number): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const content = join(dir, "content");
  const config = {
    url,
    server: { host: "127.0.0.1", port },
    database: { client: "sqlite3", connection: { filename: join(content, "data", "ghost.db") }, useNullAsDefault: true, debug: false },
    paths: { contentPath: content },
    mail: { transport: "SMTP", from: "Test Ghost <noreply@example.com>", options: { host: "127.0.0.1", port: smtpPort, secure: false, ignoreTLS: true } },
    logging: { level: "info", transports: ["stdout"] },
    security: { staffDeviceVerification: true },
    // No update checks, pings or other calls home; explore's URLs empty for the same reason.
    privacy: { useTinfoil: true },
    explore: { update_url: "", testimonials_url: "" },
  };
  writeFileSync(join(dir, "config.production.json"), JSON.stringify(config, null, 2));
  symlinkSync(install.ghost, join(dir, "current"));
  const log = join(dir, "ghost.log");
  const logFd = openSync(log, "a");
  const child = spawn(install.node, [join(install.ghost, "index.js")], {
    cwd: dir,
    env: { ...process.env, NODE_ENV: "production" },
    detached: true,
    stdio: ["ignore", logFd, logFd],
  });
  closeSync(logFd);
  killGroupOnExit(child);
  try {
    await waitUntil(async () => (await fetch(`${url}/ghost/api/admin/site/`)).status === 200, {
      child,
      timeoutMs: BOOT_TIMEOUT_MS,
      what: "Ghost",
      describe: () => readFileSync(log, "utf8").slice(-3_000),
    });
  } catch (error) {
    await killProcessGroup(child, 10_000);
    throw error;
  }
  return { child, url };
}

/**
 * A content dir whose database Ghost has already created and migrated (the longest part of a first
 * boot), made once per Ghost version: boot a throwaway site on a copy of the package's content
 * (themes included), stop it, keep its content. Concurrent first starts race harmlessly: the
 * rename of a finished copy fails when another one won.
 */
async function pristineContent(install: PlatformInstall): Promise<string> {
  const pristine = join(platformCacheDir(), `ghost-pristine-${install.ghostVersion}`);
  if (existsSync(join(pristine, "data", "ghost.db"))) return pristine;
  const dir = mkdtempSync(join(platformCacheDir(), "ghost-pristine-partial-"));
  try {
    cpSync(join(install.ghost, "content"), join(dir, "content"), { recursive: true, dereference: true });
    const catcher = await startMailCatcher();
    try {
      const { child } = await bootGhost(install, dir, catcher.port);
      await killProcessGroup(child, 30_000);
    } finally {
      await catcher.close();
    }
    try {
      renameSync(join(dir, "content"), pristine);
    } catch (error) {
      if (!existsSync(join(pristine, "data", "ghost.db"))) throw error;
    }
    return pristine;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
