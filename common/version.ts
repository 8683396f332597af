/** Tollgate's version, as the CLI, the V2 server metadata and the OpenAPI document state it. */
export const TOLLGATE_VERSION = '0.1.0';
