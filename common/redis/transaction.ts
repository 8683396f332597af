import type { ChainableCommander } from 'ioredis';

/**
 * Runs a MULTI and gives each command's reply, or throws: a discarded transaction, or any step
 * that failed. Every step must have happened (a counter left without its expiry would be wrong
 * forever).
 */
export async function execAll(tx: ChainableCommander): Promise<unknown[]> {
  const replies = await tx.exec();
  if (replies === null) throw new Error('the transaction was discarded');
  const failed = replies.find(([e]) => e)?.[0];
  if (failed) throw failed;
  return replies.map(([, reply]) => reply);
}
