// Shared set-up for frontend tests: configs from flags (validated as the CLI does), and a stack of
// mockers + frontend in one process on one discovery directory, closed in reverse on dispose.
import { commonOptions } from "../../src/config/common.ts";
import { frontendOptions, frontendProblems, type FrontendConfig } from "../../src/config/frontend.ts";
import { loadConfig } from "../../src/config/load.ts";
import { startFrontend, type FrontendHandle } from "../../src/roles/frontend/start.ts";
import { startMocker, type MockerHandle } from "../../src/roles/mocker/index.ts";
import { createBlockHasher } from "../../src/lib/xxh3.ts";
import type { Logger } from "../../src/lib/logger.ts";
import { makeTempDir, waitFor, withTimeout } from "../harness.ts";
import { logger, mockerConfig } from "./mocker-kit.ts";

export { logger };

export function frontendConfig(argv: string[]): FrontendConfig {
  return loadConfig({ ...frontendOptions, ...commonOptions }, { argv }, (c) => frontendProblems(c as FrontendConfig)).config as FrontendConfig;
}

export interface Stack extends AsyncDisposable {
  dir: string;
  mockers: MockerHandle[];
  frontend: FrontendHandle;
  /** The OpenAI base URL (…/v1). */
  baseURL: string;
}

/**
 * `mockers` argv lists (each gets the stack's discovery dir and namespace) and a frontend; waits
 * until the frontend routes every worker and (direct mode) follows every relay.
 */
export async function startStack(opts: { mockers: string[][]; frontend?: string[]; namespace?: string; expectRelays?: boolean; frontendLogger?: Logger }): Promise<Stack> {
  const dir = await makeTempDir("kvcr-frontend-");
  const ns = opts.namespace ?? "fe";
  const shared = ["--discovery-dir", dir.path, "--namespace", ns];
  const mockers: MockerHandle[] = [];
  let frontend: FrontendHandle | undefined;
  const dispose = async () => {
    await frontend?.close();
    for (const m of mockers.reverse()) await m.close();
    await dir[Symbol.asyncDispose]();
  };
  try {
    for (const argv of opts.mockers) {
      const m = await startMocker(mockerConfig([...argv, ...(argv.includes("--speedup-ratio") ? [] : ["--speedup-ratio", "0"]), ...shared]), { logger, env: {} });
      mockers.push(m);
      await withTimeout(m.ready, 10_000, "mocker registration");
    }
    frontend = await startFrontend(frontendConfig(["--http-port", "0", ...shared, ...(opts.frontend ?? [])]), { logger: opts.frontendLogger ?? logger });
    const workers = mockers.reduce((n, m) => n + m.workers.length, 0);
    const fe = frontend;
    await waitFor(() => fe.state.workerCount === workers && (opts.expectRelays === false || fe.direct.connectedCount() === workers), { what: `frontend routing ${workers} worker(s)`, timeoutMs: 10_000 });
    // Relays know their subscriber once its subscription arrived: events published from now on reach the frontend.
    if (opts.expectRelays !== false) await waitFor(() => mockers.every((m) => m.outlets.every((o) => (o.relay?.subscriberCount() ?? 1) > 0)), { what: "relay subscriptions" });
    return { dir: dir.path, mockers, frontend, baseURL: `${frontend.url}/v1`, [Symbol.asyncDispose]: dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}

const hasher = createBlockHasher();

/** The longest device prefix of `tokens` any routed (worker, rank) holds in the frontend's index. */
export function indexedPrefix(fe: FrontendHandle, tokens: readonly number[]): number {
  const seq = hasher.hashBlocks(tokens, fe.state.blockSize!).sequence;
  const rankIds = fe.state.workerList().flatMap((w) => w.rankIds);
  const out = new Int32Array(rankIds.length);
  fe.state.index.deviceOverlaps(seq, seq.length, rankIds, out);
  return Math.max(0, ...out);
}
