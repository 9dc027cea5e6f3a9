import { html } from "hono/html";
import { AppError } from "../domain/errors.js";
import { typeTitle, type Html } from "./layout.js";

/** A JSON Schema, as `GET /v1/platforms` gives each action type's params. */
interface Schema {
  type?: string;
  description?: string;
  enum?: unknown[];
  format?: string;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  properties?: Record<string, Schema>;
  required?: string[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  items?: Schema;
  /** A secret (a routine's password param): typed in a password input, never sent back into the form. */
  writeOnly?: boolean;
}

/** One input of the run form, from one property of the params schema. */
interface ParamField {
  name: string;
  schema: Schema;
  required: boolean;
  kind: "text" | "long_text" | "url" | "number" | "boolean" | "choice" | "json" | "secret";
}

/** Form field names are `p.<name>`, so a param never collides with the form's own fields. */
const PREFIX = "p.";

/**
 * The fields of an action type's params, from its JSON Schema: every property of every
 * alternative (`anyOf`); a property some alternatives lack is optional, and the form says
 * which to give.
 */
export function paramFields(schema: Schema): { fields: ParamField[]; alternatives: string[][] } {
  const branches = schema.anyOf ?? schema.oneOf ?? [schema];
  const fields = new Map<string, ParamField>();
  for (const branch of branches) {
    for (const [name, property] of Object.entries(branch.properties ?? {})) {
      const required = branches.length === 1 && (branch.required ?? []).includes(name);
      if (!fields.has(name)) fields.set(name, { name, schema: property, required, kind: kindOf(property) });
    }
  }
  const alternatives = branches.length > 1 ? branches.map((branch) => branch.required ?? Object.keys(branch.properties ?? {})) : [];
  return { fields: [...fields.values()], alternatives };
}

function kindOf(schema: Schema): ParamField["kind"] {
  if (schema.writeOnly === true && schema.type === "string") return "secret";
  if (schema.enum) return "choice";
  if (schema.type === "boolean") return "boolean";
  if (schema.type === "integer" || schema.type === "number") return "number";
  if (schema.type === "string") return schema.format === "uri" ? "url" : (schema.maxLength ?? 0) > 300 ? "long_text" : "text";
  return "json";
}

/** The inputs of a params form; `values` refill it after a refusal, `errors` are by param name. */
export function paramInputs(schema: Schema, values: Record<string, string>, errors: Record<string, string>): Html {
  const { fields, alternatives } = paramFields(schema);
  if (fields.length === 0) return html`<p class="note">This action takes no parameters.</p>`;
  const alternativesNote =
    alternatives.length > 0 ? html`<p class="note" id="alternatives">Give one of these: ${alternatives.map((names) => names.map(typeTitle).join(" and ")).join(", or ")}.</p>` : "";
  return html`${alternativesNote}${fields.map((item) => input(item, values[item.name] ?? "", errors[item.name]))}`;
}

function input(item: ParamField, value: string, error: string | undefined): Html {
  const id = `param-${item.name}`;
  const hint = [item.schema.description, item.kind === "json" ? "JSON, as in the action reference." : ""].filter(Boolean).join(" ");
  const described = [hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ");
  const common = html`id="${id}" name="${PREFIX}${item.name}"${item.required ? html` required` : ""}${described ? html` aria-describedby="${described}"` : ""}${error ? html` aria-invalid="true"` : ""}`;
  const label = html`${typeTitle(item.name)}${item.required ? "" : html` <span class="note">(optional)</span>`}`;
  const control =
    item.kind === "boolean"
      ? html`<label class="check"><input type="checkbox" ${common} value="true"${value === "true" ? html` checked` : ""}> ${label}</label>`
      : html`<label for="${id}">${label}</label>${
          item.kind === "choice"
            ? html`<select ${common}>${(item.schema.enum ?? []).map((option) => html`<option${String(option) === value ? html` selected` : ""}>${String(option)}</option>`)}</select>`
            : item.kind === "long_text" || item.kind === "json"
              ? html`<textarea ${common} rows="${item.kind === "json" ? 8 : 4}"${item.schema.maxLength ? html` maxlength="${item.schema.maxLength}"` : ""}>${value}</textarea>`
              : item.kind === "secret"
                ? html`<input type="password" ${common} autocomplete="off"${item.schema.maxLength ? html` maxlength="${item.schema.maxLength}"` : ""}>`
                : html`<input type="${item.kind === "number" ? "number" : item.kind === "url" ? "url" : "text"}" ${common} value="${value}"${
                  item.schema.maxLength ? html` maxlength="${item.schema.maxLength}"` : ""
                }${item.schema.type === "number" ? html` step="any"` : ""}${item.schema.minimum !== undefined ? html` min="${item.schema.minimum}"` : ""}${item.schema.maximum !== undefined ? html` max="${item.schema.maximum}"` : ""}>`
        }`;
  return html`<div class="field">${control}
${hint ? html`<p class="note" id="${id}-hint">${hint}</p>` : ""}
${error ? html`<p class="field-error" id="${id}-error">${error}</p>` : ""}</div>`;
}

/** The submitted values of the params fields, by param name (to refill the form); a secret is never sent back. */
export function submittedValues(schema: Schema, get: (name: string) => string): Record<string, string> {
  return Object.fromEntries(paramFields(schema).fields.map((item) => [item.name, item.kind === "secret" ? "" : get(PREFIX + item.name)]));
}

/**
 * Params from the submitted form: empty fields are left out, numbers and booleans converted,
 * JSON fields parsed. The engine then validates them against the same schema as every surface.
 */
export function paramsFromForm(schema: Schema, get: (name: string) => string): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  for (const item of paramFields(schema).fields) {
    const raw = get(PREFIX + item.name);
    if (raw.trim() === "") continue;
    if (item.kind === "number") params[item.name] = Number(raw);
    else if (item.kind === "boolean") params[item.name] = raw === "true";
    else if (item.kind === "json") {
      try {
        params[item.name] = JSON.parse(raw) as unknown;
      } catch {
        throw new AppError("invalid_request", `${item.name} is not valid JSON.`, { issues: [{ path: `params.${item.name}`, message: "is not valid JSON" }] });
      }
    } else params[item.name] = raw;
  }
  return params;
}
