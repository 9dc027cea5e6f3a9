import { defineDriver } from "../define-driver.js";
import { PARAMS, connect, lookupPerson, post } from "./actions.js";
import { FAILURES, INBOX } from "./pages.js";
import { SIGN_IN_SPEC, signedInAs } from "./sign-in.js";

/**
 * Ghost 6 (DESIGN §14): staff sign in by e-mail and password, and a new device is asked for a code
 * Ghost e-mails (`email_code`); a post is published from the editor; a person is an author page.
 * Ghost allows few code submissions an hour: the saved session is what keeps an account signed in.
 */
export const ghostDriver = defineDriver({
  platform: {
    name: "ghost",
    title: "Ghost",
    description: "A Ghost site (6.x): publish posts as a staff user, read author pages; sign-in codes by e-mail on a new device.",
    params: PARAMS,
    inbox: INBOX,
  },
  failures: FAILURES,
  signIn: SIGN_IN_SPEC,
  signedInAs,
  // The admin asks ghost.org and its CDN for news and assets: nothing the driver needs.
  blockedHosts: ["ghost.org", "ghost.io", "gravatar.com"],
  whenUnreachable: "Is the site running? Check its address in ACTION_SERVICE_PLATFORMS (ghost=http://…).",
  actions: {
    connect,
    post,
    lookup_person: lookupPerson,
  },
});
