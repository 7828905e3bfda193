import type { GrpcAccess } from '@halo/kit/auth';
import { parseId, type User } from '@halo/kit/domain';
import { unary, type GrpcServiceBinding } from '@halo/kit/grpc';
import type { Logger } from '@halo/kit/logging';
import { content as pb } from '@halo/proto';
import type { Content } from '../../domain/content';

const toPb = (u: User): pb.User => ({
  id: u.id,
  name: u.name,
  email: u.email,
  avatar: u.avatar ?? '',
  role: u.role,
  createdAt: u.createdAt,
});

/**
 * Who may call which method (docs/service-identity.md); kit topology's GRPC_CALLS agrees (tested).
 * auth, which keeps credentials for content's users: sign-up, login by email, deletion; chat looks
 * users up by id (the members of a private chat must be users).
 */
export const USER_SERVICE_ACCESS = {
  GetUser: ['auth'],
  GetUsers: ['auth', 'chat'],
  GetUserByEmail: ['auth'],
  CreateUser: ['auth'],
  DeleteUser: ['auth'],
} as const satisfies GrpcAccess;

/** `halo.content.v1.UserService`: user lookups (and auth's sign-ups) for other services, over the same use cases. */
export function userServiceBinding(content: Content, logger: Logger): GrpcServiceBinding {
  const implementation: pb.UserServiceServer = {
    getUser: unary(logger, async (req: pb.GetUserRequest) => ({ user: toPb(await content.user(parseId(req.id))) })),
    getUsers: unary(logger, async (req: pb.GetUsersRequest) => ({
      users: (await content.usersByIds(req.ids.map((id) => parseId(id)))).map(toPb),
    })),
    getUserByEmail: unary(logger, async (req: pb.GetUserByEmailRequest) => ({
      user: toPb(await content.userByEmail(req.email)),
    })),
    createUser: unary(logger, async (req: pb.CreateUserRequest) => ({
      user: toPb(await content.registerUser({ name: req.name, email: req.email, avatar: req.avatar })),
    })),
    deleteUser: unary(logger, async (req: pb.DeleteUserRequest) => {
      await content.deleteUser(parseId(req.id));
      return {};
    }),
  };
  return { name: 'halo.content.v1.UserService', definition: pb.UserServiceService, implementation, access: USER_SERVICE_ACCESS };
}
