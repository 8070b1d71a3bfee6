// close() must leave nothing behind: a child process that used every socket type and then
// closed them has to exit on its own (a stray timer or socket would keep it alive).
import { expect, test } from "bun:test";
import { spawnChild, waitFor, withTimeout } from "../harness.ts";

test("after close() of every socket type, the process exits by itself", async () => {
  // A server outside the child: its connections are the child's in-flight connects, which only
  // the child can end (a server in the child's own process would close them for it).
  const counts = { opened: 0, closed: 0 };
  const server = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: { open: () => void counts.opened++, data() {}, close: () => void counts.closed++ },
  });
  const script = new URL("./fixtures/zmtp-close-all.ts", import.meta.url).pathname;
  await using child = spawnChild([process.execPath, script, `tcp://127.0.0.1:${server.port}`]);
  try {
    const code = await withTimeout(child.proc.exited, 15_000, "the child to exit after closing its sockets (something kept it alive)");
    const out = await new Response(child.proc.stdout).text();
    const err = await new Response(child.proc.stderr).text();
    expect({ code, out, err }).toEqual({ code: 0, out: "closed\n", err: "" });
    // Three sockets dialled the server; all three connections reached it and were ended.
    await waitFor(() => counts.opened === 3 && counts.closed === 3, { timeoutMs: 5000, what: `all 3 in-flight connections closed (${JSON.stringify(counts)})` });
  } finally {
    server.stop(true);
  }
}, 30_000);
