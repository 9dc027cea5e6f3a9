import { execFileSync } from "node:child_process";

/**
 * A file's bytes, read by another process (`cat`). For the database, `-wal` and `-shm` files while
 * this process holds a connection: opening and closing one of them here would drop every SQLite
 * lock this process holds on it (decisions: "The database's files are SQLite's alone").
 */
export function readRawFile(path: string): Buffer {
  return execFileSync("cat", [path], { maxBuffer: 1 << 30 });
}
