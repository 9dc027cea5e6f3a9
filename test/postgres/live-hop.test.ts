import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandboxUser } from "../chaos/kill-support.js";
import { openLiveView, type LiveView } from "../helpers/live-view.js";
import { freePort, restClient } from "../helpers/processes.js";
import { eventually } from "../helpers/wait.js";
import { coordinatorsOnPostgres, type Coordinator } from "./support.js";
import { selfSignedCertificate, sendRawHead, startTlsFront, type TlsFront } from "./tls-front.js";

// The hop a live view takes from the coordinator it reached to the one holding its page (DESIGN §11),
// as an operator runs it with TLS inside: the holder's ACTION_SERVICE_INTERNAL_URL is https, a TLS
// front (its certificate self-signed, trusted by the other coordinator through NODE_EXTRA_CA_CERTS)
// ends TLS before the holder's plain port and keeps the head of each request it passes on — what
// the holder receives. Two `serve` processes on one PostgreSQL database, real Chromium, the sandbox.
const machines = coordinatorsOnPostgres("live-hop");
const SESSION_SECRET = "web-session-cookie-secret";
const KEY_SECRET = "bearer-key-secret";

let dir: string;
let front: TlsFront;
let holder: Coordinator;
let other: Coordinator;
let signInUrl: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "action-service-live-hop-"));
  const certificate = selfSignedCertificate(dir);
  front = await startTlsFront(certificate, await freePort());
  const { start } = await machines.database();
  // The holder alone first: the connect it starts pauses with its page there.
  holder = await start(1, { ACTION_SERVICE_INTERNAL_URL: `https://127.0.0.1:${front.port}` });
  front.upstreamPort = Number(new URL(holder.url).port);
  const viaHolder = restClient(() => holder.url, holder.firstKey!);
  const handle = `hop${Date.now().toString(36)}`;
  await createSandboxUser(machines.sandbox.url, handle, "email");
  const account = (await viaHolder("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" })).json.id;
  const action = (await viaHolder("POST", "/v1/actions?wait=30", { account_id: account, type: "connect" })).json;
  expect(action.status).toBe("needs_input");
  other = await start(2, { NODE_EXTRA_CA_CERTS: certificate.certFile });
  signInUrl = (await restClient(() => other.url, holder.firstKey!)("GET", `/v1/actions/${action.id}`)).json.challenge.sign_in_url;
  expect(signInUrl.startsWith(`${other.url}/live/`)).toBe(true);
}, 180_000);

afterAll(async () => {
  await front?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A live view opened on the other coordinator, with the site's cookie and an API key the browser happens to send. */
async function viewThroughOther(): Promise<LiveView> {
  return openLiveView(signInUrl, { cookie: `action_service_session=${SESSION_SECRET}`, authorization: `Bearer ${KEY_SECRET}` });
}

describe("the live-view hop between coordinators", () => {
  it("crosses to an https internal URL, carrying no cookie and no Authorization; a captured hop replayed, or moved to another path, is refused", { timeout: 120_000 }, async () => {
    const view = await viewThroughOther();
    try {
      // Over TLS to the holder: its page streams.
      expect(await view.next("state")).toMatchObject({ status: "needs_input", challenge: { kind: "email_code" } });
      expect(await view.next("frame")).toMatchObject({ width: expect.any(Number), height: expect.any(Number) });
    } finally {
      view.close();
    }
    expect(front.heads).toHaveLength(1);
    const hop = front.heads[0]!;
    // What the holder received: the proof and the upgrade, and neither of the client's credentials.
    expect(hop).toMatch(/^x-action-service-forwarded: /im);
    expect(hop).toMatch(/^upgrade: websocket/im);
    expect(hop).not.toMatch(/^(cookie|authorization):/im);
    expect(hop).not.toContain(SESSION_SECRET);
    expect(hop).not.toContain(KEY_SECRET);

    // The same request sent again to the holder, seconds later, by whoever captured it: refused.
    const holderPort = Number(new URL(holder.url).port);
    expect(await sendRawHead(holderPort, hop)).toMatch(/^HTTP\/1\.1 403 /);
    await eventually(() => holder.output().includes("its proof was already used"), { what: "the holder to log why it refused the replay" });
    // Its proof on another request (the same link, another size of view): refused, and not for its nonce.
    const elsewhere = hop.replace(/w=1280&h=800/, "w=640&h=480");
    expect(elsewhere).not.toBe(hop);
    expect(await sendRawHead(holderPort, elsewhere)).toMatch(/^HTTP\/1\.1 403 /);
    await eventually(() => holder.output().includes("its proof is for another request"), { what: "the holder to log why it refused the moved proof" });

    // A new hop is made for each view: a second one still works.
    const again = await viewThroughOther();
    try {
      expect(await again.next("frame")).toMatchObject({ width: expect.any(Number) });
    } finally {
      again.close();
    }
    expect(front.heads).toHaveLength(2);
    expect(front.heads[1]).not.toBe(hop);
  });
});
