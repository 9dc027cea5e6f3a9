import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { declaredDriver } from "../../src/platforms/declared/index.js";
import { startLiveService, type LiveService } from "../helpers/live-service.js";
import { rows, sql } from "../helpers/sql.js";

// browser_steps as an agent meets it (DESIGN §6): real Chromium against the real sandbox, through
// REST and the MCP SDK's client. Steps name elements by role, label and text; a succeeded run
// records what each step acted on; a dry run only looks; a step that cannot be done comes back
// with its index, the page's path and the page's accessibility snapshot, typed values redacted.
const PASSWORD = "sandbox-password";
const DECLARED = "sandbox-declared";
let live: LiveService;

beforeAll(async () => {
  const file = JSON.parse(await readFile(join(import.meta.dirname, "..", "..", "examples", "drivers", "sandbox.platform.json"), "utf8"));
  live = await startLiveService({ sandboxDrivers: [declaredDriver(file, "sandbox.platform.json")] });
}, 60_000);

afterAll(async () => {
  await live?.close();
});

afterEach(async () => {
  await live.sandboxApi("POST", "/_sandbox/settings", { profile_reworded: false });
});

async function connected(platform = "sandbox"): Promise<{ handle: string; accountId: string }> {
  const handle = await live.user("none");
  const accountId = await live.account(handle, { platform });
  expect(await live.run(accountId, "connect")).toMatchObject({ status: "succeeded" });
  return { handle, accountId };
}

/** Writes the bio on the profile page and reads it back on the person's page, by the page's words. */
function bioSteps(handle: string, bio: string, words = { label: "Bio", button: "Save", saved: "Profile saved." }) {
  return [
    { goto: "/settings/profile" },
    { fill: { label: words.label, exact: true }, value: bio },
    { click: { role: "button", name: words.button, exact: true } },
    { wait_for: { text: words.saved } },
    { goto: `/people/${handle}` },
    { extract_text: { label: "Bio", exact: true }, as: "bio" },
  ];
}

describe("browser_steps with locators", () => {
  it("edits the sandbox profile's bio by label and button name, and records each step's element and how many matched", async () => {
    const { handle, accountId } = await connected();
    const bio = `Gardener and reader ${handle}`;
    const action = await live.run(accountId, "browser_steps", { steps: bioSteps(handle, bio) });
    expect(action).toMatchObject({ status: "succeeded", result: { extracted: { bio } } });
    const [goto, fill, click, wait, , extract] = action.result.steps;
    expect(goto).toEqual({ index: 0, action: "goto", path: "/settings/profile" });
    expect(fill).toEqual({ index: 1, action: "fill", locator: { label: "Bio", exact: true }, target: { role: "textbox", name: "Bio" }, matched: 1, value_from: { step_value: 1 } });
    expect(click).toEqual({ index: 2, action: "click", locator: { role: "button", name: "Save", exact: true }, target: { role: "button", name: "Save" }, matched: 1 });
    expect(wait).toMatchObject({ action: "wait_for", matched: 1 });
    // A paragraph has no accessible name (its aria-label does not count): the record says only its role.
    expect(extract).toMatchObject({ action: "extract_text", as: "bio", locator: { label: "Bio", exact: true }, target: { role: "paragraph" }, matched: 1 });
    // The typed value is in the action's params only, never copied into the record.
    expect(JSON.stringify(action.result.steps)).not.toContain(bio);
  });

  it("a CSS step's element is named by role and name too, and a selector matching several says so", async () => {
    const { accountId } = await connected();
    const action = await live.run(accountId, "browser_steps", {
      steps: [{ goto: "/settings/profile" }, { fill: "#profile-bio", value: "Set by a selector" }, { click: "form[action='/settings/profile'] button" }, { wait_for: "text=Profile saved." }, { extract_text: "a", as: "first_link" }],
    });
    expect(action.status).toBe("succeeded");
    expect(action.result.steps[1]).toMatchObject({ selector: "#profile-bio", target: { role: "textbox", name: "Bio" }, matched: 1 });
    expect(action.result.steps[2]).toMatchObject({ target: { role: "button", name: "Save" }, matched: 1 });
    // The person's page has several links: a routine could not be saved from this step.
    expect(action.result.steps[4].matched).toBeGreaterThan(1);
  });

  it("runs on a declared platform as on a built-in one", async () => {
    const { handle, accountId } = await connected(DECLARED);
    const action = await live.run(accountId, "browser_steps", { steps: bioSteps(handle, `Declared ${handle}`) });
    expect(action).toMatchObject({ status: "succeeded", platform: DECLARED, result: { extracted: { bio: `Declared ${handle}` } } });
  });
});

