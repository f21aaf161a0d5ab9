// The token of an Authorization header (HTTP) or metadata (gRPC): "Bearer <token>", the scheme in any case, one
// or more spaces before the token and any after it, no whitespace inside it.

const bearer = /^Bearer +([^\s]+) *$/i;

/** The whitespace `\s` matches that a header value can hold at all (Latin-1). */
const whitespace = [' ', '\t', '\n', '\v', '\f', '\r', '\xa0'];

/** The token of a "Bearer <token>" credential; undefined when it is not one. */
export function bearerToken(credential: string): string | undefined {
  // The form every client sends ("Bearer ", then the token) read with a few searches for a character, where the
  // pattern tests each of the token's characters (600 of them) as it goes: a third of a microsecond a request.
  if (credential.length > 7 && credential.startsWith('Bearer ') && !whitespace.some((w) => credential.includes(w, 7)))
    return credential.slice(7);
  return bearer.exec(credential)?.[1];
}
