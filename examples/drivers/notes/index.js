// @ts-check
/**
 * "notes": an example code driver for action-service, for the sandbox platform that ships with it
 * (`action-service sandbox`). It is written only with `action-service/driver`, as any driver kept
 * outside the service is. Load it with
 *
 *   ACTION_SERVICE_DRIVERS=examples/drivers/notes ACTION_SERVICE_PLATFORMS=notes=http://127.0.0.1:8788 action-service serve
 */
import { defineDriver } from "action-service/driver";
import { connect, lookupPerson, post } from "./actions.js";
import { FAILURES } from "./pages.js";
import { SIGN_IN_SPEC, signedInAs } from "./sign-in.js";

export default defineDriver({
  // The action-service/driver version this driver was written for: another major version is refused at start-up.
  apiVersion: "1.0.0",
  platform: {
    name: "notes",
    title: "Sandbox Notes",
    description: "Posts and people on the sandbox platform, through an example driver kept outside the service (examples/drivers/notes).",
    // How the sandbox's mails and texts read: the code is the first capture group.
    inbox: { code: /\bSandbox Social (?:sign-in )?code is (\d{6})\b/, senders: ["sandbox.localhost"] },
    // What one account may do: the sandbox tolerates a lot, a real platform far less. Say why here.
    paces: { post: { per_hour: 120, min_gap_seconds: 1 } },
  },
  failures: FAILURES,
  signIn: SIGN_IN_SPEC,
  signedInAs,
  whenUnreachable: "Is the sandbox running (`action-service sandbox`), and does ACTION_SERVICE_PLATFORMS say where (notes=http://…)?",
  actions: { connect, post, lookup_person: lookupPerson },
});
