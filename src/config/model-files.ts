// `kvcr-mock model-files` options: where to write the offline model directory and the context
// length it declares.
import { defineOptions, group, type ConfigOf } from "./options.ts";

export const modelFilesOptions = defineOptions({
  ...group("Model files", {
    out: { kind: "string", nonEmpty: true, description: "Directory to write tokenizer.json, tokenizer_config.json and config.json into (created if missing; required)" },
    maxModelLen: { kind: "int", min: 1, max: 1 << 30, default: 32_768, description: "Context length the files declare (config.json max_position_embeddings, tokenizer_config.json model_max_length)" },
    hubRepo: {
      kind: "string",
      nonEmpty: true,
      description: "Write them as the Hugging Face hub cache holds repo ORG/NAME: --out is then a hub cache directory (HF_HUB_CACHE) and the files go to models--ORG--NAME/snapshots/<rev>/, for clients that look a tokenizer up by name offline (aiperf 0.13.0 does, even for a path)",
    },
  }),
});

export type ModelFilesConfig = ConfigOf<typeof modelFilesOptions>;

export function modelFilesProblems(c: ModelFilesConfig): string[] {
  const problems = c.out === undefined ? ["--out: required, the directory to write the model files into, e.g. --out ./mock-model"] : [];
  if (c.hubRepo !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/.test(c.hubRepo)) problems.push(`--hub-repo: got ${JSON.stringify(c.hubRepo)}, expected ORG/NAME as the hub names repos (letters, digits, . _ -), e.g. kvcr-mock/mock-model`);
  return problems;
}
