// The records of an import file, a JSON array or NDJSON, one at a time: the file is read in blocks, so memory
// does not grow with it (a million records load as well as ten).
import { createReadStream } from 'node:fs';

export class RecordFileError extends Error {}

/** Splits the text of a JSON array into the texts of its elements, block by block. */
class ArrayElements {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private closed = false;
  private pending = '';

  /** The elements that end in this block. */
  *take(block: string): Generator<string> {
    let from = 0;
    for (let i = 0; i < block.length; i++) {
      const c = block.charCodeAt(i);
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === 0x5c) this.escaped = true;
        else if (c === 0x22) this.inString = false;
      } else if (this.closed) {
        if (!/\s/.test(block[i])) throw new SyntaxError('text after the array');
      } else if (c === 0x22) this.inString = true;
      else if (c === 0x5b || c === 0x7b) {
        // The array's own bracket opens it: its first element starts after it.
        if (++this.depth === 1) from = i + 1;
      } else if (c === 0x5d || c === 0x7d) {
        if (--this.depth === 0) {
          this.closed = true;
          const last = this.pending + block.slice(from, i);
          this.pending = '';
          if (last.trim() !== '') yield last;
        }
      } else if (c === 0x2c && this.depth === 1) {
        yield this.pending + block.slice(from, i);
        this.pending = '';
        from = i + 1;
      }
    }
    if (this.depth > 0) this.pending += block.slice(from);
  }

  finish(): void {
    if (!this.closed) throw new SyntaxError('the array does not end');
  }
}

async function* blocksOf(file: string, blockSize: number): AsyncGenerator<string> {
  try {
    for await (const block of createReadStream(file, { encoding: 'utf8', highWaterMark: blockSize }))
      yield block as string;
  } catch (e) {
    throw new RecordFileError(`cannot read ${file}: ${(e as Error).message}`);
  }
}

async function* arrayRecords(file: string, blocks: AsyncGenerator<string>): AsyncGenerator<unknown> {
  const elements = new ArrayElements();
  let n = 0;
  try {
    for await (const block of blocks) {
      for (const text of elements.take(block)) {
        const record = JSON.parse(text) as unknown;
        n++;
        yield record;
      }
    }
    elements.finish();
  } catch (e) {
    if (!(e instanceof SyntaxError)) throw e;
    throw new RecordFileError(`${file} is not valid JSON (record ${n + 1}): ${e.message}`);
  }
}

async function* lineRecords(file: string, blocks: AsyncGenerator<string>): AsyncGenerator<unknown> {
  let rest = '';
  let line = 0;
  const parse = (text: string) => {
    line++;
    if (text.trim() === '') return undefined;
    try {
      return { record: JSON.parse(text) as unknown };
    } catch (e) {
      throw new RecordFileError(`${file}:${line}: not a JSON record: ${(e as Error).message}`);
    }
  };
  for await (const block of blocks) {
    const lines = (rest + block).split('\n');
    rest = lines.pop()!;
    for (const text of lines) {
      const parsed = parse(text);
      if (parsed) yield parsed.record;
    }
  }
  const parsed = parse(rest);
  if (parsed) yield parsed.record;
}

/**
 * Every record of the file, in order: a file whose first character is "[" is a JSON array, any other NDJSON. It is
 * read blockSize bytes at a time.
 */
export async function* recordsOf(file: string, blockSize = 1 << 20): AsyncGenerator<unknown> {
  const blocks = blocksOf(file, blockSize);
  // The blocks up to the first character that is not white space, which tells the format.
  let head = '';
  for (let next = await blocks.next(); !next.done; next = await blocks.next()) {
    head += next.value;
    if (head.trimStart() !== '') break;
  }
  if (head.trim() === '') return;
  async function* all(): AsyncGenerator<string> {
    yield head;
    yield* blocks;
  }
  yield* head.trimStart().startsWith('[') ? arrayRecords(file, all()) : lineRecords(file, all());
}
