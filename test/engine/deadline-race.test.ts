import { afterEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../helpers/harness.js";
import { ScriptedExecutor, eventually, gate } from "../helpers/scripted-executor.js";

// The deadline sweep and an answer decide one challenge (DESIGN §3, §11): whichever the store
// records first wins, and the other changes nothing. Runs on SQLite and, under test:postgres, on
// PostgreSQL. The race is made, not waited for: the sweep's read of overdue challenges is held
// while the answer is made (a moment before the deadline), as a slow sweep on a busy machine would be.

const TTL_MS = 600_000;

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.destroy();
});

/** A sign-in asking for a code; once answered it goes on only when `signedIn` opens. */
function signInWithCode(signedIn: Promise<void> = Promise.resolve()): ScriptedExecutor {
  return new ScriptedExecutor().on("connect", async (context) => {
    const code = await context.challenge({ kind: "email_code", message: "We emailed you a code." });
    await signedIn;
    return { signed_in: true, code };
  });
}

async function pausedConnect(h: Harness): Promise<string> {
  const account = await h.request("POST", "/v1/accounts", { body: { platform: "sandbox", username: "carol", password: "pw" } });
  const action = await h.request("POST", "/v1/actions?wait=5", { body: { account_id: account.json.id, type: "connect" } });
  expect(action.json.status).toBe("needs_input");
  return action.json.id;
}

/**
 * Runs `during` once, after the sweep has read the overdue challenges and before it acts on them.
 * Returns how many times a sweep has ended since (a sweep ends by reading the next deadline: one
 * after it is the sweep that raced, finished).
 */
function betweenSweepReadAndWrite(h: Harness, during: () => Promise<void>): () => number {
  const overdue = h.store.challenges.overdue.bind(h.store.challenges);
  const nextDeadline = h.store.challenges.nextDeadline.bind(h.store.challenges);
  let done = false;
  let after = 0;
  h.store.challenges.nextDeadline = async () => {
    const next = await nextDeadline();
    if (done) after += 1;
    return next;
  };
  h.store.challenges.overdue = async (now) => {
    const found = await overdue(now);
    if (found.length > 0 && !done) {
      done = true;
      await during();
    }
    return found;
  };
  return () => after;
}

describe("the deadline sweep and an answer", () => {
  it("an answer accepted a moment before expires_at is never failed as challenge_timeout by a sweep that read the challenge as overdue", async () => {
    const signedIn = gate();
    const h = await createHarness({ executor: signInWithCode(signedIn.promise) });
    harnesses.push(h);
    const actionId = await pausedConnect(h);
    let answered: { status: number; json: any } | undefined;
    const sweepsSince = betweenSweepReadAndWrite(h, async () => {
      // 1 ms before the deadline, the answer is accepted.
      h.clock.advance(-2);
      answered = await h.request("POST", `/v1/actions/${actionId}/answer`, { body: { answer: "123456" } });
      h.clock.advance(2);
    });
    // 1 ms past the deadline: the engine's own sweep (every 20 ms) reads the challenge as overdue.
    h.clock.advance(TTL_MS + 1);
    await eventually(() => answered, { what: "the answer made while the sweep was under way" });
    expect(answered!.status).toBe(202);
    // The sweep that read it as overdue has done what it does; the sign-in then goes on.
    await eventually(() => sweepsSince() >= 1, { what: "the sweep that raced to end" });
    signedIn.open();
    const ended = await eventually(async () => {
      const action = (await h.request("GET", `/v1/actions/${actionId}`)).json;
      return action.status === "succeeded" || action.status === "failed" ? action : undefined;
    });
    expect(ended).toMatchObject({ status: "succeeded", result: { signed_in: true, code: "123456" } });
    expect((await h.store.challenges.latestOf(actionId))?.state).not.toBe("expired");
  });

  it("an answer that comes once expires_at has passed is refused, though the sweep has not yet failed the action", async () => {
    const h = await createHarness({ executor: signInWithCode() });
    harnesses.push(h);
    const actionId = await pausedConnect(h);
    // The sweep is slow today: its read finds nothing until the answer has been tried.
    const overdue = h.store.challenges.overdue.bind(h.store.challenges);
    let sweepHeld = true;
    h.store.challenges.overdue = async (now) => (sweepHeld ? [] : overdue(now));
    h.clock.advance(TTL_MS);
    const late = await h.request("POST", `/v1/actions/${actionId}/answer`, { body: { answer: "123456" } });
    expect(late.status).toBe(409);
    expect((await h.store.actions.get(actionId))?.status).toBe("needs_input");
    sweepHeld = false;
    await eventually(async () => (await h.store.actions.get(actionId))?.status === "failed");
    expect((await h.request("GET", `/v1/actions/${actionId}`)).json).toMatchObject({ status: "failed", error: { code: "challenge_timeout" } });
  });
});
