import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { PostgresReader, createSandboxUser, sandboxSettings, sleep } from "../chaos/kill-support.js";
import { restClient } from "../helpers/processes.js";
import { fakeTimeLibrary } from "../helpers/fake-time.js";
import { eventually } from "../helpers/wait.js";
import { coordinatorsOnPostgres } from "./support.js";

// Clocks that disagree (DESIGN §11: on PostgreSQL every expiry and deadline is judged by the
// database's clock). Real `serve` processes on one PostgreSQL database, one of them under
// libfaketime (Debian's `faketime`) 40 s ahead or behind; the sandbox's own record says what was
// posted. Runs under `npm run test:postgres` only.
const machines = coordinatorsOnPostgres("skew");

/**
 * A process's environment with its wall clock `offset` off (libfaketime; the monotonic clock is
 * left alone). Only Node's: it drops the preload from its environment as it starts, so the Chromium
 * it launches does not inherit it (Chromium under libfaketime fails its own clock reads).
 */
function skewed(offset: string): Record<string, string> {
  return { LD_PRELOAD: fakeTimeLibrary(), FAKETIME: offset, FAKETIME_DONT_FAKE_MONOTONIC: "1", NODE_OPTIONS: "--import=data:text/javascript,delete%20process.env.LD_PRELOAD" };
}

/** What Node's Date says under `env`, minus this process's: proof that the clock really is off. */
function offsetSeen(env: Record<string, string>): number {
  const before = Date.now();
  const out = spawnSync(process.execPath, ["-e", "process.stdout.write(String(Date.now()))"], { env: { ...process.env, ...env }, encoding: "utf8" });
  return Number(out.stdout) - (before + Date.now()) / 2;
}

const AHEAD = skewed("+40s");
const BEHIND = skewed("-40s");

