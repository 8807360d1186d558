// The time range picker. Its state lives in the page's query string (no secrets there), so a
// refresh or a shared link keeps it. "Last …" ranges end at the newest data, which on a live
// service is now and on the demo's virtual clock is the end of the scenario.
import { iso } from './format.js';

export const MAX_ROWS = 10000;
export const DEFAULT_PRESET = '24h';
const SPANS = { '15m': 900e3, '1h': 3600e3, '6h': 21600e3, '24h': 86400e3, '7d': 604800e3 };

function parseInput(value) {
  if (!value) return null;
  const ms = Date.parse(value.length === 16 ? `${value}:00Z` : `${value}Z`);
  return Number.isNaN(ms) ? null : ms;
}

function toInput(ms) {
  return ms === null ? '' : new Date(ms).toISOString().slice(0, 19);
}

export function currentRange() {
  const query = new URLSearchParams(window.location.search);
  const preset = query.get('range') || DEFAULT_PRESET;
  return {
    preset,
    since: parseInput(query.get('since') || ''),
    until: parseInput(query.get('until') || ''),
  };
}

// {since, until} in ms (null: open) for a range, given the newest data's time (or null).
export function bounds(range, anchorMs) {
  if (range.preset === 'custom') return { since: range.since, until: range.until };
  const span = SPANS[range.preset];
  if (span === undefined || anchorMs === null || anchorMs === undefined) {
    return { since: null, until: null };
  }
  return { since: anchorMs - span, until: null };
}

export function apiRange(range, anchorMs) {
  const b = bounds(range, anchorMs);
  return { since: iso(b.since), until: iso(b.until), limit: MAX_ROWS };
}

export function bindRange(onChange) {
  const form = document.getElementById('range');
  if (!form) return;
  const preset = form.elements.range;
  const since = form.elements.since;
  const until = form.elements.until;
  const range = currentRange();
  preset.value = range.preset in SPANS || range.preset === 'all' ? range.preset : 'custom';
  since.value = toInput(range.since);
  until.value = toInput(range.until);

  const apply = () => {
    const query = new URLSearchParams(window.location.search);
    query.set('range', preset.value);
    query.delete('since');
    query.delete('until');
    if (preset.value === 'custom') {
      if (since.value) query.set('since', toInput(parseInput(since.value)));
      if (until.value) query.set('until', toInput(parseInput(until.value)));
    }
    window.history.replaceState(null, '', `${window.location.pathname}?${query}`);
    onChange();
  };
  preset.addEventListener('change', () => {
    if (preset.value !== 'custom') apply();
  });
  for (const input of [since, until]) {
    input.addEventListener('input', () => {
      preset.value = 'custom';
    });
  }
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    apply();
  });
}

// Show the bounds actually used (e.g. where "last hour" starts) in the inputs when not custom.
export function showBounds(range, anchorMs) {
  const form = document.getElementById('range');
  if (!form || range.preset === 'custom') return;
  const b = bounds(range, anchorMs);
  form.elements.since.value = toInput(b.since);
  form.elements.until.value = toInput(b.until === null ? anchorMs ?? null : b.until);
}

// The x axis: the data's own extent (sorted times), or the range's bounds when there is none.
export function extent(times, b) {
  if (times.length) return [times[0], times[times.length - 1]];
  return [b.since, b.until];
}
