import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { HopProofs, PROOF_WINDOW_MS, type HopRequest } from "../../src/browser/live/hop.js";
import { Sealer } from "../../src/store/crypto.js";
import { FakeClock } from "../helpers/clock.js";

// The proof one coordinator puts on a live view it forwards to the holder of the page (DESIGN §11):
// bound to that request, accepted once, for seconds. Each side has its own clock, as two machines do.
const masterKey = randomBytes(32);
const key = (): Buffer => new Sealer(masterKey).deriveKey("live-view hop");
const request: HopRequest = {
  to: "https://10.0.0.2:8787",
  method: "GET",
  path: "/live/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg/ws?w=1280&h=800",
  token: "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg",
  upgrade: "websocket",
  websocketKey: "dGhlIHNhbXBsZSBub25jZQ==",
};

function pair(): { forwarder: HopProofs; holder: HopProofs; holderClock: FakeClock } {
  const holderClock = new FakeClock();
  return { forwarder: new HopProofs(key(), new FakeClock()), holder: new HopProofs(key(), holderClock), holderClock };
}

describe("the proof on a forwarded live view", () => {
  it("holds for the request it was made for, once: the same request again is refused", () => {
    const { forwarder, holder } = pair();
    const proof = forwarder.make(request);
    expect(holder.check(request, proof)).toBe("valid");
    expect(holder.check(request, proof)).toBe("replayed");
    // A new proof for the same request is another hop: it holds.
    expect(holder.check(request, forwarder.make(request))).toBe("valid");
  });

  it("is refused on any other request: another path, link, method, holder or WebSocket handshake", () => {
    const { forwarder, holder } = pair();
    const proof = forwarder.make(request);
    const others: Partial<HopRequest>[] = [
      { path: request.path.replace("w=1280", "w=640") },
      { path: "/live/ZZCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg/ws?w=1280&h=800", token: "ZZCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg" },
      { method: "POST" },
      { to: "https://10.0.0.3:8787" },
      { websocketKey: "YW5vdGhlciBoYW5kc2hha2U=" },
      { upgrade: "" },
    ];
    for (const other of others) expect(holder.check({ ...request, ...other }, proof), JSON.stringify(other)).toBe("mismatch");
    // None of those used it up.
    expect(holder.check(request, proof)).toBe("valid");
  });

  it(`expires: refused once the holder's clock is more than ${PROOF_WINDOW_MS / 1000} s past its time, either way`, () => {
    const { forwarder, holder, holderClock } = pair();
    const late = forwarder.make(request);
    const early = forwarder.make(request);
    holderClock.advance(PROOF_WINDOW_MS);
    expect(holder.check(request, forwarder.make(request))).toBe("valid"); // at the window's edge
    holderClock.advance(1);
    expect(holder.check(request, late)).toBe("expired");
    holderClock.advance(-2 * PROOF_WINDOW_MS - 2); // a holder whose clock is behind the forwarder's
    expect(holder.check(request, early)).toBe("expired");
  });

  it("a replay is refused all through the window, and as expired after it", () => {
    const { forwarder, holder, holderClock } = pair();
    const proof = forwarder.make(request);
    expect(holder.check(request, proof)).toBe("valid");
    holderClock.advance(PROOF_WINDOW_MS);
    expect(holder.check(request, proof)).toBe("replayed");
    holderClock.advance(1);
    expect(holder.check(request, proof)).toBe("expired");
  });

  it("is refused when made with another master key, or not made by a coordinator at all", () => {
    const { holder } = pair();
    const stranger = new HopProofs(new Sealer(randomBytes(32)).deriveKey("live-view hop"), new FakeClock());
    expect(holder.check(request, stranger.make(request))).toBe("mismatch");
    // The old proof's shape (a MAC of the token alone), and others.
    for (const proof of ["vPtEmhkNbf6dq0AZtiZnKBrABxWCIcIsnzJ1yIefdkQ", "", "v1..", "v1.1.x.y", `v1.${Date.now()}.${"a".repeat(22)}.mac.more`]) {
      expect(holder.check(request, proof), proof).toBe("malformed");
    }
  });
});
