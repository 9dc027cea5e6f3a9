import type { Locator, Page } from "playwright";
import { blockHosts } from "../../browser/executor.js";
import { isSameUser } from "../../browser/identity.js";
import { PageLoad } from "../../browser/page-load.js";
import { probeShowsAccount } from "../../browser/probe.js";
import { isTimeout, judgeTimeout, settle, type PageRule } from "../../browser/settle.js";
import { ActionFailure } from "../../domain/errors.js";
import { signInSpecOf } from "../../platforms/define-driver.js";
import type { Driver, DriverContext } from "../../platforms/driver.js";
import { signInWith, type SignInSpec } from "../../platforms/sign-in.js";
import { Checklist, messageOf } from "./checklist.js";
import { signInContext } from "./sign-in-context.js";
import type { CheckLine } from "./report.js";
import type { Terminal } from "./terminal.js";

/** What one check needs: the driver, where the platform lives, a fresh page, and whom to sign in. */
export interface InspectOptions {
  driver: Driver;
  baseUrl: string;
  /** A page of a fresh browser context: no session. */
  page: Page;
  pageTimeoutMs: number;
  /** How long a challenge met away from the terminal (another device) may take. */
  challengeTimeoutMs: number;
  credentials?: { username: string; password: string } | undefined;
  terminal: Terminal;
  signal: AbortSignal;
}

/** How long a part of a page already judged loaded (a form's button, a challenge's field) may take to show. */
const PART_MS = 5_000;

/**
 * Visits the platform as the service does, through the driver's own declarations and the shared
 * sign-in loop, and says of each page state and failure detector whether it was found on the pages
 * reached: the start page, the sign-in form, each challenge met, and the pages once signed in.
 */
export async function inspectDriver(options: InspectOptions): Promise<CheckLine[]> {
  return new Inspection(options).run();
}

class Inspection {
  readonly #spec: SignInSpec | undefined;
  readonly #checklist: Checklist;
  readonly #rule: PageRule;
  readonly #page: Page;
  /** Where the check is in its visit, for the report's "found on /login (sign-in form)". */
  #phase = "start";
  /** The states the last wait asked for, and which challenge showed last (by its index). */
  #asked: string[] = [];
  #challenge = -1;

  constructor(private readonly options: InspectOptions) {
    this.#page = options.page;
    this.#spec = signInSpecOf(options.driver);
    this.#checklist = new Checklist(options.driver, this.#spec, options.page);
    this.#rule = { pageTimeoutMs: options.pageTimeoutMs, platformTitle: options.driver.platform.title };
  }

