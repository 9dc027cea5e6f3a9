import { describe, expect, it } from "vitest";
import { PostgresReader, createSandboxUser } from "../chaos/kill-support.js";
import { codePageLayout, openLiveView } from "../helpers/live-view.js";
import { restClient } from "../helpers/processes.js";
import { coordinatorsOnPostgres } from "./support.js";

// The page of a paused action stays on the coordinator that holds it (DESIGN §11); answers and
// live views reach it through any other. Three `serve` processes with their own data dirs on one
// PostgreSQL database, real Chromium, the sandbox. Runs under `npm run test:postgres` only.
const machines = coordinatorsOnPostgres("live-links");

async function latestCode(handle: string): Promise<string> {
  const mail = (await (await fetch(`${machines.sandbox.url}/_sandbox/outbox?to=${handle}`)).json()) as { code: string }[];
  return mail[0]!.code;
}

describe("a page held by one coordinator, reached through the others", () => {
  it("an answer sent to C reaches the page held by A; a live link read through B streams that page and takes clicks and typing", { timeout: 180_000 }, async () => {
    const { url, start } = await machines.database();
    const db = await PostgresReader.open(url);
    try {
      // A alone first: the two connects it starts pause with their pages there.
      const a = await start(1);
      const key = a.firstKey!;
      const viaA = restClient(() => a.url, key);
      const stamp = Date.now().toString(36);
      const handles = [`lla${stamp}`, `llb${stamp}`, `llc${stamp}`];
      for (const handle of handles) await createSandboxUser(machines.sandbox.url, handle, "email");
      const paused: string[] = [];
      for (const handle of handles.slice(0, 2)) {
        const account = (await viaA("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" })).json.id;
        const action = (await viaA("POST", "/v1/actions?wait=30", { account_id: account, type: "connect" })).json;
        expect(action.status).toBe("needs_input");
        paused.push(action.id);
      }
      const [holder] = await db.all<{ public_url: string }>(`SELECT r.public_url FROM actions a JOIN runners r ON r.id = a.runner_id WHERE a.id = '${paused[0]}'`);
      expect(holder!.public_url).toBe(a.url);
      const b = await start(2);
      const c = await start(3);
      const viaB = restClient(() => b.url, key);
      const viaC = restClient(() => c.url, key);

      // The answer goes to C; A's page takes it.
      const answered = await viaC("POST", `/v1/actions/${paused[0]}/answer?wait=30`, { answer: await latestCode(handles[0]!) });
      expect(answered.json).toMatchObject({ status: "succeeded", result: { profile: { handle: handles[0] } } });

      // Read through B, the link is B's; the view it opens is of A's page.
      const seen = (await viaB("GET", `/v1/actions/${paused[1]}`)).json;
      expect(seen.challenge.sign_in_url.startsWith(`${b.url}/live/`)).toBe(true);
      const view = await openLiveView(seen.challenge.sign_in_url);
      try {
        expect(await view.next("state")).toMatchObject({ status: "needs_input", challenge: { kind: "email_code" } });
        const frame = await view.next("frame");
        expect(frame).toMatchObject({ width: expect.any(Number), height: expect.any(Number) });
        expect(Buffer.from(frame.data, "base64").subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8])); // a JPEG
        // Click the code field, type the code, click Verify: the page signs in by itself.
        const layout = await codePageLayout(machines.sandbox.url, handles[2]!, { width: frame.width, height: frame.height });
        view.send({ type: "click", ...layout.code });
        view.send({ type: "text", text: await latestCode(handles[1]!) });
        view.send({ type: "click", ...layout.verify });
        // A wait returns at once while the action is at needs_input: asked again until it has moved on.
        let done = (await viaB("GET", `/v1/actions/${paused[1]}`)).json;
        for (const deadline = Date.now() + 30_000; done.status === "needs_input" || done.status === "running"; ) {
          if (Date.now() > deadline) break;
          await new Promise((resolve) => setTimeout(resolve, 200));
          done = (await viaB("GET", `/v1/actions/${paused[1]}?wait=5`)).json;
        }
        expect(done).toMatchObject({ status: "succeeded", result: { profile: { handle: handles[1] } } });
        // The live page's state, asked of B, says how it ended.
        const state = (await (await fetch(`${seen.challenge.sign_in_url}/state`)).json()) as { status: string; final: boolean };
        expect(state).toMatchObject({ status: "succeeded", final: true });
      } finally {
        view.close();
      }
      // Both ran on A, and were charged once each.
      const ran = await db.all<{ public_url: string; cost: number }>(`SELECT r.public_url, a.cost FROM actions a JOIN runners r ON r.id = a.runner_id WHERE a.id IN ('${paused[0]}', '${paused[1]}')`);
      expect(ran.map((row) => row.public_url)).toEqual([a.url, a.url]);
    } finally {
      await db.close();
    }
  });
});
