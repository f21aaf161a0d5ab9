// Regular expressions that callers write and the server runs (an identity's claimMatch patterns): JavaScript's
// engine backtracks, so a pattern such as (a+)+b takes time exponential in its input, and .*a.*a.*a.*b
// polynomial. A pattern is judged when it is written, by its shape: no quantifier inside a repeated group (star
// height 1), no repeated group whose alternatives can begin alike, no backreferences or lookarounds, a bounded
// length, and a bounded number of ways to try a match. With inputs of at most maxMatchedLength characters, such
// a pattern's worst case is a bounded count of steps. A stored pattern is judged again before it is ever run.

/** The longest pattern accepted. */
export const maxPatternLength = 256;

/** The longest value matched against a pattern; a longer claim is refused, never matched. */
export const maxMatchedLength = 512;

/**
 * The most ways a pattern may have to split a value of maxMatchedLength characters: the product of its
 * alternatives and of (maxMatchedLength + 1) for each optional or repeated part (?, *, +, {n,m}). Two such parts
 * and a few alternatives fit; a third part does not.
 */
export const maxMatchWays = 1_000_000;

/** What a parsed piece of a pattern holds, as far as its cost goes. */
interface Piece {
  /** it holds a quantifier that repeats (its maximum is above 1) */
  repeats: boolean;
  /** it holds a part that is optional or matches a varying count (?, *, +, {n,m} with n < m) */
  varies?: boolean;
  /** the characters it can begin with when each alternative begins with a literal; undefined: not known */
  first?: string[];
  /** it holds alternatives that may begin alike (not known to begin with distinct literals) */
  overlapping?: boolean;
}

class PatternParser {
  private at = 0;
  ways = 1;

  constructor(private readonly source: string) {}

  private fail(reason: string): never {
    throw new UnsafePattern(reason);
  }

  private more(ways: number): void {
    this.ways *= ways;
    if (this.ways > maxMatchWays)
      this.fail(
        `it has too many ways to match (at most two optional or repeated parts, ?, *, +, {n,m}, and a few alternatives)`,
      );
  }

  /** alternatives: sequence ('|' sequence)* */
  alternatives(): Piece {
    const branches = [this.sequence()];
    while (this.source[this.at] === '|') {
      this.at++;
      branches.push(this.sequence());
    }
    if (branches.length > 1) this.more(branches.length);
    const firsts = branches.map((b) => b.first);
    const known = firsts.every((f): f is string[] => f !== undefined);
    const first = known ? firsts.flat() : undefined;
    const distinct = first !== undefined && new Set(first).size === first.length;
    return {
      repeats: branches.some((b) => b.repeats),
      varies: branches.some((b) => b.varies),
      first,
      overlapping: branches.some((b) => b.overlapping) || (branches.length > 1 && !distinct),
    };
  }

  private sequence(): Piece {
    let repeats = false;
    let varies = false;
    let overlapping = false;
    let first: string[] | undefined;
    let started = false;
    while (this.at < this.source.length && this.source[this.at] !== '|' && this.source[this.at] !== ')') {
      const term = this.term();
      repeats ||= term.repeats;
      varies ||= term.varies ?? false;
      overlapping ||= term.overlapping ?? false;
      if (!started && term.consumes) {
        first = term.first;
        started = true;
      }
    }
    return { repeats, varies, first, overlapping };
  }

  /** An atom and its quantifier. */
  private term(): Piece & { consumes: boolean } {
    const atom = this.atom();
    const q = this.quantifier();
    if (!q) return atom;
    if (!atom.consumes) this.fail('it repeats an assertion');
    if (q.max > 1 && atom.repeats) this.fail('it repeats a part that repeats itself (a nested quantifier)');
    // (?:x?){24}: a fixed count of an optional part is as many optional parts, each a way to split the value.
    if (q.max > 1 && atom.varies) this.fail('it repeats a part that is optional (a nested quantifier)');
    if (q.max > 1 && atom.overlapping)
      this.fail('it repeats a group whose alternatives can begin with the same character');
    if (q.min !== q.max) this.more(maxMatchedLength + 1);
    return {
      consumes: true,
      repeats: atom.repeats || q.max > 1,
      varies: atom.varies || q.min !== q.max,
      overlapping: atom.overlapping,
      first: q.min === 0 ? undefined : atom.first,
    };
  }

