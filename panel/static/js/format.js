// Display helpers: dates in the reader's locale, relative times for "last used".
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });
const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** @type {Array<[Intl.RelativeTimeFormatUnit, number]>} */
const STEPS = [
  ['year', 365 * 24 * 3600],
  ['month', 30 * 24 * 3600],
  ['day', 24 * 3600],
  ['hour', 3600],
  ['minute', 60],
];

/** @param {string | undefined} iso */
export function formatDate(iso) {
  return iso ? dateFormat.format(new Date(iso)) : '';
}

/** @param {string | undefined} iso */
export function formatDateTime(iso) {
  return iso ? dateTimeFormat.format(new Date(iso)) : '';
}

/**
 * @param {string} iso
 * @param {number} [now]
 */
export function formatRelative(iso, now = Date.now()) {
  const seconds = (new Date(iso).getTime() - now) / 1000;
  for (const [unit, size] of STEPS) {
    if (Math.abs(seconds) >= size) return relative.format(Math.round(seconds / size), unit);
  }
  return 'just now';
}

/**
 * The end of a chosen day (UTC), as the API's date-time.
 * @param {string} dateValue an <input type="date"> value (YYYY-MM-DD)
 */
export function endOfDayUtc(dateValue) {
  return `${dateValue}T23:59:59Z`;
}
