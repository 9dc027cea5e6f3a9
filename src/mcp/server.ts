import { createRequire } from "node:module";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { CallToolResult, ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Principal } from "../domain/keys.js";
import type { PublicAction } from "../domain/public.js";
import type { Engine } from "../engine/engine.js";
import type { Logger } from "../engine/logger.js";
import { asAppError } from "../engine/request-errors.js";
import type { ActionRecord } from "../store/records.js";
import { ChallengeElicitor } from "./elicitation.js";
import { toolError } from "./errors.js";
import { registerActionResources } from "./resources.js";
import type { Tool, ToolContext } from "./tool.js";
import { MAX_WAIT_SECONDS } from "./schemas.js";
import { progressMessage } from "./describe.js";
import { TOOLS } from "./tools/index.js";

/** Who the MCP session acts for: the stdio owner, or the key that opened an HTTP session. */
export interface McpSessionOptions {
  engine: Engine;
  principal: Principal;
  logger: Logger;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const INSTRUCTIONS = [
  "Runs actions (post, look up a person, read a conversation, send a message, browser steps) on web platforms as connected accounts.",
  "Start with list_platforms (action types, params, prices) and list_accounts; connect_account adds an account.",
  "run_action returns the action; read its status. At needs_input the sign-in asks for something: answer code challenges with answer_challenge, or open challenge.sign_in_url (live browser).",
  "A failed action is a normal result: its text gives the recommended next step. Still queued or running: call get_action.",
].join(" ");

function serverVersion(): string {
  try {
    // src/mcp and dist/mcp both sit two levels below package.json.
    return (createRequire(import.meta.url)("../../package.json") as { version: string }).version;
  } catch {
    return "0.0.0";
  }
}

/**
 * One MCP session over the engine: the tools of `tools/`, the `action://{id}`
 * resources, challenge elicitations. The only code that maps tools to the protocol;
 * it holds no action state (everything is in the engine), so a session may end any time.
 */
export function createMcpServer(options: McpSessionOptions): McpServer {
  const { engine, principal, logger } = options;
  const mcp = new McpServer(
    { name: "action-service", title: "Action Service", version: serverVersion() },
    { capabilities: { tools: {}, resources: { subscribe: true } }, instructions: INSTRUCTIONS },
  );
  const elicitor = new ChallengeElicitor(mcp.server, engine, principal, logger);
  const stopResources = registerActionResources(mcp, engine, principal, logger);

  // `platform` is one of the platforms this service has enabled, as an enum a client can show.
  const platformNames = engine.platforms().map((platform) => platform.name) as [string, ...string[]];
  const platformField = z.enum(platformNames).describe(`The platform: ${platformNames.join(", ")} (list_platforms describes each).`);
  for (const tool of TOOLS) {
    mcp.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: "platform" in tool.input.shape ? tool.input.extend({ platform: platformField }) : tool.input,
        outputSchema: tool.output,
        annotations: { title: tool.title, ...tool.annotations },
      },
      (args: unknown, extra: Extra) => callTool(tool, args, extra),
    );
  }

  async function callTool(tool: Tool, args: unknown, extra: Extra): Promise<CallToolResult> {
    const asked = (args as { wait_seconds?: number }).wait_seconds;
    const context: ToolContext = {
      engine,
      principal,
      signal: extra.signal,
      waitFor: (id, seconds) => waitWithProgress(id, Math.min(seconds, MAX_WAIT_SECONDS), extra),
      offerLink: (url, message) => elicitor.offerLink(url, message, extra.requestId),
    };
    try {
      const result = await tool.handle(args, context);
      if (result.action) offerChallenge(result.action, extra);
      const clamped = asked !== undefined && asked > MAX_WAIT_SECONDS ? `\n(wait_seconds is at most ${MAX_WAIT_SECONDS}, below clients' 60-s timeout: it waited ${MAX_WAIT_SECONDS}.)` : "";
      return { content: [{ type: "text", text: result.text + clamped }], structuredContent: result.structured as Record<string, unknown> };
    } catch (error) {
      if (!asAppError(error)) logger.error({ err: error, tool: tool.name }, "MCP tool failed");
      return toolError(error);
    }
  }

  function offerChallenge(action: PublicAction, extra: Extra): void {
    try {
      elicitor.offer(action, extra.requestId);
    } catch (error) {
      logger.warn({ err: error, action_id: action.id }, "challenge elicitation not offered");
    }
  }

  /** engine.waitFor, plus a progress notification per status change when the client sent a progress token. */
  async function waitWithProgress(actionId: string, seconds: number, extra: Extra): Promise<ActionRecord> {
    const progressToken = extra._meta?.progressToken;
    if (progressToken === undefined || seconds <= 0) return engine.waitFor(actionId, seconds, extra.signal);
    let progress = 0;
    let last = engine.getAction(principal, actionId).status;
    const report = (): void => {
      const params = { progressToken, progress, message: progressMessage(engine.present(engine.getAction(principal, actionId), "mcp")) };
      progress += 1;
      extra.sendNotification({ method: "notifications/progress", params }).catch((error: unknown) => {
        logger.debug({ err: error, action_id: actionId }, "progress not sent");
      });
    };
    report();
    const stop = engine.onChange((action) => {
      if (action.id !== actionId || action.status === last) return;
      last = action.status;
      report();
    });
    try {
      return await engine.waitFor(actionId, seconds, extra.signal);
    } finally {
      stop();
    }
  }

  mcp.server.onclose = () => {
    elicitor.dispose();
    stopResources();
  };
  // The SDK declares `listChanged` once tools and resources exist; a session's tools never change
  // and new actions are announced per URI (resources/updated), so declare no list changes.
  mcp.server.registerCapabilities({ tools: { listChanged: false }, resources: { subscribe: true, listChanged: false } });
  return mcp;
}
