// Composed by `npm run compose` from the services' declarations (REST `scope`, GraphQL `@requiresScopes`). Do not edit by hand.

/** Every scope an API key may be granted (`POST /auth/api-keys`), besides one client app's `operations:write:<client>`. */
export const API_KEY_SCOPES = ["profile:read","users:write","users:email:read","catalog:write","payments:read","payments:write","chat:read","chat:write","schema:read","schema:write","schema:write:auth","schema:write:catalog","schema:write:chat","schema:write:content","schema:write:payments","operations:write"] as const;
/** `operations:write` for one client app (its name as the registry records it: 1–64 of `A-Z a-z 0-9 . _ @ / -`). */
export type ClientOperationsScope = `operations:write:${string}`;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number] | ClientOperationsScope;

/**
 * The scope an API key needs for each authenticated operation (`METHOD /path`, `Type.field`).
 * An authenticated operation not listed here refuses every key (docs/api/scopes.md).
 */
export const OPERATION_SCOPES: Readonly<Record<string, ApiKeyScope>> = {
  "GET /profile": "profile:read",
  "POST /products": "catalog:write",
  "PUT /products/:id": "catalog:write",
  "DELETE /products/:id": "catalog:write",
  "POST /api/payments": "payments:write",
  "GET /api/payments/:id": "payments:read",
  "GET /api/orders": "payments:read",
  "POST /api/orders": "payments:write",
  "GET /api/orders/:id": "payments:read",
  "Query.me": "profile:read",
  "Mutation.createUser": "users:write",
  "Mutation.createProduct": "catalog:write",
  "Mutation.updateProduct": "catalog:write",
  "Mutation.deleteProduct": "catalog:write",
  "User.orders": "payments:read",
  "Query.order": "payments:read",
  "Query.payment": "payments:read",
  "Mutation.createPayment": "payments:write",
  "Mutation.createOrder": "payments:write",
  "Query.messages": "chat:read",
  "Query.chats": "chat:read",
  "Mutation.sendMessage": "chat:write",
  "Mutation.createChat": "chat:write",
  "Mutation.addChatMembers": "chat:write",
  "Mutation.removeChatMember": "chat:write",
  "Subscription.newMessage": "chat:read",
};
