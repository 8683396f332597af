import { generateStoredKey } from '../../../common/crypto/key-file.js';
import {
  CENTRAL_SCOPE,
  ReportChecker,
  reportKey,
  signReport,
  type ReportSigner,
} from '../../../common/redis/load-reports.js';
import { redisKeys } from '../../../common/redis/schema.js';
import { namespaceReportKey } from '../../../operator/webhook/sidecar-credentials.js';
import type { LoadReport } from '../../../common/resources/model-scaling.js';

describe('load reports', () => {
  const redisKey = redisKeys.modelLoad('fraud');
  const field = 'gw-1|v2';
  const measured = { concurrency: 40, at: 1_700_000_000_000 };

  test('the autoscaler believes the central gateways and the model’s own namespace, no one else', async () => {
    const stored = await generateStoredKey();
    const checker = new ReportChecker(stored);
    const signer = (scope: string): ReportSigner => ({ scope, key: reportKey(stored, scope) });

    expect(
      checker.believes(
        redisKey,
        field,
        signReport(signer(CENTRAL_SCOPE), redisKey, field, measured),
        'team-a',
      ),
    ).toBe(true);
    expect(
      checker.believes(redisKey, field, signReport(signer('team-a'), redisKey, field, measured), 'team-a'),
    ).toBe(true);
    // Another team's sidecar, signing honestly as itself: not for team-a's model.
    expect(
      checker.believes(redisKey, field, signReport(signer('team-b'), redisKey, field, measured), 'team-a'),
    ).toBe(false);
    // Another team's key under team-a's name: the MAC does not hold.
    const claimed = signReport(
      { scope: 'team-a', key: reportKey(stored, 'team-b') },
      redisKey,
      field,
      measured,
    );
    expect(checker.believes(redisKey, field, claimed, 'team-a')).toBe(false);
    // A key derived from another signing key (another installation): nothing.
    const other = await generateStoredKey();
    const foreign = signReport(
      { scope: CENTRAL_SCOPE, key: reportKey(other, CENTRAL_SCOPE) },
      redisKey,
      field,
      measured,
    );
    expect(checker.believes(redisKey, field, foreign, 'team-a')).toBe(false);
  });

  test('a report changed, moved to another model or version, or unsigned is not believed', async () => {
    const stored = await generateStoredKey();
    const checker = new ReportChecker(stored);
    const central: ReportSigner = { scope: CENTRAL_SCOPE, key: reportKey(stored, CENTRAL_SCOPE) };
    const report = signReport(central, redisKey, field, measured);
    expect(checker.believes(redisKey, field, { ...report, concurrency: 400 }, 'team-a')).toBe(false);
    expect(checker.believes(redisKey, field, { ...report, at: report.at + 60_000 }, 'team-a')).toBe(false);
    expect(checker.believes(redisKeys.modelLoad('other'), field, report, 'team-a')).toBe(false);
    expect(checker.believes(redisKey, 'gw-1|v1', report, 'team-a')).toBe(false);
    expect(checker.believes(redisKey, field, { ...report, scope: 'team-a' }, 'team-a')).toBe(false);
    const unsigned = { concurrency: 40, at: measured.at } as unknown as LoadReport;
    expect(checker.believes(redisKey, field, unsigned, 'team-a')).toBe(false);
    expect(checker.believes(redisKey, field, { ...report, mac: '' }, 'team-a')).toBe(false);
  });

  test('each namespace gets its own key, named with it, as its sidecars read it', async () => {
    const stored = await generateStoredKey();
    const a = namespaceReportKey(stored, 'team-a');
    const b = namespaceReportKey(stored, 'team-b');
    expect(a).toMatch(/^team-a\.[A-Za-z0-9_-]{43}$/);
    expect(a.split('.')[1]).not.toBe(b.split('.')[1]);
    expect(Buffer.from(a.split('.')[1]!, 'base64url')).toEqual(reportKey(stored, 'team-a'));
  });
});
