import { z } from "zod";
import { McpServer, type CallToolResult, type InputRequiredResult, type ServerContext } from "@modelcontextprotocol/server";
import type { Principal } from "../domain/keys.js";
import type { PublicAction } from "../domain/public.js";
import type { Engine } from "../engine/engine.js";
import type { Logger } from "../engine/logger.js";
import { asAppError } from "../engine/request-errors.js";
import type { ActionRecord } from "../store/records.js";
import { ChallengeElicitor } from "./elicitation.js";
import type { McpEra } from "./era.js";
import { toolError } from "./errors.js";
import { askForChallenge, resumeChallenge, takesUrlElicitation, verifyRequestState } from "./input-required.js";
import { registerActionResources } from "./resources.js";
import { createdTask, registerTaskHandlers, runsAsTask } from "./tasks.js";
import type { Tool, ToolContext, ToolResult } from "./tool.js";
import { MAX_WAIT_SECONDS } from "./schemas.js";
import { progressMessage } from "./describe.js";
import { TOOLS } from "./tools/index.js";
import { PACKAGE_VERSION } from "../package.js";

/** Who the MCP session acts for: the stdio owner, or the key that opened an HTTP session. */
export interface McpSessionOptions {
  engine: Engine;
  principal: Principal;
  logger: Logger;
  /** Which era the connection speaks (default `legacy`); one tool registry serves both. */
  era?: McpEra;
  /**
   * Whether the instance lives as long as its connection (stdio, a 2025 session; the default): only
   * such an instance follows the engine's changes (pushed elicitations, resource updates). A 2026 HTTP
   * request's instance lives for one request and holds nothing.
   */
  longLived?: boolean;
}

const INSTRUCTIONS = [
  "Runs actions (post, look up a person, read a conversation, send a message, browser steps) on web platforms as connected accounts.",
  "Start with list_platforms (action types, params, prices) and list_accounts; connect_account adds an account.",
  "run_action returns the action; read its status. At needs_input the sign-in asks for something: answer code challenges with answer_challenge, or open challenge.sign_in_url (live browser).",
  "A failed action is a normal result: its text gives the recommended next step. Still queued or running: call get_action.",
].join(" ");

/**
 * One MCP session over the engine: the tools of `tools/`, the `action://{id}`
 * resources, challenge elicitations. The only code that maps tools to the protocol;
 * it holds no action state (everything is in the engine), so a session may end any time.
 */
