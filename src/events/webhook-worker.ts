/**
 * The webhook delivery thread's entry (`webhook-thread.ts` starts it): its own store (`openStore`,
 * read-only on SQLite), the dispatcher, and a lower CPU priority for this thread alone. Its claims
 * and records are asked of the main thread (`webhook-writes.ts`), on SQLite and PostgreSQL alike,
 * so this thread never holds a write lock.
 */
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";
import { parentPort, workerData, type MessagePort } from "node:worker_threads";
import { Sealer, openStore, type StoreLocation } from "../store/index.js";
import { systemClock } from "../engine/clock.js";
import { createLogger } from "../engine/logger.js";
import { WebhookDispatcher, type DispatcherOptions } from "./webhook-dispatcher.js";
import { writeThrough } from "./webhook-writes.js";

export interface WorkerInput {
  location: StoreLocation;
  masterKey: Uint8Array;
  options: DispatcherOptions;
  logLevel: string;
  publicUrl: string;
}

export type WorkerMessage = { type: "kick" } | { type: "public-url"; url: string } | { type: "stop" };

/** Deliveries yield the CPU to the pages: nice 10 for this thread (Linux sets priorities per thread). */
const NICE = 10;

function lowerPriority(): void {
  try {
    const threadId = Number(readlinkSync("/proc/thread-self").split("/").pop());
    setPriority(threadId, NICE);
  } catch {
    // Not Linux, or not allowed: the thread runs at the process's priority.
  }
}

async function run(port: MessagePort, input: WorkerInput): Promise<void> {
  lowerPriority();
  const store = await openStore(input.location, new Sealer(Buffer.from(input.masterKey)));
  // A thread starved of CPU must never hold the write lock the requests wait for (priority
  // inversion): on SQLite, SQLite itself refuses any write on this connection; reads never block
  // the writer in WAL mode. (PostgreSQL has no single write lock; the writes still go to the main thread.)
  store.sqlite?.pragma("query_only = ON");
  let publicUrl = input.publicUrl;
  const logger = createLogger(input.logLevel);
  const parts = { store, write: writeThrough(port), clock: systemClock, logger, publicUrl: () => publicUrl };
  const dispatcher = new WebhookDispatcher(parts, input.options);
  dispatcher.start();
  port.on("message", (message: WorkerMessage | { type: "written" }) => {
    if (message.type === "kick") dispatcher.kick();
    else if (message.type === "public-url") publicUrl = message.url;
    else if (message.type === "stop")
      void dispatcher
        .stop()
        .then(() => store.close())
        .catch((error: unknown) => logger.warn({ err: error }, "the webhook delivery thread did not close its store cleanly"))
        .finally(() => port.close());
  });
}

if (parentPort) {
  const port = parentPort;
  run(port, workerData as WorkerInput).catch((error: unknown) => {
    // The thread ends; the engine's WebhookThread starts it again.
    console.error(`webhook delivery thread: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
