/**
 * Who may call the service from a browser (DNS-rebinding and cross-site protection for
 * /mcp and the live browser): Host must be one this server answers to, and Origin, when a
 * browser sends one, the public URL's own origin or a loopback name of this server over
 * plain http — scheme, host and port all compared.
 */
export interface OriginPolicy {
  /** Host header values accepted, e.g. `127.0.0.1:8787`; an entry without a port accepts any port. */
  allowedHosts: readonly string[];
  /** Where the service says it lives (`ACTION_SERVICE_PUBLIC_URL`); read at each check, as it may be set once listening. */
  publicUrl: () => string;
  /** Exact origins to accept instead (an operator's explicit list). */
  allowedOrigins?: readonly string[] | undefined;
}

/**
 * The Host values a server on `host:port` answers to (loopback names included), plus
 * the public URL's host. Port 0 (chosen when listening) accepts those hosts on any port.
 */
export function defaultAllowedHosts(host: string, port: number, publicUrl?: string): string[] {
  const names = [host.includes(":") && !host.startsWith("[") ? `[${host}]` : host, "127.0.0.1", "localhost", "[::1]"];
  const hosts = new Set(names.map((name) => (port === 0 ? name : `${name}:${port}`)));
  if (publicUrl) hosts.add(new URL(publicUrl).host);
  return [...hosts];
}

/** A refusal message, or undefined when Host and Origin are acceptable. */
export function checkHostAndOrigin(headers: { get(name: string): string | null }, policy: OriginPolicy, surface: string): string | undefined {
  const host = headers.get("host");
  if (!host || !hostAllowed(host, policy.allowedHosts)) return `Host ${host ?? "(none)"} is not allowed for ${surface}.`;
  const origin = headers.get("origin");
  if (origin === null) return undefined; // not a browser
  return originAllowed(origin, policy) ? undefined : `Origin ${origin} is not allowed for ${surface}.`;
}

export function originAllowed(origin: string, policy: OriginPolicy): boolean {
  const given = parseOrigin(origin);
  if (!given) return false;
  if (policy.allowedOrigins) return policy.allowedOrigins.some((entry) => parseOrigin(entry) === given);
  if (given === parseOrigin(policy.publicUrl())) return true;
  const url = new URL(given);
  return url.protocol === "http:" && hostAllowed(url.host, policy.allowedHosts);
}

export function hostAllowed(host: string, allowedHosts: readonly string[]): boolean {
  const value = host.trim().toLowerCase();
  const withoutPort = value.replace(/:\d+$/, "");
  return allowedHosts.some((entry) => {
    const allowed = entry.trim().toLowerCase();
    return allowed === value || (!/:\d+$/.test(allowed) && allowed === withoutPort);
  });
}

/** `scheme://host[:port]` of a URL or origin (default ports dropped), or undefined when it is none. */
function parseOrigin(value: string): string | undefined {
  try {
    const url = new URL(value.trim());
    return url.origin === "null" ? undefined : url.origin;
  } catch {
    return undefined;
  }
}
