// @ts-check
import { PAGES, PATHS, SIGN_IN } from "./pages.js";

/** @typedef {import("action-service/driver").Page} Page */
/** @typedef {import("action-service/driver").SignInSpec} SignInSpec */

/** A challenge page's message: its first paragraph, the platform's own words. @param {Page} page */
const firstParagraph = async (page) => (await page.getByRole("main").getByRole("paragraph").first().innerText()).trim();

/** @param {string} name */
const heading = (name) => /** @param {Page} page */ (page) => page.getByRole("heading", { level: 1, name, exact: true });

/**
 * The sign-in, declared: the service's shared loop fills the form, meets each challenge (a stored
 * TOTP secret answers a two-factor code; the inbox answers a mailed or texted one; anything else
 * pauses the action at needs_input for a person or an agent), and tells a refused password apart.
 * @type {SignInSpec}
 */
export const SIGN_IN_SPEC = {
  start: PATHS.feed,
  signedIn: PAGES.feed,
  signedOut: PAGES.signIn,
  form: { username: SIGN_IN.username, password: SIGN_IN.password, submit: SIGN_IN.submit },
  // The sign-in page shown again after sending it is the refusal; its alert says why.
  refused: PAGES.signIn,
  alert: PAGES.alert,
  challenges: [
    { kind: "two_factor_code", shows: heading("Two-factor authentication"), field: SIGN_IN.code, submit: SIGN_IN.verify, remember: SIGN_IN.remember, message: firstParagraph },
    { kind: "email_code", shows: heading("Check your email"), field: SIGN_IN.code, submit: SIGN_IN.verify, remember: SIGN_IN.remember, message: firstParagraph },
    { kind: "sms_code", shows: heading("Check your phone"), field: SIGN_IN.code, submit: SIGN_IN.verify, remember: SIGN_IN.remember, message: firstParagraph },
    // No field: approved on the other device, the page moves on by itself.
    { kind: "device_approval", shows: heading("Check your other device"), remember: SIGN_IN.remember, message: firstParagraph },
  ],
};

/**
 * Who is signed in on this page: the last segment of the navigation's profile link. The service
 * checks it against the account's username after every sign-in.
 * @param {Page} page
 */
export async function signedInAs(page) {
  const link = PAGES.profileLink(page);
  if ((await link.count()) === 0) return undefined;
  const href = await link.first().getAttribute("href");
  return href ? decodeURIComponent(href.split("/").filter(Boolean).pop() ?? "") || undefined : undefined;
}
