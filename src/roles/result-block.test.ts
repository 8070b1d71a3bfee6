import { expect, test } from "bun:test";
import { resultBlock } from "./result-block.ts";

test("the vLLM result block: centred titles, labels padded to 40, whole numbers as is, failures after the rule", () => {
  const { title, row, end } = resultBlock();
  title("Run");
  row("Count", 3);
  row("Rate", 2.345);
  title("Part", "-");
  row("Text", "n/a");
  expect(end(["request 1: boom"], 3).split("\n")).toEqual([
    `${"=".repeat(22)} Run ${"=".repeat(23)}`,
    `${"Count:".padEnd(40)}3`,
    `${"Rate:".padEnd(40)}2.35`,
    `${"-".repeat(22)} Part ${"-".repeat(22)}`,
    `${"Text:".padEnd(40)}n/a`,
    "=".repeat(50),
    "failed request 1: boom",
    "… and 2 more failures",
    "",
  ]);
});
