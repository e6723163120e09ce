import {
  type DatabaseIntrospector,
  type DatabaseMetadata,
  type DatabaseMetadataOptions,
  type Kysely,
  PostgresDialect,
  PostgresIntrospector,
  type SchemaMetadata,
  sql,
  type TableMetadata,
} from 'kysely'

/**
 * PostgreSQL as Kysely speaks it, except that introspection sees only the connection's own schema
 * (`current_schema()`, which `search_path` sets). Kysely's migrator introspects to find its own
 * two tables, and Kysely's introspector reads every schema of the database, checking each one's
 * privileges by name (`has_schema_privilege(nspname, …)`): a schema that another process drops
 * during that read (test runs share one database, each in a schema it drops at the end) fails the
 * migration with 3F000. Reading only Wharf's schema never names another one.
 */
export class OwnSchemaPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new OwnSchemaIntrospector(db)
  }
}

interface ColumnRow {
  column: string
  not_null: boolean
  has_default: boolean
  table: string
  table_type: string
  schema: string
  type: string
  type_schema: string
  column_description: string | null
  auto_incrementing: string | null
}

const KYSELY_TABLES = new Set(['kysely_migration', 'kysely_migration_lock'])

class OwnSchemaIntrospector implements DatabaseIntrospector {
  constructor(private readonly db: Kysely<any>) {}

  /** Every schema's name: pg_namespace alone, no function of a schema's name. */
  getSchemas(): Promise<SchemaMetadata[]> {
    return new PostgresIntrospector(this.db).getSchemas()
  }

  /** The tables and views of the current schema, with their columns, as Kysely describes them. */
  async getTables(
    options: DatabaseMetadataOptions = { withInternalKyselyTables: false },
  ): Promise<TableMetadata[]> {
    const { rows } = await sql<ColumnRow>`
      select a.attname as "column", a.attnotnull as not_null, a.atthasdef as has_default,
        c.relname as "table", c.relkind as table_type, ns.nspname as "schema",
        typ.typname as "type", dtns.nspname as type_schema,
        col_description(a.attrelid, a.attnum) as column_description,
        pg_get_serial_sequence(quote_ident(ns.nspname) || '.' || quote_ident(c.relname), a.attname)
          as auto_incrementing
      from pg_catalog.pg_attribute a
        join pg_catalog.pg_class c on a.attrelid = c.oid
        join pg_catalog.pg_namespace ns on c.relnamespace = ns.oid
        join pg_catalog.pg_type typ on a.atttypid = typ.oid
        join pg_catalog.pg_namespace dtns on typ.typnamespace = dtns.oid
      where ns.nspname = current_schema() and c.relkind in ('r', 'v', 'p')
        and a.attnum >= 0 and not a.attisdropped
      order by c.relname, a.attnum`.execute(this.db)
    const tables = new Map<string, TableMetadata & { columns: TableMetadata['columns'][number][] }>()
    for (const r of rows) {
      if (!options.withInternalKyselyTables && KYSELY_TABLES.has(r.table)) continue
      let table = tables.get(r.table)
      if (!table) {
        table = { name: r.table, schema: r.schema, isView: r.table_type === 'v', columns: [] }
        tables.set(r.table, table)
      }
      table.columns.push({
        name: r.column,
        dataType: r.type,
        dataTypeSchema: r.type_schema,
        isNullable: !r.not_null,
        hasDefaultValue: r.has_default,
        isAutoIncrementing: r.auto_incrementing !== null,
        ...(r.column_description === null ? {} : { comment: r.column_description }),
      })
    }
    return [...tables.values()]
  }

  async getMetadata(options?: DatabaseMetadataOptions): Promise<DatabaseMetadata> {
    return { tables: await this.getTables(options) }
  }
}
