import type { Hono, MiddlewareHandler } from "hono";
import {
  errorPage, fields, onlyIn, rateLimited, renderPage, requireViewer, type Ctx, type SandboxDeps, type SandboxEnv,
} from "../http.js";
import {
  MESSAGE_REFUSALS, MESSAGING_OFF, conversationBody, conversationListBody, messagingOffBody, newMessageBody,
} from "../pages/messages.js";
import { SKINS, conversationPath, type Skin } from "../skin.js";
import type { Conversation, User } from "../state.js";

/**
 * Conversations, for both skins. Counted toward the rate limit: viewing a conversation page and
 * sending a message (from a conversation or from the new-message form). An account without
 * direct messages gets the "Messaging isn't available" page (403, not counted) on every one of them.
 */
export function registerMessageRoutes(app: Hono<SandboxEnv>, deps: SandboxDeps): void {
  const authorOf = (handle: string) => deps.state.users.get(handle);
  const otherIn = (conversation: Conversation, viewer: User) =>
    authorOf(conversation.participants[0] === viewer.handle ? conversation.participants[1] : conversation.participants[0]);

  // Signed-out browsers go on (to be sent to sign-in); an account without messages stops here.
  const messagingOn: MiddlewareHandler<SandboxEnv> = async (c, next) => {
    const viewer = c.var.viewer;
    if (!viewer || viewer.messaging) return next();
    return renderPage(c, MESSAGING_OFF.heading, messagingOffBody(c.var.skin), 403);
  };

  for (const skin of SKINS) {
    const guard = onlyIn(skin);
    const base = skin.paths.messages;

    app.get(base, guard, messagingOn, (c) => {
      const viewer = requireViewer(c);
      if (viewer instanceof Response) return viewer;
      const rows = deps.state.conversationsOf(viewer.handle).flatMap((conversation) => {
        const other = otherIn(conversation, viewer);
        return other ? [{ id: conversation.id, other, last: deps.state.messagesIn(conversation.id).at(-1) }] : [];
      });
      return renderPage(c, skin.text.messagesHeading, conversationListBody(skin, viewer, rows));
    });

    // Opens the conversation with ?to=HANDLE if there is one, else shows the new-message form.
    app.get(`${base}/new`, guard, messagingOn, (c) => {
      const viewer = requireViewer(c);
      if (viewer instanceof Response) return viewer;
      const to = normalizeHandle(c.req.query("to") ?? "");
      if (to === "") return newMessage(c, skin, { to });
      const recipient = deps.state.users.get(to);
      if (!recipient) return newMessage(c, skin, { to, error: MESSAGE_REFUSALS.unknownRecipient }, 404);
      if (recipient.handle === viewer.handle) return newMessage(c, skin, { to, error: MESSAGE_REFUSALS.self }, 422);
      const existing = deps.state.conversationBetween(viewer.handle, recipient.handle);
      if (existing) return c.redirect(conversationPath(skin, existing.id), 302);
      return newMessage(c, skin, { to, recipient });
    });

    app.post(`${base}/new`, guard, messagingOn, (c) => {
      const viewer = requireViewer(c);
      if (viewer instanceof Response) return viewer;
      const form = fields(c, "to", "text");
      if (!form) return errorPage(c, 400);
      const limited = rateLimited(c, deps, viewer);
      if (limited) return limited;
      const to = normalizeHandle(form.to);
      const again = (error: string, status: 404 | 422 = 422) =>
        newMessage(c, skin, { to, recipient: deps.state.users.get(to), error, draft: form.text }, status);
      if (to === "") return again(MESSAGE_REFUSALS.missingRecipient);
      const recipient = deps.state.users.get(to);
      if (!recipient) return again(MESSAGE_REFUSALS.unknownRecipient, 404);
      if (recipient.handle === viewer.handle) return again(MESSAGE_REFUSALS.self);
      const result = deps.state.sendMessage(viewer.handle, recipient.handle, form.text);
      if (!result.ok) return again(MESSAGE_REFUSALS[result.reason]);
      return c.redirect(`${conversationPath(skin, result.conversation.id)}#message-${result.message.id}`, 303);
    });

    app.get(`${base}/:id`, guard, messagingOn, (c) => {
      const viewer = requireViewer(c);
      if (viewer instanceof Response) return viewer;
      const limited = rateLimited(c, deps, viewer);
      if (limited) return limited;
      return showConversation(c, skin, viewer, c.req.param("id"));
    });

    app.post(`${base}/:id`, guard, messagingOn, (c) => {
      const viewer = requireViewer(c);
      if (viewer instanceof Response) return viewer;
      const form = fields(c, "text");
      if (!form) return errorPage(c, 400);
      const conversation = visibleConversation(c.req.param("id"), viewer);
      const other = conversation ? otherIn(conversation, viewer) : undefined;
      if (!conversation || !other) return errorPage(c, 404);
      const limited = rateLimited(c, deps, viewer);
      if (limited) return limited;
      const result = deps.state.sendMessage(viewer.handle, other.handle, form.text);
      if (!result.ok) return showConversation(c, skin, viewer, conversation.id, { error: MESSAGE_REFUSALS[result.reason], draft: form.text });
      return c.redirect(`${conversationPath(skin, conversation.id)}#message-${result.message.id}`, 303);
    });
  }

  function visibleConversation(id: string, viewer: User): Conversation | undefined {
    const conversation = deps.state.findConversation(id);
    return conversation?.participants.includes(viewer.handle) ? conversation : undefined;
  }

  function showConversation(c: Ctx, skin: Skin, viewer: User, id: string, refusal?: { error: string; draft: string }): Response {
    const conversation = visibleConversation(id, viewer);
    const other = conversation ? otherIn(conversation, viewer) : undefined;
    if (!conversation || !other) return errorPage(c, 404);
    const messages = deps.state.messagesIn(conversation.id);
    const body = conversationBody({ skin, csrf: c.var.session.csrf, id: conversation.id, viewer, other, messages, authorOf, ...refusal });
    return renderPage(c, other.name, body, refusal ? 422 : 200);
  }

  function newMessage(c: Ctx, skin: Skin, view: { to: string; recipient?: User | undefined; error?: string; draft?: string }, status: 200 | 404 | 422 = 200): Response {
    return renderPage(c, skin.text.newMessageHeading, newMessageBody({ skin, csrf: c.var.session.csrf, ...view }), status);
  }
}

function normalizeHandle(input: string): string {
  return input.trim().replace(/^@/, "").toLowerCase();
}
