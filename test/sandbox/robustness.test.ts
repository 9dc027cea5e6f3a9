import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandboxApp, startSandbox, type RunningSandbox } from "../../src/sandbox/index.js";
import { HttpClient, PASSWORD, control, createUser, totpCode, uniqueHandle } from "./support.js";

let sandbox: RunningSandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
});
afterAll(async () => {
  await sandbox?.close();
});

const overHttp = () => new HttpClient((path, init) => fetch(`${sandbox.url}${path}`, init));

/** A sandbox in process with a clock the test moves. */
function withClock() {
  let now = Date.parse("2026-03-01T12:00:00Z");
  const app = createSandboxApp({ clock: () => new Date(now) });
  const client = new HttpClient(async (path, init) => app.request(path, init));
  const controlApi = async (path: string, body?: unknown) => {
    const response = await app.request(`/_sandbox${path}`, body === undefined ? {} : {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
    });
    return { status: response.status, json: await response.json() };
  };
  return { client, controlApi, advance: (ms: number) => { now += ms; }, now: () => now };
}

async function signIn(client: HttpClient, handle: string): Promise<Response> {
  const { csrf } = await client.page("/login");
  return client.postForm("/login", { _csrf: csrf, username: handle, password: PASSWORD });
}

describe("bad input gets the pages a real site shows, and the sandbox keeps answering", () => {
  it("refuses a form without, or with a wrong, CSRF token with a 403 page", async () => {
    const client = overHttp();
    await client.page("/login");
    const missing = await client.postForm("/login", { username: "alice", password: PASSWORD });
    expect(missing.status).toBe(403);
    expect(await missing.text()).toContain("We couldn&#39;t accept that form");
    const wrong = await client.postForm("/login", { _csrf: "forged", username: "alice", password: PASSWORD });
    expect(wrong.status).toBe(403);
    const json = await client.request("/login", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(json.status).toBe(403);
    expect(json.headers.get("content-type")).toContain("text/html");
  });

  it("answers a form with missing fields with a 400 page, and empty ones with the form's message", async () => {
    const client = overHttp();
    const { csrf } = await client.page("/login");
    const missing = await client.postForm("/login", { _csrf: csrf });
    expect(missing.status).toBe(400);
    expect(await missing.text()).toContain("Something&#39;s wrong with that request");
    const empty = await client.postForm("/login", { _csrf: csrf, username: "", password: "" });
    expect(empty.status).toBe(422);
    expect(await empty.text()).toContain("Enter your username and password.");
    expect((await signIn(client, "alice")).status).toBe(303);
    const noText = await client.postForm("/posts", { _csrf: (await client.page("/feed")).csrf });
    expect(noText.status).toBe(400);
  });

  it("refuses a 5 MB body with a 413 page, with or without a length, and keeps serving", async () => {
    const client = overHttp();
    const { csrf } = await client.page("/login");
    const huge = "x".repeat(5 * 1024 * 1024);
    const sized = await client.postForm("/login", { _csrf: csrf, username: huge, password: PASSWORD });
    expect(sized.status).toBe(413);
    expect(await sized.text()).toContain("That&#39;s too much");
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 80; i++) controller.enqueue(new TextEncoder().encode("y".repeat(65_536)));
        controller.close();
      },
    });
    const streamed = await client.request("/login", {
      method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: chunks, duplex: "half",
    } as RequestInit);
    expect(streamed.status).toBe(413);
    const tooBigJson = await control(sandbox.url, "POST", "/users", { handle: "big_one", name: huge, password: "x", challenge: "none" });
    expect(tooBigJson.status).toBe(413);
    expect((await client.page("/login")).response.status).toBe(200);
  });

  it("sends a form posted after the session ended to sign-in, not to an error page", async () => {
    const client = overHttp();
    const user = await createUser(sandbox.url, "none");
    expect((await signIn(client, user.handle)).status).toBe(303);
    const { csrf } = await client.page("/feed");
    await control(sandbox.url, "POST", `/users/${user.handle}/sessions/expire`);
    const posted = await client.postForm("/posts", { _csrf: csrf, text: "written before the session ended" });
    expect(posted.status).toBe(303);
    expect(posted.headers.get("location")).toBe("/login");
    expect((await client.page("/login")).body).toContain("Your session has ended. Sign in again.");
    expect((await control(sandbox.url, "GET", `/posts?author=${user.handle}`)).json).toEqual([]);
  });

  it("escapes user text everywhere it is shown", async () => {
    const client = overHttp();
    const user = await createUser(sandbox.url, "none", { name: "<img src=x onerror=alert(1)>", headline: "\"><script>alert(2)</script>" });
    expect((await signIn(client, user.handle)).status).toBe(303);
    const { csrf } = await client.page("/feed");
    const posted = await client.postForm("/posts", { _csrf: csrf, text: "<script>alert(3)</script>" });
    const permalink = await client.page(posted.headers.get("location") ?? "/");
    expect(permalink.body).toContain("&lt;script&gt;alert(3)&lt;/script&gt;");
    const person = await client.page(`/people/${user.handle}`);
    expect(person.body).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect(person.body).toContain("&quot;&gt;&lt;script&gt;alert(2)");
    expect(`${permalink.body}${person.body}`).not.toMatch(/<script>alert|<img src=x/);
  });
});

