import { Router } from 'express';
import { route } from '@halo/kit';
import type { Content } from '../domain/content';
import type { Comment, Post } from '../domain/model';
import { greeting, HELLO, parseId } from '../domain/rules';

/** REST records use snake_case and integer ids (CONTRACT.md). */
export const postJson = (p: Post) => ({
  id: p.id,
  user_id: p.userId,
  title: p.title,
  body: p.body,
  created_at: p.createdAt,
});
export const commentJson = (c: Comment, authorName: string | null) => ({
  id: c.id,
  post_id: c.postId,
  user_id: c.userId,
  body: c.body,
  created_at: c.createdAt,
  author_name: authorName,
});

export function restRoutes(content: Content): Router {
  const router = Router();
  route(router, '/hello', {
    get: (_req, res) => {
      res.json({ message: HELLO });
    },
  });
  route(router, '/greet', {
    post: (req, res) => {
      res.json({ message: greeting((req.body as { name?: unknown } | undefined)?.name) });
    },
  });
  route(router, '/users/:userId/posts', {
    get: async (req, res) => {
      const posts = await content.postsOfUser(parseId(req.params.userId));
      res.json({ data: posts.map(postJson) });
    },
  });
  route(router, '/posts/:id', {
    get: async (req, res) => {
      const { post, author, comments } = await content.postDetail(parseId(req.params.id));
      res.json({
        data: { ...postJson(post), author, comments: comments.map((c) => commentJson(c.comment, c.authorName)) },
      });
    },
  });
  route(router, '/posts/:id/comments', {
    get: async (req, res) => {
      const comments = await content.commentsOfPost(parseId(req.params.id));
      res.json({ data: comments.map((c) => commentJson(c.comment, c.authorName)) });
    },
  });
  return router;
}