describe("snapshots and dry runs", () => {
  it("a snapshot step returns the page's accessibility snapshot, bounded", async () => {
    const { handle, accountId } = await connected();
    const action = await live.run(accountId, "browser_steps", { steps: [{ goto: `/people/${handle}` }, { snapshot: true }] });
    expect(action.status).toBe("succeeded");
    const [shot] = action.result.snapshots;
    expect(shot).toMatchObject({ step: 1, path: `/people/${handle}` });
    expect(shot.snapshot).toContain(`- heading "`);
    expect(shot.snapshot).toContain(`- link "Edit profile"`);
    expect(Buffer.byteLength(shot.snapshot)).toBeLessThanOrEqual(8 * 1024);
    console.log(`the sandbox's profile page snapshot: ${Buffer.byteLength(shot.snapshot)} bytes`);
  });

  it("a dry run refuses a step that may change something (422, nothing created), and returns the snapshot of each page it reached for 1 credit", async () => {
    const { handle, accountId } = await connected();
    const refused = await live.api("POST", "/v1/actions", { account_id: accountId, type: "browser_steps", params: { dry_run: true, steps: [{ goto: "/settings/profile" }, { click: { role: "button", name: "Save" } }] } });
    expect(refused.status).toBe(422);
    expect(refused.json.error.code).toBe("invalid_request");
    expect(JSON.stringify(refused.json.error.details)).toMatch(/a dry run only reads/);

    const looked = await live.run(accountId, "browser_steps", { dry_run: true, steps: [{ goto: "/settings/profile" }, { goto: `/people/${handle}` }, { extract_text: { role: "heading", level: 1 }, as: "name" }] });
    expect(looked).toMatchObject({ status: "succeeded", cost: 1 });
    expect(looked.result.snapshots.map((one: { path: string }) => one.path)).toEqual(["/settings/profile", `/people/${handle}`]);
    expect(looked.result.snapshots[0].snapshot).toContain(`- heading "Edit your profile"`);
    expect(looked.result.snapshots[0].snapshot).toContain(`- button "Save"`);
    expect(looked.result.steps.map((step: { action: string }) => step.action)).toEqual(["goto", "goto", "extract_text"]);
  });
});

describe("a step that cannot be done", () => {
  it("a step after which the platform shows its sign-in form fails signed_out at once, not ui_changed after the page timeout", async () => {
    const { accountId } = await connected();
    const steps = [{ goto: "/feed" }, { click: { role: "button", name: "Sign out", exact: true } }, { extract_text: { role: "heading", level: 1 }, as: "title" }];
    const action = await live.run(accountId, "browser_steps", { steps });
    // Found out after the click itself: the next step, whose heading the sign-in page lacks, never ran.
    expect(action).toMatchObject({ status: "failed", error: { code: "signed_out", message: "The platform signed the account out during the steps." } });
  });

  it("a wait_for whose target never shows fails ui_changed naming the step and the page's path, not the driver's inner words", async () => {
    const { accountId } = await connected();
    const steps = [{ goto: "/settings/profile" }, { wait_for: { text: "Words this page never shows" }, timeout_ms: 2_000 }];
    const action = await live.run(accountId, "browser_steps", { steps });
    expect(action).toMatchObject({ status: "failed", error: { code: "ui_changed", message: "Step 2 (wait_for): what it waits for did not show on /settings/profile.", details: { step: 1, path: "/settings/profile" } } });
  });

  it("fails ui_changed with the step's index, path and a snapshot showing the new wording, without what was typed or the password — in REST and in MCP's text and structured content", { timeout: 120_000 }, async () => {
    const { handle, accountId } = await connected();
    expect(await live.sandboxApi("POST", "/_sandbox/settings", { profile_reworded: true })).toMatchObject({ profile_reworded: true });
    const typed = `Typed by the agent ${handle} ${PASSWORD}`;
    const client = new Client({ name: "steps-test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${live.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${live.key}` } } }));
    try {
      // The field keeps its id (the fill works); the button is "Update profile" now: steps[2] cannot be done.
      const steps = [{ goto: "/settings/profile" }, { fill: "#profile-bio", value: typed }, { click: { role: "button", name: "Save", exact: true } }];
      const called = await client.callTool({ name: "run_action", arguments: { account_id: accountId, type: "browser_steps", params: { steps }, wait_seconds: 60 } });
      const action = called.structuredContent as any;
      expect(action).toMatchObject({ status: "failed", error: { code: "ui_changed", details: { step: 2, path: "/settings/profile" } } });
      const { snapshot } = action.error.details;
      expect(snapshot).toContain(`- heading "Your public profile"`);
      expect(snapshot).toContain(`- button "Update profile"`);
      expect(snapshot).toContain(`- textbox "About you": [redacted]`);
      expect(snapshot).not.toContain(typed);
      expect(snapshot).not.toContain(PASSWORD);
      const text = (called.content as { type: string; text: string }[]).map((part) => part.text).join("\n");
      expect(text).toContain("at steps[2] on /settings/profile");
      expect(text).toContain(`- button "Update profile"`);
      expect(text).not.toContain(PASSWORD);

      const viaRest = await live.api("GET", `/v1/actions/${action.id}`);
      expect(viaRest.json.error).toEqual(action.error);
      // The action's failed event carries the same error; its snapshot without the password or what was typed
      // (the params the client sent are its own, and are in the event as they are in the action).
      const events = await rows<{ data: string }>(live.server.service.store, sql`SELECT data FROM events WHERE subject_id = ${action.id}`);
      const failed = events.map((event) => JSON.parse(event.data) as { status?: string; error?: { details?: { snapshot?: string } } }).find((data) => data.status === "failed");
      expect(failed?.error).toEqual(action.error);

      // Repaired from the snapshot's words, the steps do it.
      const repaired = await live.run(accountId, "browser_steps", { steps: bioSteps(handle, "Repaired", { label: "About you", button: "Update profile", saved: "Profile updated." }) });
      expect(repaired).toMatchObject({ status: "succeeded", result: { extracted: { bio: "Repaired" } } });
    } finally {
      await client.close();
    }
  });
});
