/**
 * CPU and memory of a process and every process under it (its Chromium: browser, zygotes,
 * renderers, GPU and utility processes), read from /proc (Linux).
 *
 * A process's CPU is utime+stime, plus cutime+cstime: what its children used, added when it reaps
 * them. A tree's CPU is the sum over its living processes, so a renderer that exits is still
 * counted, in the ancestor that reaped it. `ProcessTree.watch()` also samples the tree every few
 * milliseconds and keeps the last reading of each process, so `exits()` can tell whether the time
 * of the processes that exited did reach a living ancestor.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";

const TICK_MS = 1000 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

interface Reading {
  pid: number;
  ppid: number;
  /** utime + stime, ms. */
  own: number;
  /** cutime + cstime (children it reaped), ms. */
  reaped: number;
}

/**
 * CPU ms the whole machine has spent busy since boot, all CPUs: user, nice, system, irq, softirq
 * and steal (in a VM a process's own times include what the host took from it meanwhile).
 */
export function machineBusyMs(): number {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync("/proc/stat", "utf8").split("\n")[0]!.split(/\s+/).slice(1).map(Number);
  return (user! + nice! + system! + irq! + softirq! + steal!) * TICK_MS;
}

/** The tree's processes at one moment, by `pid:starttime` (pids are reused: pid_max may be 32,768). */
export interface Snapshot {
  at: number;
  processes: Map<string, Reading>;
}

/** What exited processes had used (as last read) against what their ancestors' cutime+cstime gained. */
export interface ExitCheck {
  exited: number;
  /** CPU ms the processes that exited between the two snapshots had used since the first. */
  exitedMs: number;
  /** CPU ms added meanwhile to the cutime+cstime of the processes living at both. */
  reapedMs: number;
}

function read(pid: number): (Reading & { start: number }) | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined; // ended meanwhile
  }
  // The fields after the command name (which may hold spaces and parentheses): state is [0].
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ").map(Number);
  return { pid, ppid: fields[1]!, start: fields[19]!, own: (fields[11]! + fields[12]!) * TICK_MS, reaped: (fields[13]! + fields[14]!) * TICK_MS };
}

/** utime+stime of one process alone (not its children), in ms. */
export function processCpuMs(pid: number): number {
  const reading = read(pid);
  if (!reading) throw new Error(`process ${pid} has ended`);
  return reading.own;
}

export class ProcessTree {
  /** Every process of the tree read so far: its last reading, and the snapshots that first and last saw it. */
  readonly #seen = new Map<string, { reading: Reading; first: number; last: number }>();
  /** Pids of processes found outside the tree, not read again while they live. */
  readonly #outside = new Set<number>();
  #taken = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(readonly root: number) {}

  snapshot(): Snapshot {
    const at = ++this.#taken;
    const listed = new Set(readdirSync("/proc").map(Number).filter(Number.isInteger));
    for (const pid of this.#outside) if (!listed.has(pid)) this.#outside.delete(pid);
    const readings = new Map<number, Reading & { start: number }>();
    for (const pid of listed) {
      if (this.#outside.has(pid)) continue;
      const reading = read(pid);
      if (reading) readings.set(pid, reading);
    }
    const members = new Set<number>();
    if (readings.has(this.root)) members.add(this.root);
    for (let grew = true; grew; ) {
      grew = false;
      for (const [pid, reading] of readings) {
        if (!members.has(pid) && members.has(reading.ppid)) {
          members.add(pid);
          grew = true;
        }
      }
    }
    const processes = new Map<string, Reading>();
    for (const [pid, { start, ...reading }] of readings) {
      if (!members.has(pid)) {
        this.#outside.add(pid);
        continue;
      }
      const key = `${pid}:${start}`;
      processes.set(key, reading);
      this.#seen.set(key, { reading, first: this.#seen.get(key)?.first ?? at, last: at });
    }
    return { at, processes };
  }

  /** CPU ms of the tree so far: utime+stime+cutime+cstime of each living process. */
  cpuMs(snapshot = this.snapshot()): number {
    let total = 0;
    for (const { own, reaped } of snapshot.processes.values()) total += own + reaped;
    return total;
  }

  /** CPU ms of the root process alone (utime+stime of all its threads; the processes it reaped not included). */
  rootCpuMs(snapshot: Snapshot): number {
    for (const reading of snapshot.processes.values()) if (reading.pid === this.root) return reading.own;
    throw new Error(`process ${this.root} has ended`);
  }

  /** Samples the tree every `everyMs` until `stop()`, so that short-lived processes are read too. */
  watch(everyMs = 25): void {
    this.#timer ??= setInterval(() => this.snapshot(), everyMs);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Processes of the tree first seen after `before`, up to `after`: those it started meanwhile. */
  startedBetween(before: Snapshot, after: Snapshot): number {
    return [...this.#seen.values()].filter(({ first }) => first > before.at && first <= after.at).length;
  }

  /**
   * Between two snapshots: the processes that exited (their last reading, less what they had at
   * `before`), against what the cutime+cstime of the processes living at both gained.
   */
  exits(before: Snapshot, after: Snapshot): ExitCheck {
    let exited = 0;
    let exitedMs = 0;
    for (const [key, { reading, last }] of this.#seen) {
      if (last < before.at || last >= after.at) continue; // gone before, or still there
      const start = before.processes.get(key);
      exited += 1;
      exitedMs += reading.own + reading.reaped - (start ? start.own + start.reaped : 0);
    }
    let reapedMs = 0;
    for (const [key, end] of after.processes) {
      const start = before.processes.get(key);
      if (start) reapedMs += end.reaped - start.reaped;
    }
    return { exited, exitedMs, reapedMs };
  }

  /** Proportional set size (MB) of the tree's living processes (the root's own too, unless `root: false`): shared pages counted once. */
  pssMb({ root = true }: { root?: boolean } = {}): number {
    let kb = 0;
    for (const { pid } of this.snapshot().processes.values()) {
      if (!root && pid === this.root) continue;
      try {
        kb += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0);
      } catch {
        // ended meanwhile
      }
    }
    return kb / 1024;
  }
}
