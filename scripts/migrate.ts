// npm run migrate: brings the database to this server's schema version without starting the server, or says
// what that would change (--dry-run). A start does the same by itself; this is for upgrades an operator wants
// to review, and for a rollout where instances should not race to migrate.
import { ConfigError, databaseName, ensureDataDir, readConfig } from '../runtime/config.js';
import { loadDataParts } from '../runtime/open-resources.js';
import { planMigration, type MigrationPlan } from '../runtime/schema-versions.js';
import { openStore } from '../runtime/store.js';
import { parseCommandLine } from './cli-args.js';

const { values } = parseCommandLine({
  name: 'migrate',
  usage: `
usage: npm run migrate [-- --dry-run]
Brings the database (DATABASE_URL, or the SQLite file in DATA_DIR: ./data) to the schema version of this
server (spec/api.yaml schemaVersion) and records the change in its schema_migrations table. Nothing is
dropped: a field the spec removed keeps its column. A database a newer server version has migrated is refused.
  --dry-run  print the statements it would apply, and change nothing`,
  options: { 'dry-run': { type: 'boolean' } },
});

function describe(plan: MigrationPlan): string {
  const from = plan.from === 0 ? 'no recorded version' : `version ${plan.from}`;
  return `${from} -> version ${plan.to}`;
}

/** The plan without changing anything: the ORM alone, the tables not yet compared. */
async function dryRun(): Promise<MigrationPlan> {
  const config = readConfig();
  const { entities, model } = await loadDataParts();
  const orm =
    config.database.engine === 'postgresql'
      ? await (await import('../runtime/postgres-store.js')).openPostgresOrm(config.database.url, entities)
      : await (await import('../runtime/sqlite-store.js')).openSqliteOrm(config.database.file, entities);
  try {
    return await planMigration(orm, model.schemaVersion);
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
  if (values['dry-run']) {
    console.log(`${where}: ${describe(plan)}`);
    console.log(plan.statements === '' ? 'the tables match this server: nothing to apply' : plan.statements);
  } else if (plan.statements === '' && plan.from === plan.to) {
    console.log(`${where}: already at version ${plan.to}; nothing to apply`);
  } else {
    const { entities, model } = await loadDataParts();
    // The store migrates as a start does: under PostgreSQL's advisory lock, so a starting instance waits.
    await (await openStore(config.database, entities, model.schemaVersion)).close();
    console.log(`${where}: ${describe(plan)}, ${count} statement(s) applied and recorded in schema_migrations`);
  }
} catch (e) {
  console.error(`migrate: ${e instanceof ConfigError ? e.message : e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
