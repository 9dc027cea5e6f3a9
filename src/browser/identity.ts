import { ActionFailure } from "../domain/errors.js";

/** Whether the handle a platform shows for the signed-in user is the account's username. */
export function isSameUser(shown: string | undefined, username: string): boolean {
  // Case aside, a wiki treats "_" and " " in a user name alike (MediaWiki shows "Bob Smith" for bob_smith).
  const normalize = (value: string): string => value.trim().replace(/^@/, "").replaceAll("_", " ").toLowerCase();
  return shown !== undefined && normalize(shown) === normalize(username);
}

/** Who is signed in, as the message of a refusal says it. */
export function wrongUserMessage(shown: string | undefined, username: string): string {
  return shown === undefined
    ? `The page did not show who signed in, so it could not be checked that it is @${username}; the session was not kept.`
    : `Signed in as @${shown.replace(/^@/, "")}, but this account is @${username}; the session was not kept.`;
}

/**
 * A sign-in landed in another user's account (DESIGN §3: the signed-in profile must be the
 * account's user). The executor clears the context and keeps no session.
 */
export class WrongUserFailure extends ActionFailure {
  constructor(shown: string | undefined, username: string) {
    super("login_failed", `${wrongUserMessage(shown, username)} Fix the username or password with PATCH /v1/accounts/{id}, then connect again.`);
  }
}
