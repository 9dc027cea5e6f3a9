/**
 * The floor of (l′): what raw Playwright does on the same browser server with the same posts, from
 * one process and from three (each driving a third of the 16 accounts), rounds alternating as
 * (l′)'s do. Three processes ÷ one is what this machine allows when nothing of ours is in the way:
 * (l′)'s own 3 ÷ 1 is read beside it. Both sides keep their 16 signed-in contexts open on the
 * server for the whole run, as (l′)'s two fleets do.
 */
import { fork, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { createSandboxUser } from "../test/chaos/kill-support.js";
import { ACCOUNTS, PER_ACCOUNT, ROUNDS } from "./shared-browser.js";

export interface SharedBrowserFloor {
  /** Actions/s of raw Playwright from 1 process and from 3, over all rounds. */
  one: number;
  three: number;
  ratio: number;
}

interface Driver {
  child: ChildProcess;
  ask(command: object): Promise<void>;
}

function driver(): Driver {
  const child = fork(join(import.meta.dirname, "shared-browser-floor-driver.ts"), [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const ask = (command: object): Promise<void> =>
    new Promise((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`a floor driver exited (${code})`));
      child.once("exit", onExit);
      child.once("message", (answer: { ok: boolean; error?: string }) => {
        child.off("exit", onExit);
        if (answer.ok) resolve();
        else reject(new Error(`a floor driver failed: ${answer.error}`));
      });
      child.send(command);
    });
  return { child, ask };
}

export async function sharedBrowserFloor(sandboxUrl: string, endpoint: string): Promise<SharedBrowserFloor> {
  const sides = [[driver()], [driver(), driver(), driver()]];
  try {
    for (const [side, drivers] of sides.entries()) {
      const handles = Array.from({ length: ACCOUNTS }, (_, i) => `floor${side}${Date.now().toString(36)}${i}`);
      await Promise.all(handles.map((handle) => createSandboxUser(sandboxUrl, handle)));
      await Promise.all(drivers.map((one, i) => one.ask({ kind: "start", endpoint, sandboxUrl, handles: handles.filter((_, h) => h % drivers.length === i) })));
    }
    const seconds = [0, 0];
    for (let r = 0; r < ROUNDS; r++) {
      for (const side of r % 2 === 0 ? [0, 1] : [1, 0]) {
        const started = performance.now();
        await Promise.all(sides[side]!.map((one) => one.ask({ kind: "round", perAccount: PER_ACCOUNT, tag: `r${r}` })));
        const took = (performance.now() - started) / 1000;
        seconds[side]! += took;
        console.log(`(l′) floor round ${r + 1}, raw Playwright from ${sides[side]!.length} process(es): ${((ACCOUNTS * PER_ACCOUNT) / took).toFixed(2)} actions/s`);
      }
    }
    const actions = ACCOUNTS * PER_ACCOUNT * ROUNDS;
    const one = actions / seconds[0]!;
    const three = actions / seconds[1]!;
    return { one, three, ratio: three / one };
  } finally {
    await Promise.all(sides.flat().map((one) => one.ask({ kind: "stop" }).catch(() => one.child.kill("SIGKILL"))));
  }
}
