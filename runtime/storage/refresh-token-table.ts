// The table of refresh tokens (runtime/access/refresh-tokens.ts), beside the other tables the runtime keeps for
// itself (the outbox, scope counts): the store creates it with the resources' tables.
import { EntitySchema } from '@mikro-orm/core';

export interface RefreshTokenRecord {
  /** the SHA-256 (hex) of the token: the token itself is never stored */
  uid: string;
  /** every rotation of one exchange's token shares it */
  family: string;
  identityUid: string;
  /** the digest of the identity's claimMatch when the family was issued */
  claimMatch: string;
  /** the audience the family's tokens are minted for; null: ours */
  audience: string | null;
  /** when the family ends */
  expireTime: string;
  /** set when the token was exchanged: presenting it again kills the family */
  usedTime: string | null;
  createTime: string;
}

export const refreshTokenEntity = new EntitySchema<RefreshTokenRecord>({
  name: 'RefreshToken',
  tableName: 'refresh_tokens',
  properties: {
    uid: { type: 'text', primary: true },
    family: { type: 'text', index: true },
    identityUid: { type: 'text', index: true },
    claimMatch: { type: 'text' },
    audience: { type: 'text', nullable: true },
    expireTime: { type: 'text', index: true },
    usedTime: { type: 'text', nullable: true },
    createTime: { type: 'text' },
  },
});