  async run(): Promise<CheckLine[]> {
    const page = this.#page;
    page.setDefaultTimeout(this.#rule.pageTimeoutMs);
    page.setDefaultNavigationTimeout(this.#rule.pageTimeoutMs);
    PageLoad.of(page);
    await blockHosts(page, this.options.driver);
    const { credentials } = this.options;
    const spec = this.#spec;
    if (!spec) {
      // A hand-written Driver keeps its sign-in to itself: only its sign-in as a whole, and its detectors, can be checked.
      if (await this.#open(this.options.driver.manualSignIn.path)) {
        await this.#lookAtFailures();
        this.#checklist.record("platform", "passed", `opened ${this.#where()}`);
      }
      if (credentials) await this.#signIn(credentials, (context) => this.options.driver.ensureSignedIn(context));
      return this.#lines();
    }
    const started = await this.#start(spec);
    const formReady = started && (await this.#form(spec));
    if (credentials && formReady) await this.#signIn(credentials, (context) => signInWith(spec, context));
    else if (credentials) this.#checklist.record("sign-in", "failed", "not tried: the start page or the sign-in form did not show what the driver declares");
    return this.#lines();
  }

  /** The start page of a fresh browser: its signed-out marker, and never its signed-in one. */
  async #start(spec: SignInSpec): Promise<boolean> {
    const page = this.#page;
    if (!(await this.#open(spec.start))) return false;
    this.#checklist.record("platform", "passed", `opened ${this.#where()}`);
    let state: "signedIn" | "signedOut";
    try {
      state = await this.#settle({ signedIn: spec.signedIn(page), signedOut: spec.signedOut(page) }, spec.startTimeoutMs);
    } catch (error) {
      await this.#lookAtFailures();
      this.#checklist.record("signedOut", "not_found", `not found on ${this.#where()}, nor signedIn: ${this.#why(error)}`);
      return false;
    }
    await this.#lookAtFailures();
    if (state === "signedOut") {
      this.#checklist.record("signedOut", "found", `found on ${this.#where()}`);
      return true;
    }
    this.#checklist.record("signedIn", "shown", `found on ${this.#where()} in a fresh browser with no session: it must show only when signed in`);
    this.#checklist.record("signedOut", "not_found", `not found on ${this.#where()}: the start page showed signedIn to a browser with no session`);
    return false;
  }

  /** The sign-in form, on its own page or on the signed-out start page: each of its parts. */
  async #form(spec: SignInSpec): Promise<boolean> {
    const page = this.#page;
    this.#phase = "sign-in form";
    if (spec.form.path) {
      if (!(await this.#open(spec.form.path))) return false;
      try {
        await this.#settle({ form: spec.form.password(page) });
      } catch (error) {
        await this.#lookAtFailures();
        this.#checklist.record("form.password", "not_found", `not found on ${this.#where()}: ${this.#why(error)}`);
        return false;
      }
      await this.#lookAtFailures();
    }
    const parts = [
      ["form.username", spec.form.username(page)],
      ["form.password", spec.form.password(page)],
      ["form.submit", spec.form.submit(page)],
      ...(spec.form.remember ? [["form.remember", spec.form.remember(page)] as const] : []),
    ] as const;
    const shown = await Promise.all(parts.map(([, locator]) => visibleSoon(locator)));
    parts.forEach(([name], index) => this.#recordSeen(name, shown[index]!));
    // A challenge shown on the form itself (a question after failed sign-ins) is found here or not at all.
    for (const [index, challenge] of spec.challenges.entries()) {
      if (challenge.onForm && (await visibleNow(challenge.shows(page)))) this.#checklist.record(`challenges[${index}] ${challenge.kind}`, "found", `found on ${this.#where()}`);
    }
    return shown.slice(0, 3).every((found) => found === true);
  }

  /** Signs in through the driver's sign-in (what the service runs), then reads who is signed in and opens the start page again. */
  async #signIn(credentials: { username: string; password: string }, signIn: (context: DriverContext) => Promise<void>): Promise<void> {
    const spec = this.#spec;
    this.#phase = "after sending the form";
    try {
      await signIn(this.#context(credentials));
    } catch (error) {
      await this.#lookAtFailures();
      const failure = this.#failureOf(error);
      if (spec && failure.code === "ui_changed" && this.#asked.includes("signedIn")) {
        const others = this.#asked.filter((name) => name !== "signedIn");
        this.#checklist.record("signedIn", "not_found", `not found on ${this.#where("after signing in")}${others.length > 0 ? ` (nor ${others.map((name) => this.#stateName(name)).join(", ")})` : ""}`);
      }
      if (spec?.alert && this.#checklist.outcomeOf("refused") === "found") this.#recordSeen("alert", await visibleSoon(spec.alert(this.#page)));
      this.#checklist.record("sign-in", "failed", `${failure.code}: ${failure.message}`, failure.code);
      return;
    }
    this.#phase = "signed in";
    await this.#lookAtFailures();
    this.#checklist.record("sign-in", "passed", `signed in as ${credentials.username}, on ${this.#where()}`);
    const shown = await this.options.driver.signedInAs(this.#page).catch((error: unknown) => new Error(messageOf(error)));
    if (shown instanceof Error) this.#checklist.record("signedInAs", "not_found", `could not be read on ${this.#where()}: ${shown.message}`);
    else if (isSameUser(shown, credentials.username)) this.#checklist.record("signedInAs", "found", `shows ${shown} on ${this.#where()}`);
    else this.#checklist.record("signedInAs", "not_found", shown === undefined ? `shows nobody on ${this.#where()}` : `shows ${shown} on ${this.#where()}, not ${credentials.username}`);
    if (spec) await this.#startSignedIn(spec);
    await this.#probe(credentials.username);
  }

  /** The start page again, with the session the sign-in left: the service's next action starts here. */
  async #startSignedIn(spec: SignInSpec): Promise<void> {
    const page = this.#page;
    this.#phase = "start, signed in";
    if (!(await this.#open(spec.start))) return;
    try {
      const state = await this.#settle({ signedIn: spec.signedIn(page), signedOut: spec.signedOut(page) }, spec.startTimeoutMs);
      await this.#lookAtFailures();
      if (state === "signedIn") this.#checklist.record("signedIn", "found", `found on ${this.#where()}`);
      else this.#checklist.record("signedIn", "not_found", `not found on ${this.#where()}: the start page showed signedOut right after signing in`);
    } catch (error) {
      await this.#lookAtFailures();
      this.#checklist.record("signedIn", "not_found", `not found on ${this.#where()}: ${this.#why(error)}`);
    }
  }

  /** The health check's first look, without a page, with the session just made. */
  async #probe(username: string): Promise<void> {
    const { driver, baseUrl, signal, pageTimeoutMs } = this.options;
    if (!driver.probe) return;
    const shows = await probeShowsAccount(this.#page.context().request, { driver, baseUrl, username, timeoutMs: pageTimeoutMs, signal });
    this.#checklist.record("probe", shows ? "found" : "not_found", shows ? `GET ${driver.probe.path} shows ${username} signed in` : `GET ${driver.probe.path} did not show ${username} signed in`);
  }

  /** The shared sign-in loop's view of this run, each of its waits reported as it ends. */
  #context(credentials: { username: string; password: string }): DriverContext {
    return signInContext({
      ...this.options,
      credentials,
      rule: this.#rule,
      challengeNow: () => this.#spec?.challenges[this.#challenge],
      settle: async (states, timeoutMs) => {
        this.#asked = Object.keys(states);
        const state = await this.#settle(states, timeoutMs);
        await this.#seenWhileSigningIn(state);
        return state;
      },
      open: async (pathOrUrl) => {
        if (!(await this.#open(pathOrUrl))) throw new ActionFailure("browser_error", `${pathOrUrl} could not be opened.`);
      },
    });
  }

  /** A state the sign-in loop found: the refusal, a challenge page (with its field, button and box), or signed in. */
  async #seenWhileSigningIn(state: string): Promise<void> {
    const spec = this.#spec;
    if (!spec) return;
    const page = this.#page;
    if (state === "signedIn") this.#checklist.record("signedIn", "found", `found on ${this.#where("after signing in")}`);
    if (state === "refused") this.#checklist.record("refused", "found", `found on ${this.#where()}`);
    const match = /^challenge(\d+)$/.exec(state);
    if (!match) return;
    const index = Number(match[1]);
    const challenge = spec.challenges[index]!;
    this.#challenge = index;
    this.#phase = `challenge ${challenge.kind}`;
    await this.#lookAtFailures();
    this.#checklist.record(`challenges[${index}] ${challenge.kind}`, "found", `found on ${this.#where()}`);
    const parts = [
      ["field", challenge.field?.(page)],
      ["submit", challenge.submit?.(page)],
      ["remember", challenge.remember?.(page)],
    ] as const;
    for (const [part, locator] of parts) if (locator) this.#recordSeen(`challenges[${index}].${part}`, await visibleSoon(locator));
  }

  /** Opens a path of the platform; false (and said in the report) when it cannot be reached. */
  async #open(pathOrUrl: string): Promise<boolean> {
    const url = pathOrUrl.startsWith("/") ? this.options.baseUrl + pathOrUrl : pathOrUrl;
    try {
      await this.#page.goto(url, { waitUntil: "commit" });
      return true;
    } catch (error) {
      const network = /net::(ERR_[A-Z_]+)/.exec(messageOf(error))?.[1];
      const { driver } = this.options;
      const message = network
        ? `the ${driver.platform.title} platform at ${new URL(url).origin} cannot be reached (${network}).${driver.whenUnreachable ? ` ${driver.whenUnreachable}` : ""}`
        : `${new URL(url).pathname} could not be opened: ${this.#why(error)}`;
      this.#checklist.record("platform", "failed", message, "browser_error");
      return false;
    }
  }

  #settle<K extends string>(states: Record<K, Locator>, timeoutMs?: number): Promise<K> {
    return settle(this.#page, states, this.options.driver.failures, this.#rule, timeoutMs);
  }

  /** Each failure detector, looked for on the page as it is now. */
  async #lookAtFailures(): Promise<void> {
    const where = this.#where();
    for (const [index, failure] of this.options.driver.failures.entries()) {
      const shown = await Promise.resolve()
        .then(() => visibleNow(failure.locate(this.#page)))
        .catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
      this.#checklist.detectorLooked(index, where, shown);
    }
  }

  /** A part of the page found, not found, or not to be looked for (its locator is malformed). */
  #recordSeen(name: string, shown: boolean | Error): void {
    if (shown instanceof Error) this.#checklist.record(name, "not_found", `cannot be looked for on ${this.#where()}: ${shown.message}`);
    else this.#checklist.record(name, shown ? "found" : "not_found", `${shown ? "found" : "not found"} on ${this.#where()}`);
  }

  /** An error of a wait on the page, in the report's words. */
  #why(error: unknown): string {
    const failure = this.#failureOf(error);
    return failure.code === "ui_changed" ? "the page showed none of the states asked for" : `${failure.code}: ${failure.message}`;
  }

  #failureOf(error: unknown): ActionFailure {
    if (error instanceof ActionFailure) return error;
    if (isTimeout(error)) return judgeTimeout(this.#page, this.#rule);
    return new ActionFailure("browser_error", `The browser failed: ${messageOf(error)}`);
  }

  /** The sign-in loop's name for a state, as the report names it. */
  #stateName(name: string): string {
    const index = /^challenge(\d+)$/.exec(name)?.[1];
    return index === undefined ? name : `challenges[${index}] ${this.#spec?.challenges[Number(index)]?.kind ?? ""}`.trim();
  }

  /** The page's path (never its query: it may hold a token) and where the check is. */
  #where(phase = this.#phase): string {
    let path: string;
    try {
      path = new URL(this.#page.url()).pathname;
    } catch {
      path = this.#page.url();
    }
    return `${path} (${phase})`;
  }

  #lines(): CheckLine[] {
    const signedIn = this.#checklist.outcomeOf("sign-in") === "passed";
    const tried = this.#checklist.outcomeOf("sign-in") !== undefined;
    return this.#checklist.lines((name) => {
      if (!this.options.credentials) return "not reached: give --username to sign in and reach it";
      if (!tried) return "not reached: the check stopped before it";
      if (name === "refused" || name === "alert") return signedIn ? "not reached: the sign-in was not refused (a wrong password shows it)" : "not reached";
      if (name.startsWith("challenges[")) return "not reached: this sign-in did not meet it";
      return signedIn ? "not reached" : "not reached: the sign-in did not go through";
    });
  }
}

/** Whether the locator shows within a moment (the page it is on already judged loaded). */
async function visibleSoon(locator: Locator): Promise<boolean | Error> {
  return locator
    .first()
    .waitFor({ state: "visible", timeout: PART_MS })
    .then(
      () => true,
      (error: unknown) => (isTimeout(error) ? false : new Error(messageOf(error))),
    );
}

async function visibleNow(locator: Locator): Promise<boolean> {
  return locator.first().isVisible();
}
