import type { ActionType } from "../domain/actions.js";
import type { PlatformInfo } from "../engine/execution/index.js";
import type { Driver } from "./driver.js";
import { ensureSignedIn, type SignInSpec } from "./sign-in.js";

/**
 * A driver from its declarations: the action types it offers come from its handlers, and its
 * sign-in (the shared loop) and the page owners sign in on by hand from its `SignInSpec`.
 */
export function defineDriver(
  driver: Omit<Driver, "platform" | "ensureSignedIn" | "manualSignIn" | "probe"> & { platform: Omit<PlatformInfo, "actions">; signIn: SignInSpec },
): Driver {
  const { signIn, ...rest } = driver;
  const actions = Object.keys(driver.actions) as ActionType[];
  return {
    ...rest,
    platform: { ...driver.platform, actions },
    ensureSignedIn: (context) => ensureSignedIn(signIn, context),
    ...(signIn.probe ? { probe: signIn.probe } : {}),
    manualSignIn: { path: signIn.form.path ?? signIn.start, signedIn: signIn.signedIn },
  };
}
