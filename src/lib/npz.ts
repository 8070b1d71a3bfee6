// NumPy's .npz (a zip of .npy arrays, as np.savez and np.savez_compressed write it): numeric arrays
// of up to two dimensions, little-endian, C order. fflate reads the zip (stored or deflated);
// the .npy header is parsed here (format versions 1–3).
import { unzipSync } from "fflate";

export interface NpyArray {
  shape: number[];
  data: Float64Array;
}

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY

/** Each array of the archive by name (without `.npy`); throws naming the entry that is not one. */
export function readNpz(bytes: Uint8Array): Map<string, NpyArray> {
  let files: Record<string, Uint8Array>;
  try {
    files = unzipSync(bytes);
  } catch (e) {
    throw new Error(`not an .npz archive (${(e as Error).message})`);
  }
  const out = new Map<string, NpyArray>();
  for (const [name, data] of Object.entries(files)) {
    if (!name.endsWith(".npy")) continue;
    const key = name.slice(0, -4);
    try {
      out.set(key, readNpy(data));
    } catch (e) {
      throw new Error(`array ${key}: ${(e as Error).message}`);
    }
  }
  return out;
}

/** One .npy array as float64 values. */
export function readNpy(b: Uint8Array): NpyArray {
  if (b.length < 10 || MAGIC.some((m, i) => b[i] !== m)) throw new Error("not a .npy array (no \\x93NUMPY magic)");
  const major = b[6]!;
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const headerLen = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = (major === 1 ? 10 : 12) + headerLen;
  const header = new TextDecoder(major === 3 ? "utf-8" : "latin1").decode(b.subarray(major === 1 ? 10 : 12, start));
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(header)?.[1];
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (descr === undefined || fortran === undefined || shapeText === undefined) throw new Error(`unreadable .npy header ${JSON.stringify(header.trim())}`);
  if (fortran === "True") throw new Error("Fortran-ordered arrays are not read; save it in C order");
  const shape = shapeText.split(",").map((s) => s.trim()).filter((s) => s !== "").map(Number);
  const count = shape.reduce((a, n) => a * n, 1);
  const reader = READERS[descr];
  if (reader === undefined) throw new Error(`dtype ${descr} is not read (float64, float32, int64 or int32, little-endian)`);
  if (start + count * reader.size > b.length) throw new Error(`holds ${b.length - start} data bytes, shape ${JSON.stringify(shape)} needs ${count * reader.size}`);
  const data = new Float64Array(count);
  for (let i = 0; i < count; i++) data[i] = reader.get(view, start + i * reader.size);
  return { shape, data };
}

const READERS: Record<string, { size: number; get(v: DataView, at: number): number }> = {
  "<f8": { size: 8, get: (v, at) => v.getFloat64(at, true) },
  "<f4": { size: 4, get: (v, at) => v.getFloat32(at, true) },
  "<i8": { size: 8, get: (v, at) => Number(v.getBigInt64(at, true)) },
  "<i4": { size: 4, get: (v, at) => v.getInt32(at, true) },
};
