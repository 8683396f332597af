import type { RequestHandler } from 'express';
import type { z } from 'zod';
import type { ManagementDeps } from './deps.js';

/** A JSON Schema written by hand (for what no zod schema checks, e.g. V2 bodies checked for speed). */
export type JsonSchema = Record<string, unknown>;

/** One operation of Tollgate's HTTP surface, as the OpenAPI document describes it (openapi.ts). */
export interface OperationDoc {
  method: 'get' | 'post' | 'put' | 'delete';
  /** From the root, with `{param}` for path parameters. */
  path: string;
  operationId: string;
  summary: string;
  security: 'bearer' | 'apikey' | 'none';
  pathParams?: z.ZodObject;
  query?: z.ZodObject;
  /** Request headers the operation needs (documented; the handler checks them). */
  headers?: z.ZodObject;
  /** A zod schema the handler validates with, or a hand-written shape. */
  body?: OperationBody;
  ok: { status: number; description: string; schema?: z.ZodType | JsonSchema; links?: JsonSchema };
  /** Error statuses this operation can answer, each with the Error body. */
  errors: number[];
}

export interface OperationBody {
  schema: z.ZodType | JsonSchema;
  required: boolean;
}

/** The gateway's settings a contract depends on (the roll's longest grace period). */
export interface ContractSettings {
  maxRollGraceSeconds: number;
}

/**
 * A management API route, declared once in its own file under routes/: its contract (method,
 * path, schemas, errors) and its handler. The router mounts it and the OpenAPI document describes
 * it from the same object; the panel's types are generated from that document.
 */
export interface ManagementRoute extends Omit<OperationDoc, 'path' | 'security' | 'body'> {
  /** Under `/api/v1`, with `{param}` for path parameters. */
  path: string;
  body?: OperationBody | ((settings: ContractSettings) => OperationBody);
  /**
   * Who may call it: a user's bearer token (the default), or (`scanner-signature`) anyone whose
   * body carries a secret-scanning service's signature, which the handler verifies over the raw
   * body (the route then gets the body as bytes).
   */
  auth?: 'bearer' | 'scanner-signature';
  /** The most a body may hold (default 16 kB): only a route for many items at once (imports) takes more. */
  bodyLimit?: string;
  /** Runs before the body is read: what can refuse a call without it (a route switched off, a missing header). */
  beforeBody?(deps: ManagementDeps): RequestHandler;
  handler(deps: ManagementDeps): RequestHandler;
}

/** Where the management API is mounted: its routes' paths are under it. */
export const MANAGEMENT_BASE = '/api/v1';
