// A host name that does not resolve is a mistake to report, not an outage to retry: dialers
// retry forever, so roles check their peers' names once before dialing. A temporary DNS failure
// (EAI_AGAIN) is not an answer and is left to the dialer's retries.
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { KvcrError } from "../lib/errors.ts";

const NOT_FOUND = new Set(["ENOTFOUND", "EAI_NONAME", "EAI_NODATA", "ENODATA"]);

/** Resolves when `host` is an IP literal or a name the resolver knows; throws HOST_UNRESOLVED when it says the name does not exist. */
export async function assertResolvable(host: string, what: string, resolve: (host: string) => Promise<unknown> = (h) => lookup(h)): Promise<void> {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  if (isIP(bare) !== 0) return;
  try {
    await resolve(bare);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string" && NOT_FOUND.has(code)) {
      throw new KvcrError("HOST_UNRESOLVED", `${what}: host "${bare}" does not resolve (${code}); check the name, or give an IP address`, { cause: err });
    }
  }
}
