// spec/proto.lock.json: the gRPC numbers the spec's wire has had, committed with it. A domain, a resource or a field
// the spec gives no proto declaration is on gRPC all the same: its package, service, field, list request, enum
// value and capability numbers are assigned here and recorded, so that they never change between runs or clones,
// and a number that was once a field's (or a value's) is never given to another: a removed field's number and name
// become `reserved`. Numbers the spec writes (the Platform's, as the reference numbers them) win and are recorded.
// A file of its own, not a part of schema.lock.json: the stored shape moves with schemaVersion, the wire does not.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiModel, ProtoReserved } from '../runtime/model/api-model.js';

/** One message's or enum's numbers: by field (or value) name, and the numbers of those the spec no longer has. */
export interface LockedNumbers {
  numbers: Record<string, number>;
  /** number -> the name it had, reserved for good */
  retired?: Record<string, string>;
}
export interface ProtoLock {
  /** domain -> package */
  packages: Record<string, string>;
  /** collection -> service */
  services: Record<string, string>;
  /** full message name -> its fields' numbers */
  messages: Record<string, LockedNumbers>;
  /** full enum name -> its values' numbers */
  enums: Record<string, LockedNumbers>;
}

export const protoLockFile = 'proto.lock.json';

const emptyLock = (): ProtoLock => ({ packages: {}, services: {}, messages: {}, enums: {} });

export function readProtoLock(specDir: string): ProtoLock {
  const file = join(specDir, protoLockFile);
  return existsSync(file) ? { ...emptyLock(), ...(JSON.parse(readFileSync(file, 'utf8')) as ProtoLock) } : emptyLock();
}

const sorted = <T>(o: Record<string, T>) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));

/** The lock as its file holds it: keys sorted, one line per message or enum, so a change is a line of a diff. */
export function protoLockText(lock: ProtoLock): string {
  const section = (name: keyof ProtoLock, last = false) => {
    const lines = Object.entries(sorted<unknown>(lock[name])).map(
      ([k, v]) => `    ${JSON.stringify(k)}: ${JSON.stringify(v)}`,
    );
    return `  ${JSON.stringify(name)}: {${lines.length ? `\n${lines.join(',\n')}\n  ` : ''}}${last ? '' : ','}`;
  };
  return ['{', section('packages'), section('services'), section('messages'), section('enums', true), '}', ''].join(
    '\n',
  );
}

/** Writes the lock when it changed (the author commits it); true when it did. */
export function writeProtoLock(specDir: string, lock: ProtoLock): boolean {
  const text = protoLockText(lock);
  const file = join(specDir, protoLockFile);
  if (existsSync(file) && readFileSync(file, 'utf8') === text) return false;
  writeFileSync(file, text);
  return true;
}

/** A name to number, with the number the spec pins if it does. */
export interface NumberedEntry {
  name: string;
  pinned?: number;
}

const pascal = (s: string) => s[0].toUpperCase() + s.slice(1);
/** proto reserves 19000-19999 for itself. */
const usable = (n: number) => n < 19000 || n > 19999;

/**
 * Assigns numbers from a lock and records them in the next one. Read from `previous` only, so a message built twice
 * is numbered the same twice.
 */
export class ProtoNumbering {
  readonly next: ProtoLock = emptyLock();

  private readonly previous: ProtoLock;

  constructor(
    previous: ProtoLock | undefined,
    private readonly problems: string[],
  ) {
    this.previous = previous ?? emptyLock();
  }

  /** A domain's package: the spec's, else the one it was given, else <service>.<domain>.<version>. */
  packageOf(domain: string, given: string | undefined, model: ApiModel): string {
    const service = model.service.replace(/-/g, '_') || 'api';
    const pkg = given ?? this.previous.packages[domain] ?? `${service}.${domain}.${model.version}`;
    this.next.packages[domain] = pkg;
    return pkg;
  }

