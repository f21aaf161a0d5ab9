// UID paths: root records have 40 hex characters; a child is "<parent uid>/<16 hex>".
import { randomBytes } from 'node:crypto';

const uidPath = /^[0-9a-f]{40}(?:\/[0-9a-f]{16})*$/;

/**
 * A route's capture for a uid, "/" included (raw or as %2F). A uid never holds ":", so "<uid>:<verb>" is never
 * read as a uid: a custom method the API does not serve matches no route (404) instead of reaching create or get.
 */
export const uidCapture = '([^:]+)';

export function newRootUid(): string {
  return randomBytes(20).toString('hex');
}

export function newChildUid(parent: string): string {
  return `${parent}/${randomBytes(8).toString('hex')}`;
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
