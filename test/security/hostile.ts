import fc from "fast-check";

/**
 * Values a careless parser, validator or SQL layer trips on. Strings the service may store
 * and echo: lone surrogates, bidi controls, NUL, prototype names, injection-looking text.
 */
export const HOSTILE_STRINGS: readonly string[] = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udc00y",
  "\u202eevil\u202c",
  "\u200f\u200e",
  "\ufeffbom",
  "\ufffe\uffff",
  "👩‍👩‍👧‍👦",
  "e\u0301\u0301\u0301",
  "𝕏𝕐",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "../../../etc/passwd",
  "%00%2e%2e%2f",
  "'; DROP TABLE actions; --",
  "\" OR 1=1 --",
  "<script>alert(1)</script>",
  "${7*7}{{7*7}}",
  "\r\nX-Injected: 1",
  "NaN",
  "-1",
  "1e309",
  "null",
  "x".repeat(10_000),
];

const HOSTILE_NUMBERS: readonly number[] = [-1, -0, 0.5, 1e9, 1e308, -1e308, 5e-324, Number.MAX_SAFE_INTEGER + 2, 2 ** 31, -(2 ** 63)];

/** Nested arrays (`[[[…]]]`) or objects (`{"a":{"a":…}}`) of a given depth, built without recursion. */
export function nested(depth: number, kind: "array" | "object"): unknown {
  let value: unknown = kind === "array" ? [] : {};
  for (let level = 1; level < depth; level++) value = kind === "array" ? [value] : { a: value };
  return value;
}

/** The same as text (JSON.stringify would itself overflow at large depths). */
export function nestedText(depth: number, kind: "array" | "object"): string {
  return kind === "array" ? "[".repeat(depth) + "]".repeat(depth) : '{"a":'.repeat(depth - 1) + "{}" + "}".repeat(depth - 1);
}

/** An object whose own keys are the ones prototype pollution goes through. */
export function prototypeKeys(inner: unknown): unknown {
  const value: Record<string, unknown> = {};
  for (const key of ["__proto__", "constructor", "prototype"]) Object.defineProperty(value, key, { value: inner, enumerable: true, configurable: true, writable: true });
  return value;
}

/** A hostile value of any JSON type, to stand in for any field. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.constantFrom(...HOSTILE_NUMBERS) },
  { weight: 2, arbitrary: fc.constantFrom<unknown>(null, true, false, [], {}, [null], { "": "" }) },
  { weight: 1, arbitrary: fc.integer({ min: 10, max: 40 }).chain((depth) => fc.constantFrom(nested(depth, "array"), nested(depth, "object"))) },
  { weight: 1, arbitrary: fc.constant(prototypeKeys({ polluted: true })) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 40 }) },
);

/** Idempotency-Key header values that must be refused (422): empty, over 255, controls and non-ASCII. */
export const BAD_IDEMPOTENCY_KEYS: readonly string[] = ["", "k".repeat(256), "k".repeat(4_000), "tab\tinside", "caf\u00e9", "\u00ff\u00fe"];

/** Ids for a path segment (already percent-encoded where needed): traversal, encodings, lengths, unicode. */
export const HOSTILE_PATH_IDS: readonly string[] = [
  "%2e%2e",
  "..",
  "%2e%2e%2f%2e%2e%2fcredits",
  "..%2f..%2fcredits",
  "%2F",
  "%00",
  "%ff",
  "%",
  "%zz",
  "%u0041",
  encodeURIComponent("\u202eevil"),
  encodeURIComponent("👩‍👩‍👧"),
  // A lone surrogate as UTF-8 would encode it (invalid UTF-8), and U+FFFD.
  "%ED%A0%80",
  "%EF%BF%BD",
  "__proto__",
  "constructor",
  "null",
  "act_" + "A".repeat(197),
  "act_" + "A".repeat(300),
  "x".repeat(8_000),
  encodeURIComponent("' OR 1=1 --"),
];

/** Whole paths that are not the routes' shapes, sent as they are (no client normalisation). */
export const ODD_PATHS: readonly string[] = [
  "/v1/actions/%2e%2e",
  "/v1/actions/%2e%2e/%2e%2e/credits",
  "/v1/actions/../credits",
  "/v1//actions",
  "/v1/actions/",
  "//v1/credits",
  "/V1/ACTIONS",
  "/v1/accounts/x/y/z",
  "/v1/%00",
  "/v1/credits;jsessionid=1",
  "/v1/actions?wait=1&wait=2&wait=-1",
  "/v1/actions?limit=1&limit=2",
  "/v1/platforms/../accounts",
  "/v1/openapi.json/../credits",
  "/%2e%2e/etc/passwd",
  "/v1/actions/act_x/cancel/extra",
  "/v1/actions/act_x/answer?wait=",
  "/v1/credits?" + "a=1&".repeat(2_000),
];

/** Query values for `wait`, `limit`, `status`, `cursor`, `account_id` that a coercion could misread. */
export const HOSTILE_QUERY_VALUES: readonly string[] = ["-1", "1e9", "NaN", "Infinity", "-Infinity", "0x10", "1_0", "", " 1", "1.5", "30.0000001", "99999999999999999999", "true", "[]", "%00", "__proto__", "\u202e5"];
