import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildSubgraphSchema } from '@apollo/subgraph';
import type { Caller } from '@halo/kit';
import { parse, type GraphQLSchema } from 'graphql';
import type { Accounts } from '../domain/accounts';

export interface GraphQLContext {
  requestId: string;
  caller: Caller | null;
}

/** The subgraph SDL is a file of its own (services/auth/schema.graphql) that composition reads too. */
export const SCHEMA_PATH = resolve(__dirname, '../../schema.graphql');

export function authSchema(accounts: Accounts): GraphQLSchema {
  const typeDefs = parse(readFileSync(SCHEMA_PATH, 'utf8'));
  const resolvers = {
    Query: {
      // A reference only: the gateway fetches the User's other fields from content.
      me: (_: unknown, __: unknown, ctx: GraphQLContext) => ({ id: String(accounts.me(ctx.caller).id) }),
    },
  };
  // The resolver map is typed with our context; Apollo's type wants `unknown` (as in content).
  return buildSubgraphSchema({ typeDefs, resolvers: resolvers as never });
}
