import { DRIVER_API_VERSION, defineDriver } from "../../driver-api.js";
import { PARAMS, connect, lookupPerson, post } from "./actions.js";
import { FAILURES, INBOX } from "./pages.js";
import { SIGN_IN_SPEC, signedInAs } from "./sign-in.js";

/**
 * Ghost 6 (DESIGN §14): staff sign in by e-mail and password, and a new device is asked for a code
 * Ghost e-mails (`email_code`); a post is published from the editor; a person is an author page.
 * Ghost allows few code submissions an hour: the saved session is what keeps an account signed in.
 */
export const ghostDriver = defineDriver({
  apiVersion: DRIVER_API_VERSION,
  platform: {
    name: "ghost",
    title: "Ghost",
    description: "A Ghost site (6.x): publish posts as a staff user, read author pages; sign-in codes by e-mail on a new device.",
    params: PARAMS,
    inbox: INBOX,
    paces: {
      // Ghost's brute-force guard (its `spam.user_login` settings) locks an account out after a few
      // sign-ins in an hour, and each new-device sign-in mails a code: a handful an hour at most.
      connect: { per_hour: 4, min_gap_seconds: 60 },
      // A staff writer publishing more than a post a minute, or dozens a day, reads as a bot to
      // readers and to the site's mail-outs (each post may e-mail every member).
      post: { per_hour: 10, per_day: 50, min_gap_seconds: 60 },
      // Public author pages: polite crawling, as a person clicking through.
      lookup_person: { per_hour: 120, min_gap_seconds: 2 },
    },
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
