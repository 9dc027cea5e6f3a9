/**
 * The webhook delivery thread's entry (`webhook-thread.ts` starts it): a read-only connection to the
 * store, the dispatcher, and a lower CPU priority for this thread alone. Its claims and records are
 * asked of the main thread (`webhook-writes.ts`), so this thread never holds the write lock.
 */
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";
import { parentPort, workerData } from "node:worker_threads";
import { Sealer, Store, openDatabase } from "../store/index.js";
import { systemClock } from "./clock.js";
import { createLogger } from "./logger.js";
import { WebhookDispatcher, type DispatcherOptions } from "./webhook-dispatcher.js";
import { writeThrough } from "./webhook-writes.js";

export interface WorkerInput {
  databaseFile: string;
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

if (parentPort) {
  const port = parentPort;
  const input = workerData as WorkerInput;
  lowerPriority();
  const store = new Store(openDatabase(input.databaseFile), new Sealer(Buffer.from(input.masterKey)));
  // A thread starved of CPU must never hold the write lock the requests wait for (priority
  // inversion): SQLite itself refuses any write on this connection; reads never block the writer in WAL mode.
  store.db.pragma("query_only = ON");
  let publicUrl = input.publicUrl;
  const parts = { store, write: writeThrough(port), clock: systemClock, logger: createLogger(input.logLevel), publicUrl: () => publicUrl };
  const dispatcher = new WebhookDispatcher(parts, input.options);
  dispatcher.start();
  port.on("message", (message: WorkerMessage | { type: "written" }) => {
    if (message.type === "kick") dispatcher.kick();
    else if (message.type === "public-url") publicUrl = message.url;
    else if (message.type === "stop")
      void dispatcher.stop().finally(() => {
        store.close();
        port.close();
      });
  });
}
