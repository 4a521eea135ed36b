import type { Kysely } from 'kysely';

/**
 * What has been metered of each workspace's sandbox, shared by every replica so none bills the
 * same work twice: the last CPU reading billed (of which sandbox instance, and when that instance
 * started) and the sampling intervals of memory and disk already billed (the interval's start,
 * epoch ms). Every update is a compare-and-swap on these columns.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('workspaces').addColumn('meter_instance', 'text').execute();
  for (const column of ['meter_started_at', 'meter_cpu_micros', 'meter_memory_sampled_at', 'meter_disk_sampled_at']) {
    await db.schema
      .alterTable('workspaces')
      .addColumn(column, 'bigint', (definition) => definition.notNull().defaultTo(0))
      .execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const column of [
    'meter_disk_sampled_at',
    'meter_memory_sampled_at',
    'meter_cpu_micros',
    'meter_started_at',
    'meter_instance',
  ]) {
    await db.schema.alterTable('workspaces').dropColumn(column).execute();
  }
}
