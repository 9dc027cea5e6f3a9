import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";

describe("configuration", () => {
  it("has the documented defaults", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      host: "127.0.0.1",
      port: 8787,
      publicUrl: "http://127.0.0.1:8787",
      sandboxPort: 8788,
      sandboxUrl: "http://127.0.0.1:8788",
      challengeTtlSeconds: 600,
      freeCredits: 100,
      masterKey: undefined,
      warmContexts: 256,
      warmPages: 8,
      warmPageSeconds: 60,
    });
    expect(config.dataDir).toMatch(/\/data$/);
  });

  it("reads the warm pool's bounds; pages may be turned off, contexts may not", () => {
    expect(loadConfig({ ACTION_SERVICE_WARM_PAGES: "0", ACTION_SERVICE_WARM_CONTEXTS: "10000" })).toMatchObject({ warmPages: 0, warmContexts: 10_000 });
    // Unset: as many as actions may run at once.
    expect(loadConfig({ ACTION_SERVICE_MAX_CONCURRENT_ACTIONS: "16" })).toMatchObject({ warmPages: 16 });
    expect(() => loadConfig({ ACTION_SERVICE_WARM_CONTEXTS: "0" })).toThrow(/ACTION_SERVICE_WARM_CONTEXTS="0"/);
    expect(() => loadConfig({ ACTION_SERVICE_WARM_PAGES: "-1" })).toThrow(/ACTION_SERVICE_WARM_PAGES="-1"/);
    expect(() => loadConfig({ ACTION_SERVICE_WARM_PAGE_SECONDS: "soon" })).toThrow(ConfigError);
  });

  it("derives the sandbox URL from SANDBOX_PORT and accepts a hex master key", () => {
    const config = loadConfig({ SANDBOX_PORT: "9000", ACTION_SERVICE_MASTER_KEY: "ab".repeat(32), ACTION_SERVICE_PUBLIC_URL: "https://actions.example.com/" });
    expect(config.sandboxUrl).toBe("http://127.0.0.1:9000");
    expect(config.masterKey).toHaveLength(32);
    expect(config.publicUrl).toBe("https://actions.example.com");
  });

  it("reads ACTION_SERVICE_DATABASE_LISTEN_URL beside ACTION_SERVICE_DATABASE_URL (the same URL: none); alone or malformed, a clear error that never shows a password", () => {
    const database = "postgres://svc:secret@pgbouncer:6432/actions";
    expect(loadConfig({ ACTION_SERVICE_DATABASE_URL: database }).databaseListenUrl).toBe(undefined);
    expect(loadConfig({ ACTION_SERVICE_DATABASE_URL: database, ACTION_SERVICE_DATABASE_LISTEN_URL: database }).databaseListenUrl).toBe(undefined);
    expect(loadConfig({ ACTION_SERVICE_DATABASE_URL: database, ACTION_SERVICE_DATABASE_LISTEN_URL: "postgres://svc:secret@db:5432/actions" }).databaseListenUrl).toBe("postgres://svc:secret@db:5432/actions");
    expect(() => loadConfig({ ACTION_SERVICE_DATABASE_LISTEN_URL: "postgres://svc:secret@db:5432/actions" })).toThrow(/ACTION_SERVICE_DATABASE_LISTEN_URL: is only used with ACTION_SERVICE_DATABASE_URL/);
    for (const name of ["ACTION_SERVICE_DATABASE_URL", "ACTION_SERVICE_DATABASE_LISTEN_URL"]) {
      const error = (() => {
        try {
          loadConfig({ ACTION_SERVICE_DATABASE_URL: database, [name]: "mysql://svc:secret@db/actions" });
        } catch (caught) {
          return caught as Error;
        }
      })();
      expect(error, name).toBeInstanceOf(ConfigError);
      expect(error!.message).toContain(`${name}=(hidden)`);
      expect(error!.message).not.toContain("secret");
    }
  });

  it("reads SANDBOX_SMTP_URL as an smtp:// address; anything else is a clear error", () => {
    expect(loadConfig({}).sandboxSmtpUrl).toBe(undefined);
    expect(loadConfig({ SANDBOX_SMTP_URL: "smtp://127.0.0.1:2525" }).sandboxSmtpUrl).toBe("smtp://127.0.0.1:2525");
    expect(() => loadConfig({ SANDBOX_SMTP_URL: "http://127.0.0.1:2525" })).toThrow(/SANDBOX_SMTP_URL="http:\/\/127.0.0.1:2525": must be smtp:\/\/host:port/);
  });

  it("reads ACTION_SERVICE_DNS_SERVERS as IP addresses with optional ports; a malformed entry is a clear error", () => {
    expect(loadConfig({}).dnsServers).toBe(undefined);
    expect(loadConfig({ ACTION_SERVICE_DNS_SERVERS: " 10.0.0.2, 127.0.0.1:5353,::1,[::1]:53 " }).dnsServers).toEqual(["10.0.0.2", "127.0.0.1:5353", "::1", "[::1]:53"]);
    for (const bad of ["dns.example.com", "10.0.0.2:0", "10.0.0.2:70000", "[10.0.0.2]:53", "::1:53x", "10.0.0.2:"]) {
      expect(() => loadConfig({ ACTION_SERVICE_DNS_SERVERS: `127.0.0.1,${bad}` }), bad).toThrow(new RegExp(`ACTION_SERVICE_DNS_SERVERS=.*"${bad.replace(/[.[\]]/g, "\\$&")}" is not a DNS server's IP address with an optional port`));
    }
  });

  it("reads SANDBOX_DKIM_KEY as a path and SANDBOX_DKIM_SELECTOR (default sandbox) as a DNS label", () => {
    expect(loadConfig({}).sandboxDkim).toEqual({ keyPath: undefined, selector: "sandbox" });
    expect(loadConfig({ SANDBOX_DKIM_KEY: "/etc/dkim.pem", SANDBOX_DKIM_SELECTOR: "s2025" }).sandboxDkim).toEqual({ keyPath: "/etc/dkim.pem", selector: "s2025" });
    expect(() => loadConfig({ SANDBOX_DKIM_SELECTOR: "not a label" })).toThrow(/SANDBOX_DKIM_SELECTOR="not a label": must be a DNS label/);
  });

  it("reads ACTION_SERVICE_METRICS_TOKEN; a bad one is named without showing it", () => {
    expect(loadConfig({}).metricsToken).toBe(undefined);
    expect(loadConfig({ ACTION_SERVICE_METRICS_TOKEN: "f".repeat(64) }).metricsToken).toBe("f".repeat(64));
    for (const bad of ["too-short", "has a space in the middle"]) {
      const error = (() => {
        try {
          loadConfig({ ACTION_SERVICE_METRICS_TOKEN: bad });
        } catch (thrown) {
          return thrown as Error;
        }
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect(error!.message).toMatch(/ACTION_SERVICE_METRICS_TOKEN=\(hidden\): must be 16 to 512 printable characters/);
      expect(error!.message).not.toContain(bad);
    }
  });

  it("reads ACTION_SERVICE_PLATFORMS as name=url pairs; a name no driver has stops start-up", async () => {
    const config = loadConfig({ ACTION_SERVICE_PLATFORMS: "mediawiki=http://127.0.0.1:8080/, ghost=https://blog.example.com/admin/" });
    expect(config.platforms).toEqual({ mediawiki: "http://127.0.0.1:8080", ghost: "https://blog.example.com/admin" });
    expect(loadConfig({}).platforms).toEqual({});
    const { enabledPlatforms } = await import("../src/platforms/index.js");
    const enabled = enabledPlatforms("http://127.0.0.1:8788", config.platforms);
    expect(enabled.drivers.map((driver) => driver.platform.name)).toEqual(["sandbox", "mediawiki", "ghost"]);
    expect(enabledPlatforms("http://127.0.0.1:8788", {}).drivers.map((driver) => driver.platform.name)).toEqual(["sandbox"]);
    expect(() => enabledPlatforms("http://127.0.0.1:8788", { nodebb: "http://x" })).toThrow(/"nodebb", which no driver has; known: sandbox, mediawiki, ghost/);
  });

  it.each([
    ["ACTION_SERVICE_PORT", "eighty"],
    ["ACTION_SERVICE_PORT", "70000"],
    ["ACTION_SERVICE_MASTER_KEY", "too-short"],
    ["ACTION_SERVICE_PUBLIC_URL", "not a url"],
    ["BROWSER_WS_ENDPOINT", "http://example.com"],
    ["ACTION_SERVICE_CHALLENGE_TTL_SECONDS", "0"],
    ["ACTION_SERVICE_FREE_CREDITS", "-5"],
    ["SANDBOX_URL", "ftp://x"],
    ["ACTION_SERVICE_PLATFORMS", "mediawiki"],
    ["ACTION_SERVICE_PLATFORMS", "mediawiki=ftp://wiki"],
    ["ACTION_SERVICE_PLATFORMS", "Media Wiki=http://wiki"],
  ])("refuses %s=%s with a message naming the variable", (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`${name}=`));
  });
});
