// AIP-193 errors: a gRPC code, a message and typed details, mapped to HTTP in one place.

/** A bad setting or data directory: the server or a CLI stops with its message, one line naming what to fix. */
export class ConfigError extends Error {}

export const Code = {
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;
export type CodeName = keyof typeof Code;

const httpStatus: Record<number, number> = {
  3: 400,
  4: 504,
  5: 404,
  6: 409,
  7: 403,
  8: 429,
  9: 400,
  10: 409,
  12: 501,
  13: 500,
  14: 503,
  16: 401,
};
const prefix: Partial<Record<CodeName, string>> = {
  INVALID_ARGUMENT: 'Invalid argument',
  FAILED_PRECONDITION: 'Precondition failed',
  NOT_FOUND: 'Not found',
};

export interface FieldViolation {
  field: string;
  description: string;
}
export interface PreconditionViolation {
  type: string;
  subject?: string;
  description: string;
}
export type Detail = Record<string, unknown> & { '@type': string };

const typeUrl = (t: string) => `type.googleapis.com/google.rpc.${t}`;

export class ApiError extends Error {
  /** An explicit HTTP status, only where the gRPC table has none (405 for a wrong method). */
  httpStatus?: number;
  constructor(
    readonly codeName: CodeName,
    message: string,
    readonly details: Detail[] = [],
  ) {
    super(message);
  }
  get code(): number {
    return Code[this.codeName];
  }
  status(): number {
    return this.httpStatus ?? httpStatus[this.code] ?? 500;
  }
  /** The whole seconds of its RetryInfo detail, for an HTTP Retry-After header. */
  retryAfterSeconds(): number | undefined {
    const info = this.details.find((d) => d['@type'] === typeUrl('RetryInfo'));
    const m = typeof info?.retryDelay === 'string' ? /^(\d+)(\.\d+)?s$/.exec(info.retryDelay) : null;
    return m ? Math.ceil(Number(m[1] + (m[2] ?? ''))) : undefined;
  }
  /** The response body; errorDomain is "<domain>.<service>.dev". */
  body(errorDomain: string): { code: number; message: string; details: Detail[] } {
    const info: Detail = { '@type': typeUrl('ErrorInfo'), reason: this.codeName, domain: errorDomain };
    return { code: this.code, message: this.message, details: [info, ...this.details] };
  }
}

export function invalidArgument(violations: FieldViolation[]): ApiError {
  const first = violations[0];
  const message =
    `${prefix.INVALID_ARGUMENT}: ${first.field}: ${first.description}` +
    (violations.length > 1 ? ` (and ${violations.length - 1} more)` : '');
  return new ApiError('INVALID_ARGUMENT', message, [{ '@type': typeUrl('BadRequest'), fieldViolations: violations }]);
}

export function notFound(resourceType: string, resourceName: string): ApiError {
  return new ApiError('NOT_FOUND', `${prefix.NOT_FOUND}: ${resourceType} ${resourceName}`, [
    {
      '@type': typeUrl('ResourceInfo'),
      resourceType,
      resourceName,
      description: `${resourceType} ${resourceName} does not exist`,
    },
  ]);
}

export function failedPrecondition(violations: PreconditionViolation[]): ApiError {
  return new ApiError(
    'FAILED_PRECONDITION',
    `${prefix.FAILED_PRECONDITION}: ${violations.map((v) => v.description).join('; ')}`,
    [{ '@type': typeUrl('PreconditionFailure'), violations }],
  );
}

export function unauthenticated(message: string): ApiError {
  return new ApiError('UNAUTHENTICATED', `Unauthenticated: ${message}`);
}

export function permissionDenied(message: string): ApiError {
  return new ApiError('PERMISSION_DENIED', `Permission denied: ${message}`);
}

/** A read that ran past its time, ended (AIP-193: DEADLINE_EXCEEDED, 504); the same read would again. */
export function deadlineExceeded(seconds: number): ApiError {
  return new ApiError(
    'DEADLINE_EXCEEDED',
    `Deadline exceeded: the read ran longer than ${seconds} s and was stopped; narrow it (fewer or more selective filters, a smaller skip)`,
  );
}

/** Too much waiting already (503, retryable): the caller is told when to try again. */
export function unavailable(message: string, retryAfterSeconds: number): ApiError {
  return new ApiError('UNAVAILABLE', `Unavailable: ${message}; retry after ${retryAfterSeconds} s`, [
    { '@type': typeUrl('RetryInfo'), retryDelay: `${retryAfterSeconds}s` },
  ]);
}

/** A transaction that lost to concurrent ones again and again (serialization failures, deadlocks): try it again. */
export function aborted(message: string, retryAfterSeconds = 1): ApiError {
  return new ApiError('ABORTED', `Aborted: ${message}; retry after ${retryAfterSeconds} s`, [
    { '@type': typeUrl('RetryInfo'), retryDelay: `${retryAfterSeconds}s` },
  ]);
}

export function internal(): ApiError {
  return new ApiError('INTERNAL', 'Internal error; the server log has the details');
}
