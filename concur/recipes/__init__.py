"""Figure and table recipes: TOML files in `analysis/` that say what to draw from which results."""
