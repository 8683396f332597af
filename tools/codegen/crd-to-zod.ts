/**
 * Turns a CRD's structural OpenAPI v3 schema into zod source: the CRD YAML is the one source of the
 * resource shapes, and TypeScript types are `z.infer` of the generated schemas. Covers the subset a
 * structural schema uses (objects, maps, arrays, strings with pattern/enum/format, integers with
 * bounds, int-or-string). CEL rules (x-kubernetes-validations) stay with the API server.
 */
export interface JsonSchema {
  type?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  enum?: Array<string | number>;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}

const q = (s: string) => JSON.stringify(s);

/**
 * A CRD pattern (Go's RE2) as JavaScript reads it alike: Go's `.` matches any character but a line
 * feed, JavaScript's also refuses CR, U+2028 and U+2029. Outside a character class, `.` becomes
 * `[^\n]`; escapes and classes pass as they are.
 */
export function goPattern(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      out += c + (pattern[i + 1] ?? '');
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
      out += c;
    } else if (c === '[') {
      inClass = true;
      out += c;
    } else out += c === '.' ? '[^\\n]' : c;
  }
  return out;
}
const bound = (name: string, v: number | undefined) => (v === undefined ? '' : `.${name}(${v})`);

export function zodFor(schema: JsonSchema, indent = ''): string {
  // Any int64 the API server takes (a memory limit in bytes may pass 2^53, which z.int() refuses):
  // what the API server stored must parse, or the operator would take the object for deleted.
  if (schema['x-kubernetes-int-or-string']) return 'z.union([z.number(), z.string()])';
  switch (schema.type) {
    case 'string': {
      if (schema.enum) return `z.enum([${schema.enum.map((v) => q(String(v))).join(', ')}])`;
      if (schema.format === 'date-time') return 'z.iso.datetime({ offset: true })';
      let s = 'z.string()';
      s += bound('min', schema.minLength) + bound('max', schema.maxLength);
      if (schema.pattern !== undefined) s += `.regex(new RegExp(${q(goPattern(schema.pattern))}))`;
      return s;
    }
    case 'integer':
      return `z.int()${bound('min', schema.minimum)}${bound('max', schema.maximum)}`;
    case 'number':
      return `z.number()${bound('min', schema.minimum)}${bound('max', schema.maximum)}`;
    case 'boolean':
      return 'z.boolean()';
    case 'array':
      return `z.array(${zodFor(schema.items ?? {}, indent)})${bound('min', schema.minItems)}${bound('max', schema.maxItems)}`;
    case 'object': {
      if (schema.properties) return objectFor(schema, indent);
      if (typeof schema.additionalProperties === 'object') {
        return `z.record(z.string(), ${zodFor(schema.additionalProperties, indent)})`;
      }
      return 'z.record(z.string(), z.unknown())';
    }
    default:
      return 'z.unknown()';
  }
}

function objectFor(schema: JsonSchema, indent: string): string {
  const inner = `${indent}  `;
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties ?? {}).map(([name, prop]) => {
    const doc = prop.description
      ? `${inner}/** ${prop.description.replace(/\*\//g, '*\\/').replace(/\s+/g, ' ').trim()} */\n`
      : '';
    const key = /^[A-Za-z_$][\w$]*$/.test(name) ? name : q(name);
    return `${doc}${inner}${key}: ${zodFor(prop, inner)}${required.has(name) ? '' : '.optional()'},`;
  });
  return `z.object({\n${fields.join('\n')}\n${indent}})`;
}
