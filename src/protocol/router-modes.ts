// The router modes, one table: their names (as flags, reports and logs spell them), what each does,
// and where it may run. Config (choices, refusals, --help), bench and the core router all read it;
// docs/ARCHITECTURE.md "Adding a router mode" lists what else a new mode needs.

export interface RouterModeEntry {
  /** One line for --help. */
  readonly summary: string;
  /** Undefined: live routers (frontend, up, bench) take it; otherwise why a live router refuses it. */
  readonly replayOnly?: string;
}

/** In the order --help lists them. */
export const ROUTER_MODE_TABLE = {
  kv: { summary: "Dynamo's KV router: cached prefix per tier against the router's own load" },
  "round-robin": { summary: "each (worker, rank) in turn" },
  random: { summary: "a uniformly random (worker, rank)" },
  oracle: {
    summary: "kv's cost on the simulated engines' true cache at each decision (the bound the others are compared to)",
    replayOnly:
      "oracle is replay-only: it routes on the simulated engines' true cache and load, which a live router cannot see; use kv here, and `kvcr-mock replay --router-mode oracle` for the bound",
  },
} as const satisfies Record<string, RouterModeEntry>;

export type RouterMode = keyof typeof ROUTER_MODE_TABLE;

const entries = Object.entries(ROUTER_MODE_TABLE) as [RouterMode, RouterModeEntry][];

/** Every mode (replay takes them all). */
export const ROUTER_MODES = entries.map(([mode]) => mode) as readonly RouterMode[];
/** The modes a live router takes (frontend, up, bench). */
export const LIVE_ROUTER_MODES = entries.filter(([, e]) => e.replayOnly === undefined).map(([mode]) => mode) as readonly RouterMode[];
/** Modes a live router refuses, with the reason. */
export const REPLAY_ONLY_ROUTER_MODES: Readonly<Record<string, string>> = Object.fromEntries(entries.flatMap(([mode, e]) => (e.replayOnly === undefined ? [] : [[mode, e.replayOnly]])));

/** "kv = …; round-robin = …" for the modes given: the --help of a router-mode option. */
export function routerModesHelp(modes: readonly RouterMode[]): string {
  return modes.map((mode) => `${mode} = ${ROUTER_MODE_TABLE[mode].summary}`).join("; ");
}
