-- Private chats (issue 31): created by createChat with a server-generated id in the reserved `~`
-- namespace, readable and writable by their members only. Free-form chats (any other id) keep
-- their rows as before: no title, no creator, no members, open to every signed-in user.

ALTER TABLE chats
  ADD COLUMN title       text CHECK (char_length(title) BETWEEN 1 AND 100),
  -- A content user (no foreign key: another service's schema); set for private chats only.
  ADD COLUMN creator_id  bigint CHECK (creator_id > 0),
  -- Orders `chats(first, after)`: newest first, a page at a time.
  ADD COLUMN seq         bigint GENERATED ALWAYS AS IDENTITY;


CREATE TABLE chat_members (
  chat_id   text NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
  user_id   bigint NOT NULL CHECK (user_id > 0),
  added_at  timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (chat_id, user_id)
);

-- "The caller's chats": by member, then the chat's order.
CREATE INDEX chat_members_user_id_idx ON chat_members (user_id, chat_id);
