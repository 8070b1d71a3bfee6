// The `events` role: start(config, deps) → handle. A SUB on the worker's raw KV-event PUB and, with
// --replay, a DEALER on its replay ROUTER, requested once live is subscribed so nothing falls
// between the two. Sockets and the timer go on one AsyncDisposableStack as they open.
import { replayRequest } from "../../protocol/kv-events/index.ts";
import { replayStartSeq, type EventsConfig } from "../../config/events.ts";
import type { Logger } from "../../lib/logger.ts";
import type { RoleHandle } from "../../lib/role.ts";
import { parseEndpoint } from "../../protocol/zmtp/endpoint.ts";
import { assertResolvable } from "../../transport/resolve-host.ts";
import { DealerSocket, SubSocket } from "../../transport/zmtp/index.ts";
import { EventTap, type TapLine } from "./event-tap.ts";

export interface EventsDeps {
  logger: Logger;
  /** Where JSON lines go (process.stdout in the CLI). */
  out: { write(text: string): unknown };
}

export async function start(config: EventsConfig, deps: EventsDeps): Promise<RoleHandle> {
  const { logger } = deps;
  const endpoint = config.endpoint!;
  const topic = new TextEncoder().encode(config.topic);
  // Before any socket opens: a bad --from-seq (only possible when config skipped validation)
  // rejects start() itself instead of failing later inside `ready`.
  const replayFrom = replayStartSeq(config);
  // A name that does not resolve would be retried forever: refuse it (the CLI exits 1 naming it).
  await assertResolvable(parseEndpoint(endpoint, "connect").host, `--endpoint ${endpoint}`);
  if (config.replay !== undefined) await assertResolvable(parseEndpoint(config.replay, "connect").host, `--replay ${config.replay}`);
  const tap = new EventTap((line: TapLine) => deps.out.write(JSON.stringify(line) + "\n"), { replayFrom, topic });
  await using scope = new AsyncDisposableStack();

  const timer = scope.use(new OneTimer());
  const sub = scope.use(new SubSocket({ logger }));
  sub.onMessage((frames) => tap.live(frames));
  sub.subscribe(topic);
  sub.connect(endpoint);

  const owned = scope.move();
  const ready = (async () => {
    // Subscribe first (bounded wait), so batches published after the replay snapshot reach us.
    const subscribed = await Promise.race([sub.connected().then(() => true), new Promise<boolean>((r) => timer.set(config.replayTimeoutMs, () => r(false)))]).catch(() => false);
    timer.clear();
    if (owned.disposed) return;
    if (!subscribed) logger.warn(`events: ${endpoint} not connected after ${config.replayTimeoutMs} ms; still trying`);
    else logger.info(`events: subscribed to ${endpoint}${config.topic ? ` topic "${config.topic}"` : ""}`);
    if (replayFrom !== undefined && config.replay !== undefined) requestReplay(owned.use(new DealerSocket({ logger })), config.replay, replayFrom, { tap, timer, timeoutMs: config.replayTimeoutMs, logger });
  })();
  // Callers observe `ready` (the CLI through serveRole); this only keeps a rejection that happens
  // before they attach from being reported as unhandled.
  ready.catch(() => {});

  let closing: Promise<void> | undefined;
  const close = () => (closing ??= owned.disposeAsync());
  return { ready, ports: {}, close, [Symbol.asyncDispose]: close };
}

/** Asks the replay ROUTER for batches from `from`; each reply re-arms the timeout until the end marker. */
function requestReplay(dealer: DealerSocket, replay: string, from: bigint, ctx: { tap: EventTap; timer: OneTimer; timeoutMs: number; logger: Logger }): void {
  const { tap, timer } = ctx;
  const arm = () => timer.set(ctx.timeoutMs, () => tap.replayFailed(`no end marker from ${replay} within ${ctx.timeoutMs} ms`));
  dealer.onMessage((frames) => {
    if (!tap.isReplaying) return;
    tap.replayReply(frames);
    if (tap.isReplaying) arm();
    else {
      timer.clear();
      ctx.logger.info(`events: replay from ${replay} done; live from here`);
    }
  });
  dealer.connect(replay);
  dealer.send(replayRequest(from));
  arm();
}

/** One pending timeout at a time; cleared on dispose. */
class OneTimer implements Disposable {
  private handle: ReturnType<typeof setTimeout> | undefined;

  set(ms: number, fire: () => void): void {
    clearTimeout(this.handle);
    this.handle = setTimeout(fire, ms);
  }

  clear(): void {
    clearTimeout(this.handle);
  }

  [Symbol.dispose](): void {
    this.clear();
  }
}
