// Summary statistics with numpy's default percentile (linear interpolation), as vLLM's
// benchmark_serving computes them, so figures are comparable. Order statistics come from
// quickselect (O(n)) because a full replay has millions of inter-token gaps.

export interface Summary {
  mean: number;
  median: number;
  std: number;
  p50: number;
  p90: number;
  p99: number;
}

/** numpy-style percentile of `values` (reordered in place); q in [0, 100]. */
export function percentile(values: Float64Array, q: number): number {
  const n = values.length;
  if (n === 0) return 0;
  const pos = (q / 100) * (n - 1);
  const lo = Math.floor(pos);
  const a = select(values, lo);
  if (pos === lo) return a;
  // After selecting lo, everything right of it is ≥ it: the next order statistic is their min.
  let b = Infinity;
  for (let i = lo + 1; i < n; i++) if (values[i]! < b) b = values[i]!;
  return a + (b - a) * (pos - lo);
}

/** Summary of `values` (reordered in place). Empty → all zeros. */
export function summarize(values: Float64Array): Summary {
  const n = values.length;
  if (n === 0) return { mean: 0, median: 0, std: 0, p50: 0, p90: 0, p99: 0 };
  let sum = 0;
  for (let i = 0; i < n; i++) sum += values[i]!;
  const mean = sum / n;
  let sq = 0;
  for (let i = 0; i < n; i++) sq += (values[i]! - mean) ** 2;
  const p50 = percentile(values, 50);
  return { mean, median: p50, std: Math.sqrt(sq / n), p50, p90: percentile(values, 90), p99: percentile(values, 99) };
}

/** Hoare-style quickselect: puts the k-th smallest at index k, smaller left, larger right. */
function select(a: Float64Array, k: number): number {
  let lo = 0;
  let hi = a.length - 1;
  while (hi > lo) {
    // Median of three keeps sorted and constant runs (common: equal step times) linear.
    const mid = (lo + hi) >>> 1;
    const pivot = median3(a[lo]!, a[mid]!, a[hi]!);
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return a[k]!;
  }
  return a[k]!;
}

function median3(x: number, y: number, z: number): number {
  return x < y ? (y < z ? y : x < z ? z : x) : x < z ? x : y < z ? z : y;
}
