// What the two Fastify baselines (bench/strong-baseline.ts on SQLite, bench/pg-peer.ts on PostgreSQL) share:
// a Fastify app checking our issuer's tokens as ours does (ES256, issuer and audience, each verified token kept
// until its exp), and the schemas their repo answers are compiled from.
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { jwtVerify } from 'jose';

declare module 'fastify' {
  interface FastifyRequest {
    /** the verified token's subject: an event names its actor */
    caller: string;
  }
}

export const prefix = '/registry/v2/repos';
export type ListQuery = { 'uidp.descendants_of'?: string; page_size?: string; page_token?: string; skip?: string };
export type Named = { Params: { '*': string } };
export const notFound = { code: 5, message: 'not found', details: [] };
const unauthenticated = { code: 16, message: 'unauthenticated', details: [] };

const strings = { type: 'array', items: { type: 'string' } } as const;
export const repoSchema = {
  type: 'object',
  properties: {
    uid: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    aliases: strings,
    activeTags: strings,
    bundles: strings,
    catalogTier: { type: 'string' },
    sync_config: {
      type: 'object',
      properties: {
        source: { type: 'string' },
        google: { type: 'string' },
        amazon: { type: 'string' },
        azure: { type: 'string' },
        apkoOverlay: { type: 'string' },
        uniqueTags: { type: 'boolean' },
        gracePeriod: { type: 'boolean' },
        expirationTime: { type: 'string' },
      },
    },
    createTime: { type: 'string' },
    updateTime: { type: 'string' },
  },
} as const;
export const listSchema = {
  type: 'object',
  properties: {
    repos: { type: 'array', items: repoSchema },
    nextPageToken: { type: 'string' },
    totalCount: { type: 'string' },
    skipped: { type: 'integer' },
  },
} as const;

/** A Fastify app that refuses requests without a token of issuer signed by one of keys (401), as ours does. */
export function repoApp(keys: Parameters<typeof jwtVerify>[1], issuer: string): FastifyInstance {
  const verified = new Map<string, { expiresMs: number; subject: string }>();
  const maxVerified = 10_000;
  function authenticate(req: FastifyRequest, reply: FastifyReply, done: () => void): void {
    const header = req.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? header.slice(7) : '';
    const known = verified.get(token);
    if (known !== undefined && known.expiresMs > Date.now()) {
      req.caller = known.subject;
      return done();
    }
    jwtVerify(token, keys, { issuer, audience: issuer, algorithms: ['ES256'] }).then(
      ({ payload }) => {
        if (verified.size >= maxVerified) verified.delete(verified.keys().next().value!);
        verified.set(token, { expiresMs: payload.exp! * 1000, subject: payload.sub! });
        req.caller = payload.sub!;
        done();
      },
      () => reply.code(401).send(unauthenticated),
    );
  }
  const app = Fastify({ logger: false });
  app.decorateRequest('caller', '');
  app.addHook('onRequest', authenticate);
  return app;
}
