import { createHash, timingSafeEqual } from "node:crypto";
import type { Hono } from "hono";
import { AppError } from "../domain/errors.js";
import type { Engine } from "../engine/engine.js";
import { callerOf, tooManyRequests, type RateLimiter } from "../engine/access/index.js";
import { bearerKey } from "./request-parts.js";

/** What `GET /metrics` serves: this coordinator's registry as Prometheus text. */
export interface MetricsSource {
  contentType: string;
  render(): Promise<string>;
}

export interface MetricsRouteOptions {
  engine: Engine;
  limiter: RateLimiter;
  /** `ACTION_SERVICE_METRICS_TOKEN`; undefined: admin keys only. */
  token: string | undefined;
  metrics: MetricsSource;
}

/** The rate-limit bucket of scrapers that present the metrics token (they have no key). */
const TOKEN_CALLER = "metrics-token";

/**
 * `GET /metrics` (DESIGN §16), outside `/v1` where scrapers look for it: for an admin key or the
 * metrics token, under the per-key rate limit like every surface. 401 without either, 403 for a
 * key of another role (the request-error table).
 */
export function mountMetrics(app: Hono, options: MetricsRouteOptions): void {
  app.get("/metrics", async (c) => {
    const caller = await metricsCaller(c.req.header("authorization"), options);
    const wait = await options.limiter.take(caller);
    if (wait > 0) {
      c.header("Retry-After", String(wait));
      throw tooManyRequests(wait);
    }
    return c.body(await options.metrics.render(), 200, { "Content-Type": options.metrics.contentType, "Cache-Control": "no-store" });
  });
}

/** Who is scraping: the token's bucket, or the admin key's; else the request error. */
async function metricsCaller(header: string | undefined, options: MetricsRouteOptions): Promise<string> {
  const presented = bearerKey(header);
  if (!presented) throw new AppError("unauthorized", "Send an admin API key or ACTION_SERVICE_METRICS_TOKEN as `Authorization: Bearer <…>`.");
  if (options.token !== undefined && sameSecret(presented, options.token)) return TOKEN_CALLER;
  const principal = await options.engine.keys.authenticate(presented);
  if (!principal) throw new AppError("unauthorized", "The API key or metrics token is not valid.");
  if (principal.role !== "admin") {
    throw new AppError("forbidden", `This key (role ${principal.role}) may not read metrics; use an admin key or ACTION_SERVICE_METRICS_TOKEN.`, { role: principal.role });
  }
  return callerOf(principal);
}

/** Compares in constant time (digests of equal length), so the token cannot be guessed a byte at a time. */
function sameSecret(presented: string, token: string): boolean {
  const digest = (text: string): Buffer => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(presented), digest(token));
}
