// The token service over gRPC (SecurityTokenService, in the package api.yaml names: chainguard.platform.oidc, as
// the reference's SDK calls it): Exchange is POST /sts/exchange, with the other issuer's token as the bearer
// metadata; ExchangeRefreshToken is POST /sts/exchange_refresh_token, with the refresh token as the bearer
// metadata. It translates only: every check of the exchange is the one function both transports call.
import { invalidArgument } from '../model/errors.js';
import type { Row } from '../model/records.js';
import type { RpcMethod } from './operations.js';

/** What the exchange takes from either transport. */
export interface ExchangeRequest {
  /** the uid of the identity to assume */
  identity: string;
  /** the audiences asked for (none: ours) */
  aud: string[];
}
/** What ExchangeRefreshToken takes from either transport. */
export interface RefreshRequest {
  /** the audiences asked for (none: the family's) */
  aud: string[];
}
export interface RawToken {
  token: string;
  expiry: string;
  refreshToken?: string;
}
/** ExchangeRefreshToken's answer: the new token, and the family's next refresh token. */
export interface TokenPair {
  token: RawToken;
  refreshToken: RawToken;
}
/** The token service's two calls, each one function for both transports (framework/handlers/sts.ts). */
export interface TokenCalls {
  exchange(upstreamToken: string, request: ExchangeRequest): Promise<RawToken>;
  refresh(refreshToken: string, request: RefreshRequest): Promise<TokenPair>;
}

/** The reference's fields the exchange and refresh do not serve: refused when set, as HTTP refuses the parameters. */
const notServed = ['cap', 'scope', 'scopes', 'identity_provider'];

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.map(String) : []);

function refuseNotServed(request: Row): void {
  const set = notServed.filter((f) => {
    const v = request[f === 'identity_provider' ? 'identityProvider' : f];
    return Array.isArray(v) ? v.length > 0 : !!v;
  });
  if (set.length)
    throw invalidArgument(
      set.map((field) => ({
        field,
        description: `${field} is not served: tokens of this server carry the identity's own grants`,
      })),
    );
}

export function tokenServiceRpcs(pkg: string, calls: TokenCalls): Record<string, RpcMethod> {
  const path = (rpc: string) => `/${pkg}.SecurityTokenService/${rpc}`;
  const route = (rpc: string, request: string, response: string) => ({
    path: path(rpc),
    request: `${pkg}.${request}`,
    response: `${pkg}.${response}`,
    fields: {},
  });
  return {
    [path('Exchange')]: {
      route: route('Exchange', 'ExchangeRequest', 'RawToken'),
      domain: 'api',
      readsBearer: true,
      run: async (request: Row, _principal, bearer) => {
        refuseNotServed(request);
        return {
          ...(await calls.exchange(bearer!, { identity: String(request.identity ?? ''), aud: strings(request.aud) })),
        };
      },
    },
    [path('ExchangeRefreshToken')]: {
      route: route('ExchangeRefreshToken', 'ExchangeRefreshTokenRequest', 'TokenPair'),
      domain: 'api',
      readsBearer: true,
      run: async (request: Row, _principal, bearer) => {
        refuseNotServed(request);
        return { ...(await calls.refresh(bearer!, { aud: strings(request.aud) })) };
      },
    },
  };
}
