// bench/against.ts refuses what it cannot run, before checking anything out: each mistake named,
// with the usage line and exit 2.
import { expect, test } from "bun:test";
import { spawnBun, waitFor } from "../../test/harness.ts";

const AGAINST = new URL("../against.ts", import.meta.url).pathname;

test("missing arguments, an unknown commit, a script outside bench/, a pair count under 2 and a stray argument each name their problem", async () => {
  for (const [args, problem] of [
    [[], "REV and a bench script are both required"],
    [["no-such-rev-kvcr", "bench/frontend-throughput.ts"], `"no-such-rev-kvcr" is neither a commit of this repository nor a checkout's directory`],
    [["HEAD", "bench/no-such-bench.ts"], `"bench/no-such-bench.ts" is not a bench script of this project`],
    [["HEAD", "bench/hash.ts", "--pairs", "1"], "--pairs must be an integer ≥ 2"],
    [["HEAD", "bench/hash.ts", "extra"], `unexpected argument "extra" (bench arguments go after --)`],
  ] as const) {
    await using child = spawnBun(AGAINST, args);
    expect(await child.proc.exited).toBe(2);
    await waitFor(() => child.stderrText().includes("usage:"), { what: "against's usage line on stderr" });
    expect(child.stderrText()).toContain(problem);
    expect(child.stderrText()).toContain("usage: bun bench/against.ts REV");
  }
});