describe("an unexpected error", () => {
  it("renders the 500 page, reports the error, and the next request is served", async () => {
    let broken = false;
    const errors: unknown[] = [];
    const app = createSandboxApp({
      clock: () => {
        if (broken) throw new Error("clock broke");
        return new Date();
      },
      onError: (error) => errors.push(error),
    });
    broken = true;
    const failed = await app.request("/login");
    expect(failed.status).toBe(500);
    expect(await failed.text()).toContain("Something went wrong");
    expect(errors).toHaveLength(1);
    broken = false;
    expect((await app.request("/login")).status).toBe(200);
  });
});

describe("the control API", () => {
  it("validates what it is sent", async () => {
    const handle = uniqueHandle("ctl");
    const user = { handle, name: "Control Test", password: PASSWORD, challenge: "sms" };
    expect((await control(sandbox.url, "POST", "/users", "{not json")).status).toBe(400);
    const bad = await control(sandbox.url, "POST", "/users", { ...user, challenge: "telepathy" });
    expect(bad.status).toBe(422);
    expect(bad.json.error.code).toBe("invalid_request");
    expect((await control(sandbox.url, "POST", "/users", { handle, name: "No password", challenge: "none" })).status).toBe(422);
    expect((await control(sandbox.url, "POST", "/users", { ...user, handle: "Not A Handle" })).status).toBe(422);
    expect((await control(sandbox.url, "POST", "/users", { ...user, totp_secret: "not-base32!" })).status).toBe(422);
    expect((await control(sandbox.url, "POST", "/users", { ...user, security_answer: "  " })).status).toBe(422);
    expect((await control(sandbox.url, "POST", "/users", { ...user, messaging: "no" })).status).toBe(422);
    const created = await control(sandbox.url, "POST", "/users", user);
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ handle, name: "Control Test", challenge: "sms" });
    expect((await control(sandbox.url, "POST", "/users", user)).status).toBe(409);
    expect((await control(sandbox.url, "POST", "/users", { ...user, handle: "alice" })).status).toBe(409);

    expect((await control(sandbox.url, "GET", `/outbox?to=${handle}`)).json).toEqual([]);
    expect((await control(sandbox.url, "GET", "/outbox?to=nobody_here")).status).toBe(404);
    expect((await control(sandbox.url, "GET", "/posts?author=nobody_here")).status).toBe(404);
    expect((await control(sandbox.url, "GET", "/posts?author=alice")).json[0]).toMatchObject({ author: "alice" });
    expect((await control(sandbox.url, "POST", "/devices/approve", { handle: "erin" })).status).toBe(404);
    expect((await control(sandbox.url, "POST", "/devices/approve", {})).status).toBe(422);
    expect((await control(sandbox.url, "POST", "/users/nobody_here/sessions/expire")).status).toBe(404);
    expect((await control(sandbox.url, "POST", `/users/${handle}/sessions/expire`)).json).toEqual({ handle, expired: 0 });
    expect((await control(sandbox.url, "POST", "/settings", { rateLimit: { max: 1 } })).status).toBe(422);
    expect((await control(sandbox.url, "POST", "/settings", { rate_limit: { max: 0, window_seconds: 60 } })).status).toBe(422);
    expect((await control(sandbox.url, "POST", "/settings", {})).json).toEqual({ redesign: false, rate_limit: { max: 1000, window_seconds: 60 }, response_delay_ms: 0, profile_reworded: false });
    expect((await control(sandbox.url, "GET", "/nothing")).status).toBe(404);
  });

  it("generates a TOTP secret for a totp user created without one", async () => {
    const user = await createUser(sandbox.url, "totp");
    expect(user.totp_secret).toMatch(/^[A-Z2-7]{32}$/);
  });
});

