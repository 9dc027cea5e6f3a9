import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, describe, expect, it } from "vitest";
import { paramsSchema } from "../../src/engine/execution/index.js";
import { declaredDriver, loadPlatformFile } from "../../src/platforms/declared/index.js";

// The platform file's rules, with no browser: what loads, and the one clear line each mistake gets,
// naming the file and the JSON path of the problem. The JSON Schema `driver schema` prints (built
// into dist/platform.schema.json) holds the examples to the same rules, so editors see them too.
// Spawns dist/cli.js: run `npm run build` first.
const ROOT = join(import.meta.dirname, "..", "..");
const EXAMPLES = join(ROOT, "examples", "drivers");
const SANDBOX = JSON.parse(readFileSync(join(EXAMPLES, "sandbox.platform.json"), "utf8"));
const scratch = mkdtempSync(join(tmpdir(), "platform-file-"));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The sandbox's file changed by `change`. */
function sandboxWith(change: (file: any) => void): unknown {
  const file = structuredClone(SANDBOX);
  change(file);
  return file;
}

/** What loading it says. */
function refusal(json: unknown): string {
  try {
    declaredDriver(json, "intranet.platform.json");
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("the file loaded");
}

async function printedSchema(): Promise<Record<string, unknown>> {
  const { stdout } = await promisify(execFile)(process.execPath, [join(ROOT, "dist", "cli.js"), "driver", "schema"]);
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe("platform files: the JSON Schema", () => {
  it("driver schema prints the schema shipped in dist/platform.schema.json, and every example file passes it and loads", async () => {
    const printed = await printedSchema();
    expect(printed).toEqual(JSON.parse(readFileSync(join(ROOT, "dist", "platform.schema.json"), "utf8")));
    const validate = new Ajv2020({ strict: false }).compile(printed);
    const examples = readdirSync(EXAMPLES).filter((name) => name.endsWith(".platform.json"));
    expect(examples).toContain("sandbox.platform.json");
    for (const name of examples) {
      const json = JSON.parse(readFileSync(join(EXAMPLES, name), "utf8"));
      expect({ name, valid: validate(json), errors: validate.errors }).toMatchObject({ name, valid: true });
      expect((await loadPlatformFile(join(EXAMPLES, name))).platform.name).toBe(json.name);
    }
  });

  it("the printed schema refuses what the loader refuses for its shape: a CSS selector, an unknown field, a missing schemaVersion", async () => {
    const validate = new Ajv2020({ strict: false }).compile(await printedSchema());
    expect(validate(sandboxWith((file) => (file.actions.post.steps[1].click = "button.post")))).toBe(false);
    expect(validate(sandboxWith((file) => (file.signIn.submit = { css: "button[type=submit]" })))).toBe(false);
    expect(validate(sandboxWith((file) => (file.signIn.hint = "x")))).toBe(false);
    expect(validate(sandboxWith((file) => delete file.schemaVersion))).toBe(false);
  });
});

describe("platform files: each mistake gets one clear line naming the file and where", () => {
  it.each([
    ["a CSS selector", (file: any) => (file.actions.post.steps[1].click = "button.post"), "intranet.platform.json: actions.post.steps[1].click: CSS selectors are not allowed; use role, label or text"],
    ["a selector field", (file: any) => (file.signIn.submit = { css: "button[type=submit]" }), "intranet.platform.json: signIn.submit: CSS selectors are not allowed; use role, label or text"],
    ["an unknown placeholder", (file: any) => (file.actions.post.steps[0].value = "{{body}}"), "intranet.platform.json: actions.post.steps[0].value: {{body}} is not a param of this action type (its params: text)"],
    [
      "an unknown action type",
      (file: any) => (file.actions.delete_post = { steps: [{ goto: "/x" }] }),
      "intranet.platform.json: actions.delete_post: not an action type a platform file can declare a recipe for (post, lookup_person, lookup_conversation, send_message; connect needs none)",
    ],
    ["an unknown error code", (file: any) => (file.failures[0].code = "exploded"), /^intranet\.platform\.json: failures\[0\]\.code: "exploded" is not one of "signed_out", "login_failed", .*"rejected", "ui_changed"$/],
    ["a goto to another origin", (file: any) => (file.actions.lookup_person.steps[0].goto = "https://evil.example/people/{{handle}}"), /^intranet\.platform\.json: actions\.lookup_person\.steps\[0\]\.goto: "https:\/\/evil\.example\/people\/\{\{handle\}\}" leaves the platform: /],
    ["a protocol-relative goto", (file: any) => (file.actions.lookup_person.steps[0].goto = "//evil.example/x"), /actions\.lookup_person\.steps\[0\]\.goto: "\/\/evil\.example\/x" leaves the platform/],
    ["a pattern RE2 cannot run", (file: any) => (file.inbox.code = "(?<=code )\\d+"), /^intranet\.platform\.json: inbox\.code: not a regular expression RE2 can run \(.+\): use no look-around and no back-references$/],
    ["a name written as a regex RE2 cannot run", (file: any) => (file.signedIn.name = "/(a)\\1/"), /^intranet\.platform\.json: signedIn\.name: not a regular expression RE2 can run/],
    ["no schemaVersion", (file: any) => delete file.schemaVersion, 'intranet.platform.json: schemaVersion: missing (required): write "schemaVersion": 1'],
    ["another schemaVersion", (file: any) => (file.schemaVersion = 2), "intranet.platform.json: schemaVersion: this service reads platform files of version 1, not 2"],
    ["an unknown named locator", (file: any) => (file.signIn.alert = { ref: "alrt" }), /^intranet\.platform\.json: signIn\.alert\.ref: no locator is named "alrt" in "locators" \(there are: alert, /],
    ["a named locator naming itself", (file: any) => (file.locators.alert = { ref: "alert" }), 'intranet.platform.json: locators.alert: names itself through "alert" → "alert"'],
    ["a missing locator", (file: any) => delete file.signIn.password, "intranet.platform.json: signIn.password: missing (required)"],
    ["a param the service already has", (file: any) => (file.actions.post.params = { text: { description: "The text." } }), /^intranet\.platform\.json: actions\.post\.params\.text: "text" is already a param of this action type/],
    ["a result from a text never extracted", (file: any) => (file.actions.post.result.title = { extracted: "title" }), 'intranet.platform.json: actions.post.result.title.extracted: no extract_text step keeps a text "as": "title"'],
  ])("%s", (_name, change, expected) => {
    const message = refusal(sandboxWith(change));
    if (typeof expected === "string") expect(message).toBe(expected);
    else expect(message).toMatch(expected);
  });

  it("a file that cannot be read, or is not JSON, is named with the reason", async () => {
    const broken = join(scratch, "broken.platform.json");
    writeFileSync(broken, "{ not json");
    await expect(loadPlatformFile(broken)).rejects.toThrow(new RegExp(`^${broken.replaceAll(".", "\\.")}: is not JSON \\(`));
    await expect(loadPlatformFile(join(scratch, "absent.platform.json"))).rejects.toThrow(/absent\.platform\.json: cannot be read \(ENOENT\)$/);
  });
});

describe("platform files: params", () => {
  it("a platform adds params to an action type's own: they are in its params schema, and its placeholders may name them", () => {
    const driver = declaredDriver(
      sandboxWith((file) => {
        file.actions.post.params = { title: { description: "The page's title.", required: true, maxLength: 80, pattern: "^[^#]+$" } };
        file.actions.post.steps.unshift({ goto: "/pages/{{title}}/edit" });
      }),
      "wiki.platform.json",
    );
    const schema = paramsSchema("post", driver.platform);
    expect(schema.safeParse({ text: "Hello", title: "Start" }).success).toBe(true);
    expect(schema.safeParse({ text: "Hello" }).success).toBe(false);
    expect(schema.safeParse({ text: "Hello", title: "A#B" }).success).toBe(false);
    expect(schema.safeParse({ text: "Hello", title: "Start", other: 1 }).success).toBe(false);
    // A type the file adds nothing to keeps the service's own schema.
    expect(driver.platform.params?.lookup_person).toBeUndefined();
  });
});
