import protobuf from 'protobufjs/minimal.js';

/**
 * What a ModelInferRequest costs to decode, read from its wire form before it is decoded. Decoding
 * turns every field into a JavaScript value: an empty input or raw entry is 2 bytes on the wire and
 * an object of a couple of hundred bytes in memory, a packed INT64 zero 1 byte and a number of 8
 * or more, so a message within the body limit could decode into a hundred times its size. Counted
 * here, it is refused when that would pass a bound, before anything is allocated.
 */

/** Bytes one decoded object (a tensor, a map entry, a string, a Buffer) holds, at least. */
const OBJECT_BYTES = 200;
/** Bytes one decoded number or boolean holds in its array, copies included. */
const VALUE_BYTES = 32;

type Field = 'object' | 'varints' | 'fixed32s' | 'fixed64s' | Message;
type Message = { [field: number]: Field };

const parameter: Message = { 3: 'object' };
const map: Message = { 1: 'object', 2: parameter };
const contents: Message = {
  1: 'varints',
  2: 'varints',
  3: 'varints',
  4: 'varints',
  5: 'varints',
  6: 'fixed32s',
  7: 'fixed64s',
  8: 'object',
};
const input: Message = { 1: 'object', 2: 'object', 3: 'varints', 4: map, 5: contents };
const output: Message = { 1: 'object', 2: map };
const request: Message = { 1: 'object', 2: 'object', 3: 'object', 4: map, 5: input, 6: output, 7: 'object' };

/** Elements in a packed run of `kind`; a varint ends at each byte below 0x80. */
function packed(kind: 'varints' | 'fixed32s' | 'fixed64s', bytes: Uint8Array): number {
  if (kind === 'fixed32s') return bytes.length / 4;
  if (kind === 'fixed64s') return bytes.length / 8;
  let n = 0;
  for (const b of bytes) if (b < 0x80) n++;
  return n;
}

function cost(bytes: Uint8Array, message: Message): number {
  const reader = protobuf.Reader.create(bytes);
  let total = OBJECT_BYTES;
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    const field = message[tag >>> 3];
    const wireType = tag & 7;
    if (field === undefined || wireType !== 2) {
      // A scalar, or a field the decoder drops: skipped; one value when it is kept.
      reader.skipType(wireType);
      if (field !== undefined) total += VALUE_BYTES;
      continue;
    }
    const value = reader.bytes();
    if (field === 'object') total += OBJECT_BYTES + value.length;
    else if (typeof field === 'object') total += cost(value, field);
    else total += packed(field, value) * VALUE_BYTES;
  }
  return total;
}

/** Bytes a ModelInferRequest's decoding would hold at least; throws on a message that is not protobuf. */
export const inferRequestCost = (message: Uint8Array): number => cost(message, request);
