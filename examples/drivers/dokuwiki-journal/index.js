// @ts-check
/**
 * "dokuwiki-journal": an example code driver for action-service, for a DokuWiki wiki. A journal:
 * a post needs no page name — the driver names the page from the date and the text's first words,
 * and finds a free one — which a platform file's recipe cannot do. Written only with
 * `action-service/driver`, as any driver kept outside the service is. Load it with
 *
 *   ACTION_SERVICE_DRIVERS=examples/drivers/dokuwiki-journal \
 *   ACTION_SERVICE_PLATFORMS=dokuwiki-journal=http://wiki.example.com action-service serve
 */
import { defineDriver } from "action-service/driver";
import { PARAMS, connect, lookupPerson, post } from "./actions.js";
import { FAILURES } from "./pages.js";
import { SIGN_IN_SPEC, signedInAs } from "./sign-in.js";

export default defineDriver({
  // The action-service/driver version this driver was written for: another major version is refused at start-up.
  apiVersion: "1.0.0",
  platform: {
    name: "dokuwiki-journal",
    title: "DokuWiki journal",
    description: "A journal on a DokuWiki wiki (2022-07-31 \"Igor\", default template, English): a post is a new page named from the date and the text's first words (journal:2026-11-27-hello-world, -2 when taken); a person is their user page, user:<login>.",
    params: PARAMS,
    paces: {
      // DokuWiki has no rate limit of its own; a journal is written by a person's hand, and every
      // save rebuilds the wiki's search index: a few a minute at most.
      post: { per_hour: 120, min_gap_seconds: 2 },
      connect: { per_hour: 20 },
      lookup_person: { per_hour: 600 },
    },
  },
  failures: FAILURES,
  signIn: SIGN_IN_SPEC,
  signedInAs,
  whenUnreachable: "Is the wiki running? Check its address in ACTION_SERVICE_PLATFORMS (dokuwiki-journal=http://…).",
  actions: { connect, post, lookup_person: lookupPerson },
});
