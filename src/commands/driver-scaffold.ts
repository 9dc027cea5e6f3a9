/** The files of a new code driver's package (`driver new`), by path: a driver that loads as it is, to fill in. */
export function scaffoldFiles({ name, serviceVersion, apiVersion }: { name: string; serviceVersion: string; apiVersion: string }): Record<string, string> {
  const title = name.replace(/(^|[-_])([a-z])/g, (_, separator: string, letter: string) => `${separator ? " " : ""}${letter.toUpperCase()}`);
  return {
    "package.json": `${JSON.stringify(
      {
        name: `action-service-driver-${name}`,
        version: "0.1.0",
        description: `The ${title} platform's driver for action-service.`,
        type: "module",
        exports: "./index.js",
        files: ["index.js"],
        scripts: { test: "node --test" },
        peerDependencies: { "action-service": `>=${serviceVersion}` },
      },
      null,
      2,
    )}\n`,
    "index.js": indexJs(name, title, apiVersion),
    "test/check.test.js": CHECK_TEST,
    "README.md": readme(name, title),
  };
}

function indexJs(name: string, title: string, apiVersion: string): string {
  return `// @ts-check
/**
 * The ${title} platform's driver for action-service. Everything below is a guess at a usual site:
 * change each page state to what ${title}'s pages really show, as a person reads them (roles,
 * labels, text; never CSS classes or test ids), then run \`npm test\` (it runs \`action-service
 * driver check\` against the live platform). docs/drivers.md in action-service says what each part is.
 */
import { URL } from "node:url";
import { ActionFailure, defineDriver } from "action-service/driver";

/** @typedef {import("action-service/driver").Page} Page */
/** @typedef {import("action-service/driver").Locator} Locator */
/** @typedef {import("action-service/driver").ActionHandler} ActionHandler */

/** Paths of the platform's own origin (ACTION_SERVICE_PLATFORMS says where it lives). */
const PATHS = {
  /** Where every action starts: a page that shows whether the account is signed in. */
  start: "/",
  /** The sign-in form. */
  signIn: "/login",
  /** Where a post is written. */
  compose: "/new",
};

/** How each page state is recognised. @type {Record<string, (page: Page) => Locator>} */
const PAGES = {
  signedIn: (page) => page.getByRole("link", { name: "Sign out" }),
  signedOut: (page) => page.getByRole("link", { name: "Sign in" }),
  username: (page) => page.getByLabel("Username"),
  password: (page) => page.getByLabel("Password"),
  submit: (page) => page.getByRole("button", { name: "Sign in", exact: true }),
  /** What the platform shows when it refuses the password. */
  refused: (page) => page.getByRole("alert"),
  /** The navigation's link to the signed-in person's profile (its last path segment is their handle). */
  profileLink: (page) => page.getByRole("navigation").getByRole("link", { name: "Profile" }),
  composer: (page) => page.getByLabel("Text"),
  publish: (page) => page.getByRole("button", { name: "Publish", exact: true }),
  published: (page) => page.getByRole("status"),
};

/** The handle of the person signed in on this page, or undefined (checked against the account's username after each sign-in). */
async function signedInAs(/** @type {Page} */ page) {
  const link = PAGES.profileLink(page);
  if ((await link.count()) === 0) return undefined;
  const href = await link.first().getAttribute("href");
  return href ? decodeURIComponent(href.split("/").filter(Boolean).pop() ?? "") || undefined : undefined;
}

/** @type {ActionHandler} */
const connect = async (context) => {
  const handle = await signedInAs(context.page);
  const profile = handle ? { handle, name: handle } : undefined;
  await context.markConnected(profile);
  return { signed_in: true, ...(profile ? { profile } : {}) };
};

