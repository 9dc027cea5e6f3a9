/**
 * A fresh MediaWiki 1.39 (Debian's package) per start: SQLite in its own temp dir, PHP's built-in
 * server on a free loopback port, OATHAuth (TOTP) and ConfirmEdit's QuestyCaptcha on bad logins.
 *
 * What a person sees (observed on this install; screenshots in the findings notes):
 * - `Special:UserLogin`: labels "Username" (`wpName`) and "Password" (`wpPassword`), button "Log in".
 *   A wrong password answers "Incorrect username or password entered. Please try again." in
 *   `.mw-message-box-error`.
 * - With TOTP on, the next page (same URL, `/index.php/Special:UserLogin`) says "Please enter a code
 *   from your two-factor authentication application (such as Google Authenticator)." and asks
 *   "Two-factor token or recovery code" (`OATHToken`, id `wpOATHToken`), button "Continue login". A
 *   wrong or reused code answers "Verification failed." on that same page.
 * - After `captchaBadLoginAttempts` wrong passwords from one IP, the form (the page answering the
 *   last of them, and every later one) carries "To protect the wiki against automated password
 *   cracking, we kindly ask you to answer the question that appears below (more info):", then the
 *   question text, then a required unlabelled input `captchaWord` (id `mw-input-captchaWord`). A wrong
 *   answer gets the wrong-password message, even with the right password.
 * - Editing: `index.php?title=T&action=edit`, textarea `wpTextbox1`, "Summary:" `wpSummary`; the
 *   submit `wpSave` reads "Save page" on a page that does not exist yet and "Save changes" on one
 *   that does. A new talk section (`action=edit&section=new`) labels `wpSummary` "Subject:".
 * - After another user posts on your talk page, every page shows `.usermessage`: "You have a new
 *   message (last change)." until you visit it.
 */
import { appendFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Secret, TOTP } from "otpauth";
import { freePort, killProcessGroup, runCommand, startPhpServer, treeRssMiB } from "./processes.js";

export const MEDIAWIKI_ROOT = "/usr/share/mediawiki";
export const CAPTCHA_QUESTION = 'Type the word "probe" backwards:';
export const CAPTCHA_ANSWER = "eborp";

/** A wiki account. */
export interface WikiUser { name: string; password: string }

/** Seeded on every start: Bob, and Carol whose user page says "Hi, I am Carol.". */
export const BOB: WikiUser = { name: "Bob", password: "Bob-Pass-1234" };
export const CAROL: WikiUser = { name: "Carol", password: "Carol-Pass-1234" };
export const CAROL_USER_PAGE_TEXT = "Hi, I am Carol.";

/** One running wiki. */
export interface MediaWiki {
  /** `http://127.0.0.1:<port>`, no trailing slash; pages at `${url}/index.php?title=…`. */
  url: string;
  /** The install's administrator (bureaucrat, sysop). */
  admin: WikiUser;
  /** Temp dir holding LocalSettings.php, the SQLite files and `server.log`. */
  dir: string;
  createUser(name: string, password: string): Promise<WikiUser>;
  /**
   * Enrols the user in TOTP and returns the base32 secret (codes: `totpCode(secret)`). The key is
   * stored as Special:OATHManage stores it after a confirmed code, but no code is used, so the first
   * sign-in may use the current window. OATHAuth accepts a code only for a 30-s window later than
   * the last one it accepted for that user, within ±4 windows of now: a second sign-in inside the
   * same window needs the next window's code (`totpCode(secret, Date.now() + 30_000)`) or a wait.
   */
  enableTotp(name: string): Promise<string>;
  /** Removes the user's 2FA (OATHAuth's disableOATHAuthForUser.php), which also ends their sessions. */
  disableTotp(name: string): Promise<void>;
  /** Saves `text` as the page's whole content, as `user` (the admin when omitted). */
  editPage(title: string, text: string, user?: string): Promise<void>;
  /** The page's wikitext, undefined when the page does not exist. */
  pageText(title: string): Promise<string | undefined>;
  /** GET api.php with `format=json`; rejects on an HTTP error or an API `error`. */
  api(params: Record<string, string>): Promise<any>;
  /** Runs a maintenance script (a path under MEDIAWIKI_ROOT, or absolute) against this wiki. */
  maintenance(script: string, args?: readonly string[], input?: string): Promise<string>;
  /** Resident memory of the server and its workers, in MiB. */
  rssMiB(): Promise<number | undefined>;
  /** Stops php -S and its workers and removes the temp dir. */
  stop(): Promise<void>;
}

export interface MediaWikiOptions {
  /** Failed logins from one IP before the login form asks the captcha question (default 3). */
  captchaBadLoginAttempts?: number;
}

const ENABLE_TOTP_SCRIPT = join(import.meta.dirname, "enable-totp.php");
const ADMIN: WikiUser = { name: "Admin", password: "Admin-Pass-1234" };

/** The current TOTP code for a secret (or the one at `timestamp`), as an authenticator app shows it. */
export function totpCode(secret: string, timestamp = Date.now()): string {
  return new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: "SHA1" }).generate({ timestamp });
}

