// Start-up time, the compiled binary against running from source (`bun src/cli.ts`), alternately:
//   --version       process start to exit
//   agent ready     process start to its /live answering 200 (a role child of `up` pays this)
//   up --demo       the whole stack up, two demo requests served, stopped (ports picked)
// Median of 7 runs each (3 for up --demo). Builds the binary first into a temp dir (the release
// build: scripts/lib/compile.ts). Run: bun bench/startup.ts
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { buildCommit, compile, ROOT } from "../scripts/lib/compile.ts";
import { machineLine } from "./lib/machine.ts";

const dir = mkdtempSync(join(tmpdir(), "kvcr-startup-"));
try {
  const bin = join(dir, "kvcr-mock");
  await compile({ outfile: bin, commit: await buildCommit(), bytecode: true });
  const ways = { binary: [bin], source: [process.execPath, resolve(ROOT, "src/cli.ts")] };

  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

  async function versionMs(cmd: string[]): Promise<number> {
    const t0 = performance.now();
    const p = Bun.spawn([...cmd, "--version"], { stdout: "ignore", stderr: "ignore" });
    await p.exited;
    return performance.now() - t0;
  }

  async function agentReadyMs(cmd: string[]): Promise<number> {
    const disc = mkdtempSync(join(dir, "disc-"));
    const t0 = performance.now();
    const p = Bun.spawn([...cmd, "agent", "--port", "0", "--events-port", "0", "--discovery-dir", disc, "--log-level", "info"], { stdout: "pipe", stderr: "pipe" });
    try {
      // The agent logs its HTTP URL once it listens; then poll /live.
      let text = "";
      const decoder = new TextDecoder();
      for await (const chunk of p.stderr) {
        text += decoder.decode(chunk);
        if (/HTTP (http:\/\/\S+),/.test(text)) break;
      }
      const url = /HTTP (http:\/\/\S+),/.exec(text)?.[1];
      if (!url) throw new Error(`agent did not log its URL: ${text}`);
      while ((await fetch(`${url}/live`).catch(() => undefined))?.status !== 200) await Bun.sleep(1);
      return performance.now() - t0;
    } finally {
      p.kill();
      await p.exited;
    }
  }

  async function upDemoMs(cmd: string[]): Promise<number> {
    const disc = mkdtempSync(join(dir, "up-"));
    const t0 = performance.now();
    const p = Bun.spawn([...cmd, "up", "--demo", "--http-port", "0", "--agent-port", "0", "--discovery-dir", disc], { stdout: "ignore", stderr: "ignore" });
    if ((await p.exited) !== 0) throw new Error("up --demo failed");
    return performance.now() - t0;
  }

  const cases = [
    { name: "--version", runs: 7, run: versionMs },
    { name: "agent ready", runs: 7, run: agentReadyMs },
    { name: "up --demo", runs: 3, run: upDemoMs },
  ];
  for (const c of cases) {
    const times: Record<keyof typeof ways, number[]> = { binary: [], source: [] };
    await c.run(ways.binary); // warm the page cache for both
    await c.run(ways.source);
    for (let i = 0; i < c.runs; i++) for (const way of ["binary", "source"] as const) times[way].push(await c.run(ways[way]));
    const b = median(times.binary);
    const s = median(times.source);
    console.log(`${c.name.padEnd(12)} binary ${b.toFixed(0)} ms, source ${s.toFixed(0)} ms → binary/source ${(b / s).toFixed(2)} (median of ${c.runs})`);
  }
  console.log(machineLine());
} finally {
  rmSync(dir, { recursive: true, force: true });
}
