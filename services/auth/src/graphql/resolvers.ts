import { buildSubgraphSchema } from '@apollo/subgraph';
import type { Caller } from '@halo/kit/auth';
import type { DocumentNode, GraphQLSchema } from 'graphql';
import type { Accounts } from '../domain/accounts';

export interface GraphQLContext {
  requestId: string;
  caller: Caller | null;
}

export function authSchema(typeDefs: DocumentNode, accounts: Accounts): GraphQLSchema {
  const resolvers = {
    Query: {
      // A reference only: the gateway fetches the User's other fields from content.
      me: (_: unknown, __: unknown, ctx: GraphQLContext) => ({ id: String(accounts.me(ctx.caller).id) }),
    },
  };
  // The resolver map is typed with our context; Apollo's type wants its own (hence the cast).
  return buildSubgraphSchema({ typeDefs, resolvers: resolvers as never });
}
