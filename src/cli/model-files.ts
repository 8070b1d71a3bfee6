// `kvcr-mock model-files --out DIR`: writes a model directory that Hugging Face clients (Dynamo's
// frontend, aiperf, transformers) load offline; what is in it: core/text/hf-model-files.ts.
import { modelFilesOptions, modelFilesProblems } from "../config/model-files.ts";
import { writeModelFiles } from "../roles/model-files/write.ts";
import { defineRoleCommand } from "./define-command.ts";

export const modelFilesCommand = defineRoleCommand({
  name: "model-files",
  description: "Write a byte-level tokenizer, chat template and config.json that Hugging Face clients load offline",
  options: modelFilesOptions,
  refine: modelFilesProblems,
  async run(config, { logger }) {
    const { dir, names } = writeModelFiles(config.out!, config.maxModelLen, config.hubRepo);
    logger.info(`wrote ${names.join(", ")} into ${dir}`);
    process.stdout.write(`${dir}\n`);
  },
});
