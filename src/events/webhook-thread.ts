import { Worker } from "node:worker_threads";
import type { Store, StoreLocation } from "../store/index.js";
import type { DispatcherOptions } from "./webhook-dispatcher.js";
import type { Logger } from "../engine/logger.js";
import type { WorkerInput, WorkerMessage } from "./webhook-worker.js";
import { answerWrite, type WriteRequest } from "./webhook-writes.js";

/** Where the delivery thread opens its own connection to the store (for reads: its writes are the main thread's). */
export interface ThreadStore {
  location: StoreLocation;
  masterKey: Buffer;
}

const RESTART_AFTER_MS = 1_000;
const STOP_TIMEOUT_MS = 15_000;

/** Under the test runner the engine runs from its TypeScript sources, which the thread loads through tsx. */
const FROM_SOURCE = import.meta.url.endsWith(".ts");
const ENTRY = new URL(`./webhook-worker.${FROM_SOURCE ? "ts" : "js"}`, import.meta.url);

/**
 * Runs the webhook dispatcher on its own thread, at a lower CPU priority than the process's other
 * threads: reading, signing and sending deliveries never wait on the event loop that drives the
 * pages, and on a busy machine the pages come first (a backlog of deliveries is worked off once the
 * load passes). Its writes (claims, records) it asks of this thread, which does them on the
 * engine's connection: a thread starved of CPU while holding the write lock would make every
 * request wait for it (priority inversion). A thread that dies is started again.
 *
 * The thread starts with the first delivery there is to send, not with the service: a service with
 * no webhook endpoints (most of them, and every `mcp` a desktop client starts) never loads a
 * second copy of the store and its modules (about half a second of CPU and a heap of its own).
 */
export class WebhookThread {
  #worker: Worker | undefined;
  /** Between `start()` and `stop()`: a kick then starts the thread if it is not running. */
  #delivering = false;
  #restart: NodeJS.Timeout | undefined;

  constructor(
    /** The engine's store, on which this thread does the delivery thread's writes. */
    private readonly main: Store,
    private readonly store: ThreadStore,
    private readonly options: DispatcherOptions,
    private readonly logger: Logger,
    private readonly publicUrl: () => string,
  ) {}

  /**
   * Deliveries may be sent from now on. What was left due while no process ran starts the thread
   * now; anything later starts it with its kick (a delivery queued here, the heartbeat's survey
   * finding one due, a retry asked for).
   */
  start(): void {
    this.#delivering = true;
    this.main.webhooks.nextDue().then(
      (due) => {
        if (due !== undefined) this.kick();
      },
      (error: unknown) => this.logger.warn({ err: error }, "could not look for webhook deliveries left due; the next heartbeat does"),
    );
  }

  #spawn(): void {
    const input: WorkerInput = {
      location: this.store.location,
      masterKey: this.store.masterKey,
      options: this.options,
      logLevel: this.logger.level,
      publicUrl: this.publicUrl(),
    };
    const worker = FROM_SOURCE
      ? new Worker(`import("tsx/esm/api").then(({ register }) => { register(); return import(${JSON.stringify(ENTRY.href)}); });`, { eval: true, workerData: input })
      : new Worker(ENTRY, { workerData: input });
    this.#worker = worker;
    // The thread's only messages are write requests: each is one short transaction here, answered by id.
    worker.on("message", (request: WriteRequest) => {
      answerWrite(this.main, request)
        .then((reply) => worker.postMessage(reply))
        .catch((error: unknown) => this.logger.warn({ err: error }, "the answer to a webhook delivery write could not be sent to the delivery thread"));
    });
    worker.on("error", (error) => this.logger.warn({ err: error }, "the webhook delivery thread failed; it is started again"));
    worker.on("exit", (code) => {
      if (this.#worker === worker) this.#worker = undefined;
      if (!this.#delivering) return;
      this.logger.warn({ code }, "the webhook delivery thread ended; it is started again");
      this.#restart = setTimeout(() => this.#restarted(), RESTART_AFTER_MS);
      this.#restart.unref();
    });
  }

  #restarted(): void {
    this.#restart = undefined;
    if (this.#delivering && !this.#worker) this.#spawn();
  }

  /** A committed change has deliveries due: the thread looks now rather than at its next tick. */
  kick(): void {
    if (this.#worker) this.#send({ type: "kick" });
    // A new thread looks at once (its dispatcher's start); one restarting after a failure looks when it is back.
    else if (this.#delivering && this.#restart === undefined) this.#spawn();
  }

  setPublicUrl(url: string): void {
    this.#send({ type: "public-url", url });
  }

  /** Lets the deliveries in flight finish and be recorded, then ends the thread. */
  async stop(): Promise<void> {
    this.#delivering = false;
    clearTimeout(this.#restart);
    this.#restart = undefined;
    const worker = this.#worker;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
    worker.postMessage({ type: "stop" } satisfies WorkerMessage);
    const timer = setTimeout(() => void worker.terminate(), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }

  #send(message: WorkerMessage): void {
    this.#worker?.postMessage(message);
  }
}
