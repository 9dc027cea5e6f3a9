import type { CDPSession, Page } from "playwright";

/** What a viewer receives. */
export type ViewerMessage = { type: "frame"; data: string; width: number; height: number } | { type: "state"; [key: string]: unknown };

/** What a viewer may send: pointer and keyboard input in page CSS pixels. */
export type ViewerInput =
  | { type: "click"; x: number; y: number }
  | { type: "wheel"; x: number; y: number; dx: number; dy: number }
  | { type: "key"; key: string }
  | { type: "text"; text: string };

export interface Viewer {
  send(message: ViewerMessage): void;
  width: number;
  height: number;
}

/** Keys sent as key events (the rest arrive as text). */
const SPECIAL_KEYS: Record<string, { code: string; keyCode: number }> = {
  Enter: { code: "Enter", keyCode: 13 },
  Backspace: { code: "Backspace", keyCode: 8 },
  Tab: { code: "Tab", keyCode: 9 },
  Escape: { code: "Escape", keyCode: 27 },
  Delete: { code: "Delete", keyCode: 46 },
  ArrowLeft: { code: "ArrowLeft", keyCode: 37 },
  ArrowUp: { code: "ArrowUp", keyCode: 38 },
  ArrowRight: { code: "ArrowRight", keyCode: 39 },
  ArrowDown: { code: "ArrowDown", keyCode: 40 },
  " ": { code: "Space", keyCode: 32 },
};

/**
 * One page's CDP screencast, shared by every viewer of it: started with the first
 * viewer, stopped with the last; each frame acknowledged; input forwarded with
 * `Input.dispatch*`. A viewer leaving never touches the page itself.
 */
export class Screencast {
  readonly #viewers = new Set<Viewer>();
  #session: Promise<CDPSession> | undefined;
  #last: ViewerMessage | undefined;
  /** The last input dispatched or being dispatched: the next waits for it. */
  #inputs: Promise<void> = Promise.resolve();

  constructor(readonly page: Page) {}

  get viewerCount(): number {
    return this.#viewers.size;
  }

  async add(viewer: Viewer): Promise<void> {
    this.#viewers.add(viewer);
    if (this.#last) viewer.send(this.#last);
    if (!this.#session) {
      this.#session = this.#start(viewer).catch(async () => {
        // A navigation that swaps the page's renderer detaches a new CDP session: try once more on the new one.
        await new Promise((resolve) => setTimeout(resolve, 250));
        return this.#start(viewer);
      });
      try {
        await this.#session;
      } catch (error) {
        this.#session = undefined;
        throw error;
      }
    }
  }

  async remove(viewer: Viewer): Promise<void> {
    this.#viewers.delete(viewer);
    if (this.#viewers.size === 0) await this.stop();
  }

  async #start(viewer: Viewer): Promise<CDPSession> {
    const session = await this.page.context().newCDPSession(this.page);
    session.on("Page.screencastFrame", (frame) => {
      void session.send("Page.screencastFrameAck", { sessionId: frame.sessionId }).catch(() => undefined);
      const message: ViewerMessage = { type: "frame", data: frame.data, width: frame.metadata.deviceWidth, height: frame.metadata.deviceHeight };
      this.#last = message;
      for (const each of this.#viewers) each.send(message);
    });
    const viewport = this.page.viewportSize() ?? { width: 1280, height: 800 };
    await session.send("Page.startScreencast", {
      format: "jpeg",
      quality: 70,
      // Frames no larger than the viewer's screen, never larger than the page.
      maxWidth: Math.min(viewport.width, Math.max(320, viewer.width)),
      maxHeight: Math.min(viewport.height, Math.max(320, viewer.height)),
      everyNthFrame: 1,
    });
    return session;
  }

  async stop(): Promise<void> {
    const session = this.#session;
    this.#session = undefined;
    this.#last = undefined;
    if (!session) return;
    const cdp = await session.catch(() => undefined);
    await cdp?.send("Page.stopScreencast").catch(() => undefined);
    await cdp?.detach().catch(() => undefined);
  }

  /**
   * Applies a viewer's input, each event after the one before it has been dispatched: a click's
   * press and release, then the text typed after it, in the order the viewers sent them.
   */
  input(event: ViewerInput): Promise<void> {
    const dispatched = this.#inputs.then(() => this.#dispatch(event));
    this.#inputs = dispatched.catch(() => undefined);
    return dispatched;
  }

  async #dispatch(event: ViewerInput): Promise<void> {
    const cdp = await (this.#session ?? this.page.context().newCDPSession(this.page));
    if (event.type === "click") {
      for (const type of ["mousePressed", "mouseReleased"] as const) {
        await cdp.send("Input.dispatchMouseEvent", { type, x: event.x, y: event.y, button: "left", clickCount: 1 });
      }
    } else if (event.type === "wheel") {
      await cdp.send("Input.dispatchMouseEvent", { type: "mouseWheel", x: event.x, y: event.y, deltaX: event.dx, deltaY: event.dy });
    } else if (event.type === "key") {
      const special = SPECIAL_KEYS[event.key];
      if (!special) return cdp.send("Input.insertText", { text: event.key }).then(() => undefined);
      const common = { key: event.key, code: special.code, windowsVirtualKeyCode: special.keyCode, nativeVirtualKeyCode: special.keyCode };
      await cdp.send("Input.dispatchKeyEvent", { type: "keyDown", ...common, ...(event.key === "Enter" ? { text: "\r" } : event.key === " " ? { text: " " } : {}) });
      await cdp.send("Input.dispatchKeyEvent", { type: "keyUp", ...common });
    } else {
      await cdp.send("Input.insertText", { text: event.text });
    }
  }

  /** Tells every viewer something changed (status, outcome). */
  broadcast(message: ViewerMessage): void {
    for (const viewer of this.#viewers) viewer.send(message);
  }
}
