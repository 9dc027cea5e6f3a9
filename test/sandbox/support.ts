import { mkdirSync } from "node:fs";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright";
import { Secret, TOTP } from "otpauth";
import { findChromium, CHROMIUM_ARGS } from "../../src/browser/executable.js";

export const PASSWORD = "sandbox-password";
export const ARTIFACTS = "test-artifacts";

export async function launchChromium(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const executablePath = findChromium(process.env.BROWSER_EXECUTABLE_PATH)?.path;
  return chromium.launch({ ...(executablePath ? { executablePath } : {}), args: CHROMIUM_ARGS });
}

let counter = 0;
/** A handle no other test uses. */
export function uniqueHandle(prefix: string): string {
  counter += 1;
  return `${prefix}_${Date.now().toString(36)}${counter}`.slice(0, 30);
}

/** The control API's answer; its JSON is read field by field in the tests. */
export interface ControlResponse { status: number; json: any }

/** Calls the sandbox control API. */
export async function control(baseUrl: string, method: "GET" | "POST", path: string, body?: unknown): Promise<ControlResponse> {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.headers = { "content-type": "application/json" };
    init.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  const response = await fetch(`${baseUrl}/_sandbox${path}`, init);
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

export async function createUser(baseUrl: string, challenge: string, extra: Record<string, unknown> = {}): Promise<{ handle: string; name: string; totp_secret?: string }> {
  const handle = uniqueHandle(challenge.slice(0, 4));
  const name = `Test ${challenge} ${handle.slice(-4)}`;
  const created = await control(baseUrl, "POST", "/users", { handle, name, password: PASSWORD, challenge, headline: "Test user", ...extra });
  if (created.status !== 201) throw new Error(`could not create ${handle}: ${JSON.stringify(created.json)}`);
  return created.json;
}

/** The newest code in a user's outbox. */
export async function latestCode(baseUrl: string, handle: string): Promise<string> {
  const outbox = await control(baseUrl, "GET", `/outbox?to=${handle}`);
  const code = outbox.json?.[0]?.code;
  if (typeof code !== "string") throw new Error(`no code for ${handle}`);
  return code;
}

export function totpCode(secret: string, timestamp = Date.now()): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 }).generate({ timestamp });
}

/** Fills the classic sign-in form as a person would. */
export async function submitSignIn(page: Page, baseUrl: string, handle: string, password = PASSWORD): Promise<void> {
  await page.goto(`${baseUrl}/login`);
  await page.getByLabel("Username").fill(handle);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** Waits until a heading with this exact name is on the page. */
export async function heading(page: Page, name: string): Promise<void> {
  await page.getByRole("heading", { name, exact: true }).waitFor({ timeout: 10_000 });
}

/** Signs a context in over HTTP (setup for tests about other things; only for users without a challenge). */
export async function signInOverHttp(context: BrowserContext, baseUrl: string, handle: string, paths = { signIn: "/login", username: "username", password: "password" }): Promise<void> {
  const page = await context.request.get(`${baseUrl}${paths.signIn}`);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1];
  if (!csrf) throw new Error("no CSRF token on the sign-in page");
  const response = await context.request.post(`${baseUrl}${paths.signIn}`, {
    form: { _csrf: csrf, [paths.username]: handle, [paths.password]: PASSWORD },
    maxRedirects: 0,
  });
  if (response.status() !== 303) throw new Error(`sign-in of ${handle} answered ${response.status()}`);
}

/** A cookie-keeping HTTP client for tests that need no browser (fetch or an in-process app). */
export class HttpClient {
  private readonly cookies = new Map<string, string>();
  constructor(private readonly send: (path: string, init: RequestInit) => Promise<Response>) {}

  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set("cookie", [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; "));
    const response = await this.send(path, { ...init, headers, redirect: "manual" });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair?.indexOf("=") ?? -1;
      if (pair && eq > 0) this.cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    return response;
  }

  /** GETs a page and returns its body and its CSRF token. */
  async page(path: string): Promise<{ response: Response; body: string; csrf: string }> {
    const response = await this.request(path);
    const body = await response.text();
    return { response, body, csrf: /name="_csrf" value="([^"]+)"/.exec(body)?.[1] ?? "" };
  }

  async postForm(path: string, form: Record<string, string>): Promise<Response> {
    return this.request(path, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(form).toString(),
    });
  }
}
