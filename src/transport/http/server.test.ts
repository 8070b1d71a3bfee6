import { expect, test } from "bun:test";
import { serveHttp } from "./server.ts";

test("a port in use is a clear error naming host and port", async () => {
  const first = serveHttp({ host: "127.0.0.1", port: 0, fetch: () => new Response("ok") });
  try {
    expect(await (await fetch(`${first.url}/`)).text()).toBe("ok");
    expect(() => serveHttp({ host: "127.0.0.1", port: first.port, fetch: () => new Response("no") })).toThrow(
      `cannot serve HTTP on 127.0.0.1:${first.port}`,
    );
  } finally {
    await first.stop();
  }
});
