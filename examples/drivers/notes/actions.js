// @ts-check
import { URL } from "node:url";
import { ActionFailure } from "action-service/driver";
import { PAGES, PATHS } from "./pages.js";
import { signedInAs } from "./sign-in.js";

/** @typedef {import("action-service/driver").ActionHandler} ActionHandler */
/** @typedef {import("action-service/driver").DriverContext} DriverContext */

/**
 * Alerts after a post that mean the platform refused it, by their first words, and the error code
 * each is: a refusal is read from the page, never guessed from an exception.
 */
const REFUSALS = [
  { text: "You already posted this.", code: /** @type {const} */ ("rejected") },
  { text: "Your post is too long.", code: /** @type {const} */ ("invalid_input") },
];

/** Connecting is signing in (the service has done it before the handler runs) and saying who. @type {ActionHandler} */
export const connect = async (context) => {
  const { page } = context;
  const handle = await signedInAs(page);
  if (!handle) throw new ActionFailure("ui_changed", "The feed shows no link to the account's profile.");
  await context.open(PATHS.person(handle));
  await context.settle({ person: PAGES.personName(page) });
  const profile = { handle, name: (await PAGES.personName(page).innerText()).trim() };
  await context.markConnected(profile);
  return { signed_in: true, profile };
};

/** A post from the feed's composer. @type {ActionHandler} */
export const post = async (context) => {
  const { page } = context;
  const { text } = /** @type {import("action-service/driver").ActionParams<"post">} */ (context.params);
  await context.settle({ composer: PAGES.composer(page) });
  await PAGES.composer(page).fill(text);
  // The commit point: from the click on, the post may exist on the platform even if the action
  // is interrupted, so the service never runs it again by itself.
  await context.commit();
  await PAGES.postButton(page).click();
  const state = await context.settle({ done: PAGES.postCreated(page), refused: PAGES.alert(page) });
  if (state === "refused") {
    const said = (await PAGES.alert(page).first().innerText()).trim();
    throw new ActionFailure(REFUSALS.find((refusal) => said.startsWith(refusal.text))?.code ?? "rejected", `The platform refused the post: ${said}`);
  }
  // The platform shows the new post at its own address: /posts/<id>.
  return { post_id: decodeURIComponent(new URL(page.url()).pathname.split("/").pop() ?? ""), url: page.url() };
};

/** A person's page, by handle or by its address on the platform. @type {ActionHandler} */
export const lookupPerson = async (context) => {
  const { page } = context;
  const params = /** @type {import("action-service/driver").ActionParams<"lookup_person">} */ (context.params);
  await context.open("url" in params ? ownPage(context, params.url) : PATHS.person(params.handle));
  // A person who does not exist shows "This page isn't available": a failure detector ends the action `not_found`.
  await context.settle({ person: PAGES.personName(page) });
  const handle = (await PAGES.personHandle(page).innerText()).trim().slice(1);
  const name = (await PAGES.personName(page).innerText()).trim();
  return { handle, name, url: page.url() };
};

/** Only the platform's own pages are opened. @param {DriverContext} context @param {string} url */
function ownPage(context, url) {
  const origin = new URL(context.baseUrl).origin;
  if (new URL(url).origin !== origin) throw new ActionFailure("invalid_input", `Only pages of this platform (${origin}) can be looked up; got ${new URL(url).origin}.`);
  return url;
}
