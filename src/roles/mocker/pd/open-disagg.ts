// Sets up a mocker process's disaggregated role from its config: the side (disagg-side.ts), its
// transfer figures and, on a prefill worker, the held transfers and the transfer endpoint served on
// --kv-transfer-port (closed with the process). With `roomsOnTransferPort` (kvcr-mock's own
// runtime) the legs SGLang's router pairs by bootstrap room meet on that port too: the prefill's
// rooms answer `meet`, and a decode asks it. Agg: nothing (undefined).
import { DEFAULT_KV_TRANSFER_HOLD_TIMEOUT_S, type DisaggregationSettings } from "../../../config/disaggregation.ts";
import type { Logger } from "../../../lib/logger.ts";
import { bindFailed } from "../../../transport/bind-error.ts";
import { serveHttp } from "../../../transport/http/server.ts";
import { BootstrapRooms } from "./bootstrap-rooms.ts";
import { DisaggSide } from "./disagg-side.ts";
import { RENDEZVOUS_TIMEOUT_MS } from "./handoff-destination.ts";
import { meetRoom } from "./pull-client.ts";
import { HeldTransfers } from "./held-transfers.ts";
import { createTransferFetch } from "./transfer-app.ts";
import { TransferStats } from "./transfer-stats.ts";

export interface OpenedDisagg {
  side: DisaggSide;
  stats: TransferStats;
  /** Prefill: where decode workers pull from (advertised in each worker record). */
  endpoint?: { host: string; port: number };
}

export function openDisagg(
  config: DisaggregationSettings & { host: string; blockSize?: number },
  ctx: { workerIds: readonly string[]; advertisedHost: string; logger: Logger; rooms?: BootstrapRooms; roomsOnTransferPort?: boolean },
  scope: AsyncDisposableStack,
): OpenedDisagg | undefined {
  const mode = config.disaggregationMode;
  if (mode === "agg") return undefined;
  let held: HeldTransfers | undefined;
  const stats = new TransferStats(mode, () => held?.blocks ?? 0);
  // A decode asks a little past the prefill side's own wait, so the prefill's answer (504) is what it reads.
  const meet = ctx.roomsOnTransferPort ? { meet: (m: { info: Parameters<typeof meetRoom>[0] }) => meetRoom(m.info, RENDEZVOUS_TIMEOUT_MS + 2_000) } : {};
  if (mode === "decode") return { side: new DisaggSide({ mode, workerIds: ctx.workerIds, stats, logger: ctx.logger, ...meet, ...(config.blockSize ? { blockSize: config.blockSize } : {}) }), stats };
  const holdMs = (config.kvTransferHoldTimeout ?? DEFAULT_KV_TRANSFER_HOLD_TIMEOUT_S) * 1000;
  held = new HeldTransfers(holdMs, stats, ctx.logger);
  scope.defer(() => held!.close());
  const rooms = ctx.rooms ?? (ctx.roomsOnTransferPort ? new BootstrapRooms(RENDEZVOUS_TIMEOUT_MS, holdMs) : undefined);
  if (rooms !== undefined && ctx.rooms === undefined) scope.defer(() => rooms.close());
  const port = config.kvTransferPort ?? 0;
  let server;
  try {
    server = serveHttp({ host: config.host, port, fetch: createTransferFetch(held, rooms), logger: ctx.logger });
  } catch (err) {
    throw bindFailed("BIND_FAILED", "serve the KV transfer endpoint (--kv-transfer-port)", config.host, port, (err as { cause?: unknown }).cause ?? err);
  }
  scope.defer(() => server.stop(true).catch(() => {}));
  const endpoint = { host: ctx.advertisedHost, port: server.port };
  ctx.logger.info(`prefill worker(s): KV transfer endpoint on ${server.url}`);
  return { side: new DisaggSide({ mode, workerIds: ctx.workerIds, stats, logger: ctx.logger, held, endpoint, ...(rooms ? { rooms } : {}) }), stats, endpoint };
}
