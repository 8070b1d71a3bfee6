// A live stack for bench scripts, as separate processes (the CLI from source): one mocker process
// with N workers and one frontend with a router mode, on a private discovery directory and
// namespace; ready when the frontend's /health counts every worker. Closing stops both.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { holdPort } from "../../src/transport/port-hold.ts";

const CLI = resolve(import.meta.dir, "../../src/cli.ts");

export interface LiveStack extends AsyncDisposable {
  url: string;
}

export async function startLiveStack(o: { routerMode: string; workers: number; mockerArgs?: string[]; frontendArgs?: string[] }): Promise<LiveStack> {
  const dir = mkdtempSync(join(tmpdir(), "kvcr-bench-stack-"));
  const ns = `bench${process.pid}${Math.floor(Math.random() * 1e6)}`;
  const shared = ["--discovery-dir", dir, "--namespace", ns, "--log-level", "warn"];
  // A free port for the frontend (released just before it binds; fine on a bench machine).
  const held = holdPort("127.0.0.1", 0);
  const port = held.port;
  held.close();
  const spawn = (args: string[]) => Bun.spawn([process.execPath, CLI, ...args, ...shared], { stdin: "ignore", stdout: "ignore", stderr: "inherit" });
  const procs = [
    spawn(["mocker", "--num-workers", String(o.workers), "--http-port", "0", ...(o.mockerArgs ?? [])]),
    spawn(["frontend", "--http-port", String(port), "--router-mode", o.routerMode, ...(o.frontendArgs ?? [])]),
  ];
  const url = `http://127.0.0.1:${port}`;
  const close = async () => {
    for (const p of procs.reverse()) {
      p.kill("SIGTERM");
      await p.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = performance.now() + 30_000;
  for (;;) {
    try {
      const health = (await (await fetch(`${url}/health`)).json()) as { instances?: number };
      if (health.instances === o.workers) break;
    } catch {
      // not up yet
    }
    if (performance.now() > deadline || procs.some((p) => p.exitCode !== null)) {
      await close();
      throw new Error(`stack (router ${o.routerMode}) not ready within 30 s`);
    }
    await Bun.sleep(100);
  }
  return { url, [Symbol.asyncDispose]: close };
}
