import type { SMTPServer, SMTPServerSession } from "smtp-server";

/**
 * Deadlines of the listener's sessions. The socket's idle timeout alone lets a client hold a
 * connection without end by sending a NOOP now and then, or a message a byte at a time: a whole
 * session ends at `sessionMs` however busy it is, a DATA phase at `dataMs` (both with a 421).
 */
export class SessionDeadlines {
  readonly #sessions = new Map<string, NodeJS.Timeout>();
  readonly #data = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly server: SMTPServer,
    private readonly limits: { sessionMs: number; dataMs: number },
  ) {}

  /** A session begins (`onConnect`): its whole-session deadline starts. */
  opened(session: SMTPServerSession): void {
    this.#sessions.set(session.id, this.#timer(session.id, this.limits.sessionMs, "4.4.2 This session has lasted too long; closing."));
  }

  /** A DATA phase begins: it must be over by `dataMs`. The function returned says it is over in time. */
  dataStarted(session: SMTPServerSession): () => void {
    const timer = this.#timer(session.id, this.limits.dataMs, "4.4.2 The message took too long to arrive; closing.");
    this.#data.set(session.id, timer);
    return () => {
      clearTimeout(timer);
      if (this.#data.get(session.id) === timer) this.#data.delete(session.id);
    };
  }

  /** The session is over (`onClose`): its deadlines are dropped. */
  closed(session: SMTPServerSession): void {
    clearTimeout(this.#sessions.get(session.id));
    clearTimeout(this.#data.get(session.id));
    this.#sessions.delete(session.id);
    this.#data.delete(session.id);
  }

  #timer(sessionId: string, ms: number, message: string): NodeJS.Timeout {
    const timer = setTimeout(() => {
      // A 421 reply closes the connection (smtp-server), whatever the session was doing.
      for (const connection of this.server.connections) if (connection.id === sessionId) connection.send(421, message);
    }, ms);
    timer.unref();
    return timer;
  }
}
