"""Modal screens: help, go to line."""
