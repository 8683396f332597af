import type { Request, RequestHandler } from 'express';
import { z } from 'zod';
import { hashKey, parseKey } from '../../../common/apikey/format.js';
import { TollgateError } from '../../../common/errors.js';
import { AUDIT_HEADER } from '../../audit/audit-event.js';
import type { ManagementDeps } from '../deps.js';
import { revokeKey } from '../revoke.js';
import type { ManagementRoute } from '../route.js';
import { validate } from '../validate.js';
import { readBody } from '../../http/read-body.js';
import { OwnerTally } from '../../http/owner-tally.js';
import { clientAddress, NO_PROXIES, senderOf } from '../../http/client-address.js';
import type { LeakReporterKeys } from '../../auth/leak-reporter-keys.js';
import { NO_COUNT, type ShareRefused } from '../../admission/shares.js';

/** One match as a scanning service sends it (GitHub's secret scanning partner program). */
const matchSchema = z
  .object({
    token: z.string({ error: 'token is the string found' }).max(512, 'token is at most 512 characters'),
    type: z.string().max(256).optional(),
    url: z.string().max(2048).optional(),
    source: z.string().max(256).optional(),
  })
  .loose();
export const leakReportSchema = z
  .array(matchSchema, { error: 'the report is a JSON array of {token, type, url, source}' })
  .min(1, 'the report lists at least one token')
  .max(1_000, 'a report lists at most 1,000 tokens');

export const leakVerdictsSchema = z.array(
  z.object({
    token_hash: z.string().describe('SHA-256 (hex) of the token: the token itself is never sent back'),
    token_type: z.string(),
    label: z.enum(['true_positive', 'false_positive']),
  }),
);

const off = (): TollgateError =>
  new TollgateError(
    'unknown_endpoint',
    'leaked-key reports are not taken by this gateway: set leakReportKeysUrl (TOLLGATE_LEAK_REPORT_KEYS_URL)',
  );

/** The one actor a report acts as, in the trail. */
const REPORTER = 'leak-report';

/**
 * POST /leaked-keys: a secret-scanning service reports keys it found in public code. The report is
 * believed only with a valid signature of the service (its published keys, fetched and cached);
 * each token that is a real, live key is revoked at once (or, with leakReportAction=report, only
 * recorded), recorded in the trail with where it was found, and the answer labels every token
 * true or false positive, by its hash.
 */
/** Before the body is read: reports switched off, or no signature to check, refuse at once. */
function beforeReport(deps: ManagementDeps): RequestHandler {
  return (req, _res, next) => {
    if (deps.leakReports.keys === undefined) throw off();
    if (!req.get('github-public-key-identifier') || !req.get('github-public-key-signature')) {
      throw new TollgateError(
        'invalid_report_signature',
        'the report is not signed by the scanning service: send Github-Public-Key-Identifier and Github-Public-Key-Signature',
      );
    }
    next();
  };
}

/** A leak report lists up to 1,000 tokens with where each was found. */
const REPORT_LIMIT_BYTES = 1024 * 1024;

/**
 * What reports being read may hold in all, and those from one address. A report is held whole
 * before its signature can be checked, and anyone may send one with signature headers that check
 * nothing: counted by the bytes that came, so that bodies which never finish hold no more than
 * they sent, and one sender cannot take it all. When the whole is taken, a sender holding less
 * than the largest holder would takes the place of that holder's largest read, which is cut: a few
 * addresses trickling bodies that never finish cannot keep the scanning service's real reports
 * out. A scanning service sends few reports, at once, and retries a refused one.
 */
export const REPORT_BUDGET = { totalBytes: 8 * REPORT_LIMIT_BYTES, perAddressBytes: 2 * REPORT_LIMIT_BYTES };

/** One report being read: what it holds, and how to cut it for a sender holding less. */
interface Reading {
  address: string;
  bytes: number;
  cut: () => void;
  closed: boolean;
}

class ReportBudget {
  private readonly tally = new OwnerTally();
  private readonly readings = new Set<Reading>();

  constructor(private readonly refused: ShareRefused) {}

  open(address: string, cut: () => void): Reading {
    const reading: Reading = { address, bytes: 0, cut, closed: false };
    this.readings.add(reading);
    return reading;
  }

  take(reading: Reading, bytes: number): TollgateError | undefined {
    const { address } = reading;
    const mine = this.tally.of(address) + bytes;
    if (mine > REPORT_BUDGET.perAddressBytes) {
      this.refused('leak_report_bytes', '');
      return new TollgateError(
        'rate_limited',
        `the leak reports this replica is reading from your address (${address}) hold ${this.tally.of(address)} bytes, near the ${REPORT_BUDGET.perAddressBytes} one address may; send them one after another`,
        { headers: { 'retry-after': '1' } },
      );
    }
    while (this.tally.total + bytes > REPORT_BUDGET.totalBytes) {
      if (!this.makeRoom(address, mine)) {
        this.refused('leak_report_bytes', '');
        return new TollgateError(
          'gateway_busy',
          `the leak reports this replica is reading hold ${this.tally.total} bytes, near the ${REPORT_BUDGET.totalBytes} it keeps for them; retry shortly`,
          { headers: { 'retry-after': '1' } },
        );
      }
    }
    this.tally.add(address, bytes);
    reading.bytes += bytes;
    return undefined;
  }

