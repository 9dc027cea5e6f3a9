import { readdirSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * Whether process `pid` holds a POSIX lock on `file`, as the kernel's `/proc/locks` shows it (files
 * named by device and inode). SQLite's WAL connections hold one on the database file and on `-shm`.
 */
export function holdsLock(pid: number, file: string): boolean {
  const inode = statSync(file).ino;
  return readFileSync("/proc/locks", "utf8")
    .split("\n")
    .some((line) => {
      const fields = line.trim().split(/\s+/);
      return fields[4] === String(pid) && fields[5]?.endsWith(`:${inode}`) === true;
    });
}

/** The paths process `pid` holds open under `dir`, " (deleted)" kept where the kernel says so. */
export function openFilesOf(pid: number, dir: string): string[] {
  const fds = `/proc/${pid}/fd`;
  return readdirSync(fds)
    .map((fd) => {
      try {
        return readlinkSync(join(fds, fd));
      } catch {
        return ""; // closed meanwhile
      }
    })
    .filter((path) => path.startsWith(dir));
}
