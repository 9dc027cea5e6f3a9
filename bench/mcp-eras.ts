/**
 * (m) A tool call's time in the 2026-07-28 era ÷ in the 2025 era: the same tool (`get_action` of an
 * ended action, no wait), the same server, the same client library (the SDK's v2 client: pinned to
 * 2026-07-28, or opening a 2025-11-25 session), calls interleaved so both meet the same machine.
 * Stateless must not cost more per call than a session.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { LiveService } from "../test/helpers/live-service.js";
import { median } from "./support.js";

export async function mcpEras(live: LiveService, actionId: string, rounds = 400): Promise<{ legacyMs: number; modernMs: number }> {
  const connect = async (modern: boolean): Promise<Client> => {
    const client = new Client({ name: "bench-m", version: "1.0.0" }, modern ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {});
    await client.connect(new StreamableHTTPClientTransport(new URL(`${live.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${live.key}` } } }));
    return client;
  };
  const legacy = await connect(false);
  const modern = await connect(true);
  if (legacy.getProtocolEra() !== "legacy" || modern.getProtocolEra() !== "modern") throw new Error("the clients did not get the eras asked for");
  const call = async (client: Client): Promise<number> => {
    const start = performance.now();
    const result = await client.callTool({ name: "get_action", arguments: { action_id: actionId, wait_seconds: 0 } });
    if (result.isError) throw new Error("get_action failed");
    return performance.now() - start;
  };
  const times = { legacy: [] as number[], modern: [] as number[] };
  try {
    for (let i = 0; i < 30; i++) await Promise.all([call(legacy), call(modern)]);
    for (let i = 0; i < rounds; i++) {
      times.legacy.push(await call(legacy));
      times.modern.push(await call(modern));
    }
  } finally {
    await legacy.close();
    await modern.close();
  }
  return { legacyMs: median(times.legacy), modernMs: median(times.modern) };
}
