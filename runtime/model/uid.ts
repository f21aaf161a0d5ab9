// UID paths: root records have 40 hex characters; a child is "<parent uid>/<16 hex>".
import { randomBytes } from 'node:crypto';
import { invalidArgument } from './errors.js';

const uidPath = /^[0-9a-f]{40}(?:\/[0-9a-f]{16})*$/;

/** A uid where one is expected, else INVALID_ARGUMENT naming the field. */
export function checkUid(uid: string, field: string): void {
  if (!uidPath.test(uid))
    throw invalidArgument([
      { field, description: `"${uid}" is not a uid (40 hex characters, then /16 hex per level)` },
    ]);
}

/** Random bytes drawn a block at a time: one call to the system's generator costs as much as a block's worth. */
const pool = { bytes: Buffer.alloc(0), at: 0 };

function randomHex(length: number): string {
  if (pool.at + length > pool.bytes.length) {
    pool.bytes = randomBytes(4096);
    pool.at = 0;
  }
  pool.at += length;
  return pool.bytes.toString('hex', pool.at - length, pool.at);
}

export function newRootUid(): string {
  return randomHex(20);
}

export function newChildUid(parent: string): string {
  return `${parent}/${randomHex(8)}`;
}

/** A new uid: under its parent, or a root uid. */
export const newUid = (parent: string | undefined) => (parent === undefined ? newRootUid() : newChildUid(parent));

/**
 * New uids for many records written in one transaction (an import's step). They share their first 4 hex digits,
 * random per run, so they sit together in the uid index: the transaction writes a few of its pages instead of
 * one per record, which at a million rows is most of an insert's cost. The other digits are random per uid.
 */
export function uidRun(): (parent: string | undefined) => string {
  const shared = randomHex(2);
  return (parent) => (parent === undefined ? `${shared}${randomHex(18)}` : `${parent}/${shared}${randomHex(6)}`);
}

export function isUidPath(uid: string): boolean {
  return uidPath.test(uid);
}

/**
 * The uids strictly below uid, as a range on the uid index: every "uid/..." sorts after "uid/" and before
 * "uid0" ('0' follows '/'), so SQLite walks the index instead of scanning the table as LIKE would.
 */
export function descendantRange(uid: string): { gt: string; lt: string } {
  return { gt: `${uid}/`, lt: `${uid}0` };
}

/** Whether uid is scope itself or lies below it. */
export const within = (uid: string, scope: string) => uid === scope || uid.startsWith(`${scope}/`);

/** The parent of a uid, or undefined for a root uid. */
export function parentOf(uid: string): string | undefined {
  const i = uid.lastIndexOf('/');
  return i < 0 ? undefined : uid.slice(0, i);
}

/** All strict ancestors, nearest first. */
export function ancestorsOf(uid: string): string[] {
  const out: string[] = [];
  for (let p = parentOf(uid); p !== undefined; p = parentOf(p)) out.push(p);
  return out;
}
