import { createInterface, type Interface } from "node:readline";

/**
 * The check's conversation with the person at the terminal: prompts go to stderr (stdout is the
 * report, `--json` included), answers are read from stdin, a typed password is never echoed.
 */
export interface Terminal {
  /** A password typed with nothing echoed; undefined when stdin is not a terminal. */
  secret(prompt: string): Promise<string | undefined>;
  /** One line of stdin (a terminal or a pipe); undefined once stdin has ended. */
  line(prompt: string): Promise<string | undefined>;
  say(text: string): void;
  close(): void;
}

export function processTerminal(input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stderr): Terminal {
  let lines: Interface | undefined;
  const waiting: ((line: string | undefined) => void)[] = [];
  const buffered: string[] = [];
  let ended = false;
  const reader = (): Interface => {
    if (lines) return lines;
    lines = createInterface({ input, terminal: false });
    lines.on("line", (line) => (waiting.length > 0 ? waiting.shift()!(line) : buffered.push(line)));
    lines.on("close", () => {
      ended = true;
      for (const resolve of waiting.splice(0)) resolve(undefined);
    });
    return lines;
  };
  return {
    say: (text) => void output.write(`${text}\n`),
    secret: (prompt) => (input.isTTY ? readHidden(input, output, prompt) : Promise.resolve(undefined)),
    line: (prompt) => {
      output.write(prompt);
      reader();
      if (buffered.length > 0) return Promise.resolve(buffered.shift());
      if (ended) return Promise.resolve(undefined);
      return new Promise((resolve) => waiting.push(resolve));
    },
    close: () => {
      lines?.close();
      input.pause();
    },
  };
}

/** Reads a line from a terminal in raw mode, echoing nothing; Ctrl-C stops the process as usual. */
function readHidden(input: NodeJS.ReadStream, output: NodeJS.WriteStream, prompt: string): Promise<string> {
  output.write(prompt);
  return new Promise((resolve) => {
    let typed = "";
    input.setRawMode(true);
    input.resume();
    input.setEncoding("utf8");
    const onData = (chunk: string): void => {
      for (const char of chunk) {
        if (char === "\r" || char === "\n") {
          input.off("data", onData);
          input.setRawMode(false);
          input.pause();
          output.write("\n");
          resolve(typed);
          return;
        }
        if (char === "\u0003") {
          input.setRawMode(false);
          process.kill(process.pid, "SIGINT");
          return;
        }
        if (char === "\u007f" || char === "\b") typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    input.on("data", onData);
  });
}
