// close() must leave nothing behind: a child process that used every socket type and then
// closed them has to exit on its own (a stray timer or socket would keep it alive).
import { expect, test } from "bun:test";
import { withTimeout } from "../harness.ts";

test("after close() of every socket type, the process exits by itself", async () => {
  const script = new URL("./fixtures/zmtp-close-all.ts", import.meta.url).pathname;
  const child = Bun.spawn([process.execPath, script], { stdout: "pipe", stderr: "pipe" });
  try {
    const code = await withTimeout(child.exited, 15_000, "the child to exit after closing its sockets (something kept it alive)");
    const out = await new Response(child.stdout).text();
    const err = await new Response(child.stderr).text();
    expect({ code, out, err }).toEqual({ code: 0, out: "closed\n", err: "" });
  } finally {
    child.kill("SIGKILL");
    await child.exited;
  }
});
