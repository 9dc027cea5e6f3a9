import { randomUUID } from "node:crypto";
import type { EventId, EventStore, JSONRPCMessage, StreamId } from "@modelcontextprotocol/server";

/**
 * One session's recent SSE events, so a client whose stream was cut (a proxy ending a 50-s
 * wait) reconnects with `Last-Event-ID` and gets what it missed, the tool result included.
 * Bounded: the oldest events go first; a stream's events go with its session.
 */
export class SessionEventStore implements EventStore {
  readonly #events = new Map<EventId, { streamId: StreamId; message: JSONRPCMessage }>();

  constructor(private readonly maxEvents = 500) {}

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const id = `${streamId}_${randomUUID()}`;
    this.#events.set(id, { streamId, message });
    while (this.#events.size > this.maxEvents) this.#events.delete(this.#events.keys().next().value!);
    return id;
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    return this.#events.get(eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: EventId, { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> }): Promise<StreamId> {
    const last = this.#events.get(lastEventId);
    if (!last) throw new Error("That event is no longer kept; start a new request.");
    let after = false;
    for (const [id, event] of this.#events) {
      if (id === lastEventId) after = true;
      // Priming events carry no message: nothing to replay.
      else if (after && event.streamId === last.streamId && Object.keys(event.message).length > 0) await send(id, event.message);
    }
    return last.streamId;
  }
}
