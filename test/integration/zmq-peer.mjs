// A libzmq peer driven over stdio, for interop tests and the benchmark. Runs under Node only
// (the `zeromq` addon aborts inside Bun). Protocol: one JSON object per line.
//   stdin : {req, op, ...}      ops: socket, bind, connect, disconnect, subscribe, unsubscribe,
//                                    send, pump, stopPump, close, exit
//   stdout: {event:"ready"} once; {req, ok:true, ...} / {req, error}; and for every message a
//           receiving socket gets: {event:"message", id, frames:[FrameReport]}
// Frame specs (send): {text} | {b64} | {pattern:{size, seed}} (byte i = (i*31 + seed) & 255).
// Frame reports: {b64} up to 1 KiB, else {size, sha256} so 8 MiB messages stay small on stdout.
import { createHash } from "node:crypto";
import * as zmq from "zeromq";
import { out, serveCommands } from "./stdio-commands.mjs";

const sockets = new Map();
const pumps = new Map();

function frameFromSpec(spec) {
  if (typeof spec.text === "string") return Buffer.from(spec.text, "utf8");
  if (typeof spec.b64 === "string") return Buffer.from(spec.b64, "base64");
  if (spec.pattern) {
    const { size, seed } = spec.pattern;
    const b = Buffer.allocUnsafe(size);
    for (let i = 0; i < size; i++) b[i] = (i * 31 + seed) & 255;
    return b;
  }
  throw new Error(`bad frame spec ${JSON.stringify(spec)}`);
}

function report(frame) {
  if (frame.length <= 1024) return { b64: frame.toString("base64") };
  return { size: frame.length, sha256: createHash("sha256").update(frame).digest("hex") };
}

function makeSocket(type, options) {
  const opts = { linger: 0, ...options };
  switch (type) {
    case "pub": return new zmq.Publisher(opts);
    case "sub": return new zmq.Subscriber(opts);
    case "router": return new zmq.Router(opts);
    case "dealer": return new zmq.Dealer(opts);
    default: throw new Error(`unknown socket type ${type}`);
  }
}

async function receiveLoop(id, sock) {
  try {
    for await (const frames of sock) out({ event: "message", id, frames: frames.map(report) });
  } catch (e) {
    if (!sock.closed) out({ event: "receiveError", id, error: String(e) });
  }
}

async function stopPump(id) {
  const state = pumps.get(id);
  if (!state) return;
  state.stop = true;
  pumps.delete(id);
  await state.done;
}

const get = (id) => {
  const s = sockets.get(id);
  if (!s) throw new Error(`no socket ${id}`);
  return s;
};

async function handle(cmd) {
  switch (cmd.op) {
    case "socket": {
      const sock = makeSocket(cmd.type, cmd.options ?? {});
      sockets.set(cmd.id, sock);
      if (cmd.type !== "pub") void receiveLoop(cmd.id, sock);
      return {};
    }
    case "bind": {
      const sock = get(cmd.id);
      await sock.bind(cmd.endpoint);
      return { endpoint: sock.lastEndpoint };
    }
    case "connect": get(cmd.id).connect(cmd.endpoint); return {};
    case "disconnect": get(cmd.id).disconnect(cmd.endpoint); return {};
    case "subscribe": get(cmd.id).subscribe(frameFromSpec(cmd.topic)); return {};
    case "unsubscribe": get(cmd.id).unsubscribe(frameFromSpec(cmd.topic)); return {};
    case "send": {
      const sock = get(cmd.id);
      for (let i = 0; i < (cmd.repeat ?? 1); i++) await sock.send(cmd.frames.map(frameFromSpec));
      return {};
    }
    case "pump": {
      // Slow-joiner helper: publish the same message every intervalMs until stopPump (bounded
      // by maxCount). Sends never overlap the test's own sends: stopPump waits for the loop.
      const sock = get(cmd.id);
      const frames = cmd.frames.map(frameFromSpec);
      const state = { stop: false, done: null };
      state.done = (async () => {
        for (let i = 0; i < (cmd.maxCount ?? 2000) && !state.stop; i++) {
          await sock.send(frames);
          await new Promise((r) => setTimeout(r, cmd.intervalMs ?? 5));
        }
      })().catch(() => {});
      pumps.set(cmd.id, state);
      return {};
    }
    case "stopPump": await stopPump(cmd.id); return {};
    case "close": {
      await stopPump(cmd.id);
      get(cmd.id).close();
      sockets.delete(cmd.id);
      return {};
    }
    case "exit":
      for (const id of [...pumps.keys()]) await stopPump(id);
      for (const s of sockets.values()) s.close();
      setImmediate(() => process.exit(0));
      return {};
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
}

// stdin closed (the test runner went away): queued commands finish, then the sockets close.
serveCommands(handle, () => {
  for (const s of sockets.values()) s.close();
});

out({ event: "ready", zmq: zmq.version });
