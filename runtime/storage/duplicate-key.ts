// A statement refused for a unique key another row already has, on either engine: PostgreSQL's unique_violation,
// SQLite's UNIQUE or PRIMARY KEY constraint.
export function isDuplicateKey(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
