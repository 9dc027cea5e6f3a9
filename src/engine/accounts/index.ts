/** Accounts: the platform accounts a workspace connects, and the live links that sign them in. */
export { Accounts, CreateAccountInput, UpdateAccountInput, type CreateAccount, type UpdateAccount } from "./accounts.js";
export { LiveLinks, type LiveTarget } from "./live-links.js";
