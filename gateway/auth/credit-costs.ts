/**
 * What a call spends of a key's (or identity's) credits: 1, or the price the administrator set for
 * a platform resource or a model (the gateway's creditCosts setting). Only the gateway's own
 * settings price a call: a Model's spec is a tenant's to write, and a tenant must not set what
 * other teams' keys pay.
 */
export class CreditCosts {
  private readonly costs: ReadonlyMap<string, number>;

  constructor(costs: Readonly<Record<string, number>>) {
    this.costs = new Map(Object.entries(costs));
  }

  /** The price of one call to the resource or model `name`. */
  of(name: string): number {
    return this.costs.get(name) ?? 1;
  }
}
