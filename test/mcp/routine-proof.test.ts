import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { call as callTool } from "../helpers/mcp.js";

// The proof, as an agent meets it (DESIGN §6, §14): through the MCP SDK's own client, against
// the real sandbox in real Chromium. The agent looks at a page no built-in action covers (the
// profile's bio) without acting, does the task once with browser_steps, saves it as a routine,
// and the service replays it for another account with other params. Then the page is redesigned;
// the routine fails `ui_changed` at the step that no longer fits, with a snapshot of the page as it
// now is; the agent repairs the steps from that snapshot alone and saves a new version, which runs.

let live: LiveService;
let agent: Client;

beforeAll(async () => {
  live = await startLiveService();
  agent = new Client({ name: "routine-agent", version: "1.0.0" });
  await agent.connect(new StreamableHTTPClientTransport(new URL(`${live.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${live.key}` } } }));
}, 60_000);
afterAll(async () => {
  await live?.sandboxApi("POST", "/_sandbox/settings", { profile_reworded: false });
  await agent?.close();
  await live?.close();
});

async function call(name: string, args: Record<string, unknown>): Promise<any> {
  const result = await callTool(agent, name, args);
  expect(result.isError, result.text).toBe(false);
  return result.data;
}

/** What the agent reads off a snapshot: the text box's name and the first button after it (the form's). */
function formOf(snapshot: string): { field: string; button: string } {
  const lines = snapshot.split("\n");
  const at = lines.findIndex((line) => /- textbox "[^"]+"/.test(line));
  expect(at, snapshot).toBeGreaterThanOrEqual(0);
  const field = /- textbox "([^"]+)"/.exec(lines[at]!)![1]!;
  const button = lines.slice(at).map((line) => /- button "([^"]+)"/.exec(line)?.[1]).find((name) => name !== undefined);
  expect(button, snapshot).toBeDefined();
  return { field, button: button! };
}

/** The agent's steps for the bio, from what it read: the notice the platform shows and the bio as the person's page shows it. */
function bioSteps(form: { field: string; button: string }, bio: string) {
  return [
    { goto: "/settings/profile" },
    { fill: { label: form.field, exact: true }, value: bio },
    { click: { role: "button", name: form.button, exact: true } },
    { wait_for: { role: "status" } },
    { extract_text: { label: "Bio", exact: true }, as: "bio" },
  ];
}

describe("an agent teaches the service a task once over MCP", () => {
  it("looks, acts, saves a routine, has it replayed for another account, and repairs it from the snapshot of a redesigned page", { timeout: 240_000 }, async () => {
    const teacher = await live.account(await live.user("none"));
    const learner = await live.account(await live.user("none"));

    // Look before acting: a dry run only reads; it returns the page's accessibility snapshot.
    const looked = await call("run_action", { account_id: teacher, type: "browser_steps", params: { dry_run: true, steps: [{ goto: "/settings/profile" }, { snapshot: true }] }, wait_seconds: 45 });
    expect(looked.status).toBe("succeeded");
    const seen = looked.result.snapshots.at(-1).snapshot as string;
    const form = formOf(seen);
    expect(form).toEqual({ field: "Bio", button: "Save" });

    // Do it once, with what it saw.
    const firstBio = `Taught once ${Date.now()}`;
    const done = await call("run_action", { account_id: teacher, type: "browser_steps", params: { steps: bioSteps(form, firstBio) }, wait_seconds: 45 });
    expect(done).toMatchObject({ status: "succeeded", result: { extracted: { bio: firstBio } } });

    // Save it, naming the typed value as a param: nothing is typed again.
    const saved = await call("save_routine", { platform: "sandbox", name: "update_bio", from_action_id: done.id, params: { bio: firstBio }, description: "Sets the account's profile bio." });
    expect(saved).toMatchObject({ name: "update_bio", version: 1 });
    expect(JSON.stringify(saved.steps)).not.toContain(firstBio);

    // Replayed by the service for another account, with other params.
    const otherBio = `Replayed without the agent ${Date.now()}`;
    const replayed = await call("run_action", { account_id: learner, type: "routine", params: { routine: "update_bio", params: { bio: otherBio } }, wait_seconds: 45 });
    expect(replayed).toMatchObject({ status: "succeeded", result: { extracted: { bio: otherBio }, version: 1 } });

    // The platform redesigns the page.
    await live.sandboxApi("POST", "/_sandbox/settings", { profile_reworded: true });
    const broken = await call("run_action", { account_id: learner, type: "routine", params: { routine: "update_bio", params: { bio: `After the redesign ${Date.now()}` } }, wait_seconds: 60 });
    expect(broken).toMatchObject({ status: "failed", error: { code: "ui_changed", details: { step: 1, path: "/settings/profile" } } });
    const now = broken.error.details.snapshot as string;
    expect(now).toContain('- textbox "About you"');
    expect(now).toContain('- button "Update profile"');
    expect(Buffer.byteLength(now)).toBeLessThanOrEqual(8 * 1024);

    // Repaired from the snapshot alone, run once, and saved as the routine's next version.
    const repairedForm = formOf(now);
    expect(repairedForm).toEqual({ field: "About you", button: "Update profile" });
    const repairedBio = `Repaired from the snapshot ${Date.now()}`;
    const repaired = await call("run_action", { account_id: learner, type: "browser_steps", params: { steps: bioSteps(repairedForm, repairedBio) }, wait_seconds: 45 });
    expect(repaired).toMatchObject({ status: "succeeded", result: { extracted: { bio: repairedBio } } });
    const next = await call("save_routine", { platform: "sandbox", name: "update_bio", from_action_id: repaired.id, params: { bio: repairedBio } });
    expect(next).toMatchObject({ name: "update_bio", version: 2 });

    const lastBio = `Version two ${Date.now()}`;
    const again = await call("run_action", { account_id: teacher, type: "routine", params: { routine: "update_bio", params: { bio: lastBio } }, wait_seconds: 45 });
    expect(again).toMatchObject({ status: "succeeded", result: { extracted: { bio: lastBio }, version: 2 } });

    // The routine lists both versions; list_platforms shows it beside the sandbox's action types.
    const listed = await call("list_routines", { platform: "sandbox" });
    expect(JSON.stringify(listed)).toContain("update_bio");
    const platforms = await call("list_platforms", {});
    expect(JSON.stringify(platforms)).toContain("update_bio");
  });
});
