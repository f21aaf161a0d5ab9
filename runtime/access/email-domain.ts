// The email domain a caller is known by, for the calls gated on it (groups:lookupGroup, :checkEligibility,
// :requestGroupAccess). Only an email some trusted issuer verified counts: any identity's claimMatch may name any
// issuer, and an issuer of one's own could vouch for ceo@example.com.

export interface EmailDomainPolicy {
  /** issuers (iss) whose verified email claims are believed; none by default */
  trustedIssuers: string[];
  /** domains never gated on (free mail): anyone can hold an address there */
  blockedDomains: string[];
}

/** Domains of free mail services, refused unless BLOCKED_EMAIL_DOMAINS says otherwise. */
export const defaultBlockedDomains = [
  'aol.com',
  'gmail.com',
  'gmx.com',
  'googlemail.com',
  'hotmail.com',
  'icloud.com',
  'live.com',
  'mail.com',
  'me.com',
  'msn.com',
  'outlook.com',
  'proton.me',
  'protonmail.com',
  'yahoo.com',
  'yandex.com',
  'zoho.com',
];

/** What the token exchange recorded of an identity's email. */
export interface RecordedEmail {
  email?: string | null;
  emailIssuer?: string | null;
}

/** The recorded verified email, when the issuer that vouched for it is trusted. */
export function trustedEmail(identity: RecordedEmail | null, policy: EmailDomainPolicy): string | undefined {
  const email = identity?.email;
  if (!email || !identity.emailIssuer || !policy.trustedIssuers.includes(identity.emailIssuer)) return undefined;
  return email;
}

/** The lower-cased domain of the recorded verified email, when its issuer is trusted and the domain not blocked. */
export function trustedEmailDomain(identity: RecordedEmail | null, policy: EmailDomainPolicy): string | undefined {
  const email = trustedEmail(identity, policy);
  if (!email) return undefined;
  const at = email.lastIndexOf('@');
  const domain = email.slice(at + 1).toLowerCase();
  if (at < 1 || !/^[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(domain)) return undefined;
  return policy.blockedDomains.includes(domain) ? undefined : domain;
}

/** Two email addresses are one: the local part as written, the domain in any case. */
export function sameEmail(a: string, b: string): boolean {
  const split = (e: string) => {
    const at = e.lastIndexOf('@');
    return [e.slice(0, at), e.slice(at + 1).toLowerCase()];
  };
  const [localA, domainA] = split(a.trim());
  const [localB, domainB] = split(b.trim());
  return a.includes('@') && localA !== '' && localA === localB && domainA === domainB;
}

/**
 * The email claims of a verified upstream token, as the identity keeps them: always all three, so that a login
 * without a verified email (another person matching the identity's claimMatch, another issuer) takes away the
 * email an earlier login left.
 */
export function recordedEmail(claims: Record<string, unknown>, issuer: string): Record<string, string | null> {
  const email = typeof claims.email === 'string' && claims.email.length <= 320 ? claims.email : null;
  if (email !== null && claims.email_verified === true) return { email, emailUnverified: null, emailIssuer: issuer };
  return { email: null, emailUnverified: email, emailIssuer: null };
}
