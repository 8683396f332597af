import { RoleCatalogue } from '../../../common/apikey/roles.js';

describe('role catalogue', () => {
  const catalogue = new RoleCatalogue({ resources: ['datasources', 'datasets'] });

  it('holds the default roles of the design for every configured resource, and models', () => {
    expect(catalogue.roles.map((r) => r.name).sort()).toEqual(
      [
        'viewer',
        'editor',
        'datasets:viewer',
        'datasets:editor',
        'datasources:viewer',
        'datasources:editor',
        'models:viewer',
        'models:editor',
        'models:inference',
      ].sort(),
    );
    for (const role of catalogue.roles) expect(role.description.length).toBeGreaterThan(0);
  });

  it('viewer reads everything and writes nothing', () => {
    for (const resource of ['datasources', 'datasets', 'models', 'anything']) {
      expect(catalogue.allows(['viewer'], 'GET', resource)).toBe(true);
      expect(catalogue.allows(['viewer'], 'PUT', resource)).toBe(false);
      expect(catalogue.allows(['viewer'], 'POST', resource)).toBe(false);
    }
    expect(catalogue.allows(['viewer'], 'INFER', 'models')).toBe(false);
  });

  it('editor reads, writes and runs inference everywhere', () => {
    for (const action of ['GET', 'PUT', 'POST'] as const)
      expect(catalogue.allows(['editor'], action, 'datasets')).toBe(true);
    expect(catalogue.allows(['editor'], 'INFER', 'models')).toBe(true);
  });

  it('per-resource roles stay on their resource', () => {
    expect(catalogue.allows(['datasets:viewer'], 'GET', 'datasets')).toBe(true);
    expect(catalogue.allows(['datasets:viewer'], 'POST', 'datasets')).toBe(false);
    expect(catalogue.allows(['datasets:viewer'], 'GET', 'datasources')).toBe(false);
    expect(catalogue.allows(['datasets:editor'], 'PUT', 'datasets')).toBe(true);
    expect(catalogue.allows(['datasets:editor'], 'PUT', 'models')).toBe(false);
    expect(catalogue.allows(['models:editor'], 'INFER', 'models')).toBe(false);
  });

  it('models:inference allows inference and nothing else', () => {
    expect(catalogue.allows(['models:inference'], 'INFER', 'models')).toBe(true);
    expect(catalogue.allows(['models:inference'], 'GET', 'models')).toBe(false);
    expect(catalogue.allows(['models:inference'], 'INFER', 'datasets')).toBe(false);
  });

  it('combines roles and ignores unknown ones', () => {
    const roles = ['datasets:viewer', 'datasources:editor'];
    expect(catalogue.allows(roles, 'GET', 'datasets')).toBe(true);
    expect(catalogue.allows(roles, 'POST', 'datasources')).toBe(true);
    expect(catalogue.allows(roles, 'POST', 'datasets')).toBe(false);
    expect(catalogue.allows(['owner', 'admin'], 'GET', 'datasets')).toBe(false);
    expect(catalogue.allows([], 'GET', 'datasets')).toBe(false);
    expect(catalogue.has('viewer')).toBe(true);
    expect(catalogue.has('admin')).toBe(false);
  });

  it('takes extra roles from configuration and lets one replace a default by name', () => {
    const custom = new RoleCatalogue({
      resources: ['datasets'],
      roles: [
        {
          name: 'auditor',
          description: 'Read datasets',
          grants: [{ resources: ['datasets'], actions: ['GET'] }],
        },
        {
          name: 'viewer',
          description: 'Read models only',
          grants: [{ resources: ['models'], actions: ['GET'] }],
        },
      ],
    });
    expect(custom.allows(['auditor'], 'GET', 'datasets')).toBe(true);
    expect(custom.allows(['auditor'], 'GET', 'models')).toBe(false);
    expect(custom.allows(['viewer'], 'GET', 'datasets')).toBe(false);
    expect(custom.allows(['viewer'], 'GET', 'models')).toBe(true);
    expect(custom.roles.filter((r) => r.name === 'viewer')).toHaveLength(1);
  });

  it('refuses a malformed configuration', () => {
    expect(() => new RoleCatalogue({ resources: ['Data Sets'] })).toThrow();
    expect(
      () =>
        new RoleCatalogue({
          roles: [
            { name: 'x', description: 'd', grants: [{ resources: '*', actions: ['DELETE' as 'GET'] }] },
          ],
        }),
    ).toThrow();
  });
});
