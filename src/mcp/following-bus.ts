import type { ServerEvent, ServerEventBus } from "@modelcontextprotocol/server";

/**
 * A 2026-era handler's change-event bus (what its `subscriptions/listen` streams hear), in this
 * process as the SDK's own: `follow()` is called while at least one stream listens, and its end
 * once none does. So other coordinators' changes are read here only while someone listens.
 */
export function followingBus(follow: () => () => void): ServerEventBus {
  const listeners = new Set<{ hear: (event: ServerEvent) => void }>();
  let unfollow: (() => void) | undefined;
  return {
    publish(event) {
      for (const listener of [...listeners]) {
        try {
          listener.hear(event);
        } catch {
          // A listener's failure is its own: the others still hear of the change.
        }
      }
    },
    subscribe(hear) {
      const listener = { hear };
      listeners.add(listener);
      unfollow ??= follow();
      return () => {
        if (!listeners.delete(listener) || listeners.size > 0) return;
        unfollow?.();
        unfollow = undefined;
      };
    },
  };
}
