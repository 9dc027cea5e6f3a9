import type { Context } from "hono";
import { html } from "hono/html";
import { AppError } from "../domain/errors.js";
import type { Html } from "./layout.js";

/** The string fields of a submitted form; a field sent more than once keeps every value in `all`. */
export async function readForm(c: Context): Promise<{ get(name: string): string; all(name: string): string[] }> {
  const type = c.req.header("content-type") ?? "";
  if (!type.includes("application/x-www-form-urlencoded") && !type.includes("multipart/form-data")) {
    throw new AppError("malformed_request", "Send the form as application/x-www-form-urlencoded.");
  }
  const body = await c.req.parseBody({ all: true });
  const values = (name: string): string[] => {
    const value = body[name];
    return (Array.isArray(value) ? value : value === undefined ? [] : [value]).filter((item): item is string => typeof item === "string");
  };
  return { get: (name) => values(name)[0] ?? "", all: values };
}

/** Field messages from a request error's `details.issues` (`body.password` → `password`). */
export function fieldErrors(error: AppError, prefix = "body."): Record<string, string> {
  const issues = (error.details?.issues ?? []) as { path: string; message: string }[];
  const errors: Record<string, string> = {};
  for (const issue of issues) {
    const field = issue.path.startsWith(prefix) ? issue.path.slice(prefix.length) : issue.path;
    errors[field] ??= issue.message;
  }
  return errors;
}

/** The message at the top of a form that was refused. */
export function errorBox(message: string | undefined): Html {
  return message ? html`<p class="error" role="alert">${message}</p>` : html``;
}

/** A labelled input with its hint and its error, tied together for screen readers. */
export function field(options: {
  name: string;
  label: string;
  type?: "text" | "password" | "number" | "url";
  value?: string | undefined;
  hint?: string | undefined;
  error?: string | undefined;
  required?: boolean;
  autocomplete?: string;
  min?: number;
  max?: number;
  id?: string;
  inputmode?: string;
}): Html {
  const id = options.id ?? `f-${options.name.replace(/[^\w-]/g, "-")}`;
  const described = [options.hint ? `${id}-hint` : "", options.error ? `${id}-error` : ""].filter(Boolean).join(" ");
  return html`<div class="field">
<label for="${id}">${options.label}</label>
<input type="${options.type ?? "text"}" id="${id}" name="${options.name}"${options.value !== undefined ? html` value="${options.value}"` : ""}${options.required ? html` required` : ""}${
    options.autocomplete ? html` autocomplete="${options.autocomplete}"` : ""
  }${options.min !== undefined ? html` min="${options.min}"` : ""}${options.max !== undefined ? html` max="${options.max}"` : ""}${options.inputmode ? html` inputmode="${options.inputmode}"` : ""}${
    described ? html` aria-describedby="${described}"` : ""
  }${options.error ? html` aria-invalid="true"` : ""}>
${options.hint ? html`<p class="note" id="${id}-hint">${options.hint}</p>` : ""}
${options.error ? html`<p class="field-error" id="${id}-error">${options.error}</p>` : ""}
</div>`;
}