  /** A resource's service: the spec's, else the one it was given, else <Collection>Service. */
  serviceOf(collection: string, given: string | undefined): string {
    const service = given ?? this.previous.services[collection] ?? `${pascal(collection)}Service`;
    this.next.services[collection] = service;
    return service;
  }

  message(name: string, entries: NumberedEntry[], at: (entry: string) => string): Map<string, number> {
    return this.assign(this.previous.messages[name], (this.next.messages[name] = { numbers: {} }), entries, 1, at);
  }

  /** An enum's values; the first is 0 (what an unset field reads as), as proto3 needs. */
  enumValues(name: string, entries: NumberedEntry[], at: (entry: string) => string): Map<string, number> {
    const [first, ...rest] = entries;
    const all = first ? [{ name: first.name, pinned: first.pinned ?? 0 }, ...rest] : [];
    return this.assign(this.previous.enums[name], (this.next.enums[name] = { numbers: {} }), all, 0, at);
  }

  /** What a message or enum reserves: its retired numbers, and their names while no entry has them again. */
  reserved(name: string, kind: 'message' | 'enum', declared?: ProtoReserved): ProtoReserved | undefined {
    const locked = (kind === 'message' ? this.next.messages : this.next.enums)[name];
    const retired = Object.entries(locked?.retired ?? {});
    if (retired.length === 0) return declared;
    const numbers = [...new Set([...(declared?.numbers ?? []), ...retired.map(([n]) => Number(n))])].sort(
      (a, b) => a - b,
    );
    const names = [...new Set([...(declared?.names ?? []), ...retired.map(([, n]) => n)])]
      .filter((n) => !(n in locked.numbers))
      .sort();
    return { ...declared, numbers, ...(names.length ? { names } : {}) };
  }

  /** A number the spec pins that the lock gave another entry, present or removed. */
  private pinnedProblem(name: string, n: number, old: LockedNumbers | undefined, present: Set<string>) {
    const retired = old?.retired?.[n];
    const holder = Object.entries(old?.numbers ?? {}).find(([k, v]) => v === n && k !== name)?.[0];
    const gone = retired !== undefined && retired !== name ? retired : holder && !present.has(holder) && holder;
    if (gone) return `${n} was the number of ${gone}, removed: it stays reserved`;
    if (holder) return `${n} is already the number of ${holder} (${protoLockFile})`;
    return undefined;
  }

  private assign(
    old: LockedNumbers | undefined,
    into: LockedNumbers,
    entries: NumberedEntry[],
    first: number,
    at: (entry: string) => string,
  ): Map<string, number> {
    const retired: Record<string, string> = { ...old?.retired };
    const out = new Map<string, number>();
    const taken = new Map<number, string>();
    const present = new Set(entries.map((e) => e.name));
    // A number the spec writes wins; one the lock gave another entry, or a retired one, is a wire break.
    for (const e of entries.filter((x) => x.pinned !== undefined)) {
      const n = e.pinned!;
      const problem = this.pinnedProblem(e.name, n, old, present);
      if (problem) this.problems.push(`${at(e.name)}: ${problem}`);
      if (retired[n] === e.name) delete retired[n];
      out.set(e.name, n);
      taken.set(n, e.name);
    }
    for (const e of entries.filter((x) => x.pinned === undefined)) {
      const n = old?.numbers[e.name];
      if (n !== undefined && !taken.has(n)) {
        out.set(e.name, n);
        taken.set(n, e.name);
      }
    }
    // What the spec no longer has, or has under another number: its number is never given again.
    for (const [name, n] of Object.entries(old?.numbers ?? {}))
      if (out.get(name) !== n && !taken.has(n)) retired[n] = name;
    const used = (n: number) => taken.has(n) || retired[n] !== undefined || !usable(n);
    let free = first;
    for (const e of entries.filter((x) => !out.has(x.name))) {
      while (used(free)) free++;
      out.set(e.name, free);
      taken.set(free, e.name);
    }
    into.numbers = Object.fromEntries(entries.map((e) => [e.name, out.get(e.name)!]));
    if (Object.keys(retired).length > 0) into.retired = retired;
    return out;
  }
}
