import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createSandboxUser } from "../chaos/kill-support.js";
import { CLI, START_DEADLINE_MS, freePort, restClient, startServe, type ServeProcess } from "../helpers/processes.js";
import { eventually } from "../helpers/wait.js";

// Drivers from outside the source tree (DESIGN §14), loaded by real `serve` and `mcp` processes
// (dist/cli.js: `npm run build` first) through ACTION_SERVICE_DRIVERS: the example code driver in
// examples/drivers/notes posting on a real sandbox in real Chromium, and every kind of driver that
// must stop start-up, each as the process's own exit.

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "action-service-drivers-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the CLI to its end with `env`, as a person would start it; its exit code and everything it wrote. */
function runToExit(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, ACTION_SERVICE_DATA_DIR: join(dir, `data-${Math.random().toString(36).slice(2)}`), ACTION_SERVICE_PORT: "0", ACTION_SERVICE_LOG_LEVEL: "warn", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`action-service ${args.join(" ")} did not exit within ${START_DEADLINE_MS} ms: ${output}`));
    }, START_DEADLINE_MS);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** A driver module written for the test, outside any package: it imports `action-service/driver` as a user's would. */
function driverModule(file: string, parts: { apiVersion?: string; platform?: string; failures?: string; actions?: string; before?: string } = {}): string {
  const path = join(dir, file);
  writeFileSync(
    path,
    `import { defineDriver } from "action-service/driver";
${parts.before ?? ""}
const heading = (page) => page.getByRole("heading", { name: "Feed" });
export default defineDriver({
  apiVersion: ${parts.apiVersion ?? '"1.0.0"'},
  platform: ${parts.platform ?? '{ name: "extra", title: "Extra", description: "A test platform." }'},
  failures: ${parts.failures ?? "[]"},
  signIn: { start: "/", signedIn: heading, signedOut: heading, form: { username: heading, password: heading, submit: heading }, refused: heading, challenges: [] },
  signedInAs: async () => undefined,
  actions: ${parts.actions ?? "{ post: async () => ({}) }"},
});
`,
  );
  return path;
}

describe("a code driver kept outside the service (examples/drivers/notes)", () => {
  let service: ServeProcess | undefined;
  afterEach(async () => {
    await service?.stop();
    service = undefined;
  });

  it("is loaded by ACTION_SERVICE_DRIVERS, listed, signs in, posts on the sandbox for real, looks a person up, and refuses a wrong password", { timeout: 240_000 }, async () => {
    const sandboxPort = await freePort();
    const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
    service = await startServe({
      dataDir: join(dir, "notes-data"),
      sandboxUrl,
      args: ["--sandbox"],
      env: { SANDBOX_PORT: String(sandboxPort), ACTION_SERVICE_DRIVERS: "examples/drivers/notes", ACTION_SERVICE_PLATFORMS: `notes=${sandboxUrl}` },
    });
    const api = restClient(() => service!.url, service.firstKey!);
    const platforms = (await api("GET", "/v1/platforms")).json as { data?: { name: string; actions: { type: string }[] }[] } | { name: string; actions: { type: string }[] }[];
    const notes = (Array.isArray(platforms) ? platforms : platforms.data!).find((platform) => platform.name === "notes");
    expect(notes?.actions.map((action) => action.type)).toEqual(["connect", "post", "lookup_person", "browser_steps"]);

    const handle = `notes${Date.now().toString(36)}`;
    await createSandboxUser(sandboxUrl, handle);
    const run = async (accountId: string, type: string, params: Record<string, unknown>) => {
      const created = (await api("POST", "/v1/actions", { account_id: accountId, type, params })).json;
      return eventually(
        async () => {
          const action = (await api("GET", `/v1/actions/${created.id}?wait=10`)).json;
          return ["succeeded", "failed", "canceled", "needs_input"].includes(action.status) ? action : undefined;
        },
        { what: `the ${type} to end`, timeoutMs: 150_000, everyMs: 200 },
      );
    };

    const account = (await api("POST", "/v1/accounts", { platform: "notes", username: handle, password: "sandbox-password" })).json.id as string;
    const connected = await run(account, "connect", {});
    expect(connected.status, JSON.stringify(connected)).toBe("succeeded");
    expect(connected.result.profile).toEqual({ handle, name: `Chaos ${handle}` });

    const text = `through a driver from outside ${handle}`;
    const posted = await run(account, "post", { text });
    expect(posted.status, JSON.stringify(posted)).toBe("succeeded");
    const onSandbox = (await (await fetch(`${sandboxUrl}/_sandbox/posts?author=${handle}`)).json()) as { id: string; text: string }[];
    expect(onSandbox.filter((found) => found.text === text)).toHaveLength(1);
    expect(posted.result.post_id).toBe(onSandbox.find((found) => found.text === text)!.id);

    const looked = await run(account, "lookup_person", { handle: "alice" });
    expect(looked.status, JSON.stringify(looked)).toBe("succeeded");
    expect(looked.result).toMatchObject({ handle: "alice", name: "Alice Johnson" });

    // The driver's failure detector: a person who is not there.
    const missing = await run(account, "lookup_person", { handle: "nobody-here" });
    expect(missing.error?.code, JSON.stringify(missing)).toBe("not_found");

    const wrong = (await api("POST", "/v1/accounts", { platform: "notes", username: "alice", password: "not-her-password" })).json.id as string;
    const refused = await run(wrong, "connect", {});
    expect(refused.error?.code, JSON.stringify(refused)).toBe("login_failed");
  });
});

