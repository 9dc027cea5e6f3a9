import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { RequestOptions } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

/** A tools/call through the SDK's own client, with its text blocks joined and its structured content as `data`. */
export async function call(client: Client, name: string, args: Record<string, unknown> = {}, options?: RequestOptions): Promise<CallToolResult & { text: string; data: any; isError: boolean }> {
  const result = (await client.callTool({ name, arguments: args }, undefined, options)) as CallToolResult;
  const text = result.content.map((block) => (block.type === "text" ? block.text : "")).join("\n");
  return { ...result, text, data: result.structuredContent, isError: result.isError === true };
}
