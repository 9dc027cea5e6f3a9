import { DRIVER_API_VERSION, defineDriver } from "../../driver-api.js";
import { PARAMS, connect, lookupConversation, lookupPerson, post, sendMessage } from "./actions.js";
import { FAILURES } from "./pages.js";
import { SIGN_IN_SPEC, signedInAs } from "./sign-in.js";

/**
 * MediaWiki 1.39 (DESIGN §14): a post is a new page, a person is a `User:` page and its
 * contributions, a conversation is two users' talk pages. Sign-in with OATHAuth's TOTP and
 * ConfirmEdit's question after failed sign-ins.
 */
export const mediawikiDriver = defineDriver({
  apiVersion: DRIVER_API_VERSION,
  platform: {
    name: "mediawiki",
    title: "MediaWiki",
    description: "A MediaWiki wiki (1.39): pages, user pages and contributions, talk-page messages; two-factor codes from OATHAuth.",
    params: PARAMS,
    paces: {
      // $wgPasswordAttemptThrottle's default allows 5 sign-in attempts in 5 minutes (150 a day),
      // after which ConfirmEdit asks its question.
      connect: { per_hour: 5, min_gap_seconds: 60 },
      // New pages and talk-page messages are edits: $wgRateLimits lets a new account make 8 a
      // minute, and Wikipedia's bot policy asks an unflagged editor for about one every 10 s.
      post: { per_hour: 60, min_gap_seconds: 10 },
      send_message: { per_hour: 60, min_gap_seconds: 10 },
      // Reads ($wgRateLimits has none): kept to what a person reading would do.
      lookup_person: { per_hour: 300, min_gap_seconds: 1 },
      lookup_conversation: { per_hour: 300, min_gap_seconds: 1 },
    },
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
