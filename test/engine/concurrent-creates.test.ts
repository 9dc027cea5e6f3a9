import { afterEach, describe, expect, it } from "vitest";
import { ACTION_PRICES } from "../../src/domain/actions.js";
import { createHarness, type Harness } from "../helpers/harness.js";

// Many creates at once in one workspace (DESIGN §7, §11): each holds its price from the one
// balance row. On PostgreSQL they ran SERIALIZABLE, read the balance and wrote it: two at once
// conflicted on the row, one aborted and ran again. The hold is now one conditional update, so
// none aborts, and none spends a credit another spent.
const harnesses: Harness[] = [];
afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.destroy();
});

const CREATES = 24;
/** The balance pays for this many of them: the rest fail with insufficient_credits. */
const AFFORDABLE = 10;

describe("concurrent creates in one workspace", () => {
  it("none aborts or runs again, each affordable one holds its price once, and the ledger sums to the balance", async () => {
    // No run slot: the actions stay queued with their price held.
    const h = await createHarness({ engine: { maxConcurrent: 0 } });
    harnesses.push(h);
    const account = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "many", password: "pw" } })).json.id as string;
    const price = ACTION_PRICES.post;
    const balance = await h.store.ledger.balance(h.workspaceId);
    // Exactly AFFORDABLE posts' worth left.
    await h.store.transaction(() => h.store.ledger.append({ workspace_id: h.workspaceId, kind: "grant", amount: AFFORDABLE * price - balance, created_at: new Date().toISOString() }));
    expect(await h.store.ledger.balance(h.workspaceId)).toBe(AFFORDABLE * price);

    // Every attempt at a create's transaction inserts its action once: attempts beyond CREATES were runs again.
    let attempts = 0;
    const insert = h.store.actions.insert.bind(h.store.actions);
    h.store.actions.insert = (action) => {
      attempts += 1;
      return insert(action);
    };
    const created = await Promise.all(
      Array.from({ length: CREATES }, (_, n) => h.request("POST", "/v1/actions", { body: { account_id: account, type: "post", params: { text: `post ${n}` } } })),
    );

    expect(created.map((response) => response.status).filter((status) => status !== 202 && status !== 200)).toEqual([]);
    expect(attempts - CREATES).toBe(0);
    const statuses = created.map((response) => (response.json.status === "failed" ? response.json.error.code : response.json.status) as string);
    expect(statuses.filter((status) => status === "queued")).toHaveLength(AFFORDABLE);
    expect(statuses.filter((status) => status === "insufficient_credits")).toHaveLength(CREATES - AFFORDABLE);
    expect(await h.store.ledger.balance(h.workspaceId)).toBe(0);
    expect(await h.store.ledger.sum(h.workspaceId)).toBe(0);
    const holds = (await h.store.ledger.entries(h.workspaceId)).filter((entry) => entry.kind === "hold");
    expect(holds).toHaveLength(AFFORDABLE);
    expect(new Set(holds.map((entry) => entry.action_id)).size).toBe(AFFORDABLE);
  });
});
