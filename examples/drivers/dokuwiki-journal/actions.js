// @ts-check
import { URL } from "node:url";
import { ActionFailure, z } from "action-service/driver";
import { PAGES, PATHS } from "./pages.js";
import { loggedInAs } from "./sign-in.js";

/** @typedef {import("action-service/driver").ActionHandler} ActionHandler */
/** @typedef {import("action-service/driver").DriverContext} DriverContext */

/** How many ids a post tries (`…-hello-world`, `…-hello-world-2`, …) before it gives up. */
const MAX_SUFFIX = 50;
/** A page id's namespace, as DokuWiki cleans them: lower-case words joined by - _ or ., parts separated by `:`. */
const NAMESPACE = /^[a-z0-9][a-z0-9_.-]*(:[a-z0-9][a-z0-9_.-]*)*$/;

/**
 * This driver's own params for a post (shown by `GET /v1/platforms`, checked by `POST /v1/actions`):
 * no page id — the driver makes one — but a namespace and an edit summary may be given.
 */
export const PARAMS = {
  post: z
    .strictObject({
      text: z.string().min(1).max(100_000).describe("The entry's wiki text; its first words name the page."),
      namespace: z.string().max(100).regex(NAMESPACE, "A namespace is lower-case words joined by - _ or ., parts separated by `:` (e.g. `journal:team`).").optional()
        .describe("Where the entry goes; left out, `journal`."),
      summary: z.string().max(255).optional().describe("The edit summary; left out, DokuWiki's own (\"created\")."),
    })
    .describe("Write a new journal page, named from today's date and the text's first words (`journal:2026-11-27-hello-world`); never overwrites a page."),
};

/** Connecting is signing in (the service did it before the handler runs) and saying who. @type {ActionHandler} */
export const connect = async (context) => {
  const profile = await loggedInAs(context.page);
  if (!profile) throw new ActionFailure("ui_changed", "The wiki's user tools show no \"Logged in as:\" line.");
  await context.markConnected(profile);
  return { signed_in: true, profile };
};

/** A new journal page: a free id found, the editor opened, the text saved. @type {ActionHandler} */
export const post = async (context) => {
  const { page } = context;
  const params = /** @type {z.infer<typeof PARAMS.post>} */ (context.params);
  const id = await freeId(context, journalId(params.namespace ?? "journal", context.clock.now(), params.text));

  await context.open(PATHS.edit(id));
  // "Permission Denied" (a namespace the account may only read) ends the action by itself: a failure detector.
  if ((await context.settle({ editor: PAGES.save(page), locked: PAGES.locked(page) })) === "locked") {
    // Someone has this very id open in the editor. The banner names who and until when: say it, in its words.
    const details = (await PAGES.lockDetails(page).allInnerTexts()).map((line) => line.replace(/\s+/g, " ").trim());
    throw new ActionFailure("rejected", `DokuWiki: "This page is currently locked for editing by another user." ${details.join("; ")}. Nothing was saved; post again after the lock ends.`);
  }
  // The open editor holds DokuWiki's lock on the id, but DokuWiki saves a new page over one created
  // meanwhile (it checks for a clash only on pages that existed when the editor opened): ask once more.
  if (await taken(context, id)) {
    throw new ActionFailure("rejected", `Someone created ${id} while this post was opening its editor; nothing was saved. Post again: it takes the next free id.`);
  }
  await PAGES.wikiText(page).fill(params.text);
  if (params.summary !== undefined) await PAGES.summary(page).fill(params.summary);
  // The commit point: from the click on, the page may exist on the wiki even if the action is
  // interrupted, so the service never runs it again by itself.
  await context.commit();
  await PAGES.save(page).click();
  // Saved, the wiki shows the page with "Edit this page"; blocked text ends it through a failure detector.
  await context.settle({ saved: PAGES.editThisPage(page) });
  return { post_id: id, url: new URL(PATHS.page(id), context.baseUrl).href };
};

/** A person is their user page, `user:<login>`, by DokuWiki's convention. @type {ActionHandler} */
export const lookupPerson = async (context) => {
  const { page } = context;
  const params = /** @type {import("action-service/driver").ActionParams<"lookup_person">} */ (context.params);
  const handle = "handle" in params ? params.handle.trim().toLowerCase() : handleOf(context, params.url);
  await context.open(PATHS.page(`user:${handle}`));
  if ((await context.settle({ person: PAGES.lastModified(page), missing: PAGES.topicMissing(page) })) === "missing") {
    throw new ActionFailure("not_found", `This wiki has no user page for "${handle}" (user:${handle}).`);
  }
  // "user/carol.txt · Last modified: 2026/11/27 22:15 by carol"
  const modified = /Last modified:\s*(.+?)\s+by\s+(\S+)\s*$/.exec(await PAGES.lastModified(page).innerText());
  return {
    handle,
    name: await textOf(PAGES.title(page)),
    about: await textOf(PAGES.firstParagraph(page)),
    updated_at: modified?.[1],
    updated_by: modified?.[2],
    url: new URL(PATHS.page(`user:${handle}`), context.baseUrl).href,
  };
};

/**
 * `<namespace>:<date>-<first words>`: the date (UTC) the post runs, then up to five of the text's
 * words, accents dropped, as DokuWiki would clean them (`Hello, wörld!` → `hello-world`).
 * @param {string} namespace @param {Date} now @param {string} text
 */
export function journalId(namespace, now, text) {
  const words = text.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase().match(/[a-z0-9]+/g) ?? [];
  const slug = words.slice(0, 5).join("-").slice(0, 60).replace(/-+$/, "") || "entry";
  return `${namespace}:${now.toISOString().slice(0, 10)}-${slug}`;
}

/** The first of `base`, `base-2`, `base-3`, … that the wiki has no page for. @param {DriverContext} context @param {string} base */
async function freeId(context, base) {
  for (let n = 1; n <= MAX_SUFFIX; n++) {
    const id = n === 1 ? base : `${base}-${n}`;
    if (!(await taken(context, id))) return id;
  }
  throw new ActionFailure("rejected", `The wiki already has ${MAX_SUFFIX} pages named ${base}(-n): start the text with other words.`);
}

/**
 * Whether the wiki has a page of this id, asked without opening a page: the raw export, fetched
 * with the account's cookies, is plain text only for a page that exists. Anything else (a missing
 * page, a namespace the account may not read) is left to the editor to say.
 * @param {DriverContext} context @param {string} id
 */
async function taken(context, id) {
  const response = await context.page.request.get(new URL(PATHS.raw(id), context.baseUrl).href, { maxRedirects: 0 });
  return response.ok() && (response.headers()["content-type"]?.startsWith("text/plain") ?? false);
}

/** The login in a user page's address on this wiki (`…/doku.php?id=user:carol`). @param {DriverContext} context @param {string} url */
function handleOf(context, url) {
  const address = new URL(url);
  const origin = new URL(context.baseUrl).origin;
  if (address.origin !== origin) throw new ActionFailure("invalid_input", `Only pages of this wiki (${origin}) can be looked up; got ${address.origin}.`);
  const handle = /^user:([^:]+)$/.exec(address.searchParams.get("id") ?? "")?.[1];
  if (!handle) throw new ActionFailure("invalid_input", `${url} is not a user page (doku.php?id=user:<login>).`);
  return handle;
}

/** A locator's text, or undefined when the page has none. @param {import("action-service/driver").Locator} locator */
async function textOf(locator) {
  return (await locator.count()) > 0 ? (await locator.innerText()).trim() : undefined;
}
