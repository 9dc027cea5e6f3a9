// @ts-check
/**
 * What the driver knows of DokuWiki's pages (2022-07-31 "Igor", default template, English): paths,
 * and how each page state is recognised — by role, label and text, as a person reads the page.
 */

/** @typedef {import("action-service/driver").Page} Page */
/** @typedef {import("action-service/driver").FailureDetector} FailureDetector */

/** A page id in an address, as the wiki writes it: `:` kept, the rest encoded. @param {string} id */
const inUrl = (id) => encodeURIComponent(id).replaceAll("%3A", ":");

export const PATHS = {
  start: "/doku.php?id=start",
  login: "/doku.php?id=start&do=login",
  /** @param {string} id a page id, e.g. `journal:2026-11-27-hello-world` */
  page: (id) => `/doku.php?id=${inUrl(id)}`,
  /** @param {string} id */
  edit: (id) => `/doku.php?id=${inUrl(id)}&do=edit`,
  /** The page's wiki text as plain text; a page that does not exist is answered with an HTML page instead. @param {string} id */
  raw: (id) => `/doku.php?id=${inUrl(id)}&do=export_raw`,
};

/** @param {Page} page */
const pageTools = (page) => page.getByRole("navigation", { name: "Page Tools" });

export const PAGES = {
  /** @param {Page} page */
  logIn: (page) => page.getByRole("link", { name: "Log In", exact: true }),
  /** @param {Page} page */
  logOut: (page) => page.getByRole("link", { name: "Log Out", exact: true }),
  /** The "User Tools" item "Logged in as: Bob Builder (bob)". @param {Page} page */
  loggedInAs: (page) => page.getByText("Logged in as:"),
  /** @param {Page} page */
  editThisPage: (page) => pageTools(page).getByRole("link", { name: "Edit this page" }),
  /** The editor: a toolbar and the page's text in a textarea that has no label (its accessible name is empty). @param {Page} page */
  wikiText: (page) => page.getByRole("application").getByRole("textbox").first(),
  /** @param {Page} page */
  summary: (page) => page.getByLabel("Edit summary"),
  /** @param {Page} page */
  save: (page) => page.getByRole("button", { name: "Save", exact: true }),
  /** The banner over the editor while another user edits: a heading, then "Currently locked by:" and "Lock expires at:". @param {Page} page */
  locked: (page) => page.getByRole("heading", { level: 1, name: "Page locked", exact: true }),
  /** @param {Page} page */
  lockDetails: (page) => page.getByRole("main").getByRole("listitem"),
  /** @param {Page} page */
  topicMissing: (page) => page.getByRole("heading", { level: 1, name: "This topic does not exist yet" }),
  /** "user/carol.txt · Last modified: 2026/11/27 22:15 by carol", under a page's text. @param {Page} page */
  lastModified: (page) => page.getByRole("main").getByText("Last modified:"),
  /** @param {Page} page */
  title: (page) => page.getByRole("main").getByRole("heading", { level: 1 }).first(),
  /** @param {Page} page */
  firstParagraph: (page) => page.getByRole("main").getByRole("paragraph").first(),
};

/**
 * Pages that end any action, whatever it was doing. Their words never change, so a fixed message
 * quoting them says it all; words that do change (who holds a lock, until when) are read by the
 * handler that meets them (actions.js).
 * @type {FailureDetector[]}
 */
export const FAILURES = [
  {
    code: "rejected",
    locate: (page) => page.getByRole("heading", { level: 1, name: "Permission Denied", exact: true }),
    message: "DokuWiki: \"Sorry, you don't have enough rights to continue.\" The wiki's access rules do not let this account do this here.",
  },
  {
    code: "rejected",
    locate: (page) => page.getByText("Your change was not saved because it contains blocked text (spam)."),
    message: "DokuWiki: \"Your change was not saved because it contains blocked text (spam).\" The text matches the wiki's blocklist (wordblock.conf); change it and post again.",
  },
];
