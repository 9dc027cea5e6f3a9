import type { Store } from "../../store/index.js";

/**
 * Values the service hands a client to give back later (an MCP `requestState`): sealed with the
 * master key (AES-256-GCM), so a client can neither read nor forge one, and any process on the same
 * store opens it. `purpose` is bound in as associated data: a token made for one use opens for no other.
 */
export function sealForClient(store: Store, payload: unknown, purpose: string): string {
  return store.sealer.seal(JSON.stringify(payload), `client-token:${purpose}`).toString("base64url");
}

/** The payload of a token `sealForClient` made for `purpose`; undefined for anything else (tampered, foreign, not ours). */
export function openFromClient(store: Store, token: string, purpose: string): unknown {
  try {
    return JSON.parse(store.sealer.open(Buffer.from(token, "base64url"), `client-token:${purpose}`));
  } catch {
    return undefined;
  }
}

/** Values sealed for a client to hand back, on one store. */
export class ClientTokens {
  constructor(private readonly store: Store) {}

  /** A value sealed for a client to hand back. */
  seal(payload: unknown, purpose: string): string {
    return sealForClient(this.store, payload, purpose);
  }

  /** What `seal` sealed for `purpose`, or undefined for a token that is not one. */
  open(token: string, purpose: string): unknown {
    return openFromClient(this.store, token, purpose);
  }
}