/** Installs a fresh wiki in a temp dir, seeds Bob and Carol, and serves it on a free port. */
export async function startMediaWiki(options: MediaWikiOptions = {}): Promise<MediaWiki> {
  if (!existsSync(join(MEDIAWIKI_ROOT, "maintenance", "install.php"))) {
    throw new Error(`MediaWiki is not installed in ${MEDIAWIKI_ROOT}: run \`node scripts/platforms/install.mjs\` (or apt-get install mediawiki php-sqlite3 php-cli).`);
  }
  const dir = mkdtempSync(join(tmpdir(), "action-service-mediawiki-"));
  try {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const settingsFile = join(dir, "LocalSettings.php");
    // Read by every entry point and maintenance script, so the shared Debian tree serves this wiki.
    const env = { ...process.env, MW_CONFIG_FILE: settingsFile, MW_INSTALL_PATH: MEDIAWIKI_ROOT };
    const maintenance = (script: string, args: readonly string[] = [], input?: string) =>
      runCommand("php", [script.startsWith("/") ? script : join(MEDIAWIKI_ROOT, script), ...args], { cwd: dir, env, ...(input === undefined ? {} : { input }) });

    await maintenance("maintenance/install.php", [
      "--dbtype=sqlite", `--dbpath=${join(dir, "data")}`, "--dbname=testwiki", `--server=${url}`, "--scriptpath=",
      "--lang=en", `--pass=${ADMIN.password}`, `--confpath=${dir}`, "Test Wiki", ADMIN.name,
    ]);
    appendFileSync(settingsFile, localSettings(dir, options.captchaBadLoginAttempts ?? 3));
    await maintenance("maintenance/update.php", ["--quick"]);
    const editPage = async (title: string, text: string, user = ADMIN.name) => {
      await maintenance("maintenance/edit.php", ["-u", user, "-s", "test edit", title], text);
    };
    const createUser = async (name: string, password: string): Promise<WikiUser> => {
      await maintenance("maintenance/createAndPromote.php", [name, password]);
      return { name, password };
    };
    await createUser(BOB.name, BOB.password);
    await createUser(CAROL.name, CAROL.password);
    await editPage("User:Carol", `${CAROL_USER_PAGE_TEXT}\n`, CAROL.name);

    const api = async (params: Record<string, string>) => {
      const response = await fetch(`${url}/api.php?${new URLSearchParams({ ...params, format: "json" })}`);
      if (!response.ok) throw new Error(`api.php ${JSON.stringify(params)} answered ${response.status}`);
      const body: any = await response.json();
      if (body.error) throw new Error(`api.php ${JSON.stringify(params)}: ${body.error.code}: ${body.error.info}`);
      return body;
    };
    const server = await startPhpServer({ port, root: "/var/lib/mediawiki", dir, env, ready: () => api({ action: "query", meta: "siteinfo" }).then(() => true) });

    let stopped: Promise<void> | undefined;
    return {
      url,
      admin: ADMIN,
      dir,
      createUser,
      async enableTotp(name) {
        const secret = (await maintenance(ENABLE_TOTP_SCRIPT, [name])).trim();
        if (!/^[A-Z2-7]+$/.test(secret)) throw new Error(`enable-totp.php printed no secret: ${secret}`);
        return secret;
      },
      async disableTotp(name) {
        await maintenance("extensions-core/OATHAuth/maintenance/disableOATHAuthForUser.php", [name]);
      },
      editPage,
      async pageText(title) {
        const body = await api({ action: "query", prop: "revisions", rvprop: "content", rvslots: "main", titles: title, formatversion: "2" });
        const page = body.query?.pages?.[0];
        if (!page || page.missing || page.invalid) return undefined;
        return page.revisions?.[0]?.slots?.main?.content as string | undefined;
      },
      api,
      maintenance,
      rssMiB: () => treeRssMiB(server.pid!),
      stop() {
        stopped ??= (async () => {
          await killProcessGroup(server);
          rmSync(dir, { recursive: true, force: true });
        })();
        return stopped;
      },
    };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** The README's additions to the generated LocalSettings.php. */
function localSettings(dir: string, captchaBadLoginAttempts: number): string {
  return `
# Added by test/platforms/support/mediawiki.ts
$wgCacheDirectory = ${phpString(join(dir, "cache"))};
# CACHE_NONE would never keep ConfirmEdit's bad-login counter (nor OATHAuth's used windows).
$wgMainCacheType = CACHE_DB;
$wgEnableUploads = false;
$wgUseInstantCommons = false;
$wgPingback = false;
wfLoadExtension( 'OATHAuth' );
wfLoadExtensions( [ 'ConfirmEdit', 'ConfirmEdit/QuestyCaptcha' ] );
$wgCaptchaQuestions = [ ${phpString(CAPTCHA_QUESTION)} => ${phpString(CAPTCHA_ANSWER)} ];
$wgCaptchaTriggers['badlogin'] = true;
$wgCaptchaBadLoginAttempts = ${Math.trunc(captchaBadLoginAttempts)};
$wgCaptchaTriggers['addurl'] = false;
`;
}

function phpString(value: string): string {
  return `'${value.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
}
