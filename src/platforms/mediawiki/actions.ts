import { z } from "zod";
import { ActionFailure } from "../../domain/errors.js";
import type { ActionHandler, DriverContext } from "../driver.js";
import { PAGES, PATHS } from "./pages.js";
import { signedInAs } from "./sign-in.js";

const text = z.string().min(1).max(10_000);
const handle = z.string().trim().min(1).max(100).describe("A user name on the wiki, e.g. `Carol`.");
const title = z.string().trim().min(1).max(255).regex(/^[^#<>[\]|{}]+$/, "A page title cannot contain # < > [ ] | { }.");

/** A wiki's own params (DESIGN §14): a post is a page, which may be given a title; a message may be given a subject. */
export const PARAMS = {
  post: z
    .strictObject({
      text: text.describe("The page's wikitext."),
      title: title.optional().describe("The new page's title; left out, a subpage of the account's user page named after the time (`User:Bob/2026-11-23 18:40:05`)."),
      summary: z.string().max(500).optional().describe("The edit summary."),
    })
    .describe("Create a new page (never overwrites one)."),
  send_message: z
    .strictObject({
      to: handle,
      text: text.describe("The message; the account's signature is added."),
      subject: z.string().trim().min(1).max(200).optional().describe("The new section's heading; left out, the message's first line."),
    })
    .describe("Write a new section on the user's talk page."),
};

type PostParams = z.infer<typeof PARAMS.post>;
type MessageParams = z.infer<typeof PARAMS.send_message>;

/** A message on a talk page: a section, its author taken from the signature closest to its end. */
interface Message { from: string; subject: string; text: string; sent_at: string }

/** The wiki's user name for a handle: first letter upper-case, "_" as " ". */
function userName(name: string): string {
  const spaced = name.trim().replaceAll("_", " ");
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

function titleOf(url: string): string | undefined {
  const parsed = new URL(url);
  const fromQuery = parsed.searchParams.get("title");
  if (fromQuery) return fromQuery.replaceAll("_", " ");
  const match = /\/index\.php\/(.+)$/.exec(parsed.pathname);
  return match ? decodeURIComponent(match[1]!).replaceAll("_", " ") : undefined;
}

export const connect: ActionHandler = async (context) => {
  const name = await signedInAs(context.page);
  const profile = name ? { handle: name, name } : undefined;
  await context.markConnected(profile);
  return { signed_in: true, ...(profile ? { profile } : {}) };
};

/** Saves the edit form; the page view afterwards, or the wiki's reason for not saving. */
async function save(context: DriverContext, summary: string): Promise<void> {
  const { page } = context;
  await PAGES.summary(page).or(PAGES.subject(page)).first().fill(summary);
  await context.commit();
  await PAGES.save(page).click();
  const state = await context.settle({ saved: PAGES.viewed(page), error: PAGES.editError(page), form: PAGES.resubmitted(page) });
  if (state === "saved") return;
  const reason = (await PAGES.editError(page).count()) > 0 ? (await PAGES.editError(page).innerText()).trim() : "the edit form came back without saying why";
  throw new ActionFailure("rejected", `The wiki did not save the edit: ${reason}`);
}

export const post: ActionHandler = async (context) => {
  const params = context.params as PostParams;
  const { page } = context;
  const pageTitle = params.title ?? `User:${userName(context.username)}/${context.clock.now().toISOString().slice(0, 19).replace("T", " ")}`;
  await context.open(PATHS.edit(pageTitle));
  await context.settle({ form: PAGES.textbox(page) });
  // A post makes a page: an existing one ("Save changes" instead of "Save page") is not overwritten.
  if (await page.getByRole("button", { name: "Save changes", exact: true }).isVisible()) {
    throw new ActionFailure("rejected", `A page titled "${pageTitle}" already exists; a post makes a new page. Choose another title.`);
  }
  await PAGES.textbox(page).fill(params.text);
  await save(context, params.summary ?? "");
  return { post_id: titleOf(page.url()) ?? pageTitle, url: page.url() };
};

export const lookupPerson: ActionHandler = async (context) => {
  const params = context.params as { handle: string } | { url: string };
  const { page } = context;
  const name = "handle" in params ? userName(params.handle) : userFromUrl(context, params.url);
  await context.open(PATHS.page(`User:${name}`));
  await context.settle({ page: PAGES.heading(page) });
  const hasPage = !(await PAGES.noText(page).isVisible());
  const about = hasPage ? (await PAGES.content(page).first().innerText()).trim() : "";
  const url = page.url();
  await context.open(PATHS.contributions(name));
  await context.settle({ contributions: PAGES.contributions(page).first(), none: page.getByText("No changes were found matching these criteria.") });
  const contributions = [];
  for (const item of await PAGES.contributions(page).all()) {
    const page_title = (await item.locator("a.mw-contributions-title").first().innerText().catch(() => "")).trim();
    const at = (await item.locator("a.mw-changeslist-date").first().innerText().catch(() => "")).trim();
    const comment = (await item.locator(".comment").first().innerText().catch(() => "")).trim().replace(/^\((.*)\)$/, "$1");
    contributions.push({ title: page_title, at, ...(comment ? { summary: comment } : {}) });
  }
  return { handle: name, name, headline: about.split("\n")[0] ?? "", about, url, contributions };
};

/** `User:Name` (or a page under it) on this wiki. */
function userFromUrl(context: DriverContext, url: string): string {
  if (new URL(url).origin !== new URL(context.baseUrl).origin) {
    throw new ActionFailure("invalid_input", `Only pages of this wiki (${new URL(context.baseUrl).origin}) can be opened; got ${new URL(url).origin}.`);
  }
  const match = /^User(?: talk)?:([^/]+)/.exec(titleOf(url) ?? "");
  if (!match) throw new ActionFailure("invalid_input", "The URL is not a user page (User:Name).");
  return userName(match[1]!);
}

export const sendMessage: ActionHandler = async (context) => {
  const params = context.params as MessageParams;
  const { page } = context;
  const to = userName(params.to);
  if (to.toLowerCase() === userName(context.username).toLowerCase()) throw new ActionFailure("invalid_input", "A message to the account itself goes nowhere: `to` is the account's own user name.");
  await context.open(PATHS.newSection(`User talk:${to}`));
  await context.settle({ form: PAGES.textbox(page) });
  // "~~~~" is the wiki's signature: the account's name and the time, as every talk page message ends.
  await PAGES.textbox(page).fill(`${params.text.trim()} ~~~~`);
  const subject = params.subject ?? params.text.trim().split("\n")[0]!.slice(0, 80);
  await save(context, subject);
  return { conversation_id: `User talk:${to}`, message_id: new URL(page.url()).hash.replace(/^#/, "") || subject, url: page.url() };
};

export const lookupConversation: ActionHandler = async (context) => {
  const params = context.params as { with: string } | { conversation_id: string };
  const me = userName(context.username);
  if ("conversation_id" in params) {
    const talk = params.conversation_id.replaceAll("_", " ");
    if (!/^User talk:[^/]+$/.test(talk)) throw new ActionFailure("invalid_input", "A conversation on a wiki is a user talk page: `User talk:Name`.");
    return { conversation_id: talk, messages: await talkMessages(context, talk) };
  }
  // Between two users: what the other wrote on this account's talk page, and what it wrote on theirs.
  const other = userName(params.with);
  const mine = (await talkMessages(context, `User talk:${me}`)).filter((message) => sameName(message.from, other));
  const theirs = (await talkMessages(context, `User talk:${other}`)).filter((message) => sameName(message.from, me));
  if (mine.length === 0 && theirs.length === 0) throw new ActionFailure("not_found", `The account and ${other} have no messages on each other's talk pages.`);
  const messages = [...mine, ...theirs].sort((a, b) => a.sent_at.localeCompare(b.sent_at));
  return { conversation_id: `User talk:${me}`, messages };
};

const sameName = (a: string, b: string): boolean => userName(a).toLowerCase() === userName(b).toLowerCase();

/** A talk page's sections, read from its wikitext (a missing page has none). */
async function talkMessages(context: DriverContext, talk: string): Promise<Message[]> {
  const response = await context.page.request.get(new URL(PATHS.raw(talk), context.baseUrl).toString());
  if (response.status() === 404) return [];
  if (!response.ok()) throw new ActionFailure("browser_error", `The wiki answered ${response.status()} for ${talk}.`);
  return parseTalk(await response.text());
}

const SIGNATURE = /\[\[User:([^|\]]+)(?:\|[^\]]*)?\]\][^\n]*?(\d{1,2}:\d{2}, \d{1,2} \w+ \d{4}) \(UTC\)/g;

/** Sections (`== Subject ==`) with a signature: author and time from the last one in the section. */
export function parseTalk(wikitext: string): Message[] {
  const messages: Message[] = [];
  for (const section of wikitext.split(/^(?===[^=].*==\s*$)/m)) {
    const heading = /^==\s*(.*?)\s*==\s*$/m.exec(section);
    const signatures = [...section.matchAll(SIGNATURE)];
    const last = signatures.at(-1);
    if (!heading || !last) continue;
    const body = section.slice(heading[0].length, last.index).trim();
    messages.push({ from: last[1]!.trim(), subject: heading[1]!, text: body, sent_at: wikiTime(last[2]!) });
  }
  return messages;
}

/** "18:40, 23 November 2026" (UTC) as ISO 8601. */
function wikiTime(value: string): string {
  const parsed = new Date(`${value.replace(/^(\d{1,2}:\d{2}), /, "")} ${value.split(",")[0]} UTC`);
  return Number.isNaN(parsed.getTime()) ? value : parsed.toISOString();
}
