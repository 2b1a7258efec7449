// The tests' SMTP server: smtp-server from npm on loopback, as a real mail server would answer svc's nodemailer
// (AUTH with the user and password of the --smtp-url, no TLS on loopback), keeping every e-mail it receives, decoded
// into its headers, plain text and HTML.
import { SMTPServer } from "smtp-server";

export interface ReceivedMail {
  to: string[];
  headers: Map<string, string>;
  subject: string;
  text: string;
  html: string;
}

export const SINK_USER = "svc";
export const SINK_PASSWORD = "sink password";

export class MailSink {
  readonly mails: ReceivedMail[] = [];
  private taken = 0;
  private waiters: (() => void)[] = [];

  private constructor(
    private readonly server: SMTPServer,
    readonly port: number,
  ) {}

  /** A sink on `port` (0: any free one). */
  static async start(port = 0): Promise<MailSink> {
    let sink: MailSink | undefined;
    const server = new SMTPServer({
      logger: false,
      disabledCommands: ["STARTTLS"],
      allowInsecureAuth: true,
      onAuth(auth, _session, done) {
        if (auth.username === SINK_USER && auth.password === SINK_PASSWORD) done(null, { user: auth.username });
        else done(new Error("Invalid username or password"));
      },
      onData(stream, session, done) {
        const chunks: Buffer[] = [];
        stream.on("data", (c: Buffer) => chunks.push(c));
        stream.on("end", () => {
          sink!.receive(
            Buffer.concat(chunks).toString("utf8"),
            session.envelope.rcptTo.map((r) => r.address),
          );
          done();
        });
      },
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve());
    });
    const address = (server as unknown as { server: { address(): { port: number } } }).server.address();
    sink = new MailSink(server, address.port);
    return sink;
  }

  /** The --smtp-url that reaches this sink. */
  get url(): string {
    return `smtp://${encodeURIComponent(SINK_USER)}:${encodeURIComponent(SINK_PASSWORD)}@127.0.0.1:${this.port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private receive(raw: string, to: string[]) {
    this.mails.push({ ...parseMail(raw), to });
    for (const w of this.waiters.splice(0)) w();
  }

  /** The next e-mail not taken yet, waiting for it to arrive (at most `timeoutMs`). */
  async next(timeoutMs = 10_000): Promise<ReceivedMail> {
    const deadline = Date.now() + timeoutMs;
    while (this.taken >= this.mails.length) {
      if (Date.now() > deadline) throw new Error(`no e-mail arrived within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
    return this.mails[this.taken++]!;
  }

  /** How many e-mails arrived that were not taken yet. */
  get waiting(): number {
    return this.mails.length - this.taken;
  }
}

/** Headers unfolded (names lowercase), and the text and HTML parts decoded. */
function parseMail(raw: string): Omit<ReceivedMail, "to"> {
  const { headers, body } = splitEntity(raw);
  const parts: { headers: Map<string, string>; body: string }[] = [];
  const collect = (h: Map<string, string>, b: string) => {
    const type = h.get("content-type") ?? "text/plain";
    const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
    if (type.toLowerCase().startsWith("multipart/") && boundary) {
      for (const chunk of b.split(`--${boundary}`).slice(1)) {
        if (chunk.startsWith("--")) break;
        const sub = splitEntity(chunk.replace(/^\r?\n/, ""));
        collect(sub.headers, sub.body);
      }
    } else parts.push({ headers: h, body: decode(b, h.get("content-transfer-encoding") ?? "7bit") });
  };
  collect(headers, body);
  const part = (type: string) => parts.find((p) => (p.headers.get("content-type") ?? "text/plain").toLowerCase().startsWith(type))?.body ?? "";
  return { headers, subject: decodeWords(headers.get("subject") ?? ""), text: part("text/plain"), html: part("text/html") };
}

function splitEntity(raw: string): { headers: Map<string, string>; body: string } {
  const end = raw.search(/\r?\n\r?\n/);
  const head = end < 0 ? raw : raw.slice(0, end);
  const body = end < 0 ? "" : raw.slice(end).replace(/^\r?\n\r?\n/, "");
  const headers = new Map<string, string>();
  for (const line of head.replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i > 0) headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  return { headers, body };
}

function decode(body: string, encoding: string): string {
  const e = encoding.toLowerCase();
  if (e === "base64") return Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
  if (e === "quoted-printable") {
    const bytes = body.replace(/=\r?\n/g, "").replace(/\r\n/g, "\n");
    return Buffer.from(
      bytes.replace(/=([0-9A-F]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16))),
      "latin1",
    ).toString("utf8");
  }
  return body.replace(/\r\n/g, "\n");
}

/** RFC 2047 encoded words (=?UTF-8?Q?...?= and =?UTF-8?B?...?=), as a subject may carry them. */
function decodeWords(value: string): string {
  return value.replace(/=\?utf-8\?([qb])\?([^?]*)\?=\s*/gi, (_m, kind: string, text: string) =>
    kind.toLowerCase() === "b"
      ? Buffer.from(text, "base64").toString("utf8")
      : Buffer.from(
          text.replace(/_/g, " ").replace(/=([0-9A-F]{2})/gi, (_x, h: string) => String.fromCharCode(parseInt(h, 16))),
          "latin1",
        ).toString("utf8"),
  );
}
