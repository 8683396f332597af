/**
 * What a call spends of its key's (or identity's) credits. A model's inference may be priced per
 * row of its batch (the first dimension of its inputs), known only once its body is read and
 * checked against the model's metadata (gateway/v2/inference.ts); everything else is priced per call.
 */
export interface Price {
  credits: number;
  per: 'call' | 'row';
}

/** A price as the creditCosts setting writes it: credits per call, or `{credits, per: row}`. */
export type PriceSetting = number | Price;

const ONE: Price = { credits: 1, per: 'call' };

/**
 * What a call spends of a key's (or identity's) credits: 1, or the price the administrator set for
 * a platform resource or a model (the gateway's creditCosts setting). Only the gateway's own
 * settings price a call: a Model's spec is a tenant's to write, and a tenant must not set what
 * other teams' keys pay.
 */
export class CreditCosts {
  private readonly costs: ReadonlyMap<string, Price>;

  constructor(costs: Readonly<Record<string, PriceSetting>>) {
    this.costs = new Map(
      Object.entries(costs).map(([name, p]) => [
        name,
        typeof p === 'number' ? { credits: p, per: 'call' } : p,
      ]),
    );
  }

  /** The price of a call to the resource or model `name`. */
  of(name: string): Price {
    return this.costs.get(name) ?? ONE;
  }
}

/** The price of calls the setting leaves at one credit each. */
export const ONE_CREDIT = ONE;
