import { sha256Hex } from './web-crypto.js';

/** One operation of Apollo's persisted query manifest. */
export interface ManifestOperation {
  /** The SHA-256 of `body` (what the SDK sends as the persisted-query hash). */
  id: string;
  /** The operation's name; '' when anonymous. */
  name: string;
  type: 'query' | 'mutation' | 'subscription';
  body: string;
}

/** Apollo's persisted query manifest: what `npm run operations -- push` registers for a client version. */
export interface PersistedQueryManifest {
  format: 'apollo-persisted-query-manifest';
  version: 1;
  operations: ManifestOperation[];
}

const OPERATION = /^\s*(?:#[^\n]*\n\s*)*(query|mutation|subscription)\b\s*([_A-Za-z][_0-9A-Za-z]*)?/;

/**
 * The manifest of an app's operations, byte for byte as the SDK sends them: each document is
 * hashed exactly as given (a registered operation is recognised by the SHA-256 of its text, so
 * whitespace matters). Pass the same strings (or `typed` documents) the app calls
 * `graphql.query` / `mutate` / `subscribe` with, one operation each; the name and type are read
 * from the document's first operation keyword (`{ … }` is an anonymous query).
 *
 * ```ts
 * writeFileSync('manifest.json', JSON.stringify(await persistedQueryManifest([PRODUCT, SEND_MESSAGE])));
 * // npm run operations -- push --client shop --version 1.4.0 manifest.json
 * ```
 */
export async function persistedQueryManifest(documents: readonly string[]): Promise<PersistedQueryManifest> {
  const seen = new Set<string>();
  const operations: ManifestOperation[] = [];
  for (const body of documents) {
    const id = await sha256Hex(body);
    if (seen.has(id)) continue;
    seen.add(id);
    const match = OPERATION.exec(body);
    operations.push({ id, name: match?.[2] ?? '', type: (match?.[1] as ManifestOperation['type'] | undefined) ?? 'query', body });
  }
  return { format: 'apollo-persisted-query-manifest', version: 1, operations };
}
