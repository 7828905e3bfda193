-- Run once by the postgres image on an empty data directory (/docker-entrypoint-initdb.d), in the
-- database `halo`: docs/database.md's statements, one role per service owning its own schema.
-- Dev-only passwords, the same as in secrets.env.
REVOKE ALL ON DATABASE halo FROM PUBLIC;
REVOKE ALL ON SCHEMA public FROM PUBLIC;

CREATE ROLE auth;
ALTER ROLE auth WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD 'local-dev-auth-password';
GRANT CONNECT ON DATABASE halo TO auth;
CREATE SCHEMA IF NOT EXISTS auth AUTHORIZATION auth;
ALTER SCHEMA auth OWNER TO auth;
ALTER ROLE auth IN DATABASE halo SET search_path = auth;

CREATE ROLE content;
ALTER ROLE content WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD 'local-dev-content-password';
GRANT CONNECT ON DATABASE halo TO content;
CREATE SCHEMA IF NOT EXISTS content AUTHORIZATION content;
ALTER SCHEMA content OWNER TO content;
ALTER ROLE content IN DATABASE halo SET search_path = content;

CREATE ROLE catalog;
ALTER ROLE catalog WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD 'local-dev-catalog-password';
GRANT CONNECT ON DATABASE halo TO catalog;
CREATE SCHEMA IF NOT EXISTS catalog AUTHORIZATION catalog;
ALTER SCHEMA catalog OWNER TO catalog;
ALTER ROLE catalog IN DATABASE halo SET search_path = catalog;

CREATE ROLE payments;
ALTER ROLE payments WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD 'local-dev-payments-password';
GRANT CONNECT ON DATABASE halo TO payments;
CREATE SCHEMA IF NOT EXISTS payments AUTHORIZATION payments;
ALTER SCHEMA payments OWNER TO payments;
ALTER ROLE payments IN DATABASE halo SET search_path = payments;

CREATE ROLE chat;
ALTER ROLE chat WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD 'local-dev-chat-password';
GRANT CONNECT ON DATABASE halo TO chat;
CREATE SCHEMA IF NOT EXISTS chat AUTHORIZATION chat;
ALTER SCHEMA chat OWNER TO chat;
ALTER ROLE chat IN DATABASE halo SET search_path = chat;
