// A route's template, as the generator emits it and hand-written routes write it: literal text and captures, e.g.
// /registry/v2/repos/{uid*}/digests/{digest}. {name} takes one segment (no "/"); {name*} takes a uid, which may span
// segments (its "/" raw or as %2F) but never holds ":", so "<uid>:<verb>" is never read as a uid and a custom
// method the API does not serve matches no route (404) instead of reaching get. A capture is never empty; where
// several splits of a path fit, each capture takes the longest that lets the rest match.

export interface Capture {
  name: string;
  /** a uid: may span segments */
  spans: boolean;
}

export interface RouteTemplate {
  template: string;
  /** the literal text every path it matches starts with: the template up to its first capture */
  prefix: string;
  /** the literal texts around the captures: literals[i] before captures[i], the last one after the last capture */
  literals: string[];
  captures: Capture[];
  /** the template with each capture as "*": what logs and metrics call the route (never a path, which holds uids) */
  name: string;
}

/** The template read into its parts; a template two captures could split differently is refused. */
export function readTemplate(template: string): RouteTemplate {
  // split with a group: the texts at even indexes, the captures (name and "*") at odd ones
  const parts = template.split(/\{(\w+\*?)\}/);
  const literals = parts.filter((_, i) => i % 2 === 0);
  const captures = parts
    .filter((_, i) => i % 2 === 1)
    .map((c) => ({ name: c.replace('*', ''), spans: c.endsWith('*') }));
  const problem = !template.startsWith('/')
    ? 'does not start with "/"'
    : literals.some((l) => /[{}]/.test(l))
      ? 'has a brace outside a {name} or {name*} capture'
      : literals.slice(1, -1).some((l) => l === '')
        ? 'has two captures with no text between them'
        : new Set(captures.map((c) => c.name)).size < captures.length
          ? 'names a capture twice'
          : undefined;
  if (problem) throw new Error(`route template ${template} ${problem}`);
  return { template, prefix: literals[0], literals, captures, name: literals.join('*') };
}

/** The raw captures of the path (not decoded), in the template's order; undefined when it does not match. */
export function matchTemplate(t: RouteTemplate, path: string): string[] | undefined {
  if (t.captures.length === 0) return path === t.prefix ? [] : undefined;
  // The text after the last capture ends every path the template matches: most templates fail here, at once, most
  // of them on its last character (a comparison of two codes, where endsWith costs a call).
  const last = t.literals[t.literals.length - 1];
  if (last !== '' && path.charCodeAt(path.length - 1) !== last.charCodeAt(last.length - 1)) return undefined;
  if (!path.startsWith(t.prefix) || !path.endsWith(last)) return undefined;
  const out: string[] = [];
  return captureFrom(t, path, 0, t.prefix.length, out) ? out : undefined;
}

/** Capture i and those after it from path[at...]; out[i...] filled when they match. */
function captureFrom(t: RouteTemplate, path: string, i: number, at: number, out: string[]): boolean {
  const after = t.literals[i + 1];
  const cannotHold = t.captures[i].spans ? ':' : '/';
  if (i === t.captures.length - 1) {
    // matchTemplate has seen the path end with the text after it
    const end = path.length - after.length;
    if (end <= at) return false;
    const stop = path.indexOf(cannotHold, at);
    if (stop >= 0 && stop < end) return false;
    out[i] = path.slice(at, end);
    return true;
  }
  // the first character the capture cannot hold: it ends at or before it
  let limit = path.indexOf(cannotHold, at);
  if (limit < 0) limit = path.length;
  // the longest capture first: the last place the text after it starts, then the ones before
  for (let end = path.lastIndexOf(after, limit); end > at; end = path.lastIndexOf(after, end - 1)) {
    if (captureFrom(t, path, i + 1, end + after.length, out)) {
      out[i] = path.slice(at, end);
      return true;
    }
  }
  return false;
}
