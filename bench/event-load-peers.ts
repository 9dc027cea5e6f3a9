/**
 * The two processes beside the service in figure (k) (`bench/event-load.ts`), each its own Node
 * process so that neither runs on the service's event loop, told what to do over IPC:
 *
 * - `writer`: opens the service's SQLite file with the project's `Store` and changes account
 *   statuses at a fixed rate, each in its own transaction, through `updateAccountStatus` (what a
 *   run calls on markConnected / markSignedOut), so each change writes its event and fans it out
 *   to the workspace's webhook endpoints as the service itself would;
 * - `consumer`: the outside world: a webhook receiver on 127.0.0.1 answering 200, and a client
 *   reading `GET /v1/events` (SSE); it counts what each received.
 */
import { createServer } from "node:http";
import { join } from "node:path";
import { updateAccountStatus } from "../src/engine/outbox/index.js";
import { Sealer, Store, loadMasterKey, openStore, retryWhileBusy } from "../src/store/index.js";

/** Bench → writer. */
export type WriterCommand = { type: "open"; dataDir: string; accountIds: string[] } | { type: "start"; perSecond: number } | { type: "stop" };
/** Writer → bench. */
export type WriterReport = { type: "opened" } | { type: "stopped"; events: number; seconds: number; cpuSeconds: number; busyRetries: number };
/** Bench → consumer. */
export type ConsumerCommand = { type: "connect"; serviceUrl: string; key: string } | { type: "count" };
/** Consumer → bench: `lastEventId` is the newest event the stream gave. */
export type ConsumerReport = { type: "listening"; receiverUrl: string } | { type: "counted"; deliveries: number; streamed: number; lastEventId: string | undefined; cpuSeconds: number };

const send = (message: WriterReport | ConsumerReport): void => void process.send!(message);

function writer(): void {
  let store: Store | undefined;
  let accountIds: string[] = [];
  let stopping = false;
  process.on("message", (command: WriterCommand) => {
    if (command.type === "open") {
      void openStore({ sqliteFile: join(command.dataDir, "action-service.db") }, new Sealer(loadMasterKey(command.dataDir, undefined))).then((opened) => {
        store = opened;
        accountIds = command.accountIds;
        send({ type: "opened" });
      });
    } else if (command.type === "start") {
      stopping = false;
      void writeAtRate(store!, accountIds, command.perSecond, () => stopping).then(send);
    } else {
      stopping = true;
    }
  });
}

/**
 * Flips accounts between connected and signed_out, round robin over `accountIds` (several
 * subjects, as many accounts' changes are: deliveries are in order per subject), one transaction
 * per change. Paced against the clock: whatever is due (one more than the elapsed time times the
 * rate, so the rate achieved is never under the one asked for while the writes keep up) is written
 * at each tick, so time lost to a lock is made up rather than dropped.
 */
async function writeAtRate(store: Store, accountIds: readonly string[], perSecond: number, stopping: () => boolean): Promise<WriterReport> {
  let events = 0;
  let busyRetries = 0;
  const start = performance.now();
  const cpu = process.cpuUsage();
  while (!stopping()) {
    const due = Math.floor(((performance.now() - start) / 1000) * perSecond) + 1;
    while (events < due) {
      const accountId = accountIds[events % accountIds.length]!;
      await retryWhileBusy(
        async () =>
          store.transaction(async () => {
            const status = (await store.accounts.get(accountId))!.status === "connected" ? "needs_auth" : "connected";
            await updateAccountStatus(store, accountId, { status }, new Date().toISOString());
          }),
        { onBusy: () => void (busyRetries += 1) },
      );
      events += 1;
    }
    // A macrotask between batches, so the stop command is heard.
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  const used = process.cpuUsage(cpu);
  return { type: "stopped", events, seconds: (performance.now() - start) / 1000, cpuSeconds: (used.user + used.system) / 1e6, busyRetries };
}

function consumer(): void {
  let deliveries = 0;
  let streamed = 0;
  let lastEventId: string | undefined;
  const receiver = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      deliveries += 1;
      response.writeHead(200).end();
    });
  });
  process.on("message", async (command: ConsumerCommand) => {
    if (command.type === "count") {
      const used = process.cpuUsage();
      send({ type: "counted", deliveries, streamed, lastEventId, cpuSeconds: (used.user + used.system) / 1e6 });
      return;
    }
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const response = await fetch(`${command.serviceUrl}/v1/events`, { headers: { authorization: `Bearer ${command.key}`, accept: "text/event-stream" } });
    if (response.status !== 200 || !response.body) throw new Error(`GET /v1/events: ${response.status}`);
    send({ type: "listening", receiverUrl: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook` });
    // Messages end at a blank line; a comment (keep-alive) has no id and is not counted.
    const decoder = new TextDecoder();
    let pending = "";
    const reader = response.body.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      pending += decoder.decode(chunk.value, { stream: true });
      let end: number;
      while ((end = pending.indexOf("\n\n")) >= 0) {
        const id = /^id: ?(.*)$/m.exec(pending.slice(0, end))?.[1];
        pending = pending.slice(end + 2);
        if (id === undefined) continue;
        streamed += 1;
        lastEventId = id;
      }
    }
  });
}

// The bench gone (ended, killed, timed out), nothing is left to report to: a listening receiver must not outlive it.
process.on("disconnect", () => process.exit(0));
if (process.argv[2] === "writer") writer();
else if (process.argv[2] === "consumer") consumer();
else throw new Error(`usage: event-load-peers.ts writer|consumer (got ${process.argv[2]})`);