describe("coordinators whose clocks are 40 s off", () => {
  it("libfaketime sets Node's clock off by 40 s here", () => {
    expect(Math.abs(offsetSeen(AHEAD) - 40_000)).toBeLessThan(5_000);
    expect(Math.abs(offsetSeen(BEHIND) + 40_000)).toBeLessThan(5_000);
  });

  it("one 40 s ahead never takes a healthy coordinator's live actions: every post is claimed once, runs once and succeeds", { timeout: 240_000 }, async () => {
    const { url, start } = await machines.database();
    const db = await PostgresReader.open(url);
    try {
      const healthy = await start(1);
      const ahead = await start(2, AHEAD);
      const api = restClient(() => healthy.url, healthy.firstKey!);
      const stamp = Date.now().toString(36);
      // Every form the platform answers takes 2 s: each post (sign-in included) runs for many heartbeats.
      await sandboxSettings(machines.sandbox.url, { response_delay_ms: 2_000 });
      const posts: { id: string; handle: string; text: string }[] = [];
      for (let i = 0; i < 6; i++) {
        const handle = `ahead${stamp}${i}`;
        await createSandboxUser(machines.sandbox.url, handle);
        const account = (await api("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" })).json.id;
        const text = `skewed ${stamp} ${i}`;
        posts.push({ id: (await api("POST", "/v1/actions", { account_id: account, type: "post", params: { text } })).json.id, handle, text });
      }
      const ended = await eventually(
        async () => {
          const rows = await db.all<{ id: string; status: string; error_message: string | null }>(`SELECT id, status, error_message FROM actions WHERE type = 'post'`);
          return rows.every((row) => ["succeeded", "failed", "canceled"].includes(row.status)) ? rows : undefined;
        },
        { what: "every post to end", timeoutMs: 180_000, everyMs: 500 },
      );
      await sandboxSettings(machines.sandbox.url, { response_delay_ms: 0 });
      expect(ended.map((row) => `${row.status} ${row.error_message ?? ""}`.trim())).toEqual(posts.map(() => "succeeded"));
      // Claimed once each (the lease number grows at every hand-over), and none recovered.
      const leases = await db.all<{ lease: number }>(`SELECT lease FROM actions WHERE type = 'post'`);
      expect(leases.map((row) => Number(row.lease))).toEqual(posts.map(() => 1));
      expect(ahead.output()).not.toContain("recovered an action of a runner that is gone");
      expect(healthy.output()).not.toContain("recovered an action of a runner that is gone");
      // The healthy coordinator held posts while the skewed one was live beside it.
      const held = await db.all<{ n: number }>(`SELECT count(*) AS n FROM actions a JOIN runners r ON r.id = a.runner_id WHERE a.type = 'post' AND r.public_url = '${healthy.url}'`);
      expect(Number(held[0]!.n)).toBeGreaterThan(0);
      for (const post of posts) {
        const made = (await (await fetch(`${machines.sandbox.url}/_sandbox/posts?author=${post.handle}`)).json()) as { text: string }[];
        expect(made.filter((item) => item.text === post.text)).toHaveLength(1);
      }
    } finally {
      await db.close();
    }
  });

  it("one 40 s behind gives a challenge the database's deadline, keeps its page beside a healthy one, and gives up a lease it was frozen past", { timeout: 240_000 }, async () => {
    const { url, start } = await machines.database({ ACTION_SERVICE_CHALLENGE_TTL_SECONDS: "120" });
    const db = await PostgresReader.open(url);
    try {
      const behind = await start(1, BEHIND);
      const api = restClient(() => behind.url, behind.firstKey!);
      const handle = `behind${Date.now().toString(36)}`;
      await createSandboxUser(machines.sandbox.url, handle, "email");
      const account = (await api("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" })).json.id;
      const asked = Date.now();
      const created = (await api("POST", "/v1/actions?wait=30", { account_id: account, type: "connect" })).json;
      const paused = created.status === "needs_input" ? created : (await api("GET", `/v1/actions/${created.id}?wait=30`)).json;
      const answeredAt = Date.now();
      expect(paused, behind.output().slice(-3000)).toMatchObject({ status: "needs_input" });
      // Its deadline is 120 s from the pause by the database's clock (this machine's), not by the coordinator's.
      const deadline = Date.parse(paused.challenge.expires_at);
      expect(deadline).toBeGreaterThan(asked + 120_000 - 2_000);
      expect(deadline).toBeLessThan(answeredAt + 120_000 + 2_000);
      const holder = async (): Promise<{ runner_id: string; lease: number; status: string }> =>
        (await db.all<{ runner_id: string; lease: number; status: string }>(`SELECT runner_id, lease, status FROM actions WHERE id = '${paused.id}'`))[0]!;
      const held = await holder();

      // A healthy coordinator beside it, for several heartbeats: it does not take the page held there.
      const healthy = await start(2);
      await sleep(10_000);
      expect(await holder()).toEqual(held);
      expect(healthy.output()).not.toContain("recovered an action of a runner that is gone");

      // Frozen past its 15 s lease: the healthy one recovers the sign-in, which asks afresh there.
      behind.child.kill("SIGSTOP");
      const again = await eventually(
        async () => {
          const action = (await restClient(() => healthy.url, behind.firstKey!)("GET", `/v1/actions/${paused.id}`)).json;
          return action.status === "needs_input" && action.challenge.expires_at !== paused.challenge.expires_at ? action : undefined;
        },
        { what: "the healthy coordinator to recover the sign-in and ask afresh", timeoutMs: 90_000, everyMs: 500 },
      );
      const recovered = await holder();
      expect(recovered.runner_id).not.toBe(held.runner_id);
      expect(Date.parse(again.challenge.expires_at)).toBeGreaterThan(Date.now() + 120_000 - 30_000);
      // Let go: it does not renew the lease that ran out, and writes nothing for the action.
      behind.child.kill("SIGCONT");
      await eventually(() => /lease lost|lease not renewed in time/.test(behind.output()), { what: "the coordinator to give up the lease it was frozen past", timeoutMs: 30_000 });
      const [row] = await db.all<{ expired: boolean }>(
        `SELECT lease_expires_at <= to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS expired FROM runners WHERE id = '${held.runner_id}'`,
      );
      expect(row?.expired ?? true).toBe(true);
      await sleep(5_000);
      expect(await holder()).toEqual(recovered);
    } finally {
      await db.close();
    }
  });
});
