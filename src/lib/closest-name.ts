// "Did you mean …?" for a misspelt command or flag: a suggestion only when a known name is close
// enough to be the same word mistyped (or a unique start of one), never the least-bad of unrelated names.

/**
 * The known name a misspelt `name` most plausibly meant, or undefined when none is close: within
 * an edit distance of a quarter of its length (1 to 3; a transposition counts once), or, from four
 * characters on, the start of exactly one known name (`--max-conc` → `--max-concurrency`).
 */
export function closestName(name: string, known: Iterable<string>): string | undefined {
  const names = [...known];
  const limit = Math.min(3, Math.max(1, Math.floor(name.length / 4)));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of names) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  if (best !== undefined && bestDistance <= limit) return best;
  const extending = name.length >= 4 ? names.filter((n) => n.startsWith(name)) : [];
  return extending.length === 1 ? extending[0] : undefined;
}

/** Optimal string alignment distance (Levenshtein plus adjacent transpositions). */
export function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}
