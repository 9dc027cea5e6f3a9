/** What a follower of other processes' changes follows: one action, or every action of a workspace. */
export type Interest = { actionId: string } | { workspaceId: string };

/**
 * What this process's followers of the lifecycle's `change` event follow of other processes'
 * changes (waits, MCP subscriptions and updates, live views, event streams): on PostgreSQL,
 * `ChangesElsewhere` reads the outbox only for a change one of them follows (DESIGN §11, "A commit
 * wakes only the coordinators that must act"). Counted: two waits on one action follow it until
 * both have stopped.
 */
export class Follows {
  readonly #actions = new Map<string, number>();
  readonly #workspaces = new Map<string, number>();

  /** Follows `interest` until the returned function is called (once is enough; again does nothing). */
  follow(interest: Interest): () => void {
    const [counts, key] = "actionId" in interest ? [this.#actions, interest.actionId] : [this.#workspaces, interest.workspaceId];
    counts.set(key, (counts.get(key) ?? 0) + 1);
    let followed = true;
    return () => {
      if (!followed) return;
      followed = false;
      const left = counts.get(key)! - 1;
      if (left === 0) counts.delete(key);
      else counts.set(key, left);
    };
  }

  followsAction(actionId: string): boolean {
    return this.#actions.has(actionId);
  }

  followsWorkspace(workspaceId: string): boolean {
    return this.#workspaces.has(workspaceId);
  }

  /** Whether a change of `actionId` (in `workspaceId`, when known) is followed. */
  follows(actionId: string, workspaceId?: string): boolean {
    return this.#actions.has(actionId) || (workspaceId !== undefined && this.#workspaces.has(workspaceId));
  }
}
