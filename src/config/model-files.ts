// `kvcr-mock model-files` options: where to write the offline model directory and the context
// length it declares.
import { defineOptions, group, type ConfigOf } from "./options.ts";

export const modelFilesOptions = defineOptions({
  ...group("Model files", {
    out: { kind: "string", nonEmpty: true, description: "Directory to write tokenizer.json, tokenizer_config.json and config.json into (created if missing; required)" },
    maxModelLen: { kind: "int", min: 1, max: 1 << 30, default: 32_768, description: "Context length the files declare (config.json max_position_embeddings, tokenizer_config.json model_max_length)" },
  }),
});

export type ModelFilesConfig = ConfigOf<typeof modelFilesOptions>;

export function modelFilesProblems(c: ModelFilesConfig): string[] {
  return c.out === undefined ? ["--out: required, the directory to write the model files into, e.g. --out ./mock-model"] : [];
}
