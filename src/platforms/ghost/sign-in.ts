import type { Page } from "playwright";
import type { SignInSpec } from "../sign-in.js";
import { PAGES, PATHS, SIGN_IN } from "./pages.js";

/** Ghost's staff sign-in, declared; `../sign-in.ts` runs it. The admin is a large app: it gets longer to show. */
export const SIGN_IN_SPEC: SignInSpec = {
  start: PATHS.admin,
  startTimeoutMs: 30_000,
  // The Admin API's own user answers only a signed-in, verified staff session, from the origin it was made on.
  probe: {
    path: PATHS.me,
    headers: (baseUrl) => ({ origin: new URL(baseUrl).origin }),
    signedInAs: async (response) => (response.status() === 200 ? ((await response.json()) as { users?: { email?: string }[] }).users?.[0]?.email : undefined),
  },
  signedIn: PAGES.signedIn,
  signedOut: SIGN_IN.email,
  form: { username: SIGN_IN.email, password: SIGN_IN.password, submit: SIGN_IN.submit },
  refused: SIGN_IN.error,
  challenges: [
    {
      // A new device: a 6-digit code by e-mail ("Verify it's really you"); a wrong one says "Your verification code is incorrect.", a malformed one "Verification code must be 6 numbers"
      kind: "email_code",
      shows: SIGN_IN.code,
      field: SIGN_IN.code,
      submit: SIGN_IN.verify,
      // The app stays on the page while it checks the code: the refusal is its message, not the field.
      refusal: SIGN_IN.codeRefused,
      message: async (page) => ((await SIGN_IN.verifyIntro(page).count()) > 0 ? (await SIGN_IN.verifyIntro(page).first().innerText()).trim() : "Ghost sent a sign-in verification code by e-mail."),
    },
  ],
};

/** The signed-in staff user's e-mail (Ghost signs in by e-mail). */
export async function signedInAs(page: Page): Promise<string | undefined> {
  const email = PAGES.userEmail(page);
  // The menu renders a moment after the navigation: as long as a page may take (the page timeout), not
  // a fixed few seconds a busy machine can overrun.
  await email.waitFor().catch(() => undefined);
  if ((await email.count()) === 0) return undefined;
  return (await email.innerText()).trim() || undefined;
}
