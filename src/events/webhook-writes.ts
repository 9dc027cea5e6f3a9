import type { MessagePort } from "node:worker_threads";
import { retryWhileBusy } from "../store/index.js";
import type { Store, WebhookDeliveryRecord } from "../store/index.js";
import type { AttemptResult } from "./webhook-target.js";

/** After a failed attempt, the wait before the next: the first retry within 10 s, then growing. */
export const RETRY_DELAYS_MS = [5, 30, 120, 600, 1_800, 3_600, 7_200, 14_400, 28_800, 43_200].map((seconds) => seconds * 1000);
/** A delivery is retried this long (≥ 24 h) before it is given up… */
export const GIVE_UP_AFTER_MS = 72 * 60 * 60 * 1000;
/** …and an endpoint whose every attempt has failed this long is disabled. */
export const DISABLE_AFTER_MS = 72 * 60 * 60 * 1000;

/** One delivery sent, and what its endpoint answered. */
export type Attempt = { delivery: WebhookDeliveryRecord; result: AttemptResult };

/**
 * Every write webhook delivery makes, each one short transaction on the store it is given: the
 * dispatcher's claims (a lease, so several processes share the work) and the outcomes of its
 * attempts. Times are the dispatcher's (its clock), passed in as ISO strings.
 */
export const DELIVERY_WRITES = {
  // The claim locks the rows it takes (`FOR UPDATE SKIP LOCKED` on PostgreSQL), as the lifecycle's
  // claim does: coordinators claiming at once take different deliveries rather than fail and retry.
  claim: (store: Store, input: { runnerId: string; now: string; leaseUntil: string; limit: number }): Promise<WebhookDeliveryRecord[]> =>
    store.transaction(() => store.webhooks.claimDue(input.now, input.runnerId, input.leaseUntil, input.limit), { locksRows: true }),
  record: (store: Store, input: { runnerId: string; now: string; retryDelaysMs: readonly number[] | undefined; attempts: readonly Attempt[] }): Promise<void> =>
    store.transaction(() => recordAttempts(store, input)),
};

type Writes = typeof DELIVERY_WRITES;
export type WriteName = keyof Writes;
export type WriteInput<N extends WriteName> = Parameters<Writes[N]>[1];
export type WriteOutput<N extends WriteName> = Awaited<ReturnType<Writes[N]>>;

/** How the dispatcher has its writes done: on its own connection, or by the main thread for the delivery thread. */
export type DeliveryWriter = <N extends WriteName>(name: N, input: WriteInput<N>) => Promise<WriteOutput<N>>;

/** Writes on `store`'s connection; a lock held by another program is waited out between turns of the event loop. */
export function writeHere(store: Store): DeliveryWriter {
  return <N extends WriteName>(name: N, input: WriteInput<N>) => {
    const write = DELIVERY_WRITES[name] as (store: Store, input: WriteInput<N>) => Promise<WriteOutput<N>>;
    return retryWhileBusy(() => write(store, input));
  };
}

/** A write the delivery thread asks of the main thread, and the answer it gets back (by id). */
export type WriteRequest = { [N in WriteName]: { type: "write"; id: number; name: N; input: WriteInput<N> } }[WriteName];
export type WriteReply = { type: "written"; id: number; output?: unknown; error?: string };

/** The main thread's side: does the write asked for on its own connection, and answers it. */
export async function answerWrite(store: Store, request: WriteRequest): Promise<WriteReply> {
  try {
    return { type: "written", id: request.id, output: await writeHere(store)(request.name, request.input) };
  } catch (error) {
    return { type: "written", id: request.id, error: error instanceof Error ? error.message : String(error) };
  }
}

/** The delivery thread's side: each write is asked of the main thread over `port` and its answer awaited. */
export function writeThrough(port: MessagePort): DeliveryWriter {
  const waiting = new Map<number, { resolve: (output: never) => void; reject: (error: Error) => void }>();
  let lastId = 0;
  port.on("message", (message: { type: string }) => {
    if (message.type !== "written") return;
    const reply = message as WriteReply;
    const waiter = waiting.get(reply.id);
    waiting.delete(reply.id);
    if (reply.error !== undefined) waiter?.reject(new Error(`a delivery write on the main thread failed: ${reply.error}`));
    else waiter?.resolve(reply.output as never);
  });
  return <N extends WriteName>(name: N, input: WriteInput<N>) =>
    new Promise<WriteOutput<N>>((resolve, reject) => {
      const id = ++lastId;
      waiting.set(id, { resolve, reject });
      port.postMessage({ type: "write", id, name, input } as WriteRequest);
    });
}

/** Each attempt's outcome: delivered, or retried after the next delay (given up after 3 days); the endpoint's health with it. */
async function recordAttempts(store: Store, input: WriteInput<"record">): Promise<void> {
  const now = Date.parse(input.now);
  const delays = input.retryDelaysMs ?? RETRY_DELAYS_MS;
  await store.webhooks.lockEndpoints(input.attempts.map(({ delivery }) => delivery.endpoint_id));
  for (const { delivery, result } of input.attempts) {
    const status = "status" in result ? result.status : undefined;
    const error = "error" in result ? result.error : undefined;
    if (status !== undefined && status >= 200 && status < 300) {
      await store.webhooks.recordAttempt(delivery.id, input.runnerId, { state: "succeeded", status, error: undefined, nextAttemptAt: input.now, now: input.now });
      await store.webhooks.markHealthy(delivery.endpoint_id);
      continue;
    }
    const givenUp = now - Date.parse(delivery.created_at) >= GIVE_UP_AFTER_MS;
    const delay = delays[Math.min(delivery.attempts, delays.length - 1)]!;
    await store.webhooks.recordAttempt(delivery.id, input.runnerId, {
      state: givenUp ? "failed" : "pending",
      status,
      error,
      nextAttemptAt: new Date(now + delay).toISOString(),
      now: input.now,
    });
    await store.webhooks.markFailing(delivery.endpoint_id, input.now);
    const endpoint = await store.webhooks.endpoint(delivery.endpoint_id);
    if (endpoint?.failing_since && !endpoint.disabled_at && now - Date.parse(endpoint.failing_since) >= DISABLE_AFTER_MS) {
      const reason = `Every delivery since ${endpoint.failing_since} failed (last: ${status !== undefined ? `HTTP ${status}` : error}).`;
      await store.webhooks.disable(endpoint.id, reason, input.now);
    }
  }
}
