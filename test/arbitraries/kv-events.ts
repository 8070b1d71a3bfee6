// fast-check generators of KV-event batches, shared by the codec's property and fuzz tests.
// Test-only (kept out of src/ so no runtime code can reach fast-check).
import fc from "fast-check";
import type { MsgpackValue } from "../../src/protocol/msgpack.ts";
import type { AllBlocksCleared, BlockRemoved, BlockStored, VllmKvEvent, VllmKvEventBatch } from "../../src/protocol/kv-events/types.ts";

export const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
const u32 = fc.integer({ min: 0, max: 0xffff_ffff });
const tokenId = fc.oneof(fc.integer({ min: 0, max: 127 }), fc.integer({ min: 0, max: 200_000 }), u32);
const natUpTo = (max: number) => fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max }));
// Full graphemes only: a lone surrogate has no UTF-8 form (TextEncoder would replace it).
const text = fc.oneof(fc.constantFrom("GPU", "CPU_PINNED", "kvcr", "full_attention"), fc.string({ unit: "grapheme", maxLength: 40 }));

const scalar: fc.Arbitrary<MsgpackValue> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }),
  fc.double(), // NaN, ±Infinity, -0, fractions: all float64 on the wire
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
  text,
  fc.uint8Array({ maxLength: 12 }),
);
const tuple: fc.Arbitrary<readonly MsgpackValue[]> = fc.letrec<{ tuple: readonly MsgpackValue[]; value: MsgpackValue }>((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, scalar, tie("tuple")),
  tuple: fc.array(tie("value"), { maxLength: 4 }),
})).tuple;

export interface BatchShape {
  /** Largest generated int field (rank, group_idx, ...); default Number.MAX_SAFE_INTEGER. */
  maxInt?: number;
  /** Generator of one block's extra-keys tuple; default: any supported value, nested. */
  extraTuple?: fc.Arbitrary<readonly MsgpackValue[]>;
}

function blockStored(shape: BatchShape): fc.Arbitrary<BlockStored> {
  const nat = natUpTo(shape.maxInt ?? Number.MAX_SAFE_INTEGER);
  const maxInt = shape.maxInt ?? Number.MAX_SAFE_INTEGER;
  return fc.record(
    {
      type: fc.constant("BlockStored" as const),
      blockHashes: fc.array(u64, { maxLength: 6 }),
      parentBlockHash: fc.option(u64, { nil: null }),
      tokenIds: fc.array(tokenId, { maxLength: 48 }),
      blockSize: fc.integer({ min: 1, max: maxInt }),
      loraId: fc.option(fc.integer({ min: shape.maxInt === undefined ? -maxInt : -(2 ** 31), max: maxInt }), { nil: null }),
      medium: fc.option(text, { nil: null }),
      loraName: fc.option(text, { nil: null }),
      extraKeys: fc.array(fc.option(shape.extraTuple ?? tuple, { nil: null }), { maxLength: 4 }),
      groupIdx: nat,
      kvCacheSpecKind: text,
      kvCacheSpecSlidingWindow: nat,
      locality: text,
      ownership: text,
      sessionId: text,
    },
    { requiredKeys: ["type", "blockHashes", "parentBlockHash", "tokenIds", "blockSize", "loraId", "medium", "loraName"] },
  );
}

function blockRemoved(shape: BatchShape): fc.Arbitrary<BlockRemoved> {
  const nat = natUpTo(shape.maxInt ?? Number.MAX_SAFE_INTEGER);
  return fc.record(
  {
    type: fc.constant("BlockRemoved" as const),
    blockHashes: fc.array(u64, { maxLength: 6 }),
    medium: fc.option(text, { nil: null }),
    groupIdx: nat,
    locality: text,
    ownership: text,
  },
  { requiredKeys: ["type", "blockHashes", "medium"] },
  );
}

const cleared: fc.Arbitrary<AllBlocksCleared> = fc.constant({ type: "AllBlocksCleared" as const });

export function vllmKvEventBatch(shape: BatchShape = {}): fc.Arbitrary<VllmKvEventBatch> {
  return fc.record({
    ts: fc.double({ noNaN: true, noDefaultInfinity: true }),
    events: fc.array(fc.oneof(blockStored(shape), blockRemoved(shape), cleared) as fc.Arbitrary<VllmKvEvent>, { maxLength: 5 }),
    dataParallelRank: fc.option(natUpTo(shape.maxInt ?? Number.MAX_SAFE_INTEGER), { nil: null }),
  });
}
