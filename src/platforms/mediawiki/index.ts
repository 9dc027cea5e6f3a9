import { defineDriver } from "../define-driver.js";
import { PARAMS, connect, lookupConversation, lookupPerson, post, sendMessage } from "./actions.js";
import { FAILURES } from "./pages.js";
import { SIGN_IN_SPEC, signedInAs } from "./sign-in.js";

/**
 * MediaWiki 1.39 (DESIGN §14): a post is a new page, a person is a `User:` page and its
 * contributions, a conversation is two users' talk pages. Sign-in with OATHAuth's TOTP and
 * ConfirmEdit's question after failed sign-ins.
 */
export const mediawikiDriver = defineDriver({
  platform: {
    name: "mediawiki",
    title: "MediaWiki",
    description: "A MediaWiki wiki (1.39): pages, user pages and contributions, talk-page messages; two-factor codes from OATHAuth.",
    params: PARAMS,
  },
  failures: FAILURES,
  signIn: SIGN_IN_SPEC,
  signedInAs,
  whenUnreachable: "Is the wiki running? Check its address in ACTION_SERVICE_PLATFORMS (mediawiki=http://…).",
  actions: {
    connect,
    post,
    lookup_person: lookupPerson,
    lookup_conversation: lookupConversation,
    send_message: sendMessage,
  },
});
