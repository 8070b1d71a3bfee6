// XXH3-64 with a seed, written from xxHash's specification (doc/xxhash_spec.md in its repository),
// in AssemblyScript for WebAssembly, and the router's chain of block hashes over it. Compiled by
// `npm run build:wasm` into src/lib/xxh3-wasm-bytes.ts. Why: Bun.hash.xxHash3 returns a new bigint
// per call, two per block; this writes a prompt's hashes into linear memory, allocating nothing,
// and is faster than a call per block up to 128-token blocks (bench/hash.ts, docs/PERFORMANCE.md).
const P32_1: u64 = 0x9E3779B1;
const P32_2: u64 = 0x85EBCA77;
const P32_3: u64 = 0xC2B2AE3D;
const P64_1: u64 = 0x9E3779B185EBCA87;
const P64_2: u64 = 0xC2B2AE3D27D4EB4F;
const P64_3: u64 = 0x165667B19E3779F9;
const P64_4: u64 = 0x85EBCA77C2B2AE63;
const P64_5: u64 = 0x27D4EB2F165667C5;
const MX1: u64 = 0x165667919E3779F9;
const MX2: u64 = 0x9FB21C651E98DF25;

const SECRET: usize = memory.data<u8>([
  0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
  0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
  0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
  0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
  0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
  0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
  0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
  0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
  0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
  0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
  0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
  0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
]);
const SECRET_SIZE: usize = 192;
/** The secret derived from a seed for inputs over 240 bytes, and the seed it was derived from. */
const DERIVED: usize = memory.data(192, 16);
let derivedFor: u64 = 0;
let derived = false;
const PAIR: usize = memory.data(16, 16);

@inline function rd64(p: usize): u64 { return load<u64>(p); }
@inline function rd32(p: usize): u64 { return <u64>load<u32>(p); }

function fold128(a: u64, b: u64): u64 {
  const aLo = a & 0xFFFFFFFF;
  const aHi = a >> 32;
  const bLo = b & 0xFFFFFFFF;
  const bHi = b >> 32;
  const lolo = aLo * bLo;
  const hilo = aHi * bLo;
  const lohi = aLo * bHi;
  const hihi = aHi * bHi;
  const cross = (lolo >> 32) + (hilo & 0xFFFFFFFF) + lohi;
  const upper = (hilo >> 32) + (cross >> 32) + hihi;
  const lower = (cross << 32) | (lolo & 0xFFFFFFFF);
  return lower ^ upper;
}

@inline function avalanche(h: u64): u64 {
  h ^= h >> 37;
  h *= MX1;
  return h ^ (h >> 32);
}

function avalancheXxh64(h: u64): u64 {
  h ^= h >> 33;
  h *= P64_2;
  h ^= h >> 29;
  h *= P64_3;
  return h ^ (h >> 32);
}

@inline function mix16(p: usize, s: usize, seed: u64): u64 {
  return fold128(rd64(p) ^ (rd64(s) + seed), rd64(p + 8) ^ (rd64(s + 8) - seed));
}

function upTo16(p: usize, len: usize, seed: u64): u64 {
  const s = SECRET;
  if (len > 8) {
    const lo = ((rd64(s + 24) ^ rd64(s + 32)) + seed) ^ rd64(p);
    const hi = ((rd64(s + 40) ^ rd64(s + 48)) - seed) ^ rd64(p + len - 8);
    return avalanche(<u64>len + bswap<u64>(lo) + hi + fold128(lo, hi));
  }
  if (len >= 4) {
    const seed2 = seed ^ (<u64>bswap<u32>(<u32>seed) << 32);
    const combined = rd32(p + len - 4) | (rd32(p) << 32);
    let h = ((rd64(s + 8) ^ rd64(s + 16)) - seed2) ^ combined;
    h ^= rotl<u64>(h, 49) ^ rotl<u64>(h, 24);
    h *= MX2;
    h ^= (h >> 35) + <u64>len;
    h *= MX2;
    return h ^ (h >> 28);
  }
  if (len > 0) {
    const combined = (<u64>load<u8>(p + len - 1)) | (<u64>len << 8) | (<u64>load<u8>(p) << 16) | (<u64>load<u8>(p + (len >> 1)) << 24);
    return avalancheXxh64(((rd32(s) ^ rd32(s + 4)) + seed) ^ combined);
  }
  return avalancheXxh64(seed ^ rd64(s + 56) ^ rd64(s + 64));
}

function upTo128(p: usize, len: usize, seed: u64): u64 {
  const s = SECRET;
  let acc = <u64>len * P64_1;
  if (len > 32) {
    if (len > 64) {
      if (len > 96) {
        acc += mix16(p + 48, s + 96, seed);
        acc += mix16(p + len - 64, s + 112, seed);
      }
      acc += mix16(p + 32, s + 64, seed);
      acc += mix16(p + len - 48, s + 80, seed);
    }
    acc += mix16(p + 16, s + 32, seed);
    acc += mix16(p + len - 32, s + 48, seed);
  }
  acc += mix16(p, s, seed);
  acc += mix16(p + len - 16, s + 16, seed);
  return avalanche(acc);
}

function upTo240(p: usize, len: usize, seed: u64): u64 {
  const s = SECRET;
  let acc = <u64>len * P64_1;
  for (let i: usize = 0; i < 8; i++) acc += mix16(p + 16 * i, s + 16 * i, seed);
  acc = avalanche(acc);
  const chunks = len >> 4;
  for (let i: usize = 8; i < chunks; i++) acc += mix16(p + 16 * i, s + 16 * (i - 8) + 3, seed);
  acc += mix16(p + len - 16, s + 119, seed);
  return avalanche(acc);
}

