/**
 * (j) The agent's alternative: a signed-in sandbox account posts on the feed through the service's
 * MCP tool `run_action`, and through `@playwright/mcp` driven as an agent drives it (navigate,
 * snapshot, type and click by the refs the snapshot shows, wait for the confirmation). Per post:
 * wall time, tool calls, characters of result text the model reads, and the server's CPU.
 *
 * Every server is a process of its own, apart from this one: `action-service serve` (its Chromium
 * under it), `@playwright/mcp` (its Chromium under it), and the sandbox (counted for neither). A
 * server's CPU is that of its whole process tree (`ProcessTree`), read just before a post and again
 * `SETTLE_MS` after its last tool result, so that work the server finishes after answering is its too.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findChromium } from "../src/browser/executable.js";
import { CLI, freePort, startServe } from "../test/helpers/processes.js";
import { PlaywrightMcpAgent, ServiceAgent, type AgentEra, type PostCost } from "./peer-agents.js";
import { ProcessTree, machineBusyMs, type ExitCheck } from "./peer-tree.js";
import { median } from "./support.js";

const PASSWORD = "sandbox-password";
const SETTLE_MS = 500;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
let serial = 0;
const unique = (label: string): string => `${label} ${Date.now()}-${++serial}`;

/** One side's figures, per measured post. */
export interface SideFigures {
  /** Median wall time of a post, ms: from the first tool call to the last result. */
  wallMs: number;
  calls: number;
  /** Characters of result text the model read, per post (mean). */
  chars: number;
  /**
   * CPU ms of the server's process tree per post (mean), plus any CPU of exited processes that
   * reached no living ancestor (`lostMs`, spread over the posts).
   */
  cpuMs: number;
  /** Of it, the server's own Node process (the rest is its Chromium), per post (mean). */
  nodeCpuMs: number;
  /** CPU ms, over all measured posts, of exited processes not found in an ancestor's cutime+cstime. */
  lostMs: number;
  /** The tree's CPU while no post runs, ms per second. */
  idleCpuMsPerSecond: number;
  /** PSS of the tree after the posts, MB. */
  pssMb: number;
  /** Processes in the tree after the posts, and started per post. */
  processes: number;
  startedPerPost: number;
  exits: ExitCheck;
}

export interface PeerFigures {
  posts: number;
  ours: SideFigures;
  peer: SideFigures;
  /** Posts on the feed page (it shows the 50 newest) before the first measured post and after the last. */
  feed: [number, number];
  /**
   * CPU the rest of the machine used while the posts were measured (neither server, nor the
   * sandbox, nor this process), in cores: other work that slows both sides' wall time.
   */
  otherCores: number;
}

/** `action-service sandbox` as a process of its own, ready once its control API answers. */
async function startSandbox(): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, "sandbox"], { env: { ...process.env, SANDBOX_PORT: String(port) }, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  child.stderr.on("data", (chunk: Buffer) => (log = (log + chunk.toString()).slice(-4_000)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 30_000; ; await sleep(100)) {
    if (child.exitCode !== null) throw new Error(`the sandbox exited (${child.exitCode}): ${log}`);
    if (await fetch(`${url}/_sandbox/settings`).then((response) => response.ok, () => false)) break;
    if (Date.now() > deadline) throw new Error(`the sandbox did not answer: ${log}`);
  }
  return {
    url,
    pid: child.pid!,
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

async function sandboxUser(sandboxUrl: string, label: string): Promise<string> {
  const handle = `${label}${Date.now().toString(36)}${++serial}`;
  const response = await fetch(`${sandboxUrl}/_sandbox/users`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ handle, name: `Bench ${label}`, password: PASSWORD, challenge: "none" }),
  });
  if (response.status !== 201) throw new Error(`sandbox user: ${response.status} ${await response.text()}`);
  return handle;
}

async function postsBy(sandboxUrl: string, handle?: string): Promise<string[]> {
  const response = await fetch(`${sandboxUrl}/_sandbox/posts${handle ? `?author=${handle}` : ""}`);
  return ((await response.json()) as { text: string }[]).map((post) => post.text);
}

/** One side as the rounds see it: its agent's post and its server's tree. */
interface Side {
  tree: ProcessTree;
  post(text: string): Promise<PostCost>;
  samples: { wallMs: number; cpuMs: number; nodeCpuMs: number; calls: number; chars: number }[];
}

async function measuredPost(side: Side, text: string): Promise<void> {
  const { tree } = side;
  const before = tree.snapshot();
  const start = performance.now();
  const cost = await side.post(text);
  const wallMs = performance.now() - start;
  await sleep(SETTLE_MS);
  const after = tree.snapshot();
  side.samples.push({ wallMs, cpuMs: tree.cpuMs(after) - tree.cpuMs(before), nodeCpuMs: tree.rootCpuMs(after) - tree.rootCpuMs(before), ...cost });
}

