// `bench --url A,B,…`: one server, or several frontends the requests are spread over in turn.

/** The base URLs of a --url list, each without a trailing / or /v1. */
export function splitUrls(text: string): string[] {
  return text.split(",").map((u) => u.trim().replace(/\/+$/, "").replace(/\/v1$/, "")).filter(Boolean);
}

/** What is wrong with a --url list, or undefined. */
export function urlListProblem(text: string): string | undefined {
  const urls = splitUrls(text);
  const bad = urls.find((u) => !/^https?:\/\/\S+$/.test(u));
  if (urls.length === 0 || bad !== undefined) return `--url: got "${text}", expected an http(s) URL such as http://127.0.0.1:8000 (or several, comma-separated, to spread requests over)`;
  return undefined;
}
