-- Products: the catalog service's schema (search_path is set by the kit).
-- Timestamps keep millisecond precision so that they round-trip exactly through JSON.
CREATE TABLE products (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  description text NOT NULL DEFAULT '' CHECK (char_length(description) <= 5000),
  category    text NOT NULL CHECK (char_length(category) BETWEEN 1 AND 50),
  -- Exact decimal money; the service reads and writes it as integer cents.
  price       numeric(12, 2) NOT NULL CHECK (price >= 0),
  created_at  timestamptz(3) NOT NULL DEFAULT now(),
  updated_at  timestamptz(3) NOT NULL DEFAULT now()
);

-- One index per filter + sort the API allows (GET /products?category&sort&order); the id
-- tie-break is part of every ORDER BY, so each index ends with id and serves both directions.
CREATE INDEX products_category_id_idx         ON products (category, id);
CREATE INDEX products_category_price_idx      ON products (category, price, id);
CREATE INDEX products_category_name_idx       ON products (category, name, id);
CREATE INDEX products_category_created_at_idx ON products (category, created_at, id);
CREATE INDEX products_price_idx               ON products (price, id);
CREATE INDEX products_name_idx                ON products (name, id);
CREATE INDEX products_created_at_idx          ON products (created_at, id);

-- Demo data sets already seeded (embedded dev mode only). A set is seeded in the same
-- transaction that records it here, so a restart never seeds it twice, and products an admin
-- deleted afterwards do not come back.
CREATE TABLE demo_seeds (
  name       text PRIMARY KEY,
  seeded_at  timestamptz NOT NULL DEFAULT now()
);
