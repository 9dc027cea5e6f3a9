/**
 * What `action-service driver check` found, one line per declared page state, sign-in step and
 * failure detector: as a person reads it (✓/✗/·, then a summary), or as JSON for programs.
 */

/**
 * - `found`: the state showed where it was expected.
 * - `not_found`: expected on a page the check reached, and missing (or showing where it must not).
 * - `not_reached`: the check never came to the page that would show it (no credentials, a challenge
 *   this sign-in did not meet, a refusal after a right password).
 * - `not_shown`: a failure detector that showed on none of the pages reached, as on a healthy site.
 * - `shown`: a failure detector that showed on a page reached.
 * - `failed`: a step that could not be done (the sign-in refused, the platform unreachable).
 * - `passed`: a step that went through (signed in).
 */
export type Outcome = "found" | "not_found" | "not_reached" | "not_shown" | "shown" | "failed" | "passed";

/** One line of the report. */
export interface CheckLine {
  /** What was checked, in the driver's own names: `signedOut`, `form.username`, `challenges[0].field`, `failures[1] rate_limited`, `sign-in`. */
  name: string;
  /** The locator as Playwright writes it, e.g. `getByRole('heading', { name: 'Feed' })`. */
  locator?: string;
  outcome: Outcome;
  /** The rest of the line, e.g. "found on /feed (start)". */
  message: string;
  /** The seed's error code of a failed step (`login_failed`, `browser_error`, …) or of a failure detector. */
  code?: string;
}

/** The whole check. */
export interface CheckReport {
  driver: string;
  platform: string;
  url: string;
  /** Everything expected was found, and the sign-in (if asked for) went through. */
  ok: boolean;
  checks: CheckLine[];
  summary: Record<Outcome, number>;
}

const FAILING: ReadonlySet<Outcome> = new Set(["not_found", "shown", "failed"]);

export function isFailing(line: CheckLine): boolean {
  return FAILING.has(line.outcome);
}

export function makeReport(driver: string, platform: string, url: string, checks: CheckLine[]): CheckReport {
  const summary: Record<Outcome, number> = { found: 0, not_found: 0, not_reached: 0, not_shown: 0, shown: 0, failed: 0, passed: 0 };
  for (const line of checks) summary[line.outcome]++;
  return { driver, platform, url, ok: !checks.some(isFailing), checks, summary };
}

const MARKS: Record<Outcome, string> = { found: "✓", passed: "✓", not_shown: "✓", not_found: "✗", shown: "✗", failed: "✗", not_reached: "·" };

/** The report as a person reads it: one line per check, then what was not found. */
export function renderReport(report: CheckReport): string {
  // A challenge page not reached says so once; its field, button and box are in the JSON.
  const unreached = new Set(report.checks.filter((line) => line.outcome === "not_reached").map((line) => /^(challenges\[\d+\]) /.exec(line.name)?.[1]));
  const shown = report.checks.filter((line) => !(line.outcome === "not_reached" && unreached.has(/^(challenges\[\d+\])\./.exec(line.name)?.[1])));
  const lines = shown.map((line) => {
    const what = line.locator ? `${line.name}: ${line.locator}` : line.name;
    return `${MARKS[line.outcome]} ${what} — ${line.message}`;
  });
  const { summary } = report;
  const counts = [
    `${summary.found + summary.passed} found`,
    `${summary.not_shown} failure detector${summary.not_shown === 1 ? "" : "s"} not shown`,
    `${summary.not_found + summary.shown + summary.failed} not found or failed`,
    `${summary.not_reached} not reached`,
  ].join(", ");
  const failing = report.checks.filter(isFailing).map((line) => line.name);
  const verdict = report.ok
    ? `${report.driver} at ${report.url}: everything expected was found (${counts}).`
    : `${report.driver} at ${report.url}: FAILED (${counts}). Not found or failed: ${failing.join(", ")}.`;
  return [...lines, "", verdict].join("\n");
}
