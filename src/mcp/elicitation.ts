import { randomUUID } from "node:crypto";
import type { RequestId, Server } from "@modelcontextprotocol/server";
import { HOW_TO_ANSWER } from "../domain/challenges.js";
import type { Principal } from "../domain/keys.js";
import type { PublicAction } from "../domain/public.js";
import type { Engine } from "../engine/engine.js";
import type { Logger } from "../engine/logger.js";

interface OpenElicitation {
  elicitationId: string;
  signInUrl: string;
  /** Stops the elicitation request if the client has not answered it when the challenge ends. */
  pending: AbortController;
  /** Ends the following of the action's changes made elsewhere (its end may be another coordinator's). */
  unfollow: () => void;
}

/** How long a client may take to show the URL elicitation; a challenge's default deadline. */
const ELICITATION_TIMEOUT_MS = 10 * 60 * 1000;

/**
 * Offers challenges as URL-mode elicitations to 2025-era clients that declare
 * `elicitation.url`, and tells them (`notifications/elicitation/complete`) once the
 * action leaves needs_input. The tool result carries the challenge either way. (The 2026
 * era has no server-to-client requests: there a challenge is `input_required`, `input-required.ts`.)
 */
export class ChallengeElicitor {
  readonly #open = new Map<string, OpenElicitation>();
  readonly #unsubscribe: () => void;

  constructor(
    private readonly server: Server,
    private readonly engine: Engine,
    private readonly principal: Principal,
    private readonly logger: Logger,
  ) {
    this.#unsubscribe = engine.onChange((action) => {
      const open = this.#open.get(action.id);
      if (!open || action.status === "needs_input") return;
      this.#open.delete(action.id);
      open.unfollow();
      open.pending.abort(new Error("the challenge has ended"));
      server.createElicitationCompletionNotifier(open.elicitationId)().catch((error: unknown) => {
        this.logger.debug({ err: error, action_id: action.id }, "elicitation completion not sent");
      });
    });
  }

  /** Whether the connected client declared URL-mode elicitation. */
  get supported(): boolean {
    return Boolean(this.server.getClientCapabilities()?.elicitation?.url);
  }

  /**
   * Offers the challenge of an action at needs_input, once per challenge link, on the
   * stream of the tool call that found it. Never waits for the client's answer, and a
   * decline changes nothing: the tool result still carries the challenge.
   */
  async offer(action: PublicAction, relatedRequestId: RequestId): Promise<void> {
    const challenge = action.challenge;
    if (!this.supported || action.status !== "needs_input" || !challenge) return;
    if (this.#open.get(action.id)?.signInUrl === challenge.sign_in_url) return;
    // The snapshot may be stale by now; offer only a challenge that is still open.
    if ((await this.engine.getAction(this.principal, action.id)).status !== "needs_input") return;
    // Another call may have offered the same challenge while this one read it: still once per link.
    if (this.#open.get(action.id)?.signInUrl === challenge.sign_in_url) return;
    const open: OpenElicitation = { elicitationId: randomUUID(), signInUrl: challenge.sign_in_url, pending: new AbortController(), unfollow: this.engine.follow({ actionId: action.id }) };
    const superseded = this.#open.get(action.id);
    superseded?.unfollow();
    superseded?.pending.abort(new Error("superseded"));
    this.#open.set(action.id, open);
    const message = `The ${action.platform} sign-in for action ${action.id} (${action.type}) needs you: ${challenge.message} ${HOW_TO_ANSWER[challenge.kind]} Answer before ${challenge.expires_at}.`;
    this.server
      .elicitInput(
        { mode: "url", elicitationId: open.elicitationId, url: challenge.sign_in_url, message },
        { relatedRequestId, signal: open.pending.signal, timeout: ELICITATION_TIMEOUT_MS },
      )
      .then(
        (result) => this.logger.debug({ action_id: action.id, response: result.action }, "challenge elicitation answered"),
        (error: unknown) => this.logger.debug({ err: error, action_id: action.id }, "challenge elicitation not shown"),
      );
  }

  /** Offers a link that is not a challenge's (an owner sign-in link) once; never waits for the answer. */
  offerLink(url: string, message: string, relatedRequestId: RequestId): void {
    if (!this.supported) return;
    this.server
      .elicitInput({ mode: "url", elicitationId: randomUUID(), url, message }, { relatedRequestId, timeout: ELICITATION_TIMEOUT_MS })
      .then(
        (result) => this.logger.debug({ response: result.action }, "sign-in link elicitation answered"),
        (error: unknown) => this.logger.debug({ err: error }, "sign-in link elicitation not shown"),
      );
  }

  dispose(): void {
    this.#unsubscribe();
    for (const open of this.#open.values()) {
      open.unfollow();
      open.pending.abort(new Error("session closed"));
    }
    this.#open.clear();
  }
}
