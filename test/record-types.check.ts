// Type-level checks of the generated record types, compiled by `npm run typecheck` and never run. Each line
// marked to expect an error is a mistake a handler could make that the types must catch: if they stop catching
// it, the unused directive is itself an error and the typecheck fails.
import type { IamHandlers } from '../generated/routes.js';
import type { HandlerContext } from '../runtime/http/route-operations.js';
import type { Sql } from '../runtime/storage/sql.js';
import { equal, matching } from '../runtime/tables/condition.js';

export async function handlerShapedUses(context: HandlerContext, sql: Sql): Promise<string[]> {
  const [invite] = await context.resources
    .tableOf('groupInvites')
    .find(equal('keyId', 'k'), [{ property: 'uid', desc: false }], 1);
  // @ts-expect-error a condition names a property of the record
  await context.resources.tableOf('images').find(equal('digst', 'd'), [{ property: 'uid', desc: false }], 1);
  await context.write(async (writes) => {
    // @ts-expect-error matching takes the record's properties, with values of their types
    await writes.find('roleBindings', matching({ parentUid: 'p', identity: 'i' }), 1);
    // @ts-expect-error a JSON path starts at a property of the record
    return writes.find('identities', equal('claimMatsh.issuer', 'i'), 1);
  });
  // @ts-expect-error a field the record does not have
  const misspelt = invite.roleId;
  // @ts-expect-error singleUse is a boolean, or unset
  const singleUse: string = invite.singleUse;
  // @ts-expect-error no collection of that name
  context.resources.tableOf('groupInvite');
  const bindings = context.resources.tableOf('roleBindings');
  const withoutRole = { uid: 'u', parentUid: 'p', identityUid: 'i', createTime: 't', updateTime: 't' };
  // @ts-expect-error a new record needs every required field: this role binding has no roleUid
  await bindings.insert(sql, withoutRole);
  // @ts-expect-error an int64 is stored as its exact decimal text, not a number
  await context.resources.tableOf('images').update(sql, 'u', { sizes: { amd64: 1 } });
  // @ts-expect-error an enum field takes only its declared values
  await context.resources.tableOf('artifacts').update(sql, 'u', { ecosystem: 'ECOSYSTEM_COBOL' });
  await context.write(async (writes) => {
    // @ts-expect-error writes name a collection that exists
    await writes.delete('roleBinding', 'u');
    // @ts-expect-error a write's record is the collection's record type
    await writes.insert('termsAcceptances', { uid: 'u', parentUid: 'p', createTime: 't', updateTime: 't' });
    const [binding] = await writes.find('roleBindings', equal('identityUid', 'i'), 1);
    return binding?.roleUid;
  });
  const acceptance = await context.resources.readsOf('termsAcceptances').get('u');
  // @ts-expect-error an answer has the fields of the collection's resource type only
  const unknownField = acceptance.nope;
  // @ts-expect-error reads name a collection that exists
  await context.resources.readsOf('termsAcceptance').get('u');
  // What is right compiles without a cast: required fields are set, optional ones may be unset (null once stored).
  const roleUid: string = invite.roleUid;
  const expires: string | null | undefined = invite.expirationTime;
  return [roleUid, expires ?? '', String(misspelt), singleUse, acceptance.docId, String(unknownField)];
}

// Create steps and presenters implement the generated interface with the record and resource types.
export const wrongSteps: Pick<IamHandlers, 'issueGroupInvite' | 'hydrateRoleBindings'> = {
  // @ts-expect-error a create step returns the whole record it completes
  async issueGroupInvite(record) {
    return { record: { uid: record.uid } };
  },
  async hydrateRoleBindings(bindings) {
    // @ts-expect-error a presenter receives resources, and responses show no parentUid
    return bindings.map((b) => ({ group: b.parentUid }));
  },
};
