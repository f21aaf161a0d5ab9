// The project's documentation as the tests read it: README.md and one page per topic in docs/, their fenced
// blocks and their headings. A shell block is either run by test/walkthrough.test.ts (```sh walkthrough) or says
// why not (```sh norun: <why>); test/doc-pages.test.ts holds every page to that.
import { readdirSync, readFileSync } from 'node:fs';

/** README.md first, then docs/*.md in name order: repository-relative paths. */
export function docPages(): string[] {
  const pages = readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...pages];
}

export interface Block {
  page: string;
  /** the fence's info string: its language and what follows, e.g. "sh walkthrough" */
  info: string;
  body: string;
}

export function blocksOf(page: string): Block[] {
  return [...readFileSync(page, 'utf8').matchAll(/^```(.*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    page,
    info: m[1].trim(),
    body: m[2],
  }));
}

/** A page's text with its fenced blocks and inline code taken out: what links and prose are read from. */
export function proseOf(page: string): string {
  return readFileSync(page, 'utf8')
    .replace(/^```.*\n[\s\S]*?^```$/gm, '')
    .replace(/`[^`\n]*`/g, '');
}

/** Headings as written (## and deeper; the page title too), without the hashes. */
export function headingsOf(page: string): string[] {
  return [
    ...readFileSync(page, 'utf8')
      .replace(/^```.*\n[\s\S]*?^```$/gm, '')
      .matchAll(/^#{1,6} (.+)$/gm),
  ].map((m) => m[1].trim());
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
export function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}
