import { ResourceTemplate, type McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { SubscribeRequestSchema, UnsubscribeRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { AppError } from "../domain/errors.js";
import type { Principal } from "../domain/keys.js";
import { isTerminal } from "../domain/status.js";
import type { Engine } from "../engine/engine.js";
import type { Logger } from "../engine/logger.js";
import { toMcpError } from "./errors.js";

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
 * The `action://{id}` resource template (read: the action JSON; list: recent actions)
 * and its subscriptions: `notifications/resources/updated` on every status change of
 * a subscribed action, until it ends. Returns the clean-up for when the session closes.
 */
export function registerActionResources(mcp: McpServer, engine: Engine, principal: Principal, logger: Logger): () => void {
  const subscribed = new Set<string>();

  const readAction = (uri: string) => {
    const action = engine.present(engine.getAction(principal, actionIdOf(uri)), "mcp");
    return { contents: [{ uri: actionUri(action.id), mimeType: "application/json", text: JSON.stringify(action) }] };
  };

  mcp.registerResource(
    "action",
    new ResourceTemplate("action://{id}", {
      list: () => ({
        resources: engine.listActions(principal, { limit: RECENT_ACTIONS }).data.map((action) => ({
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
    (uri) => {
      try {
        return readAction(uri.toString());
      } catch (error) {
        throw toMcpError(error);
      }
    },
  );

  mcp.server.setRequestHandler(SubscribeRequestSchema, (request) => {
    try {
      const action = engine.getAction(principal, actionIdOf(request.params.uri));
      // An action that has ended never changes again: nothing to wait for.
      if (!isTerminal(action.status)) subscribed.add(action.id);
      return {};
    } catch (error) {
      throw toMcpError(error);
    }
  });
  mcp.server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    const match = ACTION_URI.exec(request.params.uri);
    if (match) subscribed.delete(decodeURIComponent(match[1]!));
    return {};
  });

  return engine.onChange((action) => {
    if (!subscribed.has(action.id)) return;
    if (isTerminal(action.status)) subscribed.delete(action.id);
    mcp.server.sendResourceUpdated({ uri: actionUri(action.id) }).catch((error: unknown) => {
      logger.debug({ err: error, action_id: action.id }, "resource update not sent");
    });
  });
}
