import { DRIVER_API_VERSION, defineDriver } from "../../driver-api.js";
import { connect, lookupConversation, lookupPerson, post, sendMessage } from "./actions.js";
import { FAILURES, INBOX } from "./pages.js";
import { SIGN_IN_SPEC, signedInAs } from "./sign-in.js";

/** The driver for the sandbox platform (DESIGN §9). */
export const sandboxDriver = defineDriver({
  apiVersion: DRIVER_API_VERSION,
  platform: {
    name: "sandbox",
    title: "Sandbox Social",
    description: "A local social network with every sign-in challenge and failure, for demos and tests (`action-service sandbox`).",
    inbox: INBOX,
    // Generous, so tests and demos never wait; the sandbox's own rate limit (docs/sandbox.md) is what shows a "slow down".
    paces: {
      connect: { per_hour: 600 },
      post: { per_hour: 600 },
      send_message: { per_hour: 600 },
    },
  },
  failures: FAILURES,
  signIn: SIGN_IN_SPEC,
  signedInAs,
  whenUnreachable: "Is the sandbox running? Start it with `action-service sandbox` (or `npm start`, which runs it beside the service), and check SANDBOX_URL.",
  actions: {
    connect,
    post,
    lookup_person: lookupPerson,
    lookup_conversation: lookupConversation,
    send_message: sendMessage,
  },
});
