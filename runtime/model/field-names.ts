// The two spellings of a field name: camelCase in the spec and JSON, snake_case on the gRPC wire.

/** updateTime -> update_time */
export const snakeCase = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** update_time -> updateTime (proto3's JSON name) */
export const lowerCamelCase = (name: string): string => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
