// A webhook receiver that trusts only what the issuer's published keys verify (README, "Events"):
// node samples/webhook-receiver.mjs ISSUER_URL [PORT]. Prints one line per verified event; refuses the rest.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';

const [issuer, port = '0'] = process.argv.slice(2);
const keys = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`));
const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const body = Buffer.concat(chunks);
  try {
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    const { payload } = await jwtVerify(token, keys, { issuer, audience: 'customer' });
    if (payload.webhook?.digest !== `sha256:${createHash('sha256').update(body).digest('hex')}`) throw new Error();
    console.log(`${req.headers['ce-type']} ${req.headers['ce-subject']} from ${payload.sub}`);
    res.writeHead(200).end();
  } catch {
    res.writeHead(403).end();
  }
});
server.listen(Number(port), '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}/`));
