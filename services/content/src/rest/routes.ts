import { Router } from 'express';
import { mountRestRoutes } from '@halo/kit/rest';
import type { Content } from '../domain/content';
import type { Comment, Post } from '../domain/model';
import { greeting, HELLO } from '../domain/rules';
import { restManifest } from './manifest';

/** REST records use snake_case and integer ids (docs/api/conventions.md). */
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

/** The handlers of src/rest/manifest.ts; ids arrive parsed and bodies checked against its schemas. */
export function restRoutes(content: Content): Router {
  return mountRestRoutes(
    Router(),
    restManifest,
    {
      hello: (_req, res) => {
        res.json({ message: HELLO });
      },
      greet: (_req, res, { body }) => {
        res.json({ message: greeting(body.name) });
      },
      postsOfUser: async (_req, res, { params }) => {
        const posts = await content.postsOfUser(params.userId);
        res.json({ data: posts.map(postJson) });
      },
      getPost: async (_req, res, { params }) => {
        const { post, author, comments } = await content.postDetail(params.id);
        res.json({
          data: { ...postJson(post), author, comments: comments.map((c) => commentJson(c.comment, c.authorName)) },
        });
      },
      commentsOfPost: async (_req, res, { params }) => {
        const comments = await content.commentsOfPost(params.id);
        res.json({ data: comments.map((c) => commentJson(c.comment, c.authorName)) });
      },
      // No route here is authenticated: there is no key to hold to a scope.
    },
    { jwtSecret: undefined },
  );
}
