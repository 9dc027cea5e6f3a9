import type { DatabaseConnection } from "kysely";

/**
 * Statements an adapter's connections have sent to the database, transaction control (BEGIN,
 * COMMIT, savepoints) included: on PostgreSQL each is a round trip to the server. One increment
 * a statement, so the count is always on.
 *
 * `writes` counts every statement that is not a query builder's SELECT (raw SQL and transaction
 * control included, whatever they do): SQLite's read cache lets go of what it keeps when it moves.
 */
export class StatementCounter {
  #count = 0;
  #writes = 0;

  get count(): number {
    return this.#count;
  }

  get writes(): number {
    return this.#writes;
  }

  /** Counts what `connection` runs from now on: Kysely's `onCreateConnection`, called once a connection. */
  readonly watch = async (connection: DatabaseConnection): Promise<void> => {
    const execute = connection.executeQuery.bind(connection);
    connection.executeQuery = (query) => {
      this.#count += 1;
      if (query.query.kind !== "SelectQueryNode") this.#writes += 1;
      return execute(query);
    };
  };
}
