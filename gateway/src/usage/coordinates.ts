import { createHash } from 'node:crypto';
import { usageReportingSignature } from '@apollo/utils.usagereporting';
import type { DocumentNode, GraphQLSchema, OperationDefinitionNode } from 'graphql';
import { coordinatesOf } from '@halo/contracts/coordinates';

/** What the registry learns about one operation (docs/registry.md `POST /v1/usage`). */
export interface OperationUsage {
  /** sha256 (hex) of the signature. */
  hash: string;
  /** The operation's own name; '' when anonymous. */
  name: string;
  /**
   * The signature: the operation and the fragments it uses, literals hidden, aliases removed,
   * sorted, whitespace reduced (Apollo's usage-reporting signature), so the same operation with
   * other literal values or another layout is one operation, and no literal (a search term, an
   * id) ever leaves the gateway.
   */
  body: string;
  /** `Type.field`, `Type.field.arg`, `Input.field`, `Enum.VALUE` and `Type`, sorted. */
  coordinates: string[];
}

export { coordinatesOf, enumValuesOf, enumVariablesOf, type EnumVariable } from '@halo/contracts/coordinates';

/** What the registry takes per report (docs/registry.md `POST /v1/usage`): longer is cut. */
const MAX_NAME = 200;
const MAX_BODY = 100_000;
export const MAX_COORDINATES = 5_000;
const MAX_COORDINATE = 300;

/** One operation's usage record: its signature, hash and coordinates, within the registry's bounds. */
export function operationUsage(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): OperationUsage {
  const name = operation.name?.value ?? '';
  // The signature keeps only the named operation (the document may hold several).
  const body = usageReportingSignature(document, name);
  return {
    // Of the whole signature: a body cut to the bound still has its own hash.
    hash: createHash('sha256').update(body).digest('hex'),
    name: name.slice(0, MAX_NAME),
    body: body.slice(0, MAX_BODY),
    coordinates: coordinatesOf(schema, document, operation)
      .filter((c) => c.length <= MAX_COORDINATE)
      .slice(0, MAX_COORDINATES),
  };
}
