"""The launcher's watch over its ranks while they run: their progress, the slow rank, the hang (docs/CONTRACT.md
section 9)."""
