// `frontend --tokenizer` (through `up`): prompts counted and keyed as model-files' tokenizer.json
// counts them, one token per UTF-8 byte, so a client counting with the same files (aiperf, Dynamo)
// agrees with the server's usage; a tokenizer it cannot reproduce stops the start, named.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { applyChatTemplate } from "../../src/core/text/tokenizer.ts";
import { CLI_ENTRY, makeTempDir, pipeOutput, runCli, spawnChild, waitFor, withTimeout } from "../harness.ts";

describe("frontend --tokenizer", () => {
  test("prompt tokens and /tokenize are the byte-level tokenizer's; a repeat is served from the cache; a BPE with merges is refused", async () => {
    await using tmp = await makeTempDir("kvcr-tokenizer-");
    const model = join(tmp.path, "model");
    expect((await runCli(["model-files", "--out", model, "--log-level", "warn"])).exitCode).toBe(0);
    const stateFile = join(tmp.path, "state.json");
    await using up = spawnChild([process.execPath, CLI_ENTRY, "up", "--no-kv-state-agent", "--http-port", "0", "--tokenizer", model, "--block-size", "16", "--state-file", stateFile, "--log-level", "warn"], { env: { TMPDIR: tmp.path } });
    let out = "";
    pipeOutput(up, (t) => (out += t));
    await waitFor(() => existsSync(stateFile), { what: `the stack (${out.slice(-800)})`, timeoutMs: 30_000 });
    const url = (JSON.parse(readFileSync(stateFile, "utf8")) as { frontend_url: string }).frontend_url;
    const vocab = (JSON.parse(readFileSync(join(model, "tokenizer.json"), "utf8")) as { model: { vocab: Record<string, number> } }).model.vocab;
    const tokenized = (await (await fetch(`${url}/tokenize`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "Hi!" }) })).json()) as { count: number; tokens: number[] };
    expect(tokenized).toMatchObject({ count: 3, tokens: [vocab.H, vocab.i, vocab["!"]] });
    const content = "Count me in bytes, please. ".repeat(4);
    const ask = async () => {
      const res = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "mock-model", messages: [{ role: "user", content }], max_tokens: 2 }) });
      return ((await res.json()) as { usage: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } } }).usage;
    };
    const first = await ask();
    expect(first.prompt_tokens).toBe(new TextEncoder().encode(applyChatTemplate([{ role: "user", content }])).length);
    await waitFor(async () => (await ask()).prompt_tokens_details.cached_tokens >= first.prompt_tokens - 16, { what: "the repeat served from the cache", timeoutMs: 10_000 });
    up.proc.kill("SIGTERM");
    expect(await withTimeout(up.proc.exited, 30_000, "up to stop")).toBe(0);

    const merged = join(tmp.path, "merged.json");
    const t = JSON.parse(readFileSync(join(model, "tokenizer.json"), "utf8")) as { model: { merges: string[] } };
    t.model.merges = ["Ġ t"];
    writeFileSync(merged, JSON.stringify(t));
    const refused = await runCli(["frontend", "--tokenizer", merged, "--http-port", "0", "--discovery-dir", join(tmp.path, "d")]);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain(`--tokenizer: ${merged}: model.merges is not empty`);
    const missing = await runCli(["frontend", "--tokenizer", join(tmp.path, "nope"), "--http-port", "0", "--discovery-dir", join(tmp.path, "d")]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain("--tokenizer: cannot read");
  }, 60_000);
});
