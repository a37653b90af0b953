"""`python -m polar ...` runs the `polar` command."""

from polar.commands.app import main

main()