describe("a driver that cannot run stops start-up, naming it and why (exit 2, as any configuration error)", () => {
  const refusals: { name: string; entries: () => string; says: RegExp; command?: string }[] = [
    { name: "a path that is not there", entries: () => "./drivers/nowhere.js", says: /driver \.\/drivers\/nowhere\.js could not be loaded: there is no .*nowhere\.js/ },
    { name: "a package that is not installed", entries: () => "action-service-driver-nowhere", says: /driver action-service-driver-nowhere could not be loaded: .*no installed package of that name/ },
    { name: "a module that throws as it loads", entries: () => driverModule("throws.mjs", { before: 'throw new Error("the intranet VPN is down");' }), says: /driver .*throws\.mjs could not be loaded: the intranet VPN is down/ },
    { name: "a module that exports no driver", entries: () => (writeFileSync(join(dir, "empty.mjs"), "export const nothing = 1;\n"), join(dir, "empty.mjs")), says: /driver .*empty\.mjs exports no driver: export one as default/ },
    { name: "another major API version", entries: () => driverModule("api2.mjs", { apiVersion: '"2.0.0"' }), says: /driver .*api2\.mjs was written for driver API 2\.x; this service has 1\.0\.0/ },
    { name: "the same, from mcp", command: "mcp", entries: () => driverModule("api2.mjs", { apiVersion: '"2.0.0"' }), says: /driver .*api2\.mjs was written for driver API 2\.x; this service has 1\.0\.0/ },
    { name: "a newer minor API version", entries: () => driverModule("api1-9.mjs", { apiVersion: '"1.9.0"' }), says: /written for driver API 1\.9\.0, newer than this service's 1\.0\.0: upgrade action-service/ },
    { name: "a built-in platform's name", entries: () => driverModule("sandbox-again.mjs", { platform: '{ name: "sandbox", title: "Mine", description: "" }' }), says: /driver .*sandbox-again\.mjs declares platform "sandbox", which driver sandbox \(built in\) already declares/ },
    { name: "another loaded driver's name", entries: () => `examples/drivers/notes,${driverModule("notes-again.mjs", { platform: '{ name: "notes", title: "Notes again", description: "" }' })}`, says: /declares platform "notes", which driver examples\/drivers\/notes already declares/ },
    { name: "no name", entries: () => driverModule("no-name.mjs", { platform: '{ title: "Nameless", description: "" }' }), says: /no-name\.mjs declares something invalid:\n\s+platform\.name: is missing/ },
    { name: "a name that cannot be a platform's", entries: () => driverModule("bad-name.mjs", { platform: '{ name: "My Intranet", title: "Mine", description: "" }' }), says: /platform\.name: must be lower-case letters/ },
    // A driver made by defineDriver always has the service's browser_steps (and so routines); one written by hand may have nothing.
    {
      name: "no actions",
      entries: () => (
        writeFileSync(
          join(dir, "no-actions.mjs"),
          'export default { apiVersion: "1.0.0", platform: { name: "extra", title: "Extra", description: "", actions: [] }, failures: [], actions: {}, ensureSignedIn: async () => {}, signedInAs: async () => undefined, manualSignIn: { path: "/", signedIn: (page) => page.getByRole("heading") } };\n',
        ),
        join(dir, "no-actions.mjs")
      ),
      says: /actions: declares no action type/,
    },
    { name: "an action type the service does not have", entries: () => driverModule("publish.mjs", { actions: "{ publish: async () => ({}) }" }), says: /actions\.publish: "publish" is not an action type of the service \(connect, post, / },
    { name: "a handler that is not a function", entries: () => driverModule("not-a-handler.mjs", { actions: '{ post: "click Post" }' }), says: /actions\.post: must be a function/ },
    { name: "a bad pace", entries: () => driverModule("pace.mjs", { platform: '{ name: "extra", title: "Extra", description: "", paces: { post: { per_hour: 0 } } }' }), says: /platform\.paces\.post\.per_hour: .*>=1/ },
    { name: "a pace for an action it does not have", entries: () => driverModule("pace-type.mjs", { platform: '{ name: "extra", title: "Extra", description: "", paces: { send_message: { per_hour: 5 } } }' }), says: /platform\.paces\.send_message: the driver has no "send_message" handler/ },
    { name: "an inbox pattern that is not a regex", entries: () => driverModule("inbox-string.mjs", { platform: '{ name: "extra", title: "Extra", description: "", inbox: { code: "code is (\\\\d{6})" } }' }), says: /platform\.inbox\.code: must be a regular expression/ },
    { name: "an inbox pattern with two groups", entries: () => driverModule("inbox-groups.mjs", { platform: '{ name: "extra", title: "Extra", description: "", inbox: { code: /(code|pin) is (\\d{6})/ } }' }), says: /platform\.inbox\.code: \/\(code\|pin\) is \(\\d\{6\}\)\/ has 2 capture groups/ },
    { name: "an inbox pattern that backtracks", entries: () => driverModule("inbox-backref.mjs", { platform: '{ name: "extra", title: "Extra", description: "", inbox: { code: /(\\d)\\1/ } }' }), says: /platform\.inbox\.code: .*cannot run in linear time/ },
    {
      name: "several mistakes at once, each said",
      entries: () => driverModule("several.mjs", { platform: '{ name: "extra", title: "Extra", description: "", paces: { post: { per_hour: 0 } } }', actions: "{ publish: async () => ({}) }" }),
      says: /platform\.paces\.post\.per_hour: .*>=1\n\s+actions\.publish: "publish" is not an action type.*\n\s+platform\.paces\.post: the driver has no "post" handler/,
    },
    { name: "a failure with a code the service does not have", entries: () => driverModule("failure-code.mjs", { failures: '[{ code: "forbidden", locate: (page) => page.getByRole("alert"), message: "No." }]' }), says: /failures\[0\]\.code: "forbidden" is not an action error code/ },
  ];

  it("a platform in ACTION_SERVICE_PLATFORMS that no driver has, built in or loaded", { timeout: 120_000 }, async () => {
    const { code, output } = await runToExit(["serve"], { ACTION_SERVICE_DRIVERS: "examples/drivers/notes", ACTION_SERVICE_PLATFORMS: "notes=http://127.0.0.1:9,intranet=http://127.0.0.1:9" });
    expect(output).toMatch(/^Invalid configuration:\n {2}ACTION_SERVICE_PLATFORMS names "intranet", which no driver has; known: sandbox, mediawiki, ghost, notes\./m);
    expect(code, output).toBe(2);
  });

  it.each(refusals)("$name", { timeout: 120_000 }, async ({ entries, says, command = "serve" }) => {
    const { code, output } = await runToExit([command], { ACTION_SERVICE_DRIVERS: entries() });
    expect(output).toMatch(says);
    expect(output).toMatch(/^Invalid configuration:\n {2}ACTION_SERVICE_DRIVERS: driver /m);
    expect(code, output).toBe(2);
  });
});

describe("driver new", () => {
  it("scaffolds a package whose driver loads as it is, and refuses a folder with files or a bad name", { timeout: 120_000 }, async () => {
    const made = await runToExit(["driver", "new", "intranet", "--dir", join(dir, "intranet")], {});
    expect(made.code, made.output).toBe(0);
    const manifest = JSON.parse(readFileSync(join(dir, "intranet", "package.json"), "utf8"));
    expect(manifest).toMatchObject({ name: "action-service-driver-intranet", type: "module", exports: "./index.js", peerDependencies: { "action-service": expect.any(String) } });
    expect(readFileSync(join(dir, "intranet", "index.js"), "utf8")).toContain('from "action-service/driver"');
    expect(readFileSync(join(dir, "intranet", "test", "check.test.js"), "utf8")).toContain('"driver", "check"');

    // The scaffold is a driver the service takes: a `keys list` (which loads every driver) runs with it.
    const loaded = await runToExit(["keys", "list"], { ACTION_SERVICE_DRIVERS: join(dir, "intranet"), ACTION_SERVICE_PLATFORMS: "intranet=http://127.0.0.1:9" });
    expect(loaded.code, loaded.output).toBe(0);

    const again = await runToExit(["driver", "new", "intranet", "--dir", join(dir, "intranet")], {});
    expect(again.code).toBe(2);
    expect(again.output).toContain("already has files in it");
    const badName = await runToExit(["driver", "new", "My Intranet", "--dir", join(dir, "other")], {});
    expect(badName.code).toBe(2);
    expect(badName.output).toContain('"My Intranet" cannot name a platform');
  });
});
