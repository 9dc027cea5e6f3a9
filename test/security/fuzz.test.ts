import { describe, expect, it } from "vitest";
import { formatFigures, runFuzz } from "./fuzz-support.js";

/** A fixed seed keeps the suite repeatable; FUZZ_SEED explores others (the bench picks a new one each run). */
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_122);

describe("fuzzing REST and /mcp with the request schemas and hostile values", () => {
  it("never answers 5xx, answers every 4xx with the documented body, and changes nothing on a refusal", { timeout: 120_000 }, async () => {
    const figures = await runFuzz({ seed: SEED, rest: 800, mcpRaw: 250, mcpSdk: 150 });
    console.log(formatFigures(figures));
    expect(figures.requests).toBe(1_200);
    // The run means something only if both sides were reached: refusals and real work.
    expect(figures.rejected).toBeGreaterThan(200);
    expect(figures.acceptedChangedState).toBeGreaterThan(30);
    expect(figures.serverErrors).toBe(0);
    expect(figures.rejectedChangedState).toBe(0);
    expect(figures.violations.length, "violations (grouped in the figures above)").toBe(0);
  });
});
