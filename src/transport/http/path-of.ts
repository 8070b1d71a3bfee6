// The pathname of a request URL without a URL parse per request: a known route spelled plainly
// (no query, nothing to normalize) is taken as is; anything else goes through URL, which
// normalizes it (so /v1/../v1/generate or /live?x=1 still find their route).
export function pathOf(url: string, known: ReadonlySet<string>): string {
  const scheme = url.indexOf("//");
  const slash = scheme < 0 ? -1 : url.indexOf("/", scheme + 2);
  if (slash >= 0) {
    const raw = url.slice(slash);
    if (known.has(raw)) return raw;
  }
  return new URL(url).pathname;
}
