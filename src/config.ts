import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { resolve } from "node:path";
import { createSecureContext } from "node:tls";
import { z } from "zod";
import { parseEndpoint, type EndpointSpec } from "./browser/endpoint-spec.js";
import { plaintextRefusal, type SmtpTls } from "./inbox/smtp-tls.js";

const port = z.coerce.number().int().min(0).max(65_535);
const emptyAsUndefined = (value: unknown): unknown => (value === "" ? undefined : value);

const masterKey = z
  .string()
  .transform((value, context) => {
    const key = /^[0-9a-f]{64}$/i.test(value) ? Buffer.from(value, "hex") : Buffer.from(value, "base64");
    if (key.length !== 32) {
      context.addIssue({ code: "custom", message: "must be 32 bytes: 64 hex characters or 44 base64 characters (e.g. `openssl rand -hex 32`)" });
      return z.NEVER;
    }
    return key;
  })
  .optional();

/** Comma-separated browser endpoints (DESIGN §8): `ws://` Playwright servers, `cdp+ws://`/`cdp+http://` CDP endpoints. */
const browserEndpoints = z.string().transform((value, context) => {
  const specs: EndpointSpec[] = [];
  for (const entry of value.split(",").filter((part) => part.trim() !== "")) {
    try {
      specs.push(parseEndpoint(entry));
    } catch (error) {
      context.addIssue({ code: "custom", message: (error as Error).message });
      return z.NEVER;
    }
  }
  return specs;
});

/**
 * `ACTION_SERVICE_PLATFORMS` (DESIGN §14): `name=url,…`, the platforms whose drivers are enabled and
 * where each lives. Which names have a driver is checked where the drivers are (`server.ts`).
 */
const platformUrls = z.string().transform((value, context) => {
  const urls: Record<string, string> = {};
  for (const entry of value.split(",").filter((part) => part.trim() !== "")) {
    const [name, url] = entry.split(/=(.*)/s).map((part) => part.trim());
    let parsed: URL | undefined;
    try {
      parsed = url ? new URL(url) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!name || !/^[a-z][a-z0-9_-]*$/.test(name) || !parsed || !["http:", "https:"].includes(parsed.protocol)) {
      context.addIssue({ code: "custom", message: `"${entry.trim()}" is not name=http(s)://address, e.g. mediawiki=http://127.0.0.1:8080` });
      return z.NEVER;
    }
    urls[name] = parsed.toString().replace(/\/+$/, "");
  }
  return urls;
});

/**
 * `ACTION_SERVICE_DRIVERS` (DESIGN §14): comma-separated drivers to load beside the built-in ones —
 * module paths (relative to the working directory), installed package names, `*.platform.json`
 * files. Whether each loads is checked where the drivers are (`platforms/load.ts`).
 */
const driverEntries = z.string().transform((value) => value.split(",").map((entry) => entry.trim()).filter((entry) => entry !== ""));

/** A PEM file's path, read at start-up: a file that cannot be read is a clear error now, not at the first STARTTLS. */
const pemFile = z.string().transform((path, context) => {
  try {
    return readFileSync(resolve(path));
  } catch (error) {
    context.addIssue({ code: "custom", message: `cannot be read (${(error as NodeJS.ErrnoException).code ?? "unreadable"})` });
    return z.NEVER;
  }
});

/**
 * `ACTION_SERVICE_DNS_SERVERS` (DESIGN §15): comma-separated DNS servers for the inbox's DKIM
 * look-ups, each an IP address with an optional port (`10.0.0.2`, `10.0.0.2:5353`, `::1`, `[::1]:5353`).
 */
const dnsServers = z.string().transform((value, context) => {
  const servers: string[] = [];
  for (const entry of value.split(",").map((part) => part.trim()).filter((part) => part !== "")) {
    if (!dnsServer(entry)) {
      context.addIssue({ code: "custom", message: `"${entry}" is not a DNS server's IP address with an optional port, e.g. 10.0.0.2, 10.0.0.2:5353 or [::1]:53` });
      return z.NEVER;
    }
    servers.push(entry);
  }
  return servers;
});

