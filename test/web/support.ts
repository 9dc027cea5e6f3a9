import type { Hono } from "hono";
import { defaultAllowedHosts } from "../../src/api/origin.js";
import { silentLogger } from "../../src/engine/logger.js";
import { RateLimiter } from "../../src/engine/access/index.js";
import { mountWebApp } from "../../src/web/index.js";
import { createHarness, type Harness, type HarnessOptions } from "../helpers/harness.js";

export const ORIGIN = "http://127.0.0.1:8787";

/** The in-process harness with the web app mounted as the server mounts it. */
export async function webHarness(options: HarnessOptions & { perMinute?: number } = {}): Promise<Harness> {
  const harness = await createHarness(options);
  const policy = { allowedHosts: defaultAllowedHosts("127.0.0.1", 8787), publicUrl: () => ORIGIN };
  mountWebApp(harness.app, { engine: harness.engine, limiter: new RateLimiter(options.perMinute ?? 6_000, harness.clock), policy, logger: silentLogger });
  return harness;
}

export interface WebResponse {
  status: number;
  headers: Headers;
  text: string;
  json: any;
  /** Where a redirect goes. */
  location: string | null;
}

/** A browser-like client of the web app: keeps its cookie, sends Origin and Host as a browser on this app would. */
export class WebClient {
  cookie: string | undefined;

  constructor(private readonly app: Hono) {}

  async send(
    method: string,
    path: string,
    options: { form?: Record<string, string | string[]>; json?: unknown; headers?: Record<string, string>; origin?: string | null } = {},
  ): Promise<WebResponse> {
    const headers: Record<string, string> = { host: "127.0.0.1:8787", ...(this.cookie ? { cookie: this.cookie } : {}) };
    const origin = options.origin === undefined ? ORIGIN : options.origin;
    if (method !== "GET" && origin !== null) headers.origin = origin;
    let body: string | undefined;
    if (options.form) {
      const form = new URLSearchParams();
      for (const [name, value] of Object.entries(options.form)) for (const item of [value].flat()) form.append(name, item);
      body = form.toString();
      headers["content-type"] = "application/x-www-form-urlencoded";
    } else if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers["content-type"] = "application/json";
      headers.accept = "application/json";
    }
    const response = await this.app.request(`${ORIGIN}${path}`, { method, headers: { ...headers, ...options.headers }, ...(body === undefined ? {} : { body }) });
    const set = response.headers.get("set-cookie");
    if (set) {
      const [pair] = set.split(";");
      this.cookie = /=$/.test(pair!) || /Max-Age=0/i.test(set) ? undefined : pair;
    }
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, text, json, location: response.headers.get("location") };
  }

  async signIn(key: string): Promise<WebResponse> {
    return this.send("POST", "/app/sign-in", { form: { key, next: "/app/actions" } });
  }

  /** The page's form token (as the page's forms carry it). */
  async csrf(path = "/app/actions"): Promise<string> {
    const page = await this.send("GET", path);
    const match = /name="_csrf" value="([^"]+)"/.exec(page.text);
    if (!match) throw new Error(`no form token on ${path} (${page.status})`);
    return match[1]!;
  }
}

/** The `action` of every POST form on a page, sign-out left out. */
export function postForms(html: string): string[] {
  return [...html.matchAll(/<form method="post" action="([^"]+)"/g)].map((match) => match[1]!).filter((action) => action !== "/app/sign-out");
}
