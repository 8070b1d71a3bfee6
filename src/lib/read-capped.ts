// A body read with a size cap: chunk by chunk, stopping (and cancelling the stream) as soon as it
// passes `max`, so a body without a content-length cannot make us buffer it whole.
import { concatBytes } from "./bytes.ts";

export type BodyReader = { read(): Promise<{ done: true; value?: undefined } | { done: false; value: Uint8Array }>; cancel(): Promise<void> };

/** The body's bytes, or undefined when it is longer than `max` bytes. */
export async function readCappedBytes(reader: BodyReader, max: number): Promise<Uint8Array | undefined> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      void reader.cancel().catch(() => {});
      return undefined;
    }
    parts.push(value);
  }
  return parts.length === 1 ? parts[0]! : concatBytes(parts, size);
}

/** The body as UTF-8 text, or undefined when it is longer than `max` bytes. */
export async function readCapped(reader: BodyReader, max: number): Promise<string | undefined> {
  const bytes = await readCappedBytes(reader, max);
  return bytes === undefined ? undefined : new TextDecoder().decode(bytes);
}