/** Whether `entry` is what node's `dns.setServers` takes: an IP address, `IPv4:port` or `[IPv6]:port`. */
function dnsServer(entry: string): boolean {
  if (isIP(entry) !== 0) return true;
  const match = /^\[([^\]]+)\]:(\d{1,5})$/.exec(entry) ?? /^([^:]+):(\d{1,5})$/.exec(entry);
  if (!match || Number(match[2]) < 1 || Number(match[2]) > 65_535) return false;
  return isIP(match[1]!) === (entry.startsWith("[") ? 6 : 4);
}

/** A DKIM selector: one or more DNS labels. */
const dkimSelector = z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i, "must be a DNS label, e.g. sandbox or s2025");

const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte hex address");
const optional = <T extends z.ZodType>(schema: T) => z.preprocess(emptyAsUndefined, schema.optional());

/** The x402 top-up variables (DESIGN §7), by name: all are needed before top-ups are offered. */
export const X402_VARIABLES = [
  "ACTION_SERVICE_X402_FACILITATOR_URL",
  "ACTION_SERVICE_X402_NETWORK",
  "ACTION_SERVICE_X402_ASSET",
  "ACTION_SERVICE_X402_ASSET_NAME",
  "ACTION_SERVICE_X402_ASSET_VERSION",
  "ACTION_SERVICE_X402_PAY_TO",
  "ACTION_SERVICE_X402_PRICE_PER_CREDIT",
] as const;