export async function agentPeer(era: AgentEra = "legacy", posts = Number(process.env.BENCH_PEER_POSTS ?? 10), warmUp = 3): Promise<PeerFigures> {
  const chromium = findChromium(process.env.BROWSER_EXECUTABLE_PATH)?.path;
  if (!chromium) throw new Error("(j) no Chromium found: set BROWSER_EXECUTABLE_PATH");
  const root = mkdtempSync(join(tmpdir(), "action-service-peer-"));
  const cleanup: (() => Promise<unknown>)[] = [async () => rmSync(root, { recursive: true, force: true })];
  try {
    const sandbox = await startSandbox();
    cleanup.unshift(() => sandbox.stop());
    const serve = await startServe({
      dataDir: join(root, "data"),
      sandboxUrl: sandbox.url,
      env: { ACTION_SERVICE_FREE_CREDITS: "100000", ACTION_SERVICE_RATE_LIMIT_PER_MINUTE: "1000000" },
    });
    cleanup.unshift(() => serve.stop());
    const ours = await ServiceAgent.connect(serve.url, serve.firstKey!, era);
    cleanup.unshift(() => ours.close());
    const peer = await PlaywrightMcpAgent.start({ chromium, dir: root });
    cleanup.unshift(() => peer.close());

    const ourHandle = await sandboxUser(sandbox.url, "ours");
    const peerHandle = await sandboxUser(sandbox.url, "peer");
    await ours.connectAccount(ourHandle, PASSWORD);
    await peer.signIn(sandbox.url, peerHandle, PASSWORD);

    const sides = {
      ours: { tree: new ProcessTree(serve.child.pid!), post: (text: string) => ours.post(text), samples: [] } as Side,
      peer: { tree: new ProcessTree(peer.pid), post: (text: string) => peer.post(sandbox.url, text), samples: [] } as Side,
    };
    const texts = { ours: [] as string[], peer: [] as string[] };
    const post = async (name: "ours" | "peer", measure: boolean): Promise<void> => {
      const text = unique(`(j) ${name}`);
      texts[name].push(text);
      if (measure) await measuredPost(sides[name], text);
      else await sides[name].post(text);
    };
    for (let i = 0; i < warmUp; i++) {
      await post("ours", false);
      await post("peer", false);
    }
    await sleep(2_000);
    const idle = await idleRates([sides.ours.tree, sides.peer.tree], 3_000);

    for (const side of Object.values(sides)) side.tree.watch();
    cleanup.unshift(async () => Object.values(sides).forEach((side) => side.tree.stop()));
    const before = [sides.ours.tree.snapshot(), sides.peer.tree.snapshot()] as const;
    const feedBefore = (await postsBy(sandbox.url)).length;
    const sandboxTree = new ProcessTree(sandbox.pid);
    const others = { machine: machineBusyMs(), sandbox: sandboxTree.cpuMs(), bench: process.cpuUsage(), at: performance.now() };
    // Interleaved, the first side alternating, so neither gets a quieter machine or a shorter feed.
    for (let i = 0; i < posts; i++) {
      for (const name of i % 2 === 0 ? (["ours", "peer"] as const) : (["peer", "ours"] as const)) await post(name, true);
    }
    const after = [sides.ours.tree.snapshot(), sides.peer.tree.snapshot()] as const;
    const benchUsed = process.cpuUsage(others.bench);
    const serversMs = sides.ours.tree.cpuMs(after[0]) - sides.ours.tree.cpuMs(before[0]) + sides.peer.tree.cpuMs(after[1]) - sides.peer.tree.cpuMs(before[1]);
    const otherMs = machineBusyMs() - others.machine - serversMs - (sandboxTree.cpuMs() - others.sandbox) - (benchUsed.user + benchUsed.system) / 1000;
    const otherCores = Math.max(0, otherMs) / (performance.now() - others.at);
    const feedAfter = (await postsBy(sandbox.url)).length;

    // Every post is on the platform, by the account that made it.
    for (const [name, handle] of [["ours", ourHandle], ["peer", peerHandle]] as const) {
      const onFeed = new Set(await postsBy(sandbox.url, handle));
      const missing = texts[name].filter((text) => !onFeed.has(text));
      if (missing.length > 0) throw new Error(`(j) ${missing.length} of ${name}'s ${texts[name].length} posts are not on the sandbox: ${missing.join("; ")}`);
    }

    const figures = (name: "ours" | "peer", index: 0 | 1): SideFigures => {
      const { tree, samples } = sides[name];
      const mean = (pick: (sample: Side["samples"][number]) => number): number => samples.reduce((sum, sample) => sum + pick(sample), 0) / samples.length;
      const exits = tree.exits(before[index], after[index]);
      // The last reading of an exited process is below what it used in the end: a shortfall is lost.
      const lostMs = Math.max(0, exits.exitedMs - exits.reapedMs);
      return {
        wallMs: median(samples.map((sample) => sample.wallMs)),
        calls: mean((sample) => sample.calls),
        chars: mean((sample) => sample.chars),
        cpuMs: mean((sample) => sample.cpuMs) + lostMs / posts,
        nodeCpuMs: mean((sample) => sample.nodeCpuMs),
        lostMs,
        idleCpuMsPerSecond: idle[index]!,
        pssMb: tree.pssMb(),
        processes: after[index].processes.size,
        startedPerPost: tree.startedBetween(before[index], after[index]) / posts,
        exits,
      };
    };
    return { posts, ours: figures("ours", 0), peer: figures("peer", 1), feed: [Math.min(50, feedBefore), Math.min(50, feedAfter)], otherCores };
  } finally {
    for (const step of cleanup) await step().catch((error: unknown) => console.error(`(j) cleanup: ${String(error)}`));
  }
}

/** Each tree's CPU over `ms` with nothing asked of it, ms per second. */
async function idleRates(trees: ProcessTree[], ms: number): Promise<number[]> {
  const start = trees.map((tree) => tree.cpuMs());
  await sleep(ms);
  return trees.map((tree, i) => ((tree.cpuMs() - start[i]!) / ms) * 1000);
}
