// Formatting and small DOM helpers. Data goes into the DOM as text, never as HTML.
const DASH = '–';

export function num(value, digits = 2) {
  return value === null || value === undefined || Number.isNaN(value)
    ? DASH
    : Number(value).toFixed(digits);
}

export function pct(fraction) {
  return fraction === null || fraction === undefined || Number.isNaN(fraction)
    ? DASH
    : `${(100 * fraction).toFixed(1)} %`;
}

export function utc(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return DASH;
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

export function iso(ms) {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString();
}

export function tick(ms, spanMs) {
  const text = new Date(ms).toISOString();
  if (spanMs > 2 * 86400e3) return `${text.slice(5, 10)} ${text.slice(11, 16)}`;
  if (spanMs > 600e3) return text.slice(11, 16);
  return text.slice(11, 19);
}

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('data-')) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function setText(id, text) {
  const node = document.getElementById(id);
  if (node) node.textContent = text;
}

export function sloText(slo) {
  const parts = [];
  if (slo.latency_ms !== undefined && slo.latency_ms !== null) {
    parts.push(`latency ≤ ${slo.latency_ms} ms (${slo.latency_stat || 'mean'})`);
  }
  if (slo.juice !== undefined && slo.juice !== null) parts.push(`juice ≥ ${slo.juice}`);
  const shape = slo.utility && slo.utility.shape ? slo.utility.shape : 'knee';
  return `${parts.join(' and ') || 'none'} · ${shape}`;
}

export function jobLabel(names, jobId) {
  return names.get(jobId) || (jobId ? jobId.slice(0, 8) : DASH);
}

export const ACTION_COLORS = {
  admit: '#2e7d32',
  reconfigure: '#1565c0',
  reduce: '#ef6c00',
  revert: '#c62828',
  replace: '#6d4c41',
};
