import { describe, expect, it } from "vitest";
import { PostgresReader, createSandboxUser, sandboxSettings, sleep } from "../chaos/kill-support.js";
import { restClient } from "../helpers/processes.js";
import { coordinatorsOnPostgres } from "./support.js";

// Fencing (DESIGN §11) with real processes on one PostgreSQL database: a coordinator stopped
// (SIGSTOP) while it runs a post, for longer than its lease, then let go (SIGCONT) after another
// coordinator recovered and ran that post. Runs under `npm run test:postgres` only.
const machines = coordinatorsOnPostgres("fencing");

describe("a coordinator stopped past its lease while it runs a post", () => {
  it("writes nothing more for that action once let go: the post is made once, by the coordinator that recovered it, and charged once", { timeout: 180_000 }, async () => {
    const { url, start } = await machines.database({ ACTION_SERVICE_LOG_LEVEL: "info" });
    const db = await PostgresReader.open(url);
    try {
      const first = await start(1);
      const api = restClient(() => first.url, first.firstKey!);
      const handle = `fence${Date.now().toString(36)}`;
      await createSandboxUser(machines.sandbox.url, handle);
      // Every form the platform answers takes 3 s: the run is long before its commit point.
      await sandboxSettings(machines.sandbox.url, { response_delay_ms: 3_000 });
      const account = (await api("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" })).json.id;
      const text = `fenced ${Date.now()}`;
      const created = (await api("POST", "/v1/actions", { account_id: account, type: "post", params: { text } })).json;
      const row = async (): Promise<{ status: string; runner_id: string | null; committed_at: string | null; lease: number }> =>
        (await db.all<any>(`SELECT status, runner_id, committed_at, lease FROM actions WHERE id = '${created.id}'`))[0];
      for (let i = 0; (await row()).status !== "running"; i++) {
        if (i > 400) throw new Error(`the post never ran: ${JSON.stringify(await row())}`);
        await sleep(25);
      }
      const held = await row();
      expect(held.committed_at).toBeNull();
      first.child.kill("SIGSTOP");

      // Another coordinator takes it over once the stopped one's lease (15 s) has run out.
      const second = await start(2);
      const viaSecond = restClient(() => second.url, first.firstKey!);
      let done: any;
      for (const deadline = Date.now() + 90_000; ; ) {
        done = (await viaSecond("GET", `/v1/actions/${created.id}?wait=10`)).json;
        if (done.status === "succeeded" || done.status === "failed" || Date.now() > deadline) break;
      }
      expect(done).toMatchObject({ status: "succeeded" });
      const after = await row();
      expect(after.runner_id).not.toBe(held.runner_id);
      expect(after.lease).toBeGreaterThan(held.lease);
      const written = async (): Promise<string> =>
        JSON.stringify([
          await row(),
          await db.all(`SELECT kind, amount FROM credit_ledger WHERE action_id = '${created.id}' ORDER BY seq`),
          await db.all(`SELECT count(*) AS n FROM events WHERE subject_id = '${created.id}'`),
          await db.all(`SELECT id, state, refusals FROM challenges WHERE action_id = '${created.id}'`),
          await db.all(`SELECT count(*) AS n FROM failure_screenshots WHERE action_id = '${created.id}'`),
        ]);
      const before = await written();

      // Let go: its page goes on (the platform answers its sign-in), its next write is refused.
      first.child.kill("SIGCONT");
      // It learns it in one of two ways: its self-fencing timer fires first (it was stopped past
      // the lease), or a renewal finds the lease gone.
      const sawItLost = (): boolean => /lease lost|lease not renewed in time/.test(first.output());
      for (const deadline = Date.now() + 30_000; !sawItLost(); ) {
        if (Date.now() > deadline) throw new Error(`the first coordinator never saw its lease lost: ${first.output().slice(-3000)}`);
        await sleep(100);
      }
      // Past the page's next answer (3 s): were it not fenced, it would have clicked Post by now.
      await sleep(8_000);
      expect(await written()).toBe(before);
      const posts = (await (await fetch(`${machines.sandbox.url}/_sandbox/posts?author=${handle}`)).json()) as { text: string }[];
      expect(posts.filter((post) => post.text === text)).toHaveLength(1);
      const [ledger] = await db.all<{ sum: number; balance: number }>(
        `SELECT (SELECT sum(amount) FROM credit_ledger WHERE workspace_id = w.id) AS sum, w.balance FROM workspaces w`,
      );
      expect(ledger!.sum).toBe(ledger!.balance);
      const charged = await db.all<{ amount: number }>(`SELECT amount FROM credit_ledger WHERE action_id = '${created.id}'`);
      expect(-charged.reduce((sum, entry) => sum + entry.amount, 0)).toBe(done.cost);
      const [{ price }] = (await db.all<{ price: number }>(`SELECT price FROM actions WHERE id = '${created.id}'`)) as [{ price: number }];
      expect(done.cost).toBe(price);
      // It is still a working coordinator: it serves requests under its new lease.
      expect((await api("GET", `/v1/actions/${created.id}`)).json.status).toBe("succeeded");
    } finally {
      await db.close();
    }
  });
});
