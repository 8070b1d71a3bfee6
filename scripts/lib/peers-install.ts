// What the peers-environment build decides from pip's words and the installed set (pure, tested
// on pip's real messages): an unreachable registry (exit 75, EX_TEMPFAIL), a pin the registry does
// not serve, pins that do not resolve, a GPU build that came in.

export const EX_TEMPFAIL = 75;

export class PeersError extends Error {
  constructor(message: string, readonly exitCode = 1) { super(message); }
}

/** Packages that mean a GPU build came in: the environment must stay CPU-only. */
export const GPU_PACKAGE = /^(torch|torchvision|torchaudio|triton|cupy.*|nvidia-(cuda|cudnn|cublas|cufft|curand|cusolver|cusparse|nccl|nvjitlink|nvtx).*)$/i;
export const NETWORK_ERROR = /Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|Network is unreachable|Connection refused|Read timed out|ConnectTimeoutError|No route to host|Could not fetch URL/;

/** The installed packages (name → version) that are GPU builds; a `+cpu` wheel is fine. */
export function gpuPackages(installed: ReadonlyMap<string, string>): [string, string][] {
  return [...installed].filter(([name, version]) => GPU_PACKAGE.test(name) && !version.includes("+cpu"));
}

/** pip's failure said in one line: the registry unreachable (exit 75), or the package it could not get. */
export function pipFailure(out: string): PeersError {
  if (NETWORK_ERROR.test(out)) {
    return new PeersError(`the package registry cannot be reached; the peers environment was not built (${out.match(NETWORK_ERROR)![0]})`, EX_TEMPFAIL);
  }
  const missing = out.match(/No matching distribution found for ([^\s]+)/);
  if (missing) return new PeersError(`the registry does not serve ${missing[1]} as a wheel for this machine: change its pin in scripts/peers/`);
  const conflict = out.match(/ERROR: (Cannot install|ResolutionImpossible)[^\n]*/);
  if (conflict) return new PeersError(`the pins in scripts/peers/ do not resolve together: ${conflict[0]}`);
  return new PeersError(`pip failed:\n${out.split("\n").slice(-15).join("\n")}`);
}

