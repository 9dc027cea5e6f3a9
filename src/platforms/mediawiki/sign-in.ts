import type { Page } from "playwright";
import type { SignInSpec } from "../sign-in.js";
import { PAGES, PATHS, SIGN_IN } from "./pages.js";

const text = async (page: Page, locate: (page: Page) => ReturnType<Page["locator"]>): Promise<string> => (await locate(page).first().innerText()).trim();

/** The part of the API's `meta=userinfo` answer the probe reads. */
interface UserInfo {
  query?: { userinfo?: { id: number; name: string } };
}

/** The user the API says the cookies sign in; nobody (id 0) is undefined. */
function signedInName(answer: UserInfo): string | undefined {
  const user = answer.query?.userinfo;
  return user && user.id > 0 ? user.name : undefined;
}

/** MediaWiki's sign-in, declared; `../sign-in.ts` runs it. */
export const SIGN_IN_SPEC: SignInSpec = {
  start: PATHS.start,
  // The API names the user the cookies sign in (id 0 for nobody), without rendering a page.
  probe: { path: PATHS.whoAmI, signedInAs: async (response) => (response.ok() ? signedInName((await response.json()) as UserInfo) : undefined) },
  signedIn: PAGES.signedIn,
  signedOut: PAGES.signedOut,
  form: { path: PATHS.signIn, username: SIGN_IN.username, password: SIGN_IN.password, submit: SIGN_IN.submit, remember: SIGN_IN.remember },
  refused: SIGN_IN.error,
  challenges: [
    {
      // OATHAuth: a code from the authenticator app; a wrong or reused one says "Verification failed." on the same page.
      kind: "two_factor_code",
      shows: SIGN_IN.token,
      field: SIGN_IN.token,
      submit: SIGN_IN.tokenSubmit,
      message: async (page) => ((await SIGN_IN.tokenIntro(page).count()) > 0 ? text(page, SIGN_IN.tokenIntro) : "Enter the code from the account's authenticator app."),
    },
    {
      // ConfirmEdit's question after failed sign-ins from this address: on the form itself, answered in the live browser.
      kind: "captcha",
      shows: SIGN_IN.captchaField,
      onForm: true,
      message: async (page) => `The wiki asks a question before this sign-in (it follows failed sign-ins): "${await text(page, SIGN_IN.captchaQuestion)}" Answer it in the live browser and press "Log in".`,
    },
  ],
};

/** The signed-in user's name, from the personal tools' user page link. */
export async function signedInAs(page: Page): Promise<string | undefined> {
  const link = PAGES.userPageLink(page);
  if ((await link.count()) === 0) return undefined;
  return (await link.first().innerText()).trim() || undefined;
}
