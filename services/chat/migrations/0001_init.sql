-- Chats and their messages: the chat service's schema (search_path is set by the kit).
-- Timestamps keep millisecond precision so that they round-trip exactly through JSON.

-- A chat comes into being with its first message. Its row is also the lock that orders sends:
-- every send takes it FOR UPDATE, inserts, publishes and only then commits, so the messages of
-- one chat are numbered and published in one order, whichever replica sends them.
CREATE TABLE chats (
  id          text PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 64),
  created_at  timestamptz(3) NOT NULL DEFAULT now()
);

CREATE TABLE messages (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  chat_id     text NOT NULL REFERENCES chats (id),
  -- A content user (another service's schema: no foreign key; the id from the caller's token).
  author_id   bigint NOT NULL CHECK (author_id > 0),
  text        text NOT NULL CHECK (char_length(text) BETWEEN 1 AND 2000),
  created_at  timestamptz(3) NOT NULL DEFAULT clock_timestamp()
);

-- A chat's messages newest first, a page at a time (id < cursor), read backwards.
CREATE INDEX messages_chat_id_id_idx ON messages (chat_id, id);
