import { describe, expect, it } from "vitest";
import { SenderLimit, senderKey } from "../../src/inbox/sender-limit.js";

// The SMTP listener's per-sender rate limit (DESIGN §15): one that rotating addresses cannot reset.

describe("who a sender is", () => {
  it("an IPv6 address counts as its /64; an IPv4 address as itself, IPv4-mapped IPv6 included", () => {
    expect(senderKey("2001:db8:1:2:aaaa::1")).toBe(senderKey("2001:db8:1:2:bbbb:cccc:dddd:eeee"));
    expect(senderKey("2001:db8:1:2::1")).not.toBe(senderKey("2001:db8:1:3::1"));
    expect(senderKey("::ffff:192.0.2.1")).toBe(senderKey("192.0.2.1"));
    expect(senderKey("192.0.2.1")).not.toBe(senderKey("192.0.2.2"));
  });
});

describe("the limit", () => {
  it("another address of the same /64 does not reset the count", () => {
    const limit = new SenderLimit(2);
    expect([limit.take("2001:db8::1"), limit.take("2001:db8::2"), limit.take("2001:db8::ffff:3")]).toEqual([true, true, false]);
    expect(limit.take("2001:db8:0:1::1")).toBe(true);
  });

  it("new senders without end push out the quietest, never the count of one sending now", () => {
    const limit = new SenderLimit(1, 3);
    expect(limit.take("192.0.2.1")).toBe(true);
    // Each round, a new sender (a rotated address) and the busy one again: the table stays full.
    for (let i = 0; i < 20; i++) {
      expect(limit.take(`198.51.100.${i}`)).toBe(true);
      expect(limit.take("192.0.2.1")).toBe(false);
    }
  });

  it("a minute later the sender may send again", () => {
    let now = 1_000_000;
    const limit = new SenderLimit(1, 10, () => now);
    expect([limit.take("192.0.2.1"), limit.take("192.0.2.1")]).toEqual([true, false]);
    now += 60_000;
    expect(limit.take("192.0.2.1")).toBe(true);
  });
});
