import type { Page } from "playwright";
import type { FailureDetector } from "../driver.js";

/**
 * What the driver knows of MediaWiki 1.39's pages (the default Vector skin): paths, and how a
 * person recognises each page, by its labels, buttons and the wiki's own messages.
 */
export const PATHS = {
  /** A page with no content: cheap, and it shows who is signed in. */
  start: "/index.php/Special:BlankPage",
  signIn: "/index.php/Special:UserLogin",
  /** Who the cookies sign in, as the API says it. */
  whoAmI: "/api.php?action=query&meta=userinfo&format=json",
  /** A page's canonical address (`/index.php/User:Carol`). */
  page: (title: string) => `/index.php/${encodeURIComponent(title.replaceAll(" ", "_")).replaceAll("%3A", ":").replaceAll("%2F", "/")}`,
  edit: (title: string) => `/index.php?title=${encodeURIComponent(title)}&action=edit`,
  raw: (title: string) => `/index.php?title=${encodeURIComponent(title)}&action=raw`,
  newSection: (title: string) => `/index.php?title=${encodeURIComponent(title)}&action=edit&section=new`,
  contributions: (name: string) => `/index.php?title=Special:Contributions/${encodeURIComponent(name)}&limit=10`,
};

const personalTools = (page: Page) => page.getByRole("navigation", { name: "Personal tools" });

export const PAGES = {
  signedIn: (page: Page) => personalTools(page).getByRole("link", { name: "Log out" }),
  signedOut: (page: Page) => personalTools(page).getByRole("link", { name: "Log in" }),
  userPageLink: (page: Page) => page.locator("#pt-userpage a"),
  heading: (page: Page) => page.locator("#firstHeading"),
  content: (page: Page) => page.locator("#mw-content-text .mw-parser-output"),
  noText: (page: Page) => page.getByText("There is currently no text in this page.", { exact: false }),
  editForm: (page: Page) => page.locator("#editform"),
  /** The skin marks what the page is doing on its body: a saved edit shows the page (`action-view`)… */
  viewed: (page: Page) => page.locator("body.action-view"),
  /** …one the wiki did not take brings the form back (`action-submit`). */
  resubmitted: (page: Page) => page.locator("body.action-submit #editform"),
  textbox: (page: Page) => page.locator("#wpTextbox1"),
  summary: (page: Page) => page.getByLabel("Summary:"),
  subject: (page: Page) => page.getByLabel("Subject:"),
  save: (page: Page) => page.getByRole("button", { name: /^Save (page|changes)$/ }),
  /** What an edit that was not saved says: an error box on the edit page. */
  editError: (page: Page) => page.locator("#editform .mw-message-box-error, #editform .errorbox, .mw-message-box-error, .errorbox").first(),
  contributions: (page: Page) => page.locator("ul.mw-contributions-list > li"),
};

export const SIGN_IN = {
  username: (page: Page) => page.getByLabel("Username"),
  password: (page: Page) => page.getByLabel("Password", { exact: true }),
  submit: (page: Page) => page.getByRole("button", { name: "Log in", exact: true }),
  remember: (page: Page) => page.getByLabel("Keep me logged in"),
  /** The wiki's error on the sign-in pages: a wrong password, a wrong or reused code ("Verification failed."). */
  error: (page: Page) => page.locator("#mw-content-text").locator(".mw-message-box-error, .errorbox"),
  token: (page: Page) => page.getByLabel("Two-factor token or recovery code"),
  tokenSubmit: (page: Page) => page.getByRole("button", { name: "Continue login", exact: true }),
  tokenIntro: (page: Page) => page.getByText("Please enter a code from your two-factor authentication application", { exact: false }),
  /** ConfirmEdit's question after failed sign-ins: an intro, the question, and an unlabelled field. */
  captchaIntro: (page: Page) => page.getByText("we kindly ask you to answer the question that appears below", { exact: false }),
  captchaQuestion: (page: Page) => page.locator("#userloginForm .mw-htmlform-field-HTMLInfoField .mw-input"),
  captchaField: (page: Page) => page.locator("input[name='captchaWord']"),
};

/** Page states that end any action, by the wiki's own messages. */
export const FAILURES: readonly FailureDetector[] = [
  {
    code: "account_blocked",
    locate: (page) => page.locator("#mw-content-text").getByText(/has been blocked/),
    message: "The wiki has blocked this account (or its IP address) from editing.",
  },
  {
    code: "rate_limited",
    locate: (page) => page.getByText("As an anti-abuse measure, you are limited from performing this action too many times", { exact: false }),
    message: "The wiki limits how often this can be done: \"you are limited from performing this action too many times in a short space of time\". Try again in a few minutes.",
  },
  {
    code: "not_found",
    // "User account "X" is not registered." on the user page, its talk page and their edit forms.
    locate: (page) => page.locator(".mw-userpage-userdoesnotexist"),
    message: "The wiki has no user by that name.",
  },
  {
    code: "rejected",
    locate: (page) => page.locator("#firstHeading").getByText(/^Edit conflict/),
    message: "Someone else changed the page at the same time (edit conflict); nothing was saved.",
  },
];
