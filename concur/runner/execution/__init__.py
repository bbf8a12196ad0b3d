"""Running one job in one process: the worker, its request, the warm zygote it may be forked from, fault points."""
