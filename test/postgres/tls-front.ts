import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { createServer } from "node:tls";

/** A self-signed certificate for 127.0.0.1, made with the `openssl` binary in `dir`: its PEM files. */
export function selfSignedCertificate(dir: string): { certFile: string; keyFile: string } {
  const certFile = join(dir, "internal-cert.pem");
  const keyFile = join(dir, "internal-key.pem");
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", keyFile, "-out", certFile, "-days", "2", "-subj", "/CN=action-service test internal CA",
    "-addext", "subjectAltName=IP:127.0.0.1",
  ], { stdio: "ignore" });
  return { certFile, keyFile };
}

/**
 * What an operator puts in front of a coordinator whose internal URL is `https`: TLS ends here and
 * the bytes go on to the coordinator's plain HTTP port. It keeps the head of each request it passes
 * on, so a test sees exactly what crossed the hop.
 */
export interface TlsFront {
  port: number;
  /** The coordinator's plain HTTP port (set once it has started). */
  upstreamPort: number;
  /** Each connection's first request head, as it arrived (request line and headers). */
  readonly heads: string[];
  close(): Promise<void>;
}

export async function startTlsFront(certificate: { certFile: string; keyFile: string }, port: number): Promise<TlsFront> {
  const heads: string[] = [];
  const front: TlsFront = { port, upstreamPort: 0, heads, close: () => new Promise((resolve) => server.close(() => resolve())) };
  const server = createServer({ cert: readFileSync(certificate.certFile), key: readFileSync(certificate.keyFile) }, (client) => {
    let received = Buffer.alloc(0);
    const collect = (chunk: Buffer): void => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf("\r\n\r\n");
      if (end < 0) return;
      client.off("data", collect);
      heads.push(received.subarray(0, end + 4).toString("latin1"));
      const upstream = connect(front.upstreamPort, "127.0.0.1", () => {
        upstream.write(received);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      const close = (): void => {
        upstream.destroy();
        client.destroy();
      };
      upstream.on("error", close).on("close", close);
      client.on("close", close);
    };
    client.on("data", collect).on("error", () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(port, "127.0.0.1", () => resolve()));
  return front;
}

/** Sends `head` as it is over a new plain connection to `port` and gives the answer's status line. */
export function sendRawHead(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(head, "latin1"));
    let answer = "";
    socket.on("data", (chunk: Buffer) => {
      answer += chunk.toString("latin1");
      const line = answer.indexOf("\r\n");
      if (line < 0) return;
      socket.destroy();
      resolve(answer.slice(0, line));
    });
    socket.on("error", reject);
    socket.on("close", () => reject(new Error(`the connection closed before an answer: ${JSON.stringify(answer)}`)));
  });
}
