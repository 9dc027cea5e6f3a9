import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { TOTP } from "otpauth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandbox, type RunningSandbox } from "../../src/sandbox/index.js";
import { CLI, freePort } from "../helpers/processes.js";

// `action-service driver check` as a user runs it: dist/cli.js (`npm run build` first) against a
// real sandbox, with this machine's Chromium. Each run is its own process and browser.
const PASSWORD = "sandbox-password";
const EXAMPLES = join(import.meta.dirname, "..", "..", "examples", "drivers");

let sandbox: RunningSandbox;
let dir: string;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), "action-service-driver-check-"));
});
afterAll(async () => {
  await sandbox?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface CheckLine {
  name: string;
  outcome: string;
  message: string;
  code?: string;
}

/** Runs `driver check` to its end; `answer` is called with stderr as it grows and may return a line to type. */
function runCheck(args: string[], options: { env?: Record<string, string>; answer?: (stderr: string) => string | undefined } = {}): Promise<Run> {
  const { ACTION_SERVICE_CHECK_PASSWORD: _unset, ...env } = process.env;
  const child = spawn(process.execPath, [CLI, "driver", "check", ...args], { cwd: dir, env: { ...env, ...options.env }, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let answered = false;
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
    const line = answered ? undefined : options.answer?.(stderr);
    if (line !== undefined) {
      answered = true;
      child.stdin.end(`${line}\n`);
    }
  });
  if (!options.answer) child.stdin.end();
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}

function checksOf(run: Run): Map<string, CheckLine> {
  const report = JSON.parse(run.stdout) as { checks: CheckLine[] };
  return new Map(report.checks.map((line) => [line.name, line]));
}

async function createUser(handle: string, challenge: string, extra: Record<string, string> = {}): Promise<void> {
  const response = await fetch(`${sandbox.url}/_sandbox/users`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ handle, name: `Check ${handle}`, password: PASSWORD, challenge, ...extra }),
  });
  expect(response.status, await response.clone().text()).toBe(201);
}

const unique = (prefix: string): string => `${prefix}${Date.now().toString(36)}${Math.floor(Math.random() * 1e4)}`;