/** Every environment variable the service reads (DESIGN §10), parsed once at start-up. */
export const ConfigSchema = z.object({
  ACTION_SERVICE_HOST: z.string().min(1).default("127.0.0.1"),
  ACTION_SERVICE_PORT: port.default(8787),
  ACTION_SERVICE_PUBLIC_URL: z.preprocess(emptyAsUndefined, z.url({ protocol: /^https?$/ }).optional()),
  ACTION_SERVICE_INTERNAL_URL: z.preprocess(emptyAsUndefined, z.url({ protocol: /^https?$/ }).optional()),
  ACTION_SERVICE_DATA_DIR: z.string().min(1).default("./data"),
  ACTION_SERVICE_DATABASE_URL: optional(z.string().regex(/^postgres(ql)?:\/\/./, "must be a postgres:// URL (PostgreSQL 15 or later)")),
  ACTION_SERVICE_DATABASE_LISTEN_URL: optional(z.string().regex(/^postgres(ql)?:\/\/./, "must be a postgres:// URL of PostgreSQL itself (not a pooler)")),
  ACTION_SERVICE_MASTER_KEY: z.preprocess(emptyAsUndefined, masterKey),
  BROWSER_EXECUTABLE_PATH: z.preprocess(emptyAsUndefined, z.string().optional()),
  BROWSER_WS_ENDPOINT: z.preprocess(emptyAsUndefined, browserEndpoints.optional()),
  BROWSER_WS_ENDPOINTS: z.preprocess(emptyAsUndefined, browserEndpoints.optional()),
  ACTION_SERVICE_PLATFORMS: z.preprocess(emptyAsUndefined, platformUrls.optional()),
  ACTION_SERVICE_DRIVERS: z.preprocess(emptyAsUndefined, driverEntries.optional()),
  SANDBOX_PORT: port.default(8788),
  SANDBOX_URL: z.preprocess(emptyAsUndefined, z.url({ protocol: /^https?$/ }).optional()),
  SANDBOX_SMTP_URL: optional(z.url({ protocol: /^smtp$/, error: "must be smtp://host:port (plain SMTP, no login)" })),
  SANDBOX_DKIM_KEY: optional(z.string()),
  SANDBOX_DKIM_SELECTOR: z.preprocess(emptyAsUndefined, dkimSelector.default("sandbox")),
  ACTION_SERVICE_CHALLENGE_TTL_SECONDS: z.coerce.number().int().min(1).max(86_400).default(600),
  ACTION_SERVICE_FREE_CREDITS: z.coerce.number().int().min(0).max(1_000_000_000).default(100),
  ACTION_SERVICE_MAX_CONCURRENT_ACTIONS: z.coerce.number().int().min(1).max(256).default(8),
  ACTION_SERVICE_MAX_PAUSED_ACTIONS: z.coerce.number().int().min(0).max(10_000).default(200),
  ACTION_SERVICE_IDLE_CONTEXT_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
  ACTION_SERVICE_WARM_CONTEXTS: z.coerce.number().int().min(1).max(100_000).default(256),
  ACTION_SERVICE_HEALTH_CHECK_MINUTES: z.coerce.number().int().min(0).max(10_080).default(60),
  ACTION_SERVICE_WARM_PAGES: z.preprocess(emptyAsUndefined, z.coerce.number().int().min(0).max(10_000).optional()),
  ACTION_SERVICE_WARM_PAGE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(600),
  ACTION_SERVICE_PAGE_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3_600).default(30),
  ACTION_SERVICE_X402_FACILITATOR_URL: optional(z.url({ protocol: /^https?$/ })),
  ACTION_SERVICE_X402_NETWORK: optional(z.string().regex(/^eip155:[0-9]+$/, "must be an EVM network in CAIP-2 form, e.g. eip155:8453")),
  ACTION_SERVICE_X402_ASSET: optional(evmAddress),
  ACTION_SERVICE_X402_ASSET_NAME: optional(z.string().min(1).max(100)),
  ACTION_SERVICE_X402_ASSET_VERSION: optional(z.string().min(1).max(20)),
  ACTION_SERVICE_X402_PAY_TO: optional(evmAddress),
  ACTION_SERVICE_X402_PRICE_PER_CREDIT: optional(z.string().regex(/^[1-9][0-9]{0,30}$/, "must be a positive integer (the asset's smallest unit)")),
  ACTION_SERVICE_X402_MAX_CREDITS: z.coerce.number().int().min(1).max(1_000_000_000).default(100_000),
  ACTION_SERVICE_X402_RPC_URL: optional(z.url({ protocol: /^https?$/ })),
  ACTION_SERVICE_X402_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(300).default(30),
  ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE: z.preprocess(emptyAsUndefined, z.enum(["true", "false"]).default("false")),
  ACTION_SERVICE_SMTP_PORT: z.preprocess(emptyAsUndefined, port.optional()),
  ACTION_SERVICE_SMTP_HOST: z.string().min(1).default("127.0.0.1"),
  ACTION_SERVICE_MAIL_DOMAIN: z
    .string()
    .regex(/^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i, "must be a domain name, e.g. inbox.example.com")
    .default("inbox.localhost")
    .transform((domain) => domain.toLowerCase()),

  // The SMTP listener as an MX (DESIGN §15): STARTTLS, and plaintext on a public address only when asked for.
  ACTION_SERVICE_SMTP_TLS_CERT: optional(pemFile),
  ACTION_SERVICE_SMTP_TLS_KEY: optional(pemFile),
  ACTION_SERVICE_SMTP_ALLOW_PLAINTEXT: z.preprocess(emptyAsUndefined, z.enum(["true", "false"]).default("false")),

  ACTION_SERVICE_DNS_SERVERS: z.preprocess(emptyAsUndefined, dnsServers.optional()),
  ACTION_SERVICE_METRICS_TOKEN: optional(z.string().regex(/^[\x21-\x7e]{16,512}$/, "must be 16 to 512 printable characters without spaces (e.g. `openssl rand -hex 32`)")),
  ACTION_SERVICE_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

/** The parsed configuration, with derived URLs filled in. */
export interface Config {
  host: string;
  port: number;
  publicUrl: string;
  /** Where the other coordinators reach this one (`ACTION_SERVICE_INTERNAL_URL`, default `http://HOST:PORT`): live views of pages held here. */
  internalUrl: string;
  dataDir: string;
  /** PostgreSQL shared by every coordinator (`ACTION_SERVICE_DATABASE_URL`); undefined: the data dir's SQLite file. */
  databaseUrl: string | undefined;
  /**
   * A direct connection to the same database (`ACTION_SERVICE_DATABASE_LISTEN_URL`) when
   * `databaseUrl` goes through PgBouncer in transaction mode: `LISTEN`, lease renewal and migrations
   * use it. Undefined: `databaseUrl` is direct and serves them all.
   */
  databaseListenUrl: string | undefined;
  masterKey: Buffer | undefined;
  browserExecutablePath: string | undefined;
  /** Remote browsers (`BROWSER_WS_ENDPOINTS`, or the one `BROWSER_WS_ENDPOINT`); empty: a local Chromium. */
  browserEndpoints: EndpointSpec[];
  sandboxPort: number;
  /** Where the sandbox platform is reached (`SANDBOX_URL`, default `http://127.0.0.1:SANDBOX_PORT`). */
  sandboxUrl: string;
  /**
   * `SANDBOX_URL` was set: a sandbox run here (`serve --sandbox`, `sandbox`) is reached there too —
   * the driver's pages and the sign-in links it mails use it (a remote browser fleet, DESIGN §9,
   * reaches the sandbox by that address, not by the 127.0.0.1 it listens on).
   */
  sandboxUrlGiven: boolean;
  /** Where the sandbox mails its codes and sign-in links (`SANDBOX_SMTP_URL`, `smtp://host:port`); undefined: only its outbox has them. */
  sandboxSmtpUrl: string | undefined;
  /** What the sandbox DKIM-signs its mails with: the PEM key's path (`SANDBOX_DKIM_KEY`; undefined: unsigned, or a fresh key when the service runs the sandbox) and the selector (`SANDBOX_DKIM_SELECTOR`). */
  sandboxDkim: { keyPath: string | undefined; selector: string };
  /** Platforms enabled beside the sandbox and where each lives (`ACTION_SERVICE_PLATFORMS`). */
  platforms: Readonly<Record<string, string>>;
  /** Drivers loaded beside the built-in ones (`ACTION_SERVICE_DRIVERS`), as written: paths, package names, platform files. */
  drivers: readonly string[];
  challengeTtlSeconds: number;
  freeCredits: number;
  maxConcurrentActions: number;
  maxPausedActions: number;
  idleContextSeconds: number;
  /** Idle contexts kept warm at most (`ACTION_SERVICE_WARM_CONTEXTS`); contexts in use are not counted. */
  warmContexts: number;
  /** Each connected account's session is checked once in this many minutes (`ACTION_SERVICE_HEALTH_CHECK_MINUTES`); 0 = off. */
  healthCheckMinutes: number;
  /** Pages kept open between an account's actions at most (`ACTION_SERVICE_WARM_PAGES`; 0: none). */
  warmPages: number;
  warmPageSeconds: number;
  /** How long one platform page may take to arrive (`ACTION_SERVICE_PAGE_TIMEOUT_SECONDS`, DESIGN §3). */
  pageTimeoutSeconds: number;
  rateLimitPerMinute: number;
  logLevel: string;
  x402: X402Config;
  /** Webhooks may target private and loopback addresses (`ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE`). */
  webhookAllowPrivate: boolean;
  /** The inbox's SMTP listener (DESIGN §15): `port` undefined when `ACTION_SERVICE_SMTP_PORT` is unset (off). */
  smtp: SmtpConfig;
  /** `ACTION_SERVICE_MAIL_DOMAIN`: inbox addresses are `<token>@<domain>`. */
  mailDomain: string;
  /** `ACTION_SERVICE_DNS_SERVERS`: where the inbox looks up DKIM keys (`host` or `host:port`); undefined: the system's resolver. */
  dnsServers: string[] | undefined;
  /** `ACTION_SERVICE_METRICS_TOKEN`: a bearer token that may read `GET /metrics` besides an admin key (DESIGN §16); undefined: admin keys only. */
  metricsToken: string | undefined;
}

/** The inbox's SMTP listener (DESIGN §15). */
export interface SmtpConfig {
  port: number | undefined;
  host: string;
  /** STARTTLS's certificate and key (`ACTION_SERVICE_SMTP_TLS_CERT` / `_KEY`); undefined: no STARTTLS. */
  tls: SmtpTls | undefined;
  /** `ACTION_SERVICE_SMTP_ALLOW_PLAINTEXT`: a listener on a non-loopback address may start without TLS. */
  allowPlaintext: boolean;
}

/** x402 top-ups: `settings` when every variable is set, else the names still `missing`. */
export interface X402Config {
  settings: X402Settings | undefined;
  missing: string[];
  /** The most credits one top-up may buy (`ACTION_SERVICE_X402_MAX_CREDITS`). */
  maxCredits: number;
  /** How long a facilitator call may take before the top-up answers 503 (`ACTION_SERVICE_X402_TIMEOUT_SECONDS`). */
  timeoutMs: number;
  /** A JSON-RPC endpoint of the network (`ACTION_SERVICE_X402_RPC_URL`, optional): lets a lost settlement be found on chain. */
  rpcUrl?: string | undefined;
}

export interface X402Settings {
  facilitatorUrl: string;
  network: `${string}:${string}`;
  asset: string;
  assetName: string;
  assetVersion: string;
  payTo: string;
  pricePerCredit: bigint;
}

/** Thrown when the environment has a bad value; the message names each variable and what is wrong. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Variables whose value a start-up error names but never shows (it would land in logs). */
const SECRET_VARIABLES: ReadonlySet<string> = new Set(["ACTION_SERVICE_MASTER_KEY", "ACTION_SERVICE_METRICS_TOKEN", "ACTION_SERVICE_DATABASE_URL", "ACTION_SERVICE_DATABASE_LISTEN_URL"]);

export function loadConfig(environment: NodeJS.ProcessEnv): Config {
  const parsed = ConfigSchema.safeParse(environment);
  if (!parsed.success) {
    const shown = (name: string): string => (SECRET_VARIABLES.has(name) ? "(hidden)" : JSON.stringify(environment[name] ?? ""));
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join(".")}=${shown(String(issue.path[0]))}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  const env = parsed.data;
  return {
    host: env.ACTION_SERVICE_HOST,
    port: env.ACTION_SERVICE_PORT,
    publicUrl: (env.ACTION_SERVICE_PUBLIC_URL ?? `http://${hostForUrl(env.ACTION_SERVICE_HOST)}:${env.ACTION_SERVICE_PORT}`).replace(/\/+$/, ""),
    internalUrl: (env.ACTION_SERVICE_INTERNAL_URL ?? `http://${hostForUrl(env.ACTION_SERVICE_HOST)}:${env.ACTION_SERVICE_PORT}`).replace(/\/+$/, ""),
    dataDir: resolve(env.ACTION_SERVICE_DATA_DIR),
    databaseUrl: env.ACTION_SERVICE_DATABASE_URL,
    databaseListenUrl: databaseListenUrl(env),
    masterKey: env.ACTION_SERVICE_MASTER_KEY,
    browserExecutablePath: env.BROWSER_EXECUTABLE_PATH,
    browserEndpoints: [...(env.BROWSER_WS_ENDPOINTS ?? []), ...(env.BROWSER_WS_ENDPOINT ?? [])],
    sandboxPort: env.SANDBOX_PORT,
    sandboxUrl: (env.SANDBOX_URL ?? `http://127.0.0.1:${env.SANDBOX_PORT}`).replace(/\/+$/, ""),
    sandboxUrlGiven: env.SANDBOX_URL !== undefined,
    sandboxSmtpUrl: env.SANDBOX_SMTP_URL,
    sandboxDkim: { keyPath: env.SANDBOX_DKIM_KEY === undefined ? undefined : resolve(env.SANDBOX_DKIM_KEY), selector: env.SANDBOX_DKIM_SELECTOR },
    platforms: env.ACTION_SERVICE_PLATFORMS ?? {},
    drivers: env.ACTION_SERVICE_DRIVERS ?? [],
    challengeTtlSeconds: env.ACTION_SERVICE_CHALLENGE_TTL_SECONDS,
    freeCredits: env.ACTION_SERVICE_FREE_CREDITS,
    maxConcurrentActions: env.ACTION_SERVICE_MAX_CONCURRENT_ACTIONS,
    maxPausedActions: env.ACTION_SERVICE_MAX_PAUSED_ACTIONS,
    idleContextSeconds: env.ACTION_SERVICE_IDLE_CONTEXT_SECONDS,
    warmContexts: env.ACTION_SERVICE_WARM_CONTEXTS,
    healthCheckMinutes: env.ACTION_SERVICE_HEALTH_CHECK_MINUTES,
    // As many pages as actions may run at once, unless said otherwise.
    warmPages: env.ACTION_SERVICE_WARM_PAGES ?? env.ACTION_SERVICE_MAX_CONCURRENT_ACTIONS,
    warmPageSeconds: env.ACTION_SERVICE_WARM_PAGE_SECONDS,
    pageTimeoutSeconds: env.ACTION_SERVICE_PAGE_TIMEOUT_SECONDS,
    rateLimitPerMinute: env.ACTION_SERVICE_RATE_LIMIT_PER_MINUTE,
    logLevel: env.ACTION_SERVICE_LOG_LEVEL,
    x402: x402Config(env),
    webhookAllowPrivate: env.ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE === "true",
    smtp: smtpConfig(env),
    mailDomain: env.ACTION_SERVICE_MAIL_DOMAIN,
    dnsServers: env.ACTION_SERVICE_DNS_SERVERS?.length ? env.ACTION_SERVICE_DNS_SERVERS : undefined,
    metricsToken: env.ACTION_SERVICE_METRICS_TOKEN,
  };
}

/** The SMTP listener's settings; a certificate without its key (or one that does not fit it), or plaintext on a public address, is a ConfigError. */
function smtpConfig(env: z.infer<typeof ConfigSchema>): SmtpConfig {
  const [cert, key] = [env.ACTION_SERVICE_SMTP_TLS_CERT, env.ACTION_SERVICE_SMTP_TLS_KEY];
  const problems: string[] = [];
  if ((cert === undefined) !== (key === undefined)) problems.push("ACTION_SERVICE_SMTP_TLS_CERT and ACTION_SERVICE_SMTP_TLS_KEY: give both (the certificate and its private key, PEM) or neither");
  const tls = cert && key ? { cert, key } : undefined;
  if (tls) {
    try {
      createSecureContext(tls);
    } catch (error) {
      // OpenSSL's reason names what is wrong, never the key's content.
      problems.push(`ACTION_SERVICE_SMTP_TLS_CERT and ACTION_SERVICE_SMTP_TLS_KEY: not a PEM certificate and its private key (${(error as Error).message})`);
    }
  }
  const allowPlaintext = env.ACTION_SERVICE_SMTP_ALLOW_PLAINTEXT === "true";
  const refusal = env.ACTION_SERVICE_SMTP_PORT === undefined ? undefined : plaintextRefusal(env.ACTION_SERVICE_SMTP_HOST, tls, allowPlaintext);
  if (refusal) problems.push(`ACTION_SERVICE_SMTP_HOST=${JSON.stringify(env.ACTION_SERVICE_SMTP_HOST)}: ${refusal}`);
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n${problems.map((line) => `  ${line}`).join("\n")}`);
  return { port: env.ACTION_SERVICE_SMTP_PORT, host: env.ACTION_SERVICE_SMTP_HOST, tls, allowPlaintext };
}

/** The direct URL for `LISTEN` when it differs from `ACTION_SERVICE_DATABASE_URL`; given alone, a ConfigError. */
function databaseListenUrl(env: z.infer<typeof ConfigSchema>): string | undefined {
  const listen = env.ACTION_SERVICE_DATABASE_LISTEN_URL;
  if (listen === undefined) return undefined;
  if (env.ACTION_SERVICE_DATABASE_URL === undefined) {
    throw new ConfigError("Invalid configuration:\n  ACTION_SERVICE_DATABASE_LISTEN_URL: is only used with ACTION_SERVICE_DATABASE_URL (the direct connection beside a pooler's); set both or neither");
  }
  return listen === env.ACTION_SERVICE_DATABASE_URL ? undefined : listen;
}

function x402Config(env: z.infer<typeof ConfigSchema>): X402Config {
  const missing = X402_VARIABLES.filter((name) => env[name] === undefined);
  const limits = { maxCredits: env.ACTION_SERVICE_X402_MAX_CREDITS, timeoutMs: env.ACTION_SERVICE_X402_TIMEOUT_SECONDS * 1000, rpcUrl: env.ACTION_SERVICE_X402_RPC_URL };
  if (missing.length > 0) return { settings: undefined, missing, ...limits };
  return {
    settings: {
      facilitatorUrl: env.ACTION_SERVICE_X402_FACILITATOR_URL!.replace(/\/+$/, ""),
      network: env.ACTION_SERVICE_X402_NETWORK! as `${string}:${string}`,
      asset: env.ACTION_SERVICE_X402_ASSET!,
      assetName: env.ACTION_SERVICE_X402_ASSET_NAME!,
      assetVersion: env.ACTION_SERVICE_X402_ASSET_VERSION!,
      payTo: env.ACTION_SERVICE_X402_PAY_TO!,
      pricePerCredit: BigInt(env.ACTION_SERVICE_X402_PRICE_PER_CREDIT!),
    },
    missing: [],
    ...limits,
  };
}

function hostForUrl(host: string): string {
  if (host === "0.0.0.0" || host === "::") return "127.0.0.1";
  return host.includes(":") ? `[${host}]` : host;
}
