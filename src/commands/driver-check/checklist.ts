import type { Page } from "playwright";
import { ACTION_ERROR_CODES } from "../../domain/errors.js";
import type { Driver } from "../../platforms/driver.js";
import type { SignInSpec } from "../../platforms/sign-in.js";
import { isFailing, type CheckLine, type Outcome } from "./report.js";

/** One failure detector's looks: the pages it was looked for on, where it showed, and why it could not be looked for. */
interface DetectorLooks {
  lookedOn: string[];
  shownOn: string[];
  malformed?: string;
}

/**
 * The states a driver declares, in its own order, each waiting for what the check finds of it.
 * A state the check never came to is reported "not reached", with why (`reasons`).
 */
export class Checklist {
  readonly #lines = new Map<string, { locator?: string; line?: CheckLine }>();
  readonly #detectors: DetectorLooks[];

  constructor(
    private readonly driver: Driver,
    spec: SignInSpec | undefined,
    page: Page,
  ) {
    const locator = (make: ((page: Page) => unknown) | undefined): string | undefined => {
      if (!make) return undefined;
      try {
        return String(make(page));
      } catch (error) {
        return `(cannot be made: ${messageOf(error)})`;
      }
    };
    this.#expect("platform");
    if (spec) {
      this.#expect("signedOut", locator(spec.signedOut));
      this.#expect("signedIn", locator(spec.signedIn));
      this.#expect("form.username", locator(spec.form.username));
      this.#expect("form.password", locator(spec.form.password));
      this.#expect("form.submit", locator(spec.form.submit));
      if (spec.form.remember) this.#expect("form.remember", locator(spec.form.remember));
      this.#expect("refused", locator(spec.refused));
      if (spec.alert) this.#expect("alert", locator(spec.alert));
      spec.challenges.forEach((challenge, index) => {
        this.#expect(`challenges[${index}] ${challenge.kind}`, locator(challenge.shows));
        if (challenge.field) this.#expect(`challenges[${index}].field`, locator(challenge.field));
        if (challenge.submit) this.#expect(`challenges[${index}].submit`, locator(challenge.submit));
        if (challenge.remember) this.#expect(`challenges[${index}].remember`, locator(challenge.remember));
      });
    }
    this.#expect("sign-in");
    this.#expect("signedInAs");
    if (driver.probe) this.#expect("probe", driver.probe.path);
    this.#detectors = driver.failures.map(() => ({ lookedOn: [], shownOn: [] }));
    driver.failures.forEach((failure, index) => {
      const made = locator(failure.locate);
      this.#expect(detectorName(index, failure.code), made);
      const looks = this.#detectors[index]!;
      if (made?.startsWith("(cannot be made")) looks.malformed = made;
      else if (!ACTION_ERROR_CODES.includes(failure.code)) looks.malformed = `"${failure.code}" is not one of the seed's error codes (${ACTION_ERROR_CODES.join(", ")})`;
      else if (!failure.message?.trim()) looks.malformed = "it has no message for the action's error";
    });
  }

  #expect(name: string, locator?: string): void {
    this.#lines.set(name, locator === undefined ? {} : { locator });
  }

  /** Records what was found of `name`; a failing finding replaces an earlier passing one, never the reverse. */
  record(name: string, outcome: Outcome, message: string, code?: string): void {
    const entry = this.#lines.get(name) ?? {};
    const line: CheckLine = { name, ...(entry.locator === undefined ? {} : { locator: entry.locator }), outcome, message, ...(code ? { code } : {}) };
    if (!entry.line || (isFailing(line) && !isFailing(entry.line))) this.#lines.set(name, { ...entry, line });
  }

  outcomeOf(name: string): Outcome | undefined {
    return this.#lines.get(name)?.line?.outcome;
  }

  /** A failure detector looked for on a page reached: shown there, not shown, or not to be looked for (its locator is malformed). */
  detectorLooked(index: number, where: string, shown: boolean | Error): void {
    const looks = this.#detectors[index]!;
    if (shown instanceof Error) looks.malformed ??= `it cannot be looked for: ${messageOf(shown)}`;
    else {
      looks.lookedOn.push(where);
      if (shown) looks.shownOn.push(where);
    }
  }

  /** Every line, in the driver's order; what was never recorded is "not reached", for the reason `reasonOf` gives. */
  lines(reasonOf: (name: string) => string): CheckLine[] {
    this.driver.failures.forEach((failure, index) => this.#recordDetector(index, failure.code));
    return [...this.#lines.entries()].map(
      ([name, entry]) => entry.line ?? { name, ...(entry.locator === undefined ? {} : { locator: entry.locator }), outcome: "not_reached", message: reasonOf(name) },
    );
  }

  #recordDetector(index: number, code: string): void {
    const name = detectorName(index, code);
    const looks = this.#detectors[index]!;
    if (looks.malformed) return this.record(name, "not_found", `malformed: ${looks.malformed}`, code);
    if (looks.shownOn.length > 0) {
      return this.record(name, "shown", `shown on ${looks.shownOn.join(", ")}: a page the driver expects to be healthy shows it, so every action there would fail with ${code}`, code);
    }
    if (looks.lookedOn.length > 0) return this.record(name, "not_shown", `not shown (as expected) on ${unique(looks.lookedOn).join(", ")}; its locator is well-formed`, code);
  }
}

export function detectorName(index: number, code: string): string {
  return `failures[${index}] ${code}`;
}

export function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0]!.trim();
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
