// @ts-check
import { PAGES, PATHS } from "./pages.js";

/** @typedef {import("action-service/driver").Page} Page */
/** @typedef {import("action-service/driver").SignInSpec} SignInSpec */

/** "Logged in as: Bob Builder (bob)": the real name, then the login in brackets. */
const LOGGED_IN_AS = /Logged in as:\s*(.*?)\s*\(([^()]+)\)\s*$/;

/**
 * DokuWiki's sign-in, declared: a plain form (DokuWiki asks no second factor itself), "Remember me"
 * ticked so the saved session lasts, and its one refusal. The service's shared loop runs it.
 * @type {SignInSpec}
 */
export const SIGN_IN_SPEC = {
  start: PATHS.start,
  signedIn: PAGES.logOut,
  signedOut: PAGES.logIn,
  form: {
    path: PATHS.login,
    username: (page) => page.getByLabel("Username", { exact: true }),
    password: (page) => page.getByLabel("Password", { exact: true }),
    submit: (page) => page.getByRole("button", { name: "Log In", exact: true }),
    remember: (page) => page.getByLabel("Remember me"),
  },
  refused: (page) => page.getByText("Sorry, username or password was wrong."),
  challenges: [],
  // A health check asks the start page with the account's cookies, no browser page: the HTML names the login.
  probe: {
    path: PATHS.start,
    signedInAs: async (response) => /Logged in as: <bdi>[^<]*<\/bdi> \(<bdi>([^<]+)<\/bdi>\)/.exec(await response.text())?.[1],
  },
};

/** Who the page shows signed in, and their real name; undefined when nobody is. @param {Page} page */
export async function loggedInAs(page) {
  const item = PAGES.loggedInAs(page);
  if ((await item.count()) === 0) return undefined;
  const [, name, handle] = LOGGED_IN_AS.exec((await item.first().innerText()).trim()) ?? [];
  return handle ? { handle, name: name || handle } : undefined;
}

/** The login the page shows signed in: the service checks it against the account's username after every sign-in. @param {Page} page */
export async function signedInAs(page) {
  return (await loggedInAs(page))?.handle;
}
