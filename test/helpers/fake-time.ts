import { fakeTimeLibrary as findFakeTimeLibrary } from "../../scripts/postgres/faketime.mjs";

/**
 * libfaketime's preload library from Debian's `faketime` package, for a process whose wall clock is
 * off (`npm run test:postgres` and `npm run test:faults` install it).
 */
export function fakeTimeLibrary(): string {
  const found = findFakeTimeLibrary();
  if (!found) throw new Error("libfaketime is not installed (Debian: apt-get install faketime); npm run test:postgres and npm run test:faults install it");
  return found;
}
