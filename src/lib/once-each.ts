// A warning told once per key however many callers raise it (every engine of a process warns alike).
export function onceEach(warn: (message: string) => void): (message: string, key: string) => void {
  const told = new Set<string>();
  return (m, key) => {
    if (told.has(key)) return;
    told.add(key);
    warn(m);
  };
}
