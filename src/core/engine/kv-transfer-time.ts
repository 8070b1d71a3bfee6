// How long a decode rank's pull of a remote prefill's KV takes on the engine clock: bytes /
// bandwidth, the bytes being the whole prompt (full_prompt) or only the tokens this rank lacked
// (destination_missing), Dynamo's two timing modes. Pure.

export interface KvTransferTiming {
  kvBytesPerToken: number;
  /** Already scaled by the speedup ratio; 0 = instant. */
  bandwidthGbps: number;
  mode: "full_prompt" | "destination_missing";
}

export function remoteTransfer(t: KvTransferTiming, promptTokens: number, missingTokens: number): { bytes: number; ms: number } {
  const bytes = (t.mode === "full_prompt" ? promptTokens : missingTokens) * t.kvBytesPerToken;
  const ms = t.bandwidthGbps > 0 && Number.isFinite(t.bandwidthGbps) ? bytes / (t.bandwidthGbps * 1e6) : 0;
  return { bytes, ms };
}
