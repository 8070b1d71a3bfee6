// `up --runtime dynamo`: what the stack needs before it plans Dynamo's roles: the Python that runs
// them (--peers-python, KVCR_PEERS_PYTHON, else the peers environment), checked to import Dynamo's
// state agent and frontend, the model directory the cards name (--model-path, else one up writes),
// and a temp directory for Dynamo's roles; what up wrote is removed with the stack.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hfModelFiles } from "../../core/text/hf-model-files.ts";
import { ConfigError } from "../../lib/errors.ts";
import { findPeersPython, peersVenvDir } from "../../lib/peers-location.ts";

const NEEDS = "ai-dynamo==1.6.1 and ai-dynamo-runtime==1.6.1 (the project's `bun scripts/peers-env.ts` builds a Python with both)";

export interface DynamoRoles extends Disposable {
  peersPython: string;
  modelPath: string;
  /** TMPDIR of Dynamo's roles: their Python writes a logging config there at every start. */
  tmpDir: string;
}

export function resolveDynamoRoles(
  o: { peersPython?: string | undefined; modelPath?: string | undefined; maxModelLen: number },
  env: Readonly<Record<string, string | undefined>>,
): DynamoRoles {
  const python = o.peersPython ?? findPeersPython(env);
  if (python === undefined) {
    throw new ConfigError([`--runtime dynamo: no Python for Dynamo's roles: --peers-python not given, KVCR_PEERS_PYTHON unset and no peers environment at ${peersVenvDir(env)}; it needs ${NEEDS}`]);
  }
  let check: ReturnType<typeof Bun.spawnSync>;
  try {
    check = Bun.spawnSync([python, "-c", "import dynamo.kv_state_agent, dynamo.frontend"], { stdout: "ignore", stderr: "pipe", env: { ...env, HF_HUB_OFFLINE: "1" } as Record<string, string> });
  } catch (err) {
    throw new ConfigError([`--peers-python ${python}: cannot run it (${(err as Error).message}); it needs ${NEEDS}`]);
  }
  if (check.exitCode !== 0) {
    const why = check.stderr?.toString().trim().split("\n").pop() || `exit ${check.exitCode}`;
    throw new ConfigError([`--peers-python ${python}: cannot import Dynamo's state agent and frontend (${why}); it needs ${NEEDS}`]);
  }
  // One directory of the stack's own, removed with it: the model (unless given) and Dynamo's temp files.
  const dir = mkdtempSync(join(env.TMPDIR || tmpdir(), "kvcr-up-dynamo-"));
  const tmpDir = join(dir, "tmp");
  mkdirSync(tmpDir);
  let modelPath = o.modelPath;
  if (modelPath === undefined) {
    modelPath = join(dir, "model");
    mkdirSync(modelPath);
    for (const [name, text] of Object.entries(hfModelFiles({ maxModelLen: o.maxModelLen }))) writeFileSync(join(modelPath, name), text);
  }
  return { peersPython: python, modelPath, tmpDir, [Symbol.dispose]: () => rmSync(dir, { recursive: true, force: true }) };
}
