/**
 * Figure (k), events (DESIGN §13): 16 warm accounts posting twice each while another process puts
 * `BENCH_EVENTS_PER_SECOND` (1,000) events a second into the same outbox ÷ the same with no writer,
 * in alternating rounds; meanwhile a webhook endpoint takes every event (one delivery each) and an
 * SSE client reads `GET /v1/events`, and what each got per second is reported beside the ratio.
 */
import { fork, type ChildProcess } from "node:child_process";
import { setPriority } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import { startLiveService, type LiveService } from "../test/helpers/live-service.js";
import type { ConsumerCommand, ConsumerReport, WriterCommand, WriterReport } from "./event-load-peers.js";
import { connectedAccounts, user } from "./execution.js";

const SERVICE_ENV = {
  ACTION_SERVICE_MAX_CONCURRENT_ACTIONS: "16",
  ACTION_SERVICE_FREE_CREDITS: "1000000",
  ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "1000000",
  // The receiver is on 127.0.0.1.
  ACTION_SERVICE_WEBHOOK_ALLOW_PRIVATE: "true",
};
/** Accounts whose statuses the writer flips: deliveries go in order per subject, so one would serialise them. */
const SUBJECTS = 64;
/** `BENCH_EVENT_WEBHOOK=0`: no endpoint, so no deliveries (the outbox and the stream alone, to tell the dispatcher's share). */
const WEBHOOK = process.env.BENCH_EVENT_WEBHOOK !== "0";
/** The writer runs this long before the posts start, so the posts meet the load at its steady state. */
const LEAD_MS = 2_000;
/** A loaded round's backlog (deliveries, the stream) is worked off before the next round; past this it is reported as left. */
const DRAIN_TIMEOUT_MS = Number(process.env.BENCH_EVENT_DRAIN_SECONDS ?? 300) * 1000;
/**
 * The writer and the outside world run ahead of the service and its Chromium (nice -10 when this
 * process may raise priorities): on a machine that 16 busy pages already fill, a writer given an
 * equal share falls short of its rate, and the figure is about actions under the events asked
 * for, not under whatever the writer could get.
 */
const PEER_PRIORITY = -10;

export interface EventLoad {
  /** Actions (succeeded posts) per second with no writer, and with it. */
  quiet: number;
  busy: number;
  ratio: number;
  /** Posts that failed (by error code); requests answered 503 (database busy), and requests whose connection broke, sent again; in each condition. */
  failed: { quiet: Record<string, number>; busy: Record<string, number> };
  refused: { quiet: number; busy: number };
  broken: { quiet: number; busy: number };
  /** Events per second the writer put into the outbox, over all loaded rounds and in the slowest round. */
  eventsPerSecond: number;
  slowestRoundEventsPerSecond: number;
  /** The writer's CPU (cores) and how often a write found the database locked past the busy timeout. */
  writerCpu: number;
  /** The receiver and stream client's CPU (cores), and the service process's (its delivery thread included), during the loaded rounds and alone: where the two cores went. */
  consumerCpu: number;
  serviceCpu: { quiet: number; busy: number };
  writerBusyRetries: number;
  /** Deliveries the receiver got (undefined with no endpoint), and events the SSE client read, per second during the loaded rounds. */
  deliveriesPerSecond: number | undefined;
  streamedPerSecond: number;
  /** The most deliveries still pending at the end of a loaded round, and the longest it took to send them and stream the rest. */
  backlog: number;
  drainSeconds: number;
  /** Loaded rounds whose backlog was not worked off within BENCH_EVENT_DRAIN_SECONDS. */
  undrained: number;
  /**
   * The service process's event-loop delay (p99, ms) during the rounds alone and the loaded ones:
   * Playwright's side of every page (and here the sandbox) runs on that loop, so what blocks it delays pages.
   */
  loopDelayP99Ms: { quiet: number; busy: number };
}

function peer(role: "writer" | "consumer"): ChildProcess {
  const child = fork(join(import.meta.dirname, "event-load-peers.ts"), [role], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  try {
    setPriority(child.pid!, PEER_PRIORITY);
  } catch (error) {
    console.log(`(k) the ${role} keeps the default priority (${(error as Error).message}): it may fall short of its rate`);
  }
  return child;
}

/** Sends a command to a peer and resolves with its next report of type `type`. */
function ask<R extends { type: string }, T extends R["type"]>(child: ChildProcess, command: WriterCommand | ConsumerCommand, type: T): Promise<Extract<R, { type: T }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: R): void => {
      if (message.type !== type) return;
      settle();
      resolve(message as Extract<R, { type: T }>);
    };
    const onExit = (code: number | null): void => {
      settle();
      reject(new Error(`the ${child.spawnargs.at(-1)} process exited (${code}) before answering ${command.type}`));
    };
    const settle = (): void => {
      child.off("message", onMessage);
      child.off("exit", onExit);
    };
    child.on("message", onMessage);
    child.on("exit", onExit);
    child.send(command);
  });
}

const counted = (consumer: ChildProcess): Promise<Extract<ConsumerReport, { type: "counted" }>> => ask<ConsumerReport, "counted">(consumer, { type: "count" }, "counted");

