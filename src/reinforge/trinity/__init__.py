"""Trinity-RFT's module paths over reinforge: ``trinity.X`` becomes ``reinforge.trinity.X``.

Each module re-exports the reinforge names that Trinity-RFT code imports from the
module of the same path, so migrated code needs no other change (see
docs/migrating.md; ``reinforge migrate`` rewrites the imports)."""
