// An https server on loopback that stands for a host on the Internet: a self-signed certificate for that host
// (made with openssl for this run), and a socket lookup that sends the host's name to 127.0.0.1. Only tests
// pass that lookup to fetchDocument; the production fetch always uses the public-address guard.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SocketLookup } from "../../server/auth/safe-fetch.ts";

export interface TlsHost {
  cert: string;
  port: number;
  /** Every request the server received, as paths. */
  seen: string[];
  stop(): void;
}

export function makeCertificate(hostname: string): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), "svc-tls-"));
  try {
    const made = Bun.spawnSync([
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
      "-days",
      "2",
      "-subj",
      `/CN=${hostname}`,
      "-addext",
      `subjectAltName=DNS:${hostname}`,
    ]);
    if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`);
    return { cert: readFileSync(join(dir, "cert.pem"), "utf8"), key: readFileSync(join(dir, "key.pem"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Serves `handle` over https on loopback with a certificate for `hostname`. */
export function serveTls(hostname: string, handle: (req: Request) => Response | Promise<Response>): TlsHost {
  const { cert, key } = makeCertificate(hostname);
  const seen: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert, key },
    fetch(req) {
      seen.push(new URL(req.url).pathname);
      return handle(req);
    },
  });
  return { cert, port: server.port!, seen, stop: () => server.stop(true) };
}

/** Resolves every name to 127.0.0.1, bypassing the guard on purpose: the test's stand-in for public DNS. */
export const toLoopback: SocketLookup = (_host, options, callback) => {
  if ((options as { all?: boolean } | null)?.all) callback(null, [{ address: "127.0.0.1", family: 4 }]);
  else callback(null, "127.0.0.1", 4);
};
