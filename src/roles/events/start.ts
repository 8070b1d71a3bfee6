// The `events` role: a SUB on the worker's raw KV-event PUB and, with --replay, a DEALER on its
// replay ROUTER. Live is subscribed before replay is requested, so nothing falls between the two.
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
  const emit = (line: TapLine) => deps.out.write(JSON.stringify(line) + "\n");
  const tap = new EventTap(emit, { replayFrom, topic });

  const sub = new SubSocket({ logger });
  sub.onMessage((frames) => tap.live(frames));
  sub.subscribe(topic);
  sub.connect(endpoint);
  let dealer: DealerSocket | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;

  const armReplayTimer = () => {
    clearTimeout(timer);
    timer = setTimeout(() => tap.replayFailed(`no end marker from ${config.replay} within ${config.replayTimeoutMs} ms`), config.replayTimeoutMs);
  };

  const ready = (async () => {
    // Subscribe first (bounded wait), so batches published after the replay snapshot reach us.
    const subscribed = await Promise.race([
      sub.connected().then(() => true),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(false), config.replayTimeoutMs);
      }),
    ]).catch(() => false);
    clearTimeout(timer);
    if (closed) return;
    if (!subscribed) logger.warn(`events: ${endpoint} not connected after ${config.replayTimeoutMs} ms; still trying`);
    else logger.info(`events: subscribed to ${endpoint}${config.topic ? ` topic "${config.topic}"` : ""}`);
    if (replayFrom === undefined || config.replay === undefined) return;
    dealer = new DealerSocket({ logger });
    dealer.onMessage((frames) => {
      if (!tap.isReplaying) return;
      tap.replayReply(frames);
      if (tap.isReplaying) armReplayTimer();
      else {
        clearTimeout(timer);
        logger.info(`events: replay from ${config.replay} done; live from here`);
      }
    });
    dealer.connect(config.replay);
    dealer.send(replayRequest(replayFrom));
    armReplayTimer();
  })();
  // Callers observe `ready` (the CLI through serveRole); this only keeps a rejection that happens
  // before they attach from being reported as unhandled.
  ready.catch(() => {});

  const close = async () => {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    sub.close();
    dealer?.close();
  };
  return { ready, ports: {}, close, [Symbol.asyncDispose]: close };
}
