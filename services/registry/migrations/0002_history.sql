-- History a team can read back (docs/registry.md, "History"): what each published version changed
-- against the composition it replaced, as its check reported it, and the acknowledgement it was
-- published with. Versions published before this migration have neither (NULL).
ALTER TABLE versions
  ADD COLUMN changes jsonb,
  ADD COLUMN acknowledgement text,
  -- A rollback's target: the version whose contract this one republished.
  ADD COLUMN rollback_of integer;
