import { join } from "node:path";
import madge from "madge";
import { expect, it } from "vitest";

// The house shows the design (STYLE.md, "Rooms, not drawers"): no file imports, directly or through
// others, a file that imports it — type-only imports counted, as a reader follows them too.
const ROOT = join(import.meta.dirname, "..", "..");

it("src has no import circles", async () => {
  const graph = await madge(join(ROOT, "src"), { fileExtensions: ["ts"], tsConfig: join(ROOT, "tsconfig.json") });
  expect(graph.circular()).toEqual([]);
}, 60_000);
