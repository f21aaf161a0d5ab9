// A table of routes: a method and a template (runtime/http/route-template.ts) to the middleware that answer it.
// The first route in the order they were added whose method and template match answers. A request is tried only
// against the routes whose literal prefix can lead its path: the routes sit in a trie of the whole segments of
// their prefixes (/registry/v2/repos/{uid*} under registry, v2, repos), and a path walks down it by its own
// segments, so a table of hundreds of routes costs a few tests per request.
import { compose, type HttpContext, type Middleware } from './context.js';
import { matchTemplate, readTemplate, type RouteTemplate } from './route-template.js';

export interface Route extends RouteTemplate {
  /** GET brings HEAD */
  methods: string[];
  /** undefined when the route answered at once */
  run: (ctx: HttpContext) => Promise<void> | void;
}

/** The methods a route can be added for. */
const routeMethods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']);

/** A place in the trie: the routes that may match a path whose segments lead here, in table order. */
interface Segment {
  next: Map<string, Segment>;
  routes: Route[];
  /** routes by the method they answer (one of routeMethods), made at the first request for it */
  byMethod: Map<string, Route[]>;
}

/** The whole segments of a route's literal prefix ("registry", "v2", "repos" of /registry/v2/repos/{uid*}). */
function fixedSegments(t: RouteTemplate): string[] {
  const segments = t.prefix.slice(1).split('/');
  // After the last "/" of a prefix that a capture goes on, the segment is only begun.
  return t.captures.length === 0 ? segments : segments.slice(0, -1);
}

export class Router {
  private readonly table: (Route & { fixed: string[] })[] = [];
  /** middleware run before the route that answer, when one of this router does (router.use) */
  private readonly shared: Middleware[] = [];
  private trie?: Segment;

  get(template: string, ...stack: Middleware[]): this {
    return this.add(['GET', 'HEAD'], template, stack);
  }

  post(template: string, ...stack: Middleware[]): this {
    return this.add(['POST'], template, stack);
  }

  put(template: string, ...stack: Middleware[]): this {
    return this.add(['PUT'], template, stack);
  }

  patch(template: string, ...stack: Middleware[]): this {
    return this.add(['PATCH'], template, stack);
  }

  delete(template: string, ...stack: Middleware[]): this {
    return this.add(['DELETE'], template, stack);
  }

  /** Runs before whichever route of this router answers (never when none does). */
  use(middleware: Middleware): this {
    this.shared.push(middleware);
    return this;
  }

  private add(methods: string[], template: string, stack: Middleware[]): this {
    const shared = this.shared;
    // Composed at the first request, when every use() has been made.
    let composed: ((ctx: HttpContext) => Promise<void> | void) | undefined;
    const run = (ctx: HttpContext) => (composed ??= compose([...shared, ...stack]))(ctx);
    const read = readTemplate(template);
    this.table.push({ ...read, methods, run, fixed: fixedSegments(read) });
    this.trie = undefined;
    return this;
  }

  /** The trie of the table's fixed segments; each place holds the routes whose fixed segments lead to it. */
  private build(): Segment {
    const root: Segment = { next: new Map(), routes: [], byMethod: new Map() };
    for (const route of this.table) {
      let at = root;
      for (const s of route.fixed) {
        let next = at.next.get(s);
        if (!next) at.next.set(s, (next = { next: new Map(), routes: [], byMethod: new Map() }));
        at = next;
      }
    }
    const fill = (at: Segment, path: string[]) => {
      at.routes = this.table.filter((r) => r.fixed.every((s, i) => s === path[i]) && r.fixed.length <= path.length);
      for (const [s, next] of at.next) fill(next, [...path, s]);
    };
    fill(root, []);
    return root;
  }

  /** The routes that may match a path, in table order: those at the deepest place its segments lead to. */
  private candidates(path: string): Segment {
    let at = (this.trie ??= this.build());
    if (path[0] !== '/') return at;
    // down while the place has places below it: a uid after the last fixed segment is never sliced out
    for (let from = 1; at.next.size > 0;) {
      const end = path.indexOf('/', from);
      const next = at.next.get(end < 0 ? path.slice(from) : path.slice(from, end));
      if (!next) return at;
      at = next;
      if (end < 0) return at;
      from = end + 1;
    }
    return at;
  }

  /** Those of candidates(path) that answer the method. */
  private answering(method: string, path: string): Route[] {
    if (!routeMethods.has(method)) return [];
    const at = this.candidates(path);
    let routes = at.byMethod.get(method);
    if (!routes) at.byMethod.set(method, (routes = at.routes.filter((r) => r.methods.includes(method))));
    return routes;
  }

  /** The methods some route answers at this path. */
  methodsAt(path: string): string[] {
    return this.candidates(path).routes.flatMap((r) => (matchTemplate(r, path) ? r.methods : []));
  }

  /** The route answering the method at the path, and its raw captures. */
  find(method: string, path: string): { route: Route; captures: string[] } | undefined {
    for (const route of this.answering(method, path)) {
      const captures = matchTemplate(route, path);
      if (captures) return { route, captures };
    }
    return undefined;
  }

  /**
   * The route this request is for, though no route ran it (a step before routing refused it, or the method is
   * not served there): the route answering the method, else the first at the path.
   */
  routeAt(method: string, path: string): Route | undefined {
    return this.find(method, path)?.route ?? this.candidates(path).routes.find((r) => matchTemplate(r, path));
  }

  /**
   * Runs the route that answers the request: true when it answered at once, else the promise of its answer;
   * undefined when no route does.
   */
  dispatch(ctx: HttpContext): Promise<void> | true | undefined {
    const found = this.find(ctx.method, ctx.path);
    if (!found) return undefined;
    ctx.route = found.route;
    ctx.captures = found.captures;
    return found.route.run(ctx) ?? true;
  }
}
