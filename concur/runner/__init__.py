"""Grids of jobs: planning them, executing each, scheduling them here or on Slurm, and the records of a runs dir."""
