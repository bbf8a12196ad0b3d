"""Running a grid: the driver, its executors (in this process, a local worker pool, Slurm) and its live view."""
