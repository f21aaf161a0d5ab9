// An OIDC issuer on loopback that signs upstream tokens, as a CI system or a cloud's identity service does: the
// token the reference's clients hand to the exchange.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';

export interface UpstreamIssuer {
  url: string;
  /**
   * A token of this issuer for `sub` and `aud`, valid five minutes; `exp: null` leaves exp out, `iss` forges
   * another issuer, other claims are added as given.
   */
  sign(claims: UpstreamClaims): Promise<string>;
  stop(): Promise<void>;
}

export type UpstreamClaims = { sub: string; aud: string; exp?: number | null; iss?: string } & Omit<JWTPayload, 'exp'>;

export async function startUpstreamIssuer(): Promise<UpstreamIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'upstream-1', alg: 'ES256', use: 'sig' };
  let url = '';
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/.well-known/openid-configuration')
      res.end(JSON.stringify({ issuer: url, jwks_uri: `${url}/keys` }));
    else if (req.url === '/keys') res.end(JSON.stringify({ keys: [jwk] }));
    else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    sign: ({ sub, aud, exp, iss = url, ...claims }) => {
      const now = Math.floor(Date.now() / 1000);
      const jwt = new SignJWT(claims)
        .setProtectedHeader({ alg: 'ES256', kid: 'upstream-1' })
        .setIssuer(iss)
        .setSubject(sub)
        .setAudience(aud)
        .setIssuedAt(now - 120);
      if (exp !== null) jwt.setExpirationTime(exp ?? now + 300);
      return jwt.sign(privateKey);
    },
    stop: () => new Promise((r) => server.close(() => r())),
  };
}
