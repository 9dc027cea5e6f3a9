import type { Locator, Page } from "playwright";
import type { ChallengeKind } from "../../domain/challenges.js";
import type { FailureDetector } from "../driver.js";

/**
 * What the driver knows of the sandbox's pages: paths, and how to recognise each
 * page by its roles, labels and text (as a person would), never by test hooks.
 */
export const PATHS = {
  home: "/feed",
  messages: "/messages",
  person: (handle: string) => `/people/${encodeURIComponent(handle)}`,
  conversation: (id: string) => `/messages/${encodeURIComponent(id)}`,
  newMessage: (to: string) => `/messages/new?to=${encodeURIComponent(to)}`,
};

export const PAGES = {
  home: (page: Page) => page.getByRole("heading", { level: 1, name: "Feed", exact: true }),
  signIn: (page: Page) => page.getByRole("heading", { name: "Sign in to Sandbox Social" }),
  /** A mailed sign-in link that did not sign in: expired or used, or opened in another browser. */
  linkRefused: (page: Page) =>
    page.getByRole("heading", { level: 1, name: "This sign-in link has expired", exact: true }).or(page.getByRole("heading", { level: 1, name: "Open this link in the browser you signed in from", exact: true })),
  composer: (page: Page) => page.getByLabel("What's on your mind?"),
  postButton: (page: Page) => page.getByRole("button", { name: "Post", exact: true }),
  postCreated: (page: Page) => page.getByRole("status").filter({ hasText: "Your post is live." }),
  alert: (page: Page) => page.getByRole("alert"),
  profileLink: (page: Page) => page.getByRole("navigation").getByRole("link", { name: "Profile" }),
  personName: (page: Page) => page.getByRole("heading", { level: 1 }),
  conversation: (page: Page) => page.getByRole("heading", { level: 1, name: /^Conversation with / }),
  newMessage: (page: Page) => page.getByRole("heading", { level: 1, name: "New message" }),
  messageList: (page: Page) => page.getByRole("list", { name: "Messages" }).getByRole("listitem"),
  messageBox: (page: Page) => page.getByLabel("Write a message"),
  sendButton: (page: Page) => page.getByRole("button", { name: "Send", exact: true }),
};

export const SIGN_IN = {
  username: (page: Page) => page.getByLabel("Username"),
  password: (page: Page) => page.getByLabel("Password"),
  submit: (page: Page) => page.getByRole("button", { name: "Sign in", exact: true }),
  code: (page: Page) => page.getByLabel("Security code"),
  answer: (page: Page) => page.getByLabel("Your answer"),
  remember: (page: Page) => page.getByLabel("Remember this device"),
  verify: (page: Page) => page.getByRole("button", { name: "Verify", exact: true }),
};

/**
 * Challenge pages by their heading, the challenge kind each one is, and the field an answer is
 * typed into. A page without a field moves on only on the page (the live browser, another device),
 * or, with `link`, when the mailed sign-in link is opened in the account's page.
 */
export interface ChallengePage { kind: ChallengeKind; heading: string; field?: (page: Page) => Locator; link?: boolean }

export const CHALLENGE_PAGES: readonly ChallengePage[] = [
  { kind: "two_factor_code", heading: "Two-factor authentication", field: SIGN_IN.code },
  { kind: "email_code", heading: "Check your email", field: SIGN_IN.code },
  // A `magic_link` user: the sandbox mails a one-time sign-in link instead of a code.
  { kind: "email_code", heading: "Check your email for a sign-in link", link: true },
  { kind: "sms_code", heading: "Check your phone", field: SIGN_IN.code },
  { kind: "device_approval", heading: "Check your other device" },
  { kind: "captcha", heading: "Let's make sure you're a person" },
  // A security question: the page's first paragraph is the question.
  { kind: "other", heading: "Answer your security question", field: SIGN_IN.answer },
];

export function challengeHeading(page: Page, heading: string) {
  return page.getByRole("heading", { level: 1, name: heading, exact: true });
}

/**
 * How the sandbox's mails and texts read (DESIGN §15): a code in "Your Sandbox Social code is
 * 123456" (a mail's subject, a text) or "…sign-in code is 123456" (a mail's text), and the one-time
 * link `<origin>/sign-in/link/<token>` a `magic_link` user is mailed.
 */
export const INBOX = {
  code: /\bSandbox Social (?:sign-in )?code is (\d{6})\b/,
  link: /(https?:\/\/[^\s/"'<>]+\/sign-in\/link\/[A-Za-z0-9_-]{22,})/,
  // The sandbox signs its mail as sandbox.localhost when it has a key (SANDBOX_DKIM_KEY, or the one a service running it makes).
  senders: ["sandbox.localhost"],
};

/** Page states that end any action. */
export const FAILURES: readonly FailureDetector[] = [
  {
    code: "account_blocked",
    locate: (page) => page.getByRole("heading", { name: "Your account has been restricted" }),
    message: "The platform restricted this account (checkpoint). Open a sign-in link and clear it in the live browser.",
  },
  {
    code: "rate_limited",
    locate: (page) => page.getByRole("heading", { name: "Slow down" }),
    message: "The platform asked the account to slow down: \"You're doing that too much. Try again later.\"",
  },
  {
    code: "not_found",
    locate: (page) => page.getByRole("heading", { name: "This page isn't available" }),
    message: "The platform says this page isn't available: the post, person or conversation does not exist or is not visible to the account.",
  },
  {
    code: "unsupported",
    locate: (page) => page.getByRole("heading", { name: "Messaging isn't available" }),
    message: "The platform offers no direct messages to this account: \"Direct messages aren't available for your account.\"",
  },
];

/** Alerts after a post or message that mean the platform refused it, by their text. */
export const REFUSALS: readonly { text: string; code: "rejected" | "invalid_input" | "not_found" }[] = [
  { text: "You already posted this.", code: "rejected" },
  { text: "You already sent this.", code: "rejected" },
  { text: "Your post is too long.", code: "invalid_input" },
  { text: "Your post is empty.", code: "invalid_input" },
  { text: "Your message is too long.", code: "invalid_input" },
  { text: "Your message is empty.", code: "invalid_input" },
  { text: "We couldn't find anyone with that username.", code: "not_found" },
  { text: "You can't send a message to yourself.", code: "invalid_input" },
];
