import { callUnary, type PeerChannel } from '@halo/kit/grpc';
import { content as pb } from '@halo/proto';
import type { UserCheck } from '../../domain/members';

/**
 * Content's UserService as chat's check that member ids are users, over the kit's channel to
 * content (`peers` in service.ts): one `GetUsers` per check, with a deadline, chat's service token
 * and the request id; a read, so retried while content is unreachable, and content's circuit
 * breaker (the channel's policy) fails it fast while content is down.
 */
export function contentUsers(channel: PeerChannel): UserCheck & { close(): void } {
  const client = channel.client(pb.UserServiceClient);
  const read = channel.read;
  return {
    async existing(ids) {
      if (ids.length === 0) return [];
      // eslint-disable-next-line @typescript-eslint/unbound-method -- callUnary calls it on `client` and reads its gRPC path
      const { users } = await callUnary(client, client.getUsers, { ids: [...ids] }, read);
      return users.map((u) => u.id);
    },
    close: () => client.close(),
  };
}
