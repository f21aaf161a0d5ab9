// An OIDC issuer on loopback that signs upstream tokens, as a CI system or a cloud's identity service does: the
// token the reference's clients hand to the exchange.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

export interface UpstreamIssuer {
  url: string;
  /** A token of this issuer for `sub`, audience `aud`, valid five minutes. */
  sign(sub: string, aud: string): Promise<string>;
  stop(): Promise<void>;
}

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
    sign: (sub, aud) => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: 'upstream-1' })
        .setIssuer(url)
        .setSubject(sub)
        .setAudience(aud)
        .setIssuedAt(now - 120)
        .setExpirationTime(now + 300)
        .sign(privateKey);
    },
    stop: () => new Promise((r) => server.close(() => r())),
  };
}
