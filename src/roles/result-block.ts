// The human result block of `vllm bench serve` / benchmark_serving (50 wide, "label:" padded to
// 40, "= title =" rules), as `replay` and `bench` both print it; each fills in its own rows.

const WIDTH = 50;
const LABEL_WIDTH = 40;

export interface ResultBlock {
  /** A centred title in a rule of `fill` ("=" for the block's head, "-" for a section). */
  title(text: string, fill?: string): void;
  /** "label:" and the value; a whole number prints as is, any other number with 2 decimals. */
  row(label: string, value: string | number): void;
  /** Closes the block, lists the first failures shown and counts the rest; the block's text. */
  end(failuresShown: readonly string[], failed: number): string;
}

export function resultBlock(): ResultBlock {
  const lines: string[] = [];
  return {
    title(text, fill = "=") {
      const pad = Math.max(0, WIDTH - text.length - 2);
      lines.push(`${fill.repeat(Math.floor(pad / 2))} ${text} ${fill.repeat(Math.ceil(pad / 2))}`);
    },
    row(label, value) {
      lines.push(`${`${label}:`.padEnd(LABEL_WIDTH)}${typeof value === "number" && !Number.isInteger(value) ? value.toFixed(2) : value}`);
    },
    end(failuresShown, failed) {
      lines.push("=".repeat(WIDTH));
      for (const e of failuresShown) lines.push(`failed ${e}`);
      if (failed > failuresShown.length) lines.push(`… and ${failed - failuresShown.length} more failures`);
      return lines.join("\n") + "\n";
    },
  };
}
