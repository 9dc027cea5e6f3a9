import { readFileSync, readlinkSync } from "node:fs";
import { hostname } from "node:os";

/**
 * Who a runner's process is, kept in the runners table's `host` column:
 * `hostname/boot/pid-namespace/start`. Containers share host names, pids repeat across PID
 * namespaces and are reused after a process ends, so a host name and a pid alone do not say that a
 * runner is this machine's dead process. Here the kernel's boot id
 * (`/proc/sys/kernel/random/boot_id`: one per boot of one kernel) and the PID namespace
 * (`/proc/self/ns/pid`) say that a pid means the same process here as it did there, and the
 * process's start (field 22 of `/proc/<pid>/stat`, clock ticks since boot) tells a reused pid.
 * Where `/proc` has none of this (not Linux) the parts are `-`, and no runner is judged dead early.
 */
export function processIdentity(pid = process.pid): string {
  return `${hostname()}/${machinePart()}/${processStart(pid) ?? "-"}`;
}

/**
 * Whether the runner that registered as `identity` with `pid` is a process of this machine (same
 * host, boot and PID namespace) that no longer runs: its pid is gone, or now names a process that
 * started at another moment. False whenever that cannot be proved: its lease is then waited for.
 */
export function isDeadLocalProcess(identity: string, pid: number): boolean {
  const here = machinePart();
  if (here.split("/").includes("-")) return false;
  const at = identity.lastIndexOf("/");
  if (at < 0 || identity.slice(0, at) !== `${hostname()}/${here}`) return false;
  const start = identity.slice(at + 1);
  const now = processStart(pid);
  if (now === undefined) return !processExists(pid);
  return start !== "-" && now !== start;
}

/** Whether a process `pid` exists here (one of another user's, whose `/proc` entry may be hidden, included). */
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** `boot-id/pid-namespace`, `-` for what this system does not say. */
function machinePart(): string {
  return `${readOrDash(() => readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim())}/${readOrDash(() => /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))?.[1])}`;
}

/** When `pid` started (clock ticks since boot), or undefined when no such process runs (or `/proc` does not say). */
function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may hold spaces: count fields after its end.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

function readOrDash(read: () => string | undefined): string {
  try {
    return read() || "-";
  } catch {
    return "-";
  }
}
