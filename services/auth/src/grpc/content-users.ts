import { callUnary, clientChannelOptions, grpc, isHaloError } from '@halo/kit';
import { content as pb } from '@halo/proto';
import type { UserDirectory } from '../domain/accounts';
import type { User } from '../domain/rules';

const fromPb = (u: pb.User | undefined): User => {
  if (!u) throw new Error('content answered without a user');
  return {
    id: u.id,
    name: u.name,
    email: u.email,
    avatar: u.avatar || null,
    role: u.role === 'admin' ? 'admin' : 'user',
    createdAt: u.createdAt,
  };
};

/** Content's UserService as auth's user directory: every call has a deadline and the request id. */
export function contentUsers(address: string, deadlineMs: number): UserDirectory & { close(): void } {
  const client = new pb.UserServiceClient(address, grpc.credentials.createInsecure(), clientChannelOptions);
  const opts = (requestId: string, deadline?: number) => ({
    requestId,
    defaultDeadlineMs: deadlineMs,
    ...(deadline ? { deadlineMs: deadline } : {}),
  });
  return {
    async byId(id, requestId) {
      return fromPb((await callUnary(client, client.getUser, { id }, opts(requestId))).user);
    },
    async byEmail(email, requestId, deadline) {
      try {
        return fromPb((await callUnary(client, client.getUserByEmail, { email }, opts(requestId, deadline))).user);
      } catch (err) {
        if (isHaloError(err) && err.kind === 'NOT_FOUND') return null;
        throw err;
      }
    },
    async create(input, requestId) {
      const res = await callUnary(client, client.createUser, { name: input.name, email: input.email, avatar: '' }, opts(requestId));
      return fromPb(res.user);
    },
    async delete(id, requestId) {
      await callUnary(client, client.deleteUser, { id }, opts(requestId));
    },
    close: () => client.close(),
  };
}
