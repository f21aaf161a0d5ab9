// A table of routes: a method and a pattern (an exact path, or a regular expression over the raw path) to the
// middleware that answer it. The first route in the order they were added whose method and pattern match
// answers. A request is tried only against the routes that can match its first path segments (/registry/v2/repos),
// known from each pattern's literal start, so a table of hundreds of routes costs a few tests per request; and a
// pattern's regular expression runs only for a path with its literal start and end (a string comparison).
import { compose, type HttpContext, type Middleware } from './context.js';

export interface Route {
  /** GET brings HEAD */
  methods: string[];
  pattern: string | RegExp;
  run: (ctx: HttpContext) => Promise<void>;
  /** what every path the pattern matches starts and ends with: a path without them is not tried against it */
  starts: string;
  ends: string;
}

/** The text every path a regular expression matches starts with, and whether the expression ends there. */
function literalStart(source: string): { text: string; whole: boolean } {
  let text = '';
  for (let i = source.startsWith('^') ? 1 : 0; i < source.length;) {
    let literal: string;
    let next: number;
    if (source[i] === '\\' && i + 1 < source.length && !/\w/.test(source[i + 1])) {
      literal = source[i + 1];
      next = i + 2;
    } else if (source[i] === '$' && i === source.length - 1) return { text, whole: true };
    else if ('\\.*+?()[]{}|^$'.includes(source[i])) break;
    else {
      literal = source[i];
      next = i + 1;
    }
    // A quantifier after it makes the character optional or repeated: the literal start ends before it.
    if ('*+?{'.includes(source[next] ?? '')) break;
    text += literal;
    i = next;
  }
  return { text, whole: false };
}

/**
 * The text every path a regular expression matches ends with ("/readme" of ^\/registry\/v2\/repos\/([^:]+)\/readme$);
 * '' when the expression does not fix it.
 */
function literalEnd(source: string): string {
  const escaped = (at: number) => {
    let slashes = 0;
    for (let j = at - 1; j >= 0 && source[j] === '\\'; j--) slashes++;
    return slashes % 2 === 1;
  };
  // An escape of several characters (\u0041, \x41, \cJ, a back-reference) would be misread from its end.
  if (!source.endsWith('$') || escaped(source.length - 1) || /\\[uxckpP0-9]/.test(source)) return '';
  let text = '';
  for (let i = source.length - 2; i >= 0;) {
    const c = source[i];
    if (escaped(i)) {
      // \d, \w, \b and the like are classes or assertions, not the letter
      if (/\w/.test(c)) break;
      text = c + text;
      i -= 2;
    } else if ('\\.*+?()[]{}|^$'.includes(c)) break;
    else {
      text = c + text;
      i--;
    }
  }
  return text;
}

/** The methods a route can be added for. */
const routeMethods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);

/** How many leading segments of a path pick its candidate routes. */
const keyDepth = 3;

/** The first `depth` segments of a path ("registry/v2/repos" of /registry/v2/repos/x at 3); undefined when it has fewer. */
function keyOf(path: string, depth: number): string | undefined {
  let end = 0;
  for (let i = 0; i < depth; i++) {
    if (end >= path.length) return undefined;
    const next = path.indexOf('/', end + 1);
    end = next < 0 ? path.length : next;
  }
  return path.slice(1, end);
}

/**
 * The leading segments every path the pattern matches has, up to keyDepth, joined by "/" ("registry/v2/repos"
 * of ^\/registry\/v2\/repos\/([^:]+)$); '' when the pattern fixes none.
 */
function fixedSegments(pattern: string | RegExp): string {
  let text: string;
  let whole: boolean;
  if (typeof pattern === 'string') [text, whole] = [pattern, true];
  // An alternative anywhere could start elsewhere; a flag could match other letters.
  else if (!pattern.source.startsWith('^') || pattern.source.includes('|') || pattern.flags !== '') return '';
  else ({ text, whole } = literalStart(pattern.source));
  if (!text.startsWith('/')) return '';
  // A segment is fixed when the literal start goes on past it, or ends with it and with the pattern.
  const segments = text.slice(1).split('/');
  const complete = whole ? segments : segments.slice(0, -1);
  return complete.slice(0, keyDepth).join('/');
}

function captured(pattern: string | RegExp, path: string): string[] | undefined {
  if (typeof pattern === 'string') return pattern === path ? [] : undefined;
  const m = pattern.exec(path);
  return m ? m.slice(1) : undefined;
}

export class Router {
  private readonly table: (Route & { fixed: string })[] = [];
  /** middleware run before the route that answer, when one of this router does (router.use) */
  private readonly shared: Middleware[] = [];
  /** per depth 1 to keyDepth, the candidates of paths by their leading segments at that depth */
  private byKey?: Map<string, Route[]>[];
  private anywhere: Route[] = [];
  /** candidates lists by the method their routes answer (one of routeMethods) */
  private readonly byMethod = new Map<Route[], Map<string, Route[]>>();

