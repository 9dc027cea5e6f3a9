import { z } from "zod";
import type { Route } from "./route.js";
import { errorResponses } from "./routes/common.js";

type JsonSchema = Record<string, unknown>;

/** Builds the OpenAPI 3.1 document from the same zod schemas that validate requests. */
export function buildOpenApi(routes: readonly Route[]): JsonSchema {
  const components: Record<string, JsonSchema> = {};
  // Named schemas (`.meta({ id })`) become components; their `$defs` references are rewritten to point there.
  const toSchema = (schema: z.ZodType, io: "input" | "output"): JsonSchema => {
    const json = z.toJSONSchema(schema, { io, target: "draft-2020-12", unrepresentable: "any" });
    const rewritten = JSON.parse(JSON.stringify(json).replaceAll('"#/$defs/', '"#/components/schemas/')) as JsonSchema & { $defs?: Record<string, JsonSchema> };
    const { $schema: _schema, $defs, ...rest } = rewritten;
    Object.assign(components, $defs ?? {});
    return rest;
  };

  const responsesOf = (responses: Route["responses"]): JsonSchema =>
    Object.fromEntries(
      Object.entries(responses).map(([status, response]) => [
        status,
        { description: response.description, ...(response.schema ? { content: { "application/json": { schema: toSchema(response.schema, "output") } } } : {}) },
      ]),
    );

  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const route of routes) {
    const parameters: JsonSchema[] = [];
    for (const [location, schema] of [
      ["path", route.params],
      ["query", route.query],
    ] as const) {
      if (!schema) continue;
      const json = toSchema(schema as z.ZodType, "input") as { properties?: Record<string, JsonSchema>; required?: string[] };
      for (const [name, property] of Object.entries(json.properties ?? {})) {
        parameters.push({
          name,
          in: location,
          required: location === "path" || (json.required ?? []).includes(name),
          ...(typeof property.description === "string" ? { description: property.description } : {}),
          schema: property,
        });
      }
    }
    for (const header of route.headers ?? []) parameters.push({ name: header.name, in: "header", required: false, description: header.description, schema: { type: "string" } });
    (paths[route.path] ??= {})[route.method] = {
      operationId: `${route.method}${route.path.replace(/\{(\w+)\}/g, "By_$1").replace(/[^A-Za-z0-9]+(\w)/g, (_m, c: string) => c.toUpperCase())}`,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: [route.tag],
      security: [{ bearer: [] }],
      ...(parameters.length ? { parameters } : {}),
      ...(route.body ? { requestBody: { required: true, content: { "application/json": { schema: toSchema(route.body as z.ZodType, "input") } } } } : {}),
      responses: responsesOf(route.responses),
    };
  }
  paths["/metrics"] = {
    get: {
      operationId: "getMetrics",
      summary: "This coordinator's metrics, in Prometheus text format.",
      description:
        "Outside `/v1`, where scrapers look for it. For an admin key, or the token set in `ACTION_SERVICE_METRICS_TOKEN` as the bearer token; under the per-key rate limit. Each coordinator serves its own: scrape every one.",
      tags: ["metrics"],
      security: [{ bearer: [] }],
      responses: {
        200: { description: "The metrics (text exposition format 0.0.4).", content: { "text/plain": { schema: { type: "string" } } } },
        ...responsesOf(errorResponses(401, 403, 429)),
      },
    },
  };
  return {
    openapi: "3.1.0",
    info: {
      title: "action-service",
      version: "1.0.0",
      description: "Runs actions on web platforms on behalf of connected accounts. A failed action is still a 200/202: read `status` and `error`.",
    },
    servers: [{ url: "/" }],
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } }, schemas: components },
    paths,
  };
}
