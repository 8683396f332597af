import protobuf from 'protobufjs';
import { TollgateError } from '../../common/errors.js';

/**
 * What a message costs to decode, read from its wire form before it is decoded, by the rules of
 * its type in the .proto (reflected, not copied). Decoding turns every field into a JavaScript
 * value: an empty tensor is 2 bytes on the wire and an object of a couple of hundred bytes in
 * memory, a packed INT64 zero 1 byte and a Long object of about 100, so a message within the body
 * limit could decode into a hundred times its size. Counted here, it is refused before anything is
 * allocated. A field whose wire type is not its type's is refused too: the decoder would frame it
 * otherwise than this count does.
 */

/** Bytes a decoded object (a message, a map entry, a string, a Buffer) holds, at least. */
const OBJECT_BYTES = 200;
/** Bytes a decoded number or boolean holds in its array, copies included. */
const VALUE_BYTES = 32;
/** Bytes a decoded 64-bit integer holds (a Long object, then a number). */
const LONG_BYTES = 100;

const WIRE: Record<string, 0 | 1 | 5> = {
  int32: 0,
  uint32: 0,
  sint32: 0,
  int64: 0,
  uint64: 0,
  sint64: 0,
  bool: 0,
  fixed64: 1,
  sfixed64: 1,
  double: 1,
  fixed32: 5,
  sfixed32: 5,
  float: 5,
};
const LONGS = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

type Rule =
  | { kind: 'message'; fields: Schema }
  | { kind: 'bytes' }
  | { kind: 'scalar'; wire: 0 | 1 | 5; bytes: number; repeated: boolean };
type Schema = Map<number, Rule>;

function scalarOrBytes(type: string, repeated: boolean): Rule {
  const wire = WIRE[type];
  if (wire === undefined) return { kind: 'bytes' };
  return { kind: 'scalar', wire, bytes: LONGS.has(type) ? LONG_BYTES : VALUE_BYTES, repeated };
}

function schemaOf(type: protobuf.Type): Schema {
  const schema: Schema = new Map();
  for (const field of type.fieldsArray) {
    field.resolve();
    if (field instanceof protobuf.MapField) {
      const value =
        field.resolvedType instanceof protobuf.Type
          ? { kind: 'message' as const, fields: schemaOf(field.resolvedType) }
          : scalarOrBytes(field.type, false);
      const entry: Schema = new Map([
        [1, scalarOrBytes(field.keyType, false)],
        [2, value],
      ]);
      schema.set(field.id, { kind: 'message', fields: entry });
    } else if (field.resolvedType instanceof protobuf.Type) {
      schema.set(field.id, { kind: 'message', fields: schemaOf(field.resolvedType) });
    } else {
      schema.set(field.id, scalarOrBytes(field.type, field.repeated));
    }
  }
  return schema;
}

const malformed = (message: string): TollgateError =>
  new TollgateError('bad_request', `the message is not valid for the protocol: ${message}`);

/** Reads one scalar as the decoder does (a 32-bit varint takes up to ten bytes, as there). */
function readScalar(reader: protobuf.Reader, wire: 0 | 1 | 5, long: boolean): void {
  if (wire === 0) {
    if (long) reader.uint64();
    else reader.uint32();
  } else reader.skip(wire === 1 ? 8 : 4);
}

/**
 * The fields up to `end`, read as protobufjs's generated decoder reads them (one reader, nested
 * messages and packed runs bounded by their length the same way), so that what is counted is
 * what the decoder will make.
 */
function walk(reader: protobuf.Reader, end: number, schema: Schema): number {
  let total = OBJECT_BYTES;
  while (reader.pos < end) {
    const tag = reader.uint32();
    const id = tag >>> 3;
    const wire = tag & 7;
    const rule = schema.get(id);
    if (rule === undefined) {
      // A field the decoder drops: skipped as it skips it, costing nothing.
      reader.skipType(wire);
      continue;
    }
    if (rule.kind === 'scalar' && wire === rule.wire) {
      readScalar(reader, rule.wire, rule.bytes === LONG_BYTES);
      total += rule.bytes;
      continue;
    }
    // The decoder frames every other field as length-delimited, whatever its wire type says.
    if (wire !== 2 || (rule.kind === 'scalar' && !rule.repeated))
      throw malformed(`field ${id} has wire type ${wire}`);
    const length = reader.uint32();
    const stop = reader.pos + length;
    if (rule.kind === 'message') total += walk(reader, stop, rule.fields);
    else if (rule.kind === 'bytes') {
      reader.skip(length);
      total += OBJECT_BYTES + length;
    } else {
      while (reader.pos < stop) {
        readScalar(reader, rule.wire, rule.bytes === LONG_BYTES);
        total += rule.bytes;
      }
    }
  }
  return total;
}

/** The cost of decoding messages of one type. */
export class DecodeCost {
  private readonly schema: Schema;

  constructor(type: protobuf.Type) {
    this.schema = schemaOf(type);
  }

  /** Bytes the message's decoding would hold at least; 400 bad_request for one that is not protobuf. */
  of(message: Uint8Array): number {
    try {
      const reader = protobuf.Reader.create(message);
      return walk(reader, reader.len, this.schema);
    } catch (err) {
      if (err instanceof TollgateError) throw err;
      throw malformed((err as Error).message);
    }
  }
}