/** @type {ActionHandler} */
const post = async (context) => {
  const { page } = context;
  const text = String(context.params.text);
  await context.open(PATHS.compose);
  await context.settle({ form: PAGES.composer(page) });
  await PAGES.composer(page).fill(text);
  // The commit point: from the click on, the post may exist on the platform.
  await context.commit();
  await PAGES.publish(page).click();
  const state = await context.settle({ done: PAGES.published(page), refused: PAGES.refused(page) });
  if (state === "refused") throw new ActionFailure("rejected", \`The platform refused the post: \${(await PAGES.refused(page).first().innerText()).trim()}\`);
  return { post_id: new URL(page.url()).pathname, url: page.url() };
};

export default defineDriver({
  // The action-service/driver version this driver was written for.
  apiVersion: "${apiVersion}",
  platform: {
    name: "${name}",
    title: "${title}",
    description: "What ${title} is, in one sentence, for the people choosing a platform.",
    // How often one account may act: what the platform tolerates, not what the service can do.
    paces: { post: { per_hour: 30, min_gap_seconds: 10 } },
  },
  // Pages that end any action with a seed error code, checked on every page the driver waits for.
  failures: [
    {
      code: "rate_limited",
      locate: (page) => page.getByRole("heading", { name: "Too many requests" }),
      message: "The platform asked the account to slow down.",
    },
  ],
  signIn: {
    start: PATHS.start,
    signedIn: PAGES.signedIn,
    signedOut: PAGES.signedOut,
    form: { path: PATHS.signIn, username: PAGES.username, password: PAGES.password, submit: PAGES.submit },
    refused: PAGES.refused,
    // Pages that ask for more than the password, e.g.:
    // { kind: "two_factor_code", shows: (page) => page.getByRole("heading", { name: "Two-factor authentication" }),
    //   field: (page) => page.getByLabel("Code"), submit: (page) => page.getByRole("button", { name: "Verify" }),
    //   message: async (page) => (await page.getByRole("main").getByRole("paragraph").first().innerText()).trim() },
    challenges: [],
  },
  signedInAs,
  actions: { connect, post },
});
`;
}

const CHECK_TEST = `import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { delimiter, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

// The driver against the live platform: \`action-service driver check\` visits it and says, for every
// page state and failure detector the driver declares, whether it recognised it.
//   PLATFORM_URL=https://… npm test
//   PLATFORM_URL=https://… PLATFORM_USERNAME=me ACTION_SERVICE_CHECK_PASSWORD=… npm test   (signs in too)
const root = fileURLToPath(new URL("..", import.meta.url));

test("action-service driver check recognises the platform", () => {
  const url = process.env.PLATFORM_URL;
  assert.ok(url, "Set PLATFORM_URL to the platform's address (and PLATFORM_USERNAME with ACTION_SERVICE_CHECK_PASSWORD to check the sign-in too).");
  const username = process.env.PLATFORM_USERNAME;
  const run = spawnSync("action-service", ["driver", "check", join(root, "index.js"), "--url", url, ...(username ? ["--username", username] : [])], {
    encoding: "utf8",
    // action-service from this package's node_modules (the peer dependency), else the one on PATH.
    env: { ...process.env, PATH: \`\${join(root, "node_modules", ".bin")}\${delimiter}\${process.env.PATH ?? ""}\` },
    stdio: ["inherit", "pipe", "pipe"],
  });
  assert.ifError(run.error);
  assert.equal(run.status, 0, \`driver check found what it did not expect:\\n\${run.stdout}\${run.stderr}\`);
});
`;

function readme(name: string, title: string): string {
  return `# The ${title} driver for action-service

Teaches an action-service the ${title} platform: how it signs in, which pages mean what, and how
to post on it.

## Fill it in

\`index.js\` holds guesses at a usual site. Open ${title} in a browser and change each page state
to what its pages really show, by role, label and text — the way a person reads the page. The
action-service documentation (docs/drivers.md) says what every part means.

## Check it against the live platform

\`\`\`sh
npm install                      # action-service, the peer dependency
PLATFORM_URL=https://${name}.example.com npm test
PLATFORM_URL=https://${name}.example.com PLATFORM_USERNAME=me ACTION_SERVICE_CHECK_PASSWORD=… npm test
\`\`\`

\`npm test\` runs \`action-service driver check\`: it visits the platform and reports each page
state and failure detector it recognised, signing in when given a username (a challenge is
answered at the terminal).

## Use it

\`\`\`sh
ACTION_SERVICE_DRIVERS=./${name} ACTION_SERVICE_PLATFORMS=${name}=https://${name}.example.com action-service serve
\`\`\`

The driver runs inside the service's process, with everything the service can reach: load only
drivers you trust.
`;
}
