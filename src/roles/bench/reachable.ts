// Before a run against a running server: is anything answering at its URL? A refused or silent
// connection ends bench with one line saying so (exit 1), instead of a run of failed requests
// and a table of zeros. Any HTTP answer, an error status included, counts as reachable.
import { KvcrError } from "../../lib/errors.ts";
import { get } from "../../transport/http/client.ts";

/** The error bench ends with when nothing answers at `url`: names the URL and the cause. */
export function unreachable(url: string, cause: unknown): KvcrError {
  return new KvcrError("SERVER_UNREACHABLE", `the server at ${url} is unreachable (${(cause as Error).message}); nothing was sent. Is it running? (\`kvcr-mock up\` starts one)`);
}

/** Resolves once `url` answers GET /v1/models with any HTTP status; throws unreachable() otherwise. */
export async function assertReachable(url: string, headers: Record<string, string>, timeoutMs = 10_000): Promise<void> {
  try {
    const res = await get(url.replace(/\/+$/, "") + "/v1/models", { headers, signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
  } catch (err) {
    throw unreachable(url, err);
  }
}