  close(reading: Reading): void {
    if (reading.closed) return;
    reading.closed = true;
    this.readings.delete(reading);
    if (reading.bytes > 0) this.tally.remove(reading.address, reading.bytes);
  }

  /** Cuts the largest read of the sender holding the most, if they hold more than `wouldHold`. */
  private makeRoom(newcomer: string, wouldHold: number): boolean {
    let victim: Reading | undefined;
    let most = wouldHold;
    for (const r of this.readings) {
      const held = this.tally.of(r.address);
      if (r.address === newcomer || r.bytes === 0 || held < most) continue;
      if (held > most || victim === undefined || r.bytes > victim.bytes) {
        victim = r;
        most = held;
      }
    }
    if (victim === undefined || most <= wouldHold) return false;
    // The sender holding the most loses its read for the newcomer's: a refusal of its share.
    this.refused('leak_report_bytes', '');
    this.close(victim);
    victim.cut();
    return true;
  }
}

function reportLeakedKeys(deps: ManagementDeps): RequestHandler {
  const budget = new ReportBudget(deps.shareRefused ?? NO_COUNT);
  return async (req, res) => {
    const keys = deps.leakReports.keys;
    if (keys === undefined) throw off();
    const address = senderOf(clientAddress(req, deps.proxies ?? NO_PROXIES) ?? 'unknown');
    const reading = budget.open(address, () => req.destroy());
    try {
      const body = await readBody(req, REPORT_LIMIT_BYTES, (bytes) => budget.take(reading, bytes));
      // Held until answered: checking a signature may wait for the service's keys.
      const verdicts = await verdictsOn(deps, req, keys, body);
      res
        .status(200)
        .set(AUDIT_HEADER, await deps.audit.settle())
        .json(verdicts);
    } finally {
      budget.close(reading);
    }
  };
}

async function verdictsOn(
  deps: ManagementDeps,
  req: Request,
  keys: LeakReporterKeys,
  body: Buffer,
): Promise<z.output<typeof leakVerdictsSchema>> {
  await keys.verify(body, req.get('github-public-key-identifier'), req.get('github-public-key-signature'));
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new TollgateError(
      'invalid_json',
      'the report is not JSON; send a JSON array of {token, type, url, source}',
      {
        field: 'body',
      },
    );
  }
  const report = validate(leakReportSchema, parsed, 'body');
  const verdicts: z.output<typeof leakVerdictsSchema> = [];
  for (const match of report) {
    const real = await handleMatch(deps, req, match);
    verdicts.push({
      token_hash: hashKey(match.token),
      token_type: match.type ?? '',
      label: real ? 'true_positive' : 'false_positive',
    });
  }
  return verdicts;
}

/** Whether the token is a live key; if so, revoked (or recorded) as the setting says. */
async function handleMatch(
  deps: ManagementDeps,
  req: Request,
  match: z.output<typeof matchSchema>,
): Promise<boolean> {
  // Well-formed and with a good checksum, or it was never a key of ours: no lookup.
  if ('problem' in parseKey(match.token)) return false;
  const hash = hashKey(match.token);
  const grant = await deps.findGrant(hash);
  if (grant === undefined) return false;
  const key = await deps.store.find(grant.id);
  if (key === undefined || key.spec.hash !== hash) return false;
  const where = { url: match.url ?? '', source: match.source ?? '', type: match.type ?? '' };
  deps.log.warn(
    { id: grant.id, owner: grant.owner, ...where, action: deps.leakReports.action },
    'api key reported leaked',
  );
  deps.audit.record({
    action: 'key.leaked',
    keyId: grant.id,
    key: { name: key.spec.name, start: key.spec.start },
    owner: key.spec.owner,
    actor: REPORTER,
    req,
    detail: { ...where, outcome: deps.leakReports.action === 'revoke' ? 'revoked' : 'reported' },
  });
  if (deps.leakReports.action === 'revoke')
    await revokeKey(deps, key, {
      actor: REPORTER,
      req,
      reason: `reported leaked at ${where.url || where.source || 'an unnamed place'}`,
    });
  return true;
}

export const reportLeakedKeysRoute: ManagementRoute = {
  method: 'post',
  path: '/leaked-keys',
  operationId: 'reportLeakedKeys',
  summary:
    'A secret-scanning service reports keys found in public code (GitHub partner format, signed with its published keys)',
  auth: 'scanner-signature',
  headers: z.object({
    'Github-Public-Key-Identifier': z
      .string()
      .min(1)
      .describe('Which of the service’s published keys signed the report'),
    'Github-Public-Key-Signature': z
      .string()
      .min(1)
      .describe('Base64 ECDSA P-256 / SHA-256 signature (DER) of the raw body'),
  }),
  beforeBody: beforeReport,
  body: { schema: leakReportSchema, required: true },
  ok: {
    status: 200,
    description: 'Each token labelled true or false positive, by its hash',
    schema: leakVerdictsSchema,
  },
  errors: [400, 401, 404, 413, 429, 503],
  handler: reportLeakedKeys,
};
