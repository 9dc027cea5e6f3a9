import type { z } from "zod";
import type { Principal } from "../domain/keys.js";
import type { Engine } from "../engine/engine.js";

/** What a route handler gets: parsed, validated input and the caller. */
export interface RouteInput<P, Q, B> {
  principal: Principal;
  params: P;
  query: Q;
  body: B;
  headers: Headers;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  engine: Engine;
}

export interface RouteResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** A Server-Sent Events stream instead of a body: each item is sent as one message (`id` and `event` from its `id` and `type`). */
  events?: AsyncIterable<{ id: string; type: string }>;
  /** The body already in JSON text (kept, for what is read far more often than it changes). */
  json?: string;
  /** Raw bytes instead of JSON. */
  bytes?: { body: Buffer; type: string };
}

/** A REST route as data: the adapter validates with these schemas and the OpenAPI document is built from them. */
export interface Route<P = unknown, Q = unknown, B = unknown> {
  method: "get" | "post" | "put" | "patch" | "delete";
  /** OpenAPI-style path, e.g. `/v1/actions/{id}`. */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  /** Extra request headers worth documenting. */
  headers?: { name: string; description: string }[];
  responses: Record<number, { description: string; schema?: z.ZodType }>;
  handle(input: RouteInput<P, Q, B>): Promise<RouteResponse> | RouteResponse;
}

export function defineRoute<P = undefined, Q = undefined, B = undefined>(route: Route<P, Q, B>): Route {
  return route as unknown as Route;
}
