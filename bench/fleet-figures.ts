/**
 * The fleet rows (DESIGN §11, "Scaling out adds capacity"): (s) statements per warm post and
 * idle statements by PostgreSQL's count, and CPU per post; (l′) 3 coordinators ÷ 1 on one shared
 * browser server; (p) the coordination ceiling. One sandbox process, one counted, durable
 * PostgreSQL cluster (bench/postgres.ts) and, for (l′) and (p), one browser server, shared by
 * whichever of them run.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSandboxProcess, type CliProcess } from "../test/chaos/kill-support.js";
import { ceilings, type CeilingRun } from "./ceiling.js";
import { fleetStatements, type FleetStatements } from "./fleet-statements.js";
import { startBrowserServer, stopProcess } from "./fleet.js";
import { startBenchPostgres, type BenchPostgres } from "./postgres.js";
import { sharedBrowser, type SharedBrowserSide } from "./shared-browser.js";
import { sharedBrowserFloor, type SharedBrowserFloor } from "./shared-browser-floor.js";

export interface FleetFigures {
  durable: boolean;
  statements?: FleetStatements;
  shared?: { one: SharedBrowserSide; three: SharedBrowserSide };
  /** (l′)'s floor: raw Playwright on the same browser server from 3 processes ÷ 1. */
  sharedFloor?: SharedBrowserFloor;
  ceiling?: CeilingRun[];
}

export async function fleetFigures(only: { statements: boolean; shared: boolean; ceiling: boolean }): Promise<FleetFigures> {
  const dir = mkdtempSync(join(tmpdir(), "action-service-bench-fleet-"));
  let postgres: BenchPostgres | undefined;
  let sandbox: CliProcess | undefined;
  let browsers: Awaited<ReturnType<typeof startBrowserServer>> | undefined;
  try {
    postgres = await startBenchPostgres({ counted: true });
    sandbox = await startSandboxProcess(join(dir, "sandbox.log"));
    const figures: FleetFigures = { durable: postgres.durable };
    if (only.statements) figures.statements = await fleetStatements(postgres, sandbox.url);
    if (only.shared || only.ceiling) browsers = await startBrowserServer();
    if (only.shared) {
      figures.shared = await sharedBrowser(postgres, sandbox.url, browsers!.endpoint);
      figures.sharedFloor = await sharedBrowserFloor(sandbox.url, browsers!.endpoint);
    }
    if (only.ceiling) {
      figures.ceiling = await ceilings(sandbox.url, browsers!.endpoint, postgres.database.bind(postgres));
    }
    return figures;
  } finally {
    browsers?.stop();
    if (sandbox) await stopProcess(sandbox);
    await postgres?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
