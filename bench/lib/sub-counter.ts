// Child process for bench/publisher.ts: one SUB connected to every endpoint listed on stdin (one
// JSON array line), counting messages; prints {"received": n} for every "report" line on stdin.
import { createLogger } from "../../src/lib/logger.ts";
import { SubSocket } from "../../src/transport/zmtp/index.ts";
import { readLines } from "../../test/lines.ts";

const sub = new SubSocket({ logger: createLogger({ level: "warn", tag: "sub-counter" }), receiveHighWaterMark: 100_000 });
let received = 0;
sub.onMessage(() => void received++);
sub.subscribe("");
for await (const raw of readLines(Bun.stdin.stream())) {
  const line = raw.trim();
  if (line.startsWith("[")) for (const ep of JSON.parse(line) as string[]) sub.connect(ep);
  else if (line === "report") console.log(JSON.stringify({ received }));
}
sub.close();
