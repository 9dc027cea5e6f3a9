import { z } from "zod";
import { RoutineActionParams } from "./routines.js";
import { BrowserStepJson, kindOf, READING_STEPS } from "./steps.js";

const handle = z.string().trim().min(1).max(100).describe("A person's handle on the platform, e.g. `alice`.");
const text = z.string().min(1).max(10_000);
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
    .strictObject({
      steps: z.array(BrowserStepJson).min(1).max(50),
      dry_run: z
        .boolean()
        .optional()
        .describe("Only look: goto, wait_for, extract_text and snapshot steps, nothing clicked or typed; the result has the snapshot of each page reached."),
    })
    .superRefine(({ steps, dry_run: dryRun }, context) => {
      if (!dryRun) return;
      steps.forEach((step, index) => {
        const kind = kindOf(step);
        if (!READING_STEPS.includes(kind)) context.addIssue({ code: "custom", path: ["steps", index], message: `a dry run only reads (${READING_STEPS.join(", ")}); a ${kind} step may change something` });
      });
    })
    .describe("Run generic browser steps in the account's signed-in browser."),
  routine: RoutineActionParams,
} as const;

export type ActionType = keyof typeof ACTION_PARAMS;
export const ACTION_TYPES = Object.keys(ACTION_PARAMS) as ActionType[];
export type ActionParams<T extends ActionType> = z.infer<(typeof ACTION_PARAMS)[T]>;
export type { BrowserStep } from "./steps.js";

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

/** What an action costs: its type's price, but a dry run of browser steps costs 1 (it only reads, yet still takes a browser and a sign-in). */
export function priceOf(type: ActionType, params: Readonly<Record<string, unknown>>): number {
  if (type === "browser_steps" && params.dry_run === true) return 1;
  return ACTION_PRICES[type];
}

export function isActionType(value: string): value is ActionType {
  return Object.hasOwn(ACTION_PARAMS, value);
}
