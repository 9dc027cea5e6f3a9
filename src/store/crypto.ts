import { createCipheriv, createDecipheriv, createHmac, hash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { makePrivate } from "./adapters/sqlite-file.js";

const IV_BYTES = 12;
const TAG_BYTES = 16;
const VERSION = 1;

/** Seals secrets at rest with AES-256-GCM under the master key, and derives keys for what coordinators tell each other. */
export class Sealer {
  readonly #key: Buffer;

  constructor(masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error("The master key must be 32 bytes.");
    this.#key = masterKey;
  }

  /**
   * A key of its own for `purpose`, derived from the master key (HMAC-SHA256 of the purpose): only
   * a holder of the same master key (another coordinator) has it, and the sealing key is never
   * used for anything else.
   */
  deriveKey(purpose: string): Buffer {
    return createHmac("sha256", this.#key).update(`action-service: ${purpose}`).digest();
  }

  /** version(1) ‖ iv(12) ‖ tag(16) ‖ ciphertext; `context` binds a sealed value to its row and column. */
  seal(plaintext: string, context: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
  }

  open(sealed: Buffer, context: string): string {
    if (sealed[0] !== VERSION) throw new Error("Unknown sealed-value version.");
    const iv = sealed.subarray(1, 1 + IV_BYTES);
    const tag = sealed.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
    const decipher = createDecipheriv("aes-256-gcm", this.#key, iv);
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(sealed.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  }
}

/** Hex SHA-256 (one call, no Hash object: every request hashes its key). */
export function sha256(value: string): string {
  return hash("sha256", value, "hex");
}

/** A random token of `bytes` bytes, base64url. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

/**
 * The master key: from `ACTION_SERVICE_MASTER_KEY` (64 hex chars or 32 bytes base64) when
 * given, else a key file created once with mode 0600 in the data dir.
 */
export function loadMasterKey(dataDir: string, fromEnvironment: Buffer | undefined): Buffer {
  if (fromEnvironment) return fromEnvironment;
  const file = join(dataDir, "master.key");
  if (existsSync(file)) return Buffer.from(readFileSync(file, "utf8").trim(), "base64");
  makePrivate(dataDir);
  const key = randomBytes(32);
  writeFileSync(file, key.toString("base64") + "\n", { mode: 0o600, flag: "wx" });
  return key;
}
