// The progress bar of a bench run (cli-progress), drawn only when the target is a terminal.
import { SingleBar } from "cli-progress";

export function progressBar(stream: NodeJS.WriteStream): ((label: string, total: number) => { update(done: number): void; stop(): void }) | undefined {
  if (!stream.isTTY) return undefined;
  return (label, total) => {
    const bar = new SingleBar({ stream, format: `${label} [{bar}] {value}/{total} requests | {duration_formatted}`, hideCursor: true, clearOnComplete: true, etaBuffer: 50 });
    bar.start(total, 0);
    return { update: (done) => bar.update(done), stop: () => bar.stop() };
  };
}
