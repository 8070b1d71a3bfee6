// The spelling of `--etcd-endpoints` / ETCD_ENDPOINTS: comma-separated http(s) URLs, as
// Dynamo reads it. Shared by config validation (exit 2 before anything starts) and the etcd client.

export type ParsedEndpoints = { ok: true; endpoints: string[] } | { ok: false; problem: string };

/** Origins (`http://host:port`) in the given order, or the first problem found. */
export function parseEtcdEndpoints(spec: string | readonly string[]): ParsedEndpoints {
  const list = (typeof spec === "string" ? spec.split(",") : [...spec]).map((s) => s.trim()).filter((s) => s.length > 0);
  if (list.length === 0) return { ok: false, problem: "none given; pass --etcd-endpoints http://HOST:2379[,…] or set ETCD_ENDPOINTS" };
  const endpoints: string[] = [];
  for (const e of list) {
    let url: URL;
    try {
      url = new URL(e);
    } catch {
      return { ok: false, problem: `${JSON.stringify(e)} is not a URL; use http://HOST:PORT` };
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return { ok: false, problem: `${JSON.stringify(e)}: scheme ${url.protocol} is not supported; use http:// or https://` };
    endpoints.push(url.origin);
  }
  return { ok: true, endpoints };
}
