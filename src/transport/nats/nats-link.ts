// One NATS connection that never gives up: the first connect is retried in the background (the
// caller starts at once, unconnected), later drops are the client's reconnects, forever. Publishes
// while unconnected are refused (the caller counts them) rather than buffered without bound.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../../lib/logger.ts";

export interface NatsLinkOptions {
  /** nats://host:port (several comma-separated). */
  url: string;
  /** Shown by the server (connz): who this client is. */
  name: string;
  logger: Logger;
  /** Milliseconds between first-connect attempts (default 250). */
  retryMs?: number;
}

export interface NatsLink extends AsyncDisposable {
  /** Connected to a server now. */
  readonly connected: boolean;
  /** Largest payload the server takes (bytes; 1 MiB until known). */
  readonly maxPayload: number;
  /** Times the connection was lost. */
  readonly disconnects: number;
  /** Sends now; false (nothing sent) while unconnected. */
  publish(subject: string, data: Uint8Array): boolean;
  /** Calls `onMessage` for every message on the subject, across reconnects. */
  subscribe(subject: string, onMessage: (data: Uint8Array) => void): void;
  /** Resolves once everything published so far reached the server (or at once, unconnected). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export function openNatsLink(opts: NatsLinkOptions): NatsLink {
  const { logger } = opts;
  let nc: NatsConnection | undefined;
  let connected = false;
  let closed = false;
  let disconnects = 0;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let warned = false;
  const subs: { subject: string; onMessage: (data: Uint8Array) => void }[] = [];

  const listen = (c: NatsConnection, subject: string, onMessage: (data: Uint8Array) => void) => {
    c.subscribe(subject, { callback: (err, msg) => (err ? logger.warn(`NATS subscription ${subject}: ${err.message}`) : onMessage(msg.data)) });
  };

  const watch = async (c: NatsConnection) => {
    for await (const s of c.status()) {
      if (s.type === "disconnect") {
        if (connected) disconnects++;
        connected = false;
        if (!closed) logger.warn(`NATS ${opts.url}: connection lost; reconnecting`);
      } else if (s.type === "reconnect") {
        connected = true;
        logger.info(`NATS ${opts.url}: reconnected`);
      }
    }
  };

  const attempt = async () => {
    retry = undefined;
    try {
      const c = await connect({ servers: opts.url.split(","), name: opts.name, noEcho: true, maxReconnectAttempts: -1, reconnectTimeWait: 250, pingInterval: 5_000, maxPingOut: 2 });
      if (closed) return void (await c.close());
      nc = c;
      connected = true;
      logger.info(`NATS ${opts.url}: connected (server ${c.info?.version ?? "?"})`);
      for (const s of subs) listen(c, s.subject, s.onMessage);
      void watch(c);
      // A connection the client closed for good (not ours): start over.
      void c.closed().then(() => {
        connected = false;
        if (nc === c) nc = undefined;
        if (!closed) schedule();
      });
    } catch (err) {
      if (!warned) logger.warn(`NATS ${opts.url}: cannot connect (${(err as Error).message}); retrying in the background`);
      warned = true;
      schedule();
    }
  };
  const schedule = () => {
    if (!closed && retry === undefined) retry = setTimeout(() => void attempt(), opts.retryMs ?? 250);
  };
  void attempt();

  const close = async () => {
    if (closed) return;
    closed = true;
    clearTimeout(retry);
    connected = false;
    await nc?.close().catch(() => undefined);
  };
  return {
    get connected() {
      return connected;
    },
    get maxPayload() {
      return nc?.info?.max_payload ?? 1 << 20;
    },
    get disconnects() {
      return disconnects;
    },
    publish(subject, data) {
      if (!connected || nc === undefined) return false;
      nc.publish(subject, data);
      return true;
    },
    subscribe(subject, onMessage) {
      subs.push({ subject, onMessage });
      if (nc !== undefined) listen(nc, subject, onMessage);
    },
    async flush() {
      if (connected && nc !== undefined) await nc.flush().catch(() => undefined);
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
