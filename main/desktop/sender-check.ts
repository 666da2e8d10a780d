/**
 * IPC is answered only for our own renderer: the sending frame's URL must be the console page we
 * loaded (same file, or same origin in development). Anything else — a navigated-away frame, an
 * iframe, a remote page — gets `forbidden`.
 */
export function isTrustedSender(frameUrl: string | undefined | null, rendererUrl: string): boolean {
  if (!frameUrl) return false;
  let frame: URL;
  let ours: URL;
  try {
    frame = new URL(frameUrl);
    ours = new URL(rendererUrl);
  } catch {
    return false;
  }
  if (ours.protocol === 'file:') return frame.protocol === 'file:' && frame.pathname === ours.pathname;
  return frame.origin === ours.origin;
}
