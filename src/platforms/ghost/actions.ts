import { z } from "zod";
import { ActionFailure } from "../../domain/errors.js";
import type { ActionHandler, DriverContext } from "../driver.js";
import { PAGES, PATHS } from "./pages.js";
import { signedInAs } from "./sign-in.js";

const slug = z.string().trim().min(1).max(191).regex(/^[a-z0-9-]+$/, "An author's slug: lower-case letters, digits and dashes, as in /author/<slug>/.");

/** Ghost's own params (DESIGN §14): a post has a title; a person is an author, by slug. */
export const PARAMS = {
  post: z
    .strictObject({
      text: z.string().min(1).max(10_000).describe("The post's text; each line a paragraph."),
      title: z.string().trim().min(1).max(255).optional().describe("The post's title; left out, its first line."),
    })
    .describe("Publish a post on the site, now."),
  lookup_person: z
    .union([z.strictObject({ handle: slug.describe("The author's slug, e.g. `olive` for /author/olive/.") }), z.strictObject({ url: z.url().max(2_000) })])
    .describe("Read an author's page: name, bio and posts."),
};

type PostParams = z.infer<typeof PARAMS.post>;

/** Publishing takes a few screens and the site's own work: longer than a page's usual wait. */
const PUBLISH_TIMEOUT_MS = 30_000;

export const connect: ActionHandler = async (context) => {
  const email = await signedInAs(context.page);
  const profile = email ? { handle: email, name: email } : undefined;
  await context.markConnected(profile);
  return { signed_in: true, ...(profile ? { profile } : {}) };
};

export const post: ActionHandler = async (context) => {
  const params = context.params as PostParams;
  const { page } = context;
  const lines = params.text.split("\n").map((line) => line.trim());
  const title = params.title ?? lines.find((line) => line !== "")!.slice(0, 255);
  await context.open(PATHS.newPost);
  await context.settle({ editor: PAGES.title(page) }, { timeoutMs: PUBLISH_TIMEOUT_MS });
  await PAGES.title(page).fill(title);
  await PAGES.body(page).click();
  for (const [index, line] of lines.entries()) {
    if (index > 0) await page.keyboard.press("Enter");
    if (line !== "") await page.keyboard.insertText(line);
  }
  // The draft is saved once it has a title: its id is then in the address.
  await page.waitForURL(/#\/editor\/post\/[0-9a-f]{24}/, { timeout: PUBLISH_TIMEOUT_MS });
  const postId = /#\/editor\/post\/([0-9a-f]{24})/.exec(page.url())![1]!;
  await PAGES.publish(page).click();
  await context.settle({ review: PAGES.finalReview(page) });
  await PAGES.finalReview(page).click();
  await context.settle({ confirm: PAGES.publishNow(page) });
  await context.commit();
  // The confirm button animates for as long as it is shown: it never counts as stable.
  await PAGES.publishNow(page).click({ force: true, noWaitAfter: true });
  await context.settle({ published: PAGES.published(page) }, { timeoutMs: PUBLISH_TIMEOUT_MS });
  const card = page.locator(`a[href^="${new URL(context.baseUrl).origin}/"]`).filter({ hasText: title }).first();
  const url = (await card.count()) > 0 ? await card.getAttribute("href") : undefined;
  return { post_id: postId, url: url ?? undefined, title };
};

export const lookupPerson: ActionHandler = async (context) => {
  const params = context.params as { handle: string } | { url: string };
  const { page } = context;
  await context.open("handle" in params ? PATHS.author(params.handle) : authorUrl(context, params.url));
  await context.settle({ author: PAGES.authorName(page) });
  const handle = decodeURIComponent(new URL(page.url()).pathname.split("/").filter(Boolean).pop() ?? "");
  const name = (await PAGES.authorName(page).innerText()).trim();
  const bio = (await PAGES.authorBio(page).count()) > 0 ? (await PAGES.authorBio(page).innerText()).trim() : "";
  const posts = [];
  for (const card of await PAGES.postCards(page).all()) {
    const link = card.locator("a.gh-card-link").first();
    const href = await link.getAttribute("href");
    posts.push({ title: (await card.locator(".gh-card-title").first().innerText()).trim(), url: href ? new URL(href, page.url()).toString() : undefined });
  }
  return { handle, name, headline: bio, url: page.url(), posts };
};

function authorUrl(context: DriverContext, url: string): string {
  const parsed = new URL(url);
  if (parsed.origin !== new URL(context.baseUrl).origin) {
    throw new ActionFailure("invalid_input", `Only pages of this site (${new URL(context.baseUrl).origin}) can be opened; got ${parsed.origin}.`);
  }
  if (!/^\/author\/[^/]+\/?$/.test(parsed.pathname)) throw new ActionFailure("invalid_input", "The URL is not an author page (/author/<slug>/).");
  return parsed.toString();
}
