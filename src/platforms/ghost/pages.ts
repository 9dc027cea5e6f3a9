import type { Page } from "playwright";
import type { FailureDetector } from "../driver.js";

/**
 * What the driver knows of Ghost 6's pages: the admin app at `/ghost/` (sign-in, device
 * verification, the editor and its publish flow) and the public site (posts, author pages).
 */
export const PATHS = {
  admin: "/ghost/",
  /** The Admin API's signed-in staff user. */
  me: "/ghost/api/admin/users/me/",
  newPost: "/ghost/#/editor/post",
  author: (slug: string) => `/author/${encodeURIComponent(slug)}/`,
};

export const PAGES = {
  /** The admin's navigation: only a signed-in, verified staff user has it. */
  signedIn: (page: Page) => page.getByRole("link", { name: "Posts", exact: true }).first(),
  /** The signed-in user's e-mail, shown in the admin's user menu. */
  userEmail: (page: Page) => page.getByRole("button").getByText(/^[^\s@]+@[^\s@]+$/).first(),
  title: (page: Page) => page.getByPlaceholder("Post title"),
  body: (page: Page) => page.locator(".kg-prose[contenteditable='true']").first(),
  publish: (page: Page) => page.getByRole("button", { name: "Publish", exact: true }).first(),
  finalReview: (page: Page) => page.getByRole("button", { name: /^Continue, final review/ }),
  publishNow: (page: Page) => page.getByRole("button", { name: /^Publish post, right now/ }),
  published: (page: Page) => page.getByText("Boom! It's out there.", { exact: false }),
  /** The public site's author page: the name, and a card per post. */
  authorName: (page: Page) => page.locator("h1.gh-article-title"),
  authorBio: (page: Page) => page.locator(".gh-article-excerpt, .gh-author-bio").first(),
  postCards: (page: Page) => page.locator("article.gh-card"),
};

export const SIGN_IN = {
  email: (page: Page) => page.getByLabel("Email address"),
  password: (page: Page) => page.getByLabel("Password", { exact: true }),
  /** "Sign in →", which reads "Retry" after a refusal. */
  submit: (page: Page) => page.getByRole("button", { name: /^(Sign in|Retry)/ }),
  /** The flow's error line: a wrong password, a wrong code, too many attempts. */
  error: (page: Page) => page.locator("p.main-error").filter({ hasText: /\S/ }),
  code: (page: Page) => page.getByLabel("Verification code"),
  verify: (page: Page) => page.getByRole("button", { name: /^(Verify|Retry)/ }),
  /** A wrong code ("Your verification code is incorrect.") or one that is not six digits ("Verification code must be 6 numbers"). */
  codeRefused: (page: Page) => page.locator("p.main-error").getByText(/Your verification code is incorrect|Verification code must be/),
  verifyIntro: (page: Page) => page.getByText("It looks like you're signing in from a new device", { exact: false }),
};

/**
 * How Ghost's sign-in mail reads (DESIGN §15): HTML only, subject "123456 is your Ghost sign in
 * verification code", the code again alone on a line of the body. The subject is the pattern: the
 * body also shows an image named `ghost-orb-1.png` beside "Here's your code", which the generic
 * rule would take for the code.
 */
export const INBOX = {
  code: /\b(\d{6}) is your Ghost sign in verification code\b/,
};

/** Page states that end any action. */
export const FAILURES: readonly FailureDetector[] = [
  {
    code: "not_found",
    locate: (page) => page.getByText("Page not found", { exact: true }),
    message: "The site says this page was not found: no such author or post.",
  },
  {
    code: "rate_limited",
    locate: (page) => page.locator("p.main-error").getByText(/Too many (login|sign-in) attempts|Too many attempts/i),
    message: "Ghost has blocked sign-ins for a while after too many attempts; try again later.",
  },
];
