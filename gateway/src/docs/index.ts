/** The API's own documents: `/`, `/openapi.json`, `/docs`, GraphiQL, and the migration guides. */
export { acceptOpenApi, createDocs, DOCS_PATH, OPENAPI_PATH, type Docs, type DocsOptions, type OpenApiBody } from './documents';
export { DEFAULT_GUIDES_DIR, GUIDES_PATH, migrationGuides, type MigrationGuides } from './migration-guides';
