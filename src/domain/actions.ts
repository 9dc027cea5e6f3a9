import { z } from "zod";
import { RoutineActionParams } from "./routines.js";

const handle = z.string().trim().min(1).max(100).describe("A person's handle on the platform, e.g. `alice`.");
const text = z.string().min(1).max(10_000);
const selector = z.string().min(1).max(1_000).describe("A Playwright selector, e.g. `role=button[name=\"Post\"]` or `text=Sign in`.");

const browserStep = z.union([
  z.strictObject({ goto: z.url().max(2_000).describe("Open this URL.") }),
  z.strictObject({ click: selector }),
  z.strictObject({ fill: selector, value: z.string().max(10_000) }),
  z.strictObject({ press: z.string().min(1).max(50).describe("A key, e.g. `Enter`."), selector: selector.optional() }),
  z.strictObject({ wait_for: selector, timeout_ms: z.int().min(0).max(30_000).optional() }),
  z.strictObject({ extract_text: selector, as: z.string().min(1).max(100).describe("Key of the text in `extracted`.") }),
]);

/** Params of each action type (DESIGN §3). Validated before anything runs. */
export const ACTION_PARAMS = {
  connect: z.strictObject({}).describe("Sign the account in and save its session."),
  post: z.strictObject({ text: text.describe("The text of the post.") }).describe("Publish a post."),
  lookup_person: z
    .union([z.strictObject({ handle }), z.strictObject({ url: z.url().max(2_000) })])
    .describe("Read a person's profile by handle or URL."),
  lookup_conversation: z
    .union([
      z.strictObject({ with: handle.describe("Handle of the other person.") }),
      z.strictObject({ conversation_id: z.string().min(1).max(200) }),
    ])
    .describe("Read the messages of a conversation."),
  send_message: z.strictObject({ to: handle, text: text.describe("The message.") }).describe("Send a direct message."),
  browser_steps: z
    .strictObject({ steps: z.array(browserStep).min(1).max(50) })
    .describe("Run generic browser steps in the account's signed-in browser."),
  routine: RoutineActionParams,
} as const;

export type ActionType = keyof typeof ACTION_PARAMS;
export const ACTION_TYPES = Object.keys(ACTION_PARAMS) as ActionType[];
export type ActionParams<T extends ActionType> = z.infer<(typeof ACTION_PARAMS)[T]>;
export type BrowserStep = z.infer<typeof browserStep>;

/** Credit price of each action type. */
export const ACTION_PRICES: Readonly<Record<ActionType, number>> = {
  connect: 1,
  post: 2,
  lookup_person: 1,
  lookup_conversation: 1,
  send_message: 2,
  browser_steps: 3,
  // A routine does what a built-in write does (post, send_message) in one signed-in page, with no
  // agent exploring: priced as they are, below browser_steps, whose steps nobody has tried yet.
  routine: 2,
};

export function isActionType(value: string): value is ActionType {
  return Object.hasOwn(ACTION_PARAMS, value);
}
