import { z } from '@halo/kit/config';
import { defineRestManifest, pathId, ruleField } from '@halo/kit/rest';
import { greeting } from '../domain/rules';

/**
 * content's public REST routes (gateway route table and OpenAPI are composed from this file by
 * `npm run compose`): the demonstration routes, and users' posts with their comments.
 */

const timestamp = z.iso.datetime();
const post = z.object({ id: z.number().int(), user_id: z.number().int(), title: z.string(), body: z.string(), created_at: timestamp });
const comment = z.object({
  id: z.number().int(),
  post_id: z.number().int(),
  user_id: z.number().int(),
  body: z.string(),
  created_at: timestamp,
  author_name: z.string().nullable(),
});
const author = z.object({ id: z.number().int(), name: z.string(), avatar: z.string().nullable() });
const message = z.object({ message: z.string() });
const NOT_FOUND = { description: '`Not found`' };

export const restManifest = defineRestManifest({
  service: 'content',
  description: 'The demonstration routes, and users’ posts with their comments',
  routes: [
    {
      id: 'hello',
      method: 'GET',
      path: '/hello',
      summary: 'A fixed greeting',
      responses: { 200: { description: '`{"message":"Halo Dunia!"}`', schema: message } },
    },
    {
      id: 'greet',
      method: 'POST',
      path: '/greet',
      summary: 'A personalised greeting',
      // The domain's own rule: a non-empty string, else `name is required`.
      body: z.object({ name: ruleField(greeting, { type: 'string', minLength: 1, pattern: '\\S' }) }),
      responses: { 200: { description: '`{"message":"Halo, <name>!"}`', schema: message } },
    },
    {
      id: 'postsOfUser',
      method: 'GET',
      path: '/users/:userId/posts',
      summary: 'A user’s posts, newest first',
      params: z.object({ userId: pathId() }),
      responses: { 200: { description: 'The posts', schema: z.object({ data: z.array(post) }) }, 404: NOT_FOUND },
    },
    {
      id: 'getPost',
      method: 'GET',
      path: '/posts/:id',
      summary: 'One post with its author and its comments',
      params: z.object({ id: pathId() }),
      responses: {
        200: {
          description: 'The post, with `author` and `comments` (each with `author_name`)',
          schema: z.object({ data: post.extend({ author: author.nullable(), comments: z.array(comment) }) }),
        },
        404: NOT_FOUND,
      },
    },
    {
      id: 'commentsOfPost',
      method: 'GET',
      path: '/posts/:id/comments',
      summary: 'A post’s comments, oldest first',
      params: z.object({ id: pathId() }),
      responses: { 200: { description: 'The comments', schema: z.object({ data: z.array(comment) }) }, 404: NOT_FOUND },
    },
  ],
});
