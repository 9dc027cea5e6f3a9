/** The load generator of figure (g) (`read-path.ts`): one autocannon run, its result sent back over IPC. */
import autocannon from "autocannon";

process.once("message", async (command: { url: string; headers: Record<string, string>; connections: number; seconds: number }) => {
  const result = await autocannon({ url: command.url, connections: command.connections, duration: command.seconds, headers: command.headers });
  process.send!({ requestsPerSecond: result.requests.average, p99Ms: result.latency.p99, non2xx: result.non2xx }, () => process.exit(0));
});
