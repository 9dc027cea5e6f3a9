import type { z } from "zod";
import type { Principal } from "../domain/keys.js";
import type { PublicAction } from "../domain/public.js";
import type { Engine } from "../engine/engine.js";
import type { ActionRecord } from "../store/records.js";

/** What a tool may use for one call; nothing here knows the MCP protocol. */
export interface ToolContext {
  engine: Engine;
  principal: Principal;
  /** Aborted when the client cancels the call: it stops waiting, never the action. */
  signal: AbortSignal;
  /**
   * Waits (like REST `?wait`) until the action is at needs_input or has ended, or
   * `seconds` pass; the adapter reports each status change as progress.
   */
  waitFor(actionId: string, seconds: number): Promise<ActionRecord>;
  /** Offers a link (an owner sign-in link) as a URL-mode elicitation when the client takes them. */
  offerLink(url: string, message: string): void;
}

/** A tool's answer: the structured result, a short readable summary, and the action it is about. */
export interface ToolResult<T> {
  structured: T;
  text: string;
  /** Set when the result is about one action, so the adapter can offer its challenge. */
  action?: PublicAction;
}

/** The MCP tool annotations, all stated (no defaults left to a client's guess). */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** One tool as data: the adapter in `server.ts` turns it into an MCP tool. */
export interface ToolDefinition<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  handle(args: z.output<I>, context: ToolContext): ToolResult<z.output<O>> | Promise<ToolResult<z.output<O>>>;
  /**
   * The result for the action a call is about, when a client comes back for it: a 2026-era retry
   * after a challenge (`input-required.ts`). Tools without it never answer `input_required`.
   */
  resume?(action: PublicAction, context: ToolContext): ToolResult<z.output<O>> | Promise<ToolResult<z.output<O>>>;
}

/** A tool with its types erased, as the registry holds it (arguments are validated by `input` first). */
export interface Tool {
  name: string;
  title: string;
  description: string;
  input: z.ZodObject;
  output: z.ZodObject;
  annotations: ToolAnnotations;
  handle(args: unknown, context: ToolContext): Promise<ToolResult<unknown>>;
  resume?(action: PublicAction, context: ToolContext): ToolResult<unknown> | Promise<ToolResult<unknown>>;
}

export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(definition: ToolDefinition<I, O>): Tool {
  return {
    ...definition,
    handle: async (args, context) => definition.handle(args as z.output<I>, context),
  };
}
