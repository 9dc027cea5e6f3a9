import type { Page } from "playwright";
import type { SignInSpec } from "../sign-in.js";
import { CHALLENGE_PAGES, PAGES, PATHS, SIGN_IN, challengeHeading } from "./pages.js";

/** The sandbox's sign-in, declared: the shared loop (`../sign-in.ts`) does the rest. */
export const SIGN_IN_SPEC: SignInSpec = {
  start: PATHS.home,
  // The feed answers only a signed-in viewer (anyone else is sent to the sign-in page), and its navigation links the viewer's profile.
  probe: { path: PATHS.home, signedInAs: async (response) => (response.status() === 200 ? profileHandle(await response.text()) : undefined) },
  signedIn: PAGES.home,
  signedOut: PAGES.signIn,
  form: { username: SIGN_IN.username, password: SIGN_IN.password, submit: SIGN_IN.submit },
  // The sign-in page shown again after sending it is the refusal; its alert says why.
  refused: PAGES.signIn,
  alert: PAGES.alert,
  challenges: CHALLENGE_PAGES.map(({ kind, heading, field, link }) => ({
    kind,
    shows: (page: Page) => challengeHeading(page, heading),
    ...(field ? { field, submit: SIGN_IN.verify } : {}),
    // A sign-in link that did not work shows a page of its own.
    ...(link ? { link, refusal: PAGES.linkRefused } : {}),
    remember: SIGN_IN.remember,
    // The page's first paragraph says what is asked.
    message: async (page: Page) => (await page.getByRole("main").getByRole("paragraph").first().innerText()).trim(),
  })),
};

/** The handle in a page's HTML, from its navigation's link to the viewer's profile (`<a href="/people/ada">Profile</a>`). */
function profileHandle(html: string): string | undefined {
  return handleOf(/<a href="(\/people\/[^"]+)">Profile<\/a>/.exec(html)?.[1]);
}

/** The signed-in user's handle: the last segment of the navigation's profile link. */
export async function signedInAs(page: Page): Promise<string | undefined> {
  const link = PAGES.profileLink(page);
  if ((await link.count()) === 0) return undefined;
  return handleOf(await link.first().getAttribute("href"));
}

/** A profile link's handle: its last path segment. */
function handleOf(href: string | null | undefined): string | undefined {
  return href ? decodeURIComponent(href.split("/").filter(Boolean).pop() ?? "") || undefined : undefined;
}
