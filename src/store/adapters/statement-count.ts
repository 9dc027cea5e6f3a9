import type { DatabaseConnection } from "kysely";

/**
 * Statements an adapter's connections have sent to the database, transaction control (BEGIN,
 * COMMIT, savepoints) included: on PostgreSQL each is a round trip to the server. One increment
 * a statement, so the count is always on.
 */
export class StatementCounter {
  #count = 0;

  get count(): number {
    return this.#count;
  }

  /** Counts what `connection` runs from now on: Kysely's `onCreateConnection`, called once a connection. */
  readonly watch = async (connection: DatabaseConnection): Promise<void> => {
    const execute = connection.executeQuery.bind(connection);
    connection.executeQuery = (query, options) => {
      this.#count += 1;
      return execute(query, options);
    };
  };
}