export function createMcpServer(options: McpSessionOptions): McpServer {
  const { engine, principal, logger } = options;
  const era = options.era ?? "legacy";
  const longLived = options.longLived ?? true;
  const mcp = new McpServer(
    { name: "action-service", title: "Action Service", version: PACKAGE_VERSION },
    {
      // A session's tools never change and new actions are announced per URI: no list changes.
      capabilities: { tools: { listChanged: false }, resources: { subscribe: true, listChanged: false } },
      instructions: INSTRUCTIONS,
      // 2025 clients get challenges pushed as elicitations that never hold the call (`elicitation.ts`).
      inputRequired: { legacyShim: false },
      // A retried call's requestState is opened and checked before its handler runs (`input-required.ts`).
      requestState: { verify: (state: string) => verifyRequestState(engine, principal, state) },
    },
  );
  const elicitor = era === "legacy" && longLived ? new ChallengeElicitor(mcp.server, engine, principal, logger) : undefined;
  const stopResources = registerActionResources(mcp, engine, principal, logger, { era, follow: longLived });
  if (era === "modern") registerTaskHandlers(mcp, engine, principal, logger);

  for (const [tool, config] of toolConfigs(engine)) mcp.registerTool(tool.name, config, (args: unknown, ctx: ServerContext) => callTool(tool, args, ctx));

  async function callTool(tool: Tool, args: unknown, ctx: ServerContext): Promise<CallToolResult | InputRequiredResult> {
    const asked = (args as { wait_seconds?: number }).wait_seconds;
    // A task does not hold the call: the client polls tasks/get instead (`tasks.ts`).
    const asTask = era === "modern" && runsAsTask(tool.name, ctx);
    const context: ToolContext = {
      engine,
      principal,
      signal: ctx.mcpReq.signal,
      waitFor: (id, seconds) => waitWithProgress(id, asTask ? 0 : Math.min(seconds, MAX_WAIT_SECONDS), ctx),
      offerLink: (url, message) => elicitor?.offerLink(url, message, ctx.mcpReq.id),
    };
    try {
      const resumed = era === "modern" && tool.resume ? await resumeChallenge(engine, principal, tool.name, args, ctx, waitMs(asked)) : undefined;
      const result: ToolResult<unknown> = resumed ? await tool.resume!(resumed, context) : await tool.handle(args, context);
      if (result.action) {
        if (asTask) return createdTask(tool.name, { ...result, action: result.action });
        if (era === "legacy") await offerChallenge(result.action, ctx);
        else if (tool.resume && takesUrlElicitation(ctx)) {
          const ask = askForChallenge(engine, principal, tool.name, args, result.action);
          if (ask) return ask;
        }
      }
      const clamped = asked !== undefined && asked > MAX_WAIT_SECONDS ? `\n(wait_seconds is at most ${MAX_WAIT_SECONDS}, below clients' 60-s timeout: it waited ${MAX_WAIT_SECONDS}.)` : "";
      return { content: [{ type: "text", text: result.text + clamped }], structuredContent: result.structured as Record<string, unknown> };
    } catch (error) {
      if (!asAppError(error)) logger.error({ err: error, tool: tool.name }, "MCP tool failed");
      return toolError(error);
    }
  }

  /** Offered before the tool result is returned: the elicitation goes out on the call's own stream, which the result ends. Never waits for the client's answer. */
  async function offerChallenge(action: PublicAction, ctx: ServerContext): Promise<void> {
    try {
      await elicitor?.offer(action, ctx.mcpReq.id);
    } catch (error) {
      logger.warn({ err: error, action_id: action.id }, "challenge elicitation not offered");
    }
  }

  /** engine.waitFor, plus a progress notification per status change when the client sent a progress token. */
  async function waitWithProgress(actionId: string, seconds: number, ctx: ServerContext): Promise<ActionRecord> {
    const progressToken = ctx.mcpReq._meta?.progressToken;
    if (progressToken === undefined || seconds <= 0) return engine.waitFor(actionId, seconds, ctx.mcpReq.signal);
    let progress = 0;
    const first = await engine.getAction(principal, actionId);
    let last = first.status;
    // One report after another (a client refuses progress that goes backwards), each of the action as it was then.
    let sending = Promise.resolve();
    const report = (record: ActionRecord): void => {
      const step = progress++;
      sending = sending
        .then(async () => {
          const action = await engine.present(record, "mcp");
          await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken, progress: step, message: progressMessage(action) } });
        })
        .catch((error: unknown) => {
          logger.debug({ err: error, action_id: actionId }, "progress not sent");
        });
    };
    report(first);
    const stop = engine.onChange((action) => {
      if (action.id !== actionId || action.status === last) return;
      last = action.status;
      report(action);
    });
    try {
      return await engine.waitFor(actionId, seconds, ctx.mcpReq.signal);
    } finally {
      stop();
      // Every report goes out before the result it leads to.
      await sending;
    }
  }

  if (longLived) {
    const onclose = mcp.server.onclose;
    mcp.server.onclose = () => {
      onclose?.();
      elicitor?.dispose();
      stopResources();
    };
  }
  return mcp;
}

/**
 * Each tool's registration, made once per engine (a 2026-era instance is made per request):
 * `platform` is one of the platforms this service has enabled, as an enum a client can show.
 */
function toolConfigs(engine: Engine): ReturnType<typeof buildConfigs> {
  let configs = registrations.get(engine);
  if (!configs) registrations.set(engine, (configs = buildConfigs(engine)));
  return configs;
}
const registrations = new WeakMap<Engine, ReturnType<typeof buildConfigs>>();

function buildConfigs(engine: Engine) {
  const platformNames = engine.platforms().map((platform) => platform.name) as [string, ...string[]];
  const platformField = z.enum(platformNames).describe(`The platform: ${platformNames.join(", ")} (list_platforms describes each).`);
  return TOOLS.map(
    (tool) =>
      [
        tool,
        {
          title: tool.title,
          description: tool.description,
          // An optional platform (a filter, as list_routines's) stays optional.
          inputSchema:
            "platform" in tool.input.shape
              ? tool.input.extend({ platform: (tool.input.shape.platform as z.ZodType).safeParse(undefined).success ? platformField.optional() : platformField })
              : tool.input,
          outputSchema: tool.output,
          annotations: { title: tool.title, ...tool.annotations },
        },
      ] as const,
  );
}

/** How long a retried call waits for the action to leave its challenge: the call's wait_seconds (default 30), at most MAX_WAIT_SECONDS. */
function waitMs(asked: number | undefined): number {
  return Math.min(asked ?? 30, MAX_WAIT_SECONDS) * 1000;
}
