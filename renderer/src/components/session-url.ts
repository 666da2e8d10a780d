/**
 * Where "sign in again" goes: the URL serve printed (pasted whole) or just its token, on a loopback
 * address, keeping the page the user was on. null when the text is neither.
 */
export function signInUrl(text: string, here: Location): string | null {
  const v = text.trim();
  if (!v) return null;
  let url: URL;
  try {
    url = /^https?:\/\//i.test(v) ? new URL(v) : new URL(`${here.origin}/?token=${encodeURIComponent(v)}`);
  } catch {
    return null;
  }
  if (!['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname) || !url.searchParams.get('token')) return null;
  url.hash = here.hash;
  return url.toString();
}
