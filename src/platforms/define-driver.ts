import type { ActionType } from "../domain/actions.js";
import type { PlatformInfo } from "../engine/execution/index.js";
import { DRIVER_API_VERSION } from "./api-version.js";
import type { Driver } from "./driver.js";
import { ensureSignedIn, type SignInSpec } from "./sign-in.js";
import { browserStepsHandler } from "./steps/browser-steps.js";

/** What a driver declares for `defineDriver`: the rest (its action list, sign-in, owner sign-in page, probe) follows from it. */
export type DriverDeclaration = Omit<Driver, "apiVersion" | "platform" | "ensureSignedIn" | "manualSignIn" | "probe"> & {
  /** The driver API it was written for; the service's own when left out (the public `defineDriver` requires it). */
  apiVersion?: string;
  platform: Omit<PlatformInfo, "actions">;
  signIn: SignInSpec;
};

/**
 * A driver made by `defineDriver`: it keeps its `SignInSpec`, so `action-service driver check` can
 * look for each page state it declares. (Not a field of `Driver` itself: driver.ts importing the
 * spec from sign-in.ts, which imports driver.ts, would close an import circle.)
 */
export type DefinedDriver = Driver & { readonly signIn: SignInSpec };

/**
 * A driver from its declarations: the action types it offers come from its handlers (and the
 * service's own `browser_steps`, unless it brings one), and its sign-in (the shared loop) and the
 * page owners sign in on by hand from its `SignInSpec`.
 */
export function defineDriver(driver: DriverDeclaration): DefinedDriver {
  const { signIn, apiVersion = DRIVER_API_VERSION } = driver;
  const handlers = { ...driver.actions, browser_steps: driver.actions.browser_steps ?? browserStepsHandler({ failures: driver.failures, signedOut: signIn.signedOut }) };
  const actions = Object.keys(handlers) as ActionType[];
  return {
    ...driver,
    apiVersion,
    actions: handlers,
    platform: { ...driver.platform, actions },
    ensureSignedIn: (context) => ensureSignedIn(signIn, context),
    ...(signIn.probe ? { probe: signIn.probe } : {}),
    manualSignIn: { path: signIn.form.path ?? signIn.start, signedIn: signIn.signedIn },
  };
}

/** The sign-in a driver declares, when it was made by `defineDriver` (a hand-written `Driver` has none to show). */
export function signInSpecOf(driver: Driver): SignInSpec | undefined {
  const { signIn } = driver as Partial<DefinedDriver>;
  return signIn && typeof signIn === "object" && typeof signIn.signedIn === "function" ? signIn : undefined;
}
