"""What a grid is before it runs: studies, approaches x benchmarks x settings x seeds, job keys, budgets, time estimates."""
