// `kvcr-mock model-files` read by the Hugging Face libraries of the peers environment: the tokenizer
// equals the one Dynamo's offline example builds with `tokenizers` (plus words for ids 257–32767,
// which Dynamo's mocker emits and benchmarks send), round-trips text byte by byte,
// and renders chat exactly as kvcr-mock's own template does.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { applyChatTemplate } from "../../src/core/text/tokenizer.ts";
import { loadTokenizer } from "../../src/roles/frontend/tokenizer-file.ts";
import { makeTempDir, runCli, spawnProcess, withTimeout } from "../harness.ts";
import { PEERS_PYTHON, peerEnv, peersAvailable } from "../peers.ts";

const CHECK = `
import json, sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoTokenizer
d = sys.argv[1]
alpha = sorted(pre_tokenizers.ByteLevel.alphabet())
words = {f"\u0120t{k}": k for k in range(257, 32768)}
ref = Tokenizer(models.BPE(vocab={**{c: i for i, c in enumerate(alpha)}, "<|endoftext|>": 256, **words}, merges=[]))
ref.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
ref.decoder = decoders.ByteLevel()
ref.add_special_tokens(["<|endoftext|>"])
t = AutoTokenizer.from_pretrained(d, local_files_only=True)
text = "Héllo, wörld! 你好 <|endoftext|>"
ids = t.encode(text)
messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"}]
print(json.dumps({"same_as_reference": json.loads(ref.to_str()) == json.load(open(d + "/tokenizer.json")),
                  "ids": ids, "decoded": t.decode(ids), "eos": t.eos_token_id, "vocab": len(t), "words": t.decode([1000, 1999]),
                  "chat": t.apply_chat_template(messages, tokenize=False)}))
`;

describe.if(peersAvailable())("model-files under transformers (peers environment)", () => {
  test("loads offline, equals Dynamo's byte-level recipe, round-trips text and renders kvcr-mock's chat template", async () => {
    await using tmp = await makeTempDir("kvcr-model-files-");
    const dir = join(tmp.path, "mock-model");
    const r = await runCli(["model-files", "--out", dir, "--log-level", "warn"]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(dir);
    await using py = spawnProcess([PEERS_PYTHON!, "-c", CHECK, dir], { env: peerEnv({ TMPDIR: tmp.path }) });
    const line = await py.readLine((l) => l.startsWith("{"), 60_000);
    await withTimeout(py.proc.exited, 10_000, "python");
    const got = JSON.parse(line);
    expect(got.same_as_reference).toBe(true);
    const text = "Héllo, wörld! 你好 <|endoftext|>";
    expect(got.decoded).toBe(text);
    // One id per UTF-8 byte of the text before the special token, then the special token's own id.
    expect(got.ids).toHaveLength(new TextEncoder().encode("Héllo, wörld! 你好 ").length + 1);
    expect(got.ids.at(-1)).toBe(256);
    // frontend --tokenizer counts exactly as transformers does with these files.
    expect(loadTokenizer(dir)(text)).toEqual(got.ids);
    expect(got.eos).toBe(256);
    expect(got.vocab).toBe(32768);
    // Dynamo's mocker's output ids decode to words, so its streams carry text.
    expect(got.words).toBe(" t1000 t1999");
    expect(got.chat).toBe(applyChatTemplate([{ role: "system", content: "Be brief." }, { role: "user", content: "Hi there" }]));
  }, 90_000);
});

describe("model-files bad input", () => {
  test("refuses a missing --out and an --out that is a file, naming it", async () => {
    await using tmp = await makeTempDir("kvcr-model-files-");
    const missing = await runCli(["model-files"]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain("--out: required");
    const file = join(tmp.path, "f");
    await Bun.write(file, "x");
    const onFile = await runCli(["model-files", "--out", file]);
    expect(onFile.exitCode).toBe(2);
    expect(onFile.stderr).toContain(`${file} exists and is not a directory`);
    const badRepo = await runCli(["model-files", "--out", tmp.path, "--hub-repo", "no-slash"]);
    expect(badRepo.exitCode).toBe(2);
    expect(badRepo.stderr).toContain('--hub-repo: got "no-slash", expected ORG/NAME');
  });

  test("--hub-repo lays the files out as the hub cache holds a download: a snapshot named by refs/main", async () => {
    await using tmp = await makeTempDir("kvcr-model-files-");
    const r = await runCli(["model-files", "--out", tmp.path, "--hub-repo", "kvcr-mock/mock-model", "--log-level", "warn"]);
    expect(r.exitCode).toBe(0);
    const repo = join(tmp.path, "models--kvcr-mock--mock-model");
    const rev = readFileSync(join(repo, "refs", "main"), "utf8");
    expect(rev).toMatch(/^[0-9a-f]{40}$/);
    expect(r.stdout.trim()).toBe(join(repo, "snapshots", rev));
    expect(readdirSync(join(repo, "snapshots", rev)).sort()).toEqual(["config.json", "tokenizer.json", "tokenizer_config.json"]);
  });
});
