// Child process for bench/publisher.ts: one SUB connected to every endpoint listed on stdin (one
// JSON array line), counting messages; prints {"received": n} for every "report" line on stdin.
import { createLogger } from "../../src/lib/logger.ts";
import { SubSocket } from "../../src/transport/zmtp/index.ts";

const sub = new SubSocket({ logger: createLogger({ level: "warn", tag: "sub-counter" }), receiveHighWaterMark: 100_000 });
let received = 0;
sub.onMessage(() => void received++);
sub.subscribe("");
const decoder = new TextDecoder();
let buf = "";
for await (const chunk of Bun.stdin.stream()) {
  buf += decoder.decode(chunk, { stream: true });
  let nl: number;
  while ((nl = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, nl).trim();
    buf = buf.slice(nl + 1);
    if (line.startsWith("[")) for (const ep of JSON.parse(line) as string[]) sub.connect(ep);
    else if (line === "report") console.log(JSON.stringify({ received }));
  }
}
sub.close();
