import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicKey, generateKeyPairSync } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { dkimRecord, generateDkimKey, readDkimKey } from "../../src/sandbox/dkim.js";

const dir = mkdtempSync(join(tmpdir(), "sandbox-dkim-"));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the sandbox's DKIM key (SANDBOX_DKIM_KEY)", () => {
  it("reads a PEM RSA key and publishes its public half under <selector>._domainkey.sandbox.localhost", () => {
    const key = generateDkimKey();
    const path = join(dir, "dkim.pem");
    writeFileSync(path, key.privateKey);
    expect(readDkimKey(path, "s2025")).toEqual({ selector: "s2025", privateKey: key.privateKey });
    const record = dkimRecord({ ...key, selector: "s2025" });
    expect(record.name).toBe("s2025._domainkey.sandbox.localhost");
    const p = /^v=DKIM1; k=rsa; p=([A-Za-z0-9+/=]+)$/.exec(record.value)?.[1];
    expect(createPublicKey({ key: Buffer.from(p!, "base64"), format: "der", type: "spki" }).export({ type: "spki", format: "pem" })).toBe(createPublicKey(key.privateKey).export({ type: "spki", format: "pem" }));
  });

  it("a missing file, or one that is not an RSA private key, is a clear error naming the file and never its content", () => {
    expect(() => readDkimKey(join(dir, "absent.pem"))).toThrow(`SANDBOX_DKIM_KEY: cannot read ${join(dir, "absent.pem")} (ENOENT)`);
    const { privateKey: ed25519 } = generateKeyPairSync("ed25519", { privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
    for (const [name, content] of [["secret.txt", "not-a-key-but-a-secret"], ["ed25519.pem", ed25519]] as const) {
      const path = join(dir, name);
      writeFileSync(path, content);
      const error = (() => {
        try {
          readDkimKey(path);
        } catch (thrown) {
          return thrown as Error;
        }
      })();
      expect(error?.message).toBe(`SANDBOX_DKIM_KEY: ${path} is not a PEM RSA private key (e.g. \`openssl genrsa -out dkim.pem 2048\`)`);
      expect(error?.message).not.toContain(content.slice(0, 40));
    }
  });
});
