import { Resolver } from "node:dns/promises";

/** Looks up a name's TXT records as mailauth asks for them: each record as its strings. */
export type TxtResolver = (name: string, rrtype: string) => Promise<string[][]>;

/**
 * TXT look-ups through DNS: the servers given (`ACTION_SERVICE_DNS_SERVERS`: `host` or
 * `host:port`, IP addresses) or, without them, the system's. Each query is tried twice, two
 * seconds each; the mail's own deadline cuts it shorter.
 */
export function dnsResolver(servers: readonly string[] | undefined): TxtResolver {
  const resolver = new Resolver({ timeout: 2_000, tries: 2 });
  if (servers && servers.length > 0) resolver.setServers(servers);
  return (name, rrtype) => (rrtype === "TXT" ? resolver.resolveTxt(name) : Promise.reject(Object.assign(new Error(`no ${rrtype} look-ups here`), { code: "ENOTIMP" })));
}

/**
 * A resolver that answers the given TXT records itself (by name, any case) and asks `fallback`
 * for every other name: how a service running its own sandbox knows the sandbox's DKIM key,
 * which no DNS publishes.
 */
export function withTxtRecords(records: Readonly<Record<string, string>>, fallback: TxtResolver): TxtResolver {
  const known = new Map(Object.entries(records).map(([name, value]) => [name.toLowerCase().replace(/\.$/, ""), value]));
  return (name, rrtype) => {
    const value = rrtype === "TXT" ? known.get(name.toLowerCase().replace(/\.$/, "")) : undefined;
    return value === undefined ? fallback(name, rrtype) : Promise.resolve([[value]]);
  };
}
