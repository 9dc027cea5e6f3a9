import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

/**
 * libfaketime's preload library from Debian's `faketime` package, for a process whose wall clock is
 * off (`npm run test:postgres` and `npm run test:faults` install it).
 */
export function fakeTimeLibrary(): string {
  // /usr/lib/<multiarch>/faketime/ (x86_64-linux-gnu, aarch64-linux-gnu, …).
  const candidates = ["/usr/lib/faketime/libfaketime.so.1", ...readdirSync("/usr/lib").map((name) => join("/usr/lib", name, "faketime", "libfaketime.so.1"))];
  const found = candidates.find((file) => existsSync(file));
  if (!found) throw new Error("libfaketime is not installed (Debian: apt-get install faketime); npm run test:postgres and npm run test:faults install it");
  return found;
}
