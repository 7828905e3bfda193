-- Payments and orders: the payments service's schema (search_path is set by the kit).
-- Timestamps keep millisecond precision so that they round-trip exactly through JSON.

-- One row per (caller, Idempotency-Key): the unique constraint is the fence. Whatever happens to
-- the idempotency store (a lock that expired mid-flight, a Redis that lost everything), a second
-- payment for the same caller and key cannot be inserted, so it cannot be charged.
CREATE TABLE payments (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- The caller: the user behind the token (an API key acts as its owner).
  user_id          bigint NOT NULL CHECK (user_id > 0),
  idempotency_key  text NOT NULL CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
  -- SHA-256 (hex) of method, path and canonical JSON body: a replay must be the same request.
  request_hash     text NOT NULL CHECK (char_length(request_hash) = 64),
  -- Exact decimal money; the service reads and writes it as integer cents.
  amount           numeric(12, 2) NOT NULL CHECK (amount > 0),
  currency         text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  -- pending: inserted, the processor not (yet) answered; succeeded: charged. A failed charge
  -- deletes its pending row, so the retry can insert again.
  status           text NOT NULL CHECK (status IN ('pending', 'succeeded')),
  processor_ref    text,
  created_at       timestamptz(3) NOT NULL DEFAULT now(),
  updated_at       timestamptz(3) NOT NULL DEFAULT now(),
  CONSTRAINT payments_user_id_idempotency_key_key UNIQUE (user_id, idempotency_key),
  CHECK ((status = 'succeeded') = (processor_ref IS NOT NULL))
);

-- Orders are idempotent by nature: the client names each one, and (user, client_order_id) is
-- unique, so a retried create finds the order it made instead of making another.
CREATE TABLE orders (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  user_id          bigint NOT NULL CHECK (user_id > 0),
  -- A catalog product (another service's schema: no foreign key; checked over gRPC on create).
  product_id       bigint NOT NULL CHECK (product_id > 0),
  client_order_id  text NOT NULL CHECK (char_length(client_order_id) BETWEEN 1 AND 100),
  created_at       timestamptz(3) NOT NULL DEFAULT now(),
  CONSTRAINT orders_user_id_client_order_id_key UNIQUE (user_id, client_order_id)
);

-- A user's orders, newest first (GET /api/orders, `me { orders }` for a batch of users).
CREATE INDEX orders_user_id_id_idx ON orders (user_id, id);
