-- Users, posts and comments: the content service's schema (search_path is set by the kit).
-- Timestamps keep millisecond precision so that they round-trip exactly through JSON and cursors.
CREATE TABLE users (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name       text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
  -- Stored lower-cased by the domain layer, so uniqueness is case-insensitive.
  email      text NOT NULL UNIQUE CHECK (email = lower(email)),
  avatar     text,
  role       text NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'admin')),
  created_at timestamptz(3) NOT NULL DEFAULT now()
);

CREATE TABLE posts (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  title      text NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
  body       text NOT NULL DEFAULT '',
  created_at timestamptz(3) NOT NULL DEFAULT now()
);
-- Serves "a user's posts, newest first" and the global connection's keyset pagination.
CREATE INDEX posts_user_id_created_at_idx ON posts (user_id, created_at DESC, id DESC);
CREATE INDEX posts_created_at_idx ON posts (created_at DESC, id DESC);

CREATE TABLE comments (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  post_id    bigint NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
  user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  body       text NOT NULL CHECK (char_length(body) BETWEEN 1 AND 2000),
  created_at timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX comments_post_id_created_at_idx ON comments (post_id, created_at, id);
CREATE INDEX comments_user_id_idx ON comments (user_id);
