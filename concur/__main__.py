"""`python -m concur` runs the command line."""

from concur.cli import main

main()
