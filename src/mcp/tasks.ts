import { z } from "zod";
import {
  CLIENT_CAPABILITIES_META_KEY,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type ClientCapabilities,
  type McpServer,
  type ServerContext,
} from "@modelcontextprotocol/server";
import type { Principal } from "../domain/keys.js";
import type { PublicAction } from "../domain/public.js";
import { isTerminal } from "../domain/status.js";
import type { Engine } from "../engine/engine.js";
import type { Logger } from "../engine/logger.js";
import { asAppError } from "../engine/request-errors.js";
import { progressMessage } from "./describe.js";
import { toMcpError } from "./errors.js";
import { challengeInputRequests } from "./input-required.js";
import type { ToolContext, ToolResult } from "./tool.js";
import { TOOLS } from "./tools/index.js";

/**
 * The tasks extension (`io.modelcontextprotocol/tasks`, MCP 2026-07-28, DESIGN §6): to a client
 * that declares it, `run_action` and `connect_account` answer with a task instead of holding the
 * call, and the action *is* the task: `tasks/get` reads it, `tasks/update` takes the person's
 * response to its challenge, `tasks/cancel` cancels it. Nothing is kept here: a task id names the
 * action and the tool, so any process on the same data dir answers for any task, for whoever may
 * read the action.
 */

export const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/** The tools whose calls become tasks; a task's id names which, so its result has that tool's shape. */
const TASK_TOOLS = ["run_action", "connect_account"] as const;
type TaskTool = (typeof TASK_TOOLS)[number];

/** How often a client should poll: a browser action takes seconds, a person at a challenge longer. */
const POLL_INTERVAL_MS = 2_000;

/**
 * `<tool>.<action id>`: the action id is 128 random bits (`engine/ids.ts`), so the task id is as
 * unguessable; it is never a bearer token either (every task request is authorized as the caller).
 */
const TASK_ID = new RegExp(`^(${TASK_TOOLS.join("|")})\\.(act_[A-Za-z0-9_-]{1,64})$`);

type TaskStatus = "working" | "input_required" | "completed" | "cancelled";

/** The Task fields of the extension (also the body of `resultType: "task"`). */
interface Task {
  taskId: string;
  status: TaskStatus;
  statusMessage: string;
  createdAt: string;
  lastUpdatedAt: string;
  /** null: the action, hence the task, is kept for good. */
  ttlMs: null;
  pollIntervalMs: number;
}

function taskIdOf(tool: TaskTool, actionId: string): string {
  return `${tool}.${actionId}`;
}

/** Whether this request's envelope declares the tasks extension. */
function declaresTasks(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCapabilities | undefined;
  return capabilities?.extensions?.[TASKS_EXTENSION] !== undefined;
}

/**
 * Whether this tool call becomes a task: a task tool, a client that declared the extension, and
 * not the retry of an `input_required` round (that call finishes as it began).
 */
export function runsAsTask(toolName: string, ctx: ServerContext): boolean {
  return (TASK_TOOLS as readonly string[]).includes(toolName) && declaresTasks(ctx) && ctx.mcpReq.requestState<unknown>() === undefined;
}

/**
 * The tool's answer as a created task. It also carries the tool's own `content` and
 * `structuredContent` (the action as it is now): the SDK checks every non-error tools/call result
 * against the tool's output schema, which tools/list keeps advertising for clients without tasks,
 * and a client that reads only those fields still learns the action and how to follow it.
 */
export function createdTask(toolName: string, result: ToolResult<unknown> & { action: PublicAction }): CallToolResult {
  const task = taskOf(toolName as TaskTool, result.action);
  const text = `Task ${task.taskId} (follow it with tasks/get): ${task.statusMessage}\n${result.text}`;
  // CallToolResult has no Task fields: the extension's result is a CallToolResult plus them.
  return { resultType: "task", ...task, ...callToolResult({ ...result, text }) } as CallToolResult;
}

/** A tool's answer as the tools/call result (as `server.ts` sends it). */
function callToolResult(result: ToolResult<unknown>): CallToolResult {
  return { content: [{ type: "text", text: result.text }], structuredContent: result.structured as Record<string, unknown> };
}

/** The task an action is, as `toolName` made it. */
function taskOf(toolName: TaskTool, action: PublicAction): Task {
  const status = statusOf(action);
  return {
    taskId: taskIdOf(toolName, action.id),
    status,
    statusMessage: statusMessage(action),
    createdAt: action.created_at,
    lastUpdatedAt: action.updated_at,
    ttlMs: null,
    pollIntervalMs: POLL_INTERVAL_MS,
  };
}

/**
 * queued|running → working; needs_input → input_required (working in the moment its challenge is
 * not yet written); succeeded|failed → completed (a failed action is a tool result, not a
 * protocol error: its result says what failed); canceled → cancelled.
 */
