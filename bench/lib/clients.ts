// Runs bench/lib/stream-client.ts load generators as child processes (so client work does not
// share the bench process's event loop) and collects their JSON reports.
import type { StreamClientJob, StreamClientReport } from "./stream-client.ts";

const CLIENT = new URL("./stream-client.ts", import.meta.url).pathname;

/** One child per job; resolves with their reports once all exit, kills any left on failure. */
export async function runStreamClients(jobs: readonly StreamClientJob[]): Promise<StreamClientReport[]> {
  const procs = jobs.map((job) => Bun.spawn([process.execPath, CLIENT, JSON.stringify(job)], { stdout: "pipe", stderr: "inherit" }));
  try {
    return await Promise.all(
      procs.map(async (p) => {
        const out = await new Response(p.stdout).text();
        if ((await p.exited) !== 0) throw new Error(`stream client ${p.pid} exited with ${p.exitCode}`);
        return JSON.parse(out.trim()) as StreamClientReport;
      }),
    );
  } finally {
    for (const p of procs) if (p.exitCode === null) p.kill();
  }
}
