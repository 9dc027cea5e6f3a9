import { createPrivateKey, createPublicKey, generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";

/** The domain the sandbox's mails come from and are DKIM-signed for (`d=`). */
export const SANDBOX_MAIL_DOMAIN = "sandbox.localhost";
/** The selector the sandbox signs with unless told otherwise (`SANDBOX_DKIM_SELECTOR`). */
export const DEFAULT_DKIM_SELECTOR = "sandbox";

/** What the sandbox signs its mails with: an RSA private key (PEM) and the selector its public key is published under. */
export interface DkimKey {
  selector: string;
  privateKey: string;
}

/** A fresh 2048-bit RSA key: for a sandbox whose public key is answered in-process, never published. */
export function generateDkimKey(selector: string = DEFAULT_DKIM_SELECTOR): DkimKey {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
  return { selector, privateKey };
}

/**
 * The key at `path` (`SANDBOX_DKIM_KEY`): a PEM RSA private key. A file that cannot be read or is
 * not such a key is a clear error that names the file, never its content.
 */
export function readDkimKey(path: string, selector: string = DEFAULT_DKIM_SELECTOR): DkimKey {
  let privateKey: string;
  try {
    privateKey = readFileSync(path, "utf8");
  } catch (error) {
    throw new Error(`SANDBOX_DKIM_KEY: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? "error"})`);
  }
  let type: string | undefined;
  try {
    type = createPrivateKey(privateKey).asymmetricKeyType;
  } catch {
    type = undefined;
  }
  if (type !== "rsa") throw new Error(`SANDBOX_DKIM_KEY: ${path} is not a PEM RSA private key (e.g. \`openssl genrsa -out dkim.pem 2048\`)`);
  return { selector, privateKey };
}

/**
 * The DNS TXT record that publishes the key's public half: its name
 * (`<selector>._domainkey.sandbox.localhost`) and value (`v=DKIM1; k=rsa; p=…`).
 */
export function dkimRecord(key: DkimKey): { name: string; value: string } {
  const publicKey = createPublicKey(key.privateKey).export({ type: "spki", format: "der" });
  return { name: `${key.selector}._domainkey.${SANDBOX_MAIL_DOMAIN}`, value: `v=DKIM1; k=rsa; p=${publicKey.toString("base64")}` };
}
