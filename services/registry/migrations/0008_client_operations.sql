-- Client operation lists (docs/registry.md, "Client operation lists"): a client team pushes the
-- GraphQL operations one version of its app sends (its persisted operations, `POST
-- /v1/operations`), so a schema change that would break one of them fails the check before any
-- of that version's traffic reaches a gateway, and not only once usage has been recorded. A push
-- replaces the version's whole list (a manifest is an app build's whole set); `coordinates` are
-- the schema coordinates each operation uses, computed against the API schema at push time, as
-- usage_hourly keeps them for recorded operations. A retired version (`retired_at`, the app no
-- longer shipped) no longer blocks a check and takes no more pushes. New tables only: the
-- previous registry runs beside them unaware.
CREATE TABLE client_versions (
  client     text NOT NULL,
  version    text NOT NULL,
  pushed_at  timestamptz NOT NULL DEFAULT now(),
  pushed_by  text NOT NULL,
  retired_at timestamptz NULL,
  retired_by text NULL,
  PRIMARY KEY (client, version)
);

CREATE TABLE client_operations (
  client      text NOT NULL,
  version     text NOT NULL,
  id          text NOT NULL,
  name        text NOT NULL,
  body        text NOT NULL,
  coordinates text[] NOT NULL,
  PRIMARY KEY (client, version, id),
  FOREIGN KEY (client, version) REFERENCES client_versions ON DELETE CASCADE
);
