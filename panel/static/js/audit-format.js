// How audit events read in the panel: the same words on the audit page and in a key's details.

/** @type {Record<string, string>} */
const ACTIONS = {
  'key.created': 'Created',
  'key.rolled': 'Rolled',
  'key.deleted': 'Deleted',
  'key.expired': 'Used after expiry',
  'key.refused': 'Refused use',
  'key.limits_changed': 'Limits changed',
  'key.leaked': 'Reported leaked',
  'key.credits_added': 'Credits added',
  'identity.created': 'Identity created',
  'identity.deleted': 'Identity deleted',
  'identity.limits_changed': 'Identity limits changed',
  'identity.credits_added': 'Identity credits added',
  'webhook.created': 'Webhook added',
  'webhook.deleted': 'Webhook removed',
};

/** @param {string} action */
export const actionLabel = (action) => ACTIONS[action] ?? action;

/**
 * The event's details in words: the refusal's code and how many refusals were not recorded, the
 * key a roll made and when the old one stops.
 * @param {Record<string, string | number> | undefined} detail
 */
export function detailText(detail) {
  if (detail === undefined) return '';
  const parts = [];
  if (detail['code'] !== undefined) parts.push(String(detail['code']));
  if (detail['unrecordedBefore'] !== undefined)
    parts.push(`${detail['unrecordedBefore']} more not recorded before`);
  if (detail['to'] !== undefined) parts.push(`replaced by ${detail['to']}`);
  if (detail['graceEndsAt'] !== undefined)
    parts.push(`old key stops ${new Date(String(detail['graceEndsAt'])).toLocaleString()}`);
  if (detail['rolledFrom'] !== undefined) parts.push(`replaces ${detail['rolledFrom']}`);
  // A leak report: where the scanner found the key, and what Tollgate did.
  if (detail['url']) parts.push(`found at ${detail['url']}`);
  if (detail['source']) parts.push(`by ${detail['source']}`);
  if (detail['outcome'] === 'revoked') parts.push('the key was revoked');
  if (detail['outcome'] === 'reported') parts.push('the key was kept working (reported only)');
  return parts.join(' · ');
}
