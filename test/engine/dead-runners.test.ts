import { spawn, spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { expireDeadLocalRunners } from "../../src/engine/execution/recovery.js";
import { processIdentity } from "../../src/engine/execution/process-identity.js";
import { createHarness, type Harness } from "../helpers/harness.js";

// A runner's process is judged dead early (its lease ended before it runs out) only when its
// identity proves it was this machine's process and that process is gone (DESIGN §11). Containers
// share host names and repeat pids: a host name and a dead-looking pid are not proof.

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.destroy();
});

const HOUR = 3_600_000;

describe("runners of processes that may be gone", () => {
  it("ends the lease of this machine's dead process (pid gone, or reused by another process), and waits for one of the same host name in another container", async () => {
    const h = await createHarness();
    harnesses.push(h);
    const deadPid = spawnSync("true").pid!;
    // A live process whose pid a runner recorded with another start: the pid was reused.
    const sleeper = spawn("sleep", ["60"]);
    try {
      const here = processIdentity(sleeper.pid!);
      const reusedIdentity = `${here.slice(0, here.lastIndexOf("/"))}/1`;
      const now = new Date().toISOString();
      const register = (id: string, host: string, pid: number): Promise<string> =>
        h.store.runners.register({ id, kind: "serve", host, pid, public_url: null, internal_url: null }, { now, leaseMs: HOUR });
      await register("run_dead_here", processIdentity(deadPid), deadPid);
      await register("run_reused_here", reusedIdentity, sleeper.pid!);
      await register("run_alive_here", processIdentity(sleeper.pid!), sleeper.pid!);
      // Another container: the same host name, another kernel boot or PID namespace, a pid that means nothing here.
      await register("run_other_container", `${hostname()}/0a1b2c3d-0000-4000-8000-000000000000/4026531836/12345`, deadPid);
      await register("run_host_name_only", hostname(), deadPid);

      await expireDeadLocalRunners(h.engine.core.lifecycle, { now: () => new Date() });
      const live = new Set((await h.store.runners.list()).filter((runner) => Date.parse(runner.lease_expires_at) > Date.now()).map((runner) => runner.id));
      expect(live.has("run_dead_here")).toBe(false);
      expect(live.has("run_reused_here")).toBe(false);
      expect(live.has("run_alive_here")).toBe(true);
      expect(live.has("run_other_container")).toBe(true);
      expect(live.has("run_host_name_only")).toBe(true);
    } finally {
      sleeper.kill();
    }
  });
});
