import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor } from "../helpers/scripted-executor.js";
import { readRawFile } from "../helpers/raw-file.js";
import { rows, sql } from "../helpers/sql.js";

const PASSWORD = "correct-horse-battery-staple";
const TOTP = "JBSWY3DPEHPK3PXP";
const NEW_PASSWORD = "tr0ub4dor&3-updated";

let h: Harness;
const bodies: string[] = [];

beforeAll(async () => {
  const executor = new ScriptedExecutor().on("connect", async (context) => {
    const { password } = context.secrets();
    await context.saveSession(JSON.stringify({ cookies: [{ name: "sid", value: `session-for-${password}` }] }));
    await context.challenge({ kind: "email_code", message: "Enter the emailed code." });
    return { signed_in: true };
  });
  h = await createHarness({ executor });
  const record = async (...args: Parameters<Harness["request"]>) => {
    const response = await h.request(...args);
    bodies.push(response.raw, JSON.stringify([...response.headers]));
    return response;
  };
  const created = await record("POST", "/v1/accounts", { body: { platform: "sandbox", username: "alice", password: PASSWORD, totp_secret: TOTP } });
  const id = created.json.id;
  await record("GET", `/v1/accounts/${id}`);
  await record("GET", "/v1/accounts");
  await record("PATCH", `/v1/accounts/${id}`, { body: { password: NEW_PASSWORD } });
  const action = await record("POST", "/v1/actions?wait=5", { body: { account_id: id, type: "connect" } });
  await record("GET", `/v1/actions/${action.json.id}`);
  await record("POST", `/v1/actions/${action.json.id}/answer?wait=5`, { body: { answer: "424242" } });
  await record("GET", "/v1/actions");
  await record("POST", "/v1/accounts", { body: { platform: "sandbox", username: "x", password: PASSWORD, bogus: PASSWORD } });
  await record("POST", "/v1/accounts", { body: { platform: "sandbox", username: "x", totp_secret: `${TOTP}!` } });
  await record("GET", "/v1/openapi.json");
  await record("GET", "/v1/platforms");
});
afterAll(() => h.destroy());

describe("secrets", () => {
  it("never appear in any response body or header", () => {
    const everything = bodies.join("\n");
    for (const secret of [PASSWORD, NEW_PASSWORD, TOTP, h.adminKey, "session-for-"]) expect(everything).not.toContain(secret);
    expect(everything).toContain('"has_password":true');
    expect(everything).toContain('"has_totp_secret":true');
  });

  it("are encrypted at rest: the database holds none of them in plain text", async () => {
    const secrets = [PASSWORD, NEW_PASSWORD, TOTP, h.adminKey, "session-for-", "424242"];
    if (h.store.sqlite) {
      // Every byte of the data dir's files, journal included.
      h.store.sqlite.pragma("wal_checkpoint(TRUNCATE)");
      for (const file of readdirSync(h.dir)) {
        const bytes = readRawFile(join(h.dir, file)).toString("latin1");
        for (const secret of secrets) expect(bytes, file).not.toContain(secret);
      }
    } else {
      // Every row of every table, as PostgreSQL prints it (bytea as hex, so its plain text is looked for too).
      const tables = await rows<{ name: string }>(h.store, sql`SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'`);
      for (const { name } of tables) {
        const text = (await rows<{ row: string }>(h.store, sql`SELECT t::text AS row FROM ${sql.table(name)} t`)).map((row) => row.row).join("\n");
        for (const secret of secrets) {
          expect(text, name).not.toContain(secret);
          expect(text, name).not.toContain(Buffer.from(secret).toString("hex"));
        }
      }
    }
  });

  it("come back only through the store's decryption, bound to their row", async () => {
    const [account] = await h.store.accounts.list(h.workspaceId, undefined);
    expect(await h.store.accounts.getSecret(account!.id, "password")).toBe(NEW_PASSWORD);
    expect(await h.store.accounts.getSecret(account!.id, "totp_secret")).toBe(TOTP);
    expect(await h.store.accounts.getSecret(account!.id, "session")).toContain("session-for-" + NEW_PASSWORD);
    // A sealed value copied to another row does not open there.
    const other = await h.engine.accounts.create((await h.engine.keys.authenticate(h.adminKey))!, { platform: "sandbox", username: "copy" });
    await rows(h.store, sql`UPDATE accounts SET password_sealed = (SELECT password_sealed FROM accounts WHERE id = ${account!.id}) WHERE id = ${other.id}`);
    await expect(h.store.accounts.getSecret(other.id, "password")).rejects.toThrow();
  });
});
