// npm run migrate: brings the database to this server's schema version without starting the server, or says
// what that would change (--dry-run). A start does the same by itself; this is for upgrades an operator wants
// to review, and for a rollout where instances should not race to migrate.
import { ConfigError, databaseName, ensureDataDir, readConfig } from '../runtime/operate/config.js';
import { defaultGeneratedDir, loadDataParts } from '../runtime/operate/open-resources.js';
import { planMigration, type MigrationPlan } from '../runtime/storage/schema-versions.js';
import { describeRowSteps } from '../runtime/storage/stored-rows.js';
import { openStore } from '../runtime/storage/open-store.js';
import { parseCommandLine } from './cli-args.js';

const { values } = parseCommandLine({
  name: 'migrate',
  usage: `
usage: npm run migrate [-- --dry-run] [--generated DIR]
Brings the database (DATABASE_URL, or the SQLite file in DATA_DIR: ./data) to the schema version of this
server (spec/api.yaml schemaVersion) and records the change in its schema_migrations table. Nothing is
dropped: a field the spec removed keeps its column. A database a newer server version has migrated is refused.
Rows stored before a change of a field's type, name or required-ness are carried over as the spec declares
(existingRows, renamedFrom); a value that does not convert refuses the whole migration, naming its record.
  --dry-run        print the statements and row steps it would apply, and change nothing
  --generated DIR  the generated code whose schema to migrate to (default generated)`,
  options: { 'dry-run': { type: 'boolean' }, generated: { type: 'string' } },
});

function describe(plan: MigrationPlan): string {
  const from = plan.from === 0 ? 'no recorded version' : `version ${plan.from}`;
  return `${from} -> version ${plan.to}`;
}

/** The plan without changing anything: the ORM alone, the tables not yet compared. */
async function dryRun(): Promise<MigrationPlan> {
  const config = readConfig();
  const { entities, model } = await loadDataParts(values.generated ?? defaultGeneratedDir);
  const orm =
    config.database.engine === 'postgresql'
      ? await (await import('../runtime/storage/postgres-store.js')).openPostgresOrm(config.database.url, entities)
      : await (await import('../runtime/storage/sqlite-store.js')).openSqliteOrm(config.database.file, entities);
  try {
    return await planMigration(orm, { version: model.schemaVersion, resources: model.resources });
  } finally {
    await orm.close();
  }
}

try {
  const config = readConfig();
  ensureDataDir(config);
  const where = databaseName(config.database);
  const plan = await dryRun();
  const count = plan.statements.split(/;\s*$/m).filter((x) => x.trim()).length;
  if (plan.refused.length > 0) {
    // Refused as a start would refuse it: nothing changed, each reason on its own line.
    console.error(`migrate: ${where}: ${describe(plan)} is refused; nothing was changed:`);
    for (const reason of plan.refused) console.error(`  ${reason}`);
    process.exit(1);
  }
  const steps = describeRowSteps(plan.steps);
  if (values['dry-run']) {
    console.log(`${where}: ${describe(plan)}`);
    console.log(plan.statements === '' ? 'the tables match this server: nothing to apply' : plan.statements);
    for (const step of steps) console.log(step);
  } else if (plan.statements === '' && steps.length === 0 && plan.from === plan.to) {
    console.log(`${where}: already at version ${plan.to}; nothing to apply`);
  } else {
    const { entities, model } = await loadDataParts(values.generated ?? defaultGeneratedDir);
    // The store migrates as a start does: under PostgreSQL's advisory lock, so a starting instance waits.
    await (
      await openStore(config.database, entities, { version: model.schemaVersion, resources: model.resources })
    ).close();
    console.log(
      `${where}: ${describe(plan)}, ${count} statement(s) and ${steps.length} row step(s) applied and recorded in schema_migrations`,
    );
  }
} catch (e) {
  console.error(`migrate: ${e instanceof ConfigError ? e.message : e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
