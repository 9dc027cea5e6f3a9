import { randomBytes } from "node:crypto";

/** Public ids: a type prefix and 16 random bytes (`act_…`, `acc_…`). */
export function newId(prefix: "act" | "acc" | "ws" | "key" | "chl" | "run" | "pay" | "evt" | "whe" | "dlv" | "fbk" | "msg"): string {
  return `${prefix}_${randomBytes(16).toString("base64url")}`;
}
