import fc from "fast-check";
import { z } from "zod";

/** The part of JSON Schema that `z.toJSONSchema` produces for the service's request schemas. */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  format?: string;
}

/** The request's JSON Schema as a client sees it (input side: defaults make fields optional). */
export function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as JsonSchema;
}

/**
 * The smallest value a schema accepts: required properties only, plus every property named
 * in `fill` that the object has (ids, a known platform). Checked against the zod schema itself,
 * so an example that no longer fits fails loudly instead of testing the wrong thing.
 */
export function exampleOf(schema: z.ZodType, fill: Readonly<Record<string, unknown>> = {}): unknown {
  const value = smallest(jsonSchemaOf(schema), fill);
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new Error(`example ${JSON.stringify(value)} does not fit its schema: ${parsed.error.message}`);
  return value;
}

function smallest(node: JsonSchema, fill: Readonly<Record<string, unknown>>): unknown {
  if (node.const !== undefined) return node.const;
  if (node.enum) return node.enum[0];
  const branches = node.anyOf ?? node.oneOf;
  if (branches) return smallest(branches[0]!, fill);
  switch (typeOf(node)) {
    case "object":
      return Object.fromEntries(
        Object.entries(node.properties ?? {}).flatMap(([key, inner]) =>
          Object.hasOwn(fill, key) ? [[key, fill[key]]] : (node.required ?? []).includes(key) ? [[key, smallest(inner, {})]] : [],
        ),
      );
    case "string":
      return node.format === "uri" ? "https://example.com/" : "x".repeat(Math.max(1, node.minLength ?? 1));
    case "number":
    case "integer":
      return node.minimum ?? 0;
    case "boolean":
      return false;
    case "array":
      return Array.from({ length: node.minItems ?? 0 }, () => smallest(node.items ?? {}, {}));
    case "null":
      return null;
    default:
      return {};
  }
}

function typeOf(node: JsonSchema): string | undefined {
  return Array.isArray(node.type) ? node.type[0] : node.type;
}

export interface ArbitraryOptions {
  /** Arbitraries for properties by name, at any depth (ids, `params`). */
  overrides: Readonly<Record<string, fc.Arbitrary<unknown>>>;
  /** What replaces a value now and then: wrong types, odd strings, deep nesting. */
  hostile: fc.Arbitrary<unknown>;
  /** One in this many values is hostile. */
  hostileOneIn: number;
}

/**
 * Values for a JSON Schema: mostly ones it accepts (boundaries included), and at every
 * node, now and then, a hostile one; objects sometimes miss required keys or carry extra ones.
 */
export function arbitraryOf(node: JsonSchema, options: ArbitraryOptions): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: options.hostileOneIn - 1, arbitrary: fitting(node, options) }, { weight: 1, arbitrary: options.hostile });
}

function fitting(node: JsonSchema, options: ArbitraryOptions): fc.Arbitrary<unknown> {
  if (node.const !== undefined) return fc.constant(node.const);
  if (node.enum) return fc.constantFrom(...node.enum);
  const branches = node.anyOf ?? node.oneOf;
  if (branches) return fc.oneof(...branches.map((branch) => arbitraryOf(branch, options)));
  switch (typeOf(node)) {
    case "object":
      return objectOf(node, options);
    case "string":
      return stringOf(node);
    case "number":
      return numberOf(node, false);
    case "integer":
      return numberOf(node, true);
    case "boolean":
      return fc.boolean();
    case "array":
      return fc.array(arbitraryOf(node.items ?? {}, options), { minLength: node.minItems ?? 0, maxLength: Math.min(node.maxItems ?? 4, 4) });
    case "null":
      return fc.constant(null);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function objectOf(node: JsonSchema, options: ArbitraryOptions): fc.Arbitrary<unknown> {
  const properties = Object.entries(node.properties ?? {});
  const model = Object.fromEntries(properties.map(([key, inner]) => [key, options.overrides[key] ?? arbitraryOf(inner, options)]));
  const required = (node.required ?? []).filter((key) => Object.hasOwn(model, key));
  const complete = properties.length === 0 && node.additionalProperties ? fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }) : fc.record(model, { requiredKeys: required });
  return fc.oneof(
    { weight: 8, arbitrary: complete },
    // Every key optional: some required ones go missing.
    { weight: 1, arbitrary: fc.record(model, { requiredKeys: [] }) },
    { weight: 1, arbitrary: fc.tuple(complete, fc.constantFrom("__proto__", "constructor", "prototype", "extra", ""), fc.jsonValue({ maxDepth: 2 })).map(([value, key, inner]) => withOwnKey(value, key, inner)) },
  );
}

/** Sets `key` as an own, enumerable property, `__proto__` included, so JSON.stringify sends it. */
export function withOwnKey(value: unknown, key: string, inner: unknown): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  return Object.defineProperty({ ...value }, key, { value: inner, enumerable: true, configurable: true, writable: true });
}

/** One character of ordinary ASCII, any printable grapheme, or any code point (controls included). */
const anyCharacter = fc.oneof(
  { weight: 4, arbitrary: fc.string({ minLength: 1, maxLength: 1, unit: "grapheme-ascii" }) },
  { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 1, unit: "grapheme" }) },
  { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 1, unit: "binary" }) },
);

function stringOf(node: JsonSchema): fc.Arbitrary<string> {
  const min = node.minLength ?? 0;
  const max = node.maxLength;
  const ordinary = node.format === "uri" ? fc.webUrl() : fc.string({ minLength: min, maxLength: Math.max(min, Math.min(max ?? 24, 24)), unit: anyCharacter });
  const edges = [...(max === undefined ? [] : ["x".repeat(max), "x".repeat(max + 1)]), ...(min > 0 ? ["x".repeat(min - 1)] : [])];
  return edges.length > 0 ? fc.oneof({ weight: 6, arbitrary: ordinary }, { weight: 1, arbitrary: fc.constantFrom(...edges) }) : ordinary;
}

function numberOf(node: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const min = node.minimum;
  const max = node.maximum;
  const ordinary = integer ? fc.integer({ min: min ?? -1_000, max: max ?? 1_000 }) : fc.double({ min: min ?? -1e6, max: max ?? 1e6, noNaN: true, noDefaultInfinity: true });
  const edges = [min, max, min === undefined ? undefined : min - 1, max === undefined ? undefined : max + 1, 0.5, -0].filter((edge): edge is number => edge !== undefined);
  return fc.oneof({ weight: 4, arbitrary: ordinary }, { weight: 1, arbitrary: fc.constantFrom(...edges) });
}
