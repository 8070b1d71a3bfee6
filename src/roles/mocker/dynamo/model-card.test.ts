import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { writeModelFiles } from "../../model-files/write.ts";
import { ConfigError } from "../../../lib/errors.ts";
import { tempDir, thrownBy } from "../../../../test/harness.ts";
import { readModelDir } from "./model-card.ts";

describe("the model directory behind a Dynamo card", () => {
  test("output ids are the longest run without an end-of-text id: none ends a stream early, and model-files' are whole words", () => {
    using dir = tempDir("kvcr-card-");
    // model-files: end of text is id 256 of 32,768, so the words past it (a byte alone can be half a character).
    writeModelFiles(dir.path, 4096);
    expect(readModelDir(dir.path)).toMatchObject({ outputIds: { first: 257, count: 32768 - 257 }, maxPositionEmbeddings: 4096 });
    const withConfig = (config: unknown) => {
      writeFileSync(join(dir.path, "config.json"), JSON.stringify(config));
      return readModelDir(dir.path).outputIds;
    };
    expect(withConfig({ vocab_size: 32000, eos_token_id: 31999 })).toEqual({ first: 0, count: 31999 }); // a trailing end of text
    expect(withConfig({ vocab_size: 128256, eos_token_id: [128009, 128001] })).toEqual({ first: 0, count: 128001 }); // several
    expect(withConfig({ vocab_size: 32000 })).toEqual({ first: 0, count: 32000 }); // none named
    expect(withConfig({ vocab_size: 32000, eos_token_id: 99999 })).toEqual({ first: 0, count: 32000 }); // outside the vocabulary
  });

  test("a directory without the files or a usable vocab_size is named with what is missing", () => {
    using dir = tempDir("kvcr-card-");
    expect(thrownBy(ConfigError, () => readModelDir(dir.path)).problems[0]).toStartWith(`--model-path: ${dir.path} has no tokenizer.json`);
    writeModelFiles(dir.path, 4096);
    writeFileSync(join(dir.path, "config.json"), JSON.stringify({ vocab_size: "many" }));
    expect(thrownBy(ConfigError, () => readModelDir(dir.path)).problems).toEqual([`--model-path: ${join(dir.path, "config.json")} has no usable vocab_size (got "many")`]);
    writeFileSync(join(dir.path, "config.json"), "{");
    expect(thrownBy(ConfigError, () => readModelDir(dir.path)).problems[0]).toStartWith(`--model-path: ${join(dir.path, "config.json")} is not JSON`);
  });
});