/** Deliveries not yet sent (read-only, on the service's own connection). */
async function pendingDeliveries(live: LiveService): Promise<number> {
  return live.server.service.store.webhooks.pendingCount();
}

let serial = 0;

/**
 * One post as a client that follows the API makes it: with an Idempotency-Key, so that a request
 * whose connection broke is sent again safely, and a 503 (the database locked by another process
 * past the busy timeout; nothing was changed) is sent again after its Retry-After. A post that
 * fails is counted, not thrown: under load that is a result.
 */
async function post(live: LiveService, accountId: string): Promise<{ refused: number; broken: number; failure: string | undefined }> {
  const body = { account_id: accountId, type: "post", params: { text: `events ${Date.now()}-${++serial}` } };
  const headers = { "idempotency-key": `bench-g-${process.pid}-${serial}` };
  let refused = 0;
  let broken = 0;
  const send = async (method: string, path: string, payload?: unknown): Promise<Awaited<ReturnType<LiveService["api"]>>> => {
    for (;;) {
      const response = await live.api(method, path, payload, { headers }).catch((error: unknown) => {
        broken += 1;
        if (broken > 5) throw error;
        return undefined;
      });
      if (response && response.status !== 503) return response;
      if (response) refused += 1;
      await new Promise((resolve) => setTimeout(resolve, Number(response?.headers.get("retry-after") ?? 1) * 1000));
    }
  };
  let action = (await send("POST", "/v1/actions?wait=30", body)).json;
  if (!action?.id) throw new Error(`POST /v1/actions: ${JSON.stringify(action)}`);
  while (action.status === "queued" || action.status === "running") action = (await send("GET", `/v1/actions/${action.id}?wait=30`)).json;
  return { refused, broken, failure: action.status === "succeeded" ? undefined : (action.error?.code ?? action.status) };
}

interface Round {
  succeeded: number;
  seconds: number;
  /** Requests answered 503, and requests whose connection broke, each sent again. */
  refused: number;
  broken: number;
  failed: Record<string, number>;
}

/** Every worker posts `perAccount` times, all at once (rounds are summed by time, as (c) does), the loop's delay recorded meanwhile. */
async function timedRound(live: LiveService, workers: readonly string[], perAccount: number, loop: IntervalHistogram): Promise<Round> {
  const round: Round = { succeeded: 0, seconds: 0, refused: 0, broken: 0, failed: {} };
  const start = performance.now();
  loop.enable();
  try {
    await Promise.all(
      workers.map(async (id) => {
        for (let i = 0; i < perAccount; i++) {
          const { refused, broken, failure } = await post(live, id);
          round.refused += refused;
          round.broken += broken;
          if (failure) round.failed[failure] = (round.failed[failure] ?? 0) + 1;
          else round.succeeded += 1;
        }
      }),
    );
  } finally {
    loop.disable();
  }
  round.seconds = (performance.now() - start) / 1000;
  return round;
}

function add(total: Round, round: Round): void {
  total.succeeded += round.succeeded;
  total.seconds += round.seconds;
  total.refused += round.refused;
  total.broken += round.broken;
  for (const [code, count] of Object.entries(round.failed)) total.failed[code] = (total.failed[code] ?? 0) + count;
}

