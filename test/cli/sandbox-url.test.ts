import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createSandboxUser } from "../chaos/kill-support.js";
import { freePort, restClient, startServe, type ServeProcess } from "../helpers/processes.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { eventually } from "../helpers/wait.js";

// `serve --sandbox` with SANDBOX_URL naming another address for the same sandbox (DESIGN §9: a
// remote browser fleet reaches the sandbox by a name or a proxy, not by the 127.0.0.1 it listens
// on). Here that address is a TCP proxy before the sandbox's port: the driver's pages must come
// through it. Real processes (dist/cli.js: `npm run build` first), real Chromium.
let service: ServeProcess | undefined;
let proxy: TcpProxy | undefined;
let dir: string | undefined;
afterEach(async () => {
  await service?.stop();
  await proxy?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  service = proxy = dir = undefined;
});

describe("serve --sandbox with SANDBOX_URL set", () => {
  it("drives the sandbox at SANDBOX_URL, not at the address it listens on", { timeout: 180_000 }, async () => {
    dir = mkdtempSync(join(tmpdir(), "action-service-sandbox-url-"));
    const sandboxPort = await freePort();
    const own = `http://127.0.0.1:${sandboxPort}`;
    proxy = await startTcpProxy({ host: "127.0.0.1", port: sandboxPort });
    const reachedAt = proxy.through(own).replace(/\/+$/, "");
    service = await startServe({ dataDir: dir, sandboxUrl: reachedAt, args: ["--sandbox"], env: { SANDBOX_PORT: String(sandboxPort) } });
    expect(service.output()).toContain(`sandbox platform on ${reachedAt}`);

    // The test talks to the sandbox at its own address; only the service's browser goes through the proxy.
    const handle = `reached${Date.now().toString(36)}`;
    await createSandboxUser(own, handle);
    const api = restClient(() => service!.url, service.firstKey!);
    const account = (await api("POST", "/v1/accounts", { platform: "sandbox", username: handle, password: "sandbox-password" })).json.id as string;
    const text = `by SANDBOX_URL ${handle}`;
    const created = (await api("POST", "/v1/actions", { account_id: account, type: "post", params: { text } })).json;
    const ended = await eventually(
      async () => {
        const action = (await api("GET", `/v1/actions/${created.id}?wait=10`)).json;
        return ["succeeded", "failed", "canceled", "needs_input"].includes(action.status) ? action : undefined;
      },
      { what: "the post to end", timeoutMs: 120_000, everyMs: 200 },
    );
    expect(ended.status, JSON.stringify(ended)).toBe("succeeded");
    expect(proxy.connections).toBeGreaterThan(0);
    const posts = (await (await fetch(`${own}/_sandbox/posts?author=${handle}`)).json()) as { text: string }[];
    expect(posts.filter((post) => post.text === text)).toHaveLength(1);
  });
});
