// A webhook receiver that trusts only what the issuer's published keys verify (docs/events.md, "Deliveries"):
// node samples/webhook-receiver.mjs ISSUER_URL SUBSCRIPTION_UID [PORT]. A delivery is accepted only when its token
// is for this subscription (aud <issuer>/webhooks/<uid>), from its group (sub webhook:<the uid's group>), for this
// body (webhook.digest) and these Ce-* headers (webhook.id, type, ...): a request captured elsewhere, or replayed
// with other headers, is refused. Prints one line per verified event and one per refusal.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';

const [issuer, subscription, port = '0'] = process.argv.slice(2);
if (!issuer || !subscription) {
  console.error('usage: node samples/webhook-receiver.mjs ISSUER_URL SUBSCRIPTION_UID [PORT]');
  process.exit(2);
}
const group = subscription.split('/').slice(0, -1).join('/');
const keys = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`));
const bound = ['id', 'type', 'source', 'subject', 'time', 'group'];

async function verify(headers, body) {
  const token = (headers.authorization ?? '').replace(/^Bearer /, '');
  const audience = `${issuer}/webhooks/${subscription}`;
  const { payload } = await jwtVerify(token, keys, { issuer, audience, algorithms: ['ES256'] });
  if (payload.sub !== `webhook:${group}`) throw new Error(`sub ${payload.sub} is not webhook:${group}`);
  const claims = payload.webhook ?? {};
  if (claims.digest !== `sha256:${createHash('sha256').update(body).digest('hex')}`)
    throw new Error('the body is not the one signed');
  for (const name of bound)
    if (claims[name] !== headers[`ce-${name}`]) throw new Error(`ce-${name} is not the one signed`);
}

const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  try {
    await verify(req.headers, Buffer.concat(chunks));
    console.log(`${req.headers['ce-type']} ${req.headers['ce-subject']} from webhook:${group}`);
    res.writeHead(200).end();
  } catch (e) {
    console.log(`refused: ${e.message}`);
    res.writeHead(403).end();
  }
});
server.listen(Number(port), '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}/`));
