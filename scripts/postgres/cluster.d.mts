/** Types of cluster.mjs, for the TypeScript that starts clusters (bench/postgres.ts). */
export function postgresBinDir(): string | undefined;
export function installPostgres(): string;
export interface Cluster {
  url: string;
  port: number;
  dir: string;
  stop(): Promise<void>;
  /** `pg_ctl restart -m fast`: every session is ended and the server is down for a moment. */
  restart(): Promise<void>;
}
export function startCluster(options?: { dir?: string }): Promise<Cluster>;
export function databaseUrl(url: string, name: string): string;
export function createDatabase(url: string, name: string, options?: { template?: string }): Promise<string>;
