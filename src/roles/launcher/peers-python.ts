// The {peers_python} of a role command outside --runtime dynamo (a router installed in the peers
// environment, as the shipped router stack files start them): --peers-python, KVCR_PEERS_PYTHON,
// else the peers environment; a command naming it with none of those is a configuration error.
import { ConfigError } from "../../lib/errors.ts";
import { findPeersPython, peersVenvDir } from "../../lib/peers-location.ts";
import { placeholdersIn } from "./template.ts";

export function peersPythonForCommands(
  c: { peersPython?: string | undefined; agentCmd?: string | undefined; mockerCmd?: string | undefined; frontendCmd?: string | undefined },
  env: Readonly<Record<string, string | undefined>>,
): string | undefined {
  const using = (
    [
      [c.agentCmd, "--agent-cmd"],
      [c.mockerCmd, "--mocker-cmd"],
      [c.frontendCmd, "--frontend-cmd"],
    ] as const
  ).filter(([cmd]) => cmd !== undefined && placeholdersIn(cmd).has("peers_python"));
  if (using.length === 0) return undefined;
  const python = c.peersPython ?? findPeersPython(env);
  if (python === undefined) {
    throw new ConfigError([`${using.map(([, flag]) => flag).join(", ")}: {peers_python} names no Python: --peers-python not given, KVCR_PEERS_PYTHON unset and no peers environment at ${peersVenvDir(env)} (the project's \`bun scripts/peers-env.ts\` builds it)`]);
  }
  return python;
}
