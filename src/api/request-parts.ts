import type { z } from "zod";
import { AppError } from "../domain/errors.js";

/** The API key of an `Authorization: Bearer <key>` header (REST, `/mcp`), or undefined. */
export function bearerKey(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return match?.[1];
}

/** Validates one part of the request; a bad value is a 422 naming each field. */
export function parse<T>(schema: z.ZodType<T> | undefined, value: unknown, where: "path" | "query" | "body" | "header"): T {
  if (!schema) return undefined as T;
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new AppError("invalid_request", `The request ${where} is not valid: ${parsed.error.issues.map(describeIssue).join("; ")}.`, {
    issues: parsed.error.issues.map((issue) => ({ path: [where, ...issue.path].join("."), message: issue.message })),
  });
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.join(".");
  return path ? `${path}: ${issue.message}` : issue.message;
}
