// `{engine_args}`: a stack's engine settings spelled as Dynamo's `python -m dynamo.mocker` takes
// them, so `up --runtime dynamo --mocker-cmd "{peers_python} -m dynamo.mocker … {engine_args}"`
// runs Dynamo's own mocker with exactly the settings kvcr-mock's mockers would get. Every shared
// flag is passed, defaults included: where the two defaults differ (host bandwidths, KV bytes
// per token), Dynamo's would otherwise apply; without a host tier its flags are left out, as
// Dynamo's mocker wants. A setting Dynamo's mocker has no flag for is a config error when it is
// not the default, never dropped.
import type { MockerConfig } from "../../config/mocker.ts";
import { flagName, type OptionSpec } from "../../config/options.ts";
import { engineOptions } from "../../config/engine.ts";

/** Engine options Dynamo 1.6.1's mocker takes under the same flag, with the same meaning. */
export const SHARED_ENGINE_OPTIONS = [
  "blockSize", "numGpuBlocksOverride", "maxNumSeqs", "maxNumBatchedTokens", "enablePrefixCaching", "enableChunkedPrefill", "preemptionMode",
  "speedupRatio", "decodeSpeedupRatio", "dataParallelSize", "numHostBlocks", "hostOffloadD2hBandwidthGbps", "hostOffloadH2dBandwidthGbps", "kvBytesPerToken",
  "plannerProfileData",
] as const satisfies readonly (keyof typeof engineOptions)[];

/** The host tier's: Dynamo's mocker refuses them without a host tier (its --num-host-blocks must be positive). */
const HOST_TIER: ReadonlySet<string> = new Set(["numHostBlocks", "hostOffloadD2hBandwidthGbps", "hostOffloadH2dBandwidthGbps"]);

/** Options that change nothing Dynamo's mocker would do differently (the seed of output token ids). */
const WITHOUT_EFFECT: ReadonlySet<string> = new Set(["seed"]);

export interface DynamoMockerArgs {
  argv: string[];
  problems: string[];
}

export function dynamoMockerArgs(m: MockerConfig): DynamoMockerArgs {
  const values = m as unknown as Record<string, unknown>;
  const argv: string[] = [];
  for (const key of SHARED_ENGINE_OPTIONS) {
    if (HOST_TIER.has(key) && m.numHostBlocks === 0) continue;
    const value = values[key];
    const flag = flagName(key, engineOptions[key]);
    if (typeof value === "boolean") argv.push(value ? `--${flag}` : `--no-${flag}`);
    else if (value !== undefined) argv.push(`--${flag}=${String(value)}`);
  }
  if (m.maxModelLen !== undefined) argv.push(`--max-model-len=${m.maxModelLen}`);
  const shared: ReadonlySet<string> = new Set(SHARED_ENGINE_OPTIONS);
  const problems = (Object.entries(engineOptions) as [string, OptionSpec][])
    .filter(([key, spec]) => !shared.has(key) && !WITHOUT_EFFECT.has(key) && values[key] !== undefined && values[key] !== spec.default)
    // --planner-profile-data implies the profile model in both mockers.
    .filter(([key]) => !(key === "timingModel" && m.plannerProfileData !== undefined))
    .map(([key, spec]) => `{engine_args}: --${flagName(key, spec)} ${String(values[key])} has no counterpart in Dynamo's mocker (leave it at its default, ${String(spec.default)}, to compare the two)`);
  return { argv, problems };
}
