import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The files that take longest, longest first: started first, they do not end a run alone while the
 * other workers sit idle. Used only when vitest has no timings of its own for the run's files (a
 * fresh clone, as in CI); with them, it orders by what it measured. A hint: a file missing here
 * runs after these, in vitest's order.
 */
const SLOW_FIRST = [
  // Every file of `npm test` over 9 s, slowest first: the mean of two runs on a fresh clone (four
  // workers, Chromium's headless shell). A file left out starts late and can end the run alone.
  "test/declared/sandbox.test.ts",
  "test/steps/browser-steps.test.ts",
  "test/drivers/loaded-drivers.test.ts",
  "test/browser/errors.test.ts",
  "test/security/access-matrix.test.ts",
  "test/chaos/kill.test.ts",
  "test/cli/driver-check.test.ts",
  "test/web/app.test.ts",
  "test/execution/slow-platform.test.ts",
  "test/store/other-programs.test.ts",
  "test/mcp/routine-proof.test.ts",
  "test/browser/challenges.test.ts",
  "test/browser/warm-pages.test.ts",
  "test/cli/keys.test.ts",
  "test/payments/x402.test.ts",
  "test/live/health-checks.test.ts",
  "test/engine/due-work.test.ts",
  "test/events/webhooks.test.ts",
  "test/execution/processes.test.ts",
  "test/security/fuzz.test.ts",
  "test/payments/demo.test.ts",
  "test/mcp/tasks.test.ts",
  "test/web/routines.test.ts",
  "test/web/inbox.test.ts",
  "test/web/run-again.test.ts",
  "test/inbox/inbox.test.ts",
  "test/live/live.test.ts",
  "test/mcp/stdio.test.ts",
  "test/sandbox/sign-in.test.ts",
  "test/browser/settle.test.ts",
  "test/live/sign-in-links.test.ts",
  "test/declared/web-app.test.ts",
  "test/payments/devnet.test.ts",
  "test/web/top-up.test.ts",
  "test/execution/fleet.test.ts",
  "test/cli/sandbox-url.test.ts",
  "test/api/keep-alive.test.ts",
  "test/mcp/sandbox.test.ts",
  "test/mcp/modern.test.ts",
  "test/web/account-status.test.ts",
  // test:postgres's own slowest.
  "test/postgres/coordinators.test.ts",
  "test/postgres/skew.test.ts",
  "test/postgres/live-links.test.ts",
  "test/postgres/idle-coordinator.test.ts",
  "test/postgres/fencing.test.ts",
];

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const path = (spec: TestSpecification): string => relative(this.ctx.config.root, spec.moduleId);
    const measured = sorted.every((spec) => this.ctx.cache.getFileTestResults(`${spec.project.name}:${path(spec)}`));
    if (measured) return sorted;
    const rank = (spec: TestSpecification): number => {
      const index = SLOW_FIRST.indexOf(path(spec));
      return index === -1 ? SLOW_FIRST.length : index;
    };
    // Stable: within a group, the listed files first, the rest in vitest's order.
    return [...sorted].sort((a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || rank(a) - rank(b));
  }
}
