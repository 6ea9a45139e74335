"""``python -m kb``: the ``verl-doctor`` command line, where no console script is installed."""

from kb.cli import main

main(prog_name="verl-doctor")
