import type { User } from '@halo/kit/domain';
import { isHaloError } from '@halo/kit/errors';
import { callUnary, type PeerChannel } from '@halo/kit/grpc';
import { content as pb } from '@halo/proto';
import type { UserDirectory } from '../../domain/accounts';

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

/**
 * Content's UserService as auth's user directory, over the kit's channel to content (`peers` in
 * service.ts): every call has a deadline and auth's service token, and the kit sends the id of the
 * request being served (request context) as metadata. Lookups are reads (retried when content is
 * unreachable); creating and deleting a user are not. content's circuit breaker (the channel's
 * policy) makes auth fail fast while content is down.
 */
export function contentUsers(channel: PeerChannel): UserDirectory & { close(): void } {
  const client = channel.client(pb.UserServiceClient);
  const { read, write: opts } = channel;
  /* eslint-disable @typescript-eslint/unbound-method -- callUnary calls `client.method` on `client`
     (method.call) and reads its gRPC path for metrics: it is meant to go unbound. */
  return {
    async byId(id) {
      return fromPb((await callUnary(client, client.getUser, { id }, read)).user);
    },
    async byEmail(email, deadline) {
      try {
        return fromPb(
          (await callUnary(client, client.getUserByEmail, { email }, deadline ? { ...read, deadlineMs: deadline } : read)).user,
        );
      } catch (err) {
        if (isHaloError(err) && err.kind === 'NOT_FOUND') return null;
        throw err;
      }
    },
    async create(input) {
      return fromPb((await callUnary(client, client.createUser, { name: input.name, email: input.email, avatar: '' }, opts)).user);
    },
    async delete(id) {
      await callUnary(client, client.deleteUser, { id }, opts);
    },
    close: () => client.close(),
  };
  /* eslint-enable @typescript-eslint/unbound-method */
}
