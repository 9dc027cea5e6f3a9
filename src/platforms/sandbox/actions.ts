import { ActionFailure } from "../../domain/errors.js";
import type { ActionParams } from "../../domain/actions.js";
import type { ActionHandler, DriverContext } from "../driver.js";
import { PAGES, PATHS, REFUSALS } from "./pages.js";

/** After a submit: the success state, or an alert that says why the platform refused. */
async function submitted(context: DriverContext, success: ReturnType<(typeof PAGES)[keyof typeof PAGES]>): Promise<void> {
  const state = await context.settle({ done: success, refused: PAGES.alert(context.page) });
  if (state === "done") return;
  const text = (await PAGES.alert(context.page).first().innerText()).trim();
  const refusal = REFUSALS.find((candidate) => text.startsWith(candidate.text));
  throw new ActionFailure(refusal?.code ?? "rejected", `The platform refused it: ${text}`);
}

/** The last path segment of the page URL (an id the platform put there). */
function idFromUrl(context: DriverContext): string {
  return decodeURIComponent(new URL(context.page.url()).pathname.split("/").pop() ?? "");
}

export const connect: ActionHandler = async (context) => {
  const { page } = context;
  await PAGES.profileLink(page).click();
  await context.settle({ person: PAGES.personName(page) });
  const profile = { handle: idFromUrl(context), name: (await PAGES.personName(page).innerText()).trim() };
  await context.markConnected(profile);
  return { signed_in: true, profile };
};

export const post: ActionHandler = async (context) => {
  const { text } = context.params as ActionParams<"post">;
  const { page } = context;
  await PAGES.composer(page).fill(text);
  await context.commit();
  await PAGES.postButton(page).click();
  await submitted(context, PAGES.postCreated(page));
  return { post_id: idFromUrl(context), url: page.url() };
};

export const lookupPerson: ActionHandler = async (context) => {
  const params = context.params as ActionParams<"lookup_person">;
  const { page } = context;
  await context.open("url" in params ? sameOrigin(context, params.url) : PATHS.person(params.handle));
  await context.settle({ person: PAGES.personName(page) });
  const handleLine = page.getByRole("main").getByText(/^@[\w.-]+$/).first();
  const handle = (await handleLine.innerText()).trim().slice(1);
  const name = (await PAGES.personName(page).innerText()).trim();
  // The headline is the line right under the handle; it is empty when the person wrote none
  // (the next non-empty text would be the "Message" button or a post).
  const headlineLine = handleLine.locator("xpath=following-sibling::p[1]");
  const headline = (await headlineLine.count()) > 0 ? (await headlineLine.innerText()).trim() : "";
  return { handle, name, headline, url: page.url() };
};

export const lookupConversation: ActionHandler = async (context) => {
  const params = context.params as ActionParams<"lookup_conversation">;
  const { page } = context;
  await context.open("with" in params ? PATHS.newMessage(params.with) : PATHS.conversation(params.conversation_id));
  const state = await context.settle({ conversation: PAGES.conversation(page), none: PAGES.newMessage(page) });
  if (state === "none") throw new ActionFailure("not_found", `The account has no conversation with @${"with" in params ? params.with : ""}.`);
  const messages = [];
  for (const item of await PAGES.messageList(page).all()) {
    const from = (await item.getByText(/^@[\w.-]+$/).first().innerText()).trim().slice(1);
    const sentAt = (await item.locator("time").first().getAttribute("datetime")) ?? "";
    const text = (await item.getByRole("paragraph").last().innerText()).trim();
    messages.push({ from, text, sent_at: sentAt });
  }
  return { conversation_id: idFromUrl(context), messages };
};

export const sendMessage: ActionHandler = async (context) => {
  const { to, text } = context.params as ActionParams<"send_message">;
  const { page } = context;
  await context.open(PATHS.newMessage(to));
  await context.settle({ conversation: PAGES.conversation(page), fresh: PAGES.newMessage(page) });
  await PAGES.messageBox(page).fill(text);
  await context.commit();
  await PAGES.sendButton(page).click();
  await page.waitForURL(/#message-/).catch(() => undefined);
  await submitted(context, PAGES.conversation(page));
  const url = new URL(page.url());
  return { conversation_id: idFromUrl(context), message_id: url.hash.replace(/^#message-/, "") };
};

function sameOrigin(context: DriverContext, url: string): string {
  if (new URL(url).origin !== new URL(context.baseUrl).origin) {
    throw new ActionFailure("invalid_input", `Only pages of this platform (${new URL(context.baseUrl).origin}) can be opened; got ${new URL(url).origin}.`);
  }
  return url;
}
