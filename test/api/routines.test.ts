import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../helpers/harness.js";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(async () => {
  await h.stop();
  await h.destroy();
});

const BIO = {
  platform: "sandbox",
  name: "update_bio",
  description: "Writes the profile's bio.",
  params: { type: "object", properties: { bio: { type: "string", maxLength: 200 } }, required: ["bio"] },
  steps: [
    { goto: "/settings/profile" },
    { fill: { label: "Bio" }, value: "{{bio}}" },
    { click: { role: "button", name: "Save", exact: true } },
    { extract_text: { role: "status" }, as: "saved" },
  ],
};

async function routineCount(): Promise<number> {
  return (await h.request("GET", "/v1/routines")).json.data.length;
}

describe("routines over REST", () => {
  it("creates version 1, PUT writes version 2 (both listed), and a second create of the name is a 409 conflict", async () => {
    const created = await h.request("POST", "/v1/routines", { body: BIO });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ object: "routine", name: "update_bio", platform: "sandbox", version: 1, extracts: ["saved"] });

    const again = await h.request("POST", "/v1/routines", { body: BIO });
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe("conflict");
    expect(again.json.error.message).toContain("PUT /v1/routines/update_bio");

    const put = await h.request("PUT", "/v1/routines/update_bio", { body: { params: BIO.params, steps: [...BIO.steps.slice(0, 3), { wait_for: { text: "Saved" } }] } });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ version: 2, description: "Writes the profile's bio.", extracts: [] });

    const read = await h.request("GET", "/v1/routines/update_bio");
    expect(read.json.version).toBe(2);
    expect(read.json.versions.map((one: { version: number }) => one.version)).toEqual([2, 1]);
    const listed = await h.request("GET", "/v1/routines?platform=sandbox");
    expect(listed.json.data.map((one: { name: string }) => one.name)).toEqual(["update_bio"]);
    expect((await h.request("GET", "/v1/routines?platform=mediawiki")).json.data).toEqual([]);
  });

  it.each([
    ["a CSS selector, saying why", { steps: [{ click: "button.save" }] }, "steps.0.click", "CSS and XPath selectors are refused"],
    ["an XPath selector object", { steps: [{ click: { xpath: "//button" } }] }, "steps.0.click.xpath", "by role and accessible name"],
    ["a placeholder not in the schema", { steps: [{ fill: { label: "Bio" }, value: "{{about}}" }] }, "steps.0.value", "{{about}} is not a param"],
    ["a goto to another origin", { steps: [{ goto: "https://elsewhere.example/steal" }] }, "steps.0.goto", "only pages of its platform"],
    ["a bad params schema", { params: { type: "object", properties: { bio: { type: "array" } } } }, "params.properties.bio.type", ""],
    ["a secret in an address", { params: { type: "object", properties: { code: { type: "string", writeOnly: true } } }, steps: [{ goto: "/verify/{{code}}" }] }, "steps.0.goto", "secret param"],
  ])("refuses %s with a 422 naming the field, and saves nothing", async (_what, change, path, words) => {
    const before = await routineCount();
    const response = await h.request("POST", "/v1/routines", { body: { ...BIO, name: "broken", ...change } });
    expect(response.status).toBe(422);
    expect(response.json.error.code).toBe("invalid_request");
    expect(response.json.error.details.issues.map((issue: { path: string }) => issue.path)).toContain(`body.${path}`);
    expect(response.json.error.message).toContain(words);
    expect(await routineCount()).toBe(before);
  });

  it("another workspace's key sees nothing and cannot run it; a read_only key may list but not save", async () => {
    const stranger = await h.key("admin", { workspace: "someone-else" });
    expect((await h.request("GET", "/v1/routines", { key: stranger })).json.data).toEqual([]);
    expect((await h.request("GET", "/v1/routines/update_bio", { key: stranger })).status).toBe(404);
    expect((await h.request("PUT", "/v1/routines/update_bio", { key: stranger, body: { params: BIO.params, steps: BIO.steps } })).status).toBe(404);
    expect((await h.request("DELETE", "/v1/routines/update_bio", { key: stranger })).status).toBe(404);

    const readOnly = await h.key("read_only");
    expect((await h.request("GET", "/v1/routines", { key: readOnly })).json.data).toHaveLength(1);
    const refused = await h.request("POST", "/v1/routines", { key: readOnly, body: { ...BIO, name: "read_only_try" } });
    expect(refused.status).toBe(403);
    expect(refused.json.error.code).toBe("forbidden");
  });

  it("a routine action's params are checked at create: a bad shape or an unknown routine is a 422 and creates nothing", async () => {
    const account = (await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "rita", password: "pw" } })).json.id as string;
    const actions = async () => (await h.request("GET", "/v1/actions")).json.data.length as number;
    const before = await actions();
    const badShape = await h.request("POST", "/v1/actions", { body: { account_id: account, type: "routine", params: { routine: "update_bio", params: { bio: 42 } } } });
    expect(badShape.status).toBe(422);
    expect(badShape.json.error.details.issues[0].path).toBe("params.params.bio");
    const extra = await h.request("POST", "/v1/actions", { body: { account_id: account, type: "routine", params: { routine: "update_bio", params: { bio: "x", other: "y" } } } });
    expect(extra.status).toBe(422);
    const unknown = await h.request("POST", "/v1/actions", { body: { account_id: account, type: "routine", params: { routine: "nothing_here", params: {} } } });
    expect(unknown.status).toBe(422);
    expect(unknown.json.error.message).toContain('No routine named "nothing_here"');
    expect(await actions()).toBe(before);
  });

  it("DELETE keeps its versions: the name is gone from lists, and saving it again continues at the next version", async () => {
    expect((await h.request("DELETE", "/v1/routines/update_bio")).status).toBe(204);
    expect((await h.request("GET", "/v1/routines/update_bio")).status).toBe(404);
    expect(await routineCount()).toBe(0);
    const again = await h.request("POST", "/v1/routines", { body: BIO });
    expect(again.status).toBe(201);
    expect(again.json.version).toBe(3);
  });

  it("the OpenAPI document has the routine routes, PUT included", async () => {
    const doc = (await h.request("GET", "/v1/openapi.json", { key: null })).json;
    expect(Object.keys(doc.paths["/v1/routines/{name}"]).sort()).toEqual(["delete", "get", "put"]);
    expect(doc.paths["/v1/routines"].post.requestBody).toBeDefined();
  });
});
