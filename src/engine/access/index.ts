/** Access: who a key is, what it may see and do, how often, and the sessions and tokens that stand for it. */
export { allows, canSee, requirePermission, visibleAccount, visibleAction } from "./permissions.js";
export { Keys, authenticate, issueKey, type IssuedKey } from "./keys.js";
export { RateLimiter, callerOf, tooManyRequests } from "./rate-limit.js";
export { WebSessions, type WebSession } from "./web-sessions.js";
export { ClientTokens } from "./client-tokens.js";