export async function eventLoad(rounds = Number(process.env.BENCH_EVENT_ROUNDS ?? 3), perSecond = Number(process.env.BENCH_EVENTS_PER_SECOND ?? 1_000)): Promise<EventLoad> {
  const live = await startLiveService({ env: SERVICE_ENV });
  const writer = peer("writer");
  const consumer = peer("consumer");
  try {
    const workers = await connectedAccounts(live, 16);
    // The writer's subjects are accounts of their own: the workers' runs never see its changes.
    const subjects = await Promise.all(Array.from({ length: SUBJECTS }, async () => live.account(await user(live))));
    const { store } = live.server.service;
    const workspaceId = (await store.accounts.get(workers[0]!))!.workspace_id;
    const { receiverUrl } = await ask<ConsumerReport, "listening">(consumer, { type: "connect", serviceUrl: live.url, key: live.key }, "listening");
    const hook = WEBHOOK ? await live.api("POST", "/v1/webhooks", { url: receiverUrl }) : undefined;
    if (hook && hook.status !== 201) throw new Error(`POST /v1/webhooks: ${hook.status} ${JSON.stringify(hook.json)}`);
    await ask<WriterReport, "opened">(writer, { type: "open", dataDir: live.config.dataDir, accountIds: subjects }, "opened");
    await timedRound(live, workers, 1, monitorEventLoopDelay()); // warm-up

    const loops = { quiet: monitorEventLoopDelay({ resolution: 10 }), busy: monitorEventLoopDelay({ resolution: 10 }) };
    const quiet: Round = { succeeded: 0, seconds: 0, refused: 0, broken: 0, failed: {} };
    const busy: Round = { succeeded: 0, seconds: 0, refused: 0, broken: 0, failed: {} };
    const written = { events: 0, seconds: 0, cpuSeconds: 0, busyRetries: 0, slowest: Number.POSITIVE_INFINITY };
    const received = { deliveries: 0, streamed: 0, seconds: 0, consumerCpuSeconds: 0 };
    const serviceCpu = { quiet: 0, quietSeconds: 0, busy: 0, busySeconds: 0 };
    const processCpu = (): number => {
      const used = process.cpuUsage();
      return (used.user + used.system) / 1e6;
    };
    let backlog = 0;
    let drainSeconds = 0;
    let undrained = 0;
    for (let round = 0; round < rounds; round++) {
      const quietCpu = processCpu();
      const alone = await timedRound(live, workers, 2, loops.quiet);
      serviceCpu.quiet += processCpu() - quietCpu;
      serviceCpu.quietSeconds += alone.seconds;
      add(quiet, alone);

      const before = await counted(consumer);
      const busyCpu = processCpu();
      const started = performance.now();
      const stopped = ask<WriterReport, "stopped">(writer, { type: "start", perSecond }, "stopped");
      // Awaited below; should the posts throw first, theirs is the error to see, not the writer's exit.
      stopped.catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, LEAD_MS));
      const loaded = await timedRound(live, workers, 2, loops.busy);
      writer.send({ type: "stop" } satisfies WriterCommand);
      const { events, seconds, cpuSeconds, busyRetries } = await stopped;
      const after = await counted(consumer);
      const windowSeconds = (performance.now() - started) / 1000;
      serviceCpu.busy += processCpu() - busyCpu;
      serviceCpu.busySeconds += windowSeconds;
      received.consumerCpuSeconds += after.cpuSeconds - before.cpuSeconds;
      add(busy, loaded);
      written.events += events;
      written.seconds += seconds;
      written.cpuSeconds += cpuSeconds;
      written.busyRetries += busyRetries;
      written.slowest = Math.min(written.slowest, events / seconds);
      received.deliveries += after.deliveries - before.deliveries;
      received.streamed += after.streamed - before.streamed;
      received.seconds += windowSeconds;

      // The next quiet round must not inherit this one's work: every delivery sent, the stream at the newest event.
      const left = await pendingDeliveries(live);
      backlog = Math.max(backlog, left);
      const drainStart = performance.now();
      const caughtUp = async (): Promise<boolean> => {
        const { lastEventId } = await counted(consumer);
        return (await pendingDeliveries(live)) === 0 && lastEventId !== undefined && lastEventId === (await store.events.newest(workspaceId))?.id;
      };
      // Looked at once a second: counting a backlog of 100,000 rows is itself work on the service's loop.
      while (!(await caughtUp())) {
        if (performance.now() - drainStart > DRAIN_TIMEOUT_MS) {
          undrained += 1;
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
      const drained = (performance.now() - drainStart) / 1000;
      drainSeconds = Math.max(drainSeconds, drained);
      const failures = (failed: Record<string, number>): string => Object.entries(failed).map(([code, count]) => `${count} ${code}`).join(", ") || "none";
      console.log(
        `(k) round ${round + 1}: ${(alone.succeeded / alone.seconds).toFixed(2)} actions/s alone (failed: ${failures(alone.failed)}; sent again: ${alone.refused} 503, ${alone.broken} broken), ` +
          `${(loaded.succeeded / loaded.seconds).toFixed(2)} with ${(events / seconds).toFixed(0)} events/s written (failed: ${failures(loaded.failed)}; sent again: ${loaded.refused} 503, ${loaded.broken} broken); ` +
          `${((after.deliveries - before.deliveries) / windowSeconds).toFixed(0)} deliveries/s, ${((after.streamed - before.streamed) / windowSeconds).toFixed(0)} streamed/s; ` +
          `${left} deliveries pending after, worked off in ${drained.toFixed(1)} s`,
      );
    }
    const quietRate = quiet.succeeded / quiet.seconds;
    const busyRate = busy.succeeded / busy.seconds;
    return {
      quiet: quietRate,
      busy: busyRate,
      ratio: busyRate / quietRate,
      failed: { quiet: quiet.failed, busy: busy.failed },
      refused: { quiet: quiet.refused, busy: busy.refused },
      broken: { quiet: quiet.broken, busy: busy.broken },
      eventsPerSecond: written.events / written.seconds,
      slowestRoundEventsPerSecond: written.slowest,
      writerCpu: written.cpuSeconds / written.seconds,
      writerBusyRetries: written.busyRetries,
      consumerCpu: received.consumerCpuSeconds / received.seconds,
      serviceCpu: { quiet: serviceCpu.quiet / serviceCpu.quietSeconds, busy: serviceCpu.busy / serviceCpu.busySeconds },
      deliveriesPerSecond: WEBHOOK ? received.deliveries / received.seconds : undefined,
      streamedPerSecond: received.streamed / received.seconds,
      backlog,
      drainSeconds,
      undrained,
      loopDelayP99Ms: { quiet: loops.quiet.percentile(99) / 1e6, busy: loops.busy.percentile(99) / 1e6 },
    };
  } finally {
    writer.kill();
    consumer.kill();
    await live.close();
  }
}