  get(pattern: string | RegExp, ...stack: Middleware[]): this {
    return this.add(['GET', 'HEAD'], pattern, stack);
  }

  post(pattern: string | RegExp, ...stack: Middleware[]): this {
    return this.add(['POST'], pattern, stack);
  }

  put(pattern: string | RegExp, ...stack: Middleware[]): this {
    return this.add(['PUT'], pattern, stack);
  }

  patch(pattern: string | RegExp, ...stack: Middleware[]): this {
    return this.add(['PATCH'], pattern, stack);
  }

  delete(pattern: string | RegExp, ...stack: Middleware[]): this {
    return this.add(['DELETE'], pattern, stack);
  }

  /** Runs before whichever route of this router answers (never when none does). */
  use(middleware: Middleware): this {
    this.shared.push(middleware);
    return this;
  }

  private add(methods: string[], pattern: string | RegExp, stack: Middleware[]): this {
    const shared = this.shared;
    // Composed at the first request, when every use() has been made.
    let composed: ((ctx: HttpContext) => Promise<void>) | undefined;
    const run = (ctx: HttpContext) => (composed ??= compose([...shared, ...stack]))(ctx);
    const fixed = typeof pattern === 'string' || pattern.source.includes('|') || pattern.flags !== '';
    this.table.push({
      methods,
      pattern,
      run,
      fixed: fixedSegments(pattern),
      starts: fixed || !pattern.source.startsWith('^') ? '' : literalStart(pattern.source).text,
      ends: fixed ? '' : literalEnd(pattern.source),
    });
    this.byKey = undefined;
    return this;
  }

  /**
   * The routes that may match a path, in table order: those whose fixed segments lead the path's. A path is
   * looked up by its deepest key some route fixes; with no such key, only routes fixing fewer segments (or none)
   * can match it.
   */
  private candidates(path: string): Route[] {
    if (!this.byKey) {
      this.byKey = [];
      for (let depth = 1; depth <= keyDepth; depth++) {
        const lists = new Map<string, Route[]>();
        for (const key of new Set(this.table.map((r) => r.fixed.split('/').slice(0, depth).join('/'))))
          if (key !== '' && key.split('/').length === depth)
            lists.set(
              key,
              this.table.filter((r) => r.fixed === '' || `${key}/`.startsWith(`${r.fixed}/`)),
            );
        this.byKey.push(lists);
      }
      this.anywhere = this.table.filter((r) => r.fixed === '');
      this.byMethod.clear();
    }
    for (let depth = keyDepth; depth >= 1; depth--) {
      const key = keyOf(path, depth);
      const found = key === undefined ? undefined : this.byKey[depth - 1].get(key);
      if (found) return found;
    }
    return this.anywhere;
  }

  /** Those of candidates(path) that answer the method. */
  private answering(method: string, path: string): Route[] {
    if (!routeMethods.has(method)) return [];
    const all = this.candidates(path);
    let of = this.byMethod.get(all);
    if (!of) this.byMethod.set(all, (of = new Map()));
    let routes = of.get(method);
    if (!routes) of.set(method, (routes = all.filter((r) => r.methods.includes(method))));
    return routes;
  }

  /** The methods some route answers at this path. */
  methodsAt(path: string): string[] {
    return this.candidates(path).flatMap((r) => (captured(r.pattern, path) ? r.methods : []));
  }

  /** The route answering the method at the path, and its raw captures. */
  find(method: string, path: string): { route: Route; captures: string[] } | undefined {
    for (const route of this.answering(method, path)) {
      if (!path.startsWith(route.starts) || !path.endsWith(route.ends)) continue;
      const captures = captured(route.pattern, path);
      if (captures) return { route, captures };
    }
    return undefined;
  }

  /**
   * The pattern of the route this request is for, though no route ran it (a step before routing refused it, or
   * the method is not served there): the route answering the method, else the first at the path.
   */
  patternAt(method: string, path: string): string | RegExp | undefined {
    return (
      this.find(method, path)?.route.pattern ?? this.candidates(path).find((r) => captured(r.pattern, path))?.pattern
    );
  }

  /** Runs the route that answers the request; undefined when none does. */
  dispatch(ctx: HttpContext): Promise<void> | undefined {
    const found = this.find(ctx.method, ctx.path);
    if (!found) return undefined;
    ctx.route = found.route.pattern;
    ctx.captures = found.captures;
    return found.route.run(ctx);
  }

  /** The table as one middleware: the matching route answers, or the next middleware when none matches. */
  routes(): Middleware {
    return (ctx, next) => this.dispatch(ctx) ?? next();
  }
}