describe("action-service driver check", () => {
  it("passes the sandbox driver without credentials: the start page shows the signed-out marker and the form", { timeout: 120_000 }, async () => {
    const run = await runCheck(["sandbox", "--url", sandbox.url, "--json"]);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    const checks = checksOf(run);
    expect(checks.get("signedOut")).toMatchObject({ outcome: "found", message: "found on /login (start)" });
    expect(checks.get("form.password")?.outcome).toBe("found");
    expect(checks.get("signedIn")?.outcome).toBe("not_reached");
    expect(checks.get("failures[1] rate_limited")).toMatchObject({ outcome: "not_shown", code: "rate_limited" });
  });

  it("signs in with ACTION_SERVICE_CHECK_PASSWORD, finds the signed-in marker and who is signed in, and never prints the password", { timeout: 120_000 }, async () => {
    const handle = unique("checked");
    await createUser(handle, "none");
    const password = PASSWORD;
    const run = await runCheck(["sandbox", "--url", sandbox.url, "--username", handle], { env: { ACTION_SERVICE_CHECK_PASSWORD: password } });
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.stdout).toMatch(/^✓ signedIn: getByRole\('heading', \{ name: 'Feed', exact: true, level: 1 \}\) — found on \/feed \(after signing in\)$/m);
    expect(run.stdout).toContain(`✓ signedInAs — shows ${handle} on /feed`);
    expect(run.stdout).toContain(`✓ sign-in — signed in as ${handle}`);
    expect(run.stdout).toContain("everything expected was found");
    expect(run.stdout + run.stderr).not.toContain(password);
  });

  it("reports a refused password as login_failed with the page's words, and exits non-zero", { timeout: 120_000 }, async () => {
    const wrong = "not-the-right-password-42";
    const run = await runCheck(["sandbox", "--url", sandbox.url, "--username", "alice", "--json"], { env: { ACTION_SERVICE_CHECK_PASSWORD: wrong } });
    expect(run.code, run.stderr + run.stdout).toBe(1);
    const checks = checksOf(run);
    expect(checks.get("sign-in")).toMatchObject({ outcome: "failed", code: "login_failed" });
    expect(checks.get("sign-in")?.message).toContain("The password you entered is incorrect.");
    expect(checks.get("refused")?.outcome).toBe("found");
    expect(run.stdout + run.stderr).not.toContain(wrong);
  });

  it("asks a two-factor user's code at the terminal and signs in with the code typed on stdin", { timeout: 120_000 }, async () => {
    const handle = unique("twofactor");
    const secret = "KRUGS4ZANFZSAYJAORSXG5BAONSWG4TF";
    await createUser(handle, "totp", { totp_secret: secret });
    const totp = new TOTP({ secret, digits: 6, period: 30, algorithm: "SHA1" });
    const run = await runCheck(["sandbox", "--url", sandbox.url, "--username", handle, "--json"], {
      env: { ACTION_SERVICE_CHECK_PASSWORD: PASSWORD },
      answer: (stderr) => (stderr.includes("Answer: ") ? totp.generate() : undefined),
    });
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(run.stderr).toContain("The platform asks (two_factor_code): Enter the 6-digit code from your authenticator app.");
    const checks = checksOf(run);
    expect(checks.get("challenges[0] two_factor_code")).toMatchObject({ outcome: "found", message: "found on /login/challenge (challenge two_factor_code)" });
    expect(checks.get("challenges[0].field")?.outcome).toBe("found");
    expect(checks.get("sign-in")?.outcome).toBe("passed");
    expect(checks.get("challenges[1] email_code")?.outcome).toBe("not_reached");
  });

  it("fails a driver module whose signed-in marker the platform never shows, naming that state", { timeout: 120_000 }, async () => {
    // A user's own driver, outside the source tree, written with action-service/driver alone: the
    // example notes driver (made for the sandbox), with a signed-in marker of another site.
    const module = join(dir, "wrong-marker.mjs");
    writeFileSync(
      module,
      `import { defineDriver } from "action-service/driver";
import notes from ${JSON.stringify(pathToFileURL(join(EXAMPLES, "notes", "index.js")).href)};
const { platform, signIn, failures, signedInAs, actions } = notes;
export default defineDriver({
  platform: { name: "wrongmarker", title: "Wrong marker", description: platform.description },
  signIn: { ...signIn, probe: undefined, signedIn: (page) => page.getByRole("heading", { name: "Timeline", exact: true }) },
  failures, signedInAs, actions,
});
`,
    );
    const run = await runCheck(["./wrong-marker.mjs", "--url", sandbox.url, "--username", "alice"], { env: { ACTION_SERVICE_CHECK_PASSWORD: PASSWORD } });
    expect(run.code, run.stderr + run.stdout).toBe(1);
    expect(run.stdout).toMatch(/^✗ signedIn: getByRole\('heading', \{ name: 'Timeline', exact: true \}\) — not found on \/feed \(after signing in\) \(nor refused, /m);
    expect(run.stdout).toMatch(/FAILED .*Not found or failed: signedIn, sign-in\.$/m);
  });

  it("refuses a --url that is not an address, and reports a platform that does not answer", { timeout: 120_000 }, async () => {
    const bad = await runCheck(["sandbox", "--url", "not a url"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--url "not a url" is not a URL');
    const closed = `http://127.0.0.1:${await freePort()}`;
    const unreachable = await runCheck(["sandbox", "--url", closed]);
    expect(unreachable.code, unreachable.stderr + unreachable.stdout).toBe(1);
    expect(unreachable.stdout).toContain(`✗ platform — the Sandbox Social platform at ${closed} cannot be reached (ERR_CONNECTION_REFUSED).`);
  });

  it("asks for the password only from ACTION_SERVICE_CHECK_PASSWORD or a terminal, never an argument", { timeout: 60_000 }, async () => {
    const none = await runCheck(["sandbox", "--url", sandbox.url, "--username", "alice"]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("--username alice needs a password: set ACTION_SERVICE_CHECK_PASSWORD");
    const argument = await runCheck(["sandbox", "--url", sandbox.url, "--username", "alice", "--password", "sandbox-password"]);
    expect(argument.code).toBe(2);
    expect(argument.stderr).toContain("The password is never an argument");
    expect(argument.stderr).not.toContain("sandbox-password");
  });
});
