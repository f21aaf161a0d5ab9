// What a PostgreSQL error means to a caller. A transaction that lost to a concurrent one (a serialization
// failure, a deadlock) is run again; a duplicate natural key is ALREADY_EXISTS; a database that went away, or a
// connection lost mid-call, is UNAVAILABLE with a RetryInfo, never INTERNAL: the pool connects again on the next
// call once the database is back.
import { ApiError, unavailable } from '../model/errors.js';
import { isDuplicateKey } from './duplicate-key.js';

interface PgError {
  code?: string;
  message?: string;
  table?: string;
}

/** serialization_failure, deadlock_detected: the transaction is run again from the start. */
const lostRace = new Set(['40001', '40P01']);

export function isLostRace(e: unknown): boolean {
  return !(e instanceof ApiError) && lostRace.has((e as PgError)?.code ?? '');
}

/** Node's socket errors, and the messages of pg's own when a connection ends under a query. */
const socketCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EAI_AGAIN',
]);
// "after calling end": a call still running while the server shuts down, after its pool was ended (its caller is
// gone or about to be: another instance answers the retry).
const lostConnection =
  /Connection terminated|connection error|not queryable|timeout exceeded when trying to connect|Connection ended|pool after calling end/i;

/**
 * Whether the error says the database cannot be reached or the connection was lost: SQLSTATE class 08
 * (connection exception), 57P01-57P03 (shut down, crash, starting up), 53300 (too many connections).
 */
export function isOutage(e: unknown): boolean {
  if (e instanceof ApiError || typeof e !== 'object' || e === null) return false;
  const { code = '', message = '' } = e as PgError;
  if (typeof code !== 'string') return false;
  return (
    socketCodes.has(code) ||
    code.startsWith('08') ||
    /^57P0[123]$/.test(code) ||
    code === '53300' ||
    (code === '' && lostConnection.test(message))
  );
}

/** The error a caller gets for this one: an ApiError where the database's fault says what happened, else as it was. */
export function faultOf(e: unknown): unknown {
  if (e instanceof ApiError) return e;
  if (isOutage(e)) return unavailable('the database cannot be reached', 1);
  if (isDuplicateKey(e)) return new ApiError('ALREADY_EXISTS', 'Already exists: a record with the same key');
  return e;
}