@inline function lane(v: u64, k: u64): u64 {
  const x = v ^ k;
  return (x & 0xFFFFFFFF) * (x >> 32);
}

@inline function scramble(a: u64, k: u64): u64 {
  return (a ^ (a >> 47) ^ k) * P32_1;
}

/**
 * Inputs over 240 bytes: 64-byte stripes into eight accumulators (locals, so they stay in
 * registers), a scramble after each 1,024-byte block, then the last 64 bytes as one more stripe.
 */
function long(p: usize, len: usize, s: usize): u64 {
  let a0 = P32_3;
  let a1 = P64_1;
  let a2 = P64_2;
  let a3 = P64_3;
  let a4 = P64_4;
  let a5 = P32_2;
  let a6 = P64_5;
  let a7 = P32_1;
  // 16 stripes a block with the 192-byte secret; block n's stripe k is stripe 16n + k of the input.
  const blocks = (len - 1) / 1024;
  const inBlocks = blocks * 16;
  const stripes = inBlocks + (len - 1 - 1024 * blocks) / 64;
  const key = s + SECRET_SIZE - 64;
  for (let t: usize = 0; t <= stripes; t++) {
    const q = t < stripes ? p + 64 * t : p + len - 64;
    const k = t < stripes ? s + 8 * (t & 15) : s + SECRET_SIZE - 71;
    const v0 = rd64(q);
    const v1 = rd64(q + 8);
    const v2 = rd64(q + 16);
    const v3 = rd64(q + 24);
    const v4 = rd64(q + 32);
    const v5 = rd64(q + 40);
    const v6 = rd64(q + 48);
    const v7 = rd64(q + 56);
    a0 += v1 + lane(v0, rd64(k));
    a1 += v0 + lane(v1, rd64(k + 8));
    a2 += v3 + lane(v2, rd64(k + 16));
    a3 += v2 + lane(v3, rd64(k + 24));
    a4 += v5 + lane(v4, rd64(k + 32));
    a5 += v4 + lane(v5, rd64(k + 40));
    a6 += v7 + lane(v6, rd64(k + 48));
    a7 += v6 + lane(v7, rd64(k + 56));
    if (t < inBlocks && (t & 15) == 15) {
      a0 = scramble(a0, rd64(key));
      a1 = scramble(a1, rd64(key + 8));
      a2 = scramble(a2, rd64(key + 16));
      a3 = scramble(a3, rd64(key + 24));
      a4 = scramble(a4, rd64(key + 32));
      a5 = scramble(a5, rd64(key + 40));
      a6 = scramble(a6, rd64(key + 48));
      a7 = scramble(a7, rd64(key + 56));
    }
  }
  const m = s + 11;
  let h = <u64>len * P64_1;
  h += fold128(a0 ^ rd64(m), a1 ^ rd64(m + 8));
  h += fold128(a2 ^ rd64(m + 16), a3 ^ rd64(m + 24));
  h += fold128(a4 ^ rd64(m + 32), a5 ^ rd64(m + 40));
  h += fold128(a6 ^ rd64(m + 48), a7 ^ rd64(m + 56));
  return avalanche(h);
}

function hash(p: usize, len: usize, seed: u64): u64 {
  if (len <= 16) return upTo16(p, len, seed);
  if (len <= 128) return upTo128(p, len, seed);
  if (len <= 240) return upTo240(p, len, seed);
  if (seed == 0) return long(p, len, SECRET);
  if (!derived || derivedFor != seed) {
    for (let i: usize = 0; i < 12; i++) {
      store<u64>(DERIVED + 16 * i, rd64(SECRET + 16 * i) + seed);
      store<u64>(DERIVED + 16 * i + 8, rd64(SECRET + 16 * i + 8) - seed);
    }
    derivedFor = seed;
    derived = true;
  }
  return long(p, len, DERIVED);
}

/** Where a caller may write: memory from here on is the caller's. */
export function heapBase(): usize {
  return __heap_base;
}

/** XXH3-64 of `len` bytes at `p`, with the seed as two u32 words; the hash's words go to `out`. */
export function xxh3(p: usize, len: usize, seedLo: u32, seedHi: u32, out: usize): void {
  store<u64>(out, hash(p, len, (<u64>seedHi << 32) | seedLo));
}

/**
 * Block hashes of `count` blocks of `blockBytes` at `p`: local = XXH3(block) with the local seed,
 * sequence = XXH3(parent sequence ‖ local) with the sequence seed (the first block's is its local
 * hash unless a parent is given). The seeds differ for a LoRA adapter (its seed seeds the local
 * hashes only); written as u64 at outLocal (skipped when 0) and outSeq.
 */
export function chain(p: usize, count: usize, blockBytes: usize, seedLo: u32, seedHi: u32, seqSeedLo: u32, seqSeedHi: u32, hasParent: bool, parentLo: u32, parentHi: u32, outLocal: usize, outSeq: usize): void {
  const seed = (<u64>seedHi << 32) | seedLo;
  const seqSeed = (<u64>seqSeedHi << 32) | seqSeedLo;
  let prev = (<u64>parentHi << 32) | parentLo;
  let chained = hasParent;
  for (let b: usize = 0; b < count; b++) {
    const l = hash(p + b * blockBytes, blockBytes, seed);
    let s = l;
    if (chained) {
      store<u64>(PAIR, prev);
      store<u64>(PAIR + 8, l);
      s = hash(PAIR, 16, seqSeed);
    }
    if (outLocal != 0) store<u64>(outLocal + 8 * b, l);
    store<u64>(outSeq + 8 * b, s);
    prev = s;
    chained = true;
  }
}
