import { dkimVerify } from "mailauth";
import { aligned } from "../domain/inbox.js";
import { dnsResolver, type TxtResolver } from "./dns.js";

export interface DkimOptions {
  /** Where DKIM keys are looked up (default: DNS through the system's resolver). */
  resolver?: TxtResolver | undefined;
  /** How long one mail's verification may take, DNS included; past it the mail is not authenticated. */
  timeoutMs?: number | undefined;
}

/** A mail's verification, DNS included, ends within this long: a slow DNS never holds a mail for long. */
export const DKIM_TIMEOUT_MS = 5_000;
/**
 * Signatures verified in one mail at most: each costs a DNS look-up and a hash of the body. Mail
 * from a platform carries one to three (its own, its mail provider's, a forwarder's); a mail with
 * more is not authenticated rather than verified.
 */
export const MAX_SIGNATURES = 10;

const systemResolver = dnsResolver(undefined);

/**
 * The domains that vouch for a mail (DESIGN §15 "Who may answer"): lower-cased, each the `d=` of a
 * DKIM signature that verifies and is aligned with the domain of the mail's one `From` address —
 * the same domain, or one a parent of the other (relaxed alignment, without a public-suffix list:
 * never a bare top-level domain). A signature counts only if it signs `From` (RFC 6376 §5.4) and
 * the whole body (no `l=`: text appended past it would be unsigned). Empty for unsigned mail, for
 * a mail with no or several `From` headers, and when verification fails, errs or outlasts the
 * timeout (the mail is kept all the same; it only does not vouch for itself). Never throws.
 */
export async function authenticatedDomains(raw: Buffer, options: DkimOptions = {}): Promise<string[]> {
  const headers = headerNames(raw);
  const count = (name: string): number => headers.filter((header) => header === name).length;
  const signatures = count("dkim-signature");
  if (count("from") !== 1 || signatures === 0 || signatures > MAX_SIGNATURES) return [];
  const deadline = AbortSignal.timeout(options.timeoutMs ?? DKIM_TIMEOUT_MS);
  const resolver = options.resolver ?? systemResolver;
  try {
    // Past the deadline the look-ups still out end by the resolver's own timeout, their answers unused.
    const verified = await untilAborted(dkimVerify(raw, { resolver }), deadline);
    if (verified.headerFrom.length !== 1) return [];
    const fromDomain = domainOf(verified.headerFrom[0]!);
    const domains = new Set<string>();
    for (const result of verified.results as SignatureResult[]) {
      const domain = result.signingDomain?.toLowerCase().replace(/\.$/, "");
      if (result.status.result !== "pass" || !domain || result.canonBodyLengthLimited !== false) continue;
      if (!signedHeaders(result).includes("from") || !aligned(domain, fromDomain)) continue;
      domains.add(domain);
    }
    return [...domains];
  } catch {
    return [];
  }
}

/** What mailauth gives for each signature, beyond its declared type. */
type SignatureResult = {
  signingDomain?: string;
  status: { result: string };
  canonBodyLengthLimited?: boolean;
  signingHeaders?: { keys?: string | string[] };
};

function signedHeaders(result: SignatureResult): string[] {
  return [result.signingHeaders?.keys ?? []].flat().join(":").toLowerCase().split(/\s*:\s*/);
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf("@") + 1).toLowerCase().replace(/\.$/, "");
}

/**
 * The names of a mail's header fields, lower-cased, in order: read up to the first empty line,
 * folded lines joined to their field. Linear in the header's length.
 */
function headerNames(raw: Buffer): string[] {
  const end = raw.indexOf("\r\n\r\n");
  const bareEnd = raw.indexOf("\n\n");
  const stop = end === -1 ? bareEnd : bareEnd === -1 ? end : Math.min(end, bareEnd);
  const header = raw.subarray(0, stop === -1 ? raw.length : stop).toString("latin1");
  const names: string[] = [];
  for (const line of header.split(/\r?\n/)) {
    if (line === "" || line.startsWith(" ") || line.startsWith("\t")) continue;
    const colon = line.indexOf(":");
    if (colon > 0) names.push(line.slice(0, colon).trim().toLowerCase());
  }
  return names;
}

/** `promise`, or a rejection once `signal` aborts: the work goes on unheeded, its result unused. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(Object.assign(new Error("DKIM verification took too long"), { code: "ETIMEOUT" }));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(Object.assign(new Error("DKIM verification took too long"), { code: "ETIMEOUT" }));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => (signal.removeEventListener("abort", onAbort), resolve(value)),
      (error: unknown) => (signal.removeEventListener("abort", onAbort), reject(error as Error)),
    );
  });
}
