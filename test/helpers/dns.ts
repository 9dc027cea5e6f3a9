import dns2 from "dns2";

const { Packet } = dns2;
/** The "no such name" answer code (dns2's `Packet.RCODE` is missing from its types). */
const NXDOMAIN = 3;

/** A real DNS server on 127.0.0.1 (UDP and TCP, one port) that serves the TXT records a test sets. */
export interface LocalDns {
  /** `127.0.0.1:<port>`: what `ACTION_SERVICE_DNS_SERVERS` names. */
  address: string;
  /** Publishes (or replaces) a name's TXT record; names are matched without regard to case. */
  set(name: string, value: string): void;
  /** Withdraws a name's record: it is then NXDOMAIN. */
  remove(name: string): void;
  /** While muted, queries get no answer at all (a DNS server that does not answer). */
  mute(muted: boolean): void;
  close(): Promise<void>;
}

/** Starts a local DNS server; stop it with `close()` (per test file). */
export async function startLocalDns(): Promise<LocalDns> {
  const records = new Map<string, string>();
  let muted = false;
  const handle = (request: InstanceType<typeof Packet>, send: (response: InstanceType<typeof Packet>) => Promise<Buffer>): void => {
    if (muted) return;
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    const value = question ? records.get(question.name.toLowerCase()) : undefined;
    if (value === undefined) response.header.rcode = NXDOMAIN;
    // A TXT record's strings are at most 255 bytes each: a 2048-bit key is split, as DNS hosts do.
    else if (question!.type === Packet.TYPE.TXT) response.answers.push(Packet.createResourceFromQuestion(question!, { type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 60, data: value.match(/.{1,255}/g) ?? [""] }));
    void send(response).catch(() => undefined);
  };
  // UDP on any free port, then TCP on the same one: an answer too long for UDP is asked again over TCP.
  const udp = dns2.createUDPServer(handle);
  await udp.listen(0, "127.0.0.1");
  const port = udp.address().port;
  const tcp = dns2.createTCPServer(handle);
  await new Promise<void>((resolve, reject) => tcp.once("error", reject).listen(port, "127.0.0.1", resolve));
  return {
    address: `127.0.0.1:${port}`,
    set: (name, value) => void records.set(name.toLowerCase(), value),
    remove: (name) => void records.delete(name.toLowerCase()),
    mute: (value) => {
      muted = value;
    },
    close: async () => {
      await new Promise<void>((resolve) => udp.close(() => resolve()));
      await new Promise<void>((resolve) => tcp.close(() => resolve()));
    },
  };
}
