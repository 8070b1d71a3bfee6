// What `up` needs from the platform, checked before anything starts: children supervised as
// process groups (a group kill leaves no orphan, even of a child's own children) and external role
// commands run through /bin/sh. Windows has neither; every single role runs there on its own.

/** Why `up` cannot run on `platform` (a Node/Bun platform name), or undefined when it can. */
export function upUnsupportedOn(platform: string): string | undefined {
  if (platform !== "win32") return undefined;
  return "kvcr-mock up is not supported on Windows: it supervises its children as POSIX process groups (and runs --agent-cmd/--mocker-cmd/--frontend-cmd through /bin/sh), which Windows does not have. Start the roles one by one (kvcr-mock agent, kvcr-mock mocker, kvcr-mock frontend), or run up under WSL";
}
