// Drives bench/lib/sub-counter.ts as a child process: one SUB connected to every endpoint given,
// asked for its message count on demand. Used where a bench needs the receiving side in another
// process (so its work does not share the publisher's event loop).
import { LineQueue } from "../../test/lines.ts";

export class SubCounter implements AsyncDisposable {
  private readonly reports: LineQueue<string>;
  private constructor(private readonly proc: Bun.Subprocess<"pipe", "pipe", "inherit">) {
    this.reports = new LineQueue(proc.stdout);
  }

  static async start(endpoints: string[]): Promise<SubCounter> {
    const proc = Bun.spawn([process.execPath, new URL("./sub-counter.ts", import.meta.url).pathname], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
    proc.stdin.write(JSON.stringify(endpoints) + "\n");
    proc.stdin.flush();
    return new SubCounter(proc);
  }

  async received(): Promise<number> {
    this.proc.stdin.write("report\n");
    this.proc.stdin.flush();
    const report = await this.reports.next(() => true, 10_000, "the SUB child's report");
    return (JSON.parse(report) as { received: number }).received;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.proc.kill();
    await this.proc.exited;
  }
}
