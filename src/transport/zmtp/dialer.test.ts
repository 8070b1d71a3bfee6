// The connecting side's lifecycle seen from a plain TCP server: a close() or disconnect() that
// lands while Bun.connect is still in flight must still end the TCP connection once it opens; and
// how failed connects are reported.
import { describe, expect, test } from "bun:test";
import type { TCPSocketListener } from "bun";
import { createConsola } from "consola";
import { createLogger } from "../../lib/logger.ts";
import { cleanupList, waitFor } from "../../../test/harness.ts";
import { DealerSocket } from "./dealer-socket.ts";
import { PubSocket } from "./pub-socket.ts";
import { SubSocket } from "./sub-socket.ts";

const logger = createLogger({ level: "silent" });

/** A raw TCP server that counts connections opened and closed by the client side. */
function countingServer() {
  const counts = { opened: 0, closed: 0 };
  const server: TCPSocketListener<undefined> = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open: () => void counts.opened++,
      data() {},
      close: () => void counts.closed++,
    },
  });
  return { counts, endpoint: `tcp://127.0.0.1:${server.port}`, server };
}

const cleanups = cleanupList();

describe("Dialer: stop while the connect is in flight", () => {
  test("close() right after connect() ends the TCP connection once it opens", async () => {
    const { counts, endpoint, server } = countingServer();
    cleanups.push(() => server.stop(true));
    const sub = new SubSocket({ logger });
    cleanups.push(() => sub.close());
    sub.connect(endpoint);
    sub.close();
    await waitFor(() => counts.opened === 1 && counts.closed === 1, { timeoutMs: 3000, what: `the server to see the connection closed (${JSON.stringify(counts)})` });
  });

  test("disconnect() right after connect() ends the TCP connection, the socket stays usable", async () => {
    const { counts, endpoint, server } = countingServer();
    cleanups.push(() => server.stop(true));
    const dealer = new DealerSocket({ logger });
    cleanups.push(() => dealer.close());
    dealer.connect(endpoint);
    dealer.disconnect(endpoint);
    await waitFor(() => counts.opened === 1 && counts.closed === 1, { timeoutMs: 3000, what: `the server to see the connection closed (${JSON.stringify(counts)})` });
    // Connecting again works: the earlier dial left no state behind.
    dealer.connect(endpoint);
    await waitFor(() => counts.opened === 2, { timeoutMs: 3000, what: "the second connection" });
    expect(counts.closed).toBe(1);
  });
});

describe("Dialer: failed connects", () => {
  test("the first failure of an outage is a warning with the reason, the retries that follow are debug", async () => {
    const lines: string[] = [];
    const capture = createConsola({ level: 4, reporters: [{ log: (o) => lines.push(`${o.type}: ${o.args.join(" ")}`) }] });
    // A port nobody listens on (bound, then released).
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    const endpoint = `tcp://127.0.0.1:${port}`;
    const sub = new SubSocket({ logger: capture, reconnectIntervalMs: 1, reconnectIntervalMaxMs: 2 });
    cleanups.push(() => sub.close());
    sub.connect(endpoint);
    await waitFor(() => lines.filter((l) => l.startsWith("debug:")).length >= 3, { timeoutMs: 3000, what: `3 retries (${lines.join(" | ")})` });
    const warnings = lines.filter((l) => l.startsWith("warn:"));
    expect(warnings).toEqual([`warn: zmtp SUB: connect to ${endpoint} failed: Failed to connect (ECONNREFUSED); retrying (further failures are logged at debug until a connect succeeds)`]);
    // After a successful connect the next outage warns again.
    const pub = new PubSocket({ logger });
    cleanups.push(() => pub.close());
    pub.bind(endpoint);
    await sub.connected();
    pub.close();
    await waitFor(() => lines.filter((l) => l.startsWith("warn:")).length === 2, { timeoutMs: 3000, what: `a new warning for the new outage (${lines.join(" | ")})` });
  });
});
