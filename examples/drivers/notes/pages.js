// @ts-check
/**
 * What the driver knows of the platform's pages: paths, and how each page state is recognised —
 * by its roles, labels and text, as a person reads the page. Never CSS classes or test ids: those
 * change with every redesign, the words a person reads much less often.
 */

/** @typedef {import("action-service/driver").Page} Page */
/** @typedef {import("action-service/driver").Locator} Locator */
/** @typedef {import("action-service/driver").FailureDetector} FailureDetector */

export const PATHS = {
  /** The feed answers only a signed-in viewer: every action starts there. */
  feed: "/feed",
  /** @param {string} handle */
  person: (handle) => `/people/${encodeURIComponent(handle)}`,
};

export const PAGES = {
  /** @param {Page} page */
  feed: (page) => page.getByRole("heading", { level: 1, name: "Feed", exact: true }),
  /** @param {Page} page */
  signIn: (page) => page.getByRole("heading", { name: "Sign in to Sandbox Social" }),
  /** @param {Page} page */
  alert: (page) => page.getByRole("alert"),
  /** @param {Page} page */
  composer: (page) => page.getByLabel("What's on your mind?"),
  /** @param {Page} page */
  postButton: (page) => page.getByRole("button", { name: "Post", exact: true }),
  /** @param {Page} page */
  postCreated: (page) => page.getByRole("status").filter({ hasText: "Your post is live." }),
  /** The navigation's link to the viewer's own profile, `/people/<handle>`. @param {Page} page */
  profileLink: (page) => page.getByRole("navigation").getByRole("link", { name: "Profile" }),
  /** A person's page: their name is its heading, their handle the line "@handle". @param {Page} page */
  personName: (page) => page.getByRole("heading", { level: 1 }),
  /** @param {Page} page */
  personHandle: (page) => page.getByRole("main").getByText(/^@[\w.-]+$/).first(),
};

/** The sign-in form and the challenge pages' controls. */
export const SIGN_IN = {
  /** @param {Page} page */
  username: (page) => page.getByLabel("Username"),
  /** @param {Page} page */
  password: (page) => page.getByLabel("Password"),
  /** @param {Page} page */
  submit: (page) => page.getByRole("button", { name: "Sign in", exact: true }),
  /** @param {Page} page */
  code: (page) => page.getByLabel("Security code"),
  /** @param {Page} page */
  verify: (page) => page.getByRole("button", { name: "Verify", exact: true }),
  /** @param {Page} page */
  remember: (page) => page.getByLabel("Remember this device"),
};

/**
 * Page states that end any action with one of the service's error codes, checked on every page
 * the driver waits for. The message is what the action's error says: the page's own words.
 * @type {FailureDetector[]}
 */
export const FAILURES = [
  {
    code: "rate_limited",
    locate: (page) => page.getByRole("heading", { name: "Slow down" }),
    message: "The platform asked the account to slow down: \"You're doing that too much. Try again later.\"",
  },
  {
    code: "account_blocked",
    locate: (page) => page.getByRole("heading", { name: "Your account has been restricted" }),
    message: "The platform restricted this account. Open a sign-in link and clear it in the live browser.",
  },
  {
    code: "not_found",
    locate: (page) => page.getByRole("heading", { name: "This page isn't available" }),
    message: "The platform says this page isn't available: the person does not exist or is not visible to the account.",
  },
];
