/**
 * Figure (n), the inbox (DESIGN §15), on a service of its own with its SMTP listener on and the
 * sandbox mailing its codes to it:
 * - mail accepted by the listener → the code typed into the account's page, over fresh e-mail-code
 *   sign-ins (`connect`) that nobody answers;
 * - its floor: the sandbox mailing the code (it mails as it serves the challenge page) → the code
 *   typed, for our sign-ins and for raw Playwright's — a script that submits the form, waits for the
 *   code field and types the code it reads from the sandbox's outbox the moment the field is there
 *   (an inbox that costs nothing) — in the same run;
 * - 16 accounts' throughput while another process floods the listener with mails to unknown
 *   recipients ÷ the same with no flood, and what became of the flood (refused at RCPT TO, nothing
 *   stored).
 */
import { fork, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { Browser, BrowserContext } from "playwright";
import { startLiveService, type LiveService } from "../test/helpers/live-service.js";
import { connectedAccounts, postRate } from "./execution.js";
import type { FloodCommand, FloodResult } from "./inbox-flood.js";
import { launchRaw, median } from "./support.js";

const SIGN_INS = Number(process.env.BENCH_INBOX_SIGN_INS ?? 50);
const FLOOD_MAILS = Number(process.env.BENCH_FLOOD_MAILS ?? 1_000);
const FLOOD_CONNECTIONS = Number(process.env.BENCH_FLOOD_CONNECTIONS ?? 4);
const FLOOD_ROUNDS = Number(process.env.BENCH_FLOOD_ROUNDS ?? 3);
/** Unset: each round's flood paced to last as long as the quiet round before it; a number: that rate (0: unpaced). */
const FLOOD_PER_SECOND = process.env.BENCH_FLOOD_PER_SECOND === undefined ? undefined : Number(process.env.BENCH_FLOOD_PER_SECOND);

export interface InboxFigures {
  signIns: number;
  medianMs: number;
  p99Ms: number;
  maxMs: number;
  /** Sign-ins whose mail was there as the challenge opened: answered at once, never paused at needs_input. */
  atHand: number;
  /** Mail accepted → action ended (signed in), median. */
  signedInMs: number;
  /** The sandbox mailed the code → typed, median: ours, and raw Playwright's over as many sign-ins (the floor). */
  sentToTypedMs: number;
  rawSentToTypedMs: number;
  rawSentToTypedP99Ms: number;
  /** Mail accepted by the listener → typed, for raw Playwright's sign-ins: the floor of the figure itself. */
  rawMedianMs: number;
  rawP99Ms: number;
  /** Of the sign-ins that paused at needs_input (the mail came later): mail accepted → typed, median (the inbox's own latency). */
  pausedMailToTypedMs: number;
  quiet: number;
  busy: number;
  ratio: number;
  floodMails: number;
  rcptCodes: Record<string, number>;
  accepted: number;
  dropped: number;
  /** The flood's sending time ÷ the loaded posts' time, summed over rounds. */
  floodCover: number;
  floodPerSecond: number;
  storedBefore: number;
  storedAfter: number;
}

/** The page's own timestamp (ms since the epoch) of the code field's first `input` event, per document. */
const TYPED_SCRIPT = `(() => {
  let seen = false;
  window.addEventListener("input", (event) => {
    if (seen || !(event.target instanceof HTMLInputElement) || event.target.id !== "code") return;
    seen = true;
    console.debug("bench-typed " + Date.now());
  }, { capture: true });
})();`;

/**
 * Every context of the service's browser, present and future, reports when its code field is
 * typed into: an init script (run as each document is created, not at the moment measured) adds
 * an `input` listener that takes the page's own clock and logs it; the console message reaches
 * the bench afterwards, so its delivery is not in the figure.
 */
async function watchTyping(browser: Browser, onTyped: (at: number) => void): Promise<void> {
  const watch = async (context: BrowserContext): Promise<void> => {
    context.on("console", (message) => {
      const text = message.text();
      if (text.startsWith("bench-typed ")) onTyped(Number(text.slice("bench-typed ".length)));
    });
    await context.addInitScript(TYPED_SCRIPT);
  };
  for (const context of browser.contexts()) await watch(context);
  const newContext = browser.newContext.bind(browser);
  browser.newContext = async (...args) => {
    const context = await newContext(...args);
    await watch(context);
    return context;
  };
}

/** Nearest-rank percentile. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** When the sandbox mailed the user's newest code. */
async function sentAt(live: LiveService, handle: string): Promise<number> {
  const outbox = (await live.sandboxApi("GET", `/_sandbox/outbox?to=${handle}`)) as { sent_at: string }[];
  if (!outbox[0]) throw new Error(`no code was sent to ${handle}`);
  return Date.parse(outbox[0].sent_at);
}

/**
 * The floor: raw Playwright signing in e-mail-code sandbox users, each in a new context, typing the
 * code as soon as the code field is there (read from the sandbox's outbox: an inbox that costs
 * nothing). Per sign-in: sandbox mailed → typed, and the mail accepted by the service's listener
 * (the same mail path as ours, its `received_at`) → typed.
 */
async function rawSentToTyped(live: LiveService): Promise<{ sent: number[]; accepted: number[] }> {
  const browser = await launchRaw();
  let typed: number | undefined;
  await watchTyping(browser, (at) => {
    typed ??= at;
  });
  const samples: number[] = [];
  const accepted: number[] = [];
  try {
    for (let i = 0; i < SIGN_INS; i++) {
      // Its e-mail is an inbox of the service's listener, only to time the mail's arrival the same way: no action of the service uses it.
      const { handle, accountId } = await live.inboxUser("email");
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await page.goto(`${live.sandbox.url}/feed`);
      await page.getByLabel("Username").fill(handle);
      await page.getByLabel("Password").fill("sandbox-password");
      typed = undefined;
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      const field = page.getByLabel("Security code");
      await field.waitFor();
      await field.fill(await live.latestCode(handle));
      await page.getByRole("button", { name: "Verify", exact: true }).click();
      await page.getByRole("heading", { level: 1, name: "Feed", exact: true }).waitFor();
      await context.close();
      if (typed === undefined) throw new Error("the raw script's code field was never typed into");
      samples.push(typed - (await sentAt(live, handle)));
      const typedAt = typed;
      let messages: { received_at: string }[] = [];
      await live.until(async () => (messages = (await live.api("GET", `/v1/accounts/${accountId}/messages`)).json.data).length > 0, 10_000);
      accepted.push(typedAt - Date.parse(messages[0]!.received_at));
    }
  } finally {
    await browser.close();
  }
  return { sent: samples, accepted };
}

async function mailToTyped(live: LiveService, accounts: string[]): Promise<Pick<InboxFigures, "signIns" | "medianMs" | "p99Ms" | "maxMs" | "atHand" | "signedInMs" | "sentToTypedMs" | "pausedMailToTypedMs">> {
  let typed: number | undefined;
  await watchTyping(await live.server.pool.browser(), (at) => {
    typed ??= at;
  });
  const samples: number[] = [];
  const signedIn: number[] = [];
  const pausedMailToTyped: number[] = [];
  const sentToTyped: number[] = [];
  let atHand = 0;
  // One at a time, each a new account and sandbox user (a fresh context: no remembered device).
  for (let i = 0; i < SIGN_INS; i++) {
    const { handle, accountId } = await live.inboxUser("email");
    accounts.push(accountId);
    typed = undefined;
    const created = await live.api("POST", "/v1/actions", { account_id: accountId, type: "connect", params: {} });
    const ended = await live.finished(created.json.id, 60_000);
    if (ended.status !== "succeeded" || ended.answered_by !== "inbox") throw new Error(`connect ${ended.status}, answered by ${ended.answered_by}: ${JSON.stringify(ended.error)}`);
    const endedAt = live.history(created.json.id).find((seen) => seen.status === "succeeded")?.at;
    const messages = (await live.api("GET", `/v1/accounts/${accountId}/messages`)).json.data as { received_at: string; used_for?: string }[];
    const used = messages.find((message) => message.used_for === created.json.id);
    if (!used) throw new Error("no message answered the sign-in");
    if (typed === undefined) throw new Error("the code field was never typed into");
    const receivedAt = Date.parse(used.received_at);
    samples.push(typed - receivedAt);
    sentToTyped.push(typed - (await sentAt(live, handle)));
    if (endedAt !== undefined) signedIn.push(endedAt - receivedAt);
    if (live.history(created.json.id).some((seen) => seen.status === "needs_input")) pausedMailToTyped.push(typed - receivedAt);
    else atHand += 1;
  }
  return {
    signIns: samples.length,
    medianMs: median(samples),
    p99Ms: percentile(samples, 99),
    maxMs: Math.max(...samples),
    atHand,
    signedInMs: median(signedIn),
    sentToTypedMs: median(sentToTyped),
    pausedMailToTypedMs: pausedMailToTyped.length > 0 ? median(pausedMailToTyped) : Number.NaN,
  };
}

function startFlooder(): { child: ChildProcess; ready: Promise<void>; flood(command: Omit<FloodCommand, "type">): Promise<FloodResult> } {
  const child = fork(join(import.meta.dirname, "inbox-flood.ts"), [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  let pending: { resolve: (result: FloodResult) => void; reject: (error: Error) => void } | undefined;
  let readied: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (readied = resolve));
  child.on("message", (message: { type: string }) => {
    if (message.type === "ready") readied();
    if (message.type === "done") pending?.resolve(message as FloodResult);
  });
  child.on("exit", (code) => pending?.reject(new Error(`the flood process exited (${code})`)));
  return {
    child,
    ready,
    flood(command) {
      return new Promise((resolve, reject) => {
        pending = { resolve, reject };
        child.send({ type: "flood", ...command });
      });
    },
  };
}

async function storedMessages(live: LiveService, accounts: readonly string[]): Promise<number> {
  let count = 0;
  for (const id of accounts) count += ((await live.api("GET", `/v1/accounts/${id}/messages`)).json.data as unknown[]).length;
  return count;
}

export async function inboxFigures(): Promise<InboxFigures> {
  const live = await startLiveService({
    inbox: true,
    env: { ACTION_SERVICE_MAX_CONCURRENT_ACTIONS: "16", ACTION_SERVICE_FREE_CREDITS: "1000000", ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "1000000" },
  });
  const flooder = startFlooder();
  try {
    const accounts: string[] = [];
    const typed = await mailToTyped(live, accounts);
    const raw = await rawSentToTyped(live);

    const workers = await connectedAccounts(live, 16);
    accounts.push(...workers);
    await postRate(live, workers, 1); // warm-up
    await flooder.ready;
    const storedBefore = await storedMessages(live, accounts);
    const port = live.config.smtp.port!;
    const domain = live.server.service.engine.inbox.mailDomain;
    let quietMs = 0;
    let busyMs = 0;
    let floodMs = 0;
    const rcptCodes: Record<string, number> = {};
    let accepted = 0;
    let dropped = 0;
    // Alternating rounds, quiet first: each flood is paced to last as long as the quiet round before it.
    for (let round = 0; round < FLOOD_ROUNDS; round++) {
      const quiet = (workers.length * 2) / (await postRate(live, workers));
      quietMs += quiet * 1000;
      const flooding = flooder.flood({ port, domain, mails: FLOOD_MAILS, connections: FLOOD_CONNECTIONS, perSecond: FLOOD_PER_SECOND ?? FLOOD_MAILS / quiet });
      const busy = (workers.length * 2) / (await postRate(live, workers));
      busyMs += busy * 1000;
      const result = await flooding;
      floodMs += result.ms;
      for (const [code, count] of Object.entries(result.rcptCodes)) rcptCodes[code] = (rcptCodes[code] ?? 0) + count;
      accepted += result.accepted;
      dropped += result.dropped;
    }
    const storedAfter = await storedMessages(live, accounts);
    const posts = workers.length * 2 * FLOOD_ROUNDS;
    const quiet = (posts / quietMs) * 1000;
    const busy = (posts / busyMs) * 1000;
    return {
      ...typed,
      rawSentToTypedMs: median(raw.sent),
      rawSentToTypedP99Ms: percentile(raw.sent, 99),
      rawMedianMs: median(raw.accepted),
      rawP99Ms: percentile(raw.accepted, 99),
      quiet,
      busy,
      ratio: busy / quiet,
      floodMails: FLOOD_MAILS * FLOOD_ROUNDS,
      rcptCodes,
      accepted,
      dropped,
      floodCover: floodMs / busyMs,
      floodPerSecond: ((FLOOD_MAILS * FLOOD_ROUNDS) / floodMs) * 1000,
      storedBefore,
      storedAfter,
    };
  } finally {
    flooder.child.kill();
    await live.close();
  }
}
