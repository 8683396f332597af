import { z } from 'zod';

/**
 * The platform role catalogue: which actions each role of a `platform` key allows on which
 * platform resources. Built once from configuration; `allows` is what the gateway asks on every
 * platform request, so it is a few map lookups with no allocation.
 */
export const METHODS = ['GET', 'PUT', 'POST'] as const;
export type Method = (typeof METHODS)[number];
/** V2 inference on models is an action of its own, not one of the REST methods. */
export type Action = Method | 'INFER';
export const ALL_RESOURCES = '*';

const ROLE_NAME = /^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)?$/;
const RESOURCE_NAME = /^[a-z][a-z0-9-]*$/;

export const roleDefinitionSchema = z.strictObject({
  name: z
    .string()
    .regex(ROLE_NAME, 'a role name is lowercase letters, digits and dashes, optionally "<resource>:<role>"'),
  description: z.string().min(1),
  grants: z
    .array(
      z.strictObject({
        resources: z.union([z.literal(ALL_RESOURCES), z.array(z.string().regex(RESOURCE_NAME)).min(1)]),
        actions: z.array(z.enum(['GET', 'PUT', 'POST', 'INFER'])).min(1),
      }),
    )
    .min(1),
});
export type RoleDefinition = z.infer<typeof roleDefinitionSchema>;

export const roleCatalogueConfigSchema = z.strictObject({
  /** Platform resource collections (`models` is always included: the gateway serves it). */
  resources: z.array(z.string().regex(RESOURCE_NAME)).default([]),
  /** Roles added to (or replacing, by name) the defaults. */
  roles: z.array(roleDefinitionSchema).default([]),
});
export type RoleCatalogueConfig = z.input<typeof roleCatalogueConfigSchema>;

/** The defaults of the design: viewer, editor, `<resource>:viewer|editor`, `models:inference`. */
export function defaultRoles(resources: readonly string[]): RoleDefinition[] {
  const roles: RoleDefinition[] = [
    {
      name: 'viewer',
      description: 'Read every platform resource (GET)',
      grants: [{ resources: ALL_RESOURCES, actions: ['GET'] }],
    },
    {
      name: 'editor',
      description: 'Read and write every platform resource (GET, PUT, POST) and run model inference',
      grants: [{ resources: ALL_RESOURCES, actions: ['GET', 'PUT', 'POST', 'INFER'] }],
    },
  ];
  for (const resource of resources) {
    roles.push(
      {
        name: `${resource}:viewer`,
        description: `Read ${resource} (GET)`,
        grants: [{ resources: [resource], actions: ['GET'] }],
      },
      {
        name: `${resource}:editor`,
        description: `Read and write ${resource} (GET, PUT, POST)`,
        grants: [{ resources: [resource], actions: ['GET', 'PUT', 'POST'] }],
      },
    );
  }
  roles.push({
    name: 'models:inference',
    description: 'Call V2 inference on models',
    grants: [{ resources: ['models'], actions: ['INFER'] }],
  });
  return roles;
}

interface CompiledRole {
  /** Actions allowed on every resource. */
  everywhere: ReadonlySet<Action>;
  /** Actions allowed per resource, on top of `everywhere`. */
  byResource: ReadonlyMap<string, ReadonlySet<Action>>;
}

export class RoleCatalogue {
  readonly resources: readonly string[];
  readonly roles: readonly RoleDefinition[];
  private readonly compiled: ReadonlyMap<string, CompiledRole>;

  constructor(config: RoleCatalogueConfig = {}) {
    const parsed = roleCatalogueConfigSchema.parse(config);
    this.resources = [...new Set(['models', ...parsed.resources])].sort();
    const byName = new Map(defaultRoles(this.resources).map((r) => [r.name, r]));
    for (const role of parsed.roles) byName.set(role.name, role);
    this.roles = [...byName.values()];
    this.compiled = new Map(this.roles.map((r) => [r.name, compile(r)]));
  }

  has(role: string): boolean {
    return this.compiled.has(role);
  }

  /** True if any of `roles` allows `action` on `resource`. Unknown roles allow nothing. */
  allows(roles: readonly string[], action: Action, resource: string): boolean {
    for (const name of roles) {
      const role = this.compiled.get(name);
      if (role === undefined) continue;
      if (role.everywhere.has(action) || role.byResource.get(resource)?.has(action) === true) return true;
    }
    return false;
  }
}

function compile(role: RoleDefinition): CompiledRole {
  const everywhere = new Set<Action>();
  const byResource = new Map<string, Set<Action>>();
  for (const grant of role.grants) {
    if (grant.resources === ALL_RESOURCES) {
      for (const a of grant.actions) everywhere.add(a);
      continue;
    }
    for (const resource of grant.resources) {
      const set = byResource.get(resource) ?? new Set<Action>();
      for (const a of grant.actions) set.add(a);
      byResource.set(resource, set);
    }
  }
  return { everywhere, byResource };
}
