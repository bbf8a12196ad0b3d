"""Publication figures drawn from analysis results (matplotlib + seaborn, no math here)."""
