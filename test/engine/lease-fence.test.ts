import { performance } from "node:perf_hooks";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/engine/clock.js";
import { Lease } from "../../src/engine/execution/lease.js";
import { silentLogger } from "../../src/engine/logger.js";
import { createHarness, type Harness } from "../helpers/harness.js";
import { eventually } from "../helpers/wait.js";

// The self-fencing timer (DESIGN §11): a lease registered and never renewed is given up here before
// its end, whatever the moment its timer fires. Node's timers often fire a fraction of a millisecond
// before `performance.now()` reaches their end; a fence that then found its lease still held, and
// stopped there, left a runner whose database no longer answered running its actions for ever
// (seen in CI: test/engine/self-fencing, a run never stopped). Twenty leases, so that a fence which
// gives up when its timer is early fails here on any machine.

const LEASE_MS = 1_500;
const LEASES = 20;

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.destroy();
});

describe("a lease that is not renewed", () => {
  it("is given up here before it ends, every time", async () => {
    const h = await createHarness();
    harnesses.push(h);
    const lostAt = new Map<string, number>();
    const leases: Lease[] = [];
    for (let i = 0; i < LEASES; i += 1) {
      leases.push(
        new Lease({
          store: h.store,
          logger: silentLogger,
          kind: "test",
          clock: systemClock,
          leaseMs: LEASE_MS,
          publicUrl: () => "http://127.0.0.1:1",
          internalUrl: () => "http://127.0.0.1:1",
          onLost: (lostId) => lostAt.set(lostId, performance.now()),
        }),
      );
    }
    try {
      const registered = new Map<string, number>();
      for (const lease of leases) {
        registered.set(lease.id, performance.now());
        await lease.register();
      }
      await eventually(() => lostAt.size === LEASES, { what: "every lease given up", timeoutMs: 10 * LEASE_MS });
      for (const [id, at] of lostAt) {
        // Given up after the self-fencing share of the lease, and before the lease's end.
        expect(at - registered.get(id)!).toBeGreaterThanOrEqual(LEASE_MS * 0.8 - 1);
        expect(at - registered.get(id)!).toBeLessThan(LEASE_MS);
        expect(leases.find((lease) => lease.id === id)!.holdsHere(id)).toBe(false);
      }
    } finally {
      for (const lease of leases) lease.stop();
    }
  });
});