function statusOf(action: PublicAction): TaskStatus {
  switch (action.status) {
    case "queued":
    case "running":
      return "working";
    case "needs_input":
      return action.challenge ? "input_required" : "working";
    case "succeeded":
    case "failed":
      return "completed";
    case "canceled":
      return "cancelled";
  }
}

function statusMessage(action: PublicAction): string {
  const what = `Action ${action.id} (${action.type} on ${action.platform}): ${progressMessage(action)}`;
  if (action.status === "needs_input" && action.challenge) return `${what}. ${action.challenge.message} Open the sign-in link to answer it.`;
  if (action.status === "failed" && action.error) return `${what}. ${action.error.message}`;
  return `${what}.`;
}

const TaskParams = z.looseObject({ taskId: z.string().max(200) });

/**
 * `tasks/get`, `tasks/update` and `tasks/cancel` on a 2026-era instance, acting for `principal`.
 * (The 3-argument form: these names are not in the 2026 method registry; `tasks/update`'s
 * `inputResponses` reach `ctx.mcpReq.inputResponses`, lifted out of the params by the SDK.)
 */
export function registerTaskHandlers(mcp: McpServer, engine: Engine, principal: Principal, logger: Logger): void {
  mcp.server.registerCapabilities({ extensions: { [TASKS_EXTENSION]: {} } });

  /** The task's tool and action, read as the caller: anything else is "not found", whatever the reason. */
  async function find(taskId: string, ctx: ServerContext): Promise<{ tool: TaskTool; action: PublicAction }> {
    if (!declaresTasks(ctx)) throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
    const match = TASK_ID.exec(taskId);
    if (!match) throw notFound();
    try {
      return { tool: match[1] as TaskTool, action: await engine.present(await engine.getAction(principal, match[2]!), "mcp") };
    } catch (error) {
      const known = asAppError(error);
      // Another workspace's action, or an account outside the key's allow-list: no existence leak.
      if (known?.code === "not_found" || known?.code === "forbidden") throw notFound();
      throw failed(error);
    }
  }

  /** Cancels the action unless it has ended (the extension's cancel is cooperative: an ended task stays as it ended). */
  async function cancel(action: PublicAction): Promise<void> {
    if (isTerminal(action.status)) return;
    try {
      await engine.cancel(principal, action.id);
    } catch (error) {
      // It ended in the meantime: nothing to cancel.
      if (asAppError(error)?.code === "conflict") return;
      throw failed(error);
    }
  }

  function failed(error: unknown): ProtocolError {
    if (!asAppError(error)) logger.error({ err: error }, "MCP task request failed");
    return toMcpError(error);
  }

  mcp.server.setRequestHandler("tasks/get", { params: TaskParams }, async (params, ctx) => {
    const { tool, action } = await find(params.taskId, ctx);
    const task = taskOf(tool, action);
    const detail =
      task.status === "input_required"
        ? { inputRequests: challengeInputRequests(action) }
        : task.status === "completed"
          ? { result: await toolResult(engine, principal, tool, action, ctx) }
          : {};
    return { resultType: "complete", ...task, ...detail };
  });

  mcp.server.setRequestHandler("tasks/update", { params: TaskParams }, async (params, ctx) => {
    const { action } = await find(params.taskId, ctx);
    // Only the open challenge's key counts: keys of earlier challenges, or none, are ignored.
    const open = statusOf(action) === "input_required" ? Object.keys(challengeInputRequests(action)) : [];
    const responses = ctx.mcpReq.inputResponses ?? {};
    const declined = open.some((key) => {
      const response = responses[key] as { action?: unknown } | undefined;
      return response?.action === "decline" || response?.action === "cancel";
    });
    // An accept needs nothing from us: the person acts on the page the link opens.
    if (declined) await cancel(action);
    return { resultType: "complete" };
  });

  mcp.server.setRequestHandler("tasks/cancel", { params: TaskParams }, async (params, ctx) => {
    await cancel((await find(params.taskId, ctx)).action);
    return { resultType: "complete" };
  });
}

/** The full tools/call result the tool would return for the ended action (its `resume`, as a retried call gets it). */
async function toolResult(engine: Engine, principal: Principal, toolName: TaskTool, action: PublicAction, ctx: ServerContext): Promise<CallToolResult> {
  const tool = TOOLS.find((candidate) => candidate.name === toolName)!;
  const context: ToolContext = {
    engine,
    principal,
    signal: ctx.mcpReq.signal,
    waitFor: (id) => engine.getAction(principal, id),
    offerLink: () => undefined,
  };
  return callToolResult(await tool.resume!(action, context));
}

function notFound(): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, "Task not found: no task with this taskId is visible to this key.");
}
