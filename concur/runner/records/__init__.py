"""What a runs dir holds: job directories, claims between drivers, the SQLite index, and Slurm's view of its jobs."""
