/**
 * A fresh DokuWiki 2022-07-31 "Igor" (Debian's package) per start: its conf and data copied into a
 * temp dir, served by PHP's built-in server on a free loopback port. DokuWiki has no database (a page
 * is a text file), so a copy of the package's data dir is a whole new wiki; the package's own
 * `/etc/dokuwiki` and `/var/lib/dokuwiki` are only read.
 *
 * How one code tree serves this copy: Debian's `inc/preload.php` takes the conf dir from `DOKU_CONF`
 * when it is already defined, so `php -d auto_prepend_file=<dir>/prepend.php` defines it first, for
 * the server and for DokuWiki's own command-line tools (`bin/dwpage.php`) alike. `savedir` in the
 * copied `local.php` points at the copied data.
 *
 * What a person sees (observed on this install, default template, English):
 * - Every page's "User Tools" list: signed out, links "Register" and "Log In"; signed in, the item
 *   "Logged in as: Bob Builder (bob)" and links "Update Profile" and "Log Out".
 * - `doku.php?id=start&do=login`: a group "Log In" with fields "Username", "Password", a checkbox
 *   "Remember me" and a button "Log In". A wrong password answers "Sorry, username or password was
 *   wrong." above the same form.
 * - A page that does not exist: heading "This topic does not exist yet", and the page tools link
 *   "Create this page [e]"; one that does: "Edit this page [e]" (or "Show pagesource [v]" when the
 *   account may only read it), and "Last modified: 2026/11/27 22:15 by bob" under the text.
 * - `do=edit`: a toolbar, the page's text in a textarea that has no label at all (its accessible name
 *   is empty), buttons "Save", "Preview", "Cancel", a field "Edit summary" ("created" for a new page).
 * - Refusals: heading "Permission Denied" ("Sorry, you don't have enough rights to continue.");
 *   heading "Page locked" while another user edits (the lock lasts 15 minutes); "Your change was not
 *   saved because it contains blocked text (spam)." over the edit form when the text matches
 *   `wordblock.conf`.
 */
import { appendFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { freePort, killProcessGroup, runCommand, startPhpServer, treeRssMiB } from "./processes.js";

export const DOKUWIKI_ROOT = "/usr/share/dokuwiki";
const PACKAGE_CONF = "/etc/dokuwiki";
const PACKAGE_DATA = "/var/lib/dokuwiki/data";

/** A wiki account: its login, password and the real name the wiki shows. */
export interface WikiUser { name: string; password: string; fullName: string }

/** Seeded on every start: Bob, and Carol whose user page (`user:carol`) introduces her. */
export const BOB: WikiUser = { name: "bob", password: "Bob-Pass-1234", fullName: "Bob Builder" };
export const CAROL: WikiUser = { name: "carol", password: "Carol-Pass-1234", fullName: "Carol Singer" };
export const CAROL_USER_PAGE = "====== Carol Singer ======\n\nHi, I am Carol. I look after the garden pages.\n";
/** A namespace every signed-in user may read and none may write (`archive:* @user 1`). */
export const READ_ONLY_NAMESPACE = "archive";

/** One running wiki. */
export interface DokuWiki {
  /** `http://127.0.0.1:<port>`, no trailing slash; pages at `${url}/doku.php?id=…`. */
  url: string;
  /** The wiki's administrator (group `admin`). */
  admin: WikiUser;
  /** Temp dir holding `conf/`, `data/`, `prepend.php` and `server.log`. */
  dir: string;
  /** How long the start took, from copying the package's files to the first page served. */
  startedInMs: number;
  /** Adds a user to `conf/users.auth.php` (bcrypt, as the wiki hashes them); the wiki reads it on every request. */
  createUser(name: string, password: string, fullName?: string): Promise<WikiUser>;
  /**
   * Gives the user a new password as the wiki's user manager does: the line in `users.auth.php`
   * rewritten, and `data/cache/sessionpurge` written, which makes every session prove its
   * credentials again at its next request (a cookie with the old password then signs in nobody).
   */
  setPassword(name: string, password: string): Promise<void>;
  /** Saves `text` as the page, as `user` would (DokuWiki's `bin/dwpage.php commit`: a revision in the page's history). */
  writePage(id: string, text: string, user?: string): Promise<void>;
  /** Locks the page for editing as `user` does when they open its editor (`bin/dwpage.php lock`): 15 minutes. */
  lockPage(id: string, user: string): Promise<void>;
  /** The page's wiki text from `doku.php?id=…&do=export_raw`, undefined when the page does not exist. */
  pageText(id: string): Promise<string | undefined>;
  /** The page's newest revision as its changelog (`data/meta/<ns>/<page>.changes`) records it; undefined when it has none. */
  lastChange(id: string): { user: string; summary: string } | undefined;
  /** Resident memory of the server and its workers, in MiB. */
  rssMiB(): Promise<number | undefined>;
  /** Stops php -S and its workers and removes the temp dir. */
  stop(): Promise<void>;
}

const ADMIN: WikiUser = { name: "admin", password: "Admin-Pass-1234", fullName: "Wiki Admin" };

/** Copies the package's conf and data into a temp dir, seeds Bob, Carol and two pages, and serves the wiki on a free port. */
export async function startDokuWiki(): Promise<DokuWiki> {
  if (!existsSync(join(DOKUWIKI_ROOT, "doku.php"))) {
    throw new Error(`DokuWiki is not installed in ${DOKUWIKI_ROOT}: run \`node scripts/platforms/install.mjs\` (or apt-get install dokuwiki php-cli).`);
  }
  const began = Date.now();
  const dir = mkdtempSync(join(tmpdir(), "action-service-dokuwiki-"));
  try {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const conf = join(dir, "conf");
    const data = join(dir, "data");
    // The package's users and ACL files are links into /var/lib/dokuwiki/acl (www-data only): this wiki writes its own.
    cpSync(PACKAGE_CONF, conf, { recursive: true, dereference: true, filter: (source) => !["acl.auth.php", "users.auth.php"].includes(basename(source)) });
    cpSync(PACKAGE_DATA, data, { recursive: true });
    writeFileSync(join(conf, "local.php"), localSettings(data));
    writeFileSync(join(conf, "acl.auth.php"), ACL);
    writeFileSync(join(conf, "users.auth.php"), "# <?php exit()?>\n# login:bcrypt hash:real name:email:groups\n");
    const prepend = join(dir, "prepend.php");
    writeFileSync(prepend, `<?php\nif (!defined('DOKU_CONF')) define('DOKU_CONF', ${phpString(`${conf}/`)});\n`);
    const php = ["-d", `auto_prepend_file=${prepend}`];

    const usersFile = join(conf, "users.auth.php");
    const bcrypt = async (password: string) => (await runCommand("php", ["-r", "echo password_hash($argv[1], PASSWORD_BCRYPT);", password])).trim();
    const createUser = async (name: string, password: string, fullName = name): Promise<WikiUser> => {
      appendFileSync(usersFile, `${name}:${await bcrypt(password)}:${fullName}:${name}@example.test:${name === ADMIN.name ? "admin,user" : "user"}\n`);
      return { name, password, fullName };
    };
    const setPassword = async (name: string, password: string) => {
      const hash = await bcrypt(password);
      const lines = readFileSync(usersFile, "utf8").split("\n");
      const at = lines.findIndex((line) => line.startsWith(`${name}:`));
      if (at < 0) throw new Error(`The wiki has no user ${name}.`);
      const [login, , ...rest] = lines[at]!.split(":");
      lines[at] = [login, hash, ...rest].join(":");
      writeFileSync(usersFile, lines.join("\n"));
      // A session is trusted when it began at or after the file's time, in whole seconds: one that
      // began in this very second would outlive the purge, so the file is dated the next second.
      const purge = join(data, "cache", "sessionpurge");
      const next = Math.floor(Date.now() / 1000) + 1;
      writeFileSync(purge, String(next));
      utimesSync(purge, next, next);
    };
    const dwpage = (args: readonly string[]) => runCommand("php", [...php, join(DOKUWIKI_ROOT, "bin", "dwpage.php"), "--no-colors", ...args], { cwd: dir });
    const writePage = async (id: string, text: string, user = ADMIN.name) => {
      const file = join(dir, `page-${Date.now()}-${Math.random().toString(36).slice(2)}.txt`);
      writeFileSync(file, text);
      try {
        await dwpage(["-u", user, "commit", "-m", "seeded by the test", file, id]);
      } finally {
        rmSync(file, { force: true });
      }
    };
    await createUser(ADMIN.name, ADMIN.password, ADMIN.fullName);
    await createUser(BOB.name, BOB.password, BOB.fullName);
    await createUser(CAROL.name, CAROL.password, CAROL.fullName);
    await writePage("start", "====== Test Wiki ======\n\nA wiki the action service's tests write to.\n");
    await writePage("user:carol", CAROL_USER_PAGE, CAROL.name);

    const pageText = async (id: string): Promise<string | undefined> => {
      const response = await fetch(`${url}/doku.php?${new URLSearchParams({ id, do: "export_raw" })}`);
      if (!response.ok) throw new Error(`export_raw of ${id} answered ${response.status}`);
      // A page that does not exist is answered with the wiki's HTML "This topic does not exist yet", not text.
      const text = await response.text();
      return response.headers.get("content-type")?.startsWith("text/plain") ? text : undefined;
    };
    const server = await startPhpServer({ port, root: DOKUWIKI_ROOT, dir, phpArgs: php, ready: async () => (await pageText("start")) !== undefined });

    let stopped: Promise<void> | undefined;
    return {
      url,
      admin: ADMIN,
      dir,
      startedInMs: Date.now() - began,
      createUser,
      setPassword,
      writePage,
      async lockPage(id, user) {
        await dwpage(["-u", user, "lock", id]);
      },
      pageText,
      lastChange(id) {
        const file = join(data, "meta", ...id.split(":")) + ".changes";
        if (!existsSync(file)) return undefined;
        // One line a revision: date, IP, type, id, user, summary, extra, size (tab-separated).
        const fields = readFileSync(file, "utf8").trimEnd().split("\n").at(-1)!.split("\t");
        return { user: fields[4] ?? "", summary: fields[5] ?? "" };
      },
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

/** Readers may read everything; users may also create, edit and upload, except in the read-only namespace. */
const ACL = `# <?php exit()?>
*\t@ALL\t1
*\t@user\t8
${READ_ONLY_NAMESPACE}:*\t@user\t1
`;

/** The wiki's local settings: its data, ACL on, and nothing that asks the internet. */
function localSettings(data: string): string {
  return `<?php
// Written by test/platforms/support/dokuwiki.ts
$conf['title'] = 'Test Wiki';
$conf['lang'] = 'en';
$conf['savedir'] = ${phpString(data)};
$conf['useacl'] = 1;
$conf['superuser'] = '@admin';
// No reverse DNS of 127.0.0.1 on every edit, no update check against dokuwiki.org.
$conf['dnslookups'] = 0;
$conf['updatecheck'] = 0;
`;
}

function phpString(value: string): string {
  return `'${value.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
}