  private quantifier(): { min: number; max: number } | undefined {
    const c = this.source[this.at];
    let q: { min: number; max: number } | undefined;
    if (c === '*') q = { min: 0, max: Infinity };
    else if (c === '+') q = { min: 1, max: Infinity };
    else if (c === '?') q = { min: 0, max: 1 };
    else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.at));
      if (!m) return undefined; // a literal brace
      const min = Number(m[1]);
      q = { min, max: m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]) };
      this.at += m[0].length - 1;
    }
    if (!q) return undefined;
    this.at++;
    if (this.source[this.at] === '?') this.at++; // lazy: the same ways, tried in another order
    return q;
  }

  private atom(): Piece & { consumes: boolean } {
    const c = this.source[this.at++];
    if (c === '^' || c === '$') return { repeats: false, consumes: false };
    if (c === '.') return { repeats: false, consumes: true };
    if (c === '[') {
      this.characterClass();
      return { repeats: false, consumes: true };
    }
    if (c === '\\') return this.escape();
    if (c === '(') {
      if (/^\?<?[=!]/.test(this.source.slice(this.at))) this.fail('it has a lookahead or lookbehind');
      if (this.source.startsWith('?:', this.at)) this.at += 2;
      else if (this.source[this.at] === '?') this.at = this.source.indexOf('>', this.at) + 1; // (?<name>
      const inner = this.alternatives();
      this.at++; // ')'
      const { repeats, varies, first, overlapping } = inner;
      return { repeats, varies, first, overlapping, consumes: true };
    }
    return { repeats: false, consumes: true, first: [c] };
  }

  private characterClass(): void {
    while (this.at < this.source.length && this.source[this.at] !== ']') {
      if (this.source[this.at] === '\\') this.at++;
      this.at++;
    }
    this.at++;
  }

  private escape(): Piece & { consumes: boolean } {
    const c = this.source[this.at++];
    if (/[1-9]/.test(c) || (c === 'k' && this.source[this.at] === '<')) this.fail('it has a backreference');
    if (c === 'b' || c === 'B') return { repeats: false, consumes: false };
    // A class escape (\d, \w, \s, ...) or an escaped character: one character either way. Without the u flag,
    // \u and \x take exactly 4 and 2 hex digits, or stand for the letter itself (\u{2,} repeats a "u").
    const digits = c === 'u' ? 4 : c === 'x' ? 2 : 0;
    const coded = digits > 0 && new RegExp(`^[0-9a-fA-F]{${digits}}`).test(this.source.slice(this.at));
    if (coded) this.at += digits;
    else if (c === 'c' && /[A-Za-z]/.test(this.source[this.at] ?? '')) this.at++;
    const literal = coded || /[dDwWsSnrtfv0c]/.test(c) ? undefined : [c];
    return { repeats: false, consumes: true, first: literal };
  }
}

class UnsafePattern extends Error {}

/** Why a pattern may not be stored or run, or undefined when it may. */
export function patternProblem(source: string): string | undefined {
  if (source.length > maxPatternLength) return `a pattern is at most ${maxPatternLength} characters`;
  try {
    new RegExp(source);
  } catch {
    return 'it is not a valid regular expression';
  }
  try {
    const parser = new PatternParser(source);
    parser.alternatives();
    return undefined;
  } catch (e) {
    if (e instanceof UnsafePattern) return e.message;
    throw e;
  }
}

/** Compiled patterns, the most recently used kept: a pattern is judged and compiled once, not per request. */
const compiled = new Map<string, RegExp | null>();
export const maxCompiledPatterns = 1000;

/** The compiled whole-value match of a pattern; null when the pattern is unsafe (it is then never run). */
export function compiledPattern(source: string): RegExp | null {
  let re = compiled.get(source);
  if (re !== undefined) {
    compiled.delete(source);
  } else {
    re = patternProblem(source) === undefined ? new RegExp(`^(?:${source})$`) : null;
    if (compiled.size >= maxCompiledPatterns) compiled.delete(compiled.keys().next().value!);
  }
  compiled.set(source, re);
  return re;
}

/** How many compiled patterns are kept (tests count them). */
export const compiledPatternCount = () => compiled.size;

/** A whole-value match: false for a value too long to match, or a pattern that is not safe to run. */
export function matchesPattern(source: string, value: string): boolean {
  if (value.length > maxMatchedLength) return false;
  return compiledPattern(source)?.test(value) ?? false;
}
