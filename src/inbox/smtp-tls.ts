import ipaddr from "ipaddr.js";

/** The SMTP listener's certificate and private key, PEM (`ACTION_SERVICE_SMTP_TLS_CERT` / `_KEY`). */
export interface SmtpTls {
  cert: Buffer;
  key: Buffer;
}

/** Whether only this machine can reach a listener on `host` (a loopback address, or `localhost`). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  if (bare.toLowerCase() === "localhost") return true;
  return ipaddr.isValid(bare) && ipaddr.process(bare).range() === "loopback";
}

/**
 * Why a listener on `host` may not start, if it may not: one other machines can reach takes mail
 * only with TLS offered (STARTTLS), unless the operator said plaintext on purpose.
 */
export function plaintextRefusal(host: string, tls: SmtpTls | undefined, allowPlaintext: boolean): string | undefined {
  if (tls || allowPlaintext || isLoopbackHost(host)) return undefined;
  return `an SMTP listener on ${host} (reachable from other machines) needs TLS: set ACTION_SERVICE_SMTP_TLS_CERT and ACTION_SERVICE_SMTP_TLS_KEY (PEM files), or ACTION_SERVICE_SMTP_ALLOW_PLAINTEXT=true to take mail in plaintext`;
}
