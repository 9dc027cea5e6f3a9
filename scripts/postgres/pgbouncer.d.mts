/** Types of pgbouncer.mjs, for the tests that run through PgBouncer (test/postgres/pgbouncer.test.ts). */
export function installPgbouncer(): void;
export interface Pgbouncer {
  port: number;
  /** `databaseUrl` (a database of the server PgBouncer stands before) through PgBouncer. */
  url(databaseUrl: string): string;
  stop(): Promise<void>;
}
export function startPgbouncer(serverUrl: string): Promise<Pgbouncer>;
