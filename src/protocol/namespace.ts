// The discovery namespace rule, shared by config validation (exit 2 before anything
// starts) and the discovery key builders (a last guard).

export const NAMESPACE_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Why `ns` cannot be a namespace, or undefined when it can. */
export function namespaceProblem(ns: string): string | undefined {
  return NAMESPACE_RE.test(ns) ? undefined : "use 1-64 characters of A-Z a-z 0-9 . _ - starting with a letter or digit";
}
