// The token a delivery carries (Authorization: Bearer), signed by our issuer, so a receiver needs our published
// keys alone. As the reference's: `sub` webhook:<the subscription's group>, and `webhook.digest` sha256:<hex of the
// body> (what chainguard.dev/sdk/events/receiver checks, with aud `customer`). Beyond the reference, so that a
// captured request cannot be replayed elsewhere or with other headers:
// - `aud` also holds the subscription's own audience, <issuer>/webhooks/<subscription uid>. Not the sink URL: two
//   subscriptions (of other tenants) may name one sink, and a receiver behind a proxy may not know the URL it was
//   reached by; the uid is unique, is in the create's answer, and under one prefix of ours, which the token
//   exchange can refuse to mint. `customer` stays for receivers written against the reference's SDK.
// - `webhook` also holds the CloudEvents attributes sent as Ce-* headers (id, type, source, subject, time, group):
//   a receiver compares each header with its claim.
import type { TokenIssuer } from '../access/issuer.js';
import { digestOf } from './cloud-event.js';

/** The reference's one audience of every webhook token. */
export const referenceWebhookAudience = 'customer';

/** Where every subscription's own audience starts: no other token of this issuer may carry one. */
export const webhookAudiencePrefix = (issuer: string) => `${issuer}/webhooks/`;

export const webhookAudience = (issuer: string, subscription: string) =>
  `${webhookAudiencePrefix(issuer)}${subscription}`;

/** The CloudEvents attributes a token binds, by their names; each travels as the header Ce-<name>. */
export const boundAttributes = ['id', 'type', 'source', 'subject', 'time', 'group'] as const;

/** A delivery's token: for this subscription (uid, group), binding these Ce-* headers and this body. */
export async function webhookToken(
  issuer: TokenIssuer,
  subscription: { uid: string; group: string },
  headers: Record<string, string>,
  data: Buffer,
): Promise<string> {
  const attributes = Object.fromEntries(
    boundAttributes.flatMap((name) => (headers[`ce-${name}`] === undefined ? [] : [[name, headers[`ce-${name}`]]])),
  );
  const { token } = await issuer.mint(
    `webhook:${subscription.group}`,
    300,
    [referenceWebhookAudience, webhookAudience(issuer.issuer, subscription.uid)],
    { webhook: { digest: digestOf(data), ...attributes } },
  );
  return token;
}
