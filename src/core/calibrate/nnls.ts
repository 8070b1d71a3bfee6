// Non-negative least squares on the normal equations (Lawson and Hanson's active set): minimise
// ½ θᵀQθ − cᵀθ over θ ≥ 0, for the handful of costs a step model has. Pure.

/** θ ≥ 0 minimising ‖Aθ − b‖² given Q = AᵀA (n × n, row-major) and c = Aᵀb. */
export function nnls(Q: Float64Array, c: Float64Array, n: number): Float64Array {
  const x = new Float64Array(n);
  const passive = new Array<boolean>(n).fill(false);
  const tol = 1e-12 * Math.max(1, ...Array.from(c, Math.abs));
  for (let outer = 0; outer < 3 * n; outer++) {
    const w = gradient(Q, c, x, n);
    let j = -1;
    for (let k = 0; k < n; k++) if (!passive[k] && w[k]! > tol && (j === -1 || w[k]! > w[j]!)) j = k;
    if (j === -1) break;
    passive[j] = true;
    for (let inner = 0; inner < 3 * n; inner++) {
      const s = solvePassive(Q, c, passive, n);
      if (s === undefined) {
        passive[j] = false; // singular with it: leave it at zero
        break;
      }
      let alpha = 1;
      let blocked = false;
      for (let k = 0; k < n; k++) {
        if (passive[k] && s[k]! <= 0) {
          blocked = true;
          const a = x[k]! / (x[k]! - s[k]!);
          if (a < alpha) alpha = a;
        }
      }
      if (!blocked) {
        x.set(s);
        break;
      }
      for (let k = 0; k < n; k++) {
        x[k] = x[k]! + alpha * (s[k]! - x[k]!);
        if (passive[k] && x[k]! <= 1e-15) {
          passive[k] = false;
          x[k] = 0;
        }
      }
    }
  }
  return x;
}

function gradient(Q: Float64Array, c: Float64Array, x: Float64Array, n: number): Float64Array {
  const w = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let s = c[i]!;
    for (let k = 0; k < n; k++) s -= Q[i * n + k]! * x[k]!;
    w[i] = s;
  }
  return w;
}

/** The unconstrained solution on the passive set (zero elsewhere), by Gaussian elimination; undefined when singular. */
function solvePassive(Q: Float64Array, c: Float64Array, passive: readonly boolean[], n: number): Float64Array | undefined {
  const idx: number[] = [];
  for (let k = 0; k < n; k++) if (passive[k]) idx.push(k);
  const m = idx.length;
  const a = new Float64Array(m * (m + 1));
  for (let i = 0; i < m; i++) {
    for (let k = 0; k < m; k++) a[i * (m + 1) + k] = Q[idx[i]! * n + idx[k]!]!;
    a[i * (m + 1) + m] = c[idx[i]!]!;
  }
  for (let col = 0; col < m; col++) {
    let piv = col;
    for (let r = col + 1; r < m; r++) if (Math.abs(a[r * (m + 1) + col]!) > Math.abs(a[piv * (m + 1) + col]!)) piv = r;
    const p = a[piv * (m + 1) + col]!;
    if (Math.abs(p) < 1e-14 * Math.max(1, Math.abs(Q[idx[col]! * n + idx[col]!]!))) return undefined;
    if (piv !== col) for (let k = 0; k <= m; k++) [a[col * (m + 1) + k], a[piv * (m + 1) + k]] = [a[piv * (m + 1) + k]!, a[col * (m + 1) + k]!];
    for (let r = 0; r < m; r++) {
      if (r === col) continue;
      const f = a[r * (m + 1) + col]! / p;
      if (f !== 0) for (let k = col; k <= m; k++) a[r * (m + 1) + k]! -= f * a[col * (m + 1) + k]!;
    }
  }
  const out = new Float64Array(n);
  for (let i = 0; i < m; i++) out[idx[i]!] = a[i * (m + 1) + m]! / a[i * (m + 1) + i]!;
  return out;
}
