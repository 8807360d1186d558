// Data calls to the /v1 API with the session cookie. The custom header is what lets the API
// accept the cookie (GET only): a cross-site form or image cannot send it.
export class NotFound extends Error {}

export async function getJSON(path, params = {}) {
  const url = new URL(path, window.location.origin);
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== '') url.searchParams.set(key, value);
  }
  const response = await fetch(url, {
    credentials: 'same-origin',
    cache: 'no-store',
    headers: { 'X-Henge-Session': '1', Accept: 'application/json' },
  });
  if (response.status === 401) {
    const here = window.location.pathname + window.location.search;
    window.location.assign(`/ui/login?next=${encodeURIComponent(here)}`);
    throw new Error('the session has ended; sign in again');
  }
  if (response.status === 404) throw new NotFound(`${url.pathname}: not found`);
  if (!response.ok) throw new Error(`${url.pathname}: HTTP ${response.status}`);
  return response.json();
}
