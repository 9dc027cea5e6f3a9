import { join } from "node:path";
import madge from "madge";
import { beforeAll, expect, it } from "vitest";

// The house shows the design (STYLE.md, "Rooms, not drawers"): no file imports, directly or through
// others, a file that imports it — type-only imports counted, as a reader follows them too.
const ROOT = join(import.meta.dirname, "..", "..");

let graph: Awaited<ReturnType<typeof madge>>;
beforeAll(async () => {
  graph = await madge(join(ROOT, "src"), { fileExtensions: ["ts"], tsConfig: join(ROOT, "tsconfig.json") });
}, 60_000);

it("src has no import circles", () => {
  expect(graph.circular()).toEqual([]);
});

/**
 * The engine's rooms stand on the domain and the store alone (DESIGN §2). What reads the outbox
 * (events/: webhooks, the stream, feedback) and payments stand above the engine, so the engine
 * importing them would tie two rooms both ways: the outbox the engine writes in its transactions
 * lives in engine/outbox. The one exception is the facade, engine/engine.ts, which assembles the
 * engine with the rooms above it for the adapters (decisions: "The outbox below the engine").
 */
const ENGINE_FACADE = "engine/engine.ts";
const BELOW_THE_ENGINE = ["engine/", "domain/", "store/"];

it("the engine imports only the engine, the domain and the store: never events/ (what reads the outbox) nor another room above it", () => {
  const crossings = Object.entries(graph.obj())
    .filter(([file]) => file.startsWith("engine/") && file !== ENGINE_FACADE)
    .flatMap(([file, imports]) => imports.filter((imported) => !BELOW_THE_ENGINE.some((room) => imported.startsWith(room))).map((imported) => `${file} -> ${imported}`));
  expect(crossings).toEqual([]);
});
