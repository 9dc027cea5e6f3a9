import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { WebSocketServer, type WebSocket } from "ws";
import { isAnswerableByApi } from "../../domain/challenges.js";
import { ACTION_ERRORS, AppError } from "../../domain/errors.js";
import { isTerminal } from "../../domain/status.js";
import { checkHostAndOrigin, type OriginPolicy } from "../../api/origin.js";
import type { Engine } from "../../engine/engine.js";
import { tooManyRequests, type RateLimiter } from "../../engine/access/index.js";
import { sha256 } from "../../store/crypto.js";
import type { LiveTarget } from "../../engine/accounts/index.js";
import type { Logger } from "../../engine/logger.js";
import { FORWARDED, HopProofs, REFUSAL_REASONS, forwardUpgrade, headerOf, hopRequestOf } from "./hop.js";
import type { LiveHub } from "./hub.js";
import { livePage, messagePage } from "./page.js";
import type { Viewer, ViewerInput } from "./screencast.js";

const TOKEN_PATH = /^\/live\/([A-Za-z0-9_-]{1,100})\/ws$/;

/** Headers on every live response: a capability link must not leak, be cached or be indexed. */
function secure(c: Context, nonce: string): void {
  c.header("Referrer-Policy", "no-referrer");
  c.header("Cache-Control", "no-store");
  c.header("X-Robots-Tag", "noindex, nofollow");
  c.header("X-Content-Type-Options", "nosniff");
  c.header("X-Frame-Options", "DENY");
  c.header(
    "Content-Security-Policy",
    `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  );
}

/** The live view's state as its page shows it. */
export async function liveState(engine: Engine, target: LiveTarget): Promise<Record<string, unknown>> {
  if (target.kind === "sign_in") {
    const done = target.link.state === "completed";
    return { type: "state", platform: target.account.platform, username: target.account.username, status: done ? "connected" : "signing in", final: done, answerable: false, ...(done ? { outcome: "Signed in: the session is saved and the account is connected. You can close this page." } : {}) };
  }
  const action = (await engine.store.actions.get(target.action.id))!;
  const account = await engine.store.accounts.get(action.account_id);
  const challenge = (await engine.store.challenges.get(target.challenge.id))!;
  const waiting = action.status === "needs_input" && challenge.state === "open";
  const outcome = isTerminal(action.status)
    ? action.status === "failed" && action.error_code
      ? `The action failed: ${action.error_code}. ${ACTION_ERRORS[action.error_code].advice}`
      : `The action ${action.status}.`
    : !waiting
      ? "Answered: the action continues."
      : undefined;
  return {
    type: "state",
    platform: action.platform,
    username: account?.username,
    status: action.status,
    final: isTerminal(action.status),
    answerable: waiting && isAnswerableByApi(challenge.kind),
    challenge: { kind: challenge.kind, message: challenge.message, expires_at: challenge.expires_at },
    ...(outcome ? { outcome } : {}),
  };
}

/**
 * `GET /live/{token}` (the page), `/state`, `/answer`, and the WebSocket `/ws` that
 * streams the page and takes input. The token is the only credential; it is never logged.
 */
export function mountLive(
  app: Hono,
  options: { engine: Engine; hub: LiveHub; logger: Logger; limiter: RateLimiter; policy: OriginPolicy },
): (request: IncomingMessage, socket: Duplex, head: Buffer) => boolean {
  const { engine, hub, logger, limiter, policy } = options;
  /** Live links have no API key: each link is its own caller under the shared limiter. */
  const take = (token: string): Promise<number> => limiter.take(`live:${sha256(token)}`);

  app.use("/live/*", async (c, next) => {
    const refusal = checkHostAndOrigin(c.req.raw.headers, policy, "the live browser");
    if (refusal) throw new AppError("forbidden", refusal);
    const wait = await take(c.req.path.split("/")[2] ?? "");
    if (wait > 0) {
      c.header("Retry-After", String(wait));
      throw tooManyRequests(wait);
    }
    await next();
  });

  app.use("/live/*", bodyLimit({ maxSize: 16 * 1024, onError: () => { throw new AppError("malformed_request", "The request body is too large."); } }));
  const resolve = async (c: Context, nonce = randomBytes(16).toString("base64")): Promise<LiveTarget | Response> => {
    secure(c, nonce);
    const target = await engine.live.resolve(c.req.param("token") ?? "");
    if (target === undefined) return c.html(messagePage(nonce, "Link not found", "This live-browser link does not exist. Ask for a new one."), 404);
    if (target === "expired") return c.html(messagePage(nonce, "Link expired", "This live-browser link has expired (links work for 30 minutes). Ask for a new one."), 410);
    return target;
  };

  app.get("/live/:token", async (c) => {
    const nonce = randomBytes(16).toString("base64");
    const target = await resolve(c, nonce);
    if (target instanceof Response) return target;
    return c.html(livePage(nonce, target.kind === "challenge" ? "Finish signing in" : "Sign in"));
  });
  app.get("/live/:token/state", async (c) => {
    const target = await resolve(c);
    return target instanceof Response ? c.json({ error: { code: "not_found", message: "This link does not exist or has expired." } }, target.status as 404) : c.json(await liveState(engine, target));
  });
  app.post("/live/:token/answer", async (c) => {
    const target = await resolve(c);
    if (target instanceof Response) return c.json({ error: { code: "not_found", message: "This link does not exist or has expired." } }, target.status as 404);
    if (target.kind !== "challenge") throw new AppError("conflict", "This link is for signing in by hand; there is nothing to answer.");
    const body = (await c.req.json().catch(() => undefined)) as { answer?: unknown } | undefined;
    const answer = typeof body?.answer === "string" ? body.answer.trim() : "";
    if (!answer || answer.length > 500) throw new AppError("invalid_request", "Enter the code.");
    await engine.live.answer(target, answer);
    return c.json(await liveState(engine, target), 202);
  });

  const sockets = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  // Judged by the engine's clock: the one time every coordinator of the fleet reads.
  const proofs = new HopProofs(engine.store.sealer.deriveKey("live-view hop"), engine.core.lifecycle.clock);
  const serveViewer = async (socket: WebSocket, token: string, width: number, height: number): Promise<void> => {
    const target = await engine.live.resolve(token);
    if (!target || target === "expired") return socket.close(target ? 4410 : 4404, target ? "expired" : "not found");
    const send = (message: unknown): void => {
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
    };
    send(await liveState(engine, target));
    const session = target.kind === "sign_in" ? await hub.signInSession(target) : undefined;
    const page = session ? ("page" in session ? session.page : session) : await hub.pageFor(target);
    if (!("goto" in page)) {
      if (page.reason === "busy") send({ ...(await liveState(engine, target)), outcome: page.message });
      return socket.close(1000, page.reason === "busy" ? "busy" : "no page");
    }
    const cast = hub.screencast(page);
    const viewer: Viewer = { send, width, height };
    const watched = session && "page" in session ? session : undefined;
    const notice = (message: string): void => void liveState(engine, target).then((state) => send({ ...state, outcome: message }), () => undefined);
    if (watched) {
      hub.watch(watched);
      watched.events.on("notice", notice);
    }
    const unsubscribe =
      target.kind === "challenge"
        ? engine.onChange(
            (action) => {
              if (action.id !== target.action.id) return;
              void liveState(engine, target).then((state) => {
                send(state);
                if (state.final) socket.close(1000, "ended");
              }, () => undefined);
            },
            { actionId: target.action.id },
          )
        : () => undefined;
    socket.on("message", (data) => {
      try {
        void cast.input(JSON.parse(String(data)) as ViewerInput).catch(() => undefined);
      } catch {
        // Not JSON: ignored.
      }
    });
    socket.on("close", () => {
      unsubscribe();
      if (watched) {
        watched.events.off("notice", notice);
        hub.unwatch(watched);
      }
      cast.remove(viewer).catch(() => undefined);
    });
    // The page closes when the action ends or the owner has signed in: say how it ended, then stop.
    page.once("close", () => {
      void (async () => {
        const now = await engine.live.resolve(token);
        if (now && now !== "expired") send(await liveState(engine, now));
      })()
        .catch(() => undefined)
        .finally(() => socket.close(1000, "page closed"));
    });
    await cast.add(viewer);
  };

  return (request, socket, head) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    const match = TOKEN_PATH.exec(url.pathname);
    if (!match) return false;
    const token = match[1]!;
    // Forwarded by another coordinator: its proof must hold for this very request, once.
    const proof = headerOf(request, FORWARDED);
    const verdict = proof === null ? undefined : proofs.check(hopRequestOf(request, new URL(engine.core.internalUrl).origin, token), proof);
    if (verdict !== undefined && verdict !== "valid") {
      logger.warn({ from: request.socket.remoteAddress }, `refused a live view forwarded by another coordinator: ${REFUSAL_REASONS[verdict]}`);
      socket.end("HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n");
      return true;
    }
    const forwarded = verdict === "valid";
    // A browser always sends Origin on a WebSocket: another site's page may not drive the live view.
    const refusal = forwarded ? undefined : checkHostAndOrigin({ get: (name) => headerOf(request, name) }, policy, "the live browser");
    const size = (name: string): number => Math.min(4096, Math.max(320, Number(url.searchParams.get(name)) || 1280));
    // Ours from here: the rate limit (shared across coordinators) is asked, then the upgrade made or refused.
    void (async () => {
      const wait = refusal || forwarded ? 0 : await take(token);
      if (refusal || wait > 0) {
        socket.end(refusal ? "HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n" : `HTTP/1.1 429 Too Many Requests\r\nRetry-After: ${wait}\r\nConnection: close\r\n\r\n`);
        return;
      }
      // The page is held by another coordinator: the view goes there (never forwarded twice).
      const target = forwarded ? undefined : await engine.live.resolve(token);
      const holder = target && target !== "expired" ? await engine.live.pageHolder(target) : undefined;
      if (holder) {
        const to = new URL(url.pathname + url.search, holder);
        forwardUpgrade(request, socket, head, to, proofs.make(hopRequestOf(request, to.origin, token, to.pathname + to.search)), logger);
        return;
      }
      sockets.handleUpgrade(request, socket, head, (ws) => {
        serveViewer(ws, token, size("w"), size("h")).catch((error: unknown) => {
          // Who watched: for a forwarded view, as the coordinator it reached saw them.
          const client = forwarded ? headerOf(request, "x-forwarded-for") : request.socket.remoteAddress;
          logger.warn({ err: error, client }, "live view failed");
          ws.close(1011, "live view failed");
        });
      });
    })().catch((error: unknown) => {
      logger.warn({ err: error }, "live view refused");
      socket.destroy();
    });
    return true;
  };
}