describe("the security question", () => {
  it("takes the answer trimmed and in any case, and ends the attempt after 5 wrong answers", async () => {
    const { client, controlApi } = withClock();
    const created = await controlApi("/users", { handle: "quiz", name: "Quiz", password: PASSWORD, challenge: "question", security_answer: "Blue" });
    expect(created.json).toMatchObject({ challenge: "question", security_question: "What was the name of your first pet?", messaging: true });
    expect((await signIn(client, "quiz")).headers.get("location")).toBe("/login/challenge");
    const { csrf, body } = await client.page("/login/challenge");
    expect(body).toContain("<p>What was the name of your first pet?</p>");
    for (const wrong of ["biscuit", "", "blu", "blue!"]) {
      expect((await client.postForm("/login/challenge", { _csrf: csrf, answer: wrong })).status).toBe(422);
    }
    const last = await client.postForm("/login/challenge", { _csrf: csrf, answer: "red" });
    expect(last.headers.get("location")).toBe("/login");
    expect((await client.page("/login")).body).toContain("Too many incorrect answers. Sign in again.");
    await signIn(client, "quiz");
    const right = await client.postForm("/login/challenge", { _csrf: csrf, answer: "  bLUE " });
    expect(right.status).toBe(303);
    expect(right.headers.get("location")).toBe("/feed");
  });
});

describe("time-bound rules, with an injected clock", () => {
  it("expires an e-mailed code after 10 minutes; a new code works", async () => {
    const { client, controlApi, advance } = withClock();
    expect((await signIn(client, "carol")).headers.get("location")).toBe("/login/challenge");
    const [first] = (await controlApi("/outbox?to=carol")).json;
    const { csrf } = await client.page("/login/challenge");
    advance(10 * 60_000 + 1_000);
    const late = await client.postForm("/login/challenge", { _csrf: csrf, code: first.code });
    expect(await late.text()).toContain("That code has expired. Send a new code and try again.");
    await client.postForm("/login/challenge/resend", { _csrf: csrf });
    const [second] = (await controlApi("/outbox?to=carol")).json;
    expect(second.code).not.toBe(undefined);
    const ok = await client.postForm("/login/challenge", { _csrf: csrf, code: second.code });
    expect(ok.status).toBe(303);
    expect(ok.headers.get("location")).toBe("/feed");
  });

  it("accepts a TOTP code of the previous step but not of two steps back", async () => {
    const { client, advance, now } = withClock();
    await signIn(client, "bob");
    const { csrf } = await client.page("/login/challenge");
    const stale = totpCode("JBSWY3DPEHPK3PXP", now() - 60_000);
    expect((await client.postForm("/login/challenge", { _csrf: csrf, code: stale })).status).toBe(422);
    advance(30_000);
    const previous = totpCode("JBSWY3DPEHPK3PXP", now() - 30_000);
    expect((await client.postForm("/login/challenge", { _csrf: csrf, code: previous })).status).toBe(303);
  });

  it("ends a sign-in left at its challenge for 30 minutes, and lets a user act again after the window", async () => {
    const { client, controlApi, advance } = withClock();
    await signIn(client, "erin");
    advance(31 * 60_000);
    expect((await controlApi("/devices/approve", { handle: "erin" })).status).toBe(404);
    const page = await client.request("/login/challenge");
    expect(page.headers.get("location")).toBe("/login");
    expect((await client.page("/login")).body).toContain("Your sign-in attempt expired. Sign in again.");

    await controlApi("/settings", { rate_limit: { max: 1, window_seconds: 10 } });
    await signIn(client, "alice");
    expect((await client.request("/people/bob")).status).toBe(200);
    const limited = await client.request("/people/bob");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("10");
    advance(10_001);
    expect((await client.request("/people/bob")).status).toBe(200);
  });
});
