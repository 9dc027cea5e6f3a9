import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../helpers/harness.js";

// The OpenAPI document clients generate their code from: it must describe what the service serves.
let h: Harness;

beforeAll(async () => {
  h = await createHarness({});
});
afterAll(async () => {
  await h?.destroy();
});

describe("GET /v1/openapi.json", () => {
  it("describes every route the app serves under /v1, and GET /metrics as Prometheus text", async () => {
    const response = await h.request("GET", "/v1/openapi.json");
    expect(response.status).toBe(200);
    const paths = response.json.paths as Record<string, Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>>;
    // Every method and path the app mounts (Hono's `:id` is OpenAPI's `{id}`), the document itself and middleware aside.
    const served = h.app.routes
      .filter((route) => route.path.startsWith("/v1/") && !route.path.endsWith("*") && route.path !== "/v1/openapi.json" && route.method !== "ALL")
      .map((route) => `${route.method.toLowerCase()} ${route.path.replace(/:(\w+)/g, "{$1}")}`);
    expect(served.length).toBeGreaterThan(20);
    for (const route of served) {
      const [method, path] = route.split(" ") as [string, string];
      expect(paths[path]?.[method], route).toBeDefined();
    }
    expect(Object.keys(paths["/metrics"]?.get?.responses["200"]?.content ?? {})).toEqual(["text/plain"]);
    expect(Object.keys(paths["/metrics"]!.get!.responses).sort()).toEqual(["200", "401", "403", "429"]);
  });

  it("defines every schema it refers to", async () => {
    const document = (await h.request("GET", "/v1/openapi.json")).json;
    const referred = new Set([...JSON.stringify(document).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((match) => match[1]!));
    expect(referred.size).toBeGreaterThan(0);
    for (const name of referred) expect(document.components.schemas, name).toHaveProperty([name]);
  });
});
