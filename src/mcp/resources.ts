import { ResourceTemplate, type McpServer } from "@modelcontextprotocol/server";
import { AppError } from "../domain/errors.js";
import type { Principal } from "../domain/keys.js";
import { isTerminal } from "../domain/status.js";
import type { Engine } from "../engine/engine.js";
import type { Logger } from "../engine/logger.js";
import { toMcpError } from "./errors.js";
import type { McpEra } from "./era.js";

const ACTION_URI = /^action:\/\/([^/?#]+)$/;
const RECENT_ACTIONS = 50;

export function actionUri(actionId: string): string {
  return `action://${actionId}`;
}

function actionIdOf(uri: string): string {
  const match = ACTION_URI.exec(uri);
  if (!match) throw new AppError("invalid_request", `Not an action resource: ${uri} (expected action://{id}).`);
  return decodeURIComponent(match[1]!);
}

/**
 * The `action://{id}` resource template (read: the action JSON; list: recent actions) and its
 * updates: `notifications/resources/updated` on every status change of a subscribed action, until it
 * ends. In the 2025 era a session subscribes with `resources/subscribe`; in the 2026 era a client
 * listens (`subscriptions/listen`) and the SDK passes on the updates of the URIs it listens to, so
 * every change of an action this principal may read is offered. Only an instance that `follow`s
 * (lives as long as its connection) listens to the engine. Returns the clean-up for its close.
 */
export function registerActionResources(mcp: McpServer, engine: Engine, principal: Principal, logger: Logger, options: { era: McpEra; follow: boolean }): () => void {
  /** Each subscribed action, with the end of its following (another coordinator's changes of it are announced here while subscribed). */
  const subscribed = new Map<string, () => void>();
  const subscribe = (id: string): void => void subscribed.set(id, subscribed.get(id) ?? (options.follow ? engine.follow({ actionId: id }) : () => undefined));
  const unsubscribe = (id: string): void => {
    subscribed.get(id)?.();
    subscribed.delete(id);
  };

  const readAction = async (uri: string) => {
    const action = await engine.present(await engine.getAction(principal, actionIdOf(uri)), "mcp");
    return { contents: [{ uri: actionUri(action.id), mimeType: "application/json", text: JSON.stringify(action) }] };
  };

  mcp.registerResource(
    "action",
    new ResourceTemplate("action://{id}", {
      list: async () => ({
        resources: (await engine.listActions(principal, { limit: RECENT_ACTIONS })).data.map((action) => ({
          uri: actionUri(action.id),
          name: action.id,
          title: `${action.type} on ${action.platform}: ${action.status}`,
          mimeType: "application/json",
        })),
      }),
    }),
    {
      title: "Action",
      description: "An action's JSON (status, challenge, error, result). Subscribe to be told of every status change.",
      mimeType: "application/json",
    },
    async (uri) => {
      try {
        return await readAction(uri.toString());
      } catch (error) {
        throw toMcpError(error);
      }
    },
  );

  if (options.era === "legacy") {
    mcp.server.setRequestHandler("resources/subscribe", async (request) => {
      // Listening before the action is read: a change while it is read is not missed.
      const id = actionIdOf(request.params.uri);
      const already = subscribed.has(id);
      subscribe(id);
      try {
        const action = await engine.getAction(principal, id);
        // An action that has ended never changes again: nothing to wait for.
        if (isTerminal(action.status) && !already) unsubscribe(id);
        return {};
      } catch (error) {
        if (!already) unsubscribe(id);
        throw toMcpError(error);
      }
    });
    mcp.server.setRequestHandler("resources/unsubscribe", (request) => {
      const match = ACTION_URI.exec(request.params.uri);
      if (match) unsubscribe(decodeURIComponent(match[1]!));
      return {};
    });
  }
  if (!options.follow) return () => undefined;

  const stop = engine.onChange(
    (action) => {
      if (options.era === "legacy") {
        if (!subscribed.has(action.id) || !engine.mayRead(principal, action)) return;
        if (isTerminal(action.status)) unsubscribe(action.id);
      } else if (!engine.mayRead(principal, action)) return;
      mcp.server.sendResourceUpdated({ uri: actionUri(action.id) }).catch((error: unknown) => {
        logger.debug({ err: error, action_id: action.id }, "resource update not sent");
      });
    },
    // The 2026 era is told of every action the key may read: the workspace's, wherever they change.
    options.era === "legacy" ? undefined : { workspaceId: principal.workspaceId },
  );
  return () => {
    stop();
    for (const id of [...subscribed.keys()]) unsubscribe(id);
  };
}
