"""Jobs: their keys, their directories, running them locally, and the SQLite index."""
