/** Challenge kinds (seed §2). */
export const CHALLENGE_KINDS = ["two_factor_code", "email_code", "sms_code", "device_approval", "captcha", "other"] as const;
export type ChallengeKind = (typeof CHALLENGE_KINDS)[number];

/** Kinds a client may answer with a string through the API or MCP. */
const ANSWERABLE_BY_API: ReadonlySet<ChallengeKind> = new Set(["two_factor_code", "email_code", "sms_code", "other"]);

export function isAnswerableByApi(kind: ChallengeKind): boolean {
  return ANSWERABLE_BY_API.has(kind);
}

/** Refused answers allowed before the action fails with `login_failed`. */
export const MAX_REFUSED_ANSWERS = 3;

/** Lifetime of a live-browser link (seed §8). */
export const LIVE_LINK_TTL_MS = 30 * 60 * 1000;

/** The challenge object of an action at `needs_input`. */
export interface Challenge {
  kind: ChallengeKind;
  message: string;
  expires_at: string;
  sign_in_url: string;
}

/** How a person answers each kind, for messages and tool text. */
export const HOW_TO_ANSWER: Readonly<Record<ChallengeKind, string>> = {
  two_factor_code: "Send the code from the authenticator app as the answer.",
  email_code: "Send the code from the email as the answer.",
  sms_code: "Send the code from the text message as the answer.",
  device_approval: "Approve the sign-in on the other device, or open sign_in_url.",
  captcha: "Open sign_in_url and solve the puzzle in the live browser.",
  other: "Read the message; answer with text, or open sign_in_url.",
};
