// The stdio command loop of the Node-only test peers (zmq-peer.mjs, vllm-publisher.mjs): one JSON
// command per stdin line, run strictly in order (a send must not overtake the bind before it),
// each answered on stdout as {req, ok: true, ...result} or {req, error}.
import { createInterface } from "node:readline";

/** One JSON line on stdout. */
export const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

/** Serves `handle(cmd) → result`; once stdin closes (the test runner went away), queued commands finish, `onClose` runs, exit 0. */
export function serveCommands(handle, onClose = () => {}) {
  let chain = Promise.resolve();
  createInterface({ input: process.stdin })
    .on("line", (line) => {
      if (!line.trim()) return;
      chain = chain.then(async () => {
        let cmd;
        try {
          cmd = JSON.parse(line);
          out({ req: cmd.req, ok: true, ...(await handle(cmd)) });
        } catch (e) {
          out({ req: cmd?.req, error: String(e?.message ?? e) });
        }
      });
    })
    .on("close", () => {
      void chain.then(() => {
        onClose();
        process.exit(0);
      });
    });
}
