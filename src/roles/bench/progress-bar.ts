// The progress bar of a bench run (cli-progress), drawn only when the target is a terminal.
import { SingleBar } from "cli-progress";

export function progressBar(stream: NodeJS.WriteStream): ((label: string, total: number) => { update(done: number): void; stop(): void }) | undefined {
  if (!stream.isTTY) return undefined;
  return (label, total) => {
    // Total 0: a --duration run, whose count is not known in advance: the count so far and the time.
    const format = total > 0 ? `${label} [{bar}] {value}/{total} requests | {duration_formatted}` : `${label} {value} requests | {duration_formatted}`;
    const bar = new SingleBar({ stream, format, hideCursor: true, clearOnComplete: true, etaBuffer: 50 });
    bar.start(total, 0);
    return { update: (done) => bar.update(done), stop: () => bar.stop() };
  };
}
